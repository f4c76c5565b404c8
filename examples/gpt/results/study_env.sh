# study_env.sh - sourced by results/cap/run.sh and results/muown/run.sh (from the repository root,
# with OUT set): B = the trainer's build directory (GPT_BIN, else build/gpt, built here), the
# default corpus prepared in B/data if needed, OUT created.
B=${GPT_BIN:-build/gpt}
[ -n "${GPT_BIN:-}" ] || make -s build/gpt/train build/gpt/prepare build/gpt/plot_csv >/dev/null
"$B/prepare" --check "$B/data" >/dev/null 2>&1 || "$B/prepare" --out "$B/data" >/dev/null
mkdir -p "$OUT"
