#!/usr/bin/env bash
# run.sh - the runs of results/muown (issue 50, item 1): Muon blocks against Muown blocks (Adam on
# the row magnitudes, at the block rate), the same AdamW head and recipe otherwise.
#   examples/gpt/results/muown/run.sh [OUT]          the whole study into OUT (default /tmp/muown),
#                                                    then OUT/results.csv, table.md and the plots
#   examples/gpt/results/muown/run.sh OUT NAME...    only the named runs, no table; a name is
#                                                    ARM.lrRATE.wdWD.sSEED (e.g. muown.lr0.02.wd0.1.s3)
# The study: 1. each arm's block-rate sweep RATES at wd 0.1 on seeds 1, 2; 2. each arm's best rate
# (the lowest mean final validation loss of the two seeds) gets seed 3; 3. at each arm's best rate,
# wd 0 and wd 0.5 on seeds 1, 2, 3. Every run logs its block norms every 40 updates.
# Shape and budget of make demo: 2 layers, d 64, 2 heads, T 64, batch 8, 400 updates, the
# trainer's schedule (10 % warm-up, cosine to 10 %); the whole validation split at the end.
set -eu
cd "$(dirname "$0")/../../../.."
RATES="0.00125 0.0025 0.005 0.01 0.02 0.04 0.08"
FLAGS=(--steps 400 --layers 2 --d-model 64 --heads 2 --batch 8 --seq 64 --eval-every 0 --eval-batches 0
       --panel 8 --diam-every 100 --norms-every 40 --log-every 0 --no-progress --ckpt none)
OUT=${1:-/tmp/muown}
shift || true
. examples/gpt/results/study_env.sh
one() { # NAME
    local n=$1 arm lr wd seed r
    arm=${n%%.lr*}; r=${n#*.lr}; lr=${r%%.wd*}; r=${r#*.wd}; wd=${r%%.s*}; seed=${r##*.s}
    [ -f "$OUT/$n/train.csv" ] && grep -q '^final,' "$OUT/$n/train.csv" && return 0
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$B/train" --data "$B/data" "${FLAGS[@]}" --block "$arm" --lr-muon "$lr" \
        --wd-muon "$wd" --seed "$seed" --out "$OUT/$n" > "$OUT/$n.txt" 2>&1 || { cat "$OUT/$n.txt"; exit 1; }
}
if [ $# -gt 0 ]; then for n in "$@"; do one "$n"; done; exit 0; fi
loss() { awk -F, '$1 == "final" { print $13 }' "$OUT/$1/train.csv"; }
rm -f "$OUT/best.txt"
for arm in muon muown; do
    best=; bl=
    for lr in $RATES; do
        one "$arm.lr$lr.wd0.1.s1"; one "$arm.lr$lr.wd0.1.s2"
        m=$(awk -v a="$(loss "$arm.lr$lr.wd0.1.s1")" -v b="$(loss "$arm.lr$lr.wd0.1.s2")" 'BEGIN { printf "%.17g", (a + b) / 2 }')
        if [ -z "$bl" ] || awk -v m="$m" -v b="$bl" 'BEGIN { exit !(m < b) }'; then best=$lr; bl=$m; fi
    done
    echo "$arm $best" >> "$OUT/best.txt"
    for wd in 0.1 0 0.5; do for s in 1 2 3; do one "$arm.lr$best.wd$wd.s$s"; done; done
done
examples/gpt/results/muown/report.sh "$OUT"
