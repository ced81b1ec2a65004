// Hopper-only (sm_90a) instructions from OpenCL: NVIDIA's OpenCL compiler emits PTX for `.target sm_90`, where
// ptxas rejects wgmma and its fences. A kernel writes each such instruction as a PTX comment starting with
// kSm90aMark inside its inline asm (the compiler fills in the asm operands there too); a program whose text holds
// the line kSm90aProgram is, once built, edited (marks removed, the module retargeted to sm_90a, PTX ISA 8.0 at
// least) and built again from the edited PTX, which is the binary the cache keeps. scripts/wgmma_probe.cpp shows
// it working. (The line, not the marks, decides: an emulated build of the same kernel text keeps the marks in its
// unused branch.)
#pragma once
#include <dlprim/context.h>

#include <string>

namespace dlprim {
namespace detail {

constexpr const char* kSm90aMark = "// @SM90A@ ";
constexpr const char* kSm90aProgram = "#define DLPRIM_SM90A 1\n";

inline bool wants_sm90a(const std::string& source) { return source.find(kSm90aProgram) != std::string::npos; }

// `built` (built from a source with marks) edited and rebuilt as sm_90a; `built` is released. Throws Error with
// the driver's log when the edited PTX does not build.
cl_program retarget_sm90a(cl_context ctx, cl_device_id dev, cl_program built, const std::string& options);

} // namespace detail
} // namespace dlprim
