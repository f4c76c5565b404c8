/* bench_env.h - the OpenBLAS settings the benchmarks that link it run under (bench/ only).
 *
 * Both must be in the environment before OpenBLAS initialises (at load), so a bench that finds
 * one unset sets it and re-executes itself (Linux: /proc/self/exe); one already set wins.
 *
 * OPENBLAS_CORETYPE: Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not recognise the newer CPUs
 * and falls back to SSE3 kernels (about 6x slower). It is named for the CPU the bench runs on:
 * SkylakeX where AVX-512F runs, Zen on other AMD CPUs, Haswell on other x86 CPUs with AVX2 (a
 * SkylakeX forced on an AVX2-only CPU would not run at all). Elsewhere it is left unset.
 *
 * OPENBLAS_THREAD_TIMEOUT: how long OpenBLAS's idle worker threads spin before they sleep,
 * 2^N cycles (default N 28, about 0.1 s). The benches call OpenBLAS and muon.h one after the
 * other; at 2 threads on 2 cores OpenBLAS's worker was still spinning when muon.h's team started,
 * muon.h's shared-machine rule (muon_team) saw its team held up and ran on one thread, and the
 * 2-thread rows were bimodal (a Zen 5, gemm_bench 5 2: muon.h's 1024x1024 . 1024x4096 at 196-251
 * GF/s in 6 of 16 runs, 381-438 in the other 10; with N 4, all 12 runs at 337-439, OpenBLAS's own
 * rate within noise, 293-331 against 306-336: bench/RESULTS.md, "AVX-512 on a Zen 5").
 * N 4 (its minimum) lets the workers sleep at once; waking them costs microseconds against calls
 * of milliseconds.
 */
#ifndef BENCH_ENV_H
#define BENCH_ENV_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *bench_openblas_core(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
    if (__builtin_cpu_supports("avx2")) return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
#endif
    return NULL;
}

/* call first in main, before anything runs OpenBLAS; returns only when both are set (or when
 * re-executing failed, after saying so) */
static void bench_openblas_env(char **argv, const char *prog)
{
    const char *core = bench_openblas_core();
    int again = 0;
    if (!getenv("OPENBLAS_CORETYPE") && core) {
        setenv("OPENBLAS_CORETYPE", core, 1);
        again = 1;
    }
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) {
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
        again = 1;
    }
    if (again) {
        execv("/proc/self/exe", argv);
        fprintf(stderr, "%s: could not re-execute with OPENBLAS_CORETYPE=%s OPENBLAS_THREAD_TIMEOUT=%s; continuing\n",
                prog, getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
                getenv("OPENBLAS_THREAD_TIMEOUT"));
    }
}

#endif
