// The pointwise op table's fake-quantization rows (quantization-aware training): same columns and
// kinds as PointwiseOps.h, which appends this list to the table. FakeQuantize.cpp registers the rows
// (fake_quantize_cachemask: PointwiseUnary.cpp). Each body is the CPU kernel's arithmetic step by step
// (dlprim/kernels/fake_quant.cl, prelude `quant`), so results agree with the CPU bit for bit.
#pragma once

// clang-format off
#define OCL_POINTWISE_QUANT(_) \
  /* per tensor, scalar qparams. y0 the value quantized and back, y1 the bool mask of values inside the */ \
  /* range; w0 scale, w1 1.0f / scale (in float, as the CPU kernel), w2 zero point, w3 quant_min, w4 */ \
  /* quant_max; rint rounds half to even like the CPU's nearbyint; the value is rounded to float for */ \
  /* float64 too, as the CPU's. NaN gives quant_min's value and false there too */ \
  _(custom(1, 5, 2), fake_quantize_cachemask, "fake_quantize_per_tensor_affine_cachemask", DT_FLT, basic, ANY, \
    "dl_t q = w2 + rint(x0 * w1); y0 = (float)((fmin(fmax(q, w3), w4) - w2) * w0); y1 = w3 <= q && q <= w4;") \
  /* per tensor, qparams as device tensors: x1 scale (.item() as float), x2 zero point (.item() as int: */ \
  /* truncated, or with w2 set the learnable op's clamp(nearbyint(float)) of it), x3 fake_quant_enabled */ \
  /* (0: the input and a true mask); w0 quant_min, w1 quant_max; then the row above */ \
  _(custom(4, 3, 2), fake_quantize_tensor_qparams, "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", \
    DT_FLT, quant, ANY, \
    "float sc = (float)x1, inv = 1.0f / sc;" \
    "dl_t zp = w2 != 0 ? trunc(fmin(fmax((dl_t)rint((float)x2), w0), w1)) : trunc(x2);" \
    "if (trunc(x3) != 0) { dl_t q = zp + rint(x0 * inv);" \
    "  y0 = (float)((fmin(fmax(q, w0), w1) - zp) * sc); y1 = w0 <= q && q <= w1; }" \
    "else { y0 = x0; y1 = 1; }") \
  /* per channel: x1 scale, x2 zero point (int32, or float / half with w2 set) broadcast along the axis; */ \
  /* w0 quant_min, w1 quant_max, w3 set for float64 input (products in double, else in float), w4 set */ \
  /* where the CPU fuses zero point + x * (1 / scale) into one fma (a float32 zero point; not a float16 */ \
  /* one, nor an int32 one, whose sum follows a rounding). The CPU converts the quantized value to int64 */ \
  /* before clamping (x86: NaN and +-inf give quant_min) and evaluates (q - zero point) * scale in */ \
  /* double: so the row computes in double for a float zero point where the device has fp64 (in float */ \
  /* otherwise, where a float zero point may then give an ulp more or less) */ \
  _(custom(3, 5, 2), fake_quantize_per_channel, "fake_quantize_per_channel_affine_cachemask", DT_FLT, quant, ANY, \
    "float inv = 1.0f / (float)x1;" \
    "dl_t q = w2 != 0 ? (dl_t)rint((float)(w4 != 0 ? dl_fq_fma(x0, (dl_t)inv, x2, w3)" \
    "                                        : dl_fq_add(x2, dl_fq_mul(x0, (dl_t)inv, w3), w3)))" \
    "                 : dl_fq_add(x2, rint(dl_fq_mul(x0, (dl_t)inv, w3)), w3);" \
    "y0 = (dl_fq_clamp(q, w0, w1) - x2) * (dl_t)(float)x1; y1 = dl_fq_inside(q, w0, w1);") \
  /* LSQ gradients (float32): x0 X, x1 dY, x2 scale, x3 zero point (w3 set: per channel, rounded and */ \
  /* clamped; else per tensor, the CPU's (int64)clamp(zp + 0.5f)); w0 quant_min, w1 quant_max, */ \
  /* w2 grad_factor; y0 dX, y1 dScale and y2 dZeroPoint per element (the op sums them). The CPU fuses */ \
  /* zero point + x * (1 / scale) and (fake-quantized x) - x into fma */ \
  _(custom(4, 4, 3), fake_quantize_learnable_backward, "_fake_quantize_learnable_per_tensor_affine_backward", \
    dt_bit(c10::kFloat) | dt_bit(c10::kBFloat16), quant, ANY, \
    "float sc = x2, inv = 1.0f / sc;" \
    "dl_t zp = w3 != 0 ? fmin(fmax(rint(x3), w0), w1) : trunc(fmin(fmax(x3 + 0.5f, w0), w1));" \
    "dl_t q = rint(fma(x0, (dl_t)inv, zp)); int below = dl_fq_below(q, w0), above = !below && q > w1;" \
    "y0 = x1 * (dl_t)(!below && !above);" \
    "if (below || above) { y2 = -x1 * sc * w2; y1 = x1 * (below ? w0 - zp : w1 - zp) * w2; }" \
    "else { dl_t err = fma(dl_fq_clamp(q, w0, w1) - zp, (dl_t)sc, -x0); y2 = 0; y1 = x1 * err * inv * w2; }")
// clang-format on
