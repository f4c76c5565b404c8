#!/usr/bin/env bash
# examples/gpt/cuda_check.sh - every check of the CUDA backend that needs a GPU, in one run that
# fits the device tool's rules: one global deadline (CUDA_CHECK_DEADLINE, default 520 s, under the
# 540 s a device command may use), every step capped inside what is left of it. Run from the
# repository root:
#   1. system: date, commit, nvidia-smi (name, memory, driver, MIG mode), nvcc version
#   2. build: make cuda (nvcc, sm_90) and the CPU test of gpu_math.h          (cap 200 s)
#   3. build/gpt/test_gpu_math   (CPU: gpu_math.h vs cpu.c / muon.h / rownorm.h)  (cap 60 s)
#   4. build/gpt/test_cuda       (the GPU suite; the CPU emulation runs the same file in make test)
#                                                                                 (cap 150 s)
#      when it fails: compute-sanitizer memcheck of it, if installed               (cap 120 s)
#   5. 40 updates of build/gpt/train_cuda --backend cuda vs --backend cpu, AdamW and RowNorm
#      heads (tests/emu/emu_train.sh with TRAIN_CUDA set)                          (cap 120 s)
#   6. build/gpt/bench_cuda --quick                                                (cap 90 s)
# Everything is written under $OUT when set (the device tool's output folder), else
# build/gpt/cuda_check/: system.txt build.log test_gpu_math.log test_cuda.log [sanitize.log]
# train.log bench.log summary.txt. Exit status: the number of failed or skipped steps.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-build/gpt/cuda_check}
mkdir -p "$LOG"
JOBS=$(nproc 2>/dev/null || echo 4)
DEADLINE=$((SECONDS + ${CUDA_CHECK_DEADLINE:-520}))
fails=0
summary() { echo "$*" | tee -a "$LOG/summary.txt"; }
: >"$LOG/summary.txt"
step() { # name, cap in seconds, log file, command...: runs within min(cap, time left)
    local name=$1 cap=$2 log=$3 left rc t0=$SECONDS
    shift 3
    left=$((DEADLINE - SECONDS))
    if [ "$left" -lt 10 ]; then
        summary "SKIP $name (the deadline is reached)"
        fails=$((fails + 1))
        return 1
    fi
    [ "$cap" -gt "$left" ] && cap=$left
    timeout "$cap" "$@" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then summary "PASS $name ($((SECONDS - t0)) s)"; else
        summary "FAIL $name (exit $rc after $((SECONDS - t0)) s of at most $cap; see $(basename "$log"))"
        fails=$((fails + 1))
    fi
    tail -n 3 "$log" | sed 's/^/    /' | tee -a "$LOG/summary.txt"
    return $rc
}

{
    date -u
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown) $(git status --porcelain 2>/dev/null | head -c 1 | grep -q . && echo '(with local changes)')"
    nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv 2>&1 || echo "nvidia-smi failed"
    nvidia-smi 2>&1 || true
    nvcc --version 2>&1 || /usr/local/cuda/bin/nvcc --version 2>&1 || echo "no nvcc"
} >"$LOG/system.txt" 2>&1
summary "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader 2>/dev/null || echo none)"
summary "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

if ! step build 200 "$LOG/build.log" make -j"$JOBS" cuda build/gpt/test_gpu_math build/gpt/prepare; then
    summary "build failed: nothing else runs"
    exit 1
fi
step test_gpu_math 60 "$LOG/test_gpu_math.log" ./build/gpt/test_gpu_math
if ! step test_cuda 150 "$LOG/test_cuda.log" ./build/gpt/test_cuda && command -v compute-sanitizer >/dev/null; then
    step sanitize 120 "$LOG/sanitize.log" compute-sanitizer --tool memcheck ./build/gpt/test_cuda
fi
step train_cuda_vs_cpu 120 "$LOG/train.log" env TRAIN_CUDA=build/gpt/train_cuda examples/gpt/tests/emu/emu_train.sh
step bench_cuda 90 "$LOG/bench.log" ./build/gpt/bench_cuda --quick
grep -E '^(model|ns|rownorm|diameter|device) ' "$LOG/bench.log" >>"$LOG/summary.txt" 2>/dev/null
summary "failed or skipped steps: $fails (deadline $((DEADLINE - SECONDS)) s ahead)"
exit $fails
