#!/usr/bin/env bash
# run.sh - the runs of results/nsbudget (issue 49, item 2): the Newton-Schulz budget from the
# momentum's spectra (--ns-steps auto) against Jordan x 5, on the default corpus, 2 threads.
#   examples/gpt/results/nsbudget/run.sh [OUT]          every run into OUT (default /tmp/nsbudget),
#                                                       then OUT/table.md and the plots (report.sh)
#   examples/gpt/results/nsbudget/run.sh OUT NAME...    only the named runs, no table
#   examples/gpt/results/nsbudget/run.sh --list         the run names, one a line
# Runs:
#   sv.d64, sv.d128, sv.d256   the seed's observation at this scale: Jordan x 5, 2 layers, d 64 /
#                              128 / 256 (heads of 32), 400 updates of 8 x 64 tokens (one token
#                              budget), every block matrix's momentum spectrum every 25 updates (--sv all)
#   demo.{j5,auto}.s{1,2,3}    make demo's model (2 layers, d 64), 400 updates, AdamW head, budget
#                              every 50 updates
#   m12.{j5,auto}.s{1,2,3}     train_bench's 12M shape (6 layers, d 384, 6 heads, SwiGLU 1024, T 256,
#                              batch 4; vocab 2048 here), 150 updates (short: budgets at 50 and 100),
#                              AdamW head
set -eu
cd "$(dirname "$0")/../../../.."
SEEDS="1 2 3"
list() {
    for d in 64 128 256; do echo "sv.d$d"; done
    for m in demo m12; do for a in j5 auto; do for s in $SEEDS; do echo "$m.$a.s$s"; done; done; done
}
if [ "${1:-}" = --list ]; then list; exit 0; fi
OUT=${1:-/tmp/nsbudget}
shift || true
. examples/gpt/results/study_env.sh
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(list)
COMMON=(--log-every 0 --no-progress --ckpt none --head adamw)
for n in "${names[@]}"; do
    case $n in
    sv.d*)
        d=${n#sv.d}
        flags=(--steps 400 --layers 2 --d-model "$d" --heads $((d / 32)) --batch 8 --seq 64 --eval-every 25
               --eval-batches 4 --panel 8 --diam-every 100 --sv all --seed 1) ;;
    demo.*)
        flags=(--steps 400 --layers 2 --d-model 64 --heads 2 --batch 8 --seq 64 --eval-every 100 --eval-batches 8
               --panel 8 --diam-every 100) ;;
    m12.*)
        flags=(--steps 150 --layers 6 --d-model 384 --heads 6 --mlp 1024 --batch 4 --seq 256 --eval-every 150
               --eval-batches 8 --panel 4 --diam-every 150) ;;
    *) echo "run.sh: unknown run $n (see --list)" >&2; exit 2 ;;
    esac
    case $n in
    *.j5.s*) flags+=(--ns-steps 5 --seed "${n##*.s}") ;;
    *.auto.s*) flags+=(--ns-steps auto --ns-every 50 --seed "${n##*.s}") ;;
    esac
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$B/train" --data "$B/data" "${COMMON[@]}" "${flags[@]}" --out "$OUT/$n" \
        > "$OUT/$n.txt" 2>&1 || { cat "$OUT/$n.txt"; exit 1; }
done
[ $# -gt 0 ] || examples/gpt/results/nsbudget/report.sh "$OUT"
