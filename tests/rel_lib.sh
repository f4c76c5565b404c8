# rel_lib.sh - shared helpers of the reliability wrappers (sourced, not run).
# Each wrapper prints one "NAME: N passed, N failed" line that tests/run.sh sums, and exits
# non-zero on any failure. A tool that is missing fails the check when CI=true and is reported
# as "skipped: reason" (with 0 passed) otherwise: a skipped check never counts as passed.

REL_B=${REL_B:-build/rel}
rel_pass=0
rel_fail=0
rel_name=${rel_name:-rel}

# rel_missing TOOL WHY: the check cannot run here.
rel_missing() {
    if [ "${CI:-}" = true ]; then
        echo "$rel_name: FAILED: $1 not found ($2); .ci/run must install it"
        rel_fail=$((rel_fail + 1))
        rel_finish
    fi
    echo "skipped: $rel_name: $1 not found ($2)"
    echo "$rel_name: 0 passed, 0 failed"
    exit 0
}

rel_have() { command -v "$1" >/dev/null 2>&1; }

# rel_bad WHAT: one failed item, with a message.
rel_bad() { echo "FAILED: $*"; rel_fail=$((rel_fail + 1)); }

# rel_run_bin BIN [PREFIX...]: runs BIN (through PREFIX, e.g. qemu or valgrind) and adds its
# "N passed, N failed" counts. A missing binary (its build failed: the log is shown), a crash,
# a non-zero exit or a missing summary line counts as one failed test.
rel_run_bin() {
    local bin=$1; shift
    local out rc t0 t1
    if [ ! -x "$bin" ]; then
        rel_bad "$bin was not built"
        [ -f "$bin.log" ] && tail -n 30 "$bin.log"
        return
    fi
    t0=$(date +%s.%N)
    out=$("$@" "$bin" 2>&1); rc=$?
    t1=$(date +%s.%N)
    rel_account "$bin" "$out" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}

# rel_account BIN OUTPUT RC SECONDS: adds the counts of one finished run of BIN (as rel_run_bin).
rel_account() {
    local bin=$1 out=$2 rc=$3 secs=$4 line p f
    line=$(printf '%s\n' "$out" | grep -E '^[A-Za-z0-9_.+/-]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -z "$line" ]; then
        printf '%s\n' "$out" | tail -n 30
        rel_bad "$bin: no summary line (exit $rc)"
        return
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$f" != 0 ] || [ "$rc" != 0 ]; then
        printf '%s\n' "$out" | grep -v -E ': [0-9]+ passed, [0-9]+ failed$' | tail -n 40
        [ "$f" = 0 ] && f=1
        echo "FAILED: $bin (exit $rc)"
    fi
    printf '    %-44s %s (%s s)\n' "$bin" "${line#*: }" "$secs"
    rel_pass=$((rel_pass + p)); rel_fail=$((rel_fail + f))
}

# rel_run_bins_2 PREFIX_WORDS -- BIN...: rel_run_bin for each BIN, two at a time (for binaries
# that use about one core, as under qemu-user emulation), accounted in the order given. They must
# not share files (the library's test binaries write none).
rel_run_bins_2() {
    local prefix=() bins=() dir k bin
    while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
    shift
    bins=("$@")
    dir=$(mktemp -d /tmp/rel_run2.XXXXXX)
    for k in "${!bins[@]}"; do
        bin=${bins[$k]}
        [ -x "$bin" ] || continue
        while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
        ( t0=$(date +%s.%N); "${prefix[@]}" "$bin" > "$dir/$k.out" 2>&1; echo $? > "$dir/$k.rc"
          awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }' > "$dir/$k.t" ) &
    done
    wait
    for k in "${!bins[@]}"; do
        bin=${bins[$k]}
        if [ ! -x "$bin" ]; then
            rel_bad "$bin was not built"
            [ -f "$bin.log" ] && tail -n 30 "$bin.log"
            continue
        fi
        rel_account "$bin" "$(cat "$dir/$k.out")" "$(cat "$dir/$k.rc" 2>/dev/null || echo 125)" "$(cat "$dir/$k.t" 2>/dev/null)"
    done
    rm -rf "$dir"
}

rel_finish() {
    echo "$rel_name: $rel_pass passed, $rel_fail failed"
    [ "$rel_fail" = 0 ] && exit 0
    exit 1
}
