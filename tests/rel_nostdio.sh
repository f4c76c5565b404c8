#!/usr/bin/env bash
# Neither implementation references stdio or the C library's assert (a firmware image must not
# pull in printf): each header's implementation TU, compiled as C99 without NDEBUG (scalar and the
# native SIMD path), has none of the symbols below among its undefined ones (nm -u). The check
# can fail: rownorm.h with -DRN_ASSERT_STDIO must show __assert_fail / __assert_func.
set -u
cd "$(dirname "$0")/.."
rel_name=nostdio
. tests/rel_lib.sh
rel_have nm || rel_missing nm "binutils"
cc=${CC:-cc}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
bad_syms='^(__assert_fail|__assert_func|__assert|_assert|printf|fprintf|vfprintf|puts|fputs|fputc|putchar|fwrite|perror|stderr|stdout|__printf_chk|__fprintf_chk|__vfprintf_chk|_impure_ptr)$'
tu() { # tu HEADER_MACRO HEADER OUT FLAGS...
    local mac=$1 hdr=$2 out=$3; shift 3
    printf '#define %s\n#include "%s"\n' "$mac" "$hdr" > "$T/$out.c"
    $cc -std=c99 -O2 -I. "$@" -c "$T/$out.c" -o "$T/$out.o" 2> "$T/$out.log"
}
for h in "ROWNORM_IMPLEMENTATION rownorm.h rn" "MUON_IMPLEMENTATION muon.h mu"; do
    set -- $h
    for mode in scalar simd; do
        flags=(); [ $mode = scalar ] && flags=(-DRN_NO_SIMD -DMUON_NO_SIMD); [ $mode = simd ] && flags=(-march=native)
        if ! tu "$1" "$2" "$3_$mode" "${flags[@]}"; then rel_bad "$2 ($mode) did not compile"; cat "$T/$3_$mode.log"; continue; fi
        found=$(nm -u "$T/$3_$mode.o" | awk '{ print $NF }' | grep -E "$bad_syms" | tr '\n' ' ')
        if [ -z "$found" ]; then rel_pass=$((rel_pass + 1)); echo "    $2 ($mode): no stdio, no assert"
        else rel_bad "$2 ($mode) references: $found"; fi
    done
done
if tu ROWNORM_IMPLEMENTATION rownorm.h rn_stdio -DRN_ASSERT_STDIO &&
   nm -u "$T/rn_stdio.o" | awk '{ print $NF }' | grep -Eq '^(__assert_fail|__assert_func|__assert|_assert)$'; then
    rel_pass=$((rel_pass + 1)); echo "    rownorm.h -DRN_ASSERT_STDIO: the C library's assert (the check sees it)"
else
    rel_bad "rownorm.h -DRN_ASSERT_STDIO: no assert symbol found (the check cannot see one)"
fi
rel_finish
