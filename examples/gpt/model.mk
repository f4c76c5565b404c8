# examples/gpt/model.mk: the model and its CPU backend (model.c, cpu.c, libs.c) and their tests.
# Included from gpt.mk. GPT_MODEL_SRCS / GPT_MODEL_DEPS are what a trainer binary links / depends on.
GPT_MODEL_SRCS := $(GPT_DIR)/model.c $(GPT_DIR)/cpu.c $(GPT_DIR)/libs.c
GPT_MODEL_DEPS := $(GPT_MODEL_SRCS) $(GPT_DIR)/model.h $(GPT_DIR)/backend.h $(GPT_DIR)/cpu_layers.h \
                  muon.h
GPT_ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

$(GPT_B)/test_model: $(GPT_DIR)/tests/test_model.c tests/test.h $(GPT_MODEL_DEPS) | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -DTEST_VARIANT='"gpt_model"' -o $@ $< $(GPT_MODEL_SRCS) $(LDLIBS)

# The same test at -O1 under ASan + UBSan (later flags override GPT_CFLAGS' -O2).
$(GPT_B)/test_model_asan: $(GPT_DIR)/tests/test_model.c tests/test.h $(GPT_MODEL_DEPS) | $(GPT_B)
	$(CC) $(GPT_CFLAGS) $(GPT_ASAN_FLAGS) -DTEST_VARIANT='"gpt_model_asan"' -o $@ $< $(GPT_MODEL_SRCS) $(LDLIBS)

GPT_TEST_BINS += $(GPT_B)/test_model $(GPT_B)/test_model_asan
