# examples/gpt/cuda.mk: the CUDA backend (cuda.cu, cuda_optim.cu, cuda_train.cu) and its tests
# (included from gpt.mk).
#   make cuda          nvcc build: build/gpt/libgpt_cuda.a (the three .cu files), build/gpt/test_cuda,
#                      build/gpt/bench_cuda (cuda_bench.cu), build/gpt/train_cuda (train.c and its
#                      C sources compiled with -DGPT_WITH_CUDA, linked with the CUDA backend)
#   make test-cuda     the GPU suite (needs a device): kernels vs the CPU path, optimizers vs the
#                      headers, 20-step losses, determinism, checkpoint round trip CPU <-> GPU
#   make bench-cuda    the GPU benchmark;  examples/gpt/cuda_check.sh runs all of it with logs
#   make test          runs build/gpt/test_gpu_math(_asan) (plain cc: gpu_math.h held to cpu.c,
#                      muon.h, rownorm.h) and, when nvcc exists, compiles and links the CUDA
#                      sources (test-build); without nvcc that check is skipped with a note.
#                      CI requires it: .ci/run checks for nvcc and builds `make cuda` explicitly.
# Options: NVCC=path, CUDA_ARCH (default sm_90: H100/H200), NO_CUDA=1 skips the nvcc check.

ifeq ($(origin NVCC),undefined)
NVCC := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
endif
CUDA_ARCH ?= sm_90
GPT_CUB   := $(GPT_B)/cuda
NVCC_FLAGS := -O2 -std=c++14 -arch=$(CUDA_ARCH) -lineinfo -I. -I$(GPT_DIR) \
              -Xcompiler -Wall,-Wextra,-Wshadow -Werror all-warnings
NVCC_LIBS := -lcublas -lcudart $(if $(HAVE_OMP),-Xcompiler -fopenmp) -lm

GPT_CUDA_SRCS := $(GPT_DIR)/cuda.cu $(GPT_DIR)/cuda_optim.cu $(GPT_DIR)/cuda_train.cu
GPT_CUDA_HDRS := $(GPT_DIR)/cuda_backend.h $(GPT_DIR)/cuda_internal.cuh $(GPT_DIR)/gpu_math.h \
                 $(GPT_DIR)/backend.h $(GPT_DIR)/model.h muon.h rownorm.h
GPT_CUDA_OBJS := $(GPT_CUB)/cuda.o $(GPT_CUB)/cuda_optim.o $(GPT_CUB)/cuda_train.o
# the host C the CUDA binaries link: model, CPU backend (the reference), the headers' implementations
GPT_CUDA_C    := $(GPT_DIR)/model.c $(GPT_DIR)/cpu.c $(GPT_DIR)/libs.c $(GPT_DIR)/libs_rownorm.c $(GPT_DIR)/status.c
GPT_CUDA_COBJS := $(patsubst $(GPT_DIR)/%.c,$(GPT_CUB)/%.o,$(GPT_CUDA_C))
# cuda_train.cu calls optim.c (which writes checkpoint fields): what a binary linking it without
# the trainer's own objects adds
GPT_CUDA_LOOP_COBJS := $(GPT_CUB)/optim.o $(GPT_CUB)/checkpoint.o $(GPT_CUB)/data.o $(GPT_CUB)/comm.o

$(GPT_CUB):
	@mkdir -p $@

$(GPT_CUB)/%.o: $(GPT_DIR)/%.cu $(GPT_CUDA_HDRS) $(GPT_DIR)/optim.h $(GPT_DIR)/checkpoint.h $(GPT_DIR)/comm.h | $(GPT_CUB)
	$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

$(GPT_CUB)/%.o: $(GPT_DIR)/%.c $(GPT_MODEL_DEPS) $(wildcard $(GPT_DIR)/*.h) rownorm.h | $(GPT_CUB)
	$(CC) $(GPT_CFLAGS) -c -o $@ $<

$(GPT_B)/libgpt_cuda.a: $(GPT_CUDA_OBJS) | $(GPT_B)
	rm -f $@ && ar rcs $@ $^

# The GPU suite is one translation unit with the three .cu files (it calls their static
# launchers), so it links the host C objects but not GPT_CUDA_OBJS.
$(GPT_CUB)/test_cuda.o: $(GPT_DIR)/tests/test_cuda.cu $(GPT_CUDA_SRCS) tests/test.h $(GPT_CUDA_HDRS) \
                        $(GPT_DIR)/cpu_layers.h $(GPT_DIR)/checkpoint.h $(GPT_DIR)/optim.h | $(GPT_CUB)
	$(NVCC) $(NVCC_FLAGS) -DTEST_VARIANT='"gpt_cuda"' -c -o $@ $<

$(GPT_B)/test_cuda: $(GPT_CUB)/test_cuda.o $(GPT_CUDA_COBJS) $(GPT_CUDA_LOOP_COBJS)
	$(NVCC) -arch=$(CUDA_ARCH) -o $@ $^ $(NVCC_LIBS)

$(GPT_B)/bench_cuda: $(GPT_CUB)/cuda_bench.o $(GPT_CUDA_OBJS) $(GPT_CUDA_COBJS) $(GPT_CUDA_LOOP_COBJS)
	$(NVCC) -arch=$(CUDA_ARCH) -o $@ $^ $(NVCC_LIBS)

# The trainer with the CUDA backend linked in (cli.c maps --backend cuda to it under
# GPT_WITH_CUDA; docs/cuda.md). Its own C sources are compiled with -DGPT_WITH_CUDA.
GPT_CUDA_TRAIN_C := $(filter-out $(GPT_CUDA_C),$(GPT_TRAIN_ALL))
GPT_CUDA_TRAIN_O := $(patsubst $(GPT_DIR)/%.c,$(GPT_CUB)/tr_%.o,$(GPT_CUDA_TRAIN_C))
$(GPT_CUB)/tr_%.o: $(GPT_DIR)/%.c $(GPT_TRAIN_DEPS) $(GPT_DIR)/cuda_backend.h | $(GPT_CUB)
	$(CC) $(GPT_CFLAGS) -DGPT_WITH_CUDA -c -o $@ $<

$(GPT_B)/train_cuda: $(GPT_CUDA_TRAIN_O) $(GPT_CUDA_OBJS) $(GPT_CUDA_COBJS)
	$(NVCC) -arch=$(CUDA_ARCH) -o $@ $^ $(NVCC_LIBS)

# CPU test of gpu_math.h (plain cc, part of `make test`) and its ASan + UBSan twin (gpt_test in gpt.mk)
$(eval $(call gpt_test,test_gpu_math,gpt_gpu_math,$(GPT_DIR)/gpu_math.h $(GPT_MODEL_DEPS) rownorm.h,$(GPT_MODEL_SRCS) $(GPT_DIR)/libs_rownorm.c,,twin))

.PHONY: cuda test-cuda cuda-check bench-cuda
cuda: $(GPT_B)/libgpt_cuda.a $(GPT_B)/test_cuda $(GPT_B)/bench_cuda $(GPT_B)/train_cuda

test-cuda: $(GPT_B)/test_cuda
	./$(GPT_B)/test_cuda

bench-cuda: $(GPT_B)/bench_cuda
	./$(GPT_B)/bench_cuda

# test-build: compile and link the CUDA backend and its GPU suite (nothing runs) when nvcc exists.
ifeq ($(NO_CUDA),1)
cuda-check:
	@echo "cuda: NO_CUDA=1, CUDA sources not compiled"
else ifneq ($(NVCC),)
cuda-check: $(GPT_B)/test_cuda $(GPT_B)/bench_cuda
	@echo "cuda: CUDA backend compiled and linked with $(NVCC) for $(CUDA_ARCH) (GPU suite: make test-cuda)"
else
cuda-check:
	@echo "cuda: nvcc not found: CUDA sources not compiled (set NVCC=...; .ci/run requires it)"
endif
test-build: cuda-check
