/* bench_peer.h - the Python peer server of the benchmarks (bench/ only; POSIX): bench.c and
 * train_bench.c run bench/peers/peers.py --serve as a child with pipes on its stdin/stdout and
 * interleave its jobs with their own, rep by rep. "run <key>" runs the numpy / torch version
 * once and answers "T <seconds>" ("NA" when that library or key is missing). One server per
 * thread count (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS are read when the libraries load). A
 * missing python3 or numpy, or a server that dies, disables the peers for the rest of the run
 * and leaves the reason in g_peer_note ("peers: skipped (...)"). Run from the repository root
 * (the script's path is relative); ignore SIGPIPE so that a dead server cannot kill the caller. */
#ifndef BENCH_PEER_H
#define BENCH_PEER_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_peers_on = 1, g_peers_dead;
static char g_peer_note[160] = "";
static char g_peer_hello[128] = ""; /* the server's first line: "HELLO numpy=<v> torch=<v|none>" */
static FILE *g_pto, *g_pfrom;
static pid_t g_ppid;

/* snprintf through a va_list: a note is truncated on purpose when too long */
static void peer__fmt(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

static void peer_close(void)
{
    if (g_pto) {
        fputs("quit\n", g_pto);
        fclose(g_pto);
    }
    if (g_pfrom) fclose(g_pfrom);
    if (g_ppid > 0) waitpid(g_ppid, NULL, 0);
    g_pto = g_pfrom = NULL;
    g_ppid = 0;
}

static void peer_disable(const char *why)
{
    peer_close();
    g_peers_dead = 1;
    peer__fmt(g_peer_note, sizeof g_peer_note, "peers: skipped (%s)", why);
}

static void peer_open(int threads)
{
    int in[2], out[2];
    char line[256], tb[16];
    pid_t pid;
    if (!g_peers_on || g_peers_dead) return;
    if (pipe(in) != 0) {
        peer_disable("pipe failed");
        return;
    }
    if (pipe(out) != 0) {
        close(in[0]), close(in[1]);
        peer_disable("pipe failed");
        return;
    }
    peer__fmt(tb, sizeof tb, "%d", threads);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        setenv("OPENBLAS_NUM_THREADS", tb, 1);
        setenv("OMP_NUM_THREADS", tb, 1);
        setenv("MKL_NUM_THREADS", tb, 1);
        unsetenv("OPENBLAS_CORETYPE"); /* the peers run their own OpenBLAS as a user gets it, */
        /* but its idle workers sleep at once, as ours do (OPENBLAS_THREAD_TIMEOUT, bench_env.h): a
         * peer's rep and ours alternate, and a worker still spinning would take a core from the
         * next rep of ours (or a worker of ours from the peer's) */
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
        execlp("python3", "python3", "bench/peers/peers.py", "--serve", "--threads", tb, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]), close(out[0]);
        peer_disable("fork failed");
        return;
    }
    g_ppid = pid;
    g_pto = fdopen(in[1], "w");
    g_pfrom = fdopen(out[0], "r");
    if (!g_pto || !g_pfrom || !fgets(line, sizeof line, g_pfrom)) {
        peer_disable("python3 missing or bench/peers/peers.py failed");
        return;
    }
    if (strncmp(line, "NONUMPY", 7) == 0) {
        peer_disable("numpy missing");
        return;
    }
    line[strcspn(line, "\n")] = 0;
    peer__fmt(g_peer_hello, sizeof g_peer_hello, "%s", line);
    peer__fmt(g_peer_note, sizeof g_peer_note, "peers: %s (python3 bench/peers/peers.py, interleaved)", line);
}

/* One run of `key` in the server (after an untimed one when warm): its time in seconds, or -1
 * (library or key missing: "NA"; or the server gone, which disables the peers). */
static double peer_run(const char *key, int warm)
{
    char line[128];
    double t;
    if (!g_pto || !g_pfrom) return -1.0;
    fprintf(g_pto, "%s %s\n", warm ? "warm" : "run", key);
    fflush(g_pto);
    if (!fgets(line, sizeof line, g_pfrom)) {
        peer_disable("peers.py died");
        return -1.0;
    }
    if (sscanf(line, "T %lf", &t) == 1) return t;
    return -1.0;
}

/* Drops the server's data (the next run of a key builds it again). */
static void peer_free(void)
{
    char line[64];
    if (!g_pto || !g_pfrom) return;
    fputs("free\n", g_pto);
    fflush(g_pto);
    if (!fgets(line, sizeof line, g_pfrom)) peer_disable("peers.py died");
}

#endif
