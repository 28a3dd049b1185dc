"""cudajitcache: compile CUDA source at run time through the CudaJitCache store.

Pure Python over libcudajitcache (<cudajitcache/jit.h>, docs/jit.md), loaded
with ctypes at the first Jit(): from $CJC_JIT_LIBRARY, else the library it was
installed with, else the dynamic loader's libcudajitcache.so.0, else
pkg-config's libdir for cudajitcache (_lib.py).

    import cudajitcache
    with cudajitcache.Jit("MYLIB") as jit:              # MYLIB_JIT_* settings
        res = jit.compile(src, arch="sm_90a", options=["-std=c++17"])
        res.data, res.hit, res.key, res.log
        kernel = jit.load(res, "saxpy")                   # on the GPU (launch.py)
        kernel(grid=blocks, block=256, args=(y, x, 2.0, n))   # tensors, ints, floats

    cubin = cudajitcache.compile_cuda(src, "cubin", arch="sm_90a")   # tilelang's shape
"""
from .errors import CacheError, CompileError, LibraryNotFound
from .jit import Jit, Result
from .launch import Kernel, Module, TensorMap
from .nvcc import DEFAULT_PREFIX, compile_cuda, default_jit, set_default_prefix

from ._lib import VERSION as __version__  # CMakeLists.txt's project(VERSION)

__all__ = ["CacheError", "CompileError", "DEFAULT_PREFIX", "Jit", "Kernel", "LibraryNotFound",
           "Module", "Result", "TensorMap", "compile_cuda", "default_jit",
           "set_default_prefix"]
