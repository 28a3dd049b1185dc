#!/usr/bin/env python3
"""A JIT framework's compile callback, backed by libcudajitcache through ctypes.

    CJC_JIT_LIBRARY=/usr/local/lib/libcudajitcache.so python3 jit_callback.py [ARCH]

compile(name, code, options, arch) returns the cubin's bytes, as a
framework's "compile this generated kernel" hook would; the second run of
this script compiles nothing.  With a GPU the cubin is loaded and run
through the driver (libcuda.so.1); without one, the launch is skipped.
"""
import ctypes
import os
import sys


class Request(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("code", ctypes.c_char_p),
                ("options", ctypes.POINTER(ctypes.c_char_p)), ("noptions", ctypes.c_size_t),
                ("arch", ctypes.c_char_p), ("format", ctypes.c_int)]


class Result(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t),
                ("key", ctypes.c_char * 65), ("hit", ctypes.c_int), ("log", ctypes.c_char_p)]


CUBIN = 0
lib = ctypes.CDLL(os.environ.get("CJC_JIT_LIBRARY", "libcudajitcache.so.0"))
lib.cjc_jit_open.restype = ctypes.c_void_p
lib.cjc_jit_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
lib.cjc_jit_compile.argtypes = [ctypes.c_void_p, ctypes.POINTER(Request), ctypes.POINTER(Result)]
lib.cjc_jit_error.restype = ctypes.c_char_p
lib.cjc_jit_error.argtypes = [ctypes.c_void_p]
lib.cjc_jit_result_free.argtypes = [ctypes.POINTER(Result)]
lib.cjc_jit_device_arch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.cjc_jit_close.argtypes = [ctypes.c_void_p]

err = ctypes.create_string_buffer(512)
jit = lib.cjc_jit_open(b"PYJIT", err, len(err))
if not jit:
    sys.exit("cjc_jit_open: " + err.value.decode())


def compile(name, code, options, arch):
    """The framework's callback: source in, (cubin bytes, hit, key) out."""
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    req = Request(name.encode(), code.encode(), opts, len(options), arch.encode(), CUBIN)
    res = Result()
    if lib.cjc_jit_compile(jit, ctypes.byref(req), ctypes.byref(res)):
        log = res.log.decode() if res.log else ""
        lib.cjc_jit_result_free(ctypes.byref(res))
        raise RuntimeError(lib.cjc_jit_error(jit).decode() + "\n" + log)
    out = ctypes.string_at(res.data, res.size), bool(res.hit), res.key.decode()
    lib.cjc_jit_result_free(ctypes.byref(res))
    return out


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

arch_buf = ctypes.create_string_buffer(32)
gpu = lib.cjc_jit_device_arch(jit, arch_buf, len(arch_buf)) == 0
arch = sys.argv[1] if len(sys.argv) > 1 else arch_buf.value.decode() if gpu else "sm_80"
cubin, hit, key = compile("add_one.cu", KERNEL, ["-O3"], arch)
print(f"add_one for {arch}: {'from the cache' if hit else 'compiled'}, {len(cubin)} bytes, entry {key[:12]}")
if gpu:
    right = run_on_gpu(cubin)
    print("ran on the GPU:", "results right" if right else "WRONG RESULT")
    if not right:
        sys.exit(1)
else:
    print("no GPU: launch skipped")
lib.cjc_jit_close(jit)
