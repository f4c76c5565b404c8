# examples/gpt: the trainer's build and test rules, included from the top-level Makefile.
# Each concern keeps its own fragment; every fragment appends its test binaries to GPT_TEST_BINS.
GPT_DIR   := examples/gpt
GPT_B     := $(B)/gpt
GPT_CFLAGS := -std=c99 -O2 $(if $(HAVE_AVX512),$(SIMD512),$(SIMD2)) $(OMP) $(WARN) -I. -I$(GPT_DIR)
$(GPT_B):
	@mkdir -p $@
-include $(GPT_DIR)/data.mk
-include $(GPT_DIR)/model.mk
-include $(GPT_DIR)/train.mk
-include $(GPT_DIR)/cuda.mk
-include $(GPT_DIR)/mpi.mk
