# examples/gpt: the trainer's build and test rules, included from the top-level Makefile.
# Each concern keeps its own fragment; every fragment appends its test binaries to GPT_TEST_BINS.
GPT_DIR   := examples/gpt
GPT_B     := $(B)/gpt
# the trainer's SIMD: AVX-512 where the CPU has it, plus the bf16 kernels (AMX, AVX512-BF16) of
# --ns-precision bf16 where the CPU has AVX512-BF16 and the compiler targets it
GPT_SIMD   := $(if $(and $(HAVE_BF16),$(HAVE_BF16_CC)),$(SIMD_BF16),$(if $(HAVE_AVX512),$(SIMD512),$(SIMD2)))
GPT_CFLAGS := -std=c99 -O2 $(GPT_SIMD) $(OMP) $(WARN) -I. -I$(GPT_DIR)
$(GPT_B):
	@mkdir -p $@

# A trainer test: $(GPT_B)/NAME from $(GPT_DIR)/tests/NAME.c, compiled with
#   $(CC) $(GPT_CFLAGS) [$(SAN_FLAGS)] FLAGS -DTEST_VARIANT='"VARIANT"' ... SRCS $(LDLIBS)
# and appended to GPT_TEST_BINS.
#   $(eval $(call gpt_test,NAME,VARIANT,DEPS,SRCS,FLAGS,SAN))
# DEPS: prerequisites besides the test's .c, tests/test.h and tests/gpt_test.h. SRCS: the sources it links.
# SAN: empty: NAME only; twin: NAME and its twin NAME_asan under $(SAN_FLAGS) (VARIANT_asan);
#      only: NAME itself under $(SAN_FLAGS) (VARIANT_asan), no plain build.
# gpt_test_bin BIN,NAME,VARIANT,DEPS,SRCS,FLAGS: one binary (FLAGS include SAN_FLAGS if any).
define gpt_test_bin
$(GPT_B)/$(1): $(GPT_DIR)/tests/$(2).c $(4) tests/test.h $(GPT_DIR)/tests/gpt_test.h | $(GPT_B)
	$$(CC) $$(GPT_CFLAGS) $(strip $(6) -DTEST_VARIANT='"$(3)"') -o $$@ $$< $(strip $(5)) $$(LDLIBS)
GPT_TEST_BINS += $(GPT_B)/$(1)
endef
define gpt_test
$(if $(filter only,$(6)),,$(call gpt_test_bin,$(1),$(1),$(2),$(3),$(4),$(5)))
$(if $(filter twin,$(6)),$(call gpt_test_bin,$(1)_asan,$(1),$(2)_asan,$(3),$(4),$(SAN_FLAGS) $(5)))
$(if $(filter only,$(6)),$(call gpt_test_bin,$(1),$(1),$(2)_asan,$(3),$(4),$(SAN_FLAGS) $(5)))
endef

# Every fragment is part of the repository: plain `include` (a missing one is an error).
include $(GPT_DIR)/data.mk
include $(GPT_DIR)/model.mk
include $(GPT_DIR)/train.mk
include $(GPT_DIR)/cuda.mk
include $(GPT_DIR)/emu.mk
include $(GPT_DIR)/mpi.mk
