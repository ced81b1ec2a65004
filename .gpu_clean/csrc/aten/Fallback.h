#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace pytorch_ocl {

// How often each op ran through the CPU fallback (since start or the last reset).
std::map<std::string, uint64_t> fallback_counts();
void reset_fallback_counts();
void set_strict(bool strict);
bool is_strict();

} // namespace pytorch_ocl
