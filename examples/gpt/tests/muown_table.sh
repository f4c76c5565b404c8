#!/usr/bin/env bash
# muown_table.sh - results/muown checked like the demo (issue 50, item 4): README.md's quote, and
# the third seed at wd 0 of both arms at their best rate (the drift runs) made again against the
# committed rows (study_check.sh; two 400-update runs, 12.4 s on a nearly idle machine).
# MUOWN_RUNS="muown.lr0.02.wd0.1.s1 ..." makes others (names: ARM.lrRATE.wdWD.sSEED).
exec "$(dirname "$0")/study_check.sh" muown ${MUOWN_RUNS:-muon.lr0.005.wd0.s3 muown.lr0.005.wd0.s3}
