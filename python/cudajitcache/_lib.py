"""The C library under the package: finding libcudajitcache and its calls.

The structs mirror <cudajitcache/jit.h> (src/jit/include/cudajitcache/jit.h)
field by field; a change there is a change here.  The library is found at
the first Jit(), not at import, so that importing never fails:

  1. $CJC_JIT_LIBRARY, a path to the shared library (nothing else is tried
     when it is set);
  2. the library the package was installed with: _build.LIBRARY, relative
     to the package's directory, which `cmake --install` writes (the
     prefix's libdir) and the wheel's build (setup.py: the library inside
     the package);
  3. libcudajitcache.so.0 through the dynamic loader (LD_LIBRARY_PATH,
     ldconfig's cache);
  4. libcudajitcache.so.0 in `pkg-config --variable=libdir cudajitcache`
     (an installed prefix that the loader does not search, such as
     /usr/local/lib before ldconfig ran).

VERSION is the project's (CMakeLists.txt's project()): from _build where
installed, else read from the checkout's CMakeLists.txt.
"""
import ctypes
import os
import re
import shutil
import subprocess
import threading

from .errors import LibraryNotFound

try:
    from . import _build  # written at install (cmake/Python.cmake) or by the wheel's build
except ImportError:
    _build = None

SONAME = "libcudajitcache.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _checkout_version():
    """project(CudaJitCache VERSION x.y.z) of the checkout this package is in."""
    try:
        with open(os.path.join(_HERE, "..", "..", "CMakeLists.txt"), encoding="utf-8") as f:
            m = re.search(r"project\(CudaJitCache\s+VERSION\s+([0-9.]+)", f.read())
    except OSError:
        m = None
    return m.group(1) if m else "0+unknown"


VERSION = _build.VERSION if _build else _checkout_version()

FORMATS = {"cubin": 0, "fatbin": 1, "ptx": 2}  # enum cjc_jit_format

# int (*cjc_jit_hook)(void *ctx, const void *data, size_t size, cjc_jit_bytes *out)
HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                        ctypes.c_void_p)


class Request(ctypes.Structure):
    """struct cjc_jit_request (0.2)."""
    _fields_ = [("name", ctypes.c_char_p), ("code", ctypes.c_char_p),
                ("options", ctypes.POINTER(ctypes.c_char_p)), ("noptions", ctypes.c_size_t),
                ("arch", ctypes.c_char_p), ("format", ctypes.c_int),
                ("extra_signature", ctypes.c_char_p), ("hook", HOOK),
                ("hook_id", ctypes.c_char_p), ("hook_ctx", ctypes.c_void_p)]


class Result(ctypes.Structure):
    """struct cjc_jit_result."""
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t),
                ("key", ctypes.c_char * 65), ("hit", ctypes.c_int), ("log", ctypes.c_char_p)]


# (name, restype, argtypes); the calls of 0.2 that the package uses.
_PROTOTYPES = [
    ("cjc_jit_open", ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    ("cjc_jit_compile", ctypes.c_int,
     [ctypes.c_void_p, ctypes.POINTER(Request), ctypes.POINTER(Result)]),
    ("cjc_jit_error", ctypes.c_char_p, [ctypes.c_void_p]),
    ("cjc_jit_result_free", None, [ctypes.POINTER(Result)]),
    ("cjc_jit_close", None, [ctypes.c_void_p]),
    ("cjc_jit_setting", ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_char_p]),
    ("cjc_jit_device_arch", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    ("cjc_jit_drop", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    ("cjc_jit_bytes_set", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    ("cjc_jit_load", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(Result), ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.POINTER(ctypes.c_void_p)]),
    ("cjc_jit_unload", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    ("cjc_jit_driver_symbol", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]),
    # the library's own rule for a request's name, so that Python refuses
    # what the library would (exported since 0.3.0, declared since 0.4)
    ("cjc_jit_name_ok", ctypes.c_bool, [ctypes.c_char_p]),
]

_lock = threading.Lock()
_lib = None


def _pkg_config_libdir():
    if not shutil.which("pkg-config"):
        return None
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "cudajitcache"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = out.stdout.decode(errors="replace").strip()
    return libdir if out.returncode == 0 and libdir else None


def _open():
    """The loaded library, or LibraryNotFound naming every place tried."""
    path = os.environ.get("CJC_JIT_LIBRARY")
    if path:
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            raise LibraryNotFound("CJC_JIT_LIBRARY=%s: cannot load it: %s" % (path, e)) from None
    tried = []
    if _build:
        candidate = os.path.normpath(os.path.join(_HERE, _build.LIBRARY))
        try:
            return ctypes.CDLL(candidate)
        except OSError as e:
            tried.append("%s, installed with the package (%s)" % (candidate, e))
    try:
        return ctypes.CDLL(SONAME)
    except OSError as e:
        tried.append("%s through the loader (%s)" % (SONAME, e))
    libdir = _pkg_config_libdir()
    if libdir:
        candidate = os.path.join(libdir, SONAME)
        try:
            return ctypes.CDLL(candidate)
        except OSError as e:
            tried.append("%s, pkg-config's libdir (%s)" % (candidate, e))
    else:
        tried.append("pkg-config cudajitcache (no pkg-config, or no cudajitcache.pc on "
                     "PKG_CONFIG_PATH)")
    raise LibraryNotFound("libcudajitcache not found: tried " + "; ".join(tried) +
                          ". Install CudaJitCache (cmake --install), or set CJC_JIT_LIBRARY "
                          "to the path of libcudajitcache.so")


def library():
    """The C library, loaded and typed once per process."""
    global _lib
    with _lock:
        if _lib is None:
            lib = _open()
            for name, restype, argtypes in _PROTOTYPES:
                try:
                    fn = getattr(lib, name)
                except AttributeError:
                    raise LibraryNotFound("%s has no %s: it is older than version 0.2 of "
                                          "<cudajitcache/jit.h>; install a newer CudaJitCache"
                                          % (lib._name, name)) from None
                fn.restype = restype
                fn.argtypes = argtypes
            _lib = lib
        return _lib
