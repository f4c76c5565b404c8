# examples/gpt/train.mk: the training loop, checkpoints, optimizer set and experiment mode
# (included from gpt.mk).
#   make build/gpt/train       the trainer binary (build/gpt/train --help)
#   make demo                  paired AdamW-head vs RowNorm-head experiment on the default corpus
GPT_TRAIN_SRCS := $(GPT_DIR)/cli.c $(GPT_DIR)/train.c $(GPT_DIR)/optim.c $(GPT_DIR)/checkpoint.c $(GPT_DIR)/report.c \
                  $(GPT_DIR)/experiment.c $(GPT_DIR)/libs_rownorm.c $(GPT_DIR)/comm.c $(GPT_DIR)/spectra.c
GPT_TRAIN_HDRS := $(GPT_DIR)/train.h $(GPT_DIR)/optim.h $(GPT_DIR)/checkpoint.h $(GPT_DIR)/experiment.h $(GPT_DIR)/report.h $(GPT_DIR)/cli.h rownorm.h \
                  $(GPT_DIR)/comm.h $(GPT_DIR)/spectra.h
GPT_TRAIN_ALL  := $(GPT_TRAIN_SRCS) $(GPT_MODEL_SRCS) $(GPT_DATA_SRCS)
GPT_TRAIN_DEPS := $(GPT_TRAIN_ALL) $(GPT_TRAIN_HDRS) $(GPT_MODEL_DEPS) $(GPT_DATA_HDRS)
GPT_TRAIN      := $(GPT_B)/train

$(GPT_TRAIN): $(GPT_TRAIN_DEPS) | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -o $@ $(GPT_TRAIN_ALL) $(LDLIBS)

# Tests link every source with -DGPT_CLI_NO_MAIN (cli.c's main() left out).

# (gpt_test in gpt.mk) test_checkpoint is built under ASan + UBSan only; test_train has its twin.
GPT_CKPT_TEST_SRCS := $(GPT_DIR)/checkpoint.c $(GPT_DIR)/data.c $(GPT_DIR)/status.c
$(eval $(call gpt_test,test_checkpoint,gpt,$(GPT_CKPT_TEST_SRCS) $(GPT_DIR)/checkpoint.h $(GPT_DIR)/data.h,$(GPT_CKPT_TEST_SRCS),,only))
$(eval $(call gpt_test,test_train,gpt,$(GPT_TRAIN_DEPS),$(GPT_TRAIN_ALL),-DGPT_CLI_NO_MAIN,twin))

# The binaries against files that are not what they should be (devices, FIFOs, symlinks, a log
# on /dev/full): tests/train_files.sh builds nothing, so test-build builds train and prepare.
# It runs $(GPT_B)'s binaries when GPT_BIN=$(GPT_B) is set (default build/gpt).
GPT_FILES_TEST := $(GPT_DIR)/tests/train_files.sh
test-build: $(GPT_TRAIN) $(GPT_PREPARE)
GPT_TEST_BINS += $(GPT_FILES_TEST)
# The binary's messages for a user's mistakes (issue 41, item 6) and its progress lines on a
# non-terminal: tests/train_errors.sh, run like train_files.sh.
GPT_ERRORS_TEST := $(GPT_DIR)/tests/train_errors.sh
GPT_TEST_BINS += $(GPT_ERRORS_TEST)

# The demo: prepare the default corpus (the committed snapshot, corpus/project-text.txt) if needed
# (prepare --check: missing, of an older format, made with another tokenizer or from another
# corpus), then the experiment: head-rate sweeps of both arms on 2 seeds each, the frontier, 3
# seeds at each arm's best and at the paper's rates (about 26 runs, sized to finish in under 3
# minutes on 2 idle cores; README.md has the measured time), run in build/gpt/demo. Its table,
# results.csv and plots are then copied to examples/gpt/results/demo/ (committed: README's figures
# quote it, and tests/demo_table.sh compares a fresh run with it). Override DEMO_FLAGS to resize
# (then DEMO_RESULTS= keeps the committed copy as it is).
DEMO_OUT     ?= $(GPT_B)/demo
DEMO_RESULTS ?= $(GPT_DIR)/results/demo
DEMO_FLAGS   ?= --seeds 3 --sweep-seeds 2 --steps 400 --layers 2 --d-model 64 --heads 2 --batch 8 --seq 64 \
                --eval-every 50 --eval-batches 8 --panel 8 --diam-every 50
DEMO_FILES   := table.md results.csv frontier_diameter.svg frontier_rms.svg loss.svg diameter.svg hilbert_rms.svg
.PHONY: demo
demo: config $(GPT_TRAIN) $(GPT_PREPARE)
	@$(GPT_PREPARE) --check $(GPT_B)/data 2>/dev/null || $(GPT_PREPARE) --out $(GPT_B)/data
	@echo "demo: trainer built with: openmp=$(if $(HAVE_OMP),yes,no) blas=$(if $(HAVE_BLAS),found (not linked: the trainer uses muon_sgemm),no)"
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} $(GPT_TRAIN) --experiment --data $(GPT_B)/data --out $(DEMO_OUT) $(DEMO_FLAGS)
	@if [ -n "$(DEMO_RESULTS)" ]; then mkdir -p $(DEMO_RESULTS) && \
	  for f in $(DEMO_FILES); do cp $(DEMO_OUT)/$$f $(DEMO_RESULTS)/$$f || exit 1; done && \
	  echo "demo: copied $(DEMO_FILES) to $(DEMO_RESULTS)/ (git diff shows what changed against the committed run)"; fi
# The committed demo against a fresh run, and README's quotes of it (issue 41, item 4):
# tests/demo_table.sh runs make demo into a temporary directory (DEMO_REUSE=DIR compares an existing
# run instead).
GPT_DEMO_TEST := $(GPT_DIR)/tests/demo_table.sh
GPT_TEST_BINS += $(GPT_DEMO_TEST)
.PHONY: print-demo-flags
print-demo-flags:
	@echo $(DEMO_FLAGS)
# The block norms of issue 50 (spectra.h) on matrices of known spectrum, and their log rows.
GPT_SPECTRA_TEST_SRCS := $(GPT_DIR)/spectra.c $(GPT_DIR)/model.c $(GPT_DIR)/libs.c $(GPT_DIR)/status.c
$(eval $(call gpt_test,test_spectra,gpt,$(GPT_SPECTRA_TEST_SRCS) $(GPT_DIR)/spectra.h $(GPT_DIR)/model.h,$(GPT_SPECTRA_TEST_SRCS),,twin))
# The studies' plots (results/cap, results/muown): CSV rows series,x,y on stdin -> one SVG.
$(GPT_B)/plot_csv: $(GPT_DIR)/plot_csv.c $(GPT_DIR)/plot.c $(GPT_DIR)/plot.h $(GPT_DIR)/status.c | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -o $@ $(GPT_DIR)/plot_csv.c $(GPT_DIR)/plot.c $(GPT_DIR)/status.c $(LDLIBS)
# The studies of issue 50 checked like the demo: README.md's quotes of results/cap and
# results/muown, and a few of their runs made again against the committed rows (study_check.sh).
GPT_TEST_BINS += $(GPT_DIR)/tests/cap_table.sh
GPT_TEST_BINS += $(GPT_DIR)/tests/muown_table.sh
