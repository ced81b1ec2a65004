// Lazily built OpenCL programs, cached in memory and on disk.
#pragma once
#include <dlprim/cl.h>
#include <dlprim/device.h>

#include <cstdint>
#include <string>

namespace dlprim {

struct CacheStats {
  uint64_t builds = 0;       // programs compiled from source in this process
  uint64_t disk_hits = 0;    // programs created from binaries stored on disk
};

// Returns the built program for (device, source, options). Compiles from source at most
// once per process; with the disk cache enabled a later process loads the binary.
// A failed build throws Error with the build log in the message.
cl_program get_program(cl_context ctx, const DeviceInfo& dev, const std::string& source,
                       const std::string& options);

CacheStats cache_stats();
// Where binaries are stored, and whether the disk cache is usable ("" when compiled without SQLite).
std::string disk_cache_path();
bool disk_cache_compiled();
bool disk_cache_usable();
// A warning for the last problem with the disk cache (corrupt, read-only), or "".
std::string disk_cache_warning();
// Receives warnings about the disk cache (the torch layer turns them into Python warnings).
using WarningHandler = void (*)(const std::string&);
void set_warning_handler(WarningHandler handler);

} // namespace dlprim
