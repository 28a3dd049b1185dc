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
  big_argument       an 8 KiB struct passed by value (a ctypes.Structure;
                     drivers before CUDA 12.1 allowed 4 KiB of arguments)
  tensor_map         a tile loaded by TMA through a cudajitcache.TensorMap
                     argument (__grid_constant__ CUtensorMap) that
                     cuTensorMapEncodeTiled filled; sm_90 and later

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
#include <cuda.h>
#include <utility>
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
// out[i] = 2 * a.v[i] + 1, from 8 KiB of arguments
struct big_args { int v[2048]; };
extern "C" __global__ void big_argument(big_args a, int *out)
{
    for (int i = threadIdx.x; i < 2048; i += blockDim.x)
        out[i] = 2 * a.v[i] + 1;
}
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // TMA: sm_90 and later
#include <cuda/barrier>
// out = the 16 x 16 tile at column x, row y of the map's tensor, loaded by TMA
extern "C" __global__ void tma_tile(const __grid_constant__ CUtensorMap map, int x, int y,
                                    int *out)
{
    using barrier = cuda::barrier<cuda::thread_scope_block>;
    __shared__ alignas(128) int tile[16][16];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ barrier bar;
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
        cuda::device::experimental::fence_proxy_async_shared_cta();
    }
    __syncthreads();
    barrier::arrival_token token;
    if (threadIdx.x == 0) {
        cuda::device::experimental::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, x, y,
                                                                             bar);
        token = cuda::device::barrier_arrive_tx(bar, 1, sizeof tile);
    } else {
        token = bar.arrive();
    }
    bar.wait(std::move(token));
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        out[i] = tile[i / 16][i % 16];
}
#endif
"""

MULTIPROCESSOR_COUNT, CC_MAJOR, CC_MINOR, SHARED_OPTIN = 16, 75, 76, 97  # CUdevice_attribute
INT32 = 3  # CU_TENSOR_MAP_DATA_TYPE_INT32


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


def big_argument(gpu, module):
    class BigArgs(ctypes.Structure):
        _fields_ = [("v", ctypes.c_int * 2048)]
    args = BigArgs()
    for i in range(2048):
        args.v[i] = 7 * i - 3
    out = gpu.alloc(2048)
    module.function("big_argument")(1, 256, (args, out))
    return check("big_argument", gpu.read(out, 2048), [2 * (7 * i - 3) + 1 for i in range(2048)])


def tensor_map(gpu, module, cudajitcache):
    n, x, y = 64, 16, 32
    data = gpu.alloc(n * n)
    host = (ctypes.c_int * (n * n))(*range(n * n))
    gpu.call("cuMemcpyHtoD_v2", ctypes.c_uint64(data.value), host, ctypes.c_size_t(4 * n * n))
    tmap = cudajitcache.TensorMap.new()
    gpu.call("cuTensorMapEncodeTiled", ctypes.byref(tmap), INT32, 2, data,
             (ctypes.c_uint64 * 2)(n, n), (ctypes.c_uint64 * 1)(4 * n),
             (ctypes.c_uint32 * 2)(16, 16), (ctypes.c_uint32 * 2)(1, 1), 0, 0, 0, 0)
    out = gpu.alloc(256)
    module.function("tma_tile")(1, 128, (tmap, x, y, out))
    ok = check("tensor_map", gpu.read(out, 256),
               [(y + i // 16) * n + x + i % 16 for i in range(256)])
    gpu.free(data)
    return ok


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
        import cudajitcache  # pylint: disable=import-outside-toplevel
        results.append(attempt("tensor_map", tensor_map, gpu, module, cudajitcache))
    else:
        print("SKIP cluster: sm_%d%d has no clusters" % (major, minor))
        print("SKIP cluster_dims: the same")
        print("SKIP tensor_map: sm_%d%d has no TMA" % (major, minor))
    results.append(attempt("big_argument", big_argument, gpu, module))
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
