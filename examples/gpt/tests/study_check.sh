#!/usr/bin/env bash
# study_check.sh - a committed study of issue 50 is what a fresh run gives, and README.md quotes
# its answer (the demo's check, tests/demo_table.sh, for results/cap and results/muown):
#   examples/gpt/tests/study_check.sh STUDY RUN...     STUDY cap or muown; RUN names of run.sh
#   1. README.md's block between "<!-- STUDY-answer -->" and "<!-- /STUDY-answer -->" is, line for
#      line, the "## The answer at this scale" section of examples/gpt/results/STUDY/table.md;
#   2. the named runs made again with the committed flags (run.sh OUT RUN...), summarised by the
#      study's report.sh (REPORT_ROWS_ONLY=1), give the committed rows of results.csv and
#      tensors.csv: the same digits on the ISA the committed runs were made on, else within
#      TOL_LOSS (0.02) in final validation loss and TOL_REL (0.05, relative) in every norm and
#      TOL_EXP (0.02, absolute) in every exponent and H_inf (training amplifies last-bit
#      differences across ISAs: the demo measured 0.0016 in loss between AVX-512 and AVX2);
#   3. without --norms-every a run writes no norms.csv (the log is off by default);
#   4. a run stopped (--stop-at) and resumed writes the uninterrupted run's norms.csv.
# Ends with "STUDY_table: N passed, M failed" and exits 1 on a failure.
set -u
cd "$(dirname "$0")/../../.." || exit 1
S=$1; shift
NAME=${S}_table
R=examples/gpt/results/$S
TOL_LOSS=${TOL_LOSS:-0.02}; TOL_REL=${TOL_REL:-0.05}; TOL_EXP=${TOL_EXP:-0.02}
B=${GPT_BIN:-build/gpt}
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }
T=$(mktemp -d "/tmp/$NAME.XXXXXX")
finish() { echo "$NAME: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }
for f in table.md results.csv tensors.csv; do [ -f "$R/$f" ] || { bad "$R/$f is missing (run.sh + report.sh write it)"; finish; }; done
# 1. the quote
sed -n '/^## The answer at this scale$/,/^## /p' "$R/table.md" | sed '1d;/^## /d' | sed '/^$/d' > "$T/answer"
sed -n "/<!-- $S-answer -->/,/<!-- \/$S-answer -->/p" README.md | sed '1d;$d' | sed '/^$/d' > "$T/quote"
if [ ! -s "$T/answer" ]; then bad "$R/table.md has no answer section"
elif [ ! -s "$T/quote" ]; then bad "README.md has no <!-- $S-answer --> block"
elif cmp -s "$T/answer" "$T/quote"; then ok "README.md quotes the committed answer of $R/table.md"
else bad "README.md's $S-answer block differs from $R/table.md's answer:"; diff "$T/quote" "$T/answer" | head -20; fi
# 2. fresh runs
if ! GPT_BIN=$B "$R/run.sh" "$T/runs" "$@" > "$T/run.log" 2>&1; then tail -5 "$T/run.log"; bad "run.sh $* failed"; finish; fi
if ! GPT_BIN=$B REPORT_ROWS_ONLY=1 "$R/report.sh" "$T/runs" "$T/fresh" > "$T/report.log" 2>&1; then
    tail -5 "$T/report.log"; bad "report.sh failed"; finish; fi
for f in results.csv tensors.csv; do
    # the committed rows of the runs made again: those whose key (the columns before the values) is in the fresh file
    nk=$(head -1 "$T/fresh/$f" | awk -F, '{ for (i = 1; i <= NF; i++) if ($i ~ /^(arm|lr|wd|seed|tensor)$/) k = i; print k }')
    awk -F, -v nk="$nk" 'NR == FNR { key = $1; for (i = 2; i <= nk; i++) key = key "," $i; want[key] = 1; next }
        FNR == 1 { print; next } { key = $1; for (i = 2; i <= nk; i++) key = key "," $i; if (key in want) print }' \
        "$T/fresh/$f" "$R/$f" > "$T/committed.$f"
    rows=$(($(wc -l < "$T/fresh/$f") - 1))
    if [ "$rows" -lt 1 ]; then bad "$f: the fresh runs gave no rows"
    elif cmp -s "$T/fresh/$f" "$T/committed.$f"; then ok "$f: $rows rows of the runs made again ($*) equal the committed ones, digit for digit"
    else
        awk -F, -v nk="$nk" -v tl="$TOL_LOSS" -v tr="$TOL_REL" -v te="$TOL_EXP" '
            function d(a, b) { return a > b ? a - b : b - a }
            FNR == 1 { for (i = 1; i <= NF; i++) name[i] = $i; next }
            NR == FNR { key = $1; for (i = 2; i <= nk; i++) key = key "," $i; c[key] = $0; n++; next }
            { key = $1; for (i = 2; i <= nk; i++) key = key "," $i
              if (!(key in c)) { printf "  %s: not in the committed file\n", key; badrow++; next }
              seen[key] = 1; split(c[key], w, ",")
              for (i = nk + 1; i <= NF; i++) {
                  if (name[i] ~ /loss/) { lim = tl; x = d($i, w[i]) }
                  else if (name[i] ~ /slope|^h_/) { lim = te; x = d($i, w[i]) }
                  else { lim = tr; x = d($i, w[i]) / (w[i] > 0 ? w[i] : 1) }
                  if (x > lim) { printf "  %s %s: %s, committed %s\n", key, name[i], $i, w[i]; badrow++ } } }
            END { for (k in c) if (!(k in seen)) { printf "  %s: missing from the fresh runs\n", k; badrow++ }
                  exit badrow > 0 }' "$T/committed.$f" "$T/fresh/$f" > "$T/cmp"
        rc=$?; cat "$T/cmp"
        if [ "$rc" = 0 ]; then ok "$f: $rows rows of the runs made again within tolerance (loss $TOL_LOSS, norms $TOL_REL relative, exponents and H_inf $TOL_EXP)"
        else bad "$f: the runs made again ($*) are beyond tolerance of the committed rows"; fi
    fi
done
# 3. off by default
if "$B/train" --data "$B/data" --steps 3 --layers 1 --d-model 32 --heads 1 --batch 2 --seq 16 --eval-every 0 \
       --eval-batches 1 --log-every 0 --no-progress --ckpt none --out "$T/plain" > "$T/plain.log" 2>&1 &&
   [ -f "$T/plain/train.csv" ] && [ ! -e "$T/plain/norms.csv" ]; then ok "a run without --norms-every writes no norms.csv"
else bad "a run without --norms-every: failed or wrote norms.csv"; tail -3 "$T/plain.log"; fi
# 4. a run stopped and resumed logs the same norms.csv as one uninterrupted (no row lost or doubled)
small=(--data "$B/data" --steps 20 --layers 1 --d-model 32 --heads 1 --batch 2 --seq 16 --eval-every 0 --eval-batches 1
       --log-every 0 --no-progress --norms-every 5)
if "$B/train" "${small[@]}" --ckpt none --out "$T/whole" > "$T/r.log" 2>&1 &&
   "$B/train" "${small[@]}" --stop-at 10 --out "$T/parts" >> "$T/r.log" 2>&1 &&
   "$B/train" --resume "$T/parts/ckpt.bin" --data "$B/data" --eval-every 0 --eval-batches 1 --log-every 0 --no-progress \
       --norms-every 5 --out "$T/parts" >> "$T/r.log" 2>&1 && cmp -s "$T/whole/norms.csv" "$T/parts/norms.csv" &&
   [ "$(wc -l < "$T/whole/norms.csv")" = 36 ]; then ok "stopped at 10 and resumed: the norms.csv of the uninterrupted run (5 samples x 7 matrices)"
else bad "stopped and resumed: another norms.csv than the uninterrupted run's"; tail -3 "$T/r.log"; fi
finish
