#!/usr/bin/env python3
"""A JIT framework's compile callback, backed by libcudajitcache through the
cudajitcache package (python/; docs/jit.md, "Python").

    CJC_JIT_LIBRARY=/usr/local/lib/libcudajitcache.so python3 jit_callback.py [ARCH]

compile(name, code, options, arch) returns the cubin's bytes, as a
framework's "compile this generated kernel" hook would; the second run of
this script compiles nothing.  With a GPU the cubin is loaded and run
through the driver (libcuda.so.1); without one, the launch is skipped.
The package is imported as installed, else from this checkout's python/.
"""
import ctypes
import os
import sys

try:
    import cudajitcache
except ImportError:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))
    import cudajitcache

try:
    jit = cudajitcache.Jit("PYJIT")
except cudajitcache.CacheError as e:
    sys.exit("cudajitcache: %s" % e)


def compile(name, code, options, arch):
    """The framework's callback: source in, (cubin bytes, hit, key) out."""
    res = jit.compile(code, arch=arch, options=options, name=name, format="cubin")
    return res.data, res.hit, res.key


def run_on_gpu(cubin, n=4096):
    """Loads the cubin and runs it with the driver API; True when right."""
    cu = ctypes.CDLL("libcuda.so.1")
    ctx, mod, fn = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    dev = ctypes.c_int()
    ok = (cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0 and
          cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and
          cu.cuCtxSetCurrent(ctx) == 0 and
          cu.cuModuleLoadData(ctypes.byref(mod), cubin) == 0 and
          cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"add_one") == 0)
    if not ok:
        return False
    host = (ctypes.c_float * n)(*range(n))
    dptr = ctypes.c_uint64()
    cu.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.sizeof(host))
    cu.cuMemcpyHtoD_v2(dptr, host, ctypes.sizeof(host))
    count = ctypes.c_int(n)
    args = (ctypes.c_void_p * 2)(ctypes.addressof(dptr), ctypes.addressof(count))
    ok = (cu.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, None, args, None) == 0 and
          cu.cuCtxSynchronize() == 0 and
          cu.cuMemcpyDtoH_v2(host, dptr, ctypes.sizeof(host)) == 0)
    cu.cuMemFree_v2(dptr)
    return ok and all(host[i] == i + 1 for i in range(n))


KERNEL = """
extern "C" __global__ void add_one(float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] += 1.0f;
}
"""

try:
    device_arch = jit.device_arch()
except cudajitcache.CacheError:
    device_arch = None
gpu = device_arch is not None
arch = sys.argv[1] if len(sys.argv) > 1 else device_arch or "sm_80"
cubin, hit, key = compile("add_one.cu", KERNEL, ["-O3"], arch)
print(f"add_one for {arch}: {'from the cache' if hit else 'compiled'}, {len(cubin)} bytes, entry {key[:12]}")
if gpu:
    right = run_on_gpu(cubin)
    print("ran on the GPU:", "results right" if right else "WRONG RESULT")
    if not right:
        sys.exit(1)
else:
    print("no GPU: launch skipped")
jit.close()
