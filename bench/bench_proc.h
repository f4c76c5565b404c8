/* bench_proc.h - a busy process for the shared-machine benchmarks (bench/ only; POSIX). */
#ifndef BENCH_PROC_H
#define BENCH_PROC_H
#include <sys/types.h>
#include <unistd.h>

/* A child that spins on a core until killed (SIGKILL, then waitpid). */
static pid_t spinner(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    return pid;
}

#endif
