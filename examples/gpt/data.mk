# examples/gpt/data.mk: tokenizer, token files, corpus and plots (included from gpt.mk).
#   make build/gpt/prepare && build/gpt/prepare      tokenizer + train/val token files from the
#                                                    project's own text into build/gpt/data/
# GPT_DATA_SRCS is what a trainer binary links for the data side.
GPT_DATA_HDRS := $(GPT_DIR)/tokenizer.h $(GPT_DIR)/data.h $(GPT_DIR)/plot.h
GPT_DATA_SRCS := $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DIR)/plot.c
GPT_PREPARE   := $(GPT_B)/prepare

# The tests (gpt_test in gpt.mk); the parsers and the sampler also under ASan + UBSan (*_asan).
GPT_TOK_SRCS := $(GPT_DIR)/tokenizer.c $(GPT_DIR)/data.c $(GPT_DIR)/status.c
$(eval $(call gpt_test,test_tokenizer,gpt,$(GPT_TOK_SRCS) $(GPT_DATA_HDRS),$(GPT_TOK_SRCS),,twin))
$(eval $(call gpt_test,test_data,gpt,$(GPT_TOK_SRCS) $(GPT_DATA_HDRS),$(GPT_TOK_SRCS),,twin))
$(eval $(call gpt_test,test_plot,gpt,$(GPT_DIR)/plot.c $(GPT_DIR)/plot.h $(GPT_DIR)/status.c,$(GPT_DIR)/plot.c $(GPT_DIR)/status.c))

$(GPT_PREPARE): $(GPT_DIR)/prepare.c $(GPT_TOK_SRCS) $(GPT_DATA_HDRS) | $(GPT_B)
	$(CC) $(GPT_CFLAGS) -o $@ $< $(GPT_TOK_SRCS) $(LDLIBS)
