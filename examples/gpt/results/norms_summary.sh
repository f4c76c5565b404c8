#!/usr/bin/env bash
# norms_summary.sh - one run's norms.csv (train --norms-every) summarised per block matrix, for
# results/cap and results/muown:
#   norms_summary.sh NORMS.CSV FROM PREFIX   rows "PREFIX,tensor,frob_slope,spec_slope,row_slope,
#       coh_slope,frob_0,frob_T,spec_0,spec_T,row_T,coh_T,h_0,h_T" on stdout
# *_slope: the least-squares slope of log(value) on log(step) over the logged steps >= FROM (the
# fitted drift exponent); *_0 at step 0, *_T at the last logged step. Numbers %.10g.
set -eu
awk -F, -v from="$2" -v prefix="$3" "$(cat "$(dirname "$0")/stats.awk")"'
    NR == 1 { next }
    { t = $2; if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
      if ($1 == 0) { f0[t] = $5; s0[t] = $6; h0[t] = $9 }
      if ($1 + 0 >= from + 0) { k = ++n[t]; lx[t, k] = log($1); lf[t, k] = log($5); ls[t, k] = log($6)
                                lr[t, k] = log($7); lc[t, k] = log($8) }
      fT[t] = $5; sT[t] = $6; rT[t] = $7; cT[t] = $8; hT[t] = $9 }
    END { for (j = 1; j <= nt; j++) { t = order[j]; m = n[t]
            for (k = 1; k <= m; k++) { X[k] = lx[t, k]; F[k] = lf[t, k]; S[k] = ls[t, k]; R[k] = lr[t, k]; C[k] = lc[t, k] }
            printf "%s,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", prefix, t,
                   slope(X, F, m), slope(X, S, m), slope(X, R, m), slope(X, C, m), f0[t], fT[t], s0[t], sT[t], rT[t], cT[t], h0[t], hT[t] } }
' "$1"
