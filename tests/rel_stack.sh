#!/usr/bin/env bash
# The worst-case stack of every public function stays within tests/stack_budget.txt (firmware
# threads have a few KB): both implementations in one C99 TU, built scalar, AVX2 and AVX-512 with
# GCC's -fcallgraph-info=su, each public function's deepest path summed by tests/stack_paths.awk.
# Fails on a function over its budget, a public function with no budget line, or recursion. The
# check can fail: a probe TU with a 4 KB frame two calls down must measure >= 3968, and a
# recursive probe must be reported as a cycle.
# `tests/rel_stack.sh --table` prints, after the checks, the table's lines as measured now
# (the maximum over the builds, rounded up to 256): paste them when a frame changes on purpose.
set -u
table=0; [ "${1:-}" = --table ] && table=1
cd "$(dirname "$0")/.."
rel_name=stack
. tests/rel_lib.sh
rel_have gcc || rel_missing gcc "gcc"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
if ! gcc -fcallgraph-info=su -x c -c /dev/null -o "$T/probe.o" 2>/dev/null; then
    rel_missing gcc "gcc >= 10 (-fcallgraph-info)"
fi
measure() { # measure SRC NAME FLAGS... -> $T/NAME.txt (depth<TAB>function<TAB>path)
    local src=$1 name=$2; shift 2
    (cd "$T" && gcc -std=c99 -O2 -I"$OLDPWD" "$@" -fcallgraph-info=su -c "$src" -o "$name.o") \
        > "$T/$name.log" 2>&1 || { cat "$T/$name.log"; return 1; }
    awk -f tests/stack_paths.awk "$T/$name.ci" > "$T/$name.txt"
}
# The probes: the measurement sees a deep frame behind two calls (a leaf may keep 128 B of it in
# the x86-64 red zone, below the stack pointer: >= 4096 - 128), and sees recursion.
cat > "$T/probe.c" <<'P'
static __attribute__((noinline)) int leaf(volatile char *p) { volatile char b[4096]; b[0] = *p; return b[0] + b[4095]; }
static __attribute__((noinline)) int mid(volatile char *p) { return leaf(p) + 1; }
int rn_probe_deep(volatile char *p) { return mid(p); }
int rn_probe_rec(int n) { volatile char b[64]; b[0] = (char)n; return n > 1 ? rn_probe_rec(n - 1) + rn_probe_rec(n - 2) + b[0] : n; }
P
if measure probe.c probe; then
    d=$(awk -F'\t' '$2 == "rn_probe_deep" { print $1 }' "$T/probe.txt")
    if [ -n "$d" ] && [ "$d" -ge 3968 ]; then rel_pass=$((rel_pass + 1)); echo "    probe: a 4 KB frame two calls down measures $d"
    else rel_bad "probe: a 4 KB frame two calls down measured '${d:-nothing}'"; fi
    if grep -q $'\trn_probe_rec\t.*cycle' "$T/probe.txt"; then rel_pass=$((rel_pass + 1)); echo "    probe: recursion is reported"
    else rel_bad "probe: recursion was not reported"; fi
else
    rel_bad "probe did not compile"
fi
printf '#define ROWNORM_IMPLEMENTATION\n#define MUON_IMPLEMENTATION\n#include "rownorm.h"\n#include "muon.h"\n' > "$T/impl.c"
budget=$(grep -v '^#' tests/stack_budget.txt)
for m in "scalar:-DRN_NO_SIMD -DMUON_NO_SIMD" "avx2:-mavx2 -mfma" "avx512:-mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma"; do
    name=${m%%:*}; flags=${m#*:}
    if ! measure impl.c "$name" $flags; then rel_bad "$name: the implementation did not compile"; continue; fi
    out=$(printf '%s\n' "$budget" | awk -F'\t' -v build="$name" '
        NR == FNR { lim[$1] = $2; next }
        { n++; f = $2
          if ($3 ~ /cycle/) { print "FAILED: " build ": " f " recurses (" $3 ")"; bad++; next }
          if (!(f in lim)) { print "FAILED: " build ": " f " (" $1 " B) has no line in tests/stack_budget.txt"; bad++; next }
          if ($1 + 0 > lim[f] + 0) { print "FAILED: " build ": " f " needs " $1 " B > " lim[f] " B budget, via " $3; bad++; next }
          if ($1 + 0 > max) { max = $1 + 0; mf = f } }
        END { printf "    %s: %d public functions, %d over budget; deepest within budget %s %d B\n", build, n, bad, mf, max }' - "$T/$name.txt")
    printf '%s\n' "$out"
    nb=$(printf '%s\n' "$out" | grep -c '^FAILED' || true)
    if [ "$nb" -eq 0 ]; then rel_pass=$((rel_pass + 1)); else rel_fail=$((rel_fail + nb)); fi
done
if [ "$table" = 1 ]; then
    echo "--- measured (function<TAB>bytes, max over the builds, rounded up to 256):"
    cat "$T"/scalar.txt "$T"/avx2.txt "$T"/avx512.txt 2>/dev/null | awk -F'\t' '
        { if (!($2 in m) || $1 + 0 > m[$2]) m[$2] = $1 + 0 }
        END { for (f in m) { r = int((m[f] + 255) / 256) * 256; if (r < 256) r = 256; printf "%s\t%d\n", f, r } }' | LC_ALL=C sort
fi
rel_finish
