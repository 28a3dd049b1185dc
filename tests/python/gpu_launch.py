#!/usr/bin/env python3
"""gpu_launch.py - the Python package's launches that need a real GPU.

    python3 tests/python/gpu_launch.py BUILD-DIR-OR-PREFIX

Compiles (for the current device's arch) and launches, checking what each
kernel computed:

  cluster            a runtime cluster=(4, 1, 1) launch (cuLaunchKernelEx):
                     each block reads its neighbour's shared memory through
                     the cluster (cg::this_cluster(), map_shared_rank,
                     cluster.sync()); sm_90 and later
  cluster_dims       a __cluster_dims__(2, 1, 1) kernel launched plainly
  cooperative        cooperative=True: cg::this_grid().sync() over one block
                     per multiprocessor, each thread reading what another
                     block wrote before the sync
  big_shared         100 KiB of dynamic shared memory (the kernel's limit
                     set by the package first); sm_80 and later
  family_arch        on sm_100 and later, the cluster kernel compiled for
                     the family arch (sm_100f) instead of sm_100a

Prints one line per case, "PASS name", "FAIL name: what differed" or "SKIP
name: why".  Exits 1 when one failed, 125 when there is no GPU, else 0.

BUILD-DIR-OR-PREFIX: a build tree (its src/jit/libcudajitcache.so and this
checkout's python/) or an installed prefix (the cudajitcache package under
it, which finds its own library).  nvcc is the one on PATH, else
/usr/local/cuda/bin/nvcc; the store is a temporary directory.
"""
import ctypes
import glob
import os
import shutil
import sys
import tempfile

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // clusters: sm_90 and later
// out[b] = 1000 * (the next block's rank in the cluster) + 10 * the
// cluster's size + block 0's rank, each read from the other's shared memory
extern "C" __global__ void cluster_ranks(int *out)
{
    __shared__ int rank;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0)
        rank = (int)cluster.block_rank();
    cluster.sync();
    if (threadIdx.x == 0) {
        unsigned next = (cluster.block_rank() + 1) % cluster.num_blocks();
        out[blockIdx.x] = *cluster.map_shared_rank(&rank, next) * 1000 +
                          (int)cluster.num_blocks() * 10 + *cluster.map_shared_rank(&rank, 0);
    }
    cluster.sync();  // the others may still read this block's shared memory
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed_cluster(int *out)
{
    if (threadIdx.x == 0)
        out[blockIdx.x] = (int)cg::this_cluster().num_blocks();
}
#endif

// out[i] = data[i + 1], written by the next thread (another block's for a
// block's last thread) before the grid's sync
extern "C" __global__ void grid_rotate(int *data, int *out, int n)
{
    cg::grid_group grid = cg::this_grid();
    int i = (int)grid.thread_rank();
    if (i < n)
        data[i] = 3 * i + 1;
    grid.sync();
    if (i < n)
        out[i] = data[(i + 1) % n];
}

// out[b * words + i] = words - 1 - i, through words ints of dynamic shared memory
extern "C" __global__ void big_shared(int *out, int words)
{
    extern __shared__ int buf[];
    for (int i = threadIdx.x; i < words; i += blockDim.x)
        buf[i] = i;
    __syncthreads();
    for (int i = threadIdx.x; i < words; i += blockDim.x)
        out[blockIdx.x * words + i] = buf[words - 1 - i];
}
"""

MULTIPROCESSOR_COUNT, CC_MAJOR, CC_MINOR, SHARED_OPTIN = 16, 75, 76, 97  # CUdevice_attribute


def use(where):
    """Imports cudajitcache from a build tree or an installed prefix."""
    library = os.path.join(where, "src", "jit", "libcudajitcache.so")
    if os.path.exists(library):
        os.environ["CJC_JIT_LIBRARY"] = library
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    else:
        found = glob.glob(os.path.join(where, "**", "cudajitcache", "__init__.py"), recursive=True)
        if not found:
            sys.exit("%s: neither a build tree nor a prefix with the cudajitcache package" % where)
        sys.path.insert(0, os.path.dirname(os.path.dirname(found[0])))


class Gpu:
    """The few driver calls the checks need, in the Jit's context."""

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")  # the library's own, already loaded
        device = ctypes.c_int()
        self.call("cuCtxGetDevice", ctypes.byref(device))
        self.device = device.value

    def call(self, name, *args):
        result = getattr(self.cuda, name)(*args)
        if result:
            raise RuntimeError("%s failed: CUresult %d" % (name, result))

    def attribute(self, which):
        value = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), which, self.device)
        return value.value

    def alloc(self, ints):
        pointer = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(4 * ints))
        self.call("cuMemsetD32_v2", pointer, ctypes.c_uint(0xdeadbeef), ctypes.c_size_t(ints))
        return ctypes.c_void_p(pointer.value)

    def read(self, pointer, ints):
        """The ints at pointer once the GPU is done; frees them."""
        self.call("cuCtxSynchronize")
        host = (ctypes.c_int * ints)()
        self.call("cuMemcpyDtoH_v2", host, ctypes.c_uint64(pointer.value),
                  ctypes.c_size_t(4 * ints))
        self.free(pointer)
        return list(host)

    def free(self, pointer):
        self.call("cuMemFree_v2", ctypes.c_uint64(pointer.value))


def check(name, got, expected):
    """PASS or FAIL name; True when got is expected."""
    if got == expected:
        print("PASS %s" % name)
        return True
    wrong = next(i for i, (g, e) in enumerate(zip(got, expected)) if g != e)
    print("FAIL %s: [%d] is %d, expected %d" % (name, wrong, got[wrong], expected[wrong]))
    return False


def cluster(gpu, module, name="cluster"):
    blocks, size = 8, 4
    out = gpu.alloc(blocks)
    module.function("cluster_ranks")(blocks, 64, (out,), cluster=(size, 1, 1))
    expected = [(b % size + 1) % size * 1000 + size * 10 for b in range(blocks)]
    return check(name, gpu.read(out, blocks), expected)


def cluster_dims(gpu, module):
    out = gpu.alloc(6)
    module.function("fixed_cluster")(6, 32, (out,))
    return check("cluster_dims", gpu.read(out, 6), [2] * 6)


def cooperative(gpu, module):
    n = gpu.attribute(MULTIPROCESSOR_COUNT) * 256
    data, out = gpu.alloc(n), gpu.alloc(n)
    module.function("grid_rotate")(n // 256, 256, (data, out, n), cooperative=True)
    expected = [3 * ((i + 1) % n) + 1 for i in range(n)]
    ok = check("cooperative", gpu.read(out, n), expected)
    gpu.free(data)
    return ok


def big_shared(gpu, module):
    words, blocks = 100 * 1024 // 4, 2
    out = gpu.alloc(words * blocks)
    module.function("big_shared")(blocks, 256, (out, words), shared_mem=4 * words)
    return check("big_shared", gpu.read(out, words * blocks),
                 [words - 1 - i for i in range(words)] * blocks)


def compiled(jit, arch):
    """SOURCE compiled for arch, loaded."""
    return jit.load(jit.compile(SOURCE, arch=arch))


def attempt(name, case, *args):
    """case(*args), or FAIL name with what was raised (a launch refused)."""
    try:
        return case(*args)
    except Exception as e:  # pylint: disable=broad-except
        print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        return False


def run(jit):
    """Each case's PASS, FAIL or SKIP; False when one failed."""
    module = jit.load(jit.compile(SOURCE, name="gpu_launch.cu"))  # makes a context current
    gpu = Gpu()
    major, minor = gpu.attribute(CC_MAJOR), gpu.attribute(CC_MINOR)
    results = []
    if major >= 9:
        results += [attempt("cluster", cluster, gpu, module),
                    attempt("cluster_dims", cluster_dims, gpu, module)]
    else:
        print("SKIP cluster: sm_%d%d has no clusters" % (major, minor))
        print("SKIP cluster_dims: the same")
    results.append(attempt("cooperative", cooperative, gpu, module))
    if gpu.attribute(SHARED_OPTIN) >= 100 * 1024:
        results.append(attempt("big_shared", big_shared, gpu, module))
    else:
        print("SKIP big_shared: sm_%d%d has less than 100 KiB per block" % (major, minor))
    if major >= 10:
        family = "sm_%d%df" % (major, minor)
        name = "family_arch (%s)" % family
        results.append(attempt(name, lambda: cluster(gpu, compiled(jit, family), name)))
    else:
        print("SKIP family_arch: sm_%d%d has no family arch" % (major, minor))
    return all(results)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_launch.py BUILD-DIR-OR-PREFIX")
    use(sys.argv[1])
    import cudajitcache
    print("cudajitcache %s from %s" % (cudajitcache.__version__,
                                      os.path.dirname(cudajitcache.__file__)))
    store = tempfile.mkdtemp(prefix="cjc-gpu-launch.")
    os.environ["GPULAUNCH_JIT_CACHE_DIR"] = store
    if not shutil.which("nvcc"):
        os.environ.setdefault("CJC_JIT_NVCC", "/usr/local/cuda/bin/nvcc")
    try:
        with cudajitcache.Jit("GPULAUNCH") as jit:
            try:
                arch = jit.device_arch()
            except cudajitcache.CacheError as e:
                print("SKIP all: no GPU (%s)" % e)
                return 125
            print("device arch %s" % arch)
            return 0 if run(jit) else 1
    finally:
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
