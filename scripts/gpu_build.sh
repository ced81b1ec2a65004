#!/usr/bin/env bash
# Builds and installs pytorch_ocl on the lent NVIDIA machine (see ../shared/gpu/README.md):
# NVIDIA OpenCL only, system gcc, SQLite and VkFFT headers unpacked from the carried .debs in .carry/
# (`apt-get download libsqlite3-dev libvkfft-dev` and `pip download expecttest --no-deps` into .carry/).
set -eo pipefail
export OCL_ICD_FILENAMES=libnvidia-opencl.so.1 CC=/usr/bin/gcc CXX=/usr/bin/g++ PYTHONUNBUFFERED=1
export CMAKE_BUILD_PARALLEL_LEVEL=16
cmake_args=""
if ls .carry/libsqlite3-dev_*.deb >/dev/null 2>&1; then
  rm -rf /tmp/sq && dpkg -x .carry/libsqlite3-dev_*.deb /tmp/sq
  lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so.0* | head -1)
  cmake_args="-DSQLite3_INCLUDE_DIR=/tmp/sq/usr/include -DSQLite3_LIBRARY=$lib"
fi
# VkFFT (header only, torch.fft) is not installed there either: Debian's package file, carried the same way.
if ls .carry/libvkfft-dev_*.deb >/dev/null 2>&1; then
  rm -rf /tmp/vk && dpkg -x .carry/libvkfft-dev_*.deb /tmp/vk
  cmake_args="$cmake_args -DVKFFT_INCLUDE_DIR=/tmp/vk/usr/include"
fi
# The compiler's first errors, then the tail (the errors scroll out of a plain tail).
CMAKE_ARGS="$cmake_args" python3 -m pip install --no-build-isolation --no-deps . > /tmp/pip-build.log 2>&1 ||
  { grep -m 12 -A 6 "error:" /tmp/pip-build.log; tail -15 /tmp/pip-build.log; exit 1; }
tail -5 /tmp/pip-build.log
python3 -m pytorch_ocl 2>/dev/null || python3 -c "import torch, pytorch_ocl; print(torch.ocl.device_count(), torch.ocl.get_device_name(0))"
