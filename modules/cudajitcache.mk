# cudajitcache.mk - GNU Make rules that compile CUDA through the cache.
#
#   include /usr/local/share/cudajitcache/cudajitcache.mk
#
# Variables (set them before or after the include, or on the command line):
#   CJC          the cjc program                     (default: cjc)
#   NVCC         nvcc                                (default: nvcc)
#   CUDA_ARCHS   architecture numbers, e.g. 80 90    (default: 80); each
#                becomes -gencode arch=compute_N,code=sm_N
#   NVCCFLAGS    more flags for every compile
#   CJC_NVCC     "$(CJC) $(NVCC)": prefix nvcc in a project's own rules, or
#                run `make NVCC="$(CJC_NVCC)"`-style builds
#
# Pattern rules: %.o (object), %.fatbin (SASS for every arch, PTX for the
# last), %.cubin and %.ptx (the first arch) from %.cu.  Each writes a
# dependency file <output>.d beside its output; those found are included, so
# editing a header rebuilds exactly what includes it.  Including this file,
# even first, leaves the project's default goal alone.

cjc_default_goal := $(.DEFAULT_GOAL)

CJC ?= cjc
NVCC ?= nvcc
CUDA_ARCHS ?= 80
NVCCFLAGS ?=
CJC_NVCC = $(CJC) $(NVCC)
CJC_GENCODE = $(foreach a,$(CUDA_ARCHS),-gencode=arch=compute_$(a),code=sm_$(a))
CJC_FIRST_ARCH = $(firstword $(CUDA_ARCHS))
CJC_LAST_ARCH = $(lastword $(CUDA_ARCHS))
CJC_DEPFLAGS = -MD -MF $@.d -MP

%.o: %.cu
	$(CJC_NVCC) $(CJC_GENCODE) $(NVCCFLAGS) $(CJC_DEPFLAGS) -c $< -o $@

%.fatbin: %.cu
	$(CJC_NVCC) --fatbin $(CJC_GENCODE) -gencode=arch=compute_$(CJC_LAST_ARCH),code=compute_$(CJC_LAST_ARCH) $(NVCCFLAGS) $(CJC_DEPFLAGS) $< -o $@

%.cubin: %.cu
	$(CJC_NVCC) --cubin -arch=sm_$(CJC_FIRST_ARCH) $(NVCCFLAGS) $(CJC_DEPFLAGS) $< -o $@

%.ptx: %.cu
	$(CJC_NVCC) --ptx -arch=compute_$(CJC_FIRST_ARCH) $(NVCCFLAGS) $(CJC_DEPFLAGS) $< -o $@

# The dependency files of earlier builds, in this directory and two below.
CJC_DEPFILES ?= $(wildcard *.o.d *.fatbin.d *.cubin.d *.ptx.d */*.o.d */*.fatbin.d \
	*/*.cubin.d */*.ptx.d */*/*.o.d */*/*.fatbin.d */*/*.cubin.d */*/*.ptx.d)
-include $(CJC_DEPFILES)

.DEFAULT_GOAL := $(cjc_default_goal)
