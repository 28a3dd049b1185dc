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
TypeError, a ValueError or an OverflowError before anything is launched.

What DeepJIT-style kernels need at launch (see Kernel.__call__):

  cluster=(x, y, z)     thread block clusters (sm_90 and later): the
                        launch goes through cuLaunchKernelEx with
                        CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
  cooperative=True      a cooperative launch (cg::this_grid().sync()):
                        cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE
  shared_mem > 48 KiB   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is
                        set first (cuFuncSetAttribute), once per larger size
  kernel.set_attribute  any other function attribute a kernel may set
                        (FUNCTION_ATTRIBUTES), e.g.
                        set_attribute("non_portable_cluster_size_allowed", 1)

Any other launch goes through cuLaunchKernel, as any driver has it.  A
driver without cuLaunchKernelEx (before CUDA 12.0) or a GPU without
clusters fails the launch that needs it with CacheError.

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
  a ctypes value                 itself (ctypes.c_uint16(7), c_void_p(addr));
                                 a ctypes.Structure is passed by value, as
                                 large as the driver takes (32,764 bytes
                                 since CUDA 12.1): an argument struct, or a
                                 TensorMap (below) for a __grid_constant__
                                 CUtensorMap parameter
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
# Looked up when first needed: a driver may lack them (cuLaunchKernelEx: CUDA 12.0)
_LATER_CALLS = {
    "cuLaunchKernelEx": (CUresult, ctypes.c_void_p, ctypes.c_void_p, _PTRS, _PTRS),
    "cuFuncSetAttribute": (CUresult, ctypes.c_void_p, ctypes.c_int, ctypes.c_int),
}
# enum CUfunction_attribute: those cuFuncSetAttribute sets
FUNCTION_ATTRIBUTES = {
    "max_dynamic_shared_size_bytes": 8, "preferred_shared_memory_carveout": 9,
    "required_cluster_width": 11, "required_cluster_height": 12, "required_cluster_depth": 13,
    "non_portable_cluster_size_allowed": 14, "cluster_scheduling_policy_preference": 15,
}
_DYNAMIC_SHARED = FUNCTION_ATTRIBUTES["max_dynamic_shared_size_bytes"]
DEFAULT_SHARED_MEM = 48 * 1024  # the most a launch may ask without the attribute
_COOPERATIVE, _CLUSTER_DIMENSION = 2, 4  # enum CUlaunchAttributeID
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
        self._jit = jit

    def later(self, name, why):
        """The call name of _LATER_CALLS; CacheError, saying why it is needed,
        when the driver lacks it."""
        call = getattr(self, name, None)
        if call is None:
            address = self._jit._lib.cjc_jit_driver_symbol(self._jit._live(), name.encode())
            if not address:
                raise CacheError("%s: not found in the CUDA driver (libcuda.so.1), which %s "
                                 "needs: update the driver" % (name, why))
            restype, *argtypes = _LATER_CALLS[name]
            call = ctypes.CFUNCTYPE(restype, *argtypes)(address)
            setattr(self, name, call)
        return call

    def check(self, result, what):
        if result:
            text = ctypes.c_char_p()
            known = self.cuGetErrorString(result, ctypes.byref(text)) == 0 and text.value
            raise CacheError("%s failed: %s (CUresult %d)"
                             % (what, text.value.decode() if known else "unknown error", result))


class _LaunchAttributeValue(ctypes.Union):
    """union CUlaunchAttributeValue (64 bytes): the members used here."""
    _fields_ = [("pad", ctypes.c_char * 64), ("cooperative", ctypes.c_int),
                ("clusterDim", ctypes.c_uint * 3)]


class _LaunchAttribute(ctypes.Structure):
    """struct CUlaunchAttribute (cuda.h): an id, padding, the value."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", _LaunchAttributeValue)]


class _LaunchConfig(ctypes.Structure):
    """struct CUlaunchConfig (cuda.h), as cuLaunchKernelEx takes it."""
    _fields_ = [("gridDim", ctypes.c_uint * 3), ("blockDim", ctypes.c_uint * 3),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


def _launch_attributes(cluster, cooperative):
    """The CUlaunchAttribute array a launch with these options passes."""
    attrs = []
    if cluster:
        attrs.append(_LaunchAttribute(id=_CLUSTER_DIMENSION))
        attrs[-1].value.clusterDim[:] = cluster
    if cooperative:
        attrs.append(_LaunchAttribute(id=_COOPERATIVE))
        attrs[-1].value.cooperative = 1
    return (_LaunchAttribute * len(attrs))(*attrs)


class TensorMap(ctypes.Structure):
    """A CUtensorMap (cuda.h): 128 opaque bytes that the driver's
    cuTensorMapEncodeTiled (or another cuTensorMapEncode*) fills, passed by
    value to a kernel's `const __grid_constant__ CUtensorMap` parameter.
    Make one with TensorMap.new(): the driver wants it aligned to 64 bytes,
    which ctypes does not promise for a plain TensorMap()."""
    _fields_ = [("opaque", ctypes.c_uint64 * 16)]

    @classmethod
    def new(cls):
        """A zeroed TensorMap at an address aligned to 128 bytes (cuda.h's)."""
        buffer = bytearray(ctypes.sizeof(cls) + 128)
        base = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
        return cls.from_buffer(buffer, -base % 128)  # keeps buffer alive


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


def _cluster(cluster, grid):
    """(x, y, z) from cluster (None: no cluster), which must divide grid."""
    if cluster is None:
        return None
    dims = _dims(cluster, "cluster")
    if any(g % c for g, c in zip(grid, dims)):
        raise ValueError("cluster %r does not divide grid %r: each grid dimension must be a "
                         "multiple of the cluster's" % (dims, grid))
    return dims


def _shared_mem(value):
    """The dynamic shared memory bytes, an int that fits a C unsigned int."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("shared_mem: expected an int, got %s" % type(value).__name__)
    if not 0 <= value < 2**32:
        raise ValueError("shared_mem %d: expected 0 to 2**32 - 1 bytes" % value)
    return value


def _function_attribute(name, value):
    """(enum CUfunction_attribute, value) from a FUNCTION_ATTRIBUTES name."""
    if not isinstance(name, str):
        raise TypeError("attribute: expected a str, got %s" % type(name).__name__)
    word = name.lower()
    word = word[len("cu_func_attribute_"):] if word.startswith("cu_func_attribute_") else word
    if word not in FUNCTION_ATTRIBUTES:
        raise ValueError("attribute %r: expected one of %s"
                         % (name, ", ".join(sorted(FUNCTION_ATTRIBUTES))))
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s: expected an int value, got %s" % (word, type(value).__name__))
    if not -2**31 <= value < 2**31:
        raise ValueError("%s %d: does not fit a C int" % (word, value))
    return FUNCTION_ATTRIBUTES[word], value


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
        self._dynamic_shared = DEFAULT_SHARED_MEM  # the most a launch may ask now

    def __repr__(self):
        return "Kernel(%r)" % self.name

    def set_attribute(self, name, value):
        """Sets a function attribute (cuFuncSetAttribute) for later launches:
        name is a key of FUNCTION_ATTRIBUTES ("non_portable_cluster_size_allowed",
        or spelt as cuda.h does, "CU_FUNC_ATTRIBUTE_..."), value an int.
        TypeError or ValueError for a wrong name or value; CacheError with
        the driver's message where the GPU refuses it."""
        attribute, value = _function_attribute(name, value)
        self._set(attribute, value)

    def _set(self, attribute, value):
        driver = self.module._driver
        self.module._live()
        word = next(k for k, v in FUNCTION_ATTRIBUTES.items() if v == attribute)
        call = driver.later("cuFuncSetAttribute", "setting a function attribute")
        driver.check(call(self._handle, attribute, value),
                     "cuFuncSetAttribute(%s, %s=%d)" % (self.name, word, value))
        if attribute == _DYNAMIC_SHARED:
            self._dynamic_shared = max(value, DEFAULT_SHARED_MEM)

    def __call__(self, grid, block, args=(), shared_mem=0, stream=None, cluster=None,
                 cooperative=False):
        """Launches the kernel on grid x block threads (ints or tuples of up
        to three) with args (a sequence: see the module's help for how each
        is passed), shared_mem bytes of dynamic shared memory, on stream.

        cluster (an int or a tuple of up to three, each dividing grid's)
        launches thread block clusters of that shape; cooperative=True a
        cooperative launch, whose blocks must all fit on the GPU at once.
        Either goes through cuLaunchKernelEx.  shared_mem over 48 KiB sets
        the kernel's max_dynamic_shared_size_bytes to it first.

        ValueError for a grid, block or cluster that is not 1 to 3 positive
        ints, a cluster that does not divide the grid, or shared_mem outside
        0 to 2**32 - 1; TypeError for a cooperative that is not a bool or a
        shared_mem that is not an int; both before anything is set or
        launched.  CacheError with the driver's message when the driver or
        the GPU refuses.  Asynchronous, as cuLaunchKernel is: synchronize
        as the caller's framework does."""
        dims = _dims(grid, "grid") + _dims(block, "block")
        cluster = _cluster(cluster, dims[:3])
        if not isinstance(cooperative, bool):
            raise TypeError("cooperative: expected a bool, got %s" % type(cooperative).__name__)
        shared_mem = _shared_mem(shared_mem)
        values = [_argument(a, i) for i, a in enumerate(args)]
        pointers = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        handle = _stream(stream)
        if shared_mem > self._dynamic_shared:
            self._set(_DYNAMIC_SHARED, shared_mem)
        if cluster or cooperative:
            self._launch_ex(dims, shared_mem, handle, pointers,
                            _launch_attributes(cluster, cooperative))
            return
        driver = self.module._driver
        self.module._live()
        driver.check(driver.cuLaunchKernel(self._handle, *dims, shared_mem, handle, pointers,
                                           None),
                     "cuLaunchKernel(%s)" % self.name)

    def _launch_ex(self, dims, shared_mem, stream, pointers, attrs):
        driver = self.module._driver
        self.module._live()
        call = driver.later("cuLaunchKernelEx", "a cluster or cooperative launch")
        config = _LaunchConfig(sharedMemBytes=shared_mem, hStream=stream, attrs=attrs,
                               numAttrs=len(attrs))
        config.gridDim[:], config.blockDim[:] = dims[:3], dims[3:]
        driver.check(call(ctypes.byref(config), self._handle, pointers, None),
                     "cuLaunchKernelEx(%s)" % self.name)

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
