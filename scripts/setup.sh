#!/usr/bin/env bash
# Installs everything pytorch_ocl needs on a Debian/Ubuntu machine, builds and installs it, then runs the
# main job (`python3 mnist.py`: trains a small CNN on ocl:0).
#
#   bash scripts/setup.sh            install, then run the main job
#   bash scripts/setup.sh --no-run   install only
#   bash scripts/setup.sh --test     install, then run the test suite (scripts/test.sh)
#
# Idempotent: a second run skips apt-get when the packages are there, never touches an installed torch, and
# rebuilds incrementally (persistent build dir build/{wheel_tag} + ccache).
# Environment: PYTHON (default python3). pip honours PIP_INDEX_URL / PIP_EXTRA_INDEX_URL, e.g.
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu for a CPU-only torch when none is installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The interpreter's real path (not a pyenv shim, whose choice depends on the current directory).
PY="$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')" || { echo "setup.sh: no ${PYTHON:-python3}" >&2; exit 1; }
TORCH_PIN="torch==2.13.0"
# oclgrind: the OpenCL simulator scripts/oclgrind.sh runs the kernel tests on (memory checkers).
# libvkfft-dev: VkFFT (header only), the FFT kernels behind torch.fft.
APT_PACKAGES=(pocl-opencl-icd ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers libsqlite3-dev ccache
              build-essential oclgrind libvkfft-dev)
# scikit-learn: its bundled digits are mnist.py's offline dataset; expecttest: torch's OpInfo
# database (the op-level tests) imports it; transformers: the tied-embedding GPT-2 tests build
# small models from configs (no weights are downloaded).
BUILD_REQUIREMENTS=("scikit-build-core>=0.10" "pybind11>=2.12" "cmake>=3.21" "ninja" numpy tqdm pytest pytest-xdist
                    scikit-learn expecttest "transformers>=4.40")
MAIN_JOB=("$PY" mnist.py)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

mode="run"
for arg in "$@"; do
  case "$arg" in
    --no-run) mode="none" ;;
    --test) mode="test" ;;
    -h | --help) usage; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

step() { printf '\n==> %s\n' "$*"; }

# ------------------------------------------------------------------ system packages
SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    SUDO=(false)  # only used if something is missing; fails with the message below
  fi
fi

is_installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

missing=()
if command -v dpkg-query >/dev/null; then
  for pkg in "${APT_PACKAGES[@]}"; do is_installed "$pkg" || missing+=("$pkg"); done
  # A system Python needs its headers and pip from apt as well (pyenv/conda/docker Pythons bring their own).
  if ! "$PY" -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
      2>/dev/null; then
    is_installed python3-dev || missing+=(python3-dev)
  fi
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    is_installed python3-pip || missing+=(python3-pip)
  fi
fi

if [[ ${#missing[@]} -gt 0 ]]; then
  step "apt-get install ${missing[*]}"
  if ! command -v apt-get >/dev/null; then
    echo "setup.sh: apt-get not found; install these packages by hand: ${missing[*]}" >&2
    exit 1
  fi
  if [[ "${SUDO[0]:-}" == false ]]; then
    echo "setup.sh: not root and sudo is not installed; run as root or install: ${missing[*]}" >&2
    exit 1
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
elif command -v dpkg-query >/dev/null; then
  step "system packages: already installed"
else
  step "no dpkg: assuming OpenCL headers/ICD loader, an OpenCL driver, SQLite3 headers and a C++ compiler are installed"
fi

# ------------------------------------------------------------------ Python packages
PIP=("$PY" -m pip --disable-pip-version-check)
if [[ -f "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')/EXTERNALLY-MANAGED" ]] \
    && [[ -z "${VIRTUAL_ENV:-}" ]]; then
  # A distribution's Python refuses pip installs outside a venv (PEP 668). This script is meant for a
  # dedicated (CI) machine, so install anyway; use a venv (and set PYTHON) to keep the system clean.
  echo "note: $PY is externally managed (PEP 668); installing with --break-system-packages"
  PIP+=(--break-system-packages)
fi

if "$PY" -c "import torch" 2>/dev/null; then
  step "torch $("$PY" -c 'import torch; print(torch.__version__)') already installed: keeping it"
else
  step "pip install $TORCH_PIN"
  "${PIP[@]}" install "$TORCH_PIN"
fi
if ! "$PY" - <<'EOF'
import sys, torch
major, minor = (int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
sys.exit(0 if (major, minor) >= (2, 9) else 1)
EOF
then
  echo "warning: pytorch_ocl needs torch >= 2.9 (built and tested with 2.13 and 2.11); the build may fail" >&2
fi

# The build runs without isolation against the installed torch, so its requirements are installed here.
# None of them depends on torch, and nothing is upgraded: pip cannot replace torch.
step "pip install build requirements"
"${PIP[@]}" install -q "${BUILD_REQUIREMENTS[@]}"

# ------------------------------------------------------------------ build + install pytorch_ocl
step "building and installing pytorch_ocl (build dir build/<wheel tag>, ccache)"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"  # cache hits across clones in different directories
mkdir -p build
log="build/setup-pip-install.log"
# Show progress and problems only; the full output is in $log.
filter='^\[[0-9]+/[0-9]+\] |error|Error|CMake Warning|pytorch_ocl:|Successfully installed'
set +e
"${PIP[@]}" install --no-build-isolation --no-deps -v . 2>&1 | tee "$log" | grep --line-buffered -E "$filter"
status=${PIPESTATUS[0]}
set -e
if [[ $status -ne 0 ]]; then
  echo >&2
  echo "setup.sh: building pytorch_ocl failed (exit $status); last 60 lines of $log:" >&2
  tail -n 60 "$log" >&2
  exit "$status"
fi

# From outside the repository: the installed package, not the source tree.
(cd / && "$PY" -m pytorch_ocl)

# ------------------------------------------------------------------ main job
case "$mode" in
  none) step "installed (--no-run): not running the main job" ;;
  test)
    step "running the test suite"
    PYTORCH_OCL_SETUP_DONE=1 exec bash "$ROOT/scripts/test.sh"
    ;;
  run)
    step "running the main job: ${MAIN_JOB[*]}"
    exec "${MAIN_JOB[@]}"
    ;;
esac
