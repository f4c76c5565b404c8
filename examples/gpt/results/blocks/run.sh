#!/usr/bin/env bash
# run.sh - the block-optimizer comparison of results/blocks/README.md: Muon, NorMuon, per-head Muon
# and per-head NorMuon on the block matrices, at the demo's shape and budget (make demo's
# DEMO_FLAGS: 2 layers, d 64, 2 heads, 400 updates of 8 x 64 tokens) on the built-in default
# corpus, AdamW head at its paper settings, 3 seeds each, everything else the trainer's defaults.
#   examples/gpt/results/blocks/run.sh [OUT] > table.md   (OUT defaults to /tmp/blocks; ~2 min on 2 cores)
# Prints a markdown table: final validation loss per seed, the mean, and the median wall time of
# an update (the train rows' ms column: forward, backward and every optimizer step).
set -eu
cd "$(dirname "$0")/../../../.."
OUT=${1:-/tmp/blocks}
make build/gpt/train build/gpt/prepare >/dev/null
[ -f "$OUT/data/val.bin" ] || build/gpt/prepare --out "$OUT/data" >/dev/null
F=(--data "$OUT/data" --steps 400 --layers 2 --d-model 64 --heads 2 --batch 8 --seq 64 --eval-every 50
   --eval-batches 8 --panel 8 --diam-every 50 --log-every 0 --no-progress)
variants=("muon|--block muon" "normuon|--block normuon" "muon per head|--block muon --ns-per-head"
          "normuon per head|--block normuon --ns-per-head")
echo "| blocks | seed 1 | seed 2 | seed 3 | mean | median ms / update |"
echo "|---|---|---|---|---|---|"
for v in "${variants[@]}"; do
    name=${v%%|*}; flags=${v#*|}; tag=${name// /_}
    row="| $name |"; sum=0; ms_all=""
    for seed in 1 2 3; do
        # shellcheck disable=SC2086
        OMP_NUM_THREADS=2 build/gpt/train "${F[@]}" $flags --seed "$seed" --out "$OUT/$tag/s$seed" > "$OUT/$tag.s$seed.txt"
        csv=$OUT/$tag/s$seed/train.csv
        loss=$(awk -F, '$1 == "final" { printf "%.4f", $13 }' "$csv")
        row="$row $loss |"; sum=$(awk -v a="$sum" -v b="$loss" 'BEGIN { print a + b }')
        ms_all="$ms_all $(awk -F, '$1 == "train" { print $6 }' "$csv" | tr '\n' ' ')"
    done
    med=$(echo "$ms_all" | tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { printf "%.1f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    echo "$row $(awk -v s="$sum" 'BEGIN { printf "%.4f", s / 3 }') | $med |"
done
