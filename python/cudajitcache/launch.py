"""Module and Kernel: what a compile gave, loaded on the GPU and launched.

    with cudajitcache.Jit("MYLIB") as jit:
        res = jit.compile(src, options=["-std=c++17"])      # arch: this device's
        saxpy = jit.load(res).function("saxpy")             # or jit.load(res, "saxpy")
        saxpy(grid=(n + 255) // 256, block=256, args=(y, x, 2.0, n))

Through the driver API that libcudajitcache loads (libcuda.so.1, with
dlopen: the package needs no CUDA Python binding).  A module is loaded in
the calling thread's current CUDA context, or the primary context of
device 0 when it has none (as PyTorch and CuPy use).  Errors are CacheError
with the driver's message; an argument Python can tell is wrong is a
TypeError or an OverflowError before anything is launched.

Kernel arguments, each passed as the kernel's parameter of that type:

  a tensor or array on the GPU   its device pointer: anything with
                                 data_ptr() (PyTorch), .data.ptr (CuPy),
                                 or __cuda_array_interface__
  int                            a 32-bit int (C int); OverflowError when it
                                 does not fit: pass a pointer as the tensor
                                 itself, or as ctypes.c_void_p(address), and
                                 a 64-bit int as ctypes.c_int64(n)
  float                          a 32-bit float (C float); a double as
                                 ctypes.c_double(x)
  bool                           a C bool (one byte)
  a NumPy scalar                 its own type (numpy.int64(3), numpy.float64(x))
  a ctypes value                 itself (ctypes.c_uint16(7), c_void_p(addr))
"""
import ctypes

from .errors import CacheError

CUresult = ctypes.c_int
_PTRS = ctypes.POINTER(ctypes.c_void_p)
_DRIVER_CALLS = {
    "cuModuleGetFunction": (CUresult, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                            ctypes.c_char_p),
    "cuLaunchKernel": (CUresult, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                       ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                       ctypes.c_void_p, _PTRS, _PTRS),
    "cuGetErrorString": (CUresult, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
}
_NUMPY_TYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
                "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
                "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
                "float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool}


class _Driver:
    """The driver calls launching needs, typed, from the Jit's libcuda."""

    def __init__(self, jit):
        for name, (restype, *argtypes) in _DRIVER_CALLS.items():
            address = jit._lib.cjc_jit_driver_symbol(jit._live(), name.encode())
            if not address:
                raise CacheError("%s: not found in the CUDA driver (libcuda.so.1)" % name)
            setattr(self, name, ctypes.CFUNCTYPE(restype, *argtypes)(address))

    def check(self, result, what):
        if result:
            text = ctypes.c_char_p()
            known = self.cuGetErrorString(result, ctypes.byref(text)) == 0 and text.value
            raise CacheError("%s failed: %s (CUresult %d)"
                             % (what, text.value.decode() if known else "unknown error", result))


def _device_pointer(value):
    """A GPU tensor's or array's device pointer, or None when value is none."""
    if hasattr(value, "data_ptr") and callable(value.data_ptr):  # PyTorch
        return value.data_ptr()
    memory = getattr(value, "data", None)
    if hasattr(memory, "ptr") and isinstance(memory.ptr, int):  # CuPy
        return memory.ptr
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict) and "data" in interface:
        return interface["data"][0]
    return None


def _argument(value, index):
    """One kernel argument as a ctypes value that holds it."""
    if isinstance(value, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union)):
        return value
    dtype = getattr(getattr(value, "dtype", None), "name", None)
    if type(value).__module__ == "numpy" and dtype in _NUMPY_TYPES:  # a NumPy scalar
        return _NUMPY_TYPES[dtype](value.item())
    if isinstance(value, bool):
        return ctypes.c_bool(value)
    if isinstance(value, int):
        if not -2**31 <= value < 2**31:
            raise OverflowError("argument %d (%d) does not fit a 32-bit int: pass a tensor "
                                "itself or ctypes.c_void_p(address) for a pointer, "
                                "ctypes.c_int64(n) for a 64-bit int" % (index, value))
        return ctypes.c_int(value)
    if isinstance(value, float):
        return ctypes.c_float(value)
    pointer = _device_pointer(value)
    if pointer is not None:
        return ctypes.c_void_p(pointer)
    raise TypeError("argument %d: cannot pass %s to a kernel: expected a GPU tensor or array, "
                    "an int, a float, a NumPy scalar or a ctypes value"
                    % (index, type(value).__name__))


def _dims(value, what):
    """(x, y, z) from an int or a tuple of one to three ints, each >= 1."""
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise ValueError("%s %r: expected a positive int or a tuple of 1 to 3 of them"
                         % (what, value))
    return dims + (1,) * (3 - len(dims))


def _stream(stream):
    """A CUstream handle from None (the default stream), an int, a PyTorch
    stream (.cuda_stream) or a CuPy stream (.ptr)."""
    if stream is None:
        return None
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle or None
    if isinstance(stream, int):
        return stream or None
    raise TypeError("stream: expected None, a CUstream handle (int), or a PyTorch or CuPy "
                    "stream, got %s" % type(stream).__name__)


class Kernel:
    """A kernel of a loaded Module; call it to launch it."""

    def __init__(self, module, name, handle):
        self.module = module  # keeps the module loaded
        self.name = name
        self._handle = handle

    def __repr__(self):
        return "Kernel(%r)" % self.name

    def __call__(self, grid, block, args=(), shared_mem=0, stream=None):
        """Launches the kernel on grid x block threads (ints or tuples of up
        to three) with args (a sequence: see the module's help for how each
        is passed), shared_mem bytes of dynamic shared memory, on stream.
        Asynchronous, as cuLaunchKernel is: synchronize as the caller's
        framework does."""
        gx, gy, gz = _dims(grid, "grid")
        bx, by, bz = _dims(block, "block")
        values = [_argument(a, i) for i, a in enumerate(args)]
        pointers = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        driver = self.module._driver
        self.module._live()
        driver.check(driver.cuLaunchKernel(self._handle, gx, gy, gz, bx, by, bz, shared_mem,
                                           _stream(stream), pointers, None),
                     "cuLaunchKernel(%s)" % self.name)

    launch = __call__


class Module:
    """A compile's result loaded on the GPU (a CUmodule); a context manager
    that unloads it.  Kernels keep their module loaded while they live."""

    def __init__(self, jit, result):
        self._jit = jit
        self._handle = None
        c_result = jit._c_result(result)
        module = ctypes.c_void_p()
        if jit._lib.cjc_jit_load(jit._live(), ctypes.byref(c_result), None,
                                 ctypes.byref(module), None):
            raise CacheError(jit._error())
        self._handle = module.value
        self._driver = _Driver(jit)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unload()

    def _live(self):
        if not self._handle:
            raise ValueError("the module is unloaded")
        return self._handle

    def function(self, name):
        """The kernel of that name (extern "C", or a lowered C++ name)."""
        handle = ctypes.c_void_p()
        word = name.encode() if isinstance(name, str) else name
        self._driver.check(self._driver.cuModuleGetFunction(ctypes.byref(handle), self._live(),
                                                            word),
                           "cuModuleGetFunction(%s)" % name)
        return Kernel(self, name, handle.value)

    def unload(self):
        """Unloads the module (cuModuleUnload); later launches raise ValueError."""
        handle, self._handle = self._handle, None
        if handle and self._jit._handle:
            if self._jit._lib.cjc_jit_unload(self._jit._handle, handle):
                raise CacheError(self._jit._error())
