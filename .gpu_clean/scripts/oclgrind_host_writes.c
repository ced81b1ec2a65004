// LD_PRELOAD shim for scripts/oclgrind.sh: host-side writes into buffers become kernel writes.
//
// Oclgrind 21.10's --uninitialized plugin handles a host store (clEnqueueWriteBuffer,
// clEnqueueFillBuffer, clEnqueueCopyBuffer) by re-allocating the shadow of the *whole* cl_mem
// with the size of the store and marking only that many bytes defined, from the buffer's start
// (Uninitialized::hostMemoryStore -> allocAndStoreShadowMemory -> ShadowMemory::allocate). Our
// caching allocator sub-allocates tensors from shared cl_mem segments, so uploading one tensor
// poisons its neighbours and every write at a nonzero offset is misplaced: false "Uninitialized
// value" reports in whichever kernel reads them next. Here each such command becomes a plain
// byte-copy kernel, whose stores the plugin tracks byte by byte like any kernel's. Preloaded
// before liboclgrind-rt.so (scripts/oclgrind.sh). Every command completes before it returns.
//
// Second workaround: the checker keeps a thread-local memory pool that exists only on the thread
// that created the context and inside Oclgrind's own work-group threads, yet it runs on the
// calling thread too (kernelBegin, host stores) when a command executes (clFinish, clFlush,
// blocking calls). torch's autograd engine issues backward kernels from its own device thread,
// where that pool is NULL: Oclgrind segfaults. Every OpenCL entry point that may execute
// commands first creates the pool on the calling thread (ShadowContext::createMemoryPool only
// touches the thread-local state; found with dlsym, so the shim also runs without the checker).
#define _GNU_SOURCE
#include <dlfcn.h>
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Bytes per launch of the write kernel: the data travels as a by-value kernel argument, because
// a host store from any thread but the one that created the context crashes Oclgrind's
// checker (its shadow-memory pool is thread-local; torch's autograd thread writes too).
#define CHUNK 512

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_context g_ctx;
static cl_kernel g_put, g_copy;

static const char* kSource =
    "typedef struct { uchar b[512]; } chunk_t;\n"
    "__kernel void oclgrind_shim_put(__global uchar* d, ulong doff, ulong n, ulong period, chunk_t src) {\n"
    "  ulong i = get_global_id(0); if (i < n) d[doff + i] = src.b[i % period]; }\n"
    "__kernel void oclgrind_shim_copy(__global uchar* d, ulong doff, __global const uchar* s, ulong soff,\n"
    "  ulong n) { ulong i = get_global_id(0); if (i < n) d[doff + i] = s[soff + i]; }\n";

typedef struct {
  unsigned char b[CHUNK];
} chunk_t;

static void ensure_pool(void) {
  static __thread int ready;
  if (ready) return;
  ready = 1;
  typedef void (*create_fn)(void*);
  create_fn f = (create_fn)dlsym(RTLD_DEFAULT, "_ZN8oclgrind13ShadowContext16createMemoryPoolEv");
  static char unused_this[64];
  if (f) f(unused_this);  // ++ thread-local pool users: never freed on this thread, like the creator's
}

#define REAL(name) ((name##_fn)dlsym(RTLD_NEXT, #name))
typedef cl_int (*clFinish_fn)(cl_command_queue);
typedef cl_int (*clFlush_fn)(cl_command_queue);
typedef cl_int (*clWaitForEvents_fn)(cl_uint, const cl_event*);
typedef cl_int (*clEnqueueNDRangeKernel_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*,
                                            const size_t*, cl_uint, const cl_event*, cl_event*);
typedef cl_int (*clEnqueueReadBuffer_fn)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint,
                                         const cl_event*, cl_event*);
typedef void* (*clEnqueueMapBuffer_fn)(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint,
                                       const cl_event*, cl_event*, cl_int*);
typedef cl_int (*clEnqueueUnmapMemObject_fn)(cl_command_queue, cl_mem, void*, cl_uint, const cl_event*, cl_event*);
typedef cl_mem (*clCreateBuffer_fn)(cl_context, cl_mem_flags, size_t, void*, cl_int*);
typedef cl_int (*clReleaseMemObject_fn)(cl_mem);
typedef cl_int (*clEnqueueMarkerWithWaitList_fn)(cl_command_queue, cl_uint, const cl_event*, cl_event*);
typedef cl_int (*clEnqueueBarrierWithWaitList_fn)(cl_command_queue, cl_uint, const cl_event*, cl_event*);

cl_int clFinish(cl_command_queue q) {
  ensure_pool();
  return REAL(clFinish)(q);
}
cl_int clFlush(cl_command_queue q) {
  ensure_pool();
  return REAL(clFlush)(q);
}
cl_int clWaitForEvents(cl_uint n, const cl_event* e) {
  ensure_pool();
  return REAL(clWaitForEvents)(n, e);
}
cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* off, const size_t* global,
                              const size_t* local, cl_uint nwait, const cl_event* wait, cl_event* ev) {
  ensure_pool();
  return REAL(clEnqueueNDRangeKernel)(q, k, dims, off, global, local, nwait, wait, ev);
}
cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool blocking, size_t off, size_t n, void* p,
                           cl_uint nwait, const cl_event* wait, cl_event* ev) {
  ensure_pool();
  return REAL(clEnqueueReadBuffer)(q, m, blocking, off, n, p, nwait, wait, ev);
}
void* clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool blocking, cl_map_flags f, size_t off, size_t n,
                         cl_uint nwait, const cl_event* wait, cl_event* ev, cl_int* err) {
  ensure_pool();
  return REAL(clEnqueueMapBuffer)(q, m, blocking, f, off, n, nwait, wait, ev, err);
}
cl_int clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void* p, cl_uint nwait, const cl_event* wait,
                               cl_event* ev) {
  ensure_pool();
  return REAL(clEnqueueUnmapMemObject)(q, m, p, nwait, wait, ev);
}
cl_mem clCreateBuffer(cl_context c, cl_mem_flags f, size_t n, void* p, cl_int* err) {
  ensure_pool();
  return REAL(clCreateBuffer)(c, f, n, p, err);
}
cl_int clReleaseMemObject(cl_mem m) {
  ensure_pool();
  return REAL(clReleaseMemObject)(m);
}
cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nwait, const cl_event* wait, cl_event* ev) {
  ensure_pool();
  return REAL(clEnqueueMarkerWithWaitList)(q, nwait, wait, ev);
}
cl_int clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nwait, const cl_event* wait, cl_event* ev) {
  ensure_pool();
  return REAL(clEnqueueBarrierWithWaitList)(q, nwait, wait, ev);
}

// Kernels for the queue's context (built once; the tests use one context at a time).
static int kernels_for(cl_command_queue q) {
  cl_context ctx;
  if (clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL) != CL_SUCCESS) return 0;
  if (ctx == g_ctx && g_put) return 1;
  cl_int err;
  cl_program p = clCreateProgramWithSource(ctx, 1, &kSource, NULL, &err);
  if (err != CL_SUCCESS || clBuildProgram(p, 0, NULL, "", NULL, NULL) != CL_SUCCESS) return 0;
  g_put = clCreateKernel(p, "oclgrind_shim_put", &err);
  g_copy = clCreateKernel(p, "oclgrind_shim_copy", &err);
  clReleaseProgram(p);
  g_ctx = ctx;
  return g_put && g_copy;
}

static cl_int launch(cl_command_queue q, cl_kernel k, size_t n, cl_uint nwait, const cl_event* wait, cl_event* ev) {
  size_t local = 64, global = (n + local - 1) / local * local;
  cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, nwait, wait, ev);
  return err == CL_SUCCESS ? clFinish(q) : err;
}

// d[doff + i] = src[i % period] for i < n (period <= CHUNK bytes at src).
static cl_int put(cl_command_queue q, cl_mem d, size_t doff, const void* src, size_t period, size_t n, cl_uint nwait,
                  const cl_event* wait, cl_event* ev) {
  chunk_t c = {{0}};
  memcpy(c.b, src, period);
  cl_ulong a = doff, b = n, p = period;
  clSetKernelArg(g_put, 0, sizeof(cl_mem), &d);
  clSetKernelArg(g_put, 1, sizeof(a), &a);
  clSetKernelArg(g_put, 2, sizeof(b), &b);
  clSetKernelArg(g_put, 3, sizeof(p), &p);
  clSetKernelArg(g_put, 4, sizeof(c), &c);
  return launch(q, g_put, n, nwait, wait, ev);
}

cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking, size_t off, size_t n, const void* ptr,
                            cl_uint nwait, const cl_event* wait, cl_event* ev) {
  (void)blocking;  // always complete before returning
  ensure_pool();
  pthread_mutex_lock(&g_lock);
  cl_int err = kernels_for(q) ? CL_SUCCESS : CL_OUT_OF_RESOURCES;
  if (err == CL_SUCCESS && n == 0) err = clEnqueueMarkerWithWaitList(q, nwait, wait, ev);
  for (size_t done = 0; err == CL_SUCCESS && done < n; done += CHUNK) {
    size_t len = n - done < CHUNK ? n - done : CHUNK;
    int first = done == 0, last = done + len == n;
    err = put(q, buf, off + done, (const char*)ptr + done, len, len, first ? nwait : 0, first ? wait : NULL,
              last ? ev : NULL);
  }
  pthread_mutex_unlock(&g_lock);
  return err;
}

cl_int clEnqueueFillBuffer(cl_command_queue q, cl_mem buf, const void* pattern, size_t psize, size_t off, size_t n,
                           cl_uint nwait, const cl_event* wait, cl_event* ev) {
  ensure_pool();
  pthread_mutex_lock(&g_lock);
  cl_int err = kernels_for(q) ? CL_SUCCESS : CL_OUT_OF_RESOURCES;
  if (err == CL_SUCCESS && (psize == 0 || psize > CHUNK)) err = CL_INVALID_VALUE;
  if (err == CL_SUCCESS)
    err = n == 0 ? clEnqueueMarkerWithWaitList(q, nwait, wait, ev) : put(q, buf, off, pattern, psize, n, nwait, wait, ev);
  pthread_mutex_unlock(&g_lock);
  return err;
}

cl_int clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t soff, size_t doff, size_t n,
                           cl_uint nwait, const cl_event* wait, cl_event* ev) {
  ensure_pool();
  pthread_mutex_lock(&g_lock);
  cl_int err = kernels_for(q) ? CL_SUCCESS : CL_OUT_OF_RESOURCES;
  if (err == CL_SUCCESS && n == 0) err = clEnqueueMarkerWithWaitList(q, nwait, wait, ev);
  if (err == CL_SUCCESS && n > 0) {
    cl_ulong a = doff, b = soff, c = n;
    clSetKernelArg(g_copy, 0, sizeof(cl_mem), &dst);
    clSetKernelArg(g_copy, 1, sizeof(a), &a);
    clSetKernelArg(g_copy, 2, sizeof(cl_mem), &src);
    clSetKernelArg(g_copy, 3, sizeof(b), &b);
    clSetKernelArg(g_copy, 4, sizeof(c), &c);
    err = launch(q, g_copy, n, nwait, wait, ev);
  }
  pthread_mutex_unlock(&g_lock);
  return err;
}
