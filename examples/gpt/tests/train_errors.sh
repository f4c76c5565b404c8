#!/usr/bin/env bash
# train_errors.sh - the trainer binary's messages for mistakes a user makes (issue 41, item 6):
# each case names its cause (the flag, the field, lr x weight decay and its limit, the tokenizer
# a data file was made with), and the outputs a non-terminal gets (progress lines). Builds nothing
# (make test-build builds train and prepare); GPT_BIN overrides build/gpt. Ends with
# "train_errors: N passed, M failed" and exits 1 on a failure.
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=${GPT_BIN:-build/gpt}
NAME=train_errors
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }
T=$(mktemp -d /tmp/train_errors.XXXXXX)
finish() { echo "$NAME: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }
for f in "$B/train" "$B/prepare"; do
    if [ ! -x "$f" ]; then bad "$f is missing (make test-build builds it)"; finish; fi
done
export OMP_NUM_THREADS=1
SHAPE=(--layers 1 --d-model 16 --heads 2 --batch 2 --seq 16)
FLAGS=(--data "$T/data" "${SHAPE[@]}" --steps 2 --eval-every 0 --eval-batches 1 --panel 1 --log-every 0 --no-progress)

# expect CASE WORD... -- command...: exit status 1 or 2 (not a crash, not a timeout), stderr
# holding every word, and no training started (no "model:" line on stdout)
expect() {
    local what=$1 out err rc w missing=""
    shift
    local words=()
    while [ "$1" != "--" ]; do words+=("$1"); shift; done
    shift
    out=$(timeout 60 "$@" 2>"$T/stderr"); rc=$?; err=$(cat "$T/stderr")
    for w in "${words[@]}"; do [[ "$err" == *"$w"* ]] || missing+=" '$w'"; done
    if { [ "$rc" = 1 ] || [ "$rc" = 2 ]; } && [ -z "$missing" ] && [[ "$out" != *"model:"* ]]; then ok "$what"
    else bad "$what: exit $rc, stderr lacks$missing: $err"; fi
}

for i in 0 1 2 3 4 5 6 7; do cat README.md examples/gpt/README.md; done > "$T/corpus.txt"
for i in 0 1 2 3 4 5 6 7; do cat CHANGELOG.md; done > "$T/other.txt"
if ! timeout 60 "$B/prepare" --vocab 300 --out "$T/data" "$T/corpus.txt" >/dev/null 2>&1 ||
    ! timeout 60 "$B/prepare" --vocab 300 --out "$T/other" "$T/other.txt" >/dev/null 2>&1; then
    bad "prepare of two small corpora"; finish
fi
if ! timeout 120 "$B/train" "${FLAGS[@]}" --out "$T/run" >/dev/null 2>&1; then bad "a valid run failed"; finish; fi

# 1. lr x weight decay above 1: the flags, the product and its limit, before training starts
expect "--lr-muon 100" "--lr-muon 100" "--wd-muon 0.1" "lr x weight decay = 10" "<= 1" -- \
    "$B/train" "${FLAGS[@]}" --lr-muon 100
expect "--lr-head 20" "--lr-head 20" "--wd-head 0.1" "= 2" "<= 1" -- "$B/train" "${FLAGS[@]}" --lr-head 20
expect "--lr-embed 4 --wd-embed 0.5" "--lr-embed 4" "--wd-embed 0.5" "= 2" -- \
    "$B/train" "${FLAGS[@]}" --lr-embed 4 --wd-embed 0.5
expect "rownorm head, --wd-head 1 --lr-head 3" "--lr-head 3" "--wd-head 1" "= 3" -- \
    "$B/train" "${FLAGS[@]}" --head rownorm --wd-head 1 --lr-head 3
expect "--experiment --lr-head-adamw 20" "--lr-head-adamw 20" "0.1" "= 2" "<= 1" -- \
    "$B/train" "${FLAGS[@]}" --experiment --out "$T/exp1" --lr-head-adamw 20 --lr-head-rownorm 3.2e-3

# 2. sampling from a finished checkpoint into a new directory: the sample, exit 0
out=$(timeout 60 "$B/train" "${FLAGS[@]}" --resume "$T/run/ckpt.bin" --out "$T/new" --sample 10 --prompt "the" 2>"$T/stderr")
rc=$?
if [ "$rc" = 0 ] && [[ "$out" == *"--- end of sample ---"* ]]; then ok "--resume --out NEWDIR --sample exits 0"
else bad "--resume --out NEWDIR --sample: exit $rc, stderr: $(cat "$T/stderr")"; fi

# 3. --resume refuses flags that conflict with the checkpoint, naming each and its value there
expect "--resume with conflicting flags" "--steps 100" "--d-model 128" "--lr-head 0.5" "checkpoint" -- \
    "$B/train" "${FLAGS[@]}" --resume "$T/run/ckpt.bin" --out "$T/r3" --steps 100 --d-model 128 --head adamw --lr-head 0.5
if [[ "$(cat "$T/stderr")" != *"--head"* ]]; then ok "--head adamw, as in the checkpoint, is not reported"
else bad "--head adamw (the checkpoint's head) reported: $(cat "$T/stderr")"; fi
if timeout 60 "$B/train" "${FLAGS[@]}" --resume "$T/run/ckpt.bin" --out "$T/r3b" --steps 2 --head adamw >/dev/null 2>&1
then ok "--resume with the checkpoint's own values"; else bad "--resume with the checkpoint's own values failed"; fi

# 4. an inconsistent model: each rule names its flags
expect "--d-model 65 --heads 2" "--d-model 65" "multiple of --heads 2" -- \
    "$B/train" "${FLAGS[@]}" --d-model 65 --heads 2
expect "--d-model 6 --heads 2" "--d-model 6 / --heads 2 = 3" "even" -- "$B/train" "${FLAGS[@]}" --d-model 6 --heads 2

# 5. a flag taken as the value of the one before it
expect "--steps --seed 2" "--steps needs a value" "--seed" -- "$B/train" "${FLAGS[@]}" --steps --seed 2

# 6. data files carry their tokenizer: a val.bin of another tokenizer of the same vocabulary is refused
mkdir -p "$T/mixed" && cp "$T/data/tokenizer.bin" "$T/data/train.bin" "$T/mixed/" && cp "$T/other/val.bin" "$T/mixed/"
if ! cmp -s "$T/data/tokenizer.bin" "$T/other/tokenizer.bin"; then ok "two tokenizers differ"
else bad "the two corpora gave the same tokenizer"; fi
expect "val.bin of another tokenizer" "$T/mixed/val.bin" "$T/mixed/tokenizer.bin" "another tokenizer" -- \
    "$B/train" "${FLAGS[@]}" --data "$T/mixed"
# a token file of the old format (version 1, no tokenizer identity): re-run prepare
mkdir -p "$T/old" && cp "$T/data/"*.bin "$T/old/"
printf '\001\000\000\000' | dd of="$T/old/val.bin" bs=1 seek=4 conv=notrunc 2>/dev/null
expect "a version-1 val.bin" "$T/old/val.bin" "prepare" -- "$B/train" "${FLAGS[@]}" --data "$T/old"
# prepare --check: 0 for current data of the demo's corpus, 1 (with the reason) for old or mixed
# data or data of another corpus; the demo uses it
if timeout 60 "$B/prepare" --out "$T/demo" >/dev/null 2>&1 && "$B/prepare" --check "$T/demo" >/dev/null 2>&1; then
    ok "prepare --check of current data of the demo's corpus"
else bad "prepare --check of current data of the demo's corpus failed"; fi
expect "prepare --check of another corpus's data" "$T/data/train.bin" "corpus" "0af5d03aa0cbd0f1" -- \
    "$B/prepare" --check "$T/data"
expect "prepare --check of old data" "$T/old/val.bin" "version" -- "$B/prepare" --check "$T/old"
expect "prepare --check of mixed data" "$T/mixed/val.bin" "another tokenizer" -- "$B/prepare" --check "$T/mixed"
if grep -qi 'prepare) --check' examples/gpt/train.mk; then ok "the demo re-prepares stale data (prepare --check)"
else bad "the demo rule does not run prepare --check"; fi

# 7. stdout not a terminal: plain progress lines (no carriage returns) every --progress-every seconds
timeout 120 "$B/train" "${FLAGS[@]}" --steps 30 --out "$T/p" --progress-every 0.001 >"$T/progress.txt" 2>&1
n=$(grep -c "^progress: step" "$T/progress.txt")
if [ "$n" -ge 5 ] && ! grep -q $'\r' "$T/progress.txt"; then ok "a run's progress lines ($n)"
else bad "a run's progress lines: $n, output: $(head -c 600 "$T/progress.txt")"; fi
timeout 120 "$B/train" "${FLAGS[@]}" --steps 30 --experiment --seeds 1 --out "$T/pe" --lr-head-adamw 4e-3 \
    --lr-head-rownorm 3.2e-3 --progress-every 0.001 >"$T/progress.txt" 2>&1
n=$(grep -c "progress: step" "$T/progress.txt")
if [ "$n" -ge 10 ] && ! grep -q $'\r' "$T/progress.txt" && grep -q "^experiment: adamw 0.004 s1: final val loss" "$T/progress.txt"
then ok "an experiment's progress lines ($n)"
else bad "an experiment's progress lines: $n, output: $(head -c 600 "$T/progress.txt")"; fi
if "$B/train" --help | grep -q -- "--progress-every S"; then ok "--progress-every in --help"
else bad "--progress-every missing from --help"; fi
finish
