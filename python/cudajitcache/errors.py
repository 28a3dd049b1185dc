"""The package's exceptions: each a RuntimeError, as tilelang's compile_cuda raises."""


class CacheError(RuntimeError):
    """A call of libcudajitcache failed (opening a handle, drop, device_arch),
    or the library could not be loaded.  .error is the library's message."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


class LibraryNotFound(CacheError):
    """libcudajitcache could not be loaded; the message says where it looked."""


class CompileError(RuntimeError):
    """A compile failed: .error is cjc_jit_error()'s message, .log the
    compiler's (nvcc's) messages, and str() both."""

    def __init__(self, error, log=""):
        super().__init__(error + ("\n" + log if log else ""))
        self.error = error
        self.log = log
