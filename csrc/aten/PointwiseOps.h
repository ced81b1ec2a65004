// The pointwise op table: one row per aten op. Everything else is generated from it: the
// dlprim ElementwiseOp (kernel), the .out wrapper and its registration, with torch's functional
// and in-place forms of the op where it is structured (one runner template per `kind`, in
// Pointwise{Unary,Binary,Ternary}.cpp and Activation.cpp; PwForms in PointwiseTable.h), and the test
// parametrisation (pytorch_ocl._C._pointwise_ops() lists every row with its registered
// overloads, so registration and tests cannot drift).
//
// Columns: _(kind, id, aten, dtypes, prelude, versions, body)
//   kind     which wrapper template runs the row (see below)
//   id       C++ identifier of the row
//   aten     the overload the kind registers ("exp.out"); kinds that register a fixed family
//            of overloads take the bare op name ("eq" -> eq.Tensor_out + eq.Scalar_out)
//   dtypes   input dtypes accepted (DT_* below); others raise "not implemented for 'T'"
//   prelude  helper files the body calls: basic (kernels/pointwise.cl), special (+ special.cl),
//            bessel / normal / gamma / poly (+ special_*.cl), or quant (+ fake_quant.cl):
//            PointwiseTable.cpp's prelude_text
//   versions torch versions the row registers for: ANY or SINCE(major, minor)
//   body     OpenCL C over inputs x0.., scalar params w0.., outputs y0.., all of the compute
//            type dl_t (float for 16-bit floats); may test DL_IS_FLOAT etc. (elementwise.cpp)
//
// Kinds (inputs / params):
//   unary, unary_float, unary_bool       TensorIterator unary_op / unary_float_op / force_boolean (1/0)
//   binary, binary_float, binary_alpha   borrowing_binary_op / binary_float_op / add-like alpha (2/0, 2/1)
//   comparison, logical                  comparison_op: NAME.Tensor_out + NAME.Scalar_out / NAME.out (2/0)
//   act0..act3                           activation(self, Scalar x N) -> out (1/N)
//   bw0..bw2                             backward(grad_output, self_or_output, Scalar x N) -> grad_input (2/N)
//   custom(i, p, o)                      a hand-written wrapper with i inputs, p params, o outputs
#pragma once
#include "aten/PointwiseQuantOps.h"
#include "aten/PointwiseSpecialOps.h"

// clang-format off
#define OCL_POINTWISE_UNARY(_) \
  _(unary, abs,         "abs.out",         DT_NUM,  basic, ANY, "y0 = dl_abs(x0);") \
  _(unary, neg,         "neg.out",         DT_NUM,  basic, ANY, "y0 = -x0;") \
  _(unary, sign,        "sign.out",        DT_ALL,  basic, ANY, "y0 = dl_sign(x0);") \
  _(unary, sgn,         "sgn.out",         DT_ALL,  basic, ANY, "y0 = dl_sign(x0);") \
  _(unary, floor,       "floor.out",       DT_NUM,  basic, ANY, "y0 = dl_floor(x0);") \
  _(unary, ceil,        "ceil.out",        DT_NUM,  basic, ANY, "y0 = dl_ceil(x0);") \
  _(unary, trunc,       "trunc.out",       DT_NUM,  basic, ANY, "y0 = dl_trunc(x0);") \
  _(unary, round,       "round.out",       DT_NUM,  basic, ANY, "y0 = dl_round(x0);") \
  _(unary, frac,        "frac.out",        DT_FLT,  basic, ANY, "y0 = x0 - trunc(x0);") \
  _(unary, bitwise_not, "bitwise_not.out", DT_INTB, basic, ANY, "y0 = dl_bitwise_not(x0);") \
  _(unary_float, exp,        "exp.out",        DT_ALL, basic, ANY, "y0 = exp(x0);") \
  _(unary_float, exp2,       "exp2.out",       DT_ALL, basic, ANY, "y0 = exp2(x0);") \
  _(unary_float, expm1,      "expm1.out",      DT_ALL, basic, ANY, "y0 = expm1(x0);") \
  _(unary_float, log,        "log.out",        DT_ALL, basic, ANY, "y0 = log(x0);") \
  _(unary_float, log2,       "log2.out",       DT_ALL, basic, ANY, "y0 = log2(x0);") \
  _(unary_float, log10,      "log10.out",      DT_ALL, basic, ANY, "y0 = log10(x0);") \
  _(unary_float, log1p,      "log1p.out",      DT_ALL, basic, ANY, "y0 = log1p(x0);") \
  _(unary_float, sqrt,       "sqrt.out",       DT_ALL, basic, ANY, "y0 = sqrt(x0);") \
  _(unary_float, rsqrt,      "rsqrt.out",      DT_ALL, basic, ANY, "y0 = DL_ONE / sqrt(x0);") \
  _(unary_float, reciprocal, "reciprocal.out", DT_ALL, basic, ANY, "y0 = DL_ONE / x0;") \
  _(unary_float, sin,        "sin.out",        DT_ALL, basic, ANY, "y0 = sin(x0);") \
  _(unary_float, cos,        "cos.out",        DT_ALL, basic, ANY, "y0 = cos(x0);") \
  _(unary_float, tan,        "tan.out",        DT_ALL, basic, ANY, "y0 = tan(x0);") \
  _(unary_float, asin,       "asin.out",       DT_ALL, basic, ANY, "y0 = asin(x0);") \
  _(unary_float, acos,       "acos.out",       DT_ALL, basic, ANY, "y0 = acos(x0);") \
  _(unary_float, atan,       "atan.out",       DT_ALL, basic, ANY, "y0 = atan(x0);") \
  _(unary_float, sinh,       "sinh.out",       DT_ALL, basic, ANY, "y0 = sinh(x0);") \
  _(unary_float, cosh,       "cosh.out",       DT_ALL, basic, ANY, "y0 = cosh(x0);") \
  _(unary_float, tanh,       "tanh.out",       DT_ALL, basic, ANY, "y0 = tanh(x0);") \
  _(unary_float, asinh,      "asinh.out",      DT_ALL, basic, ANY, "y0 = asinh(x0);") \
  _(unary_float, acosh,      "acosh.out",      DT_ALL, basic, ANY, "y0 = acosh(x0);") \
  _(unary_float, atanh,      "atanh.out",      DT_ALL, basic, ANY, "y0 = atanh(x0);") \
  _(unary_float, sigmoid,    "sigmoid.out",    DT_ALL, basic, ANY, "y0 = dl_sigmoid(x0);") \
  _(unary_float, erf,        "erf.out",        DT_ALL, basic, ANY, "y0 = erf(x0);") \
  _(unary_float, erfc,       "erfc.out",       DT_ALL, basic, ANY, "y0 = erfc(x0);") \
  _(unary_float, erfinv,     "erfinv.out",     DT_ALL, special, ANY, "y0 = dl_erfinv(x0);") \
  /* sinc as the CPU: sin(pi x) / (pi x) with the product rounded once, 1 at 0 */ \
  _(unary_float, sinc,       "sinc.out",       DT_ALL, special, ANY, \
    "if (x0 == 0) y0 = DL_ONE; else { dl_t px = DL_PI * x0; y0 = sin(px) / px; }") \
  _(unary_float, special_entr, "special_entr.out", DT_ALL, basic, ANY, \
    "y0 = isnan(x0) ? x0 : (x0 > 0 ? -x0 * log(x0) : (x0 == 0 ? (dl_t)0 : (dl_t)-INFINITY));") \
  _(unary_float, lgamma,     "lgamma.out",     DT_ALL, basic, ANY, "y0 = lgamma(x0);") \
  _(unary_float, digamma,    "digamma.out",    DT_ALL, special, ANY, "y0 = dl_digamma(x0);") \
  _(unary_bool, isposinf, "isposinf.out", DT_ALL, basic, ANY, "y0 = dl_isinf(x0) && x0 > 0;") \
  _(unary_bool, isneginf, "isneginf.out", DT_ALL, basic, ANY, "y0 = dl_isinf(x0) && x0 < 0;") \
  _(unary_bool, signbit,  "signbit.out",  DT_ALL, basic, ANY, "y0 = dl_signbit(x0);") \
  _(custom(1, 0, 1), isnan,         "isnan",              DT_ALL, basic, ANY, "y0 = dl_isnan(x0);") \
  _(custom(1, 0, 1), logical_not,   "logical_not.out",    DT_ALL, basic, ANY, "y0 = x0 == 0;") \
  _(custom(1, 3, 1), nan_to_num,    "nan_to_num.out",     DT_ALL, basic, ANY, \
    "y0 = dl_isnan(x0) ? w0 : (dl_isinf(x0) ? (x0 > 0 ? w1 : w2) : x0);") \
  /* frexp: y0 the mantissa in self's dtype, y1 the int32 exponent (0 for 0, inf, NaN, as glibc); */ \
  /* ilogb + ldexp (exact) rather than frexp(x, &e): Oclgrind cannot check a builtin's private pointer */ \
  _(custom(1, 0, 2), frexp,         "frexp.Tensor_out",   DT_FLT, basic, ANY, \
    "if (x0 == 0 || isinf(x0) || isnan(x0)) { y0 = x0; y1 = 0; }" \
    "else { int e = ilogb(x0) + 1; y0 = ldexp(x0, -e); y1 = e; }") \
  _(custom(1, 1, 1), round_decimals, "round.decimals_out", DT_FLT, basic, ANY, "y0 = dl_round_decimals(x0, w0);") \
  _(custom(1, 1, 1), polygamma,     "polygamma.out",      DT_ALL, special, ANY, "y0 = dl_polygamma(w0, x0);") \
  _(custom(1, 1, 1), logit,         "logit.out",          DT_ALL, basic, ANY, \
    "dl_t x = x0; if (w0 >= 0) x = x < w0 ? w0 : (x > 1 - w0 ? 1 - w0 : x); y0 = log(x / (1 - x));") \
  _(custom(2, 1, 1), logit_backward, "logit_backward.grad_input", DT_FLT, basic, ANY, \
    "if (w0 < 0) y0 = (x1 < 0 || x1 > 1) ? (dl_t)NAN : x0 / (x1 * (1 - x1));" \
    "else y0 = (x1 < w0 || x1 > 1 - w0) ? 0 : x0 / (x1 * (1 - x1));")

#define OCL_POINTWISE_BINARY(_) \
  _(binary_alpha, add, "add.out", DT_ALL, basic, ANY, "y0 = x0 + w0 * x1;") \
  _(binary_alpha, sub, "sub.out", DT_NUM, basic, ANY, "y0 = x0 - w0 * x1;") \
  _(custom(2, 1, 1), rsub, "rsub.Tensor", DT_NUM, basic, ANY, "y0 = x1 - w0 * x0;") \
  _(binary, mul,          "mul.out",                  DT_ALL,  basic, ANY, "y0 = x0 * x1;") \
  _(binary, remainder,    "remainder.Tensor_out",     DT_NUM,  basic, ANY, "y0 = dl_remainder(x0, x1);") \
  _(binary, fmod,         "fmod.Tensor_out",          DT_NUM,  basic, ANY, "y0 = dl_fmod(x0, x1);") \
  _(binary, maximum,      "maximum.out",              DT_ALL,  basic, ANY, "y0 = dl_maximum(x0, x1);") \
  _(binary, minimum,      "minimum.out",              DT_ALL,  basic, ANY, "y0 = dl_minimum(x0, x1);") \
  _(binary, fmax,         "fmax.out",                 DT_ALL,  basic, ANY, "y0 = dl_fmax(x0, x1);") \
  _(binary, fmin,         "fmin.out",                 DT_ALL,  basic, ANY, "y0 = dl_fmin(x0, x1);") \
  _(binary, hypot,        "hypot.out",                DT_FLT,  basic, ANY, "y0 = hypot(x0, x1);") \
  _(binary, logaddexp,    "logaddexp.out",            DT_FLT,  basic, ANY, "y0 = dl_logaddexp(x0, x1);") \
  _(binary, logaddexp2,   "logaddexp2.out",           DT_FLT,  basic, ANY, "y0 = dl_logaddexp2(x0, x1);") \
  _(binary, nextafter,    "nextafter.out",            DT_FLT,  basic, ANY, "y0 = dl_nextafter(x0, x1);") \
  /* heaviside: NaN inputs give 0 (neither == 0 nor > 0), as on the CPU */ \
  _(binary, heaviside,    "heaviside.out",            DT_ALL,  basic, ANY, "y0 = x0 == 0 ? x1 : (dl_t)(x0 > 0);") \
  _(binary, bitwise_and,  "bitwise_and.Tensor_out",   DT_INTB, basic, ANY, "y0 = x0 & x1;") \
  _(binary, bitwise_or,   "bitwise_or.Tensor_out",    DT_INTB, basic, ANY, "y0 = x0 | x1;") \
  _(binary, bitwise_xor,  "bitwise_xor.Tensor_out",   DT_INTB, basic, ANY, "y0 = x0 ^ x1;") \
  _(binary, bitwise_left_shift,  "bitwise_left_shift.Tensor_out",  DT_INT, basic, ANY, "y0 = dl_shift_left(x0, x1);") \
  _(binary, bitwise_right_shift, "bitwise_right_shift.Tensor_out", DT_INT, basic, ANY, "y0 = dl_shift_right(x0, x1);") \
  _(binary, gcd,          "gcd.out",                  DT_INT,  basic, ANY, "y0 = dl_gcd(x0, x1);") \
  _(binary, lcm,          "lcm.out",                  DT_INT,  basic, ANY, "y0 = dl_lcm(x0, x1);") \
  _(binary_float, div,      "div.out",        DT_ALL, basic, ANY, "y0 = x0 / x1;") \
  _(binary_float, atan2,    "atan2.out",      DT_ALL, basic, ANY, "y0 = atan2(x0, x1);") \
  _(binary_float, copysign, "copysign.out",   DT_ALL, basic, ANY, "y0 = copysign(x0, x1);") \
  _(binary_float, xlogy,    "xlogy.OutTensor", DT_ALL, basic, ANY, "y0 = dl_xlogy(x0, x1);") \
  _(binary_float, special_xlog1py, "special_xlog1py.out", DT_ALL, basic, ANY, \
    "y0 = isnan(x1) ? x1 : (x0 == 0 ? (dl_t)0 : x0 * log1p(x1));") \
  _(comparison, eq, "eq", DT_ALL, basic, ANY, "y0 = x0 == x1;") \
  _(comparison, ne, "ne", DT_ALL, basic, ANY, "y0 = x0 != x1;") \
  _(comparison, lt, "lt", DT_ALL, basic, ANY, "y0 = x0 < x1;") \
  _(comparison, le, "le", DT_ALL, basic, ANY, "y0 = x0 <= x1;") \
  _(comparison, gt, "gt", DT_ALL, basic, ANY, "y0 = x0 > x1;") \
  _(comparison, ge, "ge", DT_ALL, basic, ANY, "y0 = x0 >= x1;") \
  _(logical, logical_and, "logical_and.out", DT_ALL, basic, ANY, "y0 = (x0 != 0) && (x1 != 0);") \
  _(logical, logical_or,  "logical_or.out",  DT_ALL, basic, ANY, "y0 = (x0 != 0) || (x1 != 0);") \
  _(logical, logical_xor, "logical_xor.out", DT_ALL, basic, ANY, "y0 = (x0 != 0) != (x1 != 0);") \
  _(custom(2, 1, 1), div_mode,     "div.out_mode",     DT_NUM, basic, ANY, \
    "y0 = w0 == 1 ? dl_div_trunc(x0, x1) : (w0 == 2 ? dl_div_floor(x0, x1) : x0 / x1);") \
  _(custom(2, 0, 1), floor_divide, "floor_divide.out", DT_NUM, basic, ANY, "y0 = dl_div_floor(x0, x1);") \
  _(custom(2, 0, 1), pow,          "pow",              DT_NUM, basic, ANY, "y0 = dl_pow(x0, x1);")

#define OCL_POINTWISE_TERNARY(_) \
  _(custom(3, 0, 1), where,     "where.self_out",   DT_ALL, basic, ANY, "y0 = x0 != 0 ? x1 : x2;") \
  _(custom(3, 0, 1), lerp,      "lerp",             DT_FLT, basic, ANY, \
    "y0 = fabs(x2) < (dl_t)0.5 ? x0 + x2 * (x1 - x0) : x1 - (x1 - x0) * (1 - x2);") \
  _(custom(3, 1, 1), addcmul,   "addcmul.out",      DT_NUM, basic, ANY, "y0 = x0 + w0 * x1 * x2;") \
  _(custom(3, 1, 1), addcdiv,   "addcdiv.out",      DT_FLT, basic, ANY, "y0 = x0 + w0 * x1 / x2;") \
  _(custom(3, 0, 1), clamp,     "clamp.Tensor_out", DT_NUM, basic, ANY, "y0 = dl_minimum(dl_maximum(x0, x1), x2);") \
  _(custom(1, 2, 1), clamp_scalar, "clamp.out",      DT_NUM, basic, ANY, "y0 = dl_minimum(dl_maximum(x0, w0), w1);") \
  _(custom(2, 0, 1), clamp_min, "clamp_min",        DT_ALL, basic, ANY, "y0 = dl_maximum(x0, x1);") \
  _(custom(2, 0, 1), clamp_max, "clamp_max",        DT_ALL, basic, ANY, "y0 = dl_minimum(x0, x1);") \
  _(custom(3, 0, 1), masked_fill, "masked_fill_",   DT_ALL, basic, ANY, "y0 = x1 != 0 ? x2 : x0;") \
  /* rows over the slices of one dim (PointwiseSlices.cpp): x0..x2 = a[0..2], x3..x5 = b[0..2]; */ \
  /* 16-bit products rounded as the CPU's Half arithmetic */ \
  _(custom(6, 0, 3), linalg_cross, "linalg_cross.out", DT_NUM, basic, ANY, \
    "y0 = dl_round_y0(x1 * x5) - dl_round_y0(x2 * x4); y1 = dl_round_y0(x2 * x3) - dl_round_y0(x0 * x5);" \
    "y2 = dl_round_y0(x0 * x4) - dl_round_y0(x1 * x3);") \
  /* renorm's scale factor from a slice's norm x0 (w0 = maxnorm), the CPU's formula */ \
  _(custom(1, 1, 1), renorm_factor, "renorm.out", DT_FLT, basic, ANY, \
    "y0 = x0 > w0 ? w0 / (x0 + (dl_t)1e-7) : (dl_t)1;")

#define OCL_POINTWISE_ACTIVATION(_) \
  _(act1, leaky_relu,  "leaky_relu.out",  DT_FLT, basic, ANY, "y0 = x0 > 0 ? x0 : x0 * w0;") \
  _(act3, elu,         "elu.out",         DT_FLT, basic, ANY, "y0 = x0 <= 0 ? expm1(x0 * w2) * w0 * w1 : x0 * w1;") \
  _(act0, silu,        "silu.out",        DT_FLT, basic, ANY, "y0 = x0 / (1 + exp(-x0));") \
  _(act0, mish,        "mish.out",        DT_FLT, basic, ANY, "y0 = x0 * tanh(log1p(exp(x0)));") \
  _(act0, hardsigmoid, "hardsigmoid.out", DT_FLT, basic, ANY, \
    "dl_t t = x0 + 3; t = t < 0 ? 0 : t; t = 6 < t ? 6 : t; y0 = t / 6;") \
  _(act2, softplus,    "softplus.out",    DT_FLT, basic, ANY, "y0 = x0 * w0 > w1 ? x0 : log1p(exp(x0 * w0)) / w0;") \
  _(act1, softshrink,  "softshrink.out",  DT_FLT, basic, ANY, "y0 = x0 > w0 ? x0 - w0 : (x0 < -w0 ? x0 + w0 : x0 * 0);") \
  _(act1, hardshrink,  "hardshrink.out",  DT_FLT, basic, ANY, "y0 = (x0 >= -w0 && x0 <= w0) ? 0 : x0;") \
  _(act2, threshold,   "threshold.out",   DT_NUM, basic, ANY, "y0 = x0 <= w0 ? w1 : x0;") \
  _(bw0, silu_backward,        "silu_backward.grad_input",        DT_FLT, basic, ANY, \
    "dl_t s = 1 / (1 + exp(-x1)); y0 = x0 * s * (1 + x1 * (1 - s));") \
  _(bw0, hardsigmoid_backward, "hardsigmoid_backward.grad_input", DT_FLT, basic, ANY, \
    "y0 = (x1 > -3 && x1 < 3) ? x0 / 6 : 0;") \
  _(bw0, sigmoid_backward,     "sigmoid_backward.grad_input",     DT_FLT, basic, ANY, "y0 = x0 * (1 - x1) * x1;") \
  _(bw0, tanh_backward,        "tanh_backward.grad_input",        DT_FLT, basic, ANY, "y0 = x0 * (1 - x1 * x1);") \
  _(bw2, softplus_backward,    "softplus_backward.grad_input",    DT_FLT, basic, ANY, \
    "dl_t z = exp(x1 * w0); y0 = x1 * w0 > w1 ? x0 : x0 * z / (z + 1);") \
  _(bw1, softshrink_backward,  "softshrink_backward.grad_input",  DT_FLT, basic, ANY, \
    "y0 = (x1 >= -w0 && x1 <= w0) ? 0 : x0;") \
  _(bw1, hardshrink_backward,  "hardshrink_backward.grad_input",  DT_FLT, basic, ANY, \
    "y0 = (x1 >= -w0 && x1 <= w0) ? 0 : x0;") \
  _(bw1, threshold_backward,   "threshold_backward.grad_input",   DT_NUM, basic, ANY, "y0 = x1 <= w0 ? 0 : x0;") \
  _(bw2, hardtanh_backward,    "hardtanh_backward.grad_input",    DT_FLT, basic, ANY, \
    "y0 = (x1 <= w0 || x1 >= w1) ? 0 : x0;") \
  _(custom(1, 0, 1), relu,      "relu",          DT_NUM, basic, ANY, "y0 = x0 < 0 ? 0 : x0;") \
  _(custom(1, 2, 1), hardtanh,  "hardtanh.out",  DT_NUM, basic, ANY, "y0 = dl_clamp(x0, w0, w1);") \
  _(custom(1, 0, 1), hardswish, "hardswish.out", DT_FLT, basic, ANY, \
    "dl_t t = x0 + 3; t = t < 0 ? 0 : t; t = 6 < t ? 6 : t; y0 = x0 * t / 6;") \
  _(custom(2, 0, 1), hardswish_backward, "hardswish_backward", DT_FLT, basic, ANY, \
    "y0 = x1 < -3 ? 0 : (x1 <= 3 ? x0 * (x1 / 3 + (dl_t)0.5) : x0);") \
  _(custom(2, 0, 1), mish_backward, "mish_backward", DT_FLT, basic, ANY, \
    "dl_t s = 1 / (1 + exp(-x1)); dl_t t = tanh(log1p(exp(x1))); y0 = x0 * (t + x1 * s * (1 - t * t));") \
  _(custom(2, 1, 1), leaky_relu_backward, "leaky_relu_backward.grad_input", DT_FLT, basic, ANY, \
    "y0 = x1 > 0 ? x0 : x0 * w0;") \
  _(custom(2, 4, 1), elu_backward, "elu_backward.grad_input", DT_FLT, basic, ANY, \
    "if (w3 != 0) y0 = x1 <= 0 ? x0 * w2 * (x1 + w0 * w1) : x0 * w1;" \
    "else y0 = x1 <= 0 ? x0 * w2 * w0 * w1 * exp(x1 * w2) : x0 * w1;") \
  _(custom(1, 1, 1), gelu, "gelu.out", DT_FLT, basic, ANY, \
    "if (w0 != 0) { dl_t in = (dl_t)0.7978845608028654 * (x0 + (dl_t)0.044715 * x0 * x0 * x0);" \
    "  y0 = (dl_t)0.5 * x0 * (1 + tanh(in)); }" \
    "else y0 = x0 * (dl_t)0.5 * (1 + erf(x0 * (dl_t)0.70710678118654752440));") \
  _(custom(2, 1, 1), gelu_backward, "gelu_backward.grad_input", DT_FLT, basic, ANY, \
    "if (w0 != 0) { const dl_t b = (dl_t)0.7978845608028654, k = (dl_t)0.044715;" \
    "  dl_t th = tanh(b * (x1 + k * x1 * x1 * x1));" \
    "  dl_t dr = (1 - th * th) * b * (1 + 3 * k * x1 * x1);" \
    "  y0 = x0 * ((dl_t)0.5 * (1 + th) + (dl_t)0.5 * x1 * dr); }" \
    "else { dl_t cdf = (dl_t)0.5 * (1 + erf(x1 * (dl_t)0.70710678118654752440));" \
    "  dl_t pdf = exp((dl_t)-0.5 * x1 * x1) * (dl_t)0.39894228040143267794; y0 = x0 * (cdf + x1 * pdf); }") \
  _(custom(1, 0, 1), log_sigmoid_forward, "log_sigmoid_forward.output", DT_FLT, basic, ANY, \
    "y0 = fmin(x0, (dl_t)0) - log1p(exp(-fabs(x0)));") \
  _(custom(2, 0, 1), log_sigmoid_backward, "log_sigmoid_backward.grad_input", DT_FLT, basic, ANY, \
    "dl_t z = exp(-fabs(x1)); y0 = x1 < 0 ? (1 - z / (1 + z)) * x0 : (z / (1 + z)) * x0;") \
  _(custom(2, 0, 1), prelu, "_prelu_kernel", DT_FLT, basic, ANY, "y0 = x0 > 0 ? x0 : x1 * x0;") \
  _(custom(3, 0, 2), prelu_backward, "_prelu_kernel_backward", DT_FLT, basic, ANY, \
    "y0 = x0 > 0 ? x2 : x1 * x2; y1 = x0 > 0 ? 0 : x0 * x2;") \
  _(custom(2, 0, 1), glu, "glu.out", DT_FLT, basic, ANY, "y0 = x0 / (1 + exp(-x1));") \
  _(custom(3, 0, 2), glu_backward, "glu_backward.grad_input", DT_FLT, basic, ANY, \
    "dl_t s = 1 / (1 + exp(-x1)); y0 = x2 * s; y1 = x2 * x0 * s * (1 - s);")
// clang-format on

#define OCL_POINTWISE_OPS(_)      \
  OCL_POINTWISE_UNARY(_)          \
  OCL_POINTWISE_SPECIAL_UNARY(_)  \
  OCL_POINTWISE_BINARY(_)         \
  OCL_POINTWISE_SPECIAL_BINARY(_) \
  OCL_POINTWISE_TERNARY(_)   \
  OCL_POINTWISE_ACTIVATION(_)     \
  OCL_POINTWISE_QUANT(_)
