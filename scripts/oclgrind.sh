#!/usr/bin/env bash
# Runs the kernel-family tests (tests/test_oclgrind_kernels.py, test_oclgrind_attention.py and test_oclgrind_linalg.py: one tiny forward + backward per
# kernel family) on the Oclgrind simulator with its memory checkers on, and fails on any report:
# out-of-bounds reads/writes, data races (--data-races) and uses of uninitialized values
# (--uninitialized), in our kernels or anywhere else.
#
#   bash scripts/oclgrind.sh [extra pytest arguments, e.g. -k gemm]
#
# Exit code: pytest's if the tests fail, else 1 when Oclgrind reported anything (the reports are
# printed, grouped by kernel and source line), else 0. Needs oclgrind (apt package `oclgrind`,
# scripts/setup.sh installs it) and a C compiler for the host-write shim below.
#
# How it runs:
# - Oclgrind's runtime is preloaded (LD_PRELOAD liboclgrind-rt.so, as the `oclgrind` launcher does),
#   so the only OpenCL device is "Oclgrind Simulator"; it reports itself as a GPU, so the GPU work
#   mappings run (local-memory tiles, barriers).
# - scripts/oclgrind_host_writes.c is preloaded first: it turns clEnqueueWrite/Fill/CopyBuffer into
#   kernel copies, because Oclgrind 21.10's uninitialized-value checker mistracks host writes into
#   part of a buffer (see that file), which our sub-allocating allocator does all the time.
# - Programs build with -cl-opt-disable: the checker only understands unoptimized code (optimized
#   IR has `freeze` instructions it stops on, and vectors built lane by lane from `undef`).
# - PYTORCH_OCL_ALLOC_EXACT=1: one cl_mem of exactly its size per tensor (Oclgrind checks bounds per
#   cl_mem; the caching allocator's shared segments would hide a read past a tensor's end).
# - Kernel binaries go to a fresh cache directory (PYTORCH_OCL_CACHE_DIR), strict mode is on, and
#   GEMM/conv autotuning is off (the tests force every tile config and conv algorithm themselves).
# - PYTORCH_OCL_BUILD_THREADS=1: no background or parallel program builds (Oclgrind is not thread-safe).
# - Two pytest workers (pytest-xdist; PYTEST_WORKERS=1 for one process): an Oclgrind process
#   interprets on one core. Each process writes its own Oclgrind log (OCLGRIND_LOG).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"

if ! command -v oclgrind >/dev/null; then
  echo "oclgrind.sh: oclgrind is not installed (apt-get install oclgrind, or bash scripts/setup.sh --no-run)" >&2
  exit 2
fi
RT=""
for dir in "$(dirname "$(readlink -f "$(command -v oclgrind)")")/../lib/oclgrind" /usr/lib/oclgrind \
           /usr/lib/x86_64-linux-gnu/oclgrind /usr/local/lib/oclgrind /usr/lib /usr/local/lib; do
  if [[ -f "$dir/liboclgrind-rt.so" ]]; then RT="$(readlink -f "$dir/liboclgrind-rt.so")"; break; fi
done
[[ -n "$RT" ]] || { echo "oclgrind.sh: liboclgrind-rt.so not found" >&2; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/pytorch_ocl_oclgrind.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
SHIM="$WORK/liboclgrind_host_writes.so"
"${CC:-cc}" -shared -fPIC -O1 -o "$SHIM" scripts/oclgrind_host_writes.c -ldl -lpthread

export LD_PRELOAD="$SHIM $RT${LD_PRELOAD:+ $LD_PRELOAD}"
export OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1 OCLGRIND_GLOBAL_MEM_SIZE=$((1 << 30))
LOG_DIR="$WORK/logs"
mkdir -p "$LOG_DIR"
export OCLGRIND_LOG="$LOG_DIR/main.log"  # reports only (Oclgrind prints nothing else there)
export PYTORCH_OCL_CACHE_DIR="$WORK/cache" PYTORCH_OCL_STRICT=1 PYTORCH_OCL_AUTOTUNE=0 PYTORCH_OCL_ALLOC_EXACT=1
export PYTORCH_OCL_EXTRA_BUILD_OPTIONS="-cl-opt-disable"
# Programs build on the calling thread: Oclgrind's OpenCL runtime is not thread-safe (jrprice/Oclgrind#28,
# #202), and a background build (attention_prepare_backward's) overlapping kernels segfaulted 2 runs in 3.
export PYTORCH_OCL_BUILD_THREADS=1
unset PYTORCH_OCL_GEMM_CONFIG PYTORCH_OCL_CONV_IMPLICIT PYTORCH_OCL_CONV_WINOGRAD PYTORCH_OCL_TUNE \
      PYTORCH_OCL_DEVICES POCL_DEVICES

device="$(cd / && "$PY" -c 'import torch, pytorch_ocl; print(torch.ocl.get_device_name(0))')"
if [[ "$device" != *Oclgrind* ]]; then
  echo "oclgrind.sh: expected the Oclgrind device, got '$device'" >&2
  exit 2
fi

printf '\n==> Oclgrind (--data-races --uninitialized): %s -m pytest -q tests/test_oclgrind_kernels.py tests/test_oclgrind_attention.py tests/test_oclgrind_linalg.py %s\n' "$PY" "$*"
workers=()
if [[ "${PYTEST_WORKERS:-2}" -gt 1 ]] && "$PY" -c "import xdist" 2>/dev/null; then
  for ((w = 0; w < ${PYTEST_WORKERS:-2}; ++w)); do workers+=(--tx "popen//env:OCLGRIND_LOG=$LOG_DIR/worker$w.log"); done
  workers+=(--dist load)
fi
start=$SECONDS
set +e
"$PY" -m pytest -q -p no:cacheprovider --durations=10 tests/test_oclgrind_kernels.py tests/test_oclgrind_attention.py tests/test_oclgrind_linalg.py "${workers[@]}" "$@"
status=$?
set -e
echo "oclgrind.sh: tests took $((SECONDS - start)) s"

OCLGRIND_LOG="$WORK/oclgrind.log"
cat "$LOG_DIR"/*.log > "$OCLGRIND_LOG" 2>/dev/null || true
if [[ -s "$OCLGRIND_LOG" ]]; then
  n=$(grep -cE '^[A-Z]' "$OCLGRIND_LOG" || true)
  echo
  echo "oclgrind.sh: Oclgrind reported $n problem(s); distinct ones (count, message, kernel, source line):"
  # One line per report: its message, then the kernel and source line that follow it.
  awk '/^[A-Z]/ { if (msg != "") print msg " | " k " | line " at; msg = $0; sub(/ 0x[0-9a-f]+/, "", msg); k = ""; at = "?" }
       /^\tKernel:/ { k = $2 }
       /^\tAt line/ { at = $3 }
       END { if (msg != "") print msg " | " k " | line " at }' "$OCLGRIND_LOG" | sort | uniq -c | sort -rn | head -50
  echo
  echo "oclgrind.sh: first reports in full:"
  head -n 80 "$OCLGRIND_LOG"
  [[ $status -ne 0 ]] || status=1
fi
exit $status
