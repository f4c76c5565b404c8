#!/usr/bin/env bash
# The seam between the instruction sets and the math (issue 48): instruction-set code (an #if /
# #ifdef / #elif on a target macro or on a macro the header derives from one, or an intrinsic: an
# _mm*_ call, an __m128/256/512 or __mmask type, an AMX _tile_ call, a NEON vxxxq_f32-style call
# or NEON vector type) may stand only where each header keeps it:
#   muon.h     above the product interface's "====" line (the platform layer and the product
#              engine); below it the math reaches the machine only through the platform layer;
#   rownorm.h  the instruction-set choice at the top of the implementation (before "validation
#              helpers"), and the SIMD layer with the kernels built on it (from "SIMD layer" to
#              the next "====" line).
# The checker is also run on copies with instruction-set code planted where it may not stand
# (each must fail), so that a checker that finds nothing cannot pass.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 1
rel_name=seam
. "$here/rel_lib.sh"

# The patterns: a preprocessor condition naming a target macro (or the headers' own ISA macros),
# and the intrinsics' spellings.
ISA_IF='^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif)[^A-Za-z_].*(__AVX|__SSE|__FMA__|__F16C__|__ARM_|__aarch64__|__AMX|__x86_64__|__i386__|_M_X64|_M_ARM|MUON__GEMM_(AVX|NEON|HAVE)|MUON__BF16_(AMX|DP|NEON)|MUON__V[A-Z_]*|RN__(AVX|NEON|SIMD|VNNI|Q8|VTAIL|SDOT|VW|VD))'
ISA_CODE='(^|[^A-Za-z0-9_])(_mm[0-9]*_[a-z]|__m(128|256|512)|__mmask|_tile_[a-z]|v[a-z0-9]+q(_[a-z]+)?_[fsu](8|16|32|64)[^A-Za-z0-9_]|(float|int|uint)(8|16|32|64)x[0-9]+_t)'

# offenders FILE START_LINE END_LINE: the lines in [START, END] holding instruction-set code
# (comments stripped first: a comment may name an intrinsic)
offenders() {
    awk -v a="$2" -v b="$3" -v isaif="$ISA_IF" -v code="$ISA_CODE" '
        { line = $0
          if (inc) { if (sub(/.*\*\//, "", line)) inc = 0; else next }
          gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
          if (sub(/\/\*.*/, "", line)) inc = 1
          sub(/\/\/.*/, "", line) }
        NR >= a && NR <= b && (line ~ isaif || line ~ code) { print FILENAME ":" NR ": " $0 }' "$1"
}
# line_of FILE ERE [AFTER]: the first line number matching ERE after line AFTER (0: none)
line_of() { awk -v re="$2" -v after="${3:-0}" 'NR > after && $0 ~ re { print NR; exit }' "$1"; }

# check_muon FILE: nothing below the seam
check_muon() {
    local f=$1 seam last
    seam=$(line_of "$f" '^/\* Everything below reaches the products only through the product interface')
    [ -n "$seam" ] || { echo "$f: the seam comment is missing"; return 1; }
    last=$(wc -l < "$f")
    offenders "$f" "$seam" "$last"
}
# check_rownorm FILE: nothing outside the ISA choice and the SIMD layer with its kernels
check_rownorm() {
    local f=$1 impl vh simd end last
    impl=$(line_of "$f" '^#ifdef ROWNORM_IMPLEMENTATION')
    vh=$(line_of "$f" '^/\* ---- validation helpers' "$impl")
    simd=$(line_of "$f" '^/\* ---- SIMD layer' "$vh")
    end=$(line_of "$f" '^/\* =+ \*/$' "$simd")
    last=$(wc -l < "$f")
    [ -n "$impl" ] && [ -n "$vh" ] && [ -n "$simd" ] && [ -n "$end" ] || { echo "$f: a landmark is missing"; return 1; }
    offenders "$f" 1 "$impl"
    offenders "$f" "$vh" "$simd"
    offenders "$f" "$end" "$last"
}

for h in muon rownorm; do
    out=$(check_$h $h.h)
    if [ -z "$out" ]; then
        rel_pass=$((rel_pass + 1))
        echo "    $h.h: no instruction-set code outside its layer and kernels"
    else
        rel_bad "$h.h: instruction-set code outside its layer and kernels:"
        printf '%s\n' "$out" | head -n 20
    fi
done

# the checker itself: planted code must be found (each plant on its own copy)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # plant HEADER AFTER_ERE TEXT: a copy of HEADER with TEXT after the first AFTER_ERE line
    awk -v re="$2" -v txt="$3" '{ print } !done && $0 ~ re { print txt; done = 1 }' "$1.h" > "$tmp/$1.h"
}
n=0
while IFS='|' read -r h at txt; do
    plant "$h" "$at" "$txt"
    n=$((n + 1))
    if [ -n "$(check_$h "$tmp/$h.h")" ]; then
        rel_pass=$((rel_pass + 1))
    else
        rel_bad "the checker missed planted code $n in $h.h: $txt"
    fi
done <<'EOF'
muon|^static muon_status muon__ns_one\(|#ifdef MUON__GEMM_AVX512
muon|^static muon_status muon__ns_one\(|#if defined(__AVX2__) \&\& defined(__FMA__)
muon|^#define MUON__ADAMW_CHUNK|static __m256 muon__planted;
muon|^#define MUON__ADAMW_CHUNK|static void muon__planted(float *x) { _mm512_storeu_ps(x, _mm512_setzero_ps()); }
muon|^#define MUON__ADAMW_CHUNK|static void muon__planted(float *x) { vst1q_f32(x, vdupq_n_f32(0.0f)); }
rownorm|^/\* 1.1 Hilbert distance|#elif defined(RN__NEON)
rownorm|^/\* 1.1 Hilbert distance|static __mmask16 rn__planted;
EOF
echo "    the checker finds code planted below muon.h's seam and outside rownorm.h's layer ($n plants)"
rel_finish
