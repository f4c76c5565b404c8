#!/usr/bin/env bash
# examples/gpt/cuda_check.sh - every check of the CUDA backend that needs a GPU, in one go
# (about 3-6 minutes on one H100/H200; run from the repository root):
#   1. nvidia-smi, nvcc version
#   2. build: make cuda (nvcc, sm_90) and the CPU test of gpu_math.h
#   3. build/gpt/test_gpu_math          (CPU: gpu_math.h vs cpu.c / muon.h / rownorm.h)
#   4. make test-cuda                   (GPU suite: kernels vs CPU on odd shapes, model gradients,
#                                        optimizers vs the headers, diameter / Hilbert RMS,
#                                        20-step losses vs CPU, determinism, checkpoint CPU<->GPU)
#   5. build/gpt/bench_cuda             (tokens/s + MFU, NS vs GEMM, RowNorm vs copy, diameter)
#   6. optional (CUDA_CHECK_SANITIZE=1): compute-sanitizer memcheck of the GPU suite
# Logs go to $OUT when set (the device tool's output folder), else build/gpt/cuda_check/:
#   system.txt build.log test_gpu_math.log test_cuda.log bench.log summary.txt (+ sanitize.log)
# Exit status: 0 when every step passed, else the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-build/gpt/cuda_check}
mkdir -p "$LOG"
JOBS=$(nproc 2>/dev/null || echo 4)
fails=0
summary() { echo "$*" | tee -a "$LOG/summary.txt"; }
: >"$LOG/summary.txt"
step() { # name, timeout seconds, log file, command...
    local name=$1 limit=$2 log=$3
    shift 3
    local t0=$SECONDS
    timeout "$limit" "$@" >"$log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then summary "PASS $name ($((SECONDS - t0)) s)"; else
        summary "FAIL $name (exit $rc after $((SECONDS - t0)) s; see $(basename "$log"))"
        fails=$((fails + 1))
    fi
    tail -n 3 "$log" | sed 's/^/    /' | tee -a "$LOG/summary.txt"
    return $rc
}

{
    date -u
    nvidia-smi || echo "nvidia-smi failed"
    nvcc --version || /usr/local/cuda/bin/nvcc --version || echo "no nvcc"
} >"$LOG/system.txt" 2>&1
summary "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo none)"

if ! step build 300 "$LOG/build.log" make -j"$JOBS" cuda build/gpt/test_gpu_math; then
    summary "build failed: nothing else runs"
    exit 1
fi
step test_gpu_math 120 "$LOG/test_gpu_math.log" ./build/gpt/test_gpu_math
step test_cuda 300 "$LOG/test_cuda.log" ./build/gpt/test_cuda
step bench_cuda 240 "$LOG/bench.log" ./build/gpt/bench_cuda
if [ "${CUDA_CHECK_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    step sanitize 300 "$LOG/sanitize.log" compute-sanitizer --tool memcheck --leak-check full ./build/gpt/test_cuda
fi
grep -E '^(model|ns|rownorm|diameter|device) ' "$LOG/bench.log" >>"$LOG/summary.txt" 2>/dev/null
summary "failed steps: $fails"
exit $fails
