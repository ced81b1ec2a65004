#!/usr/bin/env bash
# On the lent NVIDIA machine, after scripts/gpu_build.sh: runs the benchmarks against CUDA in one
# process each (TF32 off where it matters) and writes their tables under $OUT (or results/).
set -o pipefail
export OCL_ICD_FILENAMES=libnvidia-opencl.so.1 PYTHONUNBUFFERED=1
out=${OUT:-results}
mkdir -p "$out"
for b in overhead pointwise reduce gemm conv; do
  [ -f benchmarks/$b.py ] || continue
  echo "== benchmarks/$b.py"
  timeout 240 python3 benchmarks/$b.py --ref cuda --out "$out/$b.md" 2>&1 | grep -v "it/s\]\|metric/s\]" | tail -40
done
echo "== benchmarks/coexistence.py"
python3 benchmarks/coexistence.py 2>&1 | tail -4
