# examples/gpt/emu.mk: the CUDA backend's logic on the CPU, in `make test` (no GPU needed):
# tests/emu/ emulates the CUDA runtime and cuBLAS subset the backend uses (what it models and what
# it cannot: tests/emu/cuda_runtime.h, docs/cuda.md). The .cu sources are rewritten by
# tests/emu/launch.sed (kernel launches into emu_launch calls) into build/gpt/emu/ and compiled as
# C++11 with ASan + UBSan, against host C compiled the same way.
#   build/gpt/emu/test_cuda_emu     tests/test_cuda.cu (the GPU suite), every section
#   build/gpt/emu/train_cuda_emu    the trainer with --backend cuda on the emulation
#   tests/emu/emu_train.sh          a 40-update --backend cuda run vs --backend cpu: the same losses
#   tests/emu/emu_mutants.sh        three bugs injected on purpose (swapped leading dimensions, a
#                                   missing transpose, a partial-warp shuffle) must fail the suite
EMU_DIR := $(GPT_DIR)/tests/emu
EMU_B   := $(GPT_B)/emu
EMU_OMP := $(if $(HAVE_OMP),-fopenmp)
EMU_CXXFLAGS = -std=c++11 $(SAN_FLAGS) -Wall -Wextra -Wshadow -Werror -Wno-unused-function -I$(EMU_DIR) -I. -I$(GPT_DIR) \
               -DGPT_CUDA_EMU $(EMU_OMP)
EMU_CFLAGS = -std=c99 $(SAN_FLAGS) -Wall -Wextra -Werror -I. -I$(GPT_DIR) $(EMU_OMP)
EMU_HDRS := $(EMU_DIR)/cuda_runtime.h $(EMU_DIR)/cublas_v2.h
EMU_CU   := $(EMU_B)/cuda.cu $(EMU_B)/cuda_optim.cu $(EMU_B)/cuda_train.cu
EMU_COBJS := $(patsubst $(GPT_DIR)/%.c,$(EMU_B)/%.o,$(GPT_CUDA_C))
EMU_LOOP_COBJS := $(EMU_B)/optim.o $(EMU_B)/checkpoint.o $(EMU_B)/data.o $(EMU_B)/comm.o
EMU_TRAIN_O := $(patsubst $(GPT_DIR)/%.c,$(EMU_B)/tr_%.o,$(GPT_CUDA_TRAIN_C))

$(EMU_B):
	@mkdir -p $@

# a launch the rewrite misses would not compile as C++ anyway; say which
$(EMU_B)/%.cu: $(GPT_DIR)/%.cu $(EMU_DIR)/launch.sed | $(EMU_B)
	sed -E -f $(EMU_DIR)/launch.sed $< > $@.tmp
	@if grep -n '<<<' $@.tmp; then echo "$<: a launch launch.sed does not rewrite"; rm -f $@.tmp; exit 1; fi
	mv $@.tmp $@
$(EMU_B)/test_cuda.cu: $(GPT_DIR)/tests/test_cuda.cu $(EMU_DIR)/launch.sed | $(EMU_B)
	sed -E -f $(EMU_DIR)/launch.sed $< > $@

$(EMU_B)/emu.o: $(EMU_DIR)/emu.cpp $(EMU_HDRS) | $(EMU_B)
	$(CXX) $(EMU_CXXFLAGS) -c -o $@ $<
$(EMU_B)/%.o: $(GPT_DIR)/%.c $(GPT_MODEL_DEPS) $(wildcard $(GPT_DIR)/*.h) rownorm.h | $(EMU_B)
	$(CC) $(EMU_CFLAGS) -c -o $@ $<
$(EMU_B)/tr_%.o: $(GPT_DIR)/%.c $(GPT_TRAIN_DEPS) $(GPT_DIR)/cuda_backend.h | $(EMU_B)
	$(CC) $(EMU_CFLAGS) -DGPT_WITH_CUDA -c -o $@ $<
$(EMU_B)/cu_%.o: $(EMU_B)/%.cu $(GPT_CUDA_HDRS) $(EMU_HDRS) $(GPT_DIR)/optim.h $(GPT_DIR)/checkpoint.h
	$(CXX) $(EMU_CXXFLAGS) -x c++ -c -o $@ $<

$(EMU_B)/test_cuda_emu: $(EMU_B)/test_cuda.cu $(EMU_CU) $(EMU_B)/emu.o $(EMU_COBJS) $(EMU_LOOP_COBJS) tests/test.h \
                        $(GPT_CUDA_HDRS) $(EMU_HDRS) $(GPT_DIR)/cpu_layers.h
	$(CXX) $(EMU_CXXFLAGS) -DTEST_VARIANT='"gpt_cuda_emu"' -o $@ -x c++ $< -x none $(EMU_B)/emu.o $(EMU_COBJS) \
	    $(EMU_LOOP_COBJS) -lm

$(EMU_B)/train_cuda_emu: $(EMU_TRAIN_O) $(patsubst $(EMU_B)/%.cu,$(EMU_B)/cu_%.o,$(EMU_CU)) $(EMU_B)/emu.o $(EMU_COBJS)
	$(CXX) $(EMU_CXXFLAGS) -o $@ $^ -lm

GPT_TEST_BINS += $(EMU_B)/test_cuda_emu $(EMU_DIR)/emu_train.sh $(EMU_DIR)/emu_mutants.sh
test-build: $(EMU_B)/test_cuda_emu $(EMU_B)/train_cuda_emu $(GPT_PREPARE)
.PHONY: test-cuda-emu
test-cuda-emu: $(EMU_B)/test_cuda_emu $(EMU_B)/train_cuda_emu $(GPT_PREPARE)
	./tests/run.sh $(EMU_B)/test_cuda_emu $(EMU_DIR)/emu_train.sh $(EMU_DIR)/emu_mutants.sh
