# examples/gpt/mpi.mk: data-parallel builds and their test (included from gpt.mk, after cuda.mk).
#   make mpi           build/gpt/train_mpi: the trainer compiled with mpicc -DGPT_USE_MPI (comm_mpi.c)
#   make test-mpi      examples/gpt/tests/mpi_train.sh: 1 process vs mpirun -np 2, same global batch;
#                      examples/gpt/tests/mpi_kill.sh: one of 2 ranks SIGKILLed mid-run ends the job
#                      (no hang, mpirun names the rank), --resume reproduces the losses bit for bit
#   make cuda-nccl     build/gpt/train_cuda_nccl: the CUDA trainer with NCCL (comm_nccl.cu) and MPI
#                      for the ncclUniqueId; compiled and linked only (running it needs GPUs)
#   make test          runs mpi_train.sh and mpi_kill.sh too (GPT_TEST_BINS); test-build builds
#                      train_mpi, test_comm_mpi, train and prepare when mpicc and mpirun exist.
#                      Without them each script prints "NAME: 0 passed, 0 failed (SKIPPED: no MPI)"
#                      and exits 0. CI requires MPI: .ci/run checks for it and builds these explicitly.
# Options: MPICC=path (default mpicc), MPIRUN=path (default mpirun), NO_MPI=1 skips the MPI build.
MPICC  ?= mpicc
MPIRUN ?= mpirun
HAVE_MPI := $(if $(NO_MPI),,$(shell command -v $(MPICC) >/dev/null 2>&1 && command -v $(MPIRUN) >/dev/null 2>&1 && echo 1))

GPT_MPI      := $(GPT_B)/train_mpi
GPT_MPI_TEST := $(GPT_DIR)/tests/mpi_train.sh
GPT_MPI_KILL := $(GPT_DIR)/tests/mpi_kill.sh

$(GPT_MPI): $(GPT_TRAIN_DEPS) $(GPT_DIR)/comm_mpi.c | $(GPT_B)
	$(MPICC) $(GPT_CFLAGS) -DGPT_USE_MPI -o $@ $(GPT_TRAIN_ALL) $(GPT_DIR)/comm_mpi.c $(LDLIBS)

# The communicator and the sharded library calls under mpirun (mpi_train.sh runs it with -np 2).
$(GPT_B)/test_comm_mpi: $(GPT_DIR)/tests/test_comm_mpi.c $(GPT_DIR)/comm.c $(GPT_DIR)/comm_mpi.c $(GPT_DIR)/comm.h \
                        $(GPT_DIR)/libs.c $(GPT_DIR)/libs_rownorm.c muon.h rownorm.h tests/test.h | $(GPT_B)
	$(MPICC) $(GPT_CFLAGS) -DGPT_USE_MPI -o $@ $< $(GPT_DIR)/comm.c $(GPT_DIR)/comm_mpi.c $(GPT_DIR)/libs.c \
	    $(GPT_DIR)/libs_rownorm.c $(LDLIBS)

.PHONY: mpi test-mpi cuda-nccl mpi-check
mpi: $(GPT_MPI)

# The script builds nothing: it needs both trainers, test_comm_mpi and prepare.
GPT_MPI_NEEDS := $(GPT_TRAIN) $(GPT_MPI) $(GPT_B)/test_comm_mpi $(GPT_PREPARE)
test-mpi: $(GPT_MPI_NEEDS)
	MPIRUN=$(MPIRUN) GPT_BIN=$(GPT_B) ./$(GPT_MPI_TEST)
	MPIRUN=$(MPIRUN) GPT_BIN=$(GPT_B) ./$(GPT_MPI_KILL)

ifeq ($(NO_MPI),1)
mpi-check:
	@echo "mpi: NO_MPI=1: build/gpt/train_mpi not built, mpi_train.sh not run"
else ifeq ($(HAVE_MPI),1)
mpi-check: $(GPT_MPI_NEEDS)
else
mpi-check:
	@echo "mpi: $(MPICC) or $(MPIRUN) not found: build/gpt/train_mpi not built, mpi_train.sh skips"
endif
test-build: mpi-check
ifneq ($(NO_MPI),1)
GPT_TEST_BINS += $(GPT_MPI_TEST) $(GPT_MPI_KILL)
endif
# tests/run.sh runs the scripts: they read the binaries' directory from GPT_BIN (build/gpt unless B=...)
test: export GPT_BIN := $(GPT_B)

# ---- the CUDA trainer with NCCL (compile + link only here) --------------------------------------
# The trainer's C sources with -DGPT_WITH_CUDA -DGPT_USE_MPI -DGPT_USE_NCCL (mpicc), the CUDA
# backend objects of cuda.mk, comm_nccl.cu (nvcc), linked by nvcc with -lnccl and MPI's libraries.
GPT_NCCL_B    := $(GPT_B)/nccl
GPT_MPI_LINK  := $(patsubst -pthread,-Xcompiler -pthread,$(shell $(MPICC) --showme:link 2>/dev/null))
GPT_NCCL_C    := $(GPT_TRAIN_ALL) $(GPT_DIR)/comm_mpi.c
GPT_NCCL_O    := $(patsubst $(GPT_DIR)/%.c,$(GPT_NCCL_B)/%.o,$(GPT_NCCL_C))

$(GPT_NCCL_B):
	@mkdir -p $@

$(GPT_NCCL_B)/%.o: $(GPT_DIR)/%.c $(GPT_TRAIN_DEPS) $(GPT_DIR)/cuda_backend.h $(GPT_DIR)/comm.h | $(GPT_NCCL_B)
	$(MPICC) $(GPT_CFLAGS) -DGPT_WITH_CUDA -DGPT_USE_MPI -DGPT_USE_NCCL -c -o $@ $<

$(GPT_NCCL_B)/comm_nccl.o: $(GPT_DIR)/comm_nccl.cu $(GPT_DIR)/comm.h | $(GPT_NCCL_B)
	$(NVCC) $(NVCC_FLAGS) -DGPT_USE_NCCL -c -o $@ $<

$(GPT_B)/train_cuda_nccl: $(GPT_NCCL_O) $(GPT_NCCL_B)/comm_nccl.o $(GPT_CUDA_OBJS)
	$(NVCC) -arch=$(CUDA_ARCH) -o $@ $^ $(NVCC_LIBS) -lnccl $(GPT_MPI_LINK)

cuda-nccl: $(GPT_B)/train_cuda_nccl
	@echo "cuda-nccl: $< compiled and linked (run: mpirun -np <GPUs> $< --backend cuda ...)"

# test-build compiles and links it where nvcc, NCCL's header and MPI exist (nothing runs: no GPU
# is assumed); elsewhere it is left out. CI requires it: .ci/run checks for NCCL and MPI and
# builds `make cuda-nccl` explicitly.
GPT_HAVE_NCCL := $(if $(NVCC),$(if $(wildcard $(dir $(NVCC))../include/nccl.h /usr/include/nccl.h),1))
ifneq ($(NO_CUDA),1)
ifeq ($(and $(NVCC),$(HAVE_MPI),$(GPT_HAVE_NCCL)),1)
test-build: $(GPT_B)/train_cuda_nccl
endif
endif
