#!/usr/bin/env bash
# train_files.sh - the trainer binaries against files that are not what they should be
# (issue 14, items 7 and 8): exit status and message of build/gpt/train and build/gpt/prepare
# with a device, FIFO or symlink where a file is read or written, and a log that cannot be
# written. Builds nothing (make test-build builds train and prepare); GPT_BIN overrides
# build/gpt. Ends with "train_files: N passed, M failed" and exits 1 on a failure.
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=${GPT_BIN:-build/gpt}
NAME=train_files
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }
T=$(mktemp -d /tmp/train_files.XXXXXX)
finish() { echo "$NAME: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }
for f in "$B/train" "$B/prepare"; do
    if [ ! -x "$f" ]; then bad "$f is missing (make test-build builds it)"; finish; fi
done
ulimit -v 4000000 2>/dev/null # a reader that did not stop at the file's size fails fast
export OMP_NUM_THREADS=1
FLAGS=(--data "$T/data" --layers 1 --d-model 16 --heads 2 --batch 2 --seq 16 --steps 2 --eval-every 0
       --eval-batches 1 --panel 1 --log-every 0 --no-progress)

# expect NAME-OF-CASE WORD1 WORD2 -- command...: non-zero exit, stderr holding both words
expect() {
    local what=$1 w1=$2 w2=$3 out rc
    shift 4
    out=$(timeout 60 "$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [[ "$out" == *"$w1"* ]] && [[ "$out" == *"$w2"* ]]; then ok "$what"
    else bad "$what: exit $rc, stderr: $out"; fi
}

for i in 0 1 2 3 4 5 6 7; do cat README.md examples/gpt/README.md; done > "$T/corpus.txt"
if ! timeout 60 "$B/prepare" --vocab 300 --out "$T/data" "$T/corpus.txt" >/dev/null 2>&1; then
    bad "prepare of a small corpus"; finish
fi
if timeout 120 "$B/train" "${FLAGS[@]}" --out "$T/okrun" --log "$T/ok.csv" --ckpt "$T/ok.ck" >/dev/null 2>&1; then ok "a valid run exits 0"
else bad "a valid run failed"; fi
# a single run writes its plots, with the recipe in the caption, and its log starts with the recipe
if [ -s "$T/okrun/loss.svg" ] && [ -s "$T/okrun/diameter.svg" ] && grep -q "1 layers, d 16" "$T/okrun/loss.svg" &&
    grep -q "^# head_lr=0.004$" "$T/ok.csv"; then ok "a single run's plots and recorded recipe"
else bad "a single run's plots (loss.svg, diameter.svg with caption) or its log's recipe"; fi

# a corpus too small for one batch at the trainer's default shape is refused, and nothing written
printf 'a few words only\n' > "$T/tiny.txt"
expect "prepare of a too-small corpus" "too small" "513" -- "$B/prepare" --vocab 300 --out "$T/tinydata" "$T/tiny.txt"
if [ ! -e "$T/tinydata/train.bin" ]; then ok "nothing written for it"; else bad "train.bin written for a too-small corpus"; fi

# item 7: only regular files are read
expect "prepare /dev/zero" /dev/zero "not a regular file" -- "$B/prepare" --out "$T/pz" /dev/zero
expect "--resume /dev/zero" /dev/zero "not a regular file" -- "$B/train" "${FLAGS[@]}" --resume /dev/zero
mkdir -p "$T/zdata" && cp "$T/data/"*.bin "$T/zdata/" && ln -sf /dev/zero "$T/zdata/tokenizer.bin"
expect "tokenizer.bin -> /dev/zero" tokenizer.bin "not a regular file" -- "$B/train" "${FLAGS[@]}" --data "$T/zdata"

# item 8: a log that cannot be written fails the run
expect "--log /dev/full" /dev/full "log" -- "$B/train" "${FLAGS[@]}" --ckpt none --log /dev/full
# a checkpoint path that is a device node (own copy of /dev/full, as root) or a FIFO is refused
node="$T/full"
if ! mknod "$node" c 1 7 2>/dev/null; then node="$T/fifo"; mkfifo "$node"; fi
expect "--ckpt onto a device / FIFO" "$node" "not a regular file" -- "$B/train" "${FLAGS[@]}" --log none --ckpt "$node"
if [ -c "$node" ] || [ -p "$node" ]; then ok "the node is still there"; else bad "$node was replaced"; fi
# a symlink is written through: the link stays, its target gets the checkpoint
ln -s target.ck "$T/link.ck"
if timeout 120 "$B/train" "${FLAGS[@]}" --log none --ckpt "$T/link.ck" >/dev/null 2>&1 && [ -L "$T/link.ck" ] &&
    cmp -s "$T/target.ck" "$T/ok.ck"; then ok "--ckpt through a symlink writes its target"
else bad "--ckpt through a symlink"; fi
finish
