# bench/bench.mk - benchmarks (programs, not tests; included by the Makefile, adds nothing to `make test`)
#   make bench                    build and run the suite: one table (14 min on the shared 2-core machine, bench/RESULTS.md)
#   make bench BENCH_ARGS='--only ns,gemm --threads 1'   a part of it (see bench/bench.c)
#   make bench-host-regions       why: a step's OpenMP regions counted and timed, alone and beside a copy
#   make bench-host               the libraries on a shared machine: default threading vs one thread, alone,
#                                 two copies side by side, beside busy loops (host_share), then muon.h's
#                                 wait policy x 1/2 threads x idle/competing tables (host_threads)
# -O3: the ceiling kernels and the plain baselines are auto-vectorised (GCC 12 does not at -O2).
# Needs OpenBLAS (the ceilings are its cblas_sgemm); the Python peers run when python3 + numpy exist.

BENCH_FL   := -std=c99 -O3 -march=native $(OMP) $(WARN) -I. $(BLAS_CFLAGS)
BENCH_ARGS ?=

.PHONY: bench bench-build bench-host
ifeq ($(HAVE_BLAS),1)
bench-build: $(B)/bench/bench $(B)/bench/bench_noamx $(B)/bench/amx_ceiling $(B)/bench/gemm_bench $(B)/bench/rn_profile $(B)/bench/train_bench $(B)/bench/host_threads $(B)/bench/host_threshold $(B)/bench/host_share $(B)/bench/layers_share $(B)/bench/rn_align

$(B)/bench/bench: bench/bench.c bench/bench_cblas_tu.c $(HEADER_DEPS) | $(B)/bench
	$(CC) $(BENCH_FL) -o $@ bench/bench.c bench/bench_cblas_tu.c $(BLAS_LIBS) $(LDLIBS)

# the same without AMX (the AVX512-BF16-only case of issue 17's targets; run it with PyTorch held
# to the same ISA: ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 build/bench/bench_noamx --only nsbf16)
$(B)/bench/bench_noamx: bench/bench.c bench/bench_cblas_tu.c $(HEADER_DEPS) | $(B)/bench
	$(CC) $(BENCH_FL) -DMUON_NO_AMX -o $@ bench/bench.c bench/bench_cblas_tu.c $(BLAS_LIBS) $(LDLIBS)

$(B)/bench/gemm_bench: bench/gemm_bench.c muon.h | $(B)/bench
	$(CC) $(BENCH_FL) -o $@ bench/gemm_bench.c $(BLAS_LIBS) $(LDLIBS)

# the example trainer's step (model.c, cpu.c, libs.c built with the trainer's GPT_CFLAGS) against sgemm
$(B)/bench/train_bench: bench/train_bench.c $(GPT_MODEL_DEPS) | $(B)/bench
	$(CC) $(GPT_CFLAGS) $(BLAS_CFLAGS) -o $@ bench/train_bench.c $(GPT_MODEL_SRCS) $(BLAS_LIBS) $(LDLIBS)

# muon.h inside a host program that shares the machine (issue 13): wait policy x threads x load
$(B)/bench/host_threads: bench/host_threads.c muon.h | $(B)/bench
	$(CC) -std=c99 -O2 $(SIMD2) $(OMP) $(WARN) -I. -o $@ bench/host_threads.c $(LDLIBS)

$(B)/bench/host_threshold: bench/host_threads.c muon.h | $(B)/bench
	$(CC) -std=c99 -O2 $(SIMD2) $(OMP) $(WARN) -DHOST_THRESHOLD -DMUON_GEMM_PARALLEL_MIN=1.0 -I. -o $@ bench/host_threads.c $(LDLIBS)

# the default threading on a shared machine (issue 40): llm.c's and GPT-2-small's layers, the
# RowNorm step and diameter, the demo's per-run training; default / one thread under each load
$(B)/bench/host_share: bench/host_share.c $(HEADER_DEPS) | $(B)/bench
	$(CC) -std=c99 -O2 $(SIMD2) $(OMP) $(WARN) -I. -o $@ bench/host_share.c $(LDLIBS)

# muon_step_layers against the muon_step_ws loop, idle and beside busy loops (issue 49)
$(B)/bench/layers_share: bench/layers_share.c $(HEADER_DEPS) | $(B)/bench
	$(CC) $(BENCH_FL) -o $@ bench/layers_share.c $(LDLIBS)

# why a step collapses there: its OpenMP regions counted and timed (GCC + libgomp: --wrap=GOMP_parallel)
$(B)/bench/host_regions: bench/host_regions.c muon.h | $(B)/bench
	$(CC) -std=c99 -O2 $(SIMD2) $(OMP) $(WARN) -I. -Wl,--wrap=GOMP_parallel -o $@ bench/host_regions.c $(LDLIBS)

.PHONY: bench-host-regions
bench-host-regions: $(B)/bench/host_regions
	for w in llm gpt2; do r=$$([ $$w = llm ] && echo 100 || echo 4); echo "$$w alone:"; $(B)/bench/host_regions $$w $$r; \
	  echo "$$w beside a copy of itself:"; $(B)/bench/host_regions $$w $$r & $(B)/bench/host_regions $$w $$r >/dev/null; wait; done

bench-host: $(B)/bench/host_share $(B)/bench/host_threads $(B)/bench/host_threshold $(GPT_TRAIN) $(GPT_PREPARE)
	@echo "machine: $$(lscpu | sed -n 's/^Model name: *//p'), $$(nproc) CPUs; load $$(cut -d' ' -f1-3 /proc/loadavg)"
	@$(GPT_PREPARE) --check $(GPT_B)/data 2>/dev/null || $(GPT_PREPARE) --out $(GPT_B)/data
	$(B)/bench/host_share --train $(GPT_TRAIN) --data $(GPT_B)/data
	$(B)/bench/host_threads
	$(B)/bench/host_threshold

# the RowNorm step against where G and W sit relative to a 64-byte line (one thread; no BLAS)
$(B)/bench/rn_align: bench/rn_align.c rownorm.h | $(B)/bench
	$(CC) -std=c99 -O3 -march=native $(WARN) -I. -o $@ bench/rn_align.c $(LDLIBS)

# a fixed amount of RowNorm-step work for callgrind (no AVX-512 under valgrind: AVX2 build)
$(B)/bench/rn_profile: bench/rn_profile.c rownorm.h | $(B)/bench
	$(CC) -std=c99 -O3 $(SIMD2) $(WARN) -I. -o $@ bench/rn_profile.c $(LDLIBS)

# The bench names OpenBLAS's core for the CPU it runs on and sets OPENBLAS_THREAD_TIMEOUT where
# they are unset (bench/bench_env.h); an OPENBLAS_CORETYPE in the environment wins.
bench: bench-build
	@echo "machine: $$(lscpu | sed -n 's/^Model name: *//p'), $$(nproc) CPUs; load $$(cut -d' ' -f1-3 /proc/loadavg)"
	@echo "command: make bench BENCH_ARGS='$(BENCH_ARGS)'  ($(B)/bench/bench $(BENCH_ARGS))"
	$(B)/bench/bench $(BENCH_ARGS)
else
bench-build bench:
	@echo "bench: skipped (needs a CBLAS: OpenBLAS found by pkg-config)"
endif

# the AMX engine's products against the tile unit's ceilings (one thread; where AMX is compiled; needs no BLAS)
$(B)/bench/amx_ceiling: bench/amx_ceiling.c muon.h | $(B)/bench
	$(CC) -std=c99 -O2 $(if $(HAVE_BF16_CC),$(SIMD_BF16),$(SIMD2)) $(WARN) -I. -o $@ bench/amx_ceiling.c $(LDLIBS)

$(B)/bench:
	@mkdir -p $@
