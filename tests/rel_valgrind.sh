#!/usr/bin/env bash
# valgrind memcheck of the scalar builds (build/scalar, made by the Makefile's scalar variant:
# no SIMD, no OpenMP) of a representative subset of the test suite: zero errors and zero
# definite or indirect leaks, or the binary fails. REL_VALGRIND_TESTS overrides the subset.
set -u
cd "$(dirname "$0")/.."
rel_name=valgrind
. tests/rel_lib.sh
rel_have valgrind || rel_missing valgrind "apt-get install valgrind"
subset=${REL_VALGRIND_TESTS:-test_muon test_rownorm test_rownorm_exact test_edges_muon test_edges_rownorm}
for t in $subset; do
    [ -f "tests/$t.c" ] || continue
    rel_run_bin "build/scalar/$t" valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
done
rel_finish
