# examples/gpt/model.mk: the model and its CPU backend (model.c, cpu.c, libs.c) and their tests.
# Included from gpt.mk. GPT_MODEL_SRCS / GPT_MODEL_DEPS are what a trainer binary links / depends on.
GPT_MODEL_SRCS := $(GPT_DIR)/model.c $(GPT_DIR)/cpu.c $(GPT_DIR)/libs.c $(GPT_DIR)/status.c
GPT_MODEL_DEPS := $(GPT_MODEL_SRCS) $(GPT_DIR)/model.h $(GPT_DIR)/backend.h $(GPT_DIR)/cpu_layers.h \
                  muon.h

# test_model, and test_model_asan: the same test at -O1 under ASan + UBSan (gpt_test in gpt.mk).
$(eval $(call gpt_test,test_model,gpt_model,$(GPT_MODEL_DEPS),$(GPT_MODEL_SRCS),,twin))
