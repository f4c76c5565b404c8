#!/usr/bin/env bash
# cap_table.sh - results/cap checked like the demo (issue 50, item 4): README.md's quote, and the
# third seed of the growth-only cap (the cap and the norms log both exercised; cap off differs
# only in the cap) made again against the committed rows (study_check.sh; one 1000-update run,
# 15.7 s on a nearly idle machine). CAP_RUNS="off.s1 ..." makes others (run.sh --list names them).
exec "$(dirname "$0")/study_check.sh" cap ${CAP_RUNS:-growth.s3}
