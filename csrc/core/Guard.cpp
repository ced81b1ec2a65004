// DeviceGuardImplInterface for ocl: device switching, streams and events.
// An event is a cl_event of a marker enqueued on the recording stream.
#include "core/Allocator.h"
#include "core/Device.h"
#include "core/Stream.h"
#include "core/DeferredChecks.h"
#include "core/SyncDebug.h"
#include "core/TorchCompat.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

namespace pytorch_ocl {

namespace {

cl_event as_event(void* e) { return static_cast<cl_event>(e); }

void CL_CALLBACK complete_relay(cl_event, cl_int status, void* user_event) {
  auto relay = static_cast<cl_event>(user_event);
  clSetUserEventStatus(relay, status < 0 ? status : CL_COMPLETE);
  clReleaseEvent(relay);
}

// Events cannot be waited on by a queue of another context (another device): a user
// event of the waiting context completes when the original one does, without a host wait.
cl_event relay_event(cl_event ev, cl_context ctx) {
  cl_int err = CL_SUCCESS;
  cl_event relay = clCreateUserEvent(ctx, &err);
  DLPRIM_CL_CHECK(err);
  clRetainEvent(relay);  // owned by the callback
  err = clSetEventCallback(ev, CL_COMPLETE, &complete_relay, relay);
  if (err != CL_SUCCESS) {
    clReleaseEvent(relay);
    clReleaseEvent(relay);
    DLPRIM_CL_CHECK(err);
  }
  return relay;
}

struct OclGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kOcl; }

  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return ocl_device(current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kOcl, "ocl guard: expected an ocl device, got ", d);
    set_current_device(d.index() < 0 ? 0 : d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_current_device(d.index() < 0 ? 0 : d.index());
    } catch (...) {
    }
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(device_count());
  }

  c10::Stream getStream(c10::Device d) const override { return current_stream(index(d)); }
  c10::Stream getDefaultStream(c10::Device d) const override { return default_stream(index(d)); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool = false) const override {
    return stream_from_pool(index(d));
  }
  c10::Stream getNewStream(c10::Device d, int = 0) const override { return new_stream(index(d)); }
  c10::Stream exchangeStream(c10::Stream s) const override { return exchange_stream(s); }
  void* getStreamNativeHandle(const c10::Stream s) const override { return queue_of(s); }
  bool queryStream(const c10::Stream& s) const override { return query_stream(s); }
  void synchronizeStream(const c10::Stream& s) const override { synchronize_stream(s); }
  void synchronizeDevice(const c10::DeviceIndex d) const override { synchronize_device(d); }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "ocl: event device ", device_index, " does not match the stream's device ",
                stream.device_index());
    cl_command_queue q = queue_of(stream);
    cl_event ev = nullptr;
    DLPRIM_CL_CHECK(clEnqueueMarkerWithWaitList(q, 0, nullptr, &ev));
    clFlush(q);  // another queue may wait on it: it must be submitted
    if (*event) clReleaseEvent(as_event(*event));
    *event = ev;
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    cl_event ev = as_event(event);
    cl_command_queue q = queue_of(stream);
    cl_context event_ctx = nullptr, queue_ctx = nullptr;
    DLPRIM_CL_CHECK(clGetEventInfo(ev, CL_EVENT_CONTEXT, sizeof(event_ctx), &event_ctx, nullptr));
    DLPRIM_CL_CHECK(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(queue_ctx), &queue_ctx, nullptr));
    if (event_ctx != queue_ctx) ev = relay_event(ev, queue_ctx);
    DLPRIM_CL_CHECK(clEnqueueBarrierWithWaitList(q, 1, &ev, nullptr));
    if (event_ctx != queue_ctx) clReleaseEvent(ev);
  }
  bool queryEvent(void* event) const override {
    if (!event) return true;
    cl_int status = CL_QUEUED;
    DLPRIM_CL_CHECK(clGetEventInfo(as_event(event), CL_EVENT_COMMAND_EXECUTION_STATUS,
                                   sizeof(status), &status, nullptr));
    return status == CL_COMPLETE;
  }
  void synchronizeEvent(void* event) const override {
    if (!event) return;
    cl_event ev = as_event(event);
    count_wait(g_host_waits.event_waits);
    DLPRIM_CL_CHECK(clWaitForEvents(1, &ev));
    // Checks read before the event (e.g. with a non_blocking copy to the host) are done now.
    collect_checks(-1, nullptr);
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event) clReleaseEvent(as_event(event));
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end, "ocl: both events must be recorded before elapsed_time()");
    cl_event evs[2] = {as_event(start), as_event(end)};
    DLPRIM_CL_CHECK(clWaitForEvents(2, evs));
    cl_ulong t0 = 0, t1 = 0;
    DLPRIM_CL_CHECK(clGetEventProfilingInfo(evs[0], CL_PROFILING_COMMAND_END, sizeof(t0), &t0, nullptr));
    DLPRIM_CL_CHECK(clGetEventProfilingInfo(evs[1], CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr));
    return (static_cast<double>(t1) - static_cast<double>(t0)) / 1e6;
  }
  void recordDataPtrOnStream(const c10::DataPtr& ptr, const c10::Stream& stream) const override {
    device_allocator()->recordStream(ptr, stream);
  }

private:
  static int index(c10::Device d) { return d.index() < 0 ? current_device() : d.index(); }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, OclGuardImpl);

} // namespace pytorch_ocl
