"""Estimates the registers of the attention kernels on NVIDIA without an NVIDIA device or its OpenCL.

    python3 scripts/ptx_registers.py [--d 64] [--dv 64] [--arch sm_90] [--maxrreg N] LAYOUT ...

LAYOUT: "qrleaf=W,RPI" or "luleaf=W,RPI" (linalg_qr_leaf.cl / linalg_lu_leaf.cl, float32), "dkdv=BQ,BK,NTC[,split]" (attention_bwd_tiled.cl), "dq=BQ,BK,NTC" and "fwd=BQ,BK,KC,NTC"
(attention_tiled.cl), "rows=TPR,BR,BC" (attention.cl's attn_bwd_dkdv), or a matrix-engine GEMM config
"attnmma=KIND:NW,BKT[:PREFETCH]", "attnmmadq=KIND:NW,BKT", "attnmmadkdv=KIND:NW,BKT" or "attnmmaonepass=KIND:NW,BKT"
(attention_mma.cl's forward, attention_mma_bwd.cl's dq or dk/dv pass, or the one-pass backward with
attention_mma_onepass.cl: warps, keys per tile, 0/1 register
prefetch, default as attention_mma.cpp: 1 for head dims <= 64 except 3xtf32; backward heads over 64 split over
warp pairs where attention_mma.cpp splits them), or a matrix-engine GEMM config
"mma=KIND:BMxBNxBK:WMxWN:MODE[:AB]" (gemm_mma.cl; KIND tf32|3xtf32|bf16|fp16, MODE local|local2|asyncN, AB the
operands' fast dims, default kn: A k-fast, B n-fast), or "convmma=KIND:BMxBNxBK:WMxWN:MODE" (the implicit-GEMM
convolution forward on gemm_mma.cl, conv_implicit.cl's hooks). Prints ptxas's register, stack and spill counts for
each (float32 attention without mask or dropout, 4-vector loads; GEMM with 16-byte staging, whole tiles).

How: the program text is put together as dlprim/src/attention.cpp does, compiled to PTX by clang
(-target nvptx64-nvidia-nvcl; OpenCL builtins the text uses are defined in a small prelude on NVVM
intrinsics), then ptxas -v. This is not NVIDIA's OpenCL compiler (its front end differs: on the H100
the row kernel takes 255 registers with spills there, 148 plus a stack frame here), but ptxas
allocates the registers in both, so the numbers rank layouts and show what a change costs; measure
on the device (scripts/cl_binary.cpp) before trusting one. --maxrreg caps the registers to see how
much would spill under a bound (the real pressure). Needs clang (15+) and ptxas on PATH or in
/usr/local/bin or /usr/local/cuda/bin.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dlprim", "kernels")
PRELUDE = r"""
#define OV __attribute__((overloadable))
#define SREG(n) (d == 0 ? __nvvm_read_ptx_sreg_##n##_x() : d == 1 ? __nvvm_read_ptx_sreg_##n##_y() : __nvvm_read_ptx_sreg_##n##_z())
size_t OV get_local_id(uint d) { return SREG(tid); }
size_t OV get_group_id(uint d) { return SREG(ctaid); }
size_t OV get_num_groups(uint d) { return SREG(nctaid); }
size_t OV get_local_size(uint d) { return SREG(ntid); }
size_t OV get_global_id(uint d) { return SREG(ctaid) * SREG(ntid) + SREG(tid); }
void OV barrier(cl_mem_fence_flags f) { __asm__ volatile("bar.sync 0;" ::: "memory"); }
float OV native_exp(float x) { return __nvvm_ex2_approx_f(x * 1.44269504f); }
float OV native_exp2(float x) { return __nvvm_ex2_approx_f(x); }
float OV exp(float x) { return __nvvm_ex2_approx_f(x * 1.44269504f); }
float OV log(float x) { return __nvvm_lg2_approx_f(x) * 0.69314718f; }
float OV fmax(float a, float b) { return __builtin_fmaxf(a, b); }
int OV min(int a, int b) { return a < b ? a : b; }
long OV min(long a, long b) { return a < b ? a : b; }
float OV dot(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
uint4 OV vload4(size_t i, const __private uint *p) { return (uint4)(p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]); }
float OV fabs(float x) { return __builtin_fabsf(x); }
float4 OV fabs(float4 x) { return (float4)(fabs(x.x), fabs(x.y), fabs(x.z), fabs(x.w)); }
uint OV atomic_inc(volatile __global uint *p) {
  uint r;
  __asm__ volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(r) : "l"((ulong)p) : "memory");
  return r;
}
"""

MMA_KINDS = {"tf32": 1, "3xtf32": 2, "bf16": 3, "fp16": 4}


def gemm_program(spec, conv=False):
    """gemm_mma.cl as dlprim/src/gemm.cpp puts it together (tiled_program + mma_defines); with `conv`, with
    conv_implicit.cl's hooks as dlprim/src/conv_implicit.cpp does (the implicit-GEMM convolution forward)."""
    parts = spec.split(":")
    kind, tile, warps, mode = parts[:4]
    ab = parts[4] if len(parts) > 4 else "kn"
    bm, bn, bk = (int(v) for v in tile.split("x"))
    wm, wn = (int(v) for v in warps.split("x"))
    k16 = MMA_KINDS[kind] >= 3
    bufs = int(mode[5:]) if mode.startswith("async") else 2 if mode == "local2" else 1
    text = PRELUDE + "#define T " + ("ushort" if k16 else "float") + "\n#define ACC float\n"
    text += ("#define LOAD_T(p, i) as_float((uint)(p)[i] << 16)\n#define STORE_T(p, i, v) (p)[i] = (ushort)(as_uint(v) >> 16)\n"
             if k16 else "#define LOAD_T(p, i) ((p)[i])\n#define STORE_T(p, i, v) (p)[i] = (v)\n")
    text += "#define TC T\n#define LOAD_C LOAD_T\n#define STORE_C STORE_T\n#define ACC4 float4\n"
    text += source("common") + source("gemm_common")
    defs = {"A_KCONTIG": int(ab[0] == "k"), "B_NCONTIG": int(ab[1] == "n"), "IDX_T": "int", "VEC4_A": 1, "VEC4_B": 1,
            "VEC4_FULL": 1, "MMA_KIND": MMA_KINDS[kind], "MMA_EMULATE": 0, "MT": "ushort" if k16 else "float",
            "BM": bm, "BN": bn, "BK": bk, "WARPS_M": wm, "WARPS_N": wn, "LOCAL_BUFS": bufs,
            "MMA_ASYNC": int(mode.startswith("async")), "KERNEL_NAME": "gemm_tiled"}
    if conv:
        for k in ("A_KCONTIG", "B_NCONTIG", "IDX_T", "VEC4_A", "VEC4_B", "VEC4_FULL"):
            del defs[k]
        defs["KERNEL_NAME"] = "conv_implicit_fwd"
    text += "".join(f"#define {k} {v}\n" for k, v in defs.items())
    hooks = source("conv_implicit") if conv else source("gemm")
    return text + hooks + source("mma_common") + source("gemm_mma"), defs["KERNEL_NAME"]


def attn_mma_program(spec, D, DV, bwd=""):
    """attention_mma.cl as dlprim/src/attention_mma.cpp puts it together (16-byte staging loads)."""
    parts = spec.split(":")
    nw, bkt = (int(v) for v in parts[1].split(","))
    split = "split" in parts[2:]  # force the backward's head-dim split over warp pairs (PYTORCH_OCL_ATTN_MMA_SPLIT=1)
    parts = [p for p in parts if p != "split"]
    prefetch = int(parts[2]) if len(parts) > 2 else int(max(D, DV) <= 64 and parts[0] != "3xtf32")
    k16 = MMA_KINDS[parts[0]] >= 3
    text = PRELUDE + source("common")
    text += "#define T float\n#define T4 float4\n"
    text += ("#define ST ushort\n#define LOAD(p, i) as_float((uint)(p)[i] << 16)\n"
             "#define STORE(p, i, v) do { (p)[i] = (ushort)(as_uint(v) >> 16); } while (0)\n" if k16 else
             "#define ST float\n#define LOAD(p, i) ((p)[i])\n#define STORE(p, i, v) do { (p)[i] = (v); } while (0)\n")
    defs = {"D": D, "DV": DV, "HAS_MASK": 0, "ATTN_NATIVE_EXP": 1, "ATTN_VEC": 0, "MMA_KIND": MMA_KINDS[parts[0]],
            "MMA_EMULATE": 0, "NW": nw, "BKT": bkt, "VEC_K": 1, "VEC_V": 1, "VEC_Q": 1, "VEC_DO": 1, "PREFETCH": prefetch}
    if bwd and (split or max(D, DV) > 64 and (not k16 or bwd == "dkdv")):  # the head-dim split over warp pairs, as the host
        defs.update(DSPLIT=2, KPAD=32 if k16 else 16, NPAD=16)
    text += "".join(f"#define {k} {v}\n" for k, v in defs.items())
    text += source("attention_common") + source("mma_common")
    if bwd == "onepass":
        return (text + "#define ATTN_MMA_DQ 1\n#define ATTN_ONEPASS 1\n" + source("attention_mma") +
                source("attention_mma_onepass") + source("attention_mma_bwd"), "attn_bwd_onepass_mma")
    if bwd:
        return (text + "#define ATTN_MMA_DQ 1\n" + source("attention_mma") + source("attention_mma_bwd"),
                "attn_bwd_" + bwd + "_mma")
    return text + source("attention_mma"), "attn_fwd_mma"


def linalg_leaf_program(kind, spec):
    """linalg_qr_leaf.cl / linalg_lu_leaf.cl for float32 as dlprim/src/linalg.cpp puts them together."""
    w, rpi = (int(v) for v in spec.split(","))
    text = PRELUDE
    text += "float OV sqrt(float x) { return __builtin_sqrtf(x); }\n"
    text += "float OV copysign(float a, float b) { return __builtin_copysignf(a, b); }\n"
    text += "int OV max(int a, int b) { return a > b ? a : b; }\n"
    text += ("#define R float\n#define EPS FLT_EPSILON\n#define SAFMIN FLT_MIN\n#define T R\n#define MUL(a, b) ((a) * (b))\n"
             "#define DIV(a, b) ((a) / (b))\n#define CONJ(a) (a)\n#define ABS1(a) fabs(a)\n#define IS_ZERO(a) ((a) == 0)\n"
             "#define RE(a) (a)\n#define IM(a) ((R)0)\n#define TO_T(r) ((T)(r))\n#define ABS(a) fabs(a)\n"
             "#define ABS2(a) ((a) * (a))\n")
    text += source("linalg_group") + f"#define W {w}\n#define LEAF_RPI {rpi}\n"
    if kind == "qrleaf":
        return text + source("linalg_qr_leaf"), "linalg_geqrf_leaf"
    return text + source("linalg_lu_leaf"), "linalg_lu_leaf"


def source(name):
    with open(os.path.join(KDIR, name + ".cl")) as f:
        return f.read()


def program(layout, D, DV):
    kind, _, spec = layout.partition("=")
    if kind in ("mma", "convmma"):
        return gemm_program(spec, kind == "convmma")
    if kind in ("qrleaf", "luleaf"):
        return linalg_leaf_program(kind, spec)
    if kind in ("attnmma", "attnmmadq", "attnmmadkdv", "attnmmaonepass"):
        return attn_mma_program(spec, D, DV, kind[7:])
    vals = spec.split(",")
    split = vals[-1] == "split"
    nums = [int(v) for v in vals if v != "split"]
    defs = {"D": D, "DV": DV, "HAS_MASK": 0, "ATTN_NATIVE_EXP": 1, "ATTN_VEC": int(D % 4 == 0 and DV % 4 == 0)}
    if kind == "rows":
        defs.update(TPR=nums[0], BR=nums[1], BC=nums[2])
        files, kernel = ["attention"], "attn_bwd_dkdv"
    elif kind == "dkdv":
        defs.update(BQ=nums[0], BK=nums[1], NTC=nums[2], KC=4, ATTN_DKDV=1, DKDV_SPLIT=int(split))
        files, kernel = ["attention_tiled", "attention_bwd_tiled"], "attn_bwd_dkdv_tiled"
    elif kind == "dq":
        defs.update(BQ=nums[0], BK=nums[1], NTC=nums[2], KC=(D + 3) // 4 * 4, ATTN_BWD=1)
        files, kernel = ["attention_tiled"], "attn_bwd_dq_tiled"
    elif kind == "fwd":
        defs.update(BQ=nums[0], BK=nums[1], KC=nums[2], NTC=nums[3])
        files, kernel = ["attention_tiled"], "attn_fwd_tiled"
    else:
        sys.exit(f"unknown layout {layout}")
    text = PRELUDE + source("common")
    text += "#define T float\n#define T4 float4\n#define ST float\n#define LOAD(p, i) ((p)[i])\n"
    text += "#define STORE(p, i, v) do { (p)[i] = (v); } while (0)\n"
    text += "".join(f"#define {k} {v}\n" for k, v in defs.items())
    text += source("attention_common") + "".join(source(f) for f in files)
    return text, kernel


def tool(name):
    for p in (shutil.which(name), f"/usr/local/bin/{name}", f"/usr/local/cuda/bin/{name}"):
        if p and os.path.exists(p):
            return p
    sys.exit(f"{name} not found")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("layouts", nargs="+")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--dv", type=int, default=64)
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--maxrreg", type=int, default=0)
    args = p.parse_args()
    clang = next((c for c in ("clang", "clang-18", "clang-17", "clang-16", "clang-15") if shutil.which(c)), None)
    if not clang:
        sys.exit("clang not found")
    ptxas = tool("ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.layouts:
            text, kernel = program(layout, args.d, args.dv)
            cl, ptx = os.path.join(tmp, "k.cl"), os.path.join(tmp, "k.ptx")
            with open(cl, "w") as f:
                f.write(text)
            r = subprocess.run([clang, "-x", "cl", "-cl-std=CL1.2", "-target", "nvptx64-nvidia-nvcl", "-Xclang",
                                "-finclude-default-header", "-O3", "-S", "-march=sm_80", "-Dasm=__asm__", "-Xclang",
                                "-target-feature", "-Xclang", "+ptx70", "-o", ptx, cl],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"{layout}: clang failed\n{r.stderr[-2000:]}")
                continue
            cmd = [ptxas, f"-arch={args.arch}", "-v", "-o", os.devnull, ptx]
            if args.maxrreg:
                cmd.insert(1, f"-maxrregcount={args.maxrreg}")
            out = subprocess.run(cmd, capture_output=True, text=True)
            log = out.stdout + out.stderr
            m = re.search(rf"Function properties for {kernel}\n(.*?)\n.*?Used (\d+) registers", log, re.S)
            print(f"{layout:28s}" + ("" if "mma=" in layout and not layout.startswith("attn") else f" D {args.d} DV {args.dv}") + ": " +
                  (f"{m.group(2)} registers; {m.group(1).strip()}" if m else "no ptxas report\n" + log[-1500:]))


if __name__ == "__main__":
    main()
