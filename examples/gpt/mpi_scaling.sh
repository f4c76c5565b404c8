#!/usr/bin/env bash
# mpi_scaling.sh - tokens/s of the trainer on 1 process x 1 thread, 1 process x 2 threads and
# 2 MPI ranks x 1 thread (the same global batch, so the same work per update), median of REPS
# runs each; the figures in README.md "Many processes" come from it.
#   make build/gpt/train build/gpt/train_mpi build/gpt/prepare && examples/gpt/mpi_scaling.sh
# Per run: the median over updates 6..STEPS of tokens_per_update / ms (the CSV's tok_per_s: the
# whole update on rank 0, all-reduce and exchange included), then the median over REPS runs.
# Environment: STEPS (30), REPS (3), FLAGS (the model; default below), MPIRUN (mpirun).
set -u
cd "$(dirname "$0")/../.." || exit 1
B=build/gpt
STEPS=${STEPS:-30}
REPS=${REPS:-3}
MPIRUN=${MPIRUN:-mpirun}
FLAGS=${FLAGS:---layers 4 --d-model 128 --heads 2 --batch 16 --seq 64}
T=$(mktemp -d /tmp/mpi_scaling.XXXXXX)
test -f $B/data/val.bin || $B/prepare --out $B/data >/dev/null
RUNFLAGS=(-np 2)
if "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
    RUNFLAGS+=(--oversubscribe --bind-to none)
    [ "$(id -u)" = 0 ] && RUNFLAGS+=(--allow-run-as-root)
fi
COMMON=(--data $B/data $FLAGS --steps "$STEPS" --eval-every 0 --diam-every 0 --panel 0 --log-every 0 --no-progress
        --ckpt none)
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
run_tok_s() { # csv -> median tok/s of updates 6..
    awk -F, '$1 == "train" && $2 > 5 {print $7}' "$1" | median
}
echo "load before: $(uptime)"
for what in "1x1" "1x2" "2x1"; do
    vals=()
    for r in $(seq 1 "$REPS"); do
        csv=$T/$what.$r.csv
        case $what in
            1x1) OMP_NUM_THREADS=1 $B/train "${COMMON[@]}" --log "$csv" >/dev/null ;;
            1x2) OMP_NUM_THREADS=2 $B/train "${COMMON[@]}" --log "$csv" >/dev/null ;;
            2x1) OMP_NUM_THREADS=1 "$MPIRUN" "${RUNFLAGS[@]}" $B/train_mpi "${COMMON[@]}" --log "$csv" >/dev/null ;;
        esac
        vals+=("$(run_tok_s "$csv")")
    done
    med=$(printf '%s\n' "${vals[@]}" | median)
    printf '%s  runs: %s  median %.0f tok/s\n' "$what" "${vals[*]}" "$med"
    eval "med_${what}=$med"
done
echo "load after: $(uptime)"
awk -v a="$med_1x1" -v b="$med_1x2" -v c="$med_2x1" 'BEGIN {
    printf "speed-up vs 1x1: 1 process x 2 threads %.2f (efficiency %.0f%%), 2 ranks x 1 thread %.2f (efficiency %.0f%%)\n",
           b / a, 50 * b / a, c / a, 50 * c / a }'
rm -rf "$T"
