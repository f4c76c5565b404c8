#!/usr/bin/env bash
# report.sh - results/nsbudget's table and plots from the runs of run.sh:
#   examples/gpt/results/nsbudget/report.sh OUT [DEST]
# reads OUT/sv.d*/spectra.csv (the momentum spectra at d 64/128/256), OUT/{demo,m12}.{j5,auto}.s*/
# {train.csv,ns_budget.csv}; writes DEST (default OUT): spectra.csv (width, layer type, step, mean
# q50 over the layers), runs.csv (per paired run: final validation loss, median update and
# optimizer ms after the first budget, the last budget's mean steps), table.md, q50.svg.
set -eu
H=$(cd "$(dirname "$0")" && pwd)
OUT=$1; DEST=${2:-$1}
B=${GPT_BIN:-build/gpt}
LIB=$(cat "$H/../stats.awk")
mkdir -p "$DEST"
# ---- the spectra: sigma_50 / ||M||_F per layer type (mean over the layers), per eval step
echo "d,params,type,step,q50,q10,jordan_steps_max" > "$DEST/spectra.csv"
for d in 64 128 256; do
    f="$OUT/sv.d$d/spectra.csv"; [ -f "$f" ] || continue
    p=$(awk -F= '/^# params=/ { print $2 }' "$OUT/sv.d$d/train.csv")
    awk -F, -v d="$d" -v p="$p" 'NR > 1 { n = split($2, a, "."); t = a[n]; k = t SUBSEP $1
            if (!(t in seen)) { seen[t] = 1; types[++nt] = t } if (!((t, $1) in c)) steps[t, ++ns[t]] = $1
            c[k]++; s[k] += $4; q[k] += $3; if ($6 > mx[k]) mx[k] = $6 }
        END { for (i = 1; i <= nt; i++) for (j = 1; j <= ns[types[i]]; j++) { k = types[i] SUBSEP steps[types[i], j]
              printf "%s,%s,%s,%s,%.6g,%.6g,%d\n", d, p, types[i], steps[types[i], j], s[k] / c[k], q[k] / c[k], mx[k] } }' "$f"
done >> "$DEST/spectra.csv"
# ---- the paired runs
echo "model,arm,seed,val_loss,ms,opt_ms,share,budget_steps" > "$DEST/runs.csv"
for m in demo m12; do for a in j5 auto; do for s in 1 2 3; do
    r="$OUT/$m.$a.s$s"; [ -f "$r/train.csv" ] || continue
    bs=NaN
    [ ! -f "$r/ns_budget.csv" ] || bs=$(awk -F, 'NR > 1 { if ($1 != last) { last = $1; n = 0; t = 0 } n++; t += $6 }
        END { printf "%.3f", t / n }' "$r/ns_budget.csv")
    awk -F, -v m="$m" -v a="$a" -v s="$s" -v bs="$bs" '
        function med(x, n,    i, j, t) { for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
                                         return n % 2 ? x[(n + 1) / 2] : 0.5 * (x[n / 2] + x[n / 2 + 1]) }
        /^#/ || $1 == "kind" { next }
        $1 == "train" && $2 > 50 { n++; ms[n] = $6; om[n] = $16 }
        $1 == "final" { v = $13 }
        END { a1 = med(ms, n); b1 = med(om, n); printf "%s,%s,%s,%.10g,%.4f,%.4f,%.4f,%s\n", m, a, s, v, a1, b1, b1 / a1, bs }' \
        "$r/train.csv"
done; done; done >> "$DEST/runs.csv"
# ---- table.md
awk -F, "$LIB"'
    FNR == 1 { file++; next }
    file == 1 { key = $1 SUBSEP $3; if (!(key in got)) { got[key] = 1; ord[++no] = key; dd[no] = $1; tt[no] = $3; pp[$1] = $2 }
                q[key, $4] = $5; if ($4 >= 200) { pl[key] += log($5); npl[key]++ } js[key, $4] = $7; if ($4 + 0 > last) last = $4 + 0 }
    file == 2 { k = $1 SUBSEP $2; n[k]++; v[k, $3] = $4; ms[k] += $5; om[k] += $6; sh[k] += $7; if ($8 != "NaN") bs[k] += $8 }
    END {
        print "## The seed'"'"'s observation at this scale: sigma_50 / ||M||_F of the momentum (mean over the 2 layers)\n"
        print "| d | layer | 25 | 50 | 100 | 200 | 400 | plateau (200-400, geometric) | Jordan steps for f >= 0.7 at 400 (max) |"
        print "|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= no; i++) { k = ord[i]
            printf "| %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %d |\n", dd[i], tt[i], q[k, 25], q[k, 50], q[k, 100], q[k, 200], q[k, 400],
                   exp(pl[k] / npl[k]), js[k, 400] }
        print "\nExponent: least-squares slope of log(plateau) on log(parameters) over d 64, 128, 256 (the seed fits M^-0.25 to M^-0.96):\n"
        print "| layer | exponent |"; print "|---|---|"
        for (i = 1; i <= no; i++) if (!(tt[i] in done)) { done[tt[i]] = 1; m = 0
            for (j = 1; j <= no; j++) if (tt[j] == tt[i]) { m++; x[m] = log(pp[dd[j]]); y[m] = log(exp(pl[ord[j]] / npl[ord[j]])) }
            if (m >= 2) printf "| %s | %.3f |\n", tt[i], slope(x, y, m) }
        split("demo m12", models, " ")
        split("make demo'"'"'s model (2 layers, d 64), 400 updates|the 12M shape (6 layers, d 384, T 256, batch 4), 150 updates", what, "|")
        print "\n## Paired runs: --ns-steps auto against Jordan x 5 (3 seeds, the same seeds in both arms)\n"
        print "| model | J5 val loss | auto val loss | auto - J5 (mean, paired 95 % interval) | verdict | update ms J5 / auto | optimizer ms J5 / auto | optimizer share J5 / auto | auto mean steps (last budget) |"
        print "|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= 2; i++) { m = models[i]; kj = m SUBSEP "j5"; ka = m SUBSEP "auto"; if (!n[kj] || !n[ka]) continue
            nd = 0; sj = 0; sa = 0
            for (s = 1; s <= 3; s++) if (((kj, s) in v) && ((ka, s) in v)) { d[++nd] = v[ka, s] - v[kj, s]; sj += v[kj, s]; sa += v[ka, s] }
            ci(d, nd)
            printf "| %s | %.4f | %.4f | %+.4f [%+.4f, %+.4f] | %s | %.2f / %.2f | %.2f / %.2f | %.1f %% / %.1f %% | %.2f |\n", what[i], sj / nd, sa / nd,
                   CI_MEAN, CI_LO, CI_HI, noise(CI_LO, CI_HI, 0), ms[kj] / n[kj], ms[ka] / n[ka], om[kj] / n[kj], om[ka] / n[ka],
                   100 * sh[kj] / n[kj], 100 * sh[ka] / n[ka], bs[ka] / n[ka] }
    }' "$DEST/spectra.csv" "$DEST/runs.csv" > "$DEST/table.md"
# ---- q50.svg: sigma_50 / ||M||_F over training, one series per width and layer group (Q K, V O,
# gate up, down: geometric mean of the group's types)
awk -F, 'NR > 1 { g = ($3 == "wq" || $3 == "wk") ? "Q K" : ($3 == "wv" || $3 == "wo") ? "V O" : $3 == "w_down" ? "down" : "gate up"
                  k = "d " $1 " " g SUBSEP $4; if (!(k in n)) ord[++no] = k; n[k]++; s[k] += log($5) }
     END { for (i = 1; i <= no; i++) { split(ord[i], a, SUBSEP); printf "%s,%s,%.6g\n", a[1], a[2], exp(s[ord[i]] / n[ord[i]]) } }' \
    "$DEST/spectra.csv" |
    "$B/plot_csv" --out "$DEST/q50.svg" --log-y --title "median singular value of the momentum, sigma_50 / ||M||_F" \
    --xlabel updates --ylabel "sigma_50 / ||M||_F" --caption "Jordan x 5; 2 layers, d 64 / 128 / 256, 400 updates of 8 x 64 tokens; mean over the 2 layers"
