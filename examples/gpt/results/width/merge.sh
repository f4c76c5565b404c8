#!/usr/bin/env bash
# merge.sh - the width study's frontier per width from both runs of run.sh (OUT/d<d> and
# OUT/d<d>_low), read from the logs' recipe lines and final rows: every (head, rate) point once,
# the AdamW D needed to reach the RowNorm head's best loss (interpolated linearly in log D, as the
# experiment's matched-loss table), and where the two frontiers cross (the largest D below which
# RowNorm's frontier is lower, on 400 log-spaced points).   merge.sh [OUT]   (OUT: /tmp/width)
set -eu
OUT=${1:-/tmp/width}
for d in 64 128 256; do
    echo "## d $d"
    for f in "$OUT/d$d"/*.csv "$OUT/d${d}_low"/*.csv; do
        awk -F, '/^# head=/ { split($0, a, "="); h = a[2] } /^# head_lr=/ { split($0, a, "="); r = a[2] }
                 $1 == "final" { print h, r, $13, $12, $14 }' "$f"
    done | sort -k1,1 -k2,2g -u | awk -v d="$d" '
        { h[NR] = $1; r[NR] = $2; L[NR] = $3; D[NR] = $4; R[NR] = $5; n = NR }
        END {
            print "| head | peak rate | final val loss | final D(S) | Hilbert RMS |"; print "|---|---|---|---|---|"
            for (i = 1; i <= n; i++) printf "| %s | %g | %.4f | %.3e | %.3e |\n", h[i], r[i], L[i], D[i], R[i]
            best = 1e9
            for (i = 1; i <= n; i++) if (h[i] == "rownorm" && L[i] < best) { best = L[i]; bd = D[i] }
            ab = 1e9; for (i = 1; i <= n; i++) if (h[i] == "adamw" && L[i] < ab) ab = L[i]
            # AdamW points in increasing D: the first crossing of best
            na = 0; for (i = 1; i <= n; i++) if (h[i] == "adamw") { na++; ad[na] = D[i]; al[na] = L[i] }
            for (i = 1; i <= na; i++) for (j = i + 1; j <= na; j++) if (ad[j] < ad[i]) { t = ad[i]; ad[i] = ad[j]; ad[j] = t; t = al[i]; al[i] = al[j]; al[j] = t }
            nr = 0; for (i = 1; i <= n; i++) if (h[i] == "rownorm") { nr++; rd[nr] = D[i]; rl[nr] = L[i] }
            for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rd[j] < rd[i]) { t = rd[i]; rd[i] = rd[j]; rd[j] = t; t = rl[i]; rl[i] = rl[j]; rl[j] = t }
            need = -1
            for (i = 2; i <= na && need < 0; i++) if (al[i] <= best && al[i - 1] > best) {
                tt = (al[i - 1] - best) / (al[i - 1] - al[i]); need = exp(log(ad[i - 1]) + tt * (log(ad[i]) - log(ad[i - 1]))) }
            printf "\nbest losses: AdamW %.4f, RowNorm %.4f (D %.3e): gap %+.4f\n", ab, best, bd, best - ab
            if (need > 0) printf "AdamW needs D %.3e to reach RowNorm'"'"'s best loss: %.1fx RowNorm'"'"'s %.3e\n", need, need / bd, bd
            lo = (ad[1] > rd[1]) ? ad[1] : rd[1]; hi = (ad[na] < rd[nr]) ? ad[na] : rd[nr]; last = -1
            for (k = 0; k <= 400; k++) {
                x = exp(log(lo) + (log(hi) - log(lo)) * k / 400)
                for (i = 2; i <= na; i++) if (x <= ad[i]) { fa = al[i - 1] + (log(x) - log(ad[i - 1])) / (log(ad[i]) - log(ad[i - 1])) * (al[i] - al[i - 1]); break }
                for (i = 2; i <= nr; i++) if (x <= rd[i]) { fr = rl[i - 1] + (log(x) - log(rd[i - 1])) / (log(rd[i]) - log(rd[i - 1])) * (rl[i] - rl[i - 1]); break }
                if (fr < fa) last = x
            }
            printf "RowNorm'"'"'s frontier is below AdamW'"'"'s for D from %.3e (where both are measured) up to %.3e\n\n", lo, last
        }'
done
