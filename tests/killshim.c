/* killshim.c - an LD_PRELOAD shim that kills its process (SIGKILL, no clean-up, like `kill -9`
 * or the OOM killer) in the middle of writing a checkpoint. tests/rel_ckpt_kill.sh uses it to
 * show that a kill during a checkpoint write leaves the previous checkpoint loadable.
 *
 * KILLSHIM_FILE names the checkpoint. Any file whose name starts with it (the file itself or a
 * temporary such as FILE.tmp) is watched when opened for writing; KILLSHIM_AT picks the moment:
 *   write    half of the bytes of the first fwrite (stdio) or write (a file descriptor from
 *            open) to a watched file reach it, then SIGKILL
 *   rename   just before a rename onto KILLSHIM_FILE (the temporary is complete and closed)
 * KILLSHIM_SKIP=N lets the first N writes of watched files through (kill on a later one).
 * A writer that is not atomic is caught too: in `write` mode the kill tears the file itself.
 * Unset KILLSHIM_AT or KILLSHIM_FILE: the shim does nothing. glibc/Linux (dlsym(RTLD_NEXT)). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *ks_tmp_file;   /* the watched file opened last */
static int ks_writes_seen;  /* watched writes (or renames, in rename mode) so far */
static int ks_tmp_fd = -1;  /* the watched descriptor opened last (open/write writers) */
static int ks_fd_fresh;     /* no write on it yet: its first write counts as the file's write */

static int ks_watched(const char *path, const char *mode)
{
    const char *w = getenv("KILLSHIM_FILE");
    return w && *w && path && mode && strchr(mode, 'w') && strncmp(path, w, strlen(w)) == 0;
}

static const char *ks_mode(void)
{
    const char *m = getenv("KILLSHIM_AT");
    return m ? m : "";
}

static int ks_due(void)
{
    const char *s = getenv("KILLSHIM_SKIP");
    return ks_writes_seen > (s ? atoi(s) : 0);
}

static void ks_die(const char *what)
{
    char msg[128];
    int n = snprintf(msg, sizeof msg, "killshim: SIGKILL %s\n", what);
    if (n > 0) (void)!write(2, msg, (size_t)n);
    raise(SIGKILL);
}

FILE *fopen(const char *path, const char *mode)
{
    static FILE *(*real)(const char *, const char *);
    FILE *f;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "fopen");
    f = real(path, mode);
    if (f && ks_watched(path, mode)) ks_tmp_file = f;
    return f;
}

FILE *fopen64(const char *path, const char *mode)
{
    return fopen(path, mode);
}

size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
    static size_t (*real)(const void *, size_t, size_t, FILE *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "fwrite");
    if (ks_tmp_file && f == ks_tmp_file && strcmp(ks_mode(), "write") == 0) {
        ks_writes_seen++;
        if (ks_due() && size == 1 && n >= 2) {
            real(buf, 1, n / 2, f);
            fflush(f);
            ks_die("half way through writing a checkpoint");
        }
    }
    return real(buf, size, n, f);
}

int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    const char *w = getenv("KILLSHIM_FILE");
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "rename");
    if (w && to && strcmp(to, w) == 0 && strcmp(ks_mode(), "rename") == 0) {
        ks_writes_seen++; /* a rename counts as the write it completes */
        if (ks_due()) ks_die("before renaming a complete checkpoint onto its name");
    }
    return real(from, to);
}

/* The same for writers on file descriptors: open(2) of a watched name for writing, then the
 * first write(2) on that descriptor is the checkpoint's write (a loop of partial writes counts
 * once). */
static int ks_open_common(int (*real)(const char *, int, ...), const char *path, int flags, mode_t mode)
{
    int fd = real(path, flags, mode);
    if (fd >= 0 && (flags & O_ACCMODE) != O_RDONLY && ks_watched(path, "w")) {
        ks_tmp_fd = fd;
        ks_fd_fresh = 1;
    }
    return fd;
}

/* open and open64: the mode argument exists only with O_CREAT */
#define KS_OPEN(name)                                                                 \
    int name(const char *path, int flags, ...)                                        \
    {                                                                                 \
        static int (*real)(const char *, int, ...);                                   \
        mode_t mode = 0;                                                              \
        if (!real) *(void **)&real = dlsym(RTLD_NEXT, #name);                        \
        if (flags & O_CREAT) {                                                        \
            va_list ap;                                                               \
            va_start(ap, flags);                                                      \
            mode = (mode_t)va_arg(ap, int);                                           \
            va_end(ap);                                                               \
        }                                                                             \
        return ks_open_common(real, path, flags, mode);                               \
    }
KS_OPEN(open)
KS_OPEN(open64)

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "write");
    if (fd >= 0 && fd == ks_tmp_fd && ks_fd_fresh && strcmp(ks_mode(), "write") == 0) {
        ks_fd_fresh = 0;
        ks_writes_seen++;
        if (ks_due() && n >= 2) {
            size_t done = 0;
            while (done < n / 2) {
                ssize_t w = real(fd, (const char *)buf + done, n / 2 - done);
                if (w <= 0) break;
                done += (size_t)w;
            }
            ks_die("half way through writing a checkpoint");
        }
    }
    return real(fd, buf, n);
}

int close(int fd)
{
    static int (*real)(int);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "close");
    if (fd >= 0 && fd == ks_tmp_fd) ks_tmp_fd = -1;
    return real(fd);
}
