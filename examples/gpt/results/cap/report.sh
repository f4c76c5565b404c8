#!/usr/bin/env bash
# report.sh - results/cap's table and plots from the runs of run.sh:
#   examples/gpt/results/cap/report.sh OUT [DEST]
# reads OUT/<arm>.s<seed>/{train.csv,norms.csv}, writes DEST (default OUT): tensors.csv (per run
# and block matrix: fitted exponents, first and last values), results.csv (per run: the final
# validation loss and the means over the 14 block matrices), table.md, frob.svg, spectral.svg,
# h_inf.svg (REPORT_ROWS_ONLY=1: the two CSVs only). Exponents: the slope of log(norm) on log(updates) over updates 100..1000 (a decade).
set -eu
H=$(cd "$(dirname "$0")" && pwd)
OUT=$1; DEST=${2:-$1}
B=${GPT_BIN:-build/gpt}
LIB=$(cat "$H/../stats.awk")
mkdir -p "$DEST"
echo "arm,seed,tensor,frob_slope,spec_slope,row_slope,coh_slope,frob_0,frob_T,spec_0,spec_T,row_T,coh_T,h_0,h_T" > "$DEST/tensors.csv"
echo "arm,seed,val_loss,frob_slope,spec_slope,frob_slope_qk,spec_slope_qk,spec_T_gm,h_0,h_T" > "$DEST/results.csv"
for n in $("$H/run.sh" --list); do
    [ -f "$OUT/$n/norms.csv" ] || continue
    arm=${n%.s*}; seed=${n#*.s}
    "$H/../norms_summary.sh" "$OUT/$n/norms.csv" 100 "$arm,$seed" > "$DEST/t.part"
    cat "$DEST/t.part" >> "$DEST/tensors.csv"
    val=$(awk -F, '$1 == "final" { print $13 }' "$OUT/$n/train.csv")
    awk -F, -v v="$val" -v arm="$arm" -v seed="$seed" '
        { n++; f += $4; s += $5; g += log($11); h0 += $14; hT += $15
          if ($3 ~ /\.w[qk]$/) { nq++; fq += $4; sq += $5 } }
        END { printf "%s,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", arm, seed, v, f / n, s / n, fq / nq, sq / nq,
                     exp(g / n), h0 / n, hT / n }' "$DEST/t.part" >> "$DEST/results.csv"
done
rm -f "$DEST/t.part"
[ -z "${REPORT_ROWS_ONLY:-}" ] || exit 0 # the checks (tests/cap_table.sh) compare these rows only

# ---- plots: the geometric mean over the 14 block matrices (norms), the mean (H_inf); each arm's
# mean over its seeds with the seeds' range as a band
series() { # COLUMN LOG(0|1) -> rows arm,step,mean,lo,hi
    for n in $("$H/run.sh" --list); do
        [ -f "$OUT/$n/norms.csv" ] || continue
        awk -F, -v c="$1" -v lg="$2" -v run="$n" 'NR > 1 { v = lg ? log($c) : $c; s[$1] += v; k[$1]++; if (!($1 in o)) { o[$1] = 1; st[++ns] = $1 } }
            END { for (i = 1; i <= ns; i++) print run "," st[i] "," s[st[i]] / k[st[i]] }' "$OUT/$n/norms.csv"
    done | awk -F, -v lg="$2" '{ split($1, a, ".s"); key = a[1] SUBSEP $2; if (!(a[1] in seen)) { seen[a[1]] = 1; arms[++na] = a[1] }
            if (!(key in n)) { steps[a[1], ++ns[a[1]]] = $2; lo[key] = $3; hi[key] = $3 }
            n[key]++; s[key] += $3; if ($3 < lo[key]) lo[key] = $3; if ($3 > hi[key]) hi[key] = $3 }
        END { for (i = 1; i <= na; i++) for (j = 1; j <= ns[arms[i]]; j++) { key = arms[i] SUBSEP steps[arms[i], j]
                  if (steps[arms[i], j] == 0 && lg) continue
                  m = s[key] / n[key]; if (lg) printf "cap %s,%s,%.6g,%.6g,%.6g\n", arms[i], steps[arms[i], j], exp(m), exp(lo[key]), exp(hi[key])
                  else printf "cap %s,%s,%.6g,%.6g,%.6g\n", arms[i], steps[arms[i], j], m, lo[key], hi[key] } }'
}
ref() { # the t^(1/2) and t^(1/4) laws through the cap-off mean at update 100 (rows on stdin: that series)
    awk -F, '$1 == "cap off" && $2 == 100 { a = $3 } END { for (t = 100; t <= 1000; t += 100) {
        printf "t^(1/2) through cap off at 100,%d,%.6g\n", t, a * sqrt(t / 100); } for (t = 100; t <= 1000; t += 100)
        printf "t^(1/4) through cap off at 100,%d,%.6g\n", t, a * (t / 100) ^ 0.25 }'
}
CAP="Muon blocks, wd 0, lr 0.02 constant after a 5 % warm-up; 2 layers, d 64; 3 seeds (band: their range)"
series 5 1 > "$DEST/f.rows"; { cat "$DEST/f.rows"; ref < "$DEST/f.rows"; } |
    "$B/plot_csv" --out "$DEST/frob.svg" --log-x --log-y --title "||W||_F of the block matrices (geometric mean of 14)" \
    --xlabel updates --ylabel "||W||_F" --caption "$CAP"
series 6 1 > "$DEST/s.rows"; { cat "$DEST/s.rows"; ref < "$DEST/s.rows"; } |
    "$B/plot_csv" --out "$DEST/spectral.svg" --log-x --log-y --title "||W||_2 of the block matrices (geometric mean of 14)" \
    --xlabel updates --ylabel "||W||_2" --caption "$CAP"
series 9 0 | "$B/plot_csv" --out "$DEST/h_inf.svg" --title "H_inf = log(||W||_F^2 / ||W||_2^2) (mean of the 14 block matrices)" \
    --xlabel updates --ylabel "H_inf (nats)" --caption "$CAP"
rm -f "$DEST/f.rows" "$DEST/s.rows"

# ---- the table
awk -F, "$LIB"'
    FNR == 1 { next }
    FILENAME ~ /results.csv$/ { arm = $1; s = $2; if (!(arm in na)) { arms[++A] = arm } na[arm]++; k = na[arm]
        seed[arm, k] = s; L[arm, k] = $3; F[arm, k] = $4; S[arm, k] = $5; FQ[arm, k] = $6; SQ[arm, k] = $7
        ST[arm, k] = $8; H0[arm, k] = $9; HT[arm, k] = $10; next }
    { split($3, p, "."); ty = p[3]; key = $1 SUBSEP ty; if (!(ty in tyseen)) { tyseen[ty] = 1; types[++T] = ty }
      tf[key] += $4; ts[key] += $5; tn[key]++
      if (!((key, "min") in tfmin) || $4 < tfmin[key, "min"]) tfmin[key, "min"] = $4
      if (!((key, "max") in tfmax) || $4 > tfmax[key, "max"]) tfmax[key, "max"] = $4
      if (!((key, "min") in tsmin) || $5 < tsmin[key, "min"]) tsmin[key, "min"] = $5
      if (!((key, "max") in tsmax) || $5 > tsmax[key, "max"]) tsmax[key, "max"] = $5 }
    function col(arm, X, what,   k, x, lo, hi) {
        lo = 1e300; hi = -1e300; for (k = 1; k <= na[arm]; k++) { x[k] = X[arm, k]; if (x[k] < lo) lo = x[k]; if (x[k] > hi) hi = x[k] }
        mean_sd(x, na[arm]); return sprintf(what, M_MEAN) " (" sprintf(what, lo) " … " sprintf(what, hi) ")"
    }
    function paired(arm, X, lg,   k, d) { for (k = 1; k <= na[arm]; k++) d[k] = lg ? log(X[arm, k] / X["off", k]) : X[arm, k] - X["off", k]; ci(d, na[arm]) }
    END {
        print "| arm | seeds | final val loss | ‖W‖_F exponent | ‖W‖₂ exponent | ‖W‖_F exp. wq, wk | ‖W‖₂ exp. wq, wk | final ‖W‖₂ (geo. mean) | H∞ at 0 | final H∞ |"
        print "|---|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= A; i++) { a = arms[i]
            printf "| cap %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", a, na[a], col(a, L, "%.4f"), col(a, F, "%.3f"), col(a, S, "%.3f"),
                   col(a, FQ, "%.3f"), col(a, SQ, "%.3f"), col(a, ST, "%.3f"), col(a, H0, "%.3f"), col(a, HT, "%.3f") }
        print ""
        print "Exponents per matrix type (mean over the 2 layers and the seeds; the range over layers and seeds):"
        print ""
        printf "| arm |"; for (j = 1; j <= T; j++) printf " %s ‖W‖_F | %s ‖W‖₂ |", types[j], types[j]; print ""
        printf "|---|"; for (j = 1; j <= T; j++) printf "---|---|"; print ""
        for (i = 1; i <= A; i++) { a = arms[i]; printf "| cap %s |", a
            for (j = 1; j <= T; j++) { key = a SUBSEP types[j]
                printf " %.3f (%.3f … %.3f) | %.3f (%.3f … %.3f) |", tf[key] / tn[key], tfmin[key, "min"], tfmax[key, "max"],
                       ts[key] / tn[key], tsmin[key, "min"], tsmax[key, "max"] }
            print "" }
        print ""
        print "Paired against cap off, seed by seed (95 % intervals, Student t with n − 1 = 2 degrees of freedom):"
        print ""
        print "| arm | Δ final val loss | Δ ‖W‖_F exponent | Δ ‖W‖₂ exponent | final ‖W‖₂ ratio | Δ final H∞ |"
        print "|---|---|---|---|---|---|"
        for (i = 1; i <= A; i++) { a = arms[i]; if (a == "off") continue
            paired(a, L, 0); dl = sprintf("%+.4f [%+.4f, %+.4f]", CI_MEAN, CI_LO, CI_HI); vl[a] = noise(CI_LO, CI_HI, 0); ml[a] = CI_MEAN; il[a] = sprintf("[%+.4f, %+.4f]", CI_LO, CI_HI)
            paired(a, F, 0); df = sprintf("%+.3f [%+.3f, %+.3f]", CI_MEAN, CI_LO, CI_HI); vf[a] = noise(CI_LO, CI_HI, 0); mf[a] = CI_MEAN
            paired(a, S, 0); ds = sprintf("%+.3f [%+.3f, %+.3f]", CI_MEAN, CI_LO, CI_HI); vs[a] = noise(CI_LO, CI_HI, 0); ms[a] = CI_MEAN; is[a] = sprintf("[%+.3f, %+.3f]", CI_LO, CI_HI)
            paired(a, ST, 1); dr = sprintf("%.3f [%.3f, %.3f]", exp(CI_MEAN), exp(CI_LO), exp(CI_HI)); vr[a] = noise(CI_LO, CI_HI, 0); mr[a] = exp(CI_MEAN); ir[a] = sprintf("[%.3f, %.3f]", exp(CI_LO), exp(CI_HI))
            paired(a, HT, 0); dh = sprintf("%+.3f [%+.3f, %+.3f]", CI_MEAN, CI_LO, CI_HI); vh[a] = noise(CI_LO, CI_HI, 0); mh[a] = CI_MEAN; ih[a] = sprintf("[%+.3f, %+.3f]", CI_LO, CI_HI)
            printf "| cap %s | %s | %s | %s | %s | %s |\n", a, dl, df, ds, dr, dh }
        # the drift exponent of cap off against 1/2: the interval of the seed mean
        for (k = 1; k <= na["off"]; k++) { x[k] = F["off", k]; y[k] = S["off", k] }
        ci(x, na["off"]); fo = CI_MEAN; fol = CI_LO; foh = CI_HI; ci(y, na["off"]); so = CI_MEAN; sol = CI_LO; soh = CI_HI
        print ""
        print "## The answer at this scale"
        print ""
        printf "* **Drift exponent** (cap off, Muon without weight decay): ‖W‖_F grows as t^%.3f [%.3f, %.3f], ‖W‖₂ as t^%.3f [%.3f, %.3f] over updates 100–1000 (mean of the 14 block matrices, 95 %% interval over 3 seeds); the abstract'"'"'s t^(1/2) is %s for ‖W‖_F and %s for ‖W‖₂ (1/2 %s the interval). No plain-SGD arm: see \"What is not here\".\n", fo, fol, foh, so, sol, soh, (fol > 0.5 ? "exceeded" : foh < 0.5 ? "not reached" : "matched"), (sol > 0.5 ? "exceeded" : soh < 0.5 ? "not reached" : "matched"), (fol > 0.5 || foh < 0.5) ? "outside" : "inside"
        printf "* **The cap'"'"'s control of ‖W‖₂**: growth-only changes the ‖W‖₂ exponent by %+.3f %s (%s) and the final ‖W‖₂ by ×%.3f %s (%s); always by %+.3f %s (%s) and ×%.3f %s (%s).\n", ms["growth"], is["growth"], vs["growth"], mr["growth"], ir["growth"], vr["growth"], ms["always"], is["always"], vs["always"], mr["always"], ir["always"], vr["always"]
        printf "* **Isotropy** (final H∞, mean of the 14 matrices): growth-only %+.3f %s (%s), always %+.3f %s (%s) against cap off.\n", mh["growth"], ih["growth"], vh["growth"], mh["always"], ih["always"], vh["always"]
        printf "* **Validation loss**: growth-only %+.4f %s (%s), always %+.4f %s (%s) against cap off.\n", ml["growth"], il["growth"], vl["growth"], ml["always"], il["always"], vl["always"]
    }' "$DEST/results.csv" "$DEST/tensors.csv" > "$DEST/table.body"
{ cat "$H/table.head.md"; cat "$DEST/table.body"; } > "$DEST/table.md"
rm -f "$DEST/table.body"
