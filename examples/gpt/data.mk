# examples/gpt/data.mk: tokenizer, token files, corpus and plots (included from gpt.mk).
#   make build/gpt/prepare && build/gpt/prepare      tokenizer + train/val token files from the
#                                                    project's own text into build/gpt/data/
# GPT_DATA_SRCS is what a trainer binary links for the data side.
GPT_DATA_HDRS := $(GPT_DIR)/tokenizer.h $(GPT_DIR)/data.h $(GPT_DIR)/plot.h
GPT_DATA_SRCS := $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DIR)/plot.c
GPT_PREPARE   := $(GPT_B)/prepare

GPT_DATA_ASAN := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

GPT_TEST_BINS += $(GPT_B)/test_tokenizer $(GPT_B)/test_data $(GPT_B)/test_plot
# The parsers and the sampler again under ASan + UBSan (later flags override GPT_CFLAGS' -O2).
GPT_TEST_BINS += $(GPT_B)/test_tokenizer_asan $(GPT_B)/test_data_asan

$(GPT_B)/test_tokenizer: $(GPT_DIR)/tests/test_tokenizer.c $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DATA_HDRS) tests/test.h | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -DTEST_VARIANT='"gpt"' -o $@ $< $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(LDLIBS)

$(GPT_B)/test_data: $(GPT_DIR)/tests/test_data.c $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DATA_HDRS) tests/test.h | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -DTEST_VARIANT='"gpt"' -o $@ $< $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(LDLIBS)

$(GPT_B)/test_tokenizer_asan: $(GPT_DIR)/tests/test_tokenizer.c $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DATA_HDRS) tests/test.h | $(GPT_B)
	$(CC) $(GPT_CFLAGS) $(GPT_DATA_ASAN) -DTEST_VARIANT='"gpt_asan"' -o $@ $< $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(LDLIBS)

$(GPT_B)/test_data_asan: $(GPT_DIR)/tests/test_data.c $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DATA_HDRS) tests/test.h | $(GPT_B)
	$(CC) $(GPT_CFLAGS) $(GPT_DATA_ASAN) -DTEST_VARIANT='"gpt_asan"' -o $@ $< $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(LDLIBS)

$(GPT_B)/test_plot: $(GPT_DIR)/tests/test_plot.c $(GPT_DIR)/plot.c $(GPT_DIR)/plot.h tests/test.h | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -DTEST_VARIANT='"gpt"' -o $@ $< $(GPT_DIR)/plot.c $(LDLIBS)

$(GPT_PREPARE): $(GPT_DIR)/prepare.c $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DATA_HDRS) | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -o $@ $< $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(LDLIBS)
