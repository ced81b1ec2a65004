// pytorch_ocl._C: the few runtime entry points the Python package needs.
#include "aten/Fallback.h"
#include "aten/PointwiseRegistry.h"
#include "core/Allocator.h"
#include "core/DeferredChecks.h"
#include "core/Device.h"
#include "core/Generator.h"
#include "core/HostAllocator.h"
#include "core/Stream.h"
#include "core/SyncDebug.h"

#include <dlprim/profiler.h>
#include <map>
#include "python/Bindings.h"

#include <dlprim/autotune.h>
#include <dlprim/env.h>
#include <dlprim/matrix_engine.h>
#include <dlprim/program_cache.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Generator.h>
#include <torch/version.h>

namespace py = pybind11;

namespace pytorch_ocl {

namespace {

py::dict device_properties(int index) {
  const dlprim::DeviceInfo& i = device_info(index);
  py::dict d;
  d["name"] = i.name;
  d["vendor"] = i.vendor;
  d["platform"] = i.platform_name;
  d["driver_version"] = i.driver_version;
  d["device_version"] = i.device_version;
  d["opencl_c_version"] = i.opencl_c_version;
  d["type"] = i.is_gpu ? "gpu" : (i.is_cpu ? "cpu" : "other");
  d["compute_units"] = i.compute_units;
  d["total_memory"] = i.global_mem_size;
  d["local_memory"] = i.local_mem_size;
  d["max_alloc_size"] = i.max_alloc_size;
  d["max_work_group_size"] = i.max_work_group_size;
  d["fp64"] = i.fp64;
  d["fp16"] = i.fp16;
  d["extensions"] = i.extensions;
  return d;
}

// The device's matrix engine (probed once per context; creates the context).
py::dict matrix_engine(int index) {
  const dlprim::MatrixEngine& e = dlprim::matrix_engine(context(index));
  py::dict d;
  d["kind"] = e.kind;
  d["compute_capability"] = py::make_tuple(e.cc_major, e.cc_minor);
  d["tf32"] = e.tf32;
  d["bf16"] = e.bf16;
  d["fp16"] = e.fp16;
  d["detail"] = e.detail;
  d["description"] = e.describe();
  return d;
}

// Same keys as torch.cuda.memory_stats().
py::dict memory_stats(int device) {
  auto s = device_stats(device);
  py::dict d;
  const char* pools[] = {"all", "small_pool", "large_pool"};
  auto put = [&](const char* name, const c10::CachingAllocator::StatArray& a) {
    for (size_t p = 0; p < 3; ++p) {
      std::string base = std::string(name) + "." + pools[p] + ".";
      d[py::str(base + "current")] = a[p].current;
      d[py::str(base + "peak")] = a[p].peak;
      d[py::str(base + "allocated")] = a[p].allocated;
      d[py::str(base + "freed")] = a[p].freed;
    }
  };
  put("allocation", s.allocation);
  put("segment", s.segment);
  put("active", s.active);
  put("inactive_split", s.inactive_split);
  put("allocated_bytes", s.allocated_bytes);
  put("reserved_bytes", s.reserved_bytes);
  put("active_bytes", s.active_bytes);
  put("inactive_split_bytes", s.inactive_split_bytes);
  put("requested_bytes", s.requested_bytes);
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  return d;
}

// The device's segments in the layout of torch.cuda.memory_snapshot() (keys that have a meaning here).
py::list memory_snapshot(int device) {
  py::list out;
  for (const SegmentSnapshot& s : snapshot(device)) {
    py::list blocks;
    uint64_t allocated = 0, active = 0, requested = 0;
    for (const BlockSnapshot& b : s.blocks) {
      std::string state = b.state;
      if (state == "active_allocated") allocated += b.size, requested += b.requested;
      if (state != "inactive") active += b.size;
      py::dict d;
      d["address"] = b.address;
      d["size"] = b.size;
      d["requested_size"] = b.requested;
      d["state"] = state;
      d["frames"] = py::list();  // no allocation history is recorded
      blocks.append(d);
    }
    py::dict d;
    d["device"] = s.device;
    d["address"] = s.address;
    d["total_size"] = s.total_size;
    d["allocated_size"] = allocated;
    d["active_size"] = active;
    d["requested_size"] = requested;
    d["stream"] = s.stream;
    d["segment_type"] = s.small ? "small" : "large";
    d["segment_pool_id"] = py::make_tuple(0, 0);
    d["is_expandable"] = false;
    d["frames"] = py::list();
    d["blocks"] = blocks;
    out.append(d);
  }
  return out;
}

void warn_from_dlprim(const std::string& msg) { TORCH_WARN("ocl: ", msg); }

} // namespace

void init_ops_bindings(py::module& m);  // OpsBindings.cpp

} // namespace pytorch_ocl

PYBIND11_MODULE(_C, m) {
  using namespace pytorch_ocl;
  dlprim::set_warning_handler(&warn_from_dlprim);
  dlprim::set_tune_idle_hook(&finish_queues_of);
  m.doc() = "pytorch_ocl native runtime";
  m.attr("torch_version_built") = TORCH_VERSION;
  m.attr("disk_cache_compiled") = dlprim::disk_cache_compiled();

  m.def("_pointwise_ops", &pointwise_op_table, "Rows of the pointwise op table: (id, kind, aten, dtypes, registered overloads)");
  m.def("device_count", &device_count);
  m.def("enumeration_error", &enumeration_error);
  m.def("current_device", &current_device);
  m.def("set_device", &set_current_device);
  m.def("has_context", &has_context);
  m.def("device_properties", &device_properties);
  m.def("matrix_engine", &matrix_engine);
  // os.putenv / os.unsetenv go through these (pytorch_ocl/_env.py): dlprim's background threads read the
  // environment under the same lock (dlprim/env.h).
  m.def("_env_set", [](const py::bytes& k, const py::bytes& v) { dlprim::env_set(k, v); });
  m.def("_env_unset", [](const py::bytes& k) { dlprim::env_unset(k); });
  m.def("in_bad_fork", &in_bad_fork);
  m.def("synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    synchronize_device(device);
  });

  m.def("empty_cache", [] {
    synchronize_device(-1);
    empty_cache();
  });
  m.def("memory_stats", &memory_stats);
  m.def("reset_peak_memory_stats", &reset_peak_stats);
  m.def("reset_accumulated_memory_stats", &reset_accumulated_stats);
  m.def("memory_snapshot", &memory_snapshot);
  m.def("set_memory_fraction", &set_memory_fraction);
  m.def("memory_fraction", &memory_fraction);
  m.def("host_memory_stats", &host_memory_stats);
  m.def("reset_peak_host_memory_stats", &reset_peak_host_memory_stats);
  m.def("reset_accumulated_host_memory_stats", &reset_accumulated_host_memory_stats);
  m.def("set_caching_enabled", &set_caching_enabled);
  m.def("caching_enabled", &caching_enabled);
  m.def("get_sync_debug_mode", [] { return g_sync_debug_mode.load(); });
  m.def("set_sync_debug_mode", [](int mode) { g_sync_debug_mode.store(mode); });
  // {launches, blocking reads/writes, finishes, event waits} since the process started.
  m.def("host_counters", [] {
    std::map<std::string, uint64_t> c;
    c["launches"] = dlprim::profiler::g_launches.load();
    c["blocking_reads"] = g_host_waits.reads.load();
    c["blocking_writes"] = g_host_waits.writes.load();
    c["finishes"] = g_host_waits.finishes.load();
    c["event_waits"] = g_host_waits.event_waits.load();
    return c;
  });
  // Index bound checks registered and not yet looked at (core/DeferredChecks.h).
  m.def("pending_index_checks", &pending_checks);
  m.def("init_device", [](int device) { context(device); });

  m.def("default_generator", [](int device) {
    return py::reinterpret_borrow<py::object>(THPGenerator_initDefaultGenerator(default_generator(device)));
  });

  m.def("program_cache_stats", [] {
    auto s = dlprim::cache_stats();
    py::dict d;
    d["builds"] = s.builds;
    d["disk_hits"] = s.disk_hits;
    d["worker_builds"] = s.worker_builds;
    d["worker_binaries"] = s.worker_binaries;
    d["critical_builds"] = s.critical_builds;
    d["background_builds"] = s.background_builds;
    d["background_used"] = s.background_used;
    d["background_waits"] = s.background_waits;
    d["build_seconds"] = s.build_seconds;
    d["load_seconds"] = s.load_seconds;
    d["binary_seconds"] = s.binary_seconds;
    d["wait_program_seconds"] = s.wait_program_seconds;
    d["wait_parallel_seconds"] = s.wait_parallel_seconds;
    return d;
  });
  m.def("build_threads", [] { return dlprim::build_threads(); });
  m.def("flush_program_cache", [] {
    py::gil_scoped_release no_gil;
    dlprim::flush_program_cache();
  });
  // The device + driver string that keys this device's binaries and tuning results in the cache.
  m.def("cache_identity", [](int device) { return context(device).info().cache_identity(); });
  m.def("disk_cache_path", &dlprim::disk_cache_path);
  m.def("disk_cache_usable", &dlprim::disk_cache_usable);
  m.def("disk_cache_warning", &dlprim::disk_cache_warning);

  m.def(
      "measure_launch_us",
      [](int device, int launches, bool profiling, int n_args, unsigned flush_every, bool set_args_each_launch,
         int n_scalar_args) {
        return dlprim::measure_launch_us(context(device), launches, profiling, n_args, flush_every,
                                         set_args_each_launch, n_scalar_args);
      },
      py::arg("device"), py::arg("launches"), py::arg("profiling"), py::arg("n_args"), py::arg("flush_every"),
      py::arg("set_args_each_launch") = true, py::arg("n_scalar_args") = 0);
  bind_user_kernels(m);
  bind_profiler(m);
  bind_graphs(m);
  bind_autograd_exit(m);
  bind_external_memory(m);
  m.def("fallback_stats", &fallback_counts);
  m.def("reset_fallback_stats", &reset_fallback_counts);
  m.def("set_strict", &set_strict);
  init_ops_bindings(m);
  m.def("is_strict", &is_strict);
}
