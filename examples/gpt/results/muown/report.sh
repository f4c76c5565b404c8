#!/usr/bin/env bash
# report.sh - results/muown's table and plots from the runs of run.sh:
#   examples/gpt/results/muown/report.sh OUT [DEST]
# reads OUT/ARM.lrRATE.wdWD.sSEED/{train.csv,norms.csv}, writes DEST (default OUT): tensors.csv
# (per run and block matrix: ||W||_2, row factor, coherence at update 0 and at the end),
# results.csv (per run: final val loss and the geometric means over the 14 block matrices of
# end / start of each), table.md, sweep.svg, spectral.svg, row_factor.svg, coherence.svg
# (REPORT_ROWS_ONLY=1: the two CSVs only). MARGIN (0.02) is the plateau's loss margin.
set -eu
H=$(cd "$(dirname "$0")" && pwd)
OUT=$1; DEST=${2:-$1}
B=${GPT_BIN:-build/gpt}
MARGIN=${MARGIN:-0.02}
LIB=$(cat "$H/../stats.awk")
mkdir -p "$DEST"
echo "arm,lr,wd,seed,tensor,spec_0,spec_T,row_0,row_T,coh_0,coh_T" > "$DEST/tensors.csv"
echo "arm,lr,wd,seed,val_loss,spec_ratio,row_ratio,coh_ratio,spec_T,row_T,coh_T" > "$DEST/results.csv"
for d in "$OUT"/*.lr*.wd*.s*/; do
    d=${d%/}; n=${d##*/}
    [ -f "$d/norms.csv" ] && grep -q '^final,' "$d/train.csv" || continue
    arm=${n%%.lr*}; r=${n#*.lr}; lr=${r%%.wd*}; r=${r#*.wd}; wd=${r%%.s*}; seed=${r##*.s}
    echo "$arm,$lr,$wd,$seed"
done | sort -t, -k1,1 -k2,2g -k3,3g -k4,4n > "$DEST/runs"
while IFS=, read -r arm lr wd seed; do
    d=$OUT/$arm.lr$lr.wd$wd.s$seed
    awk -F, -v key="$arm,$lr,$wd,$seed" 'NR > 1 { t = $2; if (!(t in seen)) { seen[t] = 1; o[++nt] = t }
            if ($1 == 0) { s0[t] = $6; r0[t] = $7; c0[t] = $8 } sT[t] = $6; rT[t] = $7; cT[t] = $8 }
        END { for (j = 1; j <= nt; j++) { t = o[j]
            printf "%s,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", key, t, s0[t], sT[t], r0[t], rT[t], c0[t], cT[t] } }' \
        "$d/norms.csv" > "$DEST/t.part"
    cat "$DEST/t.part" >> "$DEST/tensors.csv"
    val=$(awk -F, '$1 == "final" { print $13 }' "$d/train.csv")
    awk -F, -v key="$arm,$lr,$wd,$seed" -v v="$val" '{ n++; s += log($7 / $6); r += log($9 / $8); c += log($11 / $10)
            sT += log($7); rT += log($9); cT += log($11) }
        END { printf "%s,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", key, v, exp(s / n), exp(r / n), exp(c / n),
                     exp(sT / n), exp(rT / n), exp(cT / n) }' "$DEST/t.part" >> "$DEST/results.csv"
done < "$DEST/runs"
rm -f "$DEST/t.part" "$DEST/runs"
[ -z "${REPORT_ROWS_ONLY:-}" ] || exit 0 # the checks (tests/muown_table.sh) compare these rows only

# each arm's best rate: the lowest mean final val loss of seeds 1 and 2 at wd 0.1
best() { awk -F, -v arm="$1" 'NR > 1 && $1 == arm && $3 == 0.1 && $4 <= 2 { s[$2] += $5; n[$2]++ }
    END { for (r in s) if (n[r] == 2 && (b == "" || s[r] / 2 < bl)) { b = r; bl = s[r] / 2 } print b }' "$DEST/results.csv"; }
BEST_MUON=$(best muon); BEST_MUOWN=$(best muown)
CAP="2 layers, d 64, 400 updates, AdamW head; geometric mean of the 14 block matrices; mean of 3 seeds (band: their range)"
# the sweep: mean final val loss per rate (seeds 1, 2; band: their range)
awk -F, 'NR > 1 && $3 == 0.1 && $4 <= 2 { k = $1 SUBSEP $2; if (!(k in n)) { o[++m] = k; lo[k] = $5; hi[k] = $5 }
        n[k]++; s[k] += $5; if ($5 < lo[k]) lo[k] = $5; if ($5 > hi[k]) hi[k] = $5 }
    END { for (i = 1; i <= m; i++) { split(o[i], a, SUBSEP); printf "%s blocks,%s,%.6g,%.6g,%.6g\n", a[1], a[2], s[o[i]] / n[o[i]], lo[o[i]], hi[o[i]] } }' \
    "$DEST/results.csv" | "$B/plot_csv" --out "$DEST/sweep.svg" --log-x --title "Final validation loss against the block rate (wd 0.1)" \
    --xlabel "peak block learning rate" --ylabel "val loss" --caption "2 layers, d 64, 400 updates, AdamW head; mean of seeds 1, 2 (band: their range)"
# the drift plots, one per factor: at each arm's best rate, wd 0 and 0.1
for f in spectral:6:'||W||_2' row_factor:7:'row-magnitude factor max_i ||w_i||' coherence:8:'row-coherence factor ||W||_2 / max_i ||w_i||'; do
    name=${f%%:*}; r=${f#*:}; col=${r%%:*}; label=${r#*:}
    for arm in muon muown; do
        lr=$([ "$arm" = muon ] && echo "$BEST_MUON" || echo "$BEST_MUOWN")
        for wd in 0 0.1; do
            for s in 1 2 3; do
                awk -F, -v c="$col" -v s="$s" 'NR > 1 { v[$1] += log($c); k[$1]++; if (!($1 in o)) { o[$1] = 1; st[++ns] = $1 } }
                    END { for (i = 1; i <= ns; i++) print s "," st[i] "," v[st[i]] / k[st[i]] }' "$OUT/$arm.lr$lr.wd$wd.s$s/norms.csv"
            done | awk -F, -v name="$arm lr $lr wd $wd" '{ if (!($2 in n)) { o[++m] = $2; lo[$2] = $3; hi[$2] = $3 } n[$2]++; s[$2] += $3
                    if ($3 < lo[$2]) lo[$2] = $3; if ($3 > hi[$2]) hi[$2] = $3 }
                END { for (i = 1; i <= m; i++) printf "%s,%s,%.6g,%.6g,%.6g\n", name, o[i], exp(s[o[i]] / n[o[i]]), exp(lo[o[i]]), exp(hi[o[i]]) }'
        done
    done | "$B/plot_csv" --out "$DEST/$name.svg" --title "$label over training" --xlabel updates --ylabel "$label" --caption "$CAP"
done

# ---- the table
awk -F, -v bm="$BEST_MUON" -v bw="$BEST_MUOWN" -v margin="$MARGIN" "$LIB"'
    NR == 1 { next }
    { arm = $1; lr = $2; wd = $3; s = $4; L[arm, lr, wd, s] = $5; SR[arm, lr, wd, s] = $6; RR[arm, lr, wd, s] = $7; CR[arm, lr, wd, s] = $8
      if (wd == 0.1 && !((arm, lr) in rs)) { rs[arm, lr] = 1; rates[arm, ++nr[arm]] = lr } }
    function val(arm, lr, wd, k, n,   i, x) { for (i = 1; i <= n; i++) x[i] = X_[arm, lr, wd, i]; return 0 }
    function mean_of(A, arm, lr, wd, n,   i, x) { for (i = 1; i <= n; i++) x[i] = A[arm, lr, wd, i]; mean_sd(x, n); return M_MEAN }
    function rng(A, arm, lr, wd, n, f,   i, lo, hi) { lo = 1e300; hi = -1e300
        for (i = 1; i <= n; i++) { if (A[arm, lr, wd, i] < lo) lo = A[arm, lr, wd, i]; if (A[arm, lr, wd, i] > hi) hi = A[arm, lr, wd, i] }
        return sprintf(f, lo) " … " sprintf(f, hi) }
    # the plateau of an arm from losses P[rate index] (n rates): the contiguous rates around the
    # best within margin; its width in doublings of the rate (log2 max / min), lo and hi rates
    function plateau(arm, P,   i, b, lo, hi) { b = 1; for (i = 2; i <= nr[arm]; i++) if (P[i] < P[b]) b = i
        lo = b; while (lo > 1 && P[lo - 1] <= P[b] + margin) lo--; hi = b; while (hi < nr[arm] && P[hi + 1] <= P[b] + margin) hi++
        PL_LO = rates[arm, lo]; PL_HI = rates[arm, hi]; PL_EDGE = (lo == 1 || hi == nr[arm]); return log(PL_HI / PL_LO) / log(2) }
    END {
        print "### The sweep (wd 0.1; seeds 1, 2, and 3 at each arm'"'"'s best rate)"
        print ""
        print "| block rate | Muon: mean val loss (seeds) | Muown: mean val loss (seeds) |"
        print "|---|---|---|"
        for (i = 1; i <= nr["muon"]; i++) { lr = rates["muon", i]
            nm = (lr == bm) ? 3 : 2; nw = (lr == bw) ? 3 : 2
            printf "| %s | %.4f (%s)%s | %.4f (%s)%s |\n", lr, mean_of(L, "muon", lr, 0.1, nm), rng(L, "muon", lr, 0.1, nm, "%.4f"), lr == bm ? " **best**" : "",
                   mean_of(L, "muown", lr, 0.1, nw), rng(L, "muown", lr, 0.1, nw, "%.4f"), lr == bw ? " **best**" : "" }
        # plateaus on the mean of seeds 1, 2, and per seed
        for (a = 1; a <= 2; a++) { arm = a == 1 ? "muon" : "muown"
            for (i = 1; i <= nr[arm]; i++) P[i] = (L[arm, rates[arm, i], 0.1, 1] + L[arm, rates[arm, i], 0.1, 2]) / 2
            W[arm] = plateau(arm, P); WL[arm] = PL_LO; WH[arm] = PL_HI; WE[arm] = PL_EDGE
            for (s = 1; s <= 2; s++) { for (i = 1; i <= nr[arm]; i++) P[i] = L[arm, rates[arm, i], 0.1, s]; WS[arm, s] = plateau(arm, P); WSE[arm, s] = PL_EDGE } }
        print ""
        printf "Plateau (the contiguous rates around the best whose mean loss is within %s of the best mean; width in doublings of the rate, log2(max/min)): Muon %s … %s (%.0f doublings; seed 1: %.0f, seed 2: %.0f), Muown %s … %s (%.0f doublings; seed 1: %.0f, seed 2: %.0f)%s.\n",
            margin, WL["muon"], WH["muon"], W["muon"], WS["muon", 1], WS["muon", 2], WL["muown"], WH["muown"], W["muown"], WS["muown", 1], WS["muown", 2],
            (WE["muon"] || WE["muown"]) ? "; a plateau reaching the grid'"'"'s edge is a lower bound" : ""
        print ""
        print "### At each arm'"'"'s best rate: weight decay, and the drift over training"
        print ""
        print "| arm | rate | wd | val loss (seeds) | ‖W‖₂ end/start | row factor end/start | coherence end/start |"
        print "|---|---|---|---|---|---|---|"
        for (a = 1; a <= 2; a++) { arm = a == 1 ? "muon" : "muown"; lr = a == 1 ? bm : bw
            for (w = 1; w <= 3; w++) { wd = w == 1 ? 0 : w == 2 ? 0.1 : 0.5
                printf "| %s | %s | %s | %.4f (%s) | %.3f (%s) | %.3f (%s) | %.3f (%s) |\n", arm, lr, wd, mean_of(L, arm, lr, wd, 3), rng(L, arm, lr, wd, 3, "%.4f"),
                       mean_of(SR, arm, lr, wd, 3), rng(SR, arm, lr, wd, 3, "%.3f"), mean_of(RR, arm, lr, wd, 3), rng(RR, arm, lr, wd, 3, "%.3f"),
                       mean_of(CR, arm, lr, wd, 3), rng(CR, arm, lr, wd, 3, "%.3f") } }
        print ""
        print "(end/start: the geometric mean over the 14 block matrices of the value after the last update over the value at initialisation; the mean and range over 3 seeds of that.)"
        # paired comparisons, Muown - Muon, seed by seed (3 seeds)
        for (s = 1; s <= 3; s++) d[s] = L["muown", bw, 0.1, s] - L["muon", bm, 0.1, s]; ci(d, 3); pm = CI_MEAN; pl = CI_LO; ph = CI_HI
        for (a = 1; a <= 2; a++) { arm = a == 1 ? "muon" : "muown"; lr = a == 1 ? bm : bw
            for (s = 1; s <= 3; s++) { x0 = L[arm, lr, 0, s]; x1 = L[arm, lr, 0.1, s]; x5 = L[arm, lr, 0.5, s]
                mx = x0; if (x1 > mx) mx = x1; if (x5 > mx) mx = x5; mn = x0; if (x1 < mn) mn = x1; if (x5 < mn) mn = x5; SP[arm, s] = mx - mn
                d0[s] = x0 - x1; d5[s] = x5 - x1 }
            ci(d0, 3); D0[arm] = sprintf("%+.4f [%+.4f, %+.4f] (%s)", CI_MEAN, CI_LO, CI_HI, noise(CI_LO, CI_HI, 0))
            ci(d5, 3); D5[arm] = sprintf("%+.4f [%+.4f, %+.4f] (%s)", CI_MEAN, CI_LO, CI_HI, noise(CI_LO, CI_HI, 0))
            for (s = 1; s <= 3; s++) x[s] = SP[arm, s]; mean_sd(x, 3); SPM[arm] = M_MEAN }
        for (s = 1; s <= 3; s++) d[s] = SP["muown", s] - SP["muon", s]; ci(d, 3); sm = CI_MEAN; sl = CI_LO; sh = CI_HI
        for (s = 1; s <= 2; s++) dw[s] = WS["muown", s] - WS["muon", s]; ci(dw, 2); wm = CI_MEAN; wl = CI_LO; wh = CI_HI
        # drift: log ratios, Muown / Muon at wd 0, and the share of the row factor in Muon'"'"'s ||W||_2 growth at wd 0
        for (s = 1; s <= 3; s++) d[s] = log(SR["muown", bw, 0, s] / SR["muon", bm, 0, s]); ci(d, 3); dm = exp(CI_MEAN); dl = exp(CI_LO); dh = exp(CI_HI)
        for (s = 1; s <= 3; s++) d[s] = log(RR["muon", bm, 0, s]) / log(SR["muon", bm, 0, s]); ci(d, 3); shm = CI_MEAN; shl = CI_LO; shh = CI_HI
        for (s = 1; s <= 3; s++) d[s] = log(CR["muon", bm, 0, s]); ci(d, 3); cm = exp(CI_MEAN); cl = exp(CI_LO); ch = exp(CI_HI)
        print ""
        print "## The answer at this scale"
        print ""
        printf "* **Perplexity at the best rates** (Muon %s, Muown %s, wd 0.1): Muown − Muon val loss %+.4f [%+.4f, %+.4f] (perplexity ×%.3f): %s.\n", bm, bw, pm, pl, ph, exp(pm),
            (pl > 0 ? "Muown worse, **beyond seed noise**" : ph < 0 ? "Muown better, **beyond seed noise**" : "*within seed noise*")
        printf "* **Plateau** (within %s of the best mean loss): Muon %.0f doublings (%s … %s), Muown %.0f (%s … %s); per seed Muown − Muon %+.1f [%+.1f, %+.1f] doublings (2 seeds): %s.\n", margin,
            W["muon"], WL["muon"], WH["muon"], W["muown"], WL["muown"], WH["muown"], wm, wl, wh,
            (wl == wh ? "the same difference on both seeds (a grid of doublings and 2 seeds: the interval is degenerate, read it as consistent, not as measured)" : noise(wl, wh, 0))
        printf "* **Weight-decay sensitivity** (wd 0, 0.1, 0.5 at the best rate; spread = max − min of a seed'"'"'s three losses): Muon %.4f, Muown %.4f; Muown − Muon %+.4f [%+.4f, %+.4f]: %s. wd 0 − wd 0.1: Muon %s, Muown %s; wd 0.5 − wd 0.1: Muon %s, Muown %s.\n",
            SPM["muon"], SPM["muown"], sm, sl, sh, noise(sl, sh, 0), D0["muon"], D0["muown"], D5["muon"], D5["muown"]
        printf "* **Drift** (wd 0, best rates, 400 updates): ‖W‖₂ end/start, Muown / Muon ×%.3f [%.3f, %.3f] (%s); under Muon the row-magnitude factor carries %.0f %% [%.0f, %.0f] of log ‖W‖₂'"'"'s growth and the coherence factor changes by ×%.3f [%.3f, %.3f] (%s).\n",
            dm, dl, dh, noise(log(dl), log(dh), 0), 100 * shm, 100 * shl, 100 * shh, cm, cl, ch, noise(log(cl), log(ch), 0)
    }' "$DEST/results.csv" > "$DEST/table.body"
{ cat "$H/table.head.md"; cat "$DEST/table.body"; } > "$DEST/table.md"
rm -f "$DEST/table.body"
