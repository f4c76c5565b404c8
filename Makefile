# rownorm.h / muon.h: build, test, install.
#   make test            every test, every variant (scalar, AVX2, AVX-512, bf16 where the CPU has
#                        AVX512-BF16, C++, CBLAS, ASan+UBSan)
#   make install PREFIX=/usr/local
# The headers need nothing from this file: copy them and #define X_IMPLEMENTATION once.

.DEFAULT_GOAL := all
CC      ?= cc
CXX     ?= c++
PREFIX  ?= /usr/local
WARN    := -Wall -Wextra -Wpedantic -Werror -Wshadow
LDLIBS  := -lm
B       := build
ARCH    := $(shell uname -m)

# What this machine has: reported, never required.
HAVE_AVX512 := $(shell grep -q -w avx512f /proc/cpuinfo 2>/dev/null && echo 1)
HAVE_BF16   := $(shell grep -q -w avx512_bf16 /proc/cpuinfo 2>/dev/null && echo 1)
HAVE_AMX    := $(shell grep -q -w amx_bf16 /proc/cpuinfo 2>/dev/null && echo 1)
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null)
HAVE_BLAS   := $(shell printf '#include <cblas.h>\nint main(void){float a=1,b=1,c=0;cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1.f,&a,1,&b,1,0.f,&c,1);return c!=1.f;}\n' \
                 | $(CC) -x c - -o /dev/null $(BLAS_CFLAGS) $(BLAS_LIBS) 2>/dev/null && echo 1)
HAVE_OMP    := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo 1)
OMP         := $(if $(HAVE_OMP),-fopenmp)

ifeq ($(ARCH),x86_64)
SIMD2   := -mavx2 -mfma
SIMD512 := -mavx512f -mavx2 -mfma
else
SIMD2   :=
SIMD512 :=
endif

TEST_SRCS := $(wildcard tests/test_*.c)
TEST_NAMES := $(basename $(notdir $(TEST_SRCS)))
HEADERS := rownorm.h muon.h
HEADER_DEPS := $(HEADERS)
# ASan + UBSan: the one set of sanitizer flags of every sanitized build (the asan variant, the
# trainer's *_asan tests). Placed after flags with -O2 (GPT_CFLAGS), its -O1 wins.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

# variant -> compiler and flags
V_scalar_CC  := $(CC)
V_scalar_FL  := -std=c99 -O2 -DRN_NO_SIMD -DMUON_NO_SIMD
V_avx2_CC    := $(CC)
V_avx2_FL    := -std=c99 -O2 $(SIMD2) $(OMP)
V_avx512_CC  := $(CC)
V_avx512_FL  := -std=c99 -O2 $(SIMD512) $(OMP)
V_cxx_CC     := $(CXX)
V_cxx_FL     := -x c++ -std=c++11 -O2 $(SIMD2)
V_cblas_CC   := $(CC)
V_cblas_FL   := -std=c99 -O2 $(SIMD2) -DRN_USE_CBLAS -DMUON_USE_CBLAS $(BLAS_CFLAGS)
V_cblas_LIBS := $(BLAS_LIBS)
V_asan_CC    := $(CC)
V_asan_FL    := -std=c99 $(SAN_FLAGS) $(SIMD2) $(OMP)
# the bf16 kernels (vdpbf16ps and AMX tiles): built where the compiler targets them, run where
# the CPU has AVX512-BF16 (AMX is used where it also has AMX-BF16 and the kernel grants it)
SIMD_BF16    := -mavx512f -mavx512bw -mavx512vl -mavx512bf16 -mamx-tile -mamx-bf16 $(SIMD2)
V_bf16_CC    := $(CC)
V_bf16_FL    := -std=c99 -O2 $(SIMD_BF16) $(OMP)
BF16_TESTS   := test_muon_bf16 test_muon test_muon_gemm test_hostile_muon test_edges_muon
# the bf16 suite again under ASan/UBSan (the AMX engine's packing and tile loads), and the GEMM
# suite with the AVX-512 kernels (the asan variant is AVX2)
V_bf16asan_CC := $(CC)
V_bf16asan_FL := -std=c99 $(SAN_FLAGS) $(SIMD_BF16) $(OMP)
HAVE_BF16_CC := $(shell echo 'int main(void){return 0;}' | $(CC) -mavx512bf16 -mamx-tile -mamx-bf16 -x c - -o /dev/null 2>/dev/null && echo 1)
# the exact diameter's int8 screen on its AVX512-VNNI kernel (vpdpbusd) and the vector
# quantiser: the rownorm suites built where the compiler targets it, run where the CPU has it,
# and test_rownorm again under ASan/UBSan (the int8 panels' loads and the tile's row of estimates)
SIMD_VNNI     := -mavx512f -mavx512bw -mavx512vl -mavx512vnni $(SIMD2)
V_vnni_CC     := $(CC)
V_vnni_FL     := -std=c99 -O2 $(SIMD_VNNI) $(OMP)
V_vnniasan_CC := $(CC)
V_vnniasan_FL := -std=c99 $(SAN_FLAGS) $(SIMD_VNNI) $(OMP)
VNNI_TESTS    := test_rownorm test_rownorm_shard test_edges_rownorm
HAVE_VNNI     := $(shell grep -q -w avx512_vnni /proc/cpuinfo 2>/dev/null && echo 1)
HAVE_VNNI_CC  := $(shell echo 'int main(void){return 0;}' | $(CC) -mavx512vnni -mavx512bw -x c - -o /dev/null 2>/dev/null && echo 1)
# rownorm.h for single-precision FPUs (RN_FLOAT_ARITH: the RowNorm rows' arithmetic in float):
# the rownorm suites with their float64 references, run everywhere
V_rnfloat_CC := $(CC)
V_rnfloat_FL := -std=c99 -O2 -DRN_FLOAT_ARITH $(OMP)
RNFLOAT_TESTS := test_rownorm test_edges_rownorm test_rownorm_shard test_rownorm_float

# the GEMM suite with small cache blocks (many row blocks, k blocks and column chunks on small
# matrices; SSYRK's panels read in place meet every block edge), AVX-512 where the CPU has it
V_smallblk_CC := $(CC)
V_smallblk_FL := -std=c99 -O2 $(if $(HAVE_AVX512),$(SIMD512),$(SIMD2)) $(OMP) -DMUON_GEMM_MC=70 -DMUON_GEMM_KC=37 -DMUON_GEMM_NC=96
SMALLBLK_TESTS := test_muon_gemm

# llm.c's flags (-Ofast = -O3 -ffast-math: no NaN/Inf assumed, reassociation, contraction,
# reciprocal approximations): the input checks must still hold (they test exponent bits), so the
# hostile-input and edge suites run here, with the rownorm suites whose checks are not bit-exact
V_fastmath_CC := $(CC)
V_fastmath_FL := -std=c99 -Ofast -march=native $(OMP)
FASTMATH_TESTS := test_hostile_muon test_edges_muon test_edges_rownorm

VARIANTS := scalar avx2 cxx asan
ifeq ($(ARCH),x86_64)
VARIANTS += avx512
endif
ifeq ($(HAVE_BLAS),1)
VARIANTS += cblas
endif
# avx512 binaries are built always on x86_64 but run only where the CPU has AVX-512F.
RUN_VARIANTS := $(filter-out $(if $(HAVE_AVX512),,avx512),$(VARIANTS))

define variant_rule
$(B)/$(1)/%: tests/%.c tests/test.h $(HEADER_DEPS) | $(B)/$(1)
	$$(V_$(1)_CC) $$(V_$(1)_FL) $(WARN) -DTEST_VARIANT='"$(1)"' -I. -o $$@ $$< $$(V_$(1)_LIBS) $(LDLIBS)
$(B)/$(1):
	@mkdir -p $$@
endef
$(foreach v,$(VARIANTS),$(eval $(call variant_rule,$(v))))

TEST_BINS := $(foreach v,$(VARIANTS),$(addprefix $(B)/$(v)/,$(TEST_NAMES)))
RUN_BINS  := $(foreach v,$(RUN_VARIANTS),$(addprefix $(B)/$(v)/,$(TEST_NAMES)))
$(eval $(call variant_rule,rnfloat))
$(eval $(call variant_rule,smallblk))
SMALLBLK_BINS := $(addprefix $(B)/smallblk/,$(SMALLBLK_TESTS))
TEST_BINS += $(SMALLBLK_BINS)
RUN_BINS  += $(SMALLBLK_BINS)
RNFLOAT_BINS := $(addprefix $(B)/rnfloat/,$(RNFLOAT_TESTS))
TEST_BINS += $(RNFLOAT_BINS)
RUN_BINS  += $(RNFLOAT_BINS)
$(eval $(call variant_rule,fastmath))
FASTMATH_BINS := $(addprefix $(B)/fastmath/,$(FASTMATH_TESTS))
TEST_BINS += $(FASTMATH_BINS)
RUN_BINS  += $(FASTMATH_BINS)
ifeq ($(ARCH)$(HAVE_BF16_CC),x86_641)
$(eval $(call variant_rule,bf16))
$(eval $(call variant_rule,bf16asan))
BF16_BINS := $(addprefix $(B)/bf16/,$(BF16_TESTS)) $(B)/bf16asan/test_muon_bf16 $(B)/bf16asan/test_muon_gemm
TEST_BINS += $(BF16_BINS)
RUN_BINS  += $(if $(HAVE_BF16),$(BF16_BINS))
endif
ifeq ($(ARCH)$(HAVE_VNNI_CC),x86_641)
$(eval $(call variant_rule,vnni))
$(eval $(call variant_rule,vnniasan))
VNNI_BINS := $(addprefix $(B)/vnni/,$(VNNI_TESTS)) $(B)/vnniasan/test_rownorm
TEST_BINS += $(VNNI_BINS)
RUN_BINS  += $(if $(HAVE_VNNI),$(VNNI_BINS))
endif

# The example trainer adds its own tests (GPT_TEST_BINS) and targets (demo) here.
# This fragment, tests/reliability.mk and bench/bench.mk (at the end) are part of the repository:
# plain `include`, so a missing one is an error (none is optional or generated: no `-include`).
GPT_TEST_BINS :=
include examples/gpt/gpt.mk

.PHONY: all test test-build config install uninstall clean
all: test-build

config:
	@echo "config: arch=$(ARCH) avx512=$(if $(HAVE_AVX512),yes,no) vnni=$(if $(HAVE_VNNI),yes,no) openblas=$(if $(HAVE_BLAS),yes,no) openmp=$(if $(HAVE_OMP),yes,no)"
	@echo "config: test variants built: $(VARIANTS); run: $(RUN_VARIANTS)"
	@echo "config: bf16 kernels: compiler $(if $(HAVE_BF16_CC),yes,no), cpu avx512_bf16 $(if $(HAVE_BF16),yes,no), amx_bf16 $(if $(HAVE_AMX),yes,no): $(if $(and $(HAVE_BF16_CC),$(HAVE_BF16)),$(BF16_TESTS) run,not run)"
	@echo "config: diameter int8 screen (AVX512-VNNI): compiler $(if $(HAVE_VNNI_CC),yes,no), cpu avx512_vnni $(if $(HAVE_VNNI),yes,no): $(if $(and $(HAVE_VNNI_CC),$(HAVE_VNNI)),$(VNNI_TESTS) run,not run (the int8 screen's logic runs in every variant through its scalar kernel))"

test-build: $(TEST_BINS) $(GPT_TEST_BINS)

test: config test-build
	@UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 OMP_NUM_THREADS=2 \
	    ./tests/run.sh $(RUN_BINS) $(GPT_TEST_BINS) tests/readme_examples.sh

install:
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/lib/cmake/rownorm
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/
	install -m 644 cmake/rownorm.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 cmake/rownormConfig.cmake cmake/rownormConfigVersion.cmake $(DESTDIR)$(PREFIX)/lib/cmake/rownorm/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/include/,$(HEADERS)) $(DESTDIR)$(PREFIX)/lib/pkgconfig/rownorm.pc
	rm -rf $(DESTDIR)$(PREFIX)/lib/cmake/rownorm

clean:
	rm -rf $(B)
include tests/reliability.mk
include bench/bench.mk
