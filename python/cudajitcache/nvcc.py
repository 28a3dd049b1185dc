"""compile_cuda: tilelang's tilelang.contrib.nvcc.compile_cuda, through the cache.

A Python JIT that calls tilelang's (or TVM's) compile_cuda can call this one
in its place: the same parameters, a bytearray back, RuntimeError on
failure.  It compiles through a module-level Jit opened at the first call
with the prefix "TILELANG" (so TILELANG_JIT_* settings apply; change it
with set_default_prefix).  Differences from tilelang's, on purpose:

  - no -O3 and -lineinfo of its own: the output is what plain
    `nvcc --cubin -arch=ARCH OPTIONS` makes (nvcc's device code is -O3
    already; add -lineinfo to options, or set TILELANG_JIT_WITH_LINEINFO=1);
  - arch None means the current GPU's (tilelang asks TVM's current target);
  - arch as a list must name one architecture (["-gencode",
    "arch=compute_90a,code=sm_90a"]): the library compiles for one per
    request.
"""
import sys
import threading

from .jit import Jit

DEFAULT_PREFIX = "TILELANG"

_lock = threading.Lock()
_default = None
_default_prefix = DEFAULT_PREFIX


def default_jit():
    """The Jit compile_cuda uses, opened at its first use."""
    global _default
    with _lock:
        if _default is None:
            _default = Jit(_default_prefix)
        return _default


def set_default_prefix(prefix=DEFAULT_PREFIX):
    """Sets the prefix of compile_cuda's Jit (None: no prefix).  The next
    compile_cuda opens a new Jit, reading the environment again; the old one
    closes once no thread uses it."""
    global _default, _default_prefix
    with _lock:
        _default, _default_prefix = None, prefix


def _gencode_arch(value):
    """'arch=compute_90a,code=sm_90a' (or code=[sm_90a]) -> 'sm_90a'."""
    fields = dict(f.split("=", 1) for f in value.split(",", 1) if "=" in f)
    virtual, code = fields.get("arch", ""), fields.get("code", "").strip("[]")
    if virtual.startswith("compute_") and code == "sm_" + virtual[len("compute_"):]:
        return code
    return None


def _arch_word(arch):
    """tilelang's arch (None, "sm_90", or a list of nvcc words) as the one
    architecture a request names."""
    if arch is None or isinstance(arch, str):
        return arch
    words = list(arch)
    found = []
    i = 0
    while i < len(words):
        word, value = words[i], None
        for flag in ("-gencode", "--generate-code", "-arch", "--gpu-architecture"):
            if word == flag and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            elif word.startswith(flag + "="):
                value = word[len(flag) + 1:]
            if value is not None:
                found.append(_gencode_arch(value) if "gencode" in flag or "generate" in flag
                             else value)
                break
        else:
            found.append(None)
        i += 1
    if len(found) != 1 or found[0] is None:
        raise ValueError("arch %r: expected one architecture, as 'sm_90a' or "
                         "['-gencode', 'arch=compute_90a,code=sm_90a']" % (arch,))
    return found[0]


def compile_cuda(code, target_format="ptx", arch=None, options=None, path_target=None,
                 verbose=False):
    """Compiles CUDA code with nvcc, through the cache.

    code: the CUDA C++ source (str).  target_format: "cubin", "ptx" or
    "fatbin".  arch: "sm_90a", a list naming one architecture, or None for
    the current GPU's.  options: one option (str) or a list of them.
    path_target: a file to write the output to as well.  verbose: print
    whether it hit, the entry's key and nvcc's messages on stderr.

    Returns the output as a bytearray; raises CompileError (a RuntimeError)
    with nvcc's messages when the compile fails, CacheError when its Jit
    cannot be opened (Jit()), ValueError for a bad target_format, arch or
    options (and what Jit.compile raises for a bad argument).
    """
    if target_format not in ("cubin", "ptx", "fatbin"):
        raise ValueError("target_format must be in cubin, ptx, fatbin")
    if options is None:
        options = []
    elif isinstance(options, str):
        options = [options]
    elif not isinstance(options, (list, tuple)):
        raise ValueError("options must be str or list of str")
    result = default_jit().compile(code, arch=_arch_word(arch), options=options,
                                   format=target_format)
    if verbose:
        print("cudajitcache: %s, entry %s" % ("from the cache" if result.hit else "compiled",
                                              result.key or "(not cached)"), file=sys.stderr)
        if result.log:
            print(result.log, end="" if result.log.endswith("\n") else "\n", file=sys.stderr)
    if path_target:
        with open(path_target, "wb") as f:
            f.write(result.data)
    return bytearray(result.data)
