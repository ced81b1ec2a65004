// See ptx_sm90a.h.
#include "ptx_sm90a.h"

#include <dlprim/cl.h>
#include <dlprim/program_cache.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace dlprim {
namespace detail {


cl_program retarget_sm90a(cl_context ctx, cl_device_id dev, cl_program built, const std::string& options) {
  size_t size = 0;
  cl_int err = clGetProgramInfo(built, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr);
  std::string ptx(size, '\0');
  unsigned char* bp = reinterpret_cast<unsigned char*>(&ptx[0]);
  if (err == CL_SUCCESS && size) err = clGetProgramInfo(built, CL_PROGRAM_BINARIES, sizeof(bp), &bp, nullptr);
  clReleaseProgram(built);
  if (err != CL_SUCCESS || !size) throw Error("sm_90a program: the driver gave no binary to edit");
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  const size_t mark = std::strlen(kSm90aMark);
  for (size_t at; (at = ptx.find(kSm90aMark)) != std::string::npos;) ptx.erase(at, mark);
  size_t at = ptx.find(".target sm_90");
  if (at == std::string::npos || (ptx.size() > at + 13 && ptx[at + 13] >= '0' && ptx[at + 13] <= '9'))
    throw Error("sm_90a program: the device's PTX does not target sm_90 (not a Hopper GPU?)");
  if (ptx.compare(at + 13, 1, "a") != 0) ptx.insert(at + 13, "a");
  at = ptx.find(".version ");
  if (at != std::string::npos) {
    const size_t eol = ptx.find('\n', at);
    if (std::atof(ptx.substr(at + 9, eol - at - 9).c_str()) < 8.0) ptx.replace(at, eol - at, ".version 8.0");
  }
  const unsigned char* pp = reinterpret_cast<const unsigned char*>(ptx.c_str());
  size_t plen = ptx.size() + 1;
  cl_int status = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(ctx, 1, &dev, &plen, &pp, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (p) clReleaseProgram(p);
    throw Error("sm_90a program: clCreateProgramWithBinary failed (" + std::to_string(err) + ")");
  }
  if (clBuildProgram(p, 1, &dev, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    const std::string log = program_build_log(p, dev);
    clReleaseProgram(p);
    throw Error("sm_90a program: the edited PTX did not build:\n" + log);
  }
  return p;
}

} // namespace detail
} // namespace dlprim
