"""One fused Inductor kernel (pointwise or reduction) written as an OpenCL C `__kernel`.

Pointwise: a 1-D NDRange over xnumel, one work-item per element.
Reduction: NDRange (RBLOCK, xnumel rounded up to XBLOCK) with work-groups (RBLOCK, XBLOCK):
the RBLOCK lanes of a row each loop over r0_index = lane, lane + RBLOCK, ... accumulating in
registers, then combine through __local memory in a tree. Column-like reductions (XFAST: the
loads step 1 along x and far along r, e.g. a bias gradient summing the rows of [8192, 30522])
swap the work-group's dimensions, (XBLOCK, RBLOCK): neighbouring work-items take neighbouring x,
so each r step of a warp is one coalesced load, and the RBLOCK lanes of a column still share it. Rows past xnumel are clamped to the
last row (they compute it again and store nothing), so every lane reaches every barrier.
Inductor's "disable reduction" splits (e.g. softmax: max loop, sum loop, store loop) become
several such loops in one kernel; values that survive a loop are the reduction results."""
import sympy
import torch
from torch._inductor.codegen.common import DeferredLine, IndentedBuffer, PythonPrinter
from torch._inductor.codegen.simd import SIMDKernel
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from . import special
from .overrides import STORAGE_TYPE, OpenCLOverrides, constant_str, ctype
from .prelude import DOUBLE_ATOMIC_ADD, INT64_ATOMICS, PRELUDE
from .printer import OpenCLPrinter

KERNEL_NAME = "KERNEL_NAME"
MAX_BLOCK = 256


def _pow2_at_most(n, cap):
    p = 1
    while p * 2 <= min(n, cap):
        p *= 2
    return p


class OclKernel(SIMDKernel):
    overrides = OpenCLOverrides
    suffix = ";"
    newvar_prefix = ""
    sexpr = kexpr = OpenCLPrinter().doprint

    def __init__(self, tiling, **kwargs):
        super().__init__(tiling, **kwargs)
        self.post_loop = IndentedBuffer()  # reduction combines + stores after the current loop
        self.local_decls = IndentedBuffer()
        self.keep_vars = OrderedSet()  # CSE values valid after the loop that made them
        self.n_local = 0
        self.is_reduction_kernel = self.features.is_reduction()
        self.load_strides = []  # (x stride, r stride) of the loads in the reduction loop, where known
        self.xfast = False
        self.rblock, self.xblock = self._choose_blocks()

    # ---- launch geometry -------------------------------------------------------------
    def _numel(self, prefix):
        return V.graph.sizevars.simplify(self.numels.get(prefix, sympy.S.One))

    @staticmethod
    def _props():
        try:
            return torch.ocl.get_device_properties(V.graph.get_current_device_or_throw().index or 0)
        except Exception:
            return None

    @classmethod
    def _max_block(cls):
        """256, or less where the device's work-groups are smaller."""
        p = cls._props()
        return _pow2_at_most(p.max_work_group_size, MAX_BLOCK) if p is not None else MAX_BLOCK

    @classmethod
    def _xfast_work_items(cls):
        """Work-items an x-fast reduction aims for. Each has one load in flight per r step, so a GPU
        needs about a million to cover its memory latency (the H100 ran BERT's [8192, 30522] bias
        gradient in 36 ms with 128k); a CPU device runs work-groups one after another per core and
        only needs enough of them to share out."""
        p = cls._props()
        return 1 << 17 if p is None or str(p.type) == "cpu" else 1 << 20

    def _choose_blocks(self):
        if not self.is_reduction_kernel:
            return 1, MAX_BLOCK  # the runtime picks the pointwise work-group size per device
        cap = self._max_block()
        r = self._numel("r0_")
        hint = int(r) if isinstance(r, sympy.Integer) else 1024
        if hint <= 8:
            return 1, min(64, cap)  # short rows: one work-item per row
        if self.xfast:
            # Enough work-items to keep the device's memory busy even for a few hundred columns;
            # at least 8 neighbouring columns per r step (a 32-byte sector of floats), at most 64.
            x = self._numel("x")
            xhint = int(x) if isinstance(x, sympy.Integer) else 8192
            items = self._xfast_work_items()
            rblock = _pow2_at_most(max(1, min(hint, items // max(xhint, 1), 32)), max(1, cap // 8))
            return rblock, min(64, cap // rblock)
        rblock = _pow2_at_most(hint, cap)
        return rblock, max(1, cap // rblock // 4) if rblock < 64 else 1

    def _note_strides(self, index):
        """Records how a load in the reduction loop moves along xindex and r0_index (for XFAST)."""
        if not (self.is_reduction_kernel and self.inside_reduction):
            return
        try:
            subs = {e.symbol(): e.expr for tree in self.range_trees for e in tree.nodes.values()}
            e = sympy.sympify(index).xreplace(subs)
            x, r = sympy.Symbol("xindex", integer=True), sympy.Symbol("r0_index", integer=True)
            x = next((s for s in e.free_symbols if s.name == "xindex"), x)
            r = next((s for s in e.free_symbols if s.name == "r0_index"), r)
            base = e.subs({x: 0, r: 0})
            sx, sr = e.subs({x: 1, r: 0}) - base, e.subs({x: 0, r: 1}) - base
            if isinstance(sx, sympy.Integer) and isinstance(sr, sympy.Integer):
                self.load_strides.append((int(sx), int(sr)))
        except Exception:  # an index sympy cannot evaluate: no opinion
            pass

    def _column_like(self):
        """Whether the reduction loop's loads are consecutive along x and strided along r (and none
        reads rows contiguously): then neighbouring work-items should take neighbouring x. Loads
        that do not move with x (a per-row scalar such as layer norm's mean / rstd in its weight
        gradient) read one address per warp either way and have no say."""
        if self._outer_reduction():
            return True
        col = any(sx == 1 and abs(sr) > 1 for sx, sr in self.load_strides)
        row = any(abs(sr) == 1 and abs(sx) > 1 for sx, sr in self.load_strides)
        return col and not row

    def _outer_reduction(self):
        try:
            from torch._inductor.runtime.hints import ReductionHint

            return self.features.get_reduction_hint() in (ReductionHint.OUTER, ReductionHint.OUTER_TINY)
        except Exception:  # older/newer Inductor without the hint: the general mapping
            return False

    def dtype_to_str(self, dtype):
        return ctype(dtype)

    def want_no_x_dim(self):
        return False

    # ---- indexing ------------------------------------------------------------------
    def codegen_iteration_ranges_entry(self, entry):
        line = f"{self.index_dtype} {entry.name} = {self.kexpr(self.rename_indexing(entry.expr))};"
        if entry.root.is_loop:
            self.indexing_code.writeline(line)
        else:
            self.body.writeline(line)

    def check_bounds(self, expr, size, lower, upper):
        """An indirect index (an embedding's token ids, a gather's indices) outside [0, size): the kernel sets its
        check slot, which the host reports where it next waits for the queue as CUDA's device-side asserts are
        (DeferredChecks.h), and an index that is one CSE variable is replaced by 0 so that no access leaves its
        buffer."""
        if not (lower or upper):
            return
        idx = self.kexpr(self.rename_indexing(expr))
        conds = []
        if lower:
            conds.append(f"({idx}) >= 0")
        if upper:
            conds.append(f"({idx}) < ({self.kexpr(self.rename_indexing(size))})")
        clamp = f" {idx} = 0;" if idx in {v.name for v in self.cse.varname_map.values()} else ""
        self.compute.writeline(f"if (!({' && '.join(conds)})) {{ atomic_or(ocl_check, 1);{clamp} }}")
        bound = f"0 <= index < {size}" if lower and upper else (f"index < {size}" if upper else "index >= 0")
        self.note_check(f"index out of bounds: {bound}", index=True)

    def note_check(self, message, index=False):
        """A device-side check of this kernel (its failure raises `message`; IndexError where all are index
        checks, else RuntimeError): the kernel takes the check slot (codegen_kernel, runtime.py)."""
        self.ocl_checks = getattr(self, "ocl_checks", []) + [(message, index)]

    def device_assert_async(self, cond, msg):  # torch._assert_async in a graph (torch 2.13's CSEProxy)
        self.note_check(msg)
        self.compute.writeline(f"if (!({cond})) atomic_or(ocl_check, 1);")

    def _store_guard(self, after_reduction):
        if not self.is_reduction_kernel:
            return None
        return "xvalid && rlane == 0" if after_reduction or not self.inside_reduction else "xvalid"

    # ---- memory --------------------------------------------------------------------
    def load(self, name, index):
        var = self.args.input(name)
        index = self.prepare_indexing(index)
        dtype = V.graph.get_dtype(name)
        idx = self.index_to_str(index)
        self._note_strides(index)
        if dtype == torch.float16:
            line, dtype = f"vload_half({idx}, {var})", torch.float32
        elif dtype == torch.bfloat16:
            line, dtype = f"ocl_bf16_to_float({var}[{idx}])", torch.float32
        elif dtype == torch.bool:
            line = f"({var}[{idx}] != 0)"
        else:
            line = f"{var}[{idx}]"
        if self._load_mask:
            other = constant_str(self._load_other or 0, dtype)
            line = f"(({self._load_mask}) ? ({line}) : {other})"
        return self.cse.generate(self.loads, line, dtype=dtype)

    def _store_line(self, name, index, value, mode=None):
        var = self.args.output(name)
        idx = self.index_to_str(self.prepare_indexing(index))
        dtype = V.graph.get_dtype(name)
        if mode == "atomic_add":
            if dtype == torch.float32:
                return f"ocl_atomic_add_float({var} + ({idx}), {value});"
            if dtype == torch.int32:
                return f"atomic_add({var} + ({idx}), {value});"
            if dtype in (torch.float16, torch.bfloat16):
                bf16 = int(dtype == torch.bfloat16)
                return f"ocl_atomic_add_16((volatile __global ushort*)({var} + ({idx})), (float)({value}), {bf16});"
            if dtype in (torch.int64, torch.float64):  # 64-bit atomics: an extension (OpenCL C 1.2)
                self._use_int64_atomics(dtype)
                if dtype == torch.int64:
                    return f"atom_add((volatile __global long*)({var} + ({idx})), (long)({value}));"
                return f"ocl_atomic_add_double({var} + ({idx}), (double)({value}));"
            raise NotImplementedError(f"torch.compile on ocl: atomic_add store of {dtype}")
        if mode is not None:
            raise NotImplementedError(f"torch.compile on ocl: store mode {mode}")
        if dtype == torch.float16:
            return f"vstore_half_rte((float)({value}), {idx}, {var});"
        if dtype == torch.bfloat16:
            return f"{var}[{idx}] = ocl_float_to_bf16((float)({value}));"
        return f"{var}[{idx}] = ({STORAGE_TYPE[dtype]})({value});"

    def _use_int64_atomics(self, dtype):
        device = V.graph.get_current_device_or_throw()
        if "cl_khr_int64_base_atomics" not in torch.ocl.get_device_properties(device.index).extensions:
            raise NotImplementedError(f"torch.compile on ocl: accumulating stores of {dtype} need "
                                      f"cl_khr_int64_base_atomics, which {device} lacks")
        self.ocl_int64_atomics = True
        self.ocl_double_atomics = getattr(self, "ocl_double_atomics", False) or dtype == torch.float64

    def store(self, name, index, value, mode=None):
        line = self._store_line(name, index, value, mode)
        guard = self._store_guard(False)
        if guard:
            line = f"if ({guard}) {line}"
        self.stores.writeline(DeferredLine(name, line))
        if not self.inside_reduction:
            self.keep_vars.add(value)

    def store_reduction(self, name, index, value):
        prior = self.inside_reduction
        self.inside_reduction = False  # index has no r0_ variables
        try:
            line = self._store_line(name, index, value)
        finally:
            self.inside_reduction = prior
        self.post_loop.writeline(DeferredLine(name, f"if ({self._store_guard(True)}) {line}"))

    # ---- reductions -----------------------------------------------------------------
    def reduction(self, dtype, src_dtype, reduction_type, value):
        key = (src_dtype, reduction_type, value)
        if key in self.cse.reduction_cache:
            return self.cse.reduction_cache[key]
        from .reduction import codegen_reduction

        result = codegen_reduction(self, dtype, src_dtype, reduction_type, value)
        self.cse.reduction_cache[key] = result
        self.keep_vars.update(result if isinstance(result, tuple) else (result,))
        return result

    def new_local(self, ctype_str):
        name = f"lred{self.n_local}"
        self.n_local += 1
        self.local_decls.writeline(f"__local {ctype_str} {name}[RBLOCK * XBLOCK];")
        return name

    # ---- assembly ------------------------------------------------------------------
    def codegen_body(self):
        if not (self.indexing_code or self.loads or self.compute or self.stores or self.post_loop):
            return
        if self.inside_reduction and self.is_reduction_kernel:
            idx = self.index_dtype
            # unrolled so that several iterations' loads can be in flight at once: they do not
            # depend on the accumulator
            self.body.writeline("#pragma unroll 4")
            self.body.writeline(f"for ({idx} r0_index = rlane; r0_index < r0_numel; r0_index += RBLOCK) {{")
            with self.body.indent():
                self.body.splice(self.indexing_code)
                self.body.splice(self.loads)
                self.body.splice(self.compute)
                self.body.splice(self.stores)
            self.body.writeline("}")
            self.body.splice(self.post_loop)
            # Values computed inside the loop are gone; r0 entries are re-emitted per loop.
            self.cse.invalidate(self.keep_vars)
            for tree in self.range_trees:
                if tree.is_loop:
                    tree.cache_clear()
        else:
            self.body.splice(self.indexing_code)
            self.body.splice(self.loads)
            self.body.splice(self.compute)
            self.body.splice(self.stores)
            self.body.splice(self.post_loop)
        for buf in (self.indexing_code, self.loads, self.compute, self.stores, self.post_loop):
            buf.clear()

    def _symbolic(self, prefix):
        return not isinstance(self._numel(prefix), (sympy.Integer, int))

    def codegen_kernel(self, name=None):
        self.codegen_body()
        if self.is_reduction_kernel:  # the loads are known now: the launch shape
            self.xfast = self._column_like()
            self.rblock, self.xblock = self._choose_blocks()
        argdefs, call_args, _, arg_types = self.args.python_argdefs()
        params, prologue = [], []
        for arg, outer, t in zip(argdefs, call_args, arg_types):
            inner = arg.name if hasattr(arg, "name") else str(arg)
            if isinstance(t, torch.dtype):
                qual = "" if outer in self.args.output_buffers or inner.startswith("in_out") else "const "
                params.append(f"__global {qual}{STORAGE_TYPE[t]}* restrict {inner}, ulong {inner}_off")
                prologue.append(f"{inner} += {inner}_off;")
            else:
                params.append(f"long {inner}")
        for prefix in ("x", "r0_") if self.is_reduction_kernel else ("x",):
            if self._symbolic(prefix):
                params.append(f"long {prefix}numel")
        if getattr(self, "ocl_checks", None):  # check_bounds: the check slot, last (runtime.py passes it)
            params.append("__global int* ocl_check, ulong ocl_check_off")
            prologue.append("ocl_check += ocl_check_off;")
        idx = self.index_dtype
        code = IndentedBuffer()
        code.writeline(f"__kernel void {KERNEL_NAME}({', '.join(params)}) {{")
        with code.indent():
            for prefix in ("x", "r0_") if self.is_reduction_kernel else ("x",):
                if not self._symbolic(prefix):
                    code.writeline(f"const {idx} {prefix}numel = {self.kexpr(self._numel(prefix))};")
            code.splice(self.local_decls)
            code.writelines(prologue)
            for var in self.cse.varname_map.values():
                code.writeline(f"{ctype(var.dtype) if var.dtype is not None else 'float'} {var.name};")
            if self.is_reduction_kernel:
                d = (1, 0) if self.xfast else (0, 1)  # (rlane's, x's NDRange dimension)
                code.writeline(f"const int rlane = get_local_id({d[0]});")
                code.writeline(f"const {idx} xraw = get_global_id({d[1]});")
                code.writeline("const bool xvalid = xraw < xnumel;")
                code.writeline(f"const {idx} xindex = xvalid ? xraw : xnumel - 1;")
            else:
                code.writeline(f"const {idx} xindex = get_global_id(0);")
                code.writeline("if (xindex >= xnumel) return;")
            code.splice(self.body)
        code.writeline("}")
        fp64 = "double" in code.getvalue() or getattr(self, "ocl_special_double", False)
        src = PRELUDE + special.prelude(self) + code.getvalue()  # torch.special's functions it calls
        if getattr(self, "ocl_int64_atomics", False):  # accumulating stores of int64 / float64 (kernel.py store)
            src = INT64_ATOMICS + (DOUBLE_ATOMIC_ADD if self.ocl_double_atomics else "") + src
        if self.is_reduction_kernel:
            # Launch shape as build options (-DRBLOCK=.. -DXBLOCK=..): the runtime may pick another (tuner).
            src = f"#ifndef RBLOCK\n#define RBLOCK {self.rblock}\n#define XBLOCK {self.xblock}\n#endif\n" + src
            # The __local slot of lane r of this work-item's row.
            lred = ("((r) * XBLOCK + (int)get_local_id(0))" if self.xfast
                    else "((int)get_local_id(1) * RBLOCK + (r))")
            src = f"#define LRED(r) {lred}\n" + src
        if fp64:
            src = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + src
        return src

    def call_kernel(self, name, node=None, deallocate_ws=True):
        wrapper = V.graph.wrapper_code
        _, call_args, _, _ = self.args.python_argdefs()
        args = [str(a) for a in call_args]
        pexpr = PythonPrinter().doprint  # sizes in the wrapper's symbols (s0, ...)
        x = pexpr(self._numel("x"))
        extra = [f"xnumel={x}"]
        if self.is_reduction_kernel:
            extra.append(f"rnumel={pexpr(self._numel('r0_'))}")
        wrapper.writeline(f"{name}.run({', '.join(args + extra)})")
