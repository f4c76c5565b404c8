#!/usr/bin/env bash
# emu_mutants.sh - the emulated CUDA suite can fail: three bugs injected on purpose into copies of
# the backend's sources, each of which must make build/gpt/emu/test_cuda_emu's relevant sections
# fail (built without sanitizers, to be quick):
#   swapped leading dimensions   gpt_cuda__gemm passes the second operand's ld for the first
#   a missing transpose          gpt_cuda__gemm never transposes the second operand
#   a partial-warp shuffle       k_rn_row_inv launched with 48-thread blocks: its full-mask
#                                warp sums then name lanes that do not exist
# Needs build/gpt/emu/*.cu (make test-build). Ends with "emu_mutants: N passed, M failed".
set -u
cd "$(dirname "$0")/../../../.." || exit 1
B=${GPT_BIN:-build/gpt}/emu
E=examples/gpt/tests/emu
CXX=${CXX:-c++}
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }
T=$(mktemp -d /tmp/emu_mutants.XXXXXX)
finish() { echo "emu_mutants: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }
for f in "$B/test_cuda.cu" "$B/cuda.cu" "$B/cuda_optim.cu" "$B/cuda_train.cu"; do
    [ -f "$f" ] || { bad "$f is missing (make test-build makes it)"; finish; }
done
objs=()
for f in model cpu libs libs_rownorm status optim checkpoint data comm; do
    cc -std=c99 -O1 -I. -Iexamples/gpt -fopenmp -c -o "$T/$f.o" "examples/gpt/$f.c" || { bad "compile $f.c"; finish; }
    objs+=("$T/$f.o")
done
$CXX -std=c++11 -O1 -I$E -c -o "$T/emu.o" "$E/emu.cpp" || { bad "compile emu.cpp"; finish; }
# mutant NAME FILE SED-EXPRESSION TESTS: the mutated copy must change the file and fail TESTS
mutant() {
    local name=$1 file=$2 expr=$3 tests=$4 d="$T/$1" out rc
    mkdir -p "$d" && cp "$B"/*.cu "$d/"
    sed -E -i "$expr" "$d/$file"
    if cmp -s "$d/$file" "$B/$file"; then bad "$name: the mutation did not apply to $file"; return; fi
    if ! $CXX -std=c++11 -O1 -w -fopenmp -I$E -I. -Iexamples/gpt -DGPT_CUDA_EMU -DTEST_VARIANT='"mutant"' -o "$d/t" \
        -x c++ "$d/test_cuda.cu" -x none "$T/emu.o" "${objs[@]}" -lm 2>"$d/cc.txt"; then
        bad "$name: the mutant does not compile: $(head -3 "$d/cc.txt")"; return
    fi
    out=$(GPT_CUDA_TESTS=$tests OMP_NUM_THREADS=1 timeout 600 "$d/t" 2>&1); rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^mutant: [0-9]+ passed, [0-9]+ failed$')
    if [ "$rc" != 0 ] && [ -n "$line" ] && [[ "$line" != *" 0 failed" ]]; then ok "$name: caught ($line)"
    else bad "$name: not caught (exit $rc, ${line:-no summary})"; fi
}
mutant "swapped leading dimensions" cuda.cu 's/B, CUDA_R_32F, g\.ld_first, A,/B, CUDA_R_32F, g.ld_second, A,/' test_layers
mutant "missing transpose" cuda.cu 's/o2 = g\.trans_second \? CUBLAS_OP_T : CUBLAS_OP_N/o2 = CUBLAS_OP_N/' test_layers
mutant "partial-warp shuffle" cuda_optim.cu 's/emu_launch\(k_rn_row_inv, gpt_blocks\(rows \* 32, 256\), 256,/emu_launch(k_rn_row_inv, gpt_blocks(rows * 32, 48), 48,/' test_optimizers
finish
