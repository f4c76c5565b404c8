#!/usr/bin/env bash
# Runs every libFuzzer target in build/rel/fuzz for FUZZ_SECONDS seconds each (default 15, the
# CI budget: 19 targets, two at a time (each fuzzer uses one core), about 2.5 minutes), starting
# from the kept corpus tests/fuzz/corpus/<t>.
# New inputs go to build/rel/fuzz/new/<t> (the kept corpus is never written here; `make
# fuzz-merge` folds them in); a crash, sanitizer report, leak, timeout or failed check leaves
# build/rel/fuzz/artifacts/<t>-* and fails the target. Prints "fuzz: N passed, N failed"
# (one per target) and each target's executions; appends a line per run to
# build/rel/fuzz/history.txt (the totals for docs/reliability.md come from there).
set -u
cd "$(dirname "$0")/../.."
rel_name=fuzz
. tests/rel_lib.sh
secs=${FUZZ_SECONDS:-15}
fb=$REL_B/fuzz
mapfile -t targets < <(ls tests/fuzz/fuzz_*.c | sed -e 's|.*/||' -e 's|\.c$||' | grep -v '^fuzz_impl$')

rel_have clang || rel_missing clang "apt-get install clang"
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' |
    clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null ||
    rel_missing "the libFuzzer runtime of clang" "apt-get install clang (libclang-rt-dev)"
mkdir -p "$fb/artifacts"
# run: two targets at a time, each into its own log; then the accounting, in order
for t in "${targets[@]}"; do
    bin=$fb/$t
    [ -x "$bin" ] || continue
    mkdir -p "$fb/new/$t" "tests/fuzz/corpus/$t"
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
    (
        log=$fb/$t.run.log
        maxlen=4096 # the trainer readers need room for a whole (tiny) checkpoint
        [ "$t" = fuzz_gpt_files ] && maxlen=65536
        t0=$(date +%s)
        "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" -print_final_stats=1 \
            -artifact_prefix="$fb/artifacts/$t-" "$fb/new/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
        echo "$? $t0 $(date +%s)" > "$fb/$t.run.rc"
    ) &
done
wait
for t in "${targets[@]}"; do
    bin=$fb/$t
    if [ ! -x "$bin" ]; then
        rel_bad "$bin was not built"
        [ -f "$bin.log" ] && tail -n 20 "$bin.log"
        [ -f "$fb/impl.o.log" ] && tail -n 20 "$fb/impl.o.log"
        continue
    fi
    log=$fb/$t.run.log
    read -r rc t0 t1 < "$fb/$t.run.rc" || { rc=125; t0=0; t1=0; }
    rm -f "$fb/$t.run.rc"
    runs=$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}')
    if [ "$rc" = 0 ]; then
        rel_pass=$((rel_pass + 1))
        printf '    %-28s ok: %s runs in %s s\n' "$t" "${runs:-?}" "$((t1 - t0))"
        echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $t ok $((t1 - t0)) s ${runs:-?} runs" >> "$fb/history.txt"
    else
        grep -E 'fuzz finding|ERROR:|SUMMARY:|runtime error|Test unit written|^    #[0-9] ' "$log" | head -n 20
        rel_bad "$t (exit $rc after $((t1 - t0)) s; log $log)"
        echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $t FINDING after $((t1 - t0)) s" >> "$fb/history.txt"
    fi
done
rel_finish
