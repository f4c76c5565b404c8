#!/usr/bin/env bash
# The whole test suite (every tests/test_*.c) built with clang as C11 (the AVX512-BF16 + AMX
# build where the CPU has AVX512-BF16, else AVX-512 where it has it, else AVX2; OpenMP when available) and as C++17 (AVX2), by tests/reliability.mk.
set -u
cd "$(dirname "$0")/.."
rel_name=clang
. tests/rel_lib.sh
rel_have clang && rel_have clang++ || rel_missing clang "the clang builds of the test suite"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
for v in c11 cxx17; do
    for src in tests/test_*.c; do
        rel_run_bin "$REL_B/clang-$v/$(basename "$src" .c)"
    done
done
rel_finish
