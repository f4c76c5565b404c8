#!/usr/bin/env bash
# Runs test binaries, sums their "N passed, N failed" lines and prints the total.
# A binary that crashes or prints no summary counts as one failed test.
set -u
# OpenMP threads sleep instead of spinning between parallel regions: on a shared or loaded
# machine spinning threads steal the cores the working ones need (a 1 s test took 30-56 s at
# load 5). Results do not depend on it (the determinism tests compare thread counts).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
pass=0; fail=0; bad=()
for bin in "$@"; do
    t0=$(date +%s.%N)
    out=$("$bin" 2>&1); rc=$?
    dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }')
    line=$(printf '%s\n' "$out" | grep -E '^[A-Za-z0-9_.+-]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -z "$line" ]; then
        printf '%s\n' "$out" | tail -n 30
        echo "$bin: no summary line (exit $rc): counted as 1 failed"
        fail=$((fail + 1)); bad+=("$bin"); continue
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$f" != 0 ] || [ "$rc" != 0 ]; then
        printf '%s\n' "$out" | grep -v -E ': [0-9]+ passed, [0-9]+ failed$' | tail -n 40
        [ "$f" = 0 ] && f=1
        bad+=("$bin")
    fi
    printf '  %-40s %-22s %s\n' "$bin" "${line#*: }" "$dt"
    pass=$((pass + p)); fail=$((fail + f))
done
[ ${#bad[@]} -gt 0 ] && echo "failing: ${bad[*]}"
echo "total: $pass passed, $fail failed"
[ "$fail" = 0 ]
