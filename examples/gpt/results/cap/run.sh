#!/usr/bin/env bash
# run.sh - the runs of results/cap (issue 50, item 2): Muon blocks without weight decay, the
# spectral cap off / growth / always, 3 seeds each, every block matrix's norms logged
# (--norms-every 20: ||W||_F, ||W||_2, row factors, H_inf).
#   examples/gpt/results/cap/run.sh [OUT]            all 9 runs into OUT (default /tmp/cap), then
#                                                    OUT/results.csv, OUT/table.md and the plots
#   examples/gpt/results/cap/run.sh OUT NAME...      only the named runs (e.g. off.s3), no table
#   examples/gpt/results/cap/run.sh --list           the run names, one a line
# Shape of make demo (2 layers, d 64, 2 heads of 32, T 64, batch 8), 1000 updates at a constant
# block rate after a 5 % warm-up (--warmup 0.05 --final-lr 1: the drift law is stated for a
# fixed step size), block rate 0.02, wd 0 on the blocks; AdamW head at its paper settings.
set -eu
cd "$(dirname "$0")/../../../.."
ARMS="off growth always"
SEEDS="1 2 3"
FLAGS=(--steps 1000 --layers 2 --d-model 64 --heads 2 --batch 8 --seq 64 --warmup 0.05 --final-lr 1
       --lr-muon 0.02 --wd-muon 0 --eval-every 0 --eval-batches 0 --panel 8 --diam-every 100 --norms-every 20
       --log-every 0 --no-progress --ckpt none)
if [ "${1:-}" = --list ]; then for a in $ARMS; do for s in $SEEDS; do echo "$a.s$s"; done; done; exit 0; fi
OUT=${1:-/tmp/cap}
shift || true
. examples/gpt/results/study_env.sh
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <("$0" --list)
for n in "${names[@]}"; do
    arm=${n%.s*}; seed=${n#*.s}
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$B/train" --data "$B/data" "${FLAGS[@]}" --cap "$arm" --seed "$seed" \
        --out "$OUT/$n" > "$OUT/$n.txt" 2>&1 || { cat "$OUT/$n.txt"; exit 1; }
done
[ $# -gt 0 ] || examples/gpt/results/cap/report.sh "$OUT"
