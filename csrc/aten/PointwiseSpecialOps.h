// The pointwise op table's rows for torch.special's Bessel, Airy, normal-distribution,
// incomplete-gamma and orthogonal-polynomial functions (and i0, igamma, igammac outside that
// namespace). Same columns and kinds as PointwiseOps.h, which appends these lists to the table;
// PointwiseUnary.cpp / PointwiseBinary.cpp register them with the other unary / binary rows.
// The numerics live in dlprim/kernels/special_*.cl (preludes bessel, normal, gamma, poly).
//
// dtypes: what ATen's CPU kernels accept. DT_NOHALF rows are float/double kernels on the CPU
// (integer and bool inputs promote to float; Half and BFloat16 raise "not implemented").
#pragma once

// clang-format off
#define OCL_POINTWISE_SPECIAL_UNARY(_) \
  _(unary_float, i0,          "i0.out",          DT_ALL, bessel, ANY, "y0 = dl_i0(x0);") \
  _(unary_float, special_i0e, "special_i0e.out", DT_ALL, bessel, ANY, "y0 = dl_i0e(x0);") \
  _(unary_float, special_i1,  "special_i1.out",  DT_ALL, bessel, ANY, "y0 = dl_i1(x0);") \
  _(unary_float, special_i1e, "special_i1e.out", DT_ALL, bessel, ANY, "y0 = dl_i1e(x0);") \
  _(unary_float, special_bessel_j0, "special_bessel_j0.out", DT_NOHALF, bessel, ANY, "y0 = dl_bessel_j0(x0);") \
  _(unary_float, special_bessel_j1, "special_bessel_j1.out", DT_NOHALF, bessel, ANY, "y0 = dl_bessel_j1(x0);") \
  _(unary_float, special_bessel_y0, "special_bessel_y0.out", DT_NOHALF, bessel, ANY, "y0 = dl_bessel_y0(x0);") \
  _(unary_float, special_bessel_y1, "special_bessel_y1.out", DT_NOHALF, bessel, ANY, "y0 = dl_bessel_y1(x0);") \
  _(unary_float, special_modified_bessel_i0, "special_modified_bessel_i0.out", DT_NOHALF, bessel, ANY, \
    "y0 = dl_i0(x0);") \
  _(unary_float, special_modified_bessel_i1, "special_modified_bessel_i1.out", DT_NOHALF, bessel, ANY, \
    "y0 = dl_i1(x0);") \
  _(unary_float, special_modified_bessel_k0, "special_modified_bessel_k0.out", DT_NOHALF, bessel, ANY, \
    "y0 = dl_bessel_k0(x0, 0);") \
  _(unary_float, special_modified_bessel_k1, "special_modified_bessel_k1.out", DT_NOHALF, bessel, ANY, \
    "y0 = dl_bessel_k1(x0, 0);") \
  _(unary_float, special_scaled_modified_bessel_k0, "special_scaled_modified_bessel_k0.out", DT_NOHALF, bessel, \
    ANY, "y0 = dl_bessel_k0(x0, 1);") \
  _(unary_float, special_scaled_modified_bessel_k1, "special_scaled_modified_bessel_k1.out", DT_NOHALF, bessel, \
    ANY, "y0 = dl_bessel_k1(x0, 1);") \
  _(unary_float, special_spherical_bessel_j0, "special_spherical_bessel_j0.out", DT_NOHALF, bessel, ANY, \
    "y0 = dl_spherical_bessel_j0(x0);") \
  _(unary_float, special_airy_ai,  "special_airy_ai.out",  DT_NOHALF, bessel, ANY, "y0 = dl_airy_ai(x0);") \
  _(unary_float, special_erfcx,    "special_erfcx.out",    DT_NOHALF, normal, ANY, "y0 = dl_erfcx(x0);") \
  _(unary_float, special_log_ndtr, "special_log_ndtr.out", DT_NOHALF, normal, ANY, "y0 = dl_log_ndtr(x0);") \
  _(unary_float, special_ndtri,    "special_ndtri.out",    DT_NOHALF, normal, ANY, "y0 = dl_ndtri(x0);")

// Binary rows: (x, n) for the polynomials, (x, q) for zeta, (a, x) for igamma(c). igamma(c) do
// not promote integers (binary, as on the CPU: Long raises); the rest are binary_float.
#define OCL_POINTWISE_SPECIAL_BINARY(_) \
  _(binary, igamma,  "igamma.out",  DT_FLT, gamma, ANY, "y0 = dl_igamma(x0, x1);") \
  _(binary, igammac, "igammac.out", DT_FLT, gamma, ANY, "y0 = dl_igammac(x0, x1);") \
  _(binary_float, special_zeta, "special_zeta.out", DT_NOHALF, special, ANY, "y0 = dl_zeta(x0, x1);") \
  _(binary_float, special_chebyshev_polynomial_t, "special_chebyshev_polynomial_t.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_chebyshev_t(x0, x1, 0);") \
  _(binary_float, special_chebyshev_polynomial_u, "special_chebyshev_polynomial_u.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_chebyshev_u(x0, x1, 0);") \
  _(binary_float, special_chebyshev_polynomial_v, "special_chebyshev_polynomial_v.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_chebyshev_v(x0, x1, 0);") \
  _(binary_float, special_chebyshev_polynomial_w, "special_chebyshev_polynomial_w.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_chebyshev_w(x0, x1, 0);") \
  _(binary_float, special_shifted_chebyshev_polynomial_t, "special_shifted_chebyshev_polynomial_t.out", DT_NOHALF, \
    poly, ANY, "y0 = dl_shifted_chebyshev(t, x0, x1);") \
  _(binary_float, special_shifted_chebyshev_polynomial_u, "special_shifted_chebyshev_polynomial_u.out", DT_NOHALF, \
    poly, ANY, "y0 = dl_shifted_chebyshev(u, x0, x1);") \
  _(binary_float, special_shifted_chebyshev_polynomial_v, "special_shifted_chebyshev_polynomial_v.out", DT_NOHALF, \
    poly, ANY, "y0 = dl_shifted_chebyshev(v, x0, x1);") \
  _(binary_float, special_shifted_chebyshev_polynomial_w, "special_shifted_chebyshev_polynomial_w.out", DT_NOHALF, \
    poly, ANY, "y0 = dl_shifted_chebyshev(w, x0, x1);") \
  _(binary_float, special_hermite_polynomial_h,  "special_hermite_polynomial_h.out",  DT_NOHALF, poly, ANY, \
    "y0 = dl_hermite_h(x0, x1);") \
  _(binary_float, special_hermite_polynomial_he, "special_hermite_polynomial_he.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_hermite_he(x0, x1);") \
  _(binary_float, special_laguerre_polynomial_l, "special_laguerre_polynomial_l.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_laguerre_l(x0, x1);") \
  _(binary_float, special_legendre_polynomial_p, "special_legendre_polynomial_p.out", DT_NOHALF, poly, ANY, \
    "y0 = dl_legendre_p(x0, x1);")
// clang-format on
