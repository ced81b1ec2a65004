"""Generates dlprim/kernels/special_coeffs.cl: the Chebyshev tables of the special functions in
special_bessel.cl and special_normal.cl (Bessel J/Y/I/K, Airy Ai, erfcx).

Each table is the Chebyshev expansion sum_k c[k] T_k(t), t in [-1, 1], of a smooth function
(the oscillating or singular part of each special function is split off analytically in the
.cl file), computed here in 50-digit arithmetic with mpmath at Chebyshev nodes and cut where
the coefficients fall below double precision. Run: python scripts/gen_special_coeffs.py
(needs mpmath; the generated file is committed so builds do not)."""
import os

import mpmath as mp

mp.mp.dps = 50
NODES = 120
CUT = mp.mpf("1e-18")


def _two_over_pi():
    return 2 / mp.pi


def _chi(x, k):  # the phase x - (2k + 1) pi / 4 of J_k / Y_k for large x
    return x - (2 * k + 1) * mp.pi / 4


def _pq(k, which):
    """P_k or Q_k of the Hankel form J_k = sqrt(2/(pi x)) (P cos chi - Q sin chi),
    Y_k = sqrt(2/(pi x)) (P sin chi + Q cos chi)."""
    def f(x):
        c, s = mp.cos(_chi(x, k)), mp.sin(_chi(x, k))
        j, y = mp.besselj(k, x), mp.bessely(k, x)
        scale = mp.sqrt(mp.pi * x / 2)
        return scale * (j * c + y * s) if which == "P" else scale * (y * c - j * s)
    return f


AIRY_NEG_Z0 = mp.mpf(2) / 3 * mp.mpf(4) ** mp.mpf(1.5)   # zeta at x = -4
AIRY_POS_Z0 = mp.mpf(2) / 3 * mp.mpf(2) ** mp.mpf(1.5)   # zeta at x = 2
ERFCX_K, ERFCX_END = mp.mpf(4), mp.mpf(50)
ERFCX_TEND = (ERFCX_END - ERFCX_K) / (ERFCX_END + ERFCX_K)


def _airy_neg(which):
    """A or B of Ai(-x) = x^(-1/4)/sqrt(pi) (A sin th - B cos th), th = zeta + pi/4, as a function
    of zeta = 2/3 x^(3/2)."""
    def f(z):
        x = (3 * z / 2) ** (mp.mpf(2) / 3)
        th = z + mp.pi / 4
        ai, bi = mp.airyai(-x), mp.airybi(-x)
        s = mp.sqrt(mp.pi) * x ** mp.mpf(0.25)
        return s * (ai * mp.sin(th) + bi * mp.cos(th)) if which == "A" else s * (bi * mp.sin(th) - ai * mp.cos(th))
    return f


def _erfcx(x):
    return mp.exp(x * x) * mp.erfc(x)


# name: (function of x, map t -> x, comment)
TABLES = [
    ("DL_I0E_SMALL", lambda x: mp.exp(-x) * mp.besseli(0, x), lambda t: 4 * (t + 1),
     "exp(-x) I0(x), x = 4 (t + 1) in [0, 8]"),
    ("DL_I0E_LARGE", lambda x: mp.sqrt(x) * mp.exp(-x) * mp.besseli(0, x), lambda t: 16 / (t + 1),
     "sqrt(x) exp(-x) I0(x), t = 16 / x - 1, x in [8, inf)"),
    ("DL_I1E_SMALL", lambda x: mp.exp(-x) * mp.besseli(1, x) / x, lambda t: 4 * (t + 1),
     "exp(-x) I1(x) / x, x = 4 (t + 1) in [0, 8]"),
    ("DL_I1E_LARGE", lambda x: mp.sqrt(x) * mp.exp(-x) * mp.besseli(1, x), lambda t: 16 / (t + 1),
     "sqrt(x) exp(-x) I1(x), t = 16 / x - 1, x in [8, inf)"),
    ("DL_K0_SMALL", lambda x: mp.besselk(0, x) + mp.log(x / 2) * mp.besseli(0, x), lambda t: mp.sqrt(2 * (t + 1)),
     "K0(x) + log(x/2) I0(x), t = x^2 / 2 - 1, x in [0, 2]"),
    ("DL_K1_SMALL", lambda x: x * (mp.besselk(1, x) - mp.log(x / 2) * mp.besseli(1, x)),
     lambda t: mp.sqrt(2 * (t + 1)), "x (K1(x) - log(x/2) I1(x)), t = x^2 / 2 - 1, x in [0, 2]"),
    ("DL_K0E_LARGE", lambda x: mp.sqrt(x) * mp.exp(x) * mp.besselk(0, x), lambda t: 4 / (t + 1),
     "sqrt(x) exp(x) K0(x), t = 4 / x - 1, x in [2, inf)"),
    ("DL_K1E_LARGE", lambda x: mp.sqrt(x) * mp.exp(x) * mp.besselk(1, x), lambda t: 4 / (t + 1),
     "sqrt(x) exp(x) K1(x), t = 4 / x - 1, x in [2, inf)"),
    ("DL_J0_SMALL", lambda x: mp.besselj(0, x), lambda t: mp.sqrt(32 * (t + 1)), "J0(x), t = x^2 / 32 - 1, x in [0, 8]"),
    ("DL_J1_SMALL", lambda x: mp.besselj(1, x) / x, lambda t: mp.sqrt(32 * (t + 1)),
     "J1(x) / x, t = x^2 / 32 - 1, x in [0, 8]"),
    ("DL_Y0_SMALL", lambda x: mp.bessely(0, x) - _two_over_pi() * mp.log(x) * mp.besselj(0, x),
     lambda t: mp.sqrt(32 * (t + 1)), "Y0(x) - 2/pi log(x) J0(x), t = x^2 / 32 - 1, x in [0, 8]"),
    ("DL_Y1_SMALL", lambda x: (mp.bessely(1, x) - _two_over_pi() * (mp.log(x) * mp.besselj(1, x) - 1 / x)) / x,
     lambda t: mp.sqrt(32 * (t + 1)), "(Y1(x) - 2/pi (log(x) J1(x) - 1/x)) / x, t = x^2 / 32 - 1, x in [0, 8]"),
    ("DL_P0", _pq(0, "P"), lambda t: 16 / (t + 1), "P0 of J0/Y0 = sqrt(2/(pi x)) (P0 cos|sin ..), t = 16 / x - 1"),
    ("DL_Q0", _pq(0, "Q"), lambda t: 16 / (t + 1), "Q0, t = 16 / x - 1, x in [8, inf)"),
    ("DL_P1", _pq(1, "P"), lambda t: 16 / (t + 1), "P1 of J1/Y1, t = 16 / x - 1, x in [8, inf)"),
    ("DL_Q1", _pq(1, "Q"), lambda t: 16 / (t + 1), "Q1, t = 16 / x - 1, x in [8, inf)"),
    ("DL_AI_MID", mp.airyai, lambda t: 3 * t - 1, "Ai(x), x = 3 t - 1 in [-4, 2]"),
    ("DL_AI_POS", lambda z: 2 * mp.sqrt(mp.pi) * ((3 * z / 2) ** (mp.mpf(2) / 3)) ** mp.mpf(0.25) * mp.exp(z)
     * mp.airyai((3 * z / 2) ** (mp.mpf(2) / 3)), lambda t: 2 * AIRY_POS_Z0 / (t + 1),
     "2 sqrt(pi) x^(1/4) exp(zeta) Ai(x), zeta = 2/3 x^(3/2), t = 2 zeta(2) / zeta - 1, x in [2, inf)"),
    ("DL_AI_NEG_A", _airy_neg("A"), lambda t: 2 * AIRY_NEG_Z0 / (t + 1),
     "A of Ai(-x) = x^(-1/4)/sqrt(pi) (A sin th - B cos th), th = zeta + pi/4, t = 2 zeta(4) / zeta - 1"),
    ("DL_AI_NEG_B", _airy_neg("B"), lambda t: 2 * AIRY_NEG_Z0 / (t + 1), "B of the same, x in [4, inf)"),
    ("DL_ERFCX", _erfcx, lambda t: ERFCX_K * (1 + u(t)) / (1 - u(t)),
     "erfcx(x), u = (x - 4) / (x + 4) in [-1, u(50)], t = the affine map of u onto [-1, 1]"),
]


def u(t):  # the erfcx table's t -> u map: [-1, 1] onto [-1, ERFCX_TEND]
    return -1 + (t + 1) * (ERFCX_TEND + 1) / 2


def chebyshev(f, to_x):
    vals = []
    for j in range(NODES):
        th = mp.pi * (j + mp.mpf(0.5)) / NODES
        vals.append((th, f(to_x(mp.cos(th)))))
    coeffs = []
    for k in range(NODES):
        c = 2 * mp.fsum(v * mp.cos(k * th) for th, v in vals) / NODES
        coeffs.append(c / 2 if k == 0 else c)
    big = max(abs(c) for c in coeffs)
    last = max(k for k, c in enumerate(coeffs) if abs(c) > CUT * big)
    assert last < NODES - 10, "series does not converge within the nodes"
    return coeffs[:last + 1]


def main():
    out = ["// Generated by scripts/gen_special_coeffs.py: do not edit. Chebyshev tables sum_k c[k] T_k(t),",
           "// 50-digit mpmath values rounded to double, and their evaluator dl_cheb.", "",
           "// Clenshaw's recurrence for sum_k c[k] T_k(t).",
           "static inline dl_t dl_cheb(__constant dl_t* c, int n, dl_t t) {",
           "  dl_t b1 = 0, b2 = 0, t2 = t + t;",
           "  for (int k = n - 1; k >= 1; --k) {",
           "    dl_t b0 = t2 * b1 - b2 + c[k];",
           "    b2 = b1;",
           "    b1 = b0;",
           "  }",
           "  return t * b1 - b2 + c[0];",
           "}",
           "#define DL_CHEB(table, t) dl_cheb(table, table##_N, t)", ""]
    for name, f, to_x, comment in TABLES:
        c = chebyshev(f, to_x)
        out.append(f"// {comment}")
        out.append(f"#define {name}_N {len(c)}")
        out.append(f"__constant dl_t {name}[{len(c)}] = {{")
        for i in range(0, len(c), 3):
            out.append("    " + " ".join(f"(dl_t){mp.nstr(v, 17, min_fixed=1, max_fixed=0)}," for v in c[i:i + 3]))
        out.append("};")
        out.append("")
    path = os.path.join(os.path.dirname(__file__), "..", "dlprim", "kernels", "special_coeffs.cl")
    with open(path, "w") as fh:
        fh.write("\n".join(out))
    print("wrote", path)


if __name__ == "__main__":
    main()
