# cudajitcache.mk - GNU Make rules that compile CUDA through the cache.
#
#   include $(or $(shell pkg-config --variable=makeinclude cudajitcache),$(error \
#     pkg-config finds no cudajitcache.pc: add PREFIX/lib/pkgconfig to PKG_CONFIG_PATH))
#   include /usr/local/share/cudajitcache/cudajitcache.mk    # or its path
#
# pkg-config searches /usr/local and /usr; for another install prefix,
# PKG_CONFIG_PATH=PREFIX/lib/pkgconfig.  The $(or ...,$(error ...)) form
# stops make with that advice where pkg-config finds nothing (a bare
# `include $(shell ...)` includes nothing, and make says only "No rule to
# make target").
#
# Variables (set them before or after the include, or on the command line,
# except CJC_OBJDIR and CJC_SRCDIR: before the include):
#   CJC          the cjc program                     (default: cjc)
#   NVCC         nvcc                                (default: nvcc)
#   CUDA_ARCHS   architecture numbers, e.g. 80 90    (default: 80); each
#                becomes -gencode arch=compute_N,code=sm_N
#   NVCCFLAGS    more flags for every compile
#   CJC_NVCC     "$(CJC) $(NVCC)": prefix nvcc in a project's own rules, or
#                run `make NVCC="$(CJC_NVCC)"`-style builds
#   CJC_OBJDIR   a directory for the outputs, e.g. obj: obj/x.o from x.cu
#                (from $(CJC_SRCDIR)/x.cu when CJC_SRCDIR is set, e.g. src);
#                subdirectories are kept (obj/a/x.o from a/x.cu) and made
#   CJC_DEPFILES the dependency files to read back (default: every *.o.d,
#                *.fatbin.d, *.cubin.d and *.ptx.d below the directory make
#                runs in, at any depth, .git excluded)
#
# Pattern rules: %.o (object), %.fatbin (SASS for every arch, PTX for the
# last), %.cubin and %.ptx (the first arch) from %.cu, in the same
# directory, and, with CJC_OBJDIR, from the sources to that directory.
# More directory pairs: $(eval $(call cjc_rules,OUT-DIR,SRC-DIR)).  Each rule
# writes a dependency file <output>.d beside its output; those found are
# included, so editing a header rebuilds exactly what includes it.
# Including this file, even first, leaves the project's default goal alone.

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

# cjc_rules OUT-DIR,SRC-DIR: the four pattern rules from SRC-DIR/%.cu (or
# %.cu) to OUT-DIR/%.<kind> (or %.<kind>), making the output's directory.
define cjc_rules
$(if $(1),$(1)/)%.o: $(if $(2),$(2)/)%.cu
	@mkdir -p $$(@D)
	$$(CJC_NVCC) $$(CJC_GENCODE) $$(NVCCFLAGS) $$(CJC_DEPFLAGS) -c $$< -o $$@

$(if $(1),$(1)/)%.fatbin: $(if $(2),$(2)/)%.cu
	@mkdir -p $$(@D)
	$$(CJC_NVCC) --fatbin $$(CJC_GENCODE) -gencode=arch=compute_$$(CJC_LAST_ARCH),code=compute_$$(CJC_LAST_ARCH) $$(NVCCFLAGS) $$(CJC_DEPFLAGS) $$< -o $$@

$(if $(1),$(1)/)%.cubin: $(if $(2),$(2)/)%.cu
	@mkdir -p $$(@D)
	$$(CJC_NVCC) --cubin -arch=sm_$$(CJC_FIRST_ARCH) $$(NVCCFLAGS) $$(CJC_DEPFLAGS) $$< -o $$@

$(if $(1),$(1)/)%.ptx: $(if $(2),$(2)/)%.cu
	@mkdir -p $$(@D)
	$$(CJC_NVCC) --ptx -arch=compute_$$(CJC_FIRST_ARCH) $$(NVCCFLAGS) $$(CJC_DEPFLAGS) $$< -o $$@
endef

$(eval $(call cjc_rules,,))
ifneq ($(strip $(CJC_OBJDIR)),)
$(eval $(call cjc_rules,$(patsubst %/,%,$(strip $(CJC_OBJDIR))),$(patsubst %/,%,$(strip $(CJC_SRCDIR)))))
endif

# The dependency files of earlier builds, at any depth.
CJC_DEPFILES ?= $(shell find . -name .git -prune -o -type f \( -name '*.o.d' -o -name '*.fatbin.d' \
	-o -name '*.cubin.d' -o -name '*.ptx.d' \) -print 2>/dev/null)
-include $(CJC_DEPFILES)

.DEFAULT_GOAL := $(cjc_default_goal)
