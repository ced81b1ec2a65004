#!/usr/bin/env bash
# Runs the whole test suite, installing everything first on a fresh machine (scripts/setup.sh --no-run).
#
#   bash scripts/test.sh [extra pytest arguments, e.g. -k copy -x]
#
# Tests run strict (PYTORCH_OCL_STRICT=1: a CPU fallback is an error). The exit code is pytest's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"

# setup.sh --test sets PYTORCH_OCL_SETUP_DONE when it has just installed everything.
if [[ -z "${PYTORCH_OCL_SETUP_DONE:-}" ]]; then
  bash scripts/setup.sh --no-run
fi

# Two pytest workers (pytest-xdist): a cold run is mostly single-threaded OpenCL program builds, which then overlap.
# PYTEST_WORKERS=0 runs everything in this process.
workers=(-n "${PYTEST_WORKERS:-2}")
if [[ "${PYTEST_WORKERS:-2}" == 0 ]] || ! "$PY" -c "import xdist" 2>/dev/null; then workers=(); fi
export PYTORCH_OCL_STRICT=1
# Kernels build without optimization in tests (PoCL compiles ~4.6x faster: a cold run is mostly program builds);
# an explicitly set value, empty included, wins. tests/test_mnist_smoke.py trains with the normal builds.
export PYTORCH_OCL_EXTRA_BUILD_OPTIONS="${PYTORCH_OCL_EXTRA_BUILD_OPTIONS--cl-opt-disable}"
printf '\n==> PYTORCH_OCL_STRICT=1 PYTORCH_OCL_EXTRA_BUILD_OPTIONS=%q %s -m pytest -q tests --durations=15 %s %s\n' \
  "$PYTORCH_OCL_EXTRA_BUILD_OPTIONS" "$PY" "${workers[*]}" "$*"
exec "$PY" -m pytest -q tests --durations=15 "${workers[@]}" "$@"
