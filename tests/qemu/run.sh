#!/usr/bin/env bash
# The whole test suite (every tests/test_*.c) cross-compiled for aarch64 by tests/reliability.mk
# with Debian's aarch64-linux-gnu-gcc -O2 -- NEON (on by default on AArch64; OpenMP when the
# cross toolchain has it) and scalar (-DRN_NO_SIMD -DMUON_NO_SIMD) -- and run under qemu-user,
# so that the NEON kernels are executed, not only compiled; and the Muon tests built with
# -march=armv8.6-a+bf16 (the BFMMLA and BFDOT kernels of bf16 Newton-Schulz), with the diameter's
# suites (its int8 screen on sdot). Times are printed per binary.
set -u
cd "$(dirname "$0")/../.."
rel_name=aarch64-qemu
. tests/rel_lib.sh
rel_have aarch64-linux-gnu-gcc || rel_missing aarch64-linux-gnu-gcc "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
rel_have qemu-aarch64 || rel_missing qemu-aarch64 "apt-get install qemu-user"
[ -d /usr/aarch64-linux-gnu/lib ] || rel_missing /usr/aarch64-linux-gnu/lib "apt-get install libc6-dev-arm64-cross"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# spinning OpenMP threads are very slow under emulation on a shared machine
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# the library root for the dynamic loader; the binaries run through qemu explicitly (no binfmt needed)
# Two binaries at a time: under qemu-user a test uses about one core (test_muon_gemm: 21.6 s wall,
# 24.4 s CPU), so the suite takes about half the time on two cores; each binary's lines and
# counts are reported in this order all the same.
bins=()
for v in neon scalar; do
    for src in tests/test_*.c; do bins+=("$REL_B/aarch64-$v/$(basename "$src" .c)"); done
done
# the bf16 Newton-Schulz's BFMMLA and BFDOT kernels and the diameter's int8 screen on sdot
# (-march=armv8.6-a+bf16; tests/reliability.mk's list)
for t in test_muon_bf16 test_muon test_muon_gemm test_rownorm test_rownorm_shard; do bins+=("$REL_B/aarch64-neonbf16/$t"); done
rel_run_bins_2 qemu-aarch64 -L /usr/aarch64-linux-gnu -- "${bins[@]}"
rel_finish
