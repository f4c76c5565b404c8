#!/usr/bin/env bash
# The implementations under a C++ engine's warning set (tests/cxx_strict.c): g++ and clang++,
# C++20, -Werror with -Wconversion -Wsign-conversion -Wold-style-cast -Wcast-qual -Wdouble-promotion
# -Wzero-as-null-pointer-constant and friends, headers by -I (the add_subdirectory route); AVX2,
# scalar, -march=native, bf16 (AVX512-BF16 + AMX intrinsics) and OpenMP builds. Each object tests/reliability.mk built is one passed check.
set -u
cd "$(dirname "$0")/.."
rel_name=cxx-strict
. tests/rel_lib.sh
for c in g++ clang++; do rel_have "$c" || rel_missing "$c" "the strict C++ build needs g++ and clang++"; done
for o in gcc-simd gcc-scalar gcc-native gcc-bf16 gcc-omp clang-simd clang-scalar clang-native clang-bf16 clang-omp; do
    f=$REL_B/cxx_strict/$o.o
    if [ -s "$f" ]; then rel_pass=$((rel_pass + 1)); echo "    $f: clean"
    else rel_bad "$f: warnings under the strict C++ set"; [ -f "$f.log" ] && tail -n 20 "$f.log"; fi
done
rel_finish
