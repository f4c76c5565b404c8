#!/usr/bin/env bash
# run.sh - the width study of results/width/README.md: the experiment's head-rate sweeps (default
# grids, extended at an edge) at d 64, 128 and 256 with the same token budget (400 updates of
# 8 x 64 tokens = 205k tokens per run), one seed, on Vim's help files (Debian's vim-runtime).
#   examples/gpt/results/width/run.sh [OUT]     (OUT defaults to /tmp/width; about 25 min on 2 cores)
set -eu
cd "$(dirname "$0")/../../../.."
OUT=${1:-/tmp/width}
make build/gpt/train build/gpt/prepare >/dev/null
[ -f "$OUT/data/val.bin" ] || build/gpt/prepare --vocab 4096 --out "$OUT/data" /usr/share/vim/vim90/doc/*.txt
for d in 64 128 256; do
    OMP_NUM_THREADS=2 build/gpt/train --experiment --seeds 1 --data "$OUT/data" --out "$OUT/d$d" \
        --steps 400 --layers 2 --d-model "$d" --heads $((d / 32)) --batch 8 --seq 64 --eval-every 100 \
        --eval-batches 8 --panel 8 --diam-every 100 --no-progress > "$OUT/d$d.txt"
done
# The AdamW grid above starts at 2e-3, whose D already exceeds the RowNorm head's best D at every
# width: the low end of the AdamW frontier, at the same budget (RowNorm fixed at its best, 0.0128).
for d in 64 128 256; do
    OMP_NUM_THREADS=2 build/gpt/train --experiment --seeds 1 --data "$OUT/data" --out "$OUT/d${d}_low" \
        --sweep-adamw 2.5e-4,5e-4,1e-3 --sweep-extend 0 --lr-head-rownorm 0.0128 \
        --steps 400 --layers 2 --d-model "$d" --heads $((d / 32)) --batch 8 --seq 64 --eval-every 100 \
        --eval-batches 8 --panel 8 --diam-every 100 --no-progress > "$OUT/d${d}_low.txt"
done
