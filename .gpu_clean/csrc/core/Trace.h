// PYTORCH_OCL_DEBUG=1: one line per device operation on stderr (op, shapes, dtypes),
// to see what runs natively and what is copied.
#pragma once
#include <c10/util/StringUtil.h>

#include <string>

namespace pytorch_ocl {

bool trace_enabled();
void trace_line(const std::string& line);

} // namespace pytorch_ocl

#define OCL_TRACE(...)                                                \
  do {                                                                \
    if (::pytorch_ocl::trace_enabled()) ::pytorch_ocl::trace_line(c10::str(__VA_ARGS__)); \
  } while (0)
