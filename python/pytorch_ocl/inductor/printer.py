"""Sympy index / size expressions printed as OpenCL C (integer index math in `long` or `int`)."""
import sympy
from sympy.printing.precedence import PRECEDENCE
from torch.utils._sympy.printers import ExprPrinter


class OpenCLPrinter(ExprPrinter):
    def _print_Integer(self, expr):
        i = int(expr)
        # Literals beyond int range need the L suffix, or C types them int and wraps.
        return f"{i}L" if not -(2**31) <= i < 2**31 else str(i)

    def _print_Float(self, expr):
        if expr.is_integer:  # sympy calls 0.0 integer; keep it a double literal for C
            return f"{int(expr)}.0"
        return repr(float(expr))

    def _print_Rational(self, expr):
        if expr.q == 1:
            return self._print_Integer(sympy.Integer(expr.p))
        return f"({expr.p}.0/{expr.q}.0)"

    def _print_FloorDiv(self, expr):
        x, div = (self.doprint(a) for a in expr.args)
        if expr.is_integer:
            return f"OCL_FLOORDIV({x}, {div})"
        return f"floor(({x}) / ({div}))"

    def _print_CleanDiv(self, expr):
        return self._print_FloorDiv(expr)

    def _print_ModularIndexing(self, expr):
        # Inductor's indices here are non-negative (like Triton's, which prints // and %).
        x, div, mod = expr.args
        x = self.doprint(x)
        if div != 1:
            x = f"({x}) / ({self.doprint(div)})"
        return f"(({x}) % ({self.doprint(mod)}))"

    def _print_PythonMod(self, expr):
        x, div = (self.doprint(a) for a in expr.args)
        return f"OCL_PYMOD({x}, {div})"

    def _print_Mod(self, expr):
        return self._print_PythonMod(expr)

    def _print_Where(self, expr):
        c, p, q = (self.parenthesize(a, PRECEDENCE["Atom"] - 0.5) for a in expr.args)
        return f"({c} ? {p} : {q})"

    def _print_Piecewise(self, expr):
        result = None
        for e, c in reversed(expr.args):
            es = self.parenthesize(e, PRECEDENCE["Atom"] - 0.5)
            if c == True or result is None:  # noqa: E712
                result = es
            else:
                result = f"({self.parenthesize(c, PRECEDENCE['Atom'] - 0.5)} ? {es} : {result})"
        return result or "0"

    def _min_max(self, expr, fn):
        args = [self._print(a) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})" if not expr.is_integer else f"{fn}((long)({out}), (long)({a}))"
        return out

    def _print_Min(self, expr):
        return self._min_max(expr, "min" if expr.is_integer else "fmin")

    def _print_Max(self, expr):
        return self._min_max(expr, "max" if expr.is_integer else "fmax")

    def _print_Abs(self, expr):
        a = self._print(expr.args[0])
        # Not OpenCL's integer abs(): it returns an unsigned type.
        return f"(({a}) < 0 ? -({a}) : ({a}))" if expr.is_integer else f"fabs({a})"

    def _print_And(self, expr):
        return self.stringify(expr.args, " && ", PRECEDENCE["And"])

    def _print_Or(self, expr):
        return self.stringify(expr.args, " || ", PRECEDENCE["Or"])

    def _print_Not(self, expr):
        return f"!({self._print(expr.args[0])})"

    def _print_BooleanTrue(self, expr):
        return "true"

    def _print_BooleanFalse(self, expr):
        return "false"

    def _print_ToFloat(self, expr):
        return f"((double)({self._print(expr.args[0])}))"

    def _print_IntTrueDiv(self, expr):
        a, b = (self._print(x) for x in expr.args)
        return f"((double)({a}) / (double)({b}))"

    def _print_FloatTrueDiv(self, expr):
        a, b = (self._print(x) for x in expr.args)
        return f"(({a}) / ({b}))"

    def _print_PowByNatural(self, expr):
        base, exp = expr.args
        if base == 2:
            return f"(1L << ({self._print(exp)}))"
        if exp.is_Integer and int(exp) >= 0:
            return "(" + " * ".join([self.parenthesize(base, PRECEDENCE["Mul"])] * int(exp) or ["1"]) + ")"
        return f"((long)pown((double)({self._print(base)}), (int)({self._print(exp)})))"

    def _print_Pow(self, expr):
        base, exp = expr.args
        if exp.is_Integer and int(exp) > 0:
            return "(" + " * ".join([self.parenthesize(base, PRECEDENCE["Mul"])] * int(exp)) + ")"
        if exp == sympy.Rational(1, 2):
            return f"sqrt((double)({self._print(base)}))"
        return f"pow((double)({self._print(base)}), (double)({self._print(exp)}))"

    def _print_FloatPow(self, expr):
        a, b = (self._print(x) for x in expr.args)
        return f"pow({a}, {b})"

    def _rounding(self, expr, fn):
        r = f"{fn}({self._print(expr.args[0])})"
        return f"((long){r})" if expr.is_integer else r

    def _print_floor(self, expr):
        return self._rounding(expr, "floor")

    def _print_ceiling(self, expr):
        return self._rounding(expr, "ceil")

    def _print_FloorToInt(self, expr):
        return f"((long)floor({self._print(expr.args[0])}))"

    def _print_CeilToInt(self, expr):
        return f"((long)ceil({self._print(expr.args[0])}))"

    def _print_TruncToInt(self, expr):
        return f"((long)trunc({self._print(expr.args[0])}))"

    def _print_TruncToFloat(self, expr):
        return f"trunc({self._print(expr.args[0])})"

    def _print_RoundToInt(self, expr):
        return f"((long)rint({self._print(expr.args[0])}))"

    def _print_Infinity(self, expr):
        return "INFINITY"

    def _print_NegativeInfinity(self, expr):
        return "(-INFINITY)"

    def _print_NaN(self, expr):
        return "NAN"

    def _print_BitwiseFn_bitwise_and(self, expr):
        return self.stringify(expr.args, " & ", PRECEDENCE["Atom"] - 0.5)

    def _print_BitwiseFn_bitwise_or(self, expr):
        return self.stringify(expr.args, " | ", PRECEDENCE["Atom"] - 0.5)

    def _print_BitwiseFn_bitwise_xor(self, expr):
        return self.stringify(expr.args, " ^ ", PRECEDENCE["Atom"] - 0.5)


def _unary(fn):
    def p(self, expr):
        return f"{fn}({self._print(expr.args[0])})"

    return p


for _name in ("sqrt", "cos", "cosh", "acos", "sin", "sinh", "asin", "tan", "tanh", "atan", "log2", "exp", "log"):
    setattr(OpenCLPrinter, f"_print_OpaqueUnaryFn_{_name}", _unary(_name))

cexpr = OpenCLPrinter().doprint
