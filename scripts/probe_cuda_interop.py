"""Probe: can an OpenCL buffer share device memory with CUDA on this machine (NVIDIA)?

    python3 scripts/probe_cuda_interop.py [--mib 64]

Why: on NVIDIA's OpenCL every device-to-host copy holds the other threads' launches, so DDP's all-reduce through
host memory adds its whole time to the step (docs/results/graphs_cold_start_distributed.md). If CUDA memory can be
imported into an OpenCL context (cl_khr_external_memory_opaque_fd), the gradients could stay on the device and be
exchanged by NCCL. The probe allocates exportable memory with CUDA's virtual memory API (cuMemCreate with a POSIX
file descriptor handle), exports the descriptor, imports it into an OpenCL buffer on the same GPU and checks that
each side sees the other's writes. It prints the platform's and device's external memory handle types first.
Nothing of pytorch_ocl is loaded (plain ctypes on libOpenCL and libcuda).
"""
import argparse
import ctypes as C
import fcntl
import os
import sys

CL_PLATFORM_EXTENSIONS = 0x0904
CL_DEVICE_NAME = 0x102B
CL_DEVICE_EXTENSIONS = 0x1030
CL_DEVICE_TYPE_GPU = 1 << 2
CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR = 0x204F
CL_DEVICE_HANDLE_LIST_KHR = 0x2051
CL_DEVICE_HANDLE_LIST_END_KHR = 0
CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR = 0x2060
CL_MEM_READ_WRITE = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class CUmemLocation(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class CUmemAllocationProp(C.Structure):
    _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", CUmemLocation),
                ("win32HandleMetaData", C.c_void_p), ("compressionType", C.c_ubyte),
                ("gpuDirectRDMACapable", C.c_ubyte), ("usage", C.c_ushort), ("reserved", C.c_ubyte * 4)]


class CUmemAccessDesc(C.Structure):
    _fields_ = [("location", CUmemLocation), ("flags", C.c_int)]


def info_str(fn, obj, param):
    n = C.c_size_t()
    fn(obj, param, 0, None, C.byref(n))
    buf = C.create_string_buffer(n.value)
    fn(obj, param, n.value, buf, None)
    return buf.value.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    args = ap.parse_args()
    cl = C.CDLL("libOpenCL.so.1")
    nplat = C.c_uint()
    cl.clGetPlatformIDs(0, None, C.byref(nplat))
    plats = (C.c_void_p * nplat.value)()
    cl.clGetPlatformIDs(nplat.value, plats, None)
    dev, plat = None, None
    for p in plats:
        ext = info_str(cl.clGetPlatformInfo, C.c_void_p(p), CL_PLATFORM_EXTENSIONS)
        ndev = C.c_uint()
        if cl.clGetDeviceIDs(C.c_void_p(p), CL_DEVICE_TYPE_GPU, 0, None, C.byref(ndev)) != 0 or not ndev.value:
            continue
        devs = (C.c_void_p * ndev.value)()
        cl.clGetDeviceIDs(C.c_void_p(p), CL_DEVICE_TYPE_GPU, ndev.value, devs, None)
        dev, plat = C.c_void_p(devs[0]), C.c_void_p(p)
        print("platform extensions:", " ".join(e for e in ext.split() if "external" in e or "semaphore" in e) or "-")
        break
    if dev is None:
        sys.exit("no OpenCL GPU")
    print("device:", info_str(cl.clGetDeviceInfo, dev, CL_DEVICE_NAME))
    dext = info_str(cl.clGetDeviceInfo, dev, CL_DEVICE_EXTENSIONS).split()
    print("device external extensions:", " ".join(e for e in dext if "external" in e or "semaphore" in e) or "-")
    n = C.c_size_t()
    types = []
    if cl.clGetDeviceInfo(dev, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, 0, None, C.byref(n)) == 0 and n.value:
        arr = (C.c_uint * (n.value // 4))()
        cl.clGetDeviceInfo(dev, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, n.value, arr, None)
        types = list(arr)
    print("device import handle types:", [hex(t) for t in types])
    if CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR not in types:
        print("RESULT: no opaque-fd import")
        return

    cu = C.CDLL("libcuda.so.1")

    def ck(r, what):
        if r != 0:
            sys.exit(f"RESULT: {what} failed: CUresult {r}")

    ck(cu.cuInit(0), "cuInit")
    cudev = C.c_int()
    ck(cu.cuDeviceGet(C.byref(cudev), 0), "cuDeviceGet")
    cuctx = C.c_void_p()
    ck(cu.cuDevicePrimaryCtxRetain(C.byref(cuctx), cudev), "cuDevicePrimaryCtxRetain")
    ck(cu.cuCtxSetCurrent(cuctx), "cuCtxSetCurrent")
    prop = CUmemAllocationProp()
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = CUmemLocation(CU_MEM_LOCATION_TYPE_DEVICE, cudev.value)
    gran = C.c_size_t()
    ck(cu.cuMemGetAllocationGranularity(C.byref(gran), C.byref(prop), 0), "cuMemGetAllocationGranularity")
    size = max(gran.value, (args.mib << 20) // gran.value * gran.value)
    handle = C.c_ulonglong()
    ck(cu.cuMemCreate(C.byref(handle), C.c_size_t(size), C.byref(prop), C.c_ulonglong(0)), "cuMemCreate")
    fd = C.c_int(-1)
    ck(cu.cuMemExportToShareableHandle(C.byref(fd), handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                       C.c_ulonglong(0)), "cuMemExportToShareableHandle")
    ptr = C.c_ulonglong()
    ck(cu.cuMemAddressReserve(C.byref(ptr), C.c_size_t(size), C.c_size_t(0), C.c_ulonglong(0), C.c_ulonglong(0)),
       "cuMemAddressReserve")
    ck(cu.cuMemMap(ptr, C.c_size_t(size), C.c_size_t(0), handle, C.c_ulonglong(0)), "cuMemMap")
    acc = CUmemAccessDesc(CUmemLocation(CU_MEM_LOCATION_TYPE_DEVICE, cudev.value), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    ck(cu.cuMemSetAccess(ptr, C.c_size_t(size), C.byref(acc), C.c_size_t(1)), "cuMemSetAccess")
    ck(cu.cuMemsetD32_v2(ptr, C.c_uint(0x3F800000), C.c_size_t(size // 4)), "cuMemsetD32")  # 1.0f
    ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    print(f"cuda: {size >> 20} MiB exported as fd {fd.value}")

    err = C.c_int()
    cl.clCreateContext.restype = C.c_void_p
    ctx = C.c_void_p(cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err)))
    cl.clCreateCommandQueue.restype = C.c_void_p
    q = C.c_void_p(cl.clCreateCommandQueue(ctx, dev, C.c_ulonglong(0), C.byref(err)))
    props = (C.c_ulonglong * 6)(CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, fd.value, CL_DEVICE_HANDLE_LIST_KHR,
                                dev.value, CL_DEVICE_HANDLE_LIST_END_KHR, 0)
    cl.clCreateBufferWithProperties.restype = C.c_void_p
    buf = cl.clCreateBufferWithProperties(ctx, props, C.c_ulonglong(CL_MEM_READ_WRITE), C.c_size_t(size), None,
                                          C.byref(err))
    if err.value != 0 or not buf:
        print(f"RESULT: clCreateBufferWithProperties failed: {err.value}")
        return
    buf = C.c_void_p(buf)
    # Whether the import took the descriptor (closed it, as Vulkan's and CUDA's opaque-fd imports do): this probe
    # opens nothing in between, so the number cannot have been reused
    try:
        fcntl.fcntl(fd.value, fcntl.F_GETFD)
        print(f"the import left fd {fd.value} open: the application closes it")
        owned = True
    except OSError:
        print(f"the import closed fd {fd.value}: the driver took the descriptor")
        owned = False
    acquire = None
    cl.clGetExtensionFunctionAddressForPlatform.restype = C.c_void_p
    fp = cl.clGetExtensionFunctionAddressForPlatform(plat, b"clEnqueueAcquireExternalMemObjectsKHR")
    fr = cl.clGetExtensionFunctionAddressForPlatform(plat, b"clEnqueueReleaseExternalMemObjectsKHR")
    proto = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.POINTER(C.c_void_p), C.c_uint, C.c_void_p, C.c_void_p)
    if fp:
        acquire, release = proto(fp), proto(fr)
        print("acquire:", acquire(q, 1, C.byref(buf), 0, None, None))
    host = (C.c_float * 4)()
    r = cl.clEnqueueReadBuffer(q, buf, 1, C.c_size_t(size - 16), C.c_size_t(16), host, 0, None, None)
    print("opencl reads cuda's 1.0s:", r, list(host))
    pattern = C.c_float(2.5)
    r = cl.clEnqueueFillBuffer(q, buf, C.byref(pattern), C.c_size_t(4), C.c_size_t(0), C.c_size_t(size), 0, None,
                               None)
    cl.clFinish(q)
    if acquire:
        print("release:", release(q, 1, C.byref(buf), 0, None, None))
        cl.clFinish(q)
    back = (C.c_float * 4)()
    ck(cu.cuMemcpyDtoH_v2(back, C.c_ulonglong(ptr.value + size - 16), C.c_size_t(16)), "cuMemcpyDtoH")
    print("cuda reads opencl's 2.5s:", r, list(back))
    ok = list(host) == [1.0] * 4 and list(back) == [2.5] * 4
    print("RESULT:", "shared memory works" if ok else "mismatch")
    if owned:  # and after the buffer goes?
        cl.clReleaseMemObject(buf)
        cl.clFinish(q)
        try:
            fcntl.fcntl(fd.value, fcntl.F_GETFD)
            print(f"fd {fd.value} still open after the buffer's release: the application owns it")
            os.close(fd.value)
        except OSError:
            print(f"the buffer's release closed fd {fd.value}: the driver took the descriptor at the import")


if __name__ == "__main__":
    main()
