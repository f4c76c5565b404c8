#!/usr/bin/env bash
# A kill (SIGKILL: no handler, no clean-up) while the trainer writes a checkpoint leaves the
# previous checkpoint loadable, and resuming from it reproduces the uninterrupted run's losses
# bit for bit. The kill is placed exactly by tests/killshim.c (LD_PRELOAD): half way through
# the write of the checkpoint's bytes, or after they are complete but before the rename onto
# the checkpoint's name; on the first checkpoint write after resuming, and on the third. Needs build/gpt/train, build/gpt/prepare and build/rel/killshim.so (make test-build).
set -u
cd "$(dirname "$0")/.."
rel_name=ckpt_kill
. tests/rel_lib.sh
train=build/gpt/train prepare=build/gpt/prepare shim=$PWD/$REL_B/killshim.so
for f in "$train" "$prepare" "$shim"; do
    [ -e "$f" ] || { rel_bad "$f was not built"; rel_finish; }
done
d=$(mktemp -d "${TMPDIR:-/tmp}/ckpt_kill.XXXXXX")
trap 'rm -rf "$d"' EXIT
"$prepare" --vocab 300 --out "$d/data" docs/SPEC.md >/dev/null 2>&1 || { rel_bad "prepare failed"; rel_finish; }
T=("$train" --data "$d/data" --steps 8 --layers 1 --d-model 32 --heads 2 --batch 2 --seq 16
   --eval-every 0 --eval-batches 1 --panel 1 --diam-every 4 --no-progress)
export OMP_NUM_THREADS=1

# train losses "step loss" from a CSV log
losses() { awk -F, '$1 == "train" { print $2, $4 }' "$1"; }

# the uninterrupted reference
"${T[@]}" --out "$d/ref" --log "$d/ref.csv" >"$d/ref.out" 2>&1 || { rel_bad "reference run failed"; cat "$d/ref.out"; rel_finish; }
[ "$(losses "$d/ref.csv" | wc -l)" = 8 ] || { rel_bad "reference log has no 8 train rows"; rel_finish; }

# case MODE SKIP: stop at 4 (checkpoint), resume with a checkpoint every update and the kill
# armed on the (SKIP+1)-th checkpoint write, then resume from what is on disk and finish.
case_() {
    local mode=$1 skip=$2 c="$d/$1-$2" rc sum0 sum1 at
    mkdir -p "$c"
    "${T[@]}" --out "$c/run" --stop-at 4 --ckpt "$c/ck.bin" >"$c/stop.out" 2>&1 ||
        { rel_bad "$mode/$skip: --stop-at 4 failed"; return; }
    sum0=$(md5sum <"$c/ck.bin")
    # (the subshell keeps the shell's "Killed" notice off the output)
    ( KILLSHIM_AT=$mode KILLSHIM_SKIP=$skip KILLSHIM_FILE=$c/ck.bin LD_PRELOAD=$shim \
        "${T[@]}" --out "$c/run" --resume "$c/ck.bin" --ckpt "$c/ck.bin" --ckpt-every 1 \
        --log "$c/killed.csv" >"$c/killed.out" 2>&1; exit $? ) 2>/dev/null
    rc=$?
    if [ "$rc" != 137 ] || ! grep -q "killshim: SIGKILL" "$c/killed.out"; then
        rel_bad "$mode/$skip: the run was not killed during a checkpoint write (exit $rc)"; return
    fi
    rel_pass=$((rel_pass + 1))
    sum1=$(md5sum <"$c/ck.bin")
    at=$((4 + skip))   # the step of the last checkpoint that completed
    if [ "$skip" = 0 ]; then
        [ "$sum0" = "$sum1" ] && rel_pass=$((rel_pass + 1)) ||
            rel_bad "$mode/$skip: the previous checkpoint changed"
    fi
    if [ "$mode" = write ]; then
        # the torn temporary file is refused with a message, not loaded
        if "${T[@]}" --out "$c/torn" --resume "$c/ck.bin.tmp" >"$c/torn.out" 2>&1; then
            rel_bad "$mode/$skip: a torn checkpoint was accepted"
        elif [ -s "$c/torn.out" ]; then rel_pass=$((rel_pass + 1))
        else rel_bad "$mode/$skip: a torn checkpoint was refused without a message"; fi
    fi
    "${T[@]}" --out "$c/run" --resume "$c/ck.bin" --ckpt "$c/ck.bin" --log "$c/resumed.csv" \
        >"$c/resumed.out" 2>&1 || { rel_bad "$mode/$skip: resume after the kill failed"; cat "$c/resumed.out"; return; }
    if grep -q "resumed from .* at step $at of 8" "$c/resumed.out"; then rel_pass=$((rel_pass + 1))
    else rel_bad "$mode/$skip: did not resume at step $at"; head -3 "$c/resumed.out"; fi
    if [ "$(losses "$c/resumed.csv")" = "$(losses "$d/ref.csv" | awk -v a="$at" '$1 > a')" ] &&
       [ -n "$(losses "$c/resumed.csv")" ]; then rel_pass=$((rel_pass + 1))
    else rel_bad "$mode/$skip: losses after resuming differ from the uninterrupted run"; fi
}
for mode in write rename; do
    for skip in 0 2; do case_ "$mode" "$skip"; done
done
rel_finish
