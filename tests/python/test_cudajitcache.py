"""The Python package (python/cudajitcache) over libcudajitcache, with the real nvcc.

    CJC_JIT_LIBRARY=build/src/jit/libcudajitcache.so PYTHONPATH=python \
        /usr/bin/python3 -m pytest tests/python

Each test has a store of its own (PYJIT_JIT_CACHE_DIR, TILELANG_JIT_CACHE_DIR)
and no CJC_* setting from outside but the library's path.  With a sanitizer
build of the library, preload its runtime into Python (LD_PRELOAD, and
ASAN_OPTIONS=detect_leaks=0: Python's own allocations are not freed at exit).  No GPU is needed:
every compile names its arch (sm_80).  Without nvcc the run exits 125, which
ctest reports as skipped.
"""
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

try:
    import cudajitcache
except ImportError:  # run from the checkout without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import cudajitcache

NVCC = os.environ.get("REAL_NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
if not os.access(NVCC, os.X_OK):
    pytest.exit("nvcc not found: skipping", returncode=125)

ARCH = "sm_80"
KERNEL = """
extern "C" __global__ void add_one(float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] += 1.0f;
}
"""


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    """A store of the test's own, and no setting from the caller's environment."""
    for name in list(os.environ):
        if (name.startswith(("CJC_", "PYJIT_JIT_", "TILELANG_JIT_")) and
                name != "CJC_JIT_LIBRARY"):
            monkeypatch.delenv(name)
    # the sanitizer build's run preloads ASan into Python (the ctest line);
    # nvcc and the programs it runs must not inherit it
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    path = str(tmp_path / "store")
    monkeypatch.setenv("PYJIT_JIT_CACHE_DIR", path)
    monkeypatch.setenv("TILELANG_JIT_CACHE_DIR", path)
    monkeypatch.setenv("CJC_JIT_NVCC", NVCC)
    cudajitcache.set_default_prefix()  # compile_cuda's Jit reads this environment
    yield path
    cudajitcache.set_default_prefix()


@pytest.fixture
def jit():
    with cudajitcache.Jit("PYJIT") as handle:
        yield handle


def test_a_miss_then_a_hit_returns_the_same_bytes_and_key(jit):
    first = jit.compile(KERNEL, arch=ARCH, options=["-O3"], name="add_one.cu")
    assert not first.hit
    assert re.fullmatch("[0-9a-f]{64}", first.key)
    assert first.data.startswith(b"\x7fELF")
    again = jit.compile(KERNEL, arch=ARCH, options=["-O3"], name="add_one.cu")
    assert (again.hit, again.key, again.data) == (True, first.key, first.data)
    with cudajitcache.Jit("PYJIT") as other:  # another handle, as another process
        served = other.compile(KERNEL, arch=ARCH, options=["-O3"], name="add_one.cu")
    assert (served.hit, served.key, served.data) == (True, first.key, first.data)


def test_a_compile_error_raises_with_nvcc_message(jit):
    with pytest.raises(cudajitcache.CompileError) as raised:
        jit.compile(KERNEL + "\nint broken = undeclared_name;\n", arch=ARCH, name="bad.cu")
    e = raised.value
    assert isinstance(e, RuntimeError)
    assert "nvcc failed" in e.error
    assert re.search(r'bad\.cu\(\d+\): error: identifier "undeclared_name" is undefined', e.log)
    assert e.error in str(e) and "undeclared_name" in str(e)


def test_a_bad_arch_raises_with_nvcc_message(jit):
    with pytest.raises(cudajitcache.CompileError, match="Unsupported gpu architecture 'sm_12'"):
        jit.compile(KERNEL, arch="sm_12")
    for arch in ("", "sm_80 -G"):
        with pytest.raises(ValueError, match="arch"):
            jit.compile(KERNEL, arch=arch)


def test_a_malformed_request_raises_before_compiling(jit):
    with pytest.raises(ValueError, match="format 'elf': expected 'cubin', 'fatbin' or 'ptx'"):
        jit.compile(KERNEL, arch=ARCH, format="elf")
    with pytest.raises(TypeError, match="options: expected a list"):
        jit.compile(KERNEL, arch=ARCH, options="-O3")
    with pytest.raises(ValueError, match="hook_id"):
        jit.compile(KERNEL, arch=ARCH, hook=lambda data: data)
    with pytest.raises(ValueError, match="NUL"):
        jit.compile(KERNEL + "\0", arch=ARCH)
    with pytest.raises(ValueError, match="target_format must be in cubin, ptx, fatbin"):
        cudajitcache.compile_cuda(KERNEL, "elf", arch=ARCH)
    with pytest.raises(ValueError, match="one architecture"):
        cudajitcache.compile_cuda(KERNEL, "cubin", arch=["-gencode", "arch=compute_80,code=sm_80",
                                                         "-gencode", "arch=compute_90,code=sm_90"])


def test_compile_cuda_returns_what_plain_nvcc_makes(tmp_path):
    source, plain = tmp_path / "add_one.cu", tmp_path / "add_one.cubin"
    source.write_text(KERNEL)
    subprocess.run([NVCC, "--cubin", "-arch=" + ARCH, "-o", str(plain), str(source)], check=True)
    cubin = cudajitcache.compile_cuda(KERNEL, "cubin", arch=ARCH)
    assert isinstance(cubin, bytearray)
    assert cubin == plain.read_bytes()
    # tilelang's other spellings of the arch and options, and path_target:
    # the same request, so a hit on compile_cuda's own Jit
    written = tmp_path / "written.cubin"
    again = cudajitcache.compile_cuda(KERNEL, target_format="cubin",
                                      arch=["-gencode", "arch=compute_80,code=sm_80"],
                                      options=[], path_target=str(written))
    assert again == cubin and written.read_bytes() == cubin
    assert cudajitcache.default_jit().prefix == "TILELANG"
    assert cudajitcache.default_jit().compile(KERNEL, arch=ARCH).hit


def test_drop_makes_the_next_compile_a_miss(jit):
    first = jit.compile(KERNEL, arch=ARCH)
    jit.drop(first.key)
    after = jit.compile(KERNEL, arch=ARCH)
    assert (after.hit, after.key, after.data) == (False, first.key, first.data)
    assert jit.compile(KERNEL, arch=ARCH).hit

def test_drop_says_what_is_wrong_with_a_key(jit, monkeypatch):
    key = jit.compile(KERNEL, arch=ARCH).key
    for bad in ("nonsense", key.upper(), key + "0", ""):
        with pytest.raises(ValueError, match="expected an entry's key"):
            jit.drop(bad)
    with pytest.raises(TypeError, match="key: expected a str"):
        jit.drop(None)
    monkeypatch.setenv("CJC_READONLY", "1")
    with cudajitcache.Jit("PYJIT") as readonly:
        readonly.compile(KERNEL, arch=ARCH)
        with pytest.raises(cudajitcache.CacheError, match="readonly is set"):
            readonly.drop(key)


# Every argument Python can tell is wrong raises ValueError or TypeError
# (jit.py's docstrings) before the library sees it; a name the library
# would refuse is one (its rule, cjc_jit_name_ok).
def test_bad_arguments_raise_value_or_type_error(jit):
    for name in ("kernel.cpp", "", "dir/kernel.cu", ".hidden.cu", "a b.cu", "x" * 126 + ".cu"):
        with pytest.raises(ValueError, match="expected a file name ending in .cu"):
            jit.compile(KERNEL, arch=ARCH, name=name)
    assert not jit.compile(KERNEL, arch=ARCH, name="x" * 125 + ".cu").hit  # 128: the most
    assert jit.compile(KERNEL, arch=ARCH, name="a+b_c-1.d.cu").hit
    for wrong in ({"name": 7}, {"code": None}, {"options": [3]}, {"hook": "strip"},
                  {"extra_signature": 1.5}):
        with pytest.raises(TypeError):
            jit.compile(**dict({"code": KERNEL, "arch": ARCH, "hook_id": None}, **wrong))
    for wrong in ({"name": "k\0.cu"}, {"hook_id": "orphan-1"},
                  {"hook": lambda data: data, "hook_id": ""}, {"options": ["-O3\0"]}):
        with pytest.raises(ValueError):
            jit.compile(KERNEL, arch=ARCH, **wrong)
    with pytest.raises(TypeError, match="expected a str"):
        jit.setting(None)
    with pytest.raises(ValueError, match="options must be str or list of str"):
        cudajitcache.compile_cuda(KERNEL, "cubin", arch=ARCH, options=3)
    with pytest.raises(cudajitcache.CompileError, match="option .*chooses the output"):
        jit.compile(KERNEL, arch=ARCH, options=["--ptx"])


def test_a_hooks_output_is_what_compile_returns(jit):
    seen = []

    def mark(data):
        seen.append(data)
        return b"X" + data

    res = jit.compile(KERNEL, arch=ARCH, hook=mark, hook_id="mark-1")
    assert len(seen) == 1 and seen[0].startswith(b"\x7fELF")
    assert (res.hit, res.data) == (False, b"X" + seen[0])
    again = jit.compile(KERNEL, arch=ARCH, hook=mark, hook_id="mark-1")
    assert (again.hit, again.key, again.data) == (True, res.key, res.data)
    assert len(seen) == 1  # a hit serves what the hook made, without running it


class HookFailed(Exception):
    pass


def test_a_raising_hook_fails_the_compile_and_publishes_nothing(jit):
    def fail(data):
        raise HookFailed("no")

    with pytest.raises(HookFailed):
        jit.compile(KERNEL, arch=ARCH, hook=fail, hook_id="fail-1")
    kept = jit.compile(KERNEL, arch=ARCH, hook=lambda data: None, hook_id="fail-1")
    assert not kept.hit


def test_the_hook_id_is_in_the_key(jit):
    plain = jit.compile(KERNEL, arch=ARCH)
    one = jit.compile(KERNEL, arch=ARCH, hook=lambda data: None, hook_id="keep-1")
    two = jit.compile(KERNEL, arch=ARCH, hook=lambda data: None, hook_id="keep-2")
    assert (one.hit, two.hit) == (False, False)
    assert len({plain.key, one.key, two.key}) == 3


def test_extra_signature_is_in_the_key(jit):
    plain = jit.compile(KERNEL, arch=ARCH)
    v1 = jit.compile(KERNEL, arch=ARCH, extra_signature="weights-v1")
    assert not v1.hit and v1.key != plain.key
    v2 = jit.compile(KERNEL, arch=ARCH, extra_signature="weights-v2")
    assert not v2.hit and v2.key not in (plain.key, v1.key)
    assert jit.compile(KERNEL, arch=ARCH, extra_signature="weights-v1").key == v1.key


def entry_of(store, key):
    """The metadata.json of entry key, parsed, and its directory."""
    [meta] = [p for p in pathlib.Path(store).rglob("metadata.json") if p.parent.name == key]
    # the document, stored compressed or plain (docs/store.md)
    text = subprocess.run(["zstd", "-d", "-c", "-q", "-f", str(meta)], check=True,
                          stdout=subprocess.PIPE).stdout
    return json.loads(text), meta.parent


def kept_text(doc, entry, name):
    """A file the entry keeps, as text: stored zstd-compressed where its
    record in metadata.json says so (docs/store.md)."""
    data = (entry / name).read_bytes()
    if "zstd" in doc["files"][name]:
        data = subprocess.run(["zstd", "-d", "-c", "-q"], input=data, check=True,
                              stdout=subprocess.PIPE).stdout
    return data.decode()


def test_an_entry_keeps_its_source_and_the_request(jit, store):
    res = jit.compile(KERNEL, arch=ARCH, name="add_one.cu", extra_signature="v1",
                      hook=lambda data: None, hook_id="keep-1")
    doc, entry = entry_of(store, res.key)
    assert doc["jit"] == {"name": "add_one.cu", "source": "source.cu",
                          "extra_signature": "v1", "hook": "keep-1"}
    assert kept_text(doc, entry, "source.cu") == KERNEL
    assert doc["files"]["source.cu"]["sha256"] == hashlib.sha256(KERNEL.encode()).hexdigest()


def test_nvrtc_keys_runs_hooks_and_keeps_the_source_too(store, monkeypatch):
    monkeypatch.setenv("PYJIT_JIT_COMPILER", "nvrtc")
    with cudajitcache.Jit("PYJIT") as jit:
        plain = jit.compile(KERNEL, arch=ARCH, name="add_one.cu")
        hooked = jit.compile(KERNEL, arch=ARCH, name="add_one.cu", extra_signature="v1",
                             hook=lambda data: b"X" + data, hook_id="mark-1")
        again = jit.compile(KERNEL, arch=ARCH, name="add_one.cu", extra_signature="v1",
                            hook=lambda data: b"Y" + data, hook_id="mark-1")
    assert (plain.hit, hooked.hit, again.hit) == (False, False, True)
    assert hooked.key != plain.key and hooked.data == b"X" + plain.data == again.data
    doc, entry = entry_of(store, hooked.key)
    assert doc["jit"]["hook"] == "mark-1" and kept_text(doc, entry, "source.cu") == KERNEL


TILED = """
#include "tile.h"
extern "C" __global__ void scale(float *a) { a[threadIdx.x] *= FACTOR; }
"""


def test_nvrtc_repeats_from_memory_only_where_its_headers_still_hold(tmp_path, monkeypatch):
    """The memory tier of one handle: NVRTC's relative include directory
    (-Iinc) resolves against the working directory; an edit, another
    directory and a header that comes to shadow are each a miss with what
    NVRTC makes there, and the first directory hits again."""
    monkeypatch.setenv("PYJIT_JIT_COMPILER", "nvrtc")
    for d, factor in (("a", "2.0f"), ("b", "3.0f")):
        (tmp_path / d / "inc").mkdir(parents=True)
        (tmp_path / d / "inc" / "tile.h").write_text("#define FACTOR %s\n" % factor)
    (tmp_path / "a" / "early").mkdir()
    opts = ["-Iearly", "-Iinc"]
    with cudajitcache.Jit("PYJIT") as jit:
        def compile_in(d):
            monkeypatch.chdir(tmp_path / d)
            return jit.compile(TILED, arch=ARCH, name="tiled.cu", options=opts)
        # the third is checked in a generation of the change signal, which
        # the handle's second lookup opens (changes.c): b is asked after it
        a1, a2, a3 = compile_in("a"), compile_in("a"), compile_in("a")
        b1 = compile_in("b")
        a4 = compile_in("a")
        (tmp_path / "a" / "inc" / "tile.h").write_text("#define FACTOR 5.0f\n")
        edited = compile_in("a")
        (tmp_path / "a" / "early" / "tile.h").write_text("#define FACTOR 9.0f\n")
        shadowed = compile_in("a")
    monkeypatch.setenv("PYJIT_JIT_CACHE_DIR", str(tmp_path / "plain"))
    with cudajitcache.Jit("PYJIT") as plain:
        monkeypatch.chdir(tmp_path / "a")
        want = plain.compile(TILED, arch=ARCH, name="tiled.cu", options=opts)
    assert [r.hit for r in (a1, a2, a3, b1, a4, edited, shadowed)] == [
        False, True, True, False, True, False, False]
    assert a2.data == a1.data == a3.data == a4.data and b1.data != a1.data
    assert edited.data not in (a1.data, b1.data) and shadowed.data == want.data
    assert shadowed.data != edited.data


def test_nvrtc_options_that_write_files_are_not_cached(tmp_path, monkeypatch):
    """An NVRTC option that writes a file of its own compiles every time:
    nothing is kept, nothing served.  Two things refuse it, the rule
    (rules.h, the shim's too) and the watch of NVRTC's file calls (a
    write is unkeyable); this test cannot tell which."""
    monkeypatch.setenv("PYJIT_JIT_COMPILER", "nvrtc")
    monkeypatch.chdir(tmp_path)
    opts = ["--time=timing.csv"]
    with cudajitcache.Jit("PYJIT") as jit:
        first = jit.compile(KERNEL, arch=ARCH, name="add_one.cu", options=opts)
        again = jit.compile(KERNEL, arch=ARCH, name="add_one.cu", options=opts)
    assert (first.hit, again.hit, first.key, again.key) == (False, False, "", "")
    assert first.data == again.data and (tmp_path / "timing.csv").exists()


def test_the_hook_callback_keeps_an_exception_for_compile(jit):
    # what the C side will call, called here directly: an exception must not
    # cross the C frames; it fails the compile (1) and compile() raises it
    def fail(data):
        raise HookFailed(data)

    call = cudajitcache.jit._HookCall(jit._lib, fail)
    assert call.callback(None, b"cubin", 5, None) == 1
    assert isinstance(call.raised, HookFailed) and call.raised.args == (b"cubin",)
    keep = cudajitcache.jit._HookCall(jit._lib, lambda data: None)
    assert keep.callback(None, b"cubin", 5, None) == 0 and keep.raised is None


def test_settings_device_arch_and_close(store):
    jit = cudajitcache.Jit("PYJIT")
    assert jit.setting("CACHE_DIR") == store
    assert jit.setting("COMPILER") == "nvcc"
    with pytest.raises(KeyError, match="NO_SUCH: not a JIT setting"):
        jit.setting("NO_SUCH")
    try:
        assert re.fullmatch(r"sm_\d+a?", jit.device_arch())
    except cudajitcache.CacheError as e:  # no driver or no GPU here
        assert "arch" in str(e)
    jit.close()
    jit.close()
    with pytest.raises(ValueError, match="closed"):
        jit.compile(KERNEL, arch=ARCH)


def test_a_malformed_setting_fails_the_open(monkeypatch):
    monkeypatch.setenv("PYJIT_JIT_DEBUG", "maybe")
    with pytest.raises(cudajitcache.CacheError, match="PYJIT_JIT_DEBUG=maybe"):
        cudajitcache.Jit("PYJIT")


def test_a_missing_library_is_said_clearly(tmp_path):
    missing = str(tmp_path / "libcudajitcache.so")
    script = ("import cudajitcache\n"
              "try:\n    cudajitcache.Jit()\n"
              "except cudajitcache.LibraryNotFound as e:\n    print(e)\n")
    env = dict(os.environ, CJC_JIT_LIBRARY=missing,
               PYTHONPATH=os.path.dirname(os.path.dirname(cudajitcache.__file__)))
    out = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    assert out.startswith("CJC_JIT_LIBRARY=%s: cannot load it" % missing)


def test_kernel_arguments_are_passed_as_their_c_types():
    import ctypes
    from cudajitcache.launch import _argument, _dims, _stream

    class Tensor:  # PyTorch's shape
        def data_ptr(self):
            return 0x7f0000001000

    class Memory:
        ptr = 0x7f0000002000

    class CupyArray:
        data = Memory()

    class Interface:
        __cuda_array_interface__ = {"data": (0x7f0000003000, False), "shape": (4,)}

    def passed(value):
        arg = _argument(value, 0)
        return type(arg), arg.value

    assert passed(7) == (ctypes.c_int, 7)
    assert passed(-2**31) == (ctypes.c_int, -2**31)
    assert passed(2.5) == (ctypes.c_float, 2.5)
    assert passed(True) == (ctypes.c_bool, True)
    assert passed(ctypes.c_int64(2**40)) == (ctypes.c_int64, 2**40)
    assert passed(Tensor()) == (ctypes.c_void_p, 0x7f0000001000)
    assert passed(CupyArray()) == (ctypes.c_void_p, 0x7f0000002000)
    assert passed(Interface()) == (ctypes.c_void_p, 0x7f0000003000)
    with pytest.raises(OverflowError, match="does not fit a 32-bit int.*c_void_p"):
        _argument(0x7f0000001000, 0)  # a data_ptr() passed as an int
    with pytest.raises(TypeError, match="argument 3: cannot pass str"):
        _argument("x", 3)
    assert _dims(4, "grid") == (4, 1, 1) and _dims((2, 3), "block") == (2, 3, 1)
    for bad in (0, (1, 1, 1, 1), (2.0,), ()):
        with pytest.raises(ValueError, match="grid"):
            _dims(bad, "grid")

    class TorchStream:
        cuda_stream = 0x1234

    assert _stream(None) is None and _stream(TorchStream()) == 0x1234 and _stream(0) is None
    with pytest.raises(TypeError, match="stream"):
        _stream("default")


def test_structs_and_tensor_maps_are_passed_by_value():
    import ctypes
    from cudajitcache.launch import _argument

    class Big(ctypes.Structure):  # a large argument struct
        _fields_ = [("v", ctypes.c_int * 2048)]

    big = Big()
    assert _argument(big, 0) is big
    maps = [cudajitcache.TensorMap.new() for _ in range(8)]
    for m in maps:  # the driver's cuTensorMapEncode* want 64-byte alignment; cuda.h has 128
        assert ctypes.sizeof(m) == 128 and ctypes.addressof(m) % 128 == 0
        assert list(m.opaque) == [0] * 16 and _argument(m, 1) is m


def test_load_needs_a_driver_and_says_so(jit):
    res = jit.compile(KERNEL, arch=ARCH, format="ptx")
    with pytest.raises(TypeError, match="a Result of compile"):
        jit.load(res.data)
    try:
        kernel = jit.load(res, "add_one")
    except cudajitcache.CacheError as e:  # CI: no driver, no GPU
        assert "libcuda" in str(e) or "driver" in str(e) or "device" in str(e), str(e)
        return
    assert kernel.name == "add_one"
    with pytest.raises(cudajitcache.CacheError, match="cuModuleGetFunction\\(nothing\\) failed"):
        kernel.module.function("nothing")
    kernel.module.unload()
    with pytest.raises(ValueError, match="unloaded"):
        kernel(1, 1, ())


# Launching through the fake driver (tests/jit/fake_cuda.c), in a Python of
# its own: the library loads libcuda.so.1 once per process, by the
# LD_LIBRARY_PATH the process started with.  The fake records each launch's
# configuration and attributes, and each function attribute set.
FAKE_CUDA_DIR = os.environ.get("CJC_FAKE_CUDA_DIR")
PRELOAD = os.environ.get("LD_PRELOAD")  # a sanitizer's runtime: see store()
LAUNCH_PRELUDE = """
import ctypes, cudajitcache
jit = cudajitcache.Jit("PYJIT")
kernel = jit.load(jit.compile(%r, arch="sm_80"), "add_one")
args = (ctypes.c_void_p(0x7f0000001000), 5)

def attempt(launch, **options):
    try:
        launch(**options)
    except Exception as e:
        print(type(e).__name__ + ": " + str(e))
""" % KERNEL


def fake_launches(tmp_path, script, archs="90"):
    """What script printed, run after LAUNCH_PRELUDE over the fake driver
    of devices archs, and the fake's launch log.  The kernel is compiled
    here first, so that the script's compile is a hit: its Python has the
    sanitizer's runtime preloaded where the library needs it, and nvcc
    must not inherit that."""
    if not FAKE_CUDA_DIR:
        pytest.skip("CJC_FAKE_CUDA_DIR (build/tests/fake_cuda) is not set")
    with cudajitcache.Jit("PYJIT") as jit:
        jit.compile(KERNEL, arch="sm_80")
    log = tmp_path / "launches.log"
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_CUDA_DIR, FAKE_CUDA_ARCHS=archs,
               FAKE_CUDA_LAUNCH_LOG=str(log),
               PYTHONPATH=os.path.dirname(os.path.dirname(cudajitcache.__file__)))
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    out = subprocess.run([sys.executable, "-c", LAUNCH_PRELUDE + script], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert out.returncode == 0, out.stdout.decode()
    return out.stdout.decode(), log.read_text() if log.exists() else ""


def test_a_plain_launch_stays_on_cuLaunchKernel(tmp_path):
    out, log = fake_launches(tmp_path, "kernel(grid=(4, 2), block=128, args=args)\n"
                                       "kernel(8, 32, args, shared_mem=48 * 1024, stream=0x99)\n")
    assert out == ""
    assert log == ("cuLaunchKernel grid 4 2 1 block 128 1 1 shared 0 stream (nil)\n"
                   "cuLaunchKernel grid 8 1 1 block 32 1 1 shared 49152 stream 0x99\n")


@pytest.mark.parametrize("script, expected", [
    ("kernel(grid=(8, 2), block=64, args=args, cluster=(2, 2))\n"
     "kernel(6, 32, args, cluster=3)\n",
     "cuLaunchKernelEx grid 8 2 1 block 64 1 1 shared 0 stream (nil) attrs 1\n"
     "  cluster 2 2 1\n"
     "cuLaunchKernelEx grid 6 1 1 block 32 1 1 shared 0 stream (nil) attrs 1\n"
     "  cluster 3 1 1\n"),
    ("kernel(132, 256, args, cooperative=True, stream=0x42)\n"
     "kernel(132, 256, args, cooperative=False)\n",
     "cuLaunchKernelEx grid 132 1 1 block 256 1 1 shared 0 stream 0x42 attrs 1\n"
     "  cooperative 1\n"
     "cuLaunchKernel grid 132 1 1 block 256 1 1 shared 0 stream (nil)\n"),
], ids=["cluster", "cooperative"])
def test_a_cluster_or_cooperative_launch_passes_exactly_its_attribute(tmp_path, script,
                                                                      expected):
    out, log = fake_launches(tmp_path, script)
    assert (out, log) == ("", expected)


def test_large_shared_memory_sets_the_kernels_limit_first_once(tmp_path):
    out, log = fake_launches(tmp_path, "kernel(4, 128, args, shared_mem=100 * 1024)\n"
                                       "kernel(4, 128, args, shared_mem=64 * 1024)\n"
                                       "kernel(4, 128, args, shared_mem=100 * 1024, cluster=2,"
                                       " cooperative=True)\n"
                                       "kernel(4, 128, args, shared_mem=200 * 1024, cluster=2)\n")
    assert out == ""
    assert log == ("cuFuncSetAttribute 8 102400\n"
                   "cuLaunchKernel grid 4 1 1 block 128 1 1 shared 102400 stream (nil)\n"
                   "cuLaunchKernel grid 4 1 1 block 128 1 1 shared 65536 stream (nil)\n"
                   "cuLaunchKernelEx grid 4 1 1 block 128 1 1 shared 102400 stream (nil) attrs 2\n"
                   "  cluster 2 1 1\n  cooperative 1\n"
                   "cuFuncSetAttribute 8 204800\n"
                   "cuLaunchKernelEx grid 4 1 1 block 128 1 1 shared 204800 stream (nil) attrs 1\n"
                   "  cluster 2 1 1\n")


def test_set_attribute_sets_what_it_names(tmp_path):
    out, log = fake_launches(tmp_path, """
kernel.set_attribute("non_portable_cluster_size_allowed", 1)
kernel.set_attribute("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 150000)
kernel(4, 128, args, shared_mem=150000)
for name, value in (("num_regs", 1), ("no_such", 1), (8, 1), ("required_cluster_width", 1.0),
                    ("required_cluster_width", True), ("required_cluster_width", 2**31)):
    attempt(kernel.set_attribute, name=name, value=value)
""")
    assert log == ("cuFuncSetAttribute 14 1\ncuFuncSetAttribute 8 150000\n"
                   "cuLaunchKernel grid 4 1 1 block 128 1 1 shared 150000 stream (nil)\n")
    said = out.splitlines()
    assert [line.split(":")[0] for line in said] == ["ValueError", "ValueError", "TypeError",
                                                     "TypeError", "TypeError", "ValueError"]
    assert said[0].startswith("ValueError: attribute 'num_regs': expected one of "
                              "cluster_scheduling_policy_preference, max_dynamic_shared")


def test_bad_launch_arguments_raise_before_anything_is_launched(tmp_path):
    out, log = fake_launches(tmp_path, """
for options in ({"cluster": 0}, {"cluster": (1, 1, 1, 1)}, {"cluster": 3}, {"cluster": (2, 3)},
                {"shared_mem": -1}, {"shared_mem": 2**32}, {"shared_mem": 1.5},
                {"shared_mem": 100 * 1024, "cooperative": 1}, {"cooperative": "yes"},
                {"shared_mem": 100 * 1024, "args": ("x",)}, {"shared_mem": 100 * 1024,
                "stream": "default"}):
    attempt(kernel, **dict({"grid": (8, 2), "block": 32, "args": args}, **options))
""")
    assert log == ""
    assert [line.split(":")[0] for line in out.splitlines()] == [
        "ValueError", "ValueError", "ValueError", "ValueError", "ValueError", "ValueError",
        "TypeError", "TypeError", "TypeError", "TypeError", "TypeError"]
    assert ("ValueError: cluster (2, 3, 1) does not divide grid (8, 2, 1): each grid "
            "dimension must be a multiple of the cluster's") in out


def test_what_the_gpu_or_driver_refuses_is_a_cache_error_naming_it(tmp_path):
    out, log = fake_launches(tmp_path, """
attempt(kernel, grid=4, block=32, args=args, cluster=2)
attempt(kernel, grid=4, block=32, args=args, shared_mem=300000)
attempt(kernel.set_attribute, name="max_dynamic_shared_size_bytes", value=300000)
lookup = jit._lib.cjc_jit_driver_symbol
def without_ex(handle, name):  # a driver before CUDA 12.0
    return None if name == b"cuLaunchKernelEx" else lookup(handle, name)
jit._lib.cjc_jit_driver_symbol = without_ex
old = jit.load(jit.compile(%r, arch="sm_80"), "add_one")
attempt(old, grid=4, block=32, args=args, cooperative=True)
old(4, 32, args)
""" % KERNEL, archs="80")
    assert out.splitlines() == [
        "CacheError: cuLaunchKernelEx(add_one) failed: operation not supported (CUresult 801)",
        "CacheError: cuFuncSetAttribute(add_one, max_dynamic_shared_size_bytes=300000) failed: "
        "invalid argument (CUresult 1)",
        "CacheError: cuFuncSetAttribute(add_one, max_dynamic_shared_size_bytes=300000) failed: "
        "invalid argument (CUresult 1)",
        "CacheError: cuLaunchKernelEx: not found in the CUDA driver (libcuda.so.1), which a "
        "cluster or cooperative launch needs: update the driver"]
    assert log.splitlines() == [
        "cuLaunchKernelEx grid 4 1 1 block 32 1 1 shared 0 stream (nil) attrs 1",
        "  cluster 2 1 1", "cuFuncSetAttribute 8 300000", "cuFuncSetAttribute 8 300000",
        "cuLaunchKernel grid 4 1 1 block 32 1 1 shared 0 stream (nil)"]
