#include "core/Trace.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pytorch_ocl {

bool trace_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("PYTORCH_OCL_DEBUG");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void trace_line(const std::string& line) { std::fprintf(stderr, "[ocl] %s\n", line.c_str()); }

} // namespace pytorch_ocl
