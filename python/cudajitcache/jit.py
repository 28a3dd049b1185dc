"""Jit: a handle on libcudajitcache, and compile()'s Result.

One Jit is one cjc_jit handle (cjc_jit_open ... cjc_jit_close).  Its
settings are read from the environment when it is opened: PREFIX_JIT_*
(the prefix given), then CJC_JIT_*, then the cjc settings (docs/jit.md).
A Jit may be used by several threads at once (the library releases no
lock to Python: ctypes drops the GIL during each call); close() must not
race with a call in another thread.  Errors: CompileError for a failed
compile, CacheError for the other calls, ValueError and TypeError for an
argument Python can tell is wrong before the library sees it (a str that
is not one, a NUL in it, a name, format, arch, hook_id or key of the wrong
form, a call on a closed Jit).
"""
import ctypes
import re

from . import _lib
from .errors import CacheError, CompileError
from .launch import Module


class Result:
    """A compile's output: data (bytes), hit (served from a store), key (the
    entry's key, "" when the compile was not cached) and log (the
    compiler's messages, replayed on a hit)."""
    __slots__ = ("data", "hit", "key", "log")

    def __init__(self, data, hit, key, log):
        self.data = data
        self.hit = hit
        self.key = key
        self.log = log

    def __repr__(self):
        return "Result(%d bytes, hit=%s, key=%r)" % (len(self.data), self.hit, self.key)


def _word(value, what):
    """A str (or bytes) argument as the C string the library reads."""
    if isinstance(value, str):
        value = value.encode()
    elif not isinstance(value, bytes):
        raise TypeError("%s: expected a str, got %s" % (what, type(value).__name__))
    if b"\0" in value:
        raise ValueError("%s: contains a NUL character" % what)
    return value


def _maybe_word(value, what):
    return None if value is None else _word(value, what)


def _options(options):
    """(char *array or None, count) for the request."""
    if options is None:
        return None, 0
    if isinstance(options, (str, bytes)):
        raise TypeError("options: expected a list of strings, got one string: pass [%r]"
                        % (options,))
    words = [_word(o, "option %r" % (o,)) for o in options]
    if not words:
        return None, 0
    return (ctypes.c_char_p * len(words))(*words), len(words)


def _name(lib, name):
    """The request's file name (None: "kernel.cu"), as the library takes it."""
    if name is None:
        return None
    word = _word(name, "name")
    if not lib.cjc_jit_name_ok(word):
        raise ValueError("name %r: expected a file name ending in .cu, of letters, digits and "
                         "._-+, at most 128 of them, or None for 'kernel.cu'" % (name,))
    return word


def _key(key):
    """An entry's key as drop() takes it: 64 lower-case hex digits."""
    word = _word(key, "key")
    if not re.fullmatch(rb"[0-9a-f]{64}", word):
        raise ValueError("key %r: expected an entry's key (64 hex digits), as a Result's .key"
                         % (key,))
    return word


def _arch(arch):
    if arch is None:
        return None
    arch = _word(arch, "arch")
    if not arch or arch.split() != [arch]:
        raise ValueError("arch %r: expected an architecture such as 'sm_90a', or None for "
                         "the current device's" % (arch.decode(errors="replace"),))
    return arch


class _HookCall:
    """One compile's hook as the C callback (cjc_jit_hook): calls the Python
    hook with the compiled bytes and keeps what it returns through
    cjc_jit_bytes_set.  An exception is kept for compile() to raise, and
    fails the compile (the callback returns 1): an exception must not
    cross the C frames."""

    def __init__(self, lib, hook):
        self.lib = lib
        self.hook = hook
        self.raised = None
        self.callback = _lib.HOOK(self._call)  # alive as long as this object

    def _call(self, _ctx, data, size, out):
        try:
            kept = self.hook(ctypes.string_at(data, size) if size else b"")
            if kept is None:
                return 0
            if isinstance(kept, (bytearray, memoryview)):
                kept = bytes(kept)
            elif not isinstance(kept, bytes):
                raise TypeError("the hook returned %s: expected bytes, or None to keep its "
                                "input" % type(kept).__name__)
            if self.lib.cjc_jit_bytes_set(out, kept, len(kept)):
                raise MemoryError("cjc_jit_bytes_set: out of memory")
            return 0
        except BaseException as e:  # KeyboardInterrupt too: raised again by compile()
            self.raised = e
            return 1


class Jit:
    """A handle on libcudajitcache; a context manager that closes it."""

    def __init__(self, prefix=None):
        """Opens a handle whose settings come from PREFIX_JIT_*, then CJC_JIT_*,
        then the cjc settings.  LibraryNotFound when libcudajitcache cannot
        be loaded; CacheError when a setting is malformed (it names the
        variable)."""
        self._handle = None
        self._lib = _lib.library()
        self.prefix = prefix
        err = ctypes.create_string_buffer(1024)
        handle = self._lib.cjc_jit_open(_maybe_word(prefix, "prefix"), err, len(err))
        if not handle:
            raise CacheError("cjc_jit_open: " + err.value.decode(errors="replace"))
        self._handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def close(self):
        """Closes the handle; later calls raise ValueError.  Closing twice is fine."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.cjc_jit_close(handle)

    def _live(self):
        if not self._handle:
            raise ValueError("the Jit is closed")
        return self._handle

    def _error(self):
        return self._lib.cjc_jit_error(self._handle).decode(errors="replace")

    def compile(self, code, arch=None, options=(), name="kernel.cu", format="cubin",
                hook=None, hook_id=None, extra_signature=None):
        """Compiles code (CUDA C++) to format ("cubin", "fatbin" or "ptx") for
        arch ("sm_90a"; None: the current device's) with nvcc's options (a
        list), through the store.  name is the source's file name in
        messages (None: "kernel.cu").  hook, a callable bytes -> bytes (or None to keep its
        input), post-processes the compiled bytes before they are kept; it
        runs on a miss only, so hook_id, its name and version, is in the
        key.  extra_signature is text the output depends on that the request
        does not show; it is in the key.  Returns a Result; raises
        CompileError when the compile fails or the library refuses an option
        (one that chooses the output), what the hook raised, ValueError for
        a closed Jit, a bad format, name or arch, a hook without a hook_id
        (or an empty one) or a hook_id without a hook, or a NUL in a str, and
        TypeError for an argument of the wrong type."""
        handle = self._live()
        if format not in _lib.FORMATS:
            raise ValueError("format %r: expected 'cubin', 'fatbin' or 'ptx'" % (format,))
        if hook is not None and not callable(hook):
            raise TypeError("hook: expected a callable bytes -> bytes, got %s"
                            % type(hook).__name__)
        if (hook is None) != (hook_id is None) or hook_id in ("", b""):
            raise ValueError("hook and hook_id go together: hook_id names the hook and its "
                             "version (e.g. 'strip-debug-1'), and is in the key")
        opts, nopts = _options(options)
        request = _lib.Request(name=_name(self._lib, name), code=_word(code, "code"),
                               options=opts, noptions=nopts, arch=_arch(arch),
                               format=_lib.FORMATS[format],
                               extra_signature=_maybe_word(extra_signature, "extra_signature"),
                               hook_id=_maybe_word(hook_id, "hook_id"))
        call = _HookCall(self._lib, hook) if hook else None
        if call:
            request.hook = call.callback
        result = _lib.Result()
        failed = self._lib.cjc_jit_compile(handle, ctypes.byref(request), ctypes.byref(result))
        try:
            log = result.log.decode(errors="replace") if result.log else ""
            error = self._error() if failed else ""
            data = b"" if failed else ctypes.string_at(result.data, result.size)
            out = Result(data, bool(result.hit), result.key.decode(), log)
        finally:
            self._lib.cjc_jit_result_free(ctypes.byref(result))
        if call and call.raised:
            raise call.raised
        if failed:
            raise CompileError(error, log)
        return out

    def setting(self, name):
        """A setting's effective value as text, by its name without prefix
        ("CACHE_DIR", "COMPILER", ...); KeyError for a name that is not one."""
        value = self._lib.cjc_jit_setting(self._live(), _word(name, "name"))
        if value is None:
            raise KeyError("%s: not a JIT setting (docs/jit.md lists them)" % name)
        return value.decode(errors="replace")

    def device_arch(self):
        """The architecture ("sm_80", "sm_90a") of the calling thread's
        device (its current CUDA context's, else device 0's), asked of the
        driver once per device; CacheError when there is no driver or no GPU."""
        buf = ctypes.create_string_buffer(32)
        if self._lib.cjc_jit_device_arch(self._live(), buf, len(buf)):
            raise CacheError(self._error())
        return buf.value.decode()

    def load(self, result, kernel=None):
        """Loads a Result (cubin, fatbin or ptx) on the GPU: a Module, or with
        kernel named, that kernel of it (a Kernel, which keeps its module
        loaded).  CacheError when there is no driver or GPU, or the driver
        refuses the code (then drop(result.key) and compile again);
        TypeError when result is not a Result."""
        module = Module(self, result)
        return module.function(kernel) if kernel is not None else module

    def _c_result(self, result):
        """The struct cjc_jit_result that cjc_jit_load reads, over a Result's
        bytes (NUL-terminated: PTX is text)."""
        if not isinstance(result, Result):
            raise TypeError("load: expected a Result of compile(), got %s"
                            % type(result).__name__)
        buffer = ctypes.create_string_buffer(result.data, len(result.data) + 1)
        c_result = _lib.Result(data=ctypes.cast(buffer, ctypes.c_void_p),
                               size=len(result.data), key=result.key.encode(),
                               hit=int(result.hit))
        c_result._buffer = buffer  # alive as long as the struct
        return c_result

    def drop(self, key):
        """Removes the entry with this key (a Result's) from the local store,
        as when the binary it served fails to load: the next compile of the
        same request compiles again.  ValueError for a key of the wrong form
        (or a closed Jit), CacheError when the store cannot drop it."""
        if self._lib.cjc_jit_drop(self._live(), _key(key)):
            raise CacheError(self._error())
