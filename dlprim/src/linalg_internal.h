// The host plumbing shared by dlprim's linalg sources (linalg.cpp, linalg_tridiag.cpp): the kernels of
// kernels/linalg*.cl built once per (context, dtype, file, defines) and their arguments.
#pragma once
#include <dlprim/linalg.h>

#include <mutex>
#include <string>

namespace dlprim::linalg_detail {

// A kernel ready for arguments; holds its program's lock until the launch is enqueued.
struct Kernel {
  std::unique_lock<std::mutex> lock;
  cl_kernel k = nullptr;
  size_t max_wg = 1;
  // A power-of-two group for `work` items of parallel work per step.
  size_t group_for(int64_t work) const {
    size_t g = 1;
    while (g < max_wg && static_cast<int64_t>(g) < work) g *= 2;
    return g;
  }
};

// The type prelude of the kernels: T the element, R its real part, and the arithmetic that
// differs between real and complex elements (linalg*.cl use only these on T values).
std::string prelude(LinalgType lt);

// defines: text put between the prelude and the file (compile-time variants: a program each); include:
// another kernels/ file put before `file` (its shared helpers; the kernels are embedded, so an include
// is this concatenation, not #include).
Kernel kernel(const Context& ctx, LinalgType lt, const char* file, const char* name, size_t preferred = 256,
              const std::string& defines = std::string(), const char* include = nullptr);

// A MatrixRef's arguments (mem, offset, batch stride, and the row and column strides unless not
// with_strides), and an IntVecRef's (its batch stride when with_stride).
void add_matrix(KernelArgs& a, const MatrixRef& m, bool with_strides = true);
void add_ints(KernelArgs& a, const IntVecRef& v, bool with_stride);

} // namespace dlprim::linalg_detail
