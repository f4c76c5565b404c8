# tests/reliability.mk - the reliability checks, included at the end of the Makefile.
# docs/reliability.md says what each one covers. Every check runs in `make test` through a
# wrapper in tests/ that prints one "NAME: N passed, N failed" line (tests/run.sh sums it):
#   tests/rel_two_tu.sh     gcc/clang x C99/C11/C++11/C++17 x extern/static, two TUs, -Werror
#   tests/rel_clang.sh      the whole test suite built with clang (C11 and C++17)
#   tests/qemu/run.sh       the whole test suite for aarch64 (NEON and scalar) under qemu-user
#   tests/rel_valgrind.sh   valgrind memcheck of the scalar builds of a subset
#   tests/fuzz/run.sh       every libFuzzer target for FUZZ_SECONDS (CI: 15 s each)
#   tests/rel_ckpt_kill.sh  SIGKILL in the middle of a trainer checkpoint write (killshim.c)
#   tests/rel_windows.sh    both implementations after <windows.h> (mingw-w64, C99 and C++11), the
#                           test suite built for Windows and run under wine
#   tests/rel_cxx_strict.sh both implementations as C++20 under an engine's warning set, -Werror
#   tests/rel_nostdio.sh    neither implementation references stdio or assert (nm -u; firmware)
#   tests/rel_stack.sh      every public function's worst-case stack within tests/stack_budget.txt
#                           (gcc -fcallgraph-info=su, scalar/AVX2/AVX-512; no recursion)
#   tests/rel_cortexm.sh    Cortex-M4F and M7 under qemu-system-arm (semihosting): tests/cortexm on a
#                           64 KB static arena, the README examples, code size (arm-none-eabi-gcc)
#   tests/rel_cmake.sh      make install = cmake --install; find_package(rownorm 0.3), pkg-config,
#                           add_subdirectory (installs nothing of ours unless ROWNORM_INSTALL=ON;
#                           a parent's install(EXPORT) of a STATIC lib on rownorm::rownorm)
#   tests/rel_version.sh    the headers, rownorm.pc, the CMake version file, CMakeLists.txt and the
#                           CHANGELOG's latest release give one version
#   tests/rel_contents.sh   each header's CONTENTS names every public function and every banner, in
#                           the order of the file
#   tests/rel_seam.sh       no instruction-set #if or intrinsic below muon.h's seam or outside
#                           rownorm.h's ISA choice, SIMD layer and kernels (and planted ones found)
# Builds here never stop `make test-build`: a build that fails leaves its log beside the
# missing binary and the wrapper reports it as a failed test (the headers are shared work in
# progress; one broken mode must not hide the results of the others).
# By hand: make fuzz FUZZ_SECONDS=600 (then record the time in docs/reliability.md).

REL_B       := $(B)/rel
REL_GCC     ?= gcc
REL_GXX     ?= g++
REL_CLANG   ?= clang
REL_CLANGXX ?= clang++
REL_CROSS   ?= aarch64-linux-gnu-gcc
FUZZ_SECONDS ?= 15
export FUZZ_SECONDS

rel_have = $(shell command -v $(1) >/dev/null 2>&1 && echo 1)
REL_HAVE_CLANG := $(and $(call rel_have,$(REL_CLANG)),$(call rel_have,$(REL_CLANGXX)))
REL_HAVE_GCC   := $(and $(call rel_have,$(REL_GCC)),$(call rel_have,$(REL_GXX)))
REL_HAVE_CROSS := $(call rel_have,$(REL_CROSS))
REL_HAVE_QEMU  := $(call rel_have,qemu-aarch64)
REL_HAVE_VALGRIND := $(call rel_have,valgrind)
REL_CLANG_OMP  := $(if $(REL_HAVE_CLANG),$(shell echo 'int main(void){return 0;}' | $(REL_CLANG) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp))
REL_CROSS_OMP  := $(if $(REL_HAVE_CROSS),$(shell echo 'int main(void){return 0;}' | $(REL_CROSS) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp))
REL_HAVE_FUZZ  := $(if $(REL_HAVE_CLANG),$(shell echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' | $(REL_CLANG) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null && echo 1))

# rel_try: run a build command, keep its output in $@.log; a failure leaves no binary.
rel_try = @mkdir -p $(@D); rm -f $@ $@.log; ( $(1) ) >$@.log 2>&1 || { rm -f $@; echo "reliability: FAILED to build $@ (log: $@.log)"; }

# ---- two translation units, compiler x standard x linkage ----------------------------------
# per standard: language flags and the SIMD path compiled (x86; elsewhere the native one)
REL_STD_c99   := -std=c99
REL_STD_c11   := -std=c11 $(SIMD2)
# C++11 builds the AVX-512 path where the CPU runs it (the programs are run, not only linked;
# the AVX-512 variant of the suite is compiled on every x86 host by the Makefile)
REL_STD_c++11 := -x c++ -std=c++11 $(if $(HAVE_AVX512),$(SIMD512),$(SIMD2))
REL_STD_c++17 := -x c++ -std=c++17 $(SIMD2)
REL_CC_gcc_c    := $(REL_GCC)
REL_CC_gcc_c++  := $(REL_GXX)
REL_CC_clang_c  := $(REL_CLANG)
REL_CC_clang_c++ := $(REL_CLANGXX)
REL_OMP_gcc   := $(OMP)
REL_OMP_clang := $(REL_CLANG_OMP)
REL_LINK_extern :=
REL_LINK_static := -DTWO_TU_STATIC
REL_TWO_TU_DEPS := tests/two_tu_a.c tests/two_tu_b.c tests/two_tu_common.h tests/test.h $(HEADER_DEPS)

# $(1) compiler, $(2) standard, $(3) linkage. C++17 builds also use OpenMP when available.
define rel_two_tu_rule
$(REL_B)/two_tu/$(1)-$(2)-$(3): $(REL_TWO_TU_DEPS)
	$$(call rel_try,$(REL_CC_$(1)_$(if $(findstring ++,$(2)),c++,c)) $(REL_STD_$(2)) $(if $(findstring 17,$(2)),$(REL_OMP_$(1))) -O2 $(WARN) $(REL_LINK_$(3)) -I. -Itests -c tests/two_tu_a.c -o $$@.a.o && $(REL_CC_$(1)_$(if $(findstring ++,$(2)),c++,c)) $(REL_STD_$(2)) $(if $(findstring 17,$(2)),$(REL_OMP_$(1))) -O2 $(WARN) $(REL_LINK_$(3)) -I. -Itests -c tests/two_tu_b.c -o $$@.b.o && $(REL_CC_$(1)_$(if $(findstring ++,$(2)),c++,c)) $(if $(findstring 17,$(2)),$(REL_OMP_$(1))) $$@.a.o $$@.b.o -o $$@ $(LDLIBS))
endef
REL_TWO_TU_CCS := $(if $(REL_HAVE_GCC),gcc) $(if $(REL_HAVE_CLANG),clang)
$(foreach c,$(REL_TWO_TU_CCS),$(foreach s,c99 c11 c++11 c++17,$(foreach l,extern static,$(eval $(call rel_two_tu_rule,$(c),$(s),$(l))))))
REL_TWO_TU_BINS := $(foreach c,$(REL_TWO_TU_CCS),$(foreach s,c99 c11 c++11 c++17,$(foreach l,extern static,$(REL_B)/two_tu/$(c)-$(s)-$(l))))

# ---- the whole test suite under clang ------------------------------------------------------
# (C11: the bf16 kernels' build, AMX included, where the CPU has AVX512-BF16, else AVX-512 or AVX2)
REL_CLANG_c11_FL   := $(REL_CLANG) -std=c11 -O2 $(if $(HAVE_BF16),$(SIMD_BF16),$(if $(HAVE_AVX512),$(SIMD512),$(SIMD2))) $(REL_CLANG_OMP)
REL_CLANG_cxx17_FL := $(REL_CLANGXX) -x c++ -std=c++17 -O2 $(SIMD2)
define rel_clang_rule
$(REL_B)/clang-$(1)/%: tests/%.c tests/test.h $(HEADER_DEPS)
	$$(call rel_try,$(REL_CLANG_$(1)_FL) $(WARN) -DTEST_VARIANT='"clang-$(1)"' -I. -o $$@ $$< $(LDLIBS))
endef
ifneq ($(REL_HAVE_CLANG),)
$(foreach v,c11 cxx17,$(eval $(call rel_clang_rule,$(v))))
REL_CLANG_BINS := $(foreach v,c11 cxx17,$(addprefix $(REL_B)/clang-$(v)/,$(TEST_NAMES)))
endif

# ---- aarch64 (NEON and scalar), run under qemu-user ------------------------------------------
REL_A64_neon_FL   := -std=c99 -O2 $(REL_CROSS_OMP)
REL_A64_scalar_FL := -std=c99 -O2 -DRN_NO_SIMD -DMUON_NO_SIMD
# BFMMLA and BFDOT kernels of the bf16 Newton-Schulz (Armv8.6-A BF16; qemu-user's default CPU has it), and
# the exact diameter's int8 screen on sdot (Armv8.6-A includes the dot product): the Muon tests and
# the diameter's suites
REL_A64_neonbf16_FL := -std=c99 -O2 -march=armv8.6-a+bf16 $(REL_CROSS_OMP)
REL_A64_BF16_TESTS  := test_muon_bf16 test_muon test_muon_gemm test_rownorm test_rownorm_shard
define rel_a64_rule
$(REL_B)/aarch64-$(1)/%: tests/%.c tests/test.h $(HEADER_DEPS)
	$$(call rel_try,$(REL_CROSS) $(REL_A64_$(1)_FL) $(WARN) -DTEST_VARIANT='"aarch64-$(1)"' -I. -o $$@ $$< $(LDLIBS))
endef
ifneq ($(REL_HAVE_CROSS),)
$(foreach v,neon scalar neonbf16,$(eval $(call rel_a64_rule,$(v))))
REL_A64_BINS := $(foreach v,neon scalar,$(addprefix $(REL_B)/aarch64-$(v)/,$(TEST_NAMES))) \
                $(addprefix $(REL_B)/aarch64-neonbf16/,$(REL_A64_BF16_TESTS))
endif

# ---- Windows (mingw-w64), run under wine -------------------------------------------------------
# The implementations compiled after <windows.h> (which defines far, near, min, max, ... as
# macros) in C99 and C++11, and the whole test suite built for Windows (AVX2, no OpenMP) to run
# under wine (tests/rel_windows.sh).
REL_MINGW   ?= x86_64-w64-mingw32-gcc
REL_MINGWXX ?= x86_64-w64-mingw32-g++
REL_HAVE_MINGW := $(and $(call rel_have,$(REL_MINGW)),$(call rel_have,$(REL_MINGWXX)))
REL_WIN_FL  := -O2 $(SIMD2) $(WARN) -I. -Itests
ifneq ($(REL_HAVE_MINGW),)
$(REL_B)/win/windows_h_c.o: tests/windows_h.c $(HEADER_DEPS)
	$(call rel_try,$(REL_MINGW) -std=c99 $(REL_WIN_FL) -c $< -o $@)
$(REL_B)/win/windows_h_cxx.o: tests/windows_h.c $(HEADER_DEPS)
	$(call rel_try,$(REL_MINGWXX) -x c++ -std=c++11 $(REL_WIN_FL) -c $< -o $@)
$(REL_B)/win/%.exe: tests/%.c tests/test.h $(HEADER_DEPS)
	$(call rel_try,$(REL_MINGW) -std=c99 $(REL_WIN_FL) -DTEST_VARIANT='"win64"' -o $@ $< $(LDLIBS))
REL_WIN_BINS := $(REL_B)/win/windows_h_c.o $(REL_B)/win/windows_h_cxx.o $(addprefix $(REL_B)/win/,$(addsuffix .exe,$(TEST_NAMES)))
endif

# ---- the implementations under a C++ engine's warning set ------------------------------------
# The headers come in with -I, as CMake's add_subdirectory route gives them (find_package's
# imported target gives -isystem, which hides every warning of the headers: not tested here).
REL_STRICT_FL := -x c++ -std=c++20 -fno-exceptions -fno-rtti -Wall -Wextra -Wpedantic -Wshadow -Wconversion \
                 -Wsign-conversion -Wold-style-cast -Wcast-qual -Wdouble-promotion -Wzero-as-null-pointer-constant \
                 -Werror -O2 -I.
REL_STRICT_simd   := $(SIMD2)
REL_STRICT_scalar := -DRN_NO_SIMD -DMUON_NO_SIMD
REL_STRICT_native := -march=native
REL_STRICT_bf16   := -mavx512f -mavx512bw -mavx512vl -mavx512bf16 -mamx-tile -mamx-bf16 $(SIMD2)
# with OpenMP: the parallel regions, their clauses and the shared-machine rule (muon_team)
REL_STRICT_omp    := $(SIMD2) -fopenmp
define rel_strict_rule
$(REL_B)/cxx_strict/$(1)-$(2).o: tests/cxx_strict.c $(HEADER_DEPS)
	$$(call rel_try,$(3) $(REL_STRICT_FL) $(REL_STRICT_$(2)) -c $$< -o $$@)
endef
REL_STRICT_BINS :=
ifneq ($(REL_HAVE_GCC),)
$(foreach m,simd scalar native bf16 omp,$(eval $(call rel_strict_rule,gcc,$(m),$(REL_GXX))))
REL_STRICT_BINS += $(foreach m,simd scalar native bf16 omp,$(REL_B)/cxx_strict/gcc-$(m).o)
endif
ifneq ($(REL_HAVE_CLANG),)
$(foreach m,simd scalar native bf16 omp,$(eval $(call rel_strict_rule,clang,$(m),$(REL_CLANGXX))))
REL_STRICT_BINS += $(foreach m,simd scalar native bf16 omp,$(REL_B)/cxx_strict/clang-$(m).o)
endif

# ---- libFuzzer targets -------------------------------------------------------------------
# One target per family of public entry points (tests/fuzz/fuzz_*.c); the implementations
# are compiled once, instrumented, into impl.o. FUZZ_KNOWN may name -DFZ_AVOID_KNOWN_* macros
# that step around findings already reported (docs/reliability.md), to explore past them.
FUZZ_B      := $(REL_B)/fuzz
FUZZ_NAMES  := $(filter-out fuzz_impl,$(basename $(notdir $(wildcard tests/fuzz/fuzz_*.c))))
FUZZ_KNOWN  ?=
FUZZ_SAN_OBJ := -fsanitize=fuzzer-no-link,address,undefined
FUZZ_SAN_BIN := -fsanitize=fuzzer,address,undefined
FUZZ_FLAGS  := -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all $(SIMD2) $(FUZZ_KNOWN) -I. -Itests/fuzz
ifneq ($(REL_HAVE_FUZZ),)
FUZZ_BINS := $(addprefix $(FUZZ_B)/,$(FUZZ_NAMES))
$(FUZZ_B)/impl.o: tests/fuzz/fuzz_impl.c $(HEADER_DEPS)
	$(call rel_try,$(REL_CLANG) $(FUZZ_FLAGS) $(FUZZ_SAN_OBJ) -c $< -o $@)
$(FUZZ_B)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_B)/impl.o
	$(call rel_try,$(REL_CLANG) $(FUZZ_FLAGS) -Wall -Wextra -Werror $(FUZZ_SAN_BIN) $< $(FUZZ_B)/impl.o -o $@ $(LDLIBS))
# The trainer's file readers (checkpoint, token file, tokenizer): linked with the trainer's own
# sources (train.c without main; libs.c / libs_rownorm.c hold the header implementations, so
# not impl.o), all instrumented.
FUZZ_GPT_SRCS := $(GPT_TRAIN_ALL)
$(FUZZ_B)/fuzz_gpt_files: tests/fuzz/fuzz_gpt_files.c tests/fuzz/fuzz_common.h $(GPT_TRAIN_DEPS)
	$(call rel_try,$(REL_CLANG) -std=c99 $(FUZZ_FLAGS) -I$(GPT_DIR) -Wall -Wextra -Wpedantic -Wshadow -Werror $(FUZZ_SAN_BIN) -DGPT_CLI_NO_MAIN $< $(FUZZ_GPT_SRCS) -o $@ $(LDLIBS))
endif

# ---- kill during a checkpoint write (LD_PRELOAD shim; glibc) --------------------------------
$(REL_B)/killshim.so: tests/killshim.c
	$(call rel_try,$(CC) -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -shared -fPIC -o $@ $< -ldl)
REL_KILL_DEPS := $(REL_B)/killshim.so $(GPT_TRAIN) $(GPT_PREPARE)

.PHONY: rel-build rel-config fuzz fuzz-merge
rel-build: $(REL_TWO_TU_BINS) $(REL_CLANG_BINS) $(REL_A64_BINS) $(REL_WIN_BINS) $(REL_STRICT_BINS) $(FUZZ_BINS) $(REL_KILL_DEPS)
test-build: rel-build
test: rel-config
rel-config:
	@echo "reliability: gcc=$(if $(REL_HAVE_GCC),yes,MISSING) clang=$(if $(REL_HAVE_CLANG),yes,MISSING) libfuzzer=$(if $(REL_HAVE_FUZZ),yes,MISSING) aarch64-cross=$(if $(REL_HAVE_CROSS),yes,MISSING) qemu=$(if $(REL_HAVE_QEMU),yes,MISSING) valgrind=$(if $(REL_HAVE_VALGRIND),yes,MISSING)"
	@$(if $(and $(REL_HAVE_GCC),$(REL_HAVE_CLANG),$(REL_HAVE_FUZZ),$(REL_HAVE_CROSS),$(REL_HAVE_QEMU),$(REL_HAVE_VALGRIND)),true,echo "reliability: the checks needing a MISSING tool $(if $(filter true,$(CI)),FAIL (CI=true),are skipped here (they fail in CI))")

RUN_BINS += tests/rel_two_tu.sh tests/rel_clang.sh tests/qemu/run.sh tests/rel_valgrind.sh tests/fuzz/run.sh \
            tests/rel_ckpt_kill.sh tests/rel_cmake.sh tests/rel_windows.sh tests/rel_cxx_strict.sh \
            tests/rel_nostdio.sh tests/rel_stack.sh tests/rel_cortexm.sh tests/rel_version.sh \
            tests/rel_contents.sh tests/rel_seam.sh

# By hand: longer fuzzing (the total per target goes into docs/reliability.md), and merging
# the inputs it found into the kept corpus (minimised; keep tests/fuzz/corpus small).
fuzz: $(FUZZ_BINS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh
fuzz-merge: $(FUZZ_BINS)
	@for t in $(FUZZ_NAMES); do mkdir -p tests/fuzz/corpus/$$t $(FUZZ_B)/new/$$t; \
	    $(FUZZ_B)/$$t -merge=1 tests/fuzz/corpus/$$t $(FUZZ_B)/new/$$t 2>&1 | grep -E 'MERGE-OUTER: [0-9]+ new files' || true; done
