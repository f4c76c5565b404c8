#!/usr/bin/env bash
# Two-TU link check: for each compiler (gcc, clang), language standard (C99, C11, C++11,
# C++17) and linkage (extern: one file defines the implementations; static: both do, under
# RN_STATIC/MUON_STATIC), tests/reliability.mk built one program from tests/two_tu_a.c and
# tests/two_tu_b.c with -Wall -Wextra -Wpedantic -Werror -Wshadow. Here: each program must
# have linked (no duplicate symbols) and pass its own checks, and the objects must export the
# public names exactly once (extern) or not at all (static).
set -u
cd "$(dirname "$0")/.."
rel_name=two-tu
. tests/rel_lib.sh

for c in gcc g++ clang clang++; do
    rel_have "$c" || rel_missing "$c" "the compiler matrix needs gcc, g++, clang and clang++"
done
rel_have nm || rel_missing nm "binutils"

for cc in gcc clang; do
    for std in c99 c11 c++11 c++17; do
        for link in extern static; do
            bin=$REL_B/two_tu/$cc-$std-$link
            rel_run_bin "$bin"
            [ -x "$bin" ] || continue
            # public symbols defined (T/D/B/R) by each object
            a=$(nm -g --defined-only "$bin.a.o" | grep -c -E ' [TDBR] (muon|muown|rn)_')
            b=$(nm -g --defined-only "$bin.b.o" | grep -c -E ' [TDBR] (muon|muown|rn)_')
            if [ "$link" = static ]; then
                [ "$a" = 0 ] && [ "$b" = 0 ] || rel_bad "$bin: static build exports $a + $b public symbols"
            else
                [ "$a" -gt 20 ] && [ "$b" = 0 ] || rel_bad "$bin: extern build: implementation file exports $a, other file $b public symbols"
            fi
        done
    done
done
rel_finish
