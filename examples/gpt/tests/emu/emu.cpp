/* emu.cpp - the CPU emulation of the CUDA runtime and cuBLAS subset (cuda_runtime.h and
 * cublas_v2.h in this directory: what is modelled and what is not). Tests only.
 *
 * Fibers: on x86-64 a 14-instruction stack switch (no system call: a launch of a million
 * threads costs a few tens of milliseconds); elsewhere ucontext. Under AddressSanitizer every
 * switch is announced with __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber. */
#include "cublas_v2.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

/* ---- errors --------------------------------------------------------------------------------- */

static cudaError_t emu_last = cudaSuccess;
static long emu_n_launch_failures = 0;
static int emu_malloc_countdown = 0;

static void set_last(cudaError_t e)
{
    if (e != cudaSuccess) emu_last = e;
}

void emu_fail(cudaError_t e, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cuda-emu: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    set_last(e);
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = emu_last;
    emu_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return emu_last; }

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    }
    return "unknown error";
}

void emu_fail_malloc_after(int n) { emu_malloc_countdown = n; }
long emu_launch_failures(void) { return emu_n_launch_failures; }

/* ---- device memory -------------------------------------------------------------------------- */

struct emu_block {
    char *base;
    size_t bytes, mapped; /* mapped: bytes rounded up to pages (a guard page follows) */
};
static emu_block *emu_blocks = NULL;
static size_t emu_n_blocks = 0, emu_cap_blocks = 0;
static int emu_open = 0;
static size_t emu_page = 0;

static size_t page_size(void)
{
    if (!emu_page) emu_page = (size_t)sysconf(_SC_PAGESIZE);
    return emu_page;
}

int emu_device_open(void) { return emu_open > 0; }

void emu_device_access(int open)
{
    size_t i;
    int before = emu_open > 0;
    emu_open += open ? 1 : -1;
    if ((emu_open > 0) == before) return;
    for (i = 0; i < emu_n_blocks; i++)
        if (mprotect(emu_blocks[i].base, emu_blocks[i].mapped, emu_open > 0 ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
            perror("cuda-emu: mprotect");
            abort();
        }
}

int emu_is_device(const void *p, size_t *left)
{
    size_t i;
    const char *c = (const char *)p;
    for (i = 0; i < emu_n_blocks; i++)
        if (c >= emu_blocks[i].base && c < emu_blocks[i].base + emu_blocks[i].bytes) {
            if (left) *left = (size_t)(emu_blocks[i].base + emu_blocks[i].bytes - c);
            return 1;
        }
    return 0;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    size_t pg = page_size(), mapped, k;
    void *m;
    float nan_v = NAN;
    if (!p) {
        set_last(cudaErrorInvalidValue);
        return cudaErrorInvalidValue;
    }
    if (emu_malloc_countdown > 0 && --emu_malloc_countdown == 0) {
        set_last(cudaErrorMemoryAllocation);
        return cudaErrorMemoryAllocation;
    }
    if (bytes > ((size_t)1 << 40)) {
        set_last(cudaErrorMemoryAllocation);
        return cudaErrorMemoryAllocation;
    }
    mapped = (bytes + pg - 1) / pg * pg;
    if (mapped == 0) mapped = pg;
    m = mmap(NULL, mapped + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        set_last(cudaErrorMemoryAllocation);
        return cudaErrorMemoryAllocation;
    }
    for (k = 0; k + sizeof nan_v <= mapped; k += sizeof nan_v) memcpy((char *)m + k, &nan_v, sizeof nan_v);
    if (mprotect((char *)m + mapped, pg, PROT_NONE) != 0 ||
        (emu_open == 0 && mprotect(m, mapped, PROT_NONE) != 0)) {
        munmap(m, mapped + pg);
        set_last(cudaErrorMemoryAllocation);
        return cudaErrorMemoryAllocation;
    }
    if (emu_n_blocks == emu_cap_blocks) {
        size_t cap = emu_cap_blocks ? 2 * emu_cap_blocks : 64;
        emu_block *nb = (emu_block *)realloc(emu_blocks, cap * sizeof *nb);
        if (!nb) {
            munmap(m, mapped + pg);
            set_last(cudaErrorMemoryAllocation);
            return cudaErrorMemoryAllocation;
        }
        emu_blocks = nb, emu_cap_blocks = cap;
    }
    emu_blocks[emu_n_blocks].base = (char *)m;
    emu_blocks[emu_n_blocks].bytes = bytes ? bytes : 1;
    emu_blocks[emu_n_blocks].mapped = mapped;
    emu_n_blocks++;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    size_t i;
    if (!p) return cudaSuccess;
    for (i = 0; i < emu_n_blocks; i++)
        if (emu_blocks[i].base == (char *)p) {
            munmap(emu_blocks[i].base, emu_blocks[i].mapped + page_size());
            emu_blocks[i] = emu_blocks[--emu_n_blocks];
            return cudaSuccess;
        }
    emu_fail(cudaErrorInvalidDevicePointer, "cudaFree(%p): not a cudaMalloc'd pointer", p);
    return cudaErrorInvalidDevicePointer;
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    if (!p) return cudaErrorInvalidValue;
    *p = malloc(bytes ? bytes : 1);
    if (!*p) {
        set_last(cudaErrorMemoryAllocation);
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

/* a device range [p, p + bytes) inside one allocation */
static int device_range(const void *p, size_t bytes)
{
    size_t left = 0;
    return emu_is_device(p, &left) && bytes <= left;
}

static cudaError_t copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, const char *what)
{
    int dd = emu_is_device(dst, NULL), sd = emu_is_device(src, NULL);
    if (bytes == 0) return cudaSuccess;
    if (!dst || !src) {
        emu_fail(cudaErrorInvalidValue, "%s: NULL pointer", what);
        return cudaErrorInvalidValue;
    }
    if (kind == cudaMemcpyDefault) kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                             : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    if ((kind == cudaMemcpyHostToDevice && (!dd || sd)) || (kind == cudaMemcpyDeviceToHost && (dd || !sd)) ||
        (kind == cudaMemcpyDeviceToDevice && (!dd || !sd)) || (kind == cudaMemcpyHostToHost && (dd || sd)) ||
        (int)kind < 0 || (int)kind > 4) {
        emu_fail(cudaErrorInvalidValue, "%s: kind %d with dst %s and src %s", what, (int)kind, dd ? "device" : "host",
                 sd ? "device" : "host");
        return cudaErrorInvalidValue;
    }
    if ((dd && !device_range(dst, bytes)) || (sd && !device_range(src, bytes))) {
        emu_fail(cudaErrorInvalidValue, "%s: %zu bytes run past the end of a device allocation", what, bytes);
        return cudaErrorInvalidValue;
    }
    emu_device_access(1);
    memmove(dst, src, bytes);
    emu_device_access(0);
    return cudaSuccess;
}

/* ---- streams, events, devices ----------------------------------------------------------------- */

struct emu_stream {
    int magic;
};
struct emu_event {
    int magic;
    double t;
};
#define EMU_MAGIC 0x5eed

static int valid_stream(cudaStream_t s) { return !s || s->magic == EMU_MAGIC; }

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    return copy(dst, src, bytes, kind, "cudaMemcpy");
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s)
{
    if (!valid_stream(s)) {
        set_last(cudaErrorInvalidResourceHandle);
        return cudaErrorInvalidResourceHandle;
    }
    return copy(dst, src, bytes, kind, "cudaMemcpyAsync");
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    if (bytes == 0) return cudaSuccess;
    if (!device_range(p, bytes)) {
        emu_fail(cudaErrorInvalidValue, "cudaMemset(%p, %zu bytes): not inside a device allocation", p, bytes);
        return cudaErrorInvalidValue;
    }
    emu_device_access(1);
    memset(p, value, bytes);
    emu_device_access(0);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
    if (!valid_stream(s)) {
        set_last(cudaErrorInvalidResourceHandle);
        return cudaErrorInvalidResourceHandle;
    }
    return cudaMemset(p, value, bytes);
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    if (!s) return cudaErrorInvalidValue;
    *s = (cudaStream_t)malloc(sizeof **s);
    if (!*s) return cudaErrorMemoryAllocation;
    (*s)->magic = EMU_MAGIC;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s || s->magic != EMU_MAGIC) {
        set_last(cudaErrorInvalidResourceHandle);
        return cudaErrorInvalidResourceHandle;
    }
    s->magic = 0;
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (!valid_stream(s)) {
        set_last(cudaErrorInvalidResourceHandle);
        return cudaErrorInvalidResourceHandle;
    }
    return cudaSuccess;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    if (!e) return cudaErrorInvalidValue;
    *e = (cudaEvent_t)malloc(sizeof **e);
    if (!*e) return cudaErrorMemoryAllocation;
    (*e)->magic = EMU_MAGIC, (*e)->t = -1.0;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!e || e->magic != EMU_MAGIC) return cudaErrorInvalidResourceHandle;
    e->magic = 0;
    free(e);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!e || e->magic != EMU_MAGIC || !valid_stream(s)) return cudaErrorInvalidResourceHandle;
    e->t = now_ms();
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    return e && e->magic == EMU_MAGIC ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    if (!ms || !a || !b || a->magic != EMU_MAGIC || b->magic != EMU_MAGIC || a->t < 0 || b->t < 0)
        return cudaErrorInvalidResourceHandle;
    *ms = (float)(b->t - a->t);
    return cudaSuccess;
}

/* EMU_CUDA_DEVICE_ERROR=<code>: cudaGetDeviceCount fails with that code (e.g. 35, an old driver) */
cudaError_t cudaGetDeviceCount(int *n)
{
    const char *e = getenv("EMU_CUDA_DEVICE_ERROR");
    if (!n) return cudaErrorInvalidValue;
    if (e && atoi(e) != 0) {
        *n = 0;
        set_last((cudaError_t)atoi(e));
        return (cudaError_t)atoi(e);
    }
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    if (d != 0) {
        set_last(cudaErrorInvalidDevice);
        return cudaErrorInvalidDevice;
    }
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
    if (!d) return cudaErrorInvalidValue;
    *d = 0;
    return cudaSuccess;
}

static cudaDeviceProp emu_props(void)
{
    cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "CPU emulation (tests/emu)");
    p.totalGlobalMem = (size_t)16 << 30;
    p.sharedMemPerBlock = 48 * 1024;
    p.warpSize = 32;
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsDim[0] = 1024, p.maxThreadsDim[1] = 1024, p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 2147483647, p.maxGridSize[1] = 65535, p.maxGridSize[2] = 65535;
    p.multiProcessorCount = 1, p.major = 9, p.minor = 0, p.clockRate = 1000000;
    p.memoryClockRate = 1000000, p.memoryBusWidth = 64;
    return p;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
    if (!p) return cudaErrorInvalidValue;
    if (d != 0) return cudaErrorInvalidDevice;
    *p = emu_props();
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v) return cudaErrorInvalidValue;
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v) return cudaErrorInvalidValue;
    *v = 13000;
    return cudaSuccess;
}

/* ---- fibers ----------------------------------------------------------------------------------- */

enum { F_NEW, F_RUN, F_BAR, F_WARP, F_DONE };

/* A thread of the block being run. It gets a stack from the pool when it starts and gives it
 * back when it ends: threads that never wait all run on the same (cache-hot) stack. */
struct emu_stack {
    char *base;
    size_t size;
    int dirty; /* abandoned mid-run (a failed launch): unpoison before reuse */
};

struct emu_fiber {
    emu_thread t;
    int state, lane, warp;
    const char *file; /* where it waits */
    int line;
    unsigned mask; /* F_WARP: the warp operation's mask */
    emu_stack *stk;
#ifdef EMU_ASM_SWITCH
    void *sp;
#else
    ucontext_t uc;
#endif
#ifdef EMU_ASAN
    void *fake;
#endif
};

emu_thread *emu_cur = NULL;
uint3 emu_block_idx;
dim3 emu_block_dim, emu_grid_dim;

static emu_fiber *fibers = NULL, *cur_fiber = NULL;
static int n_fibers = 0;
static emu_stack **free_stacks = NULL; /* the pool: a LIFO of stacks not in use */
static int n_free = 0, n_stacks = 0;
static emu_body cur_body;
static void *cur_closure;
static unsigned char shfl_slot[32][32][16]; /* [warp][lane]: the values in flight */
#ifdef EMU_ASM_SWITCH
static void *sched_sp;
extern "C" void emu_switch(void **save, void *to);
__asm__(".text\n"
        ".globl emu_switch\n"
        ".type emu_switch,@function\n"
        "emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size emu_switch,.-emu_switch\n");
#else
static ucontext_t sched_uc;
#endif
#ifdef EMU_ASAN
static void *sched_fake;
static const void *sched_bottom;
static size_t sched_size;
#endif

#define EMU_STACK (256 * 1024)

/* from a fiber back to the scheduler; `final`: the fiber is done and never resumes */
static void to_scheduler(emu_fiber *f, int final)
{
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(final ? NULL : &f->fake, sched_bottom, sched_size);
#else
    (void)final;
#endif
#ifdef EMU_ASM_SWITCH
    emu_switch(&f->sp, sched_sp);
#else
    swapcontext(&f->uc, &sched_uc);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(f->fake, &sched_bottom, &sched_size);
#endif
}

static void fiber_main(void)
{
    emu_fiber *f = cur_fiber;
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &sched_bottom, &sched_size);
#endif
    cur_body(cur_closure);
    f->state = F_DONE;
    to_scheduler(f, 1);
    abort(); /* never resumed */
}

/* fresh start of fiber f at fiber_main */
static void fiber_reset(emu_fiber *f)
{
#ifdef EMU_ASAN
    if (f->stk->dirty) __asan_unpoison_memory_region(f->stk->base, f->stk->size);
#endif
    f->stk->dirty = 0;
#ifdef EMU_ASM_SWITCH
    {
        uintptr_t top = ((uintptr_t)(f->stk->base + f->stk->size)) & ~(uintptr_t)15;
        void **sp = (void **)top;
        *--sp = NULL;                             /* the entry's "return address" */
        *--sp = (void *)(uintptr_t)&fiber_main; /* ret goes here */
        for (int k = 0; k < 6; k++) *--sp = NULL; /* rbp rbx r12 r13 r14 r15 */
        f->sp = sp;
    }
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stk->base;
    f->uc.uc_stack.ss_size = f->stk->size;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, fiber_main, 0);
#endif
}

static void resume(emu_fiber *f)
{
    cur_fiber = f;
    emu_cur = &f->t;
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&sched_fake, f->stk->base, f->stk->size);
#endif
#ifdef EMU_ASM_SWITCH
    emu_switch(&sched_sp, f->sp);
#else
    swapcontext(&sched_uc, &f->uc);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(sched_fake, NULL, NULL);
#endif
    cur_fiber = NULL;
    emu_cur = NULL;
}

static int ensure_fibers(int n)
{
    emu_fiber *nf;
    if (n <= n_fibers) return 1;
    nf = (emu_fiber *)realloc(fibers, (size_t)n * sizeof *nf);
    if (!nf) return 0;
    fibers = nf, n_fibers = n;
    return 1;
}

/* a stack from the pool (a new one when it is empty); NULL when out of memory */
static emu_stack *take_stack(void)
{
    emu_stack *s;
    if (n_free > 0) return free_stacks[--n_free];
    s = (emu_stack *)calloc(1, sizeof *s);
    if (!s) return NULL;
    s->size = EMU_STACK;
    s->base = (char *)mmap(NULL, EMU_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s->base == MAP_FAILED) {
        free(s);
        return NULL;
    }
    {
        emu_stack **nf = (emu_stack **)realloc(free_stacks, (size_t)(n_stacks + 1) * sizeof *nf);
        if (!nf) {
            munmap(s->base, EMU_STACK);
            free(s);
            return NULL;
        }
        free_stacks = nf, n_stacks++;
    }
    return s;
}

static void give_stack(emu_stack *s) { free_stacks[n_free++] = s; }

int emu_lane(void)
{
    const uint3 &i = emu_cur->idx;
    return (int)((i.x + emu_block_dim.x * (i.y + emu_block_dim.y * i.z)) & 31u);
}

void emu_syncthreads(const char *file, int line)
{
    emu_fiber *f = cur_fiber;
    if (!f) {
        emu_fail(cudaErrorLaunchFailure, "__syncthreads outside a kernel (%s:%d)", file, line);
        return;
    }
    f->state = F_BAR, f->file = file, f->line = line;
    to_scheduler(f, 0);
}

static void warp_wait(unsigned mask, const char *file, int line)
{
    emu_fiber *f = cur_fiber;
    f->state = F_WARP, f->file = file, f->line = line, f->mask = mask;
    to_scheduler(f, 0);
}

static int launch_failed; /* set by a lane that found an error; the scheduler stops the launch */

void emu_syncwarp(unsigned mask, const char *file, int line)
{
    if (!cur_fiber) return;
    if (!(mask >> cur_fiber->lane & 1u)) {
        emu_fail(cudaErrorLaunchFailure, "%s:%d: __syncwarp mask 0x%08x without the calling lane %d", file, line, mask,
                 cur_fiber->lane);
        launch_failed = 1;
        warp_wait(mask, file, line);
        return;
    }
    warp_wait(mask, file, line);
}

void emu_shfl(unsigned mask, const void *in, void *out, size_t size, int src, const char *file, int line)
{
    emu_fiber *f = cur_fiber;
    if (!f || size > sizeof shfl_slot[0][0]) {
        emu_fail(cudaErrorLaunchFailure, "%s:%d: shuffle outside a kernel or of %zu bytes", file, line, size);
        memcpy(out, in, size);
        return;
    }
    if (!(mask >> f->lane & 1u) || src < 0 || src > 31 || !(mask >> src & 1u)) {
        emu_fail(cudaErrorLaunchFailure,
                 "%s:%d: shuffle with mask 0x%08x: lane %d %s lane %d", file, line, mask, f->lane,
                 !(mask >> f->lane & 1u) ? "is not in the mask, or reads" : "reads outside the mask,", src);
        launch_failed = 1;
    }
    memcpy(shfl_slot[f->warp][f->lane], in, size);
    warp_wait(mask, file, line); /* every lane of the mask has written */
    memcpy(out, shfl_slot[f->warp][src & 31], size);
    warp_wait(mask, file, line); /* every lane has read: the slots may be reused */
}

/* Releases a warp whose mask's lanes all wait at the same warp operation; 1 released, 0 none
 * ready, -1 an error (message printed). */
static int release_warps(int n, const char *kernel)
{
    int released = 0, w, nw = (n + 31) / 32;
    for (w = 0; w < nw; w++) {
        int first = -1, l;
        for (l = 0; l < 32 && w * 32 + l < n; l++)
            if (fibers[w * 32 + l].state == F_WARP) {
                first = w * 32 + l;
                break;
            }
        if (first < 0) continue;
        {
            const emu_fiber *a = &fibers[first];
            unsigned m = a->mask;
            for (l = 0; l < 32; l++) {
                const emu_fiber *b;
                if (!(m >> l & 1u)) continue;
                if (w * 32 + l >= n) {
                    emu_fail(cudaErrorLaunchFailure,
                             "%s: %s:%d: warp operation with mask 0x%08x in warp %d of a block of %d threads: lane %d "
                             "does not exist (a partial warp)",
                             kernel, a->file, a->line, m, w, n, l);
                    return -1;
                }
                b = &fibers[w * 32 + l];
                if (b->state == F_DONE || b->state == F_BAR) {
                    emu_fail(cudaErrorLaunchFailure,
                             "%s: %s:%d: warp operation with mask 0x%08x: lane %d of warp %d %s", kernel, a->file,
                             a->line, m, l, w, b->state == F_DONE ? "has exited" : "waits at a __syncthreads");
                    return -1;
                }
                if (b->mask != m || b->file != a->file || b->line != a->line) {
                    emu_fail(cudaErrorLaunchFailure,
                             "%s: warp %d: lane %d waits at %s:%d (mask 0x%08x), lane %d at %s:%d (mask 0x%08x)", kernel,
                             w, first % 32, a->file, a->line, m, l, b->file, b->line, b->mask);
                    return -1;
                }
            }
            for (l = 0; l < 32; l++)
                if (m >> l & 1u) fibers[w * 32 + l].state = F_RUN;
            released = 1;
        }
    }
    return released;
}

/* The stacks of the threads of a failed block go back to the pool, marked dirty. */
static void abandon(int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (fibers[i].stk) {
            fibers[i].stk->dirty = 1;
            give_stack(fibers[i].stk);
            fibers[i].stk = NULL;
        }
}

/* Runs one block to its end; 0, or -1 after an error (message printed). */
static int run_block(int n, const char *kernel)
{
    int i, live;
    for (i = 0; i < n; i++) {
        emu_fiber *f = &fibers[i];
        f->t.idx.x = (unsigned)i % emu_block_dim.x;
        f->t.idx.y = (unsigned)i / emu_block_dim.x % emu_block_dim.y;
        f->t.idx.z = (unsigned)i / (emu_block_dim.x * emu_block_dim.y);
        f->state = F_NEW, f->lane = i % 32, f->warp = i / 32, f->file = NULL, f->line = 0, f->mask = 0;
        f->stk = NULL;
    }
    for (;;) {
        int at_bar = 0, done = 0, r;
        const emu_fiber *bar = NULL;
        for (i = 0; i < n; i++) {
            emu_fiber *f = &fibers[i];
            if (f->state == F_NEW) {
                if (!(f->stk = take_stack())) {
                    emu_fail(cudaErrorMemoryAllocation, "%s: no memory for a thread's stack", kernel);
                    abandon(n);
                    return -1;
                }
                fiber_reset(f);
                f->state = F_RUN;
            }
            if (f->state == F_RUN) {
                resume(f);
                if (launch_failed) {
                    abandon(n);
                    return -1;
                }
                if (f->state == F_DONE) give_stack(f->stk), f->stk = NULL;
            }
        }
        for (i = 0; i < n; i++) {
            done += fibers[i].state == F_DONE;
            if (fibers[i].state == F_BAR) {
                at_bar++;
                if (!bar) bar = &fibers[i];
            }
        }
        if (done == n) return 0;
        r = release_warps(n, kernel);
        if (r < 0) {
            abandon(n);
            return -1;
        }
        if (r > 0) continue;
        /* every live thread waits at a __syncthreads: the same one, reached by all */
        live = n - done;
        if (at_bar != live) {
            emu_fail(cudaErrorLaunchFailure, "%s: deadlock: %d threads wait at barriers, %d at warp operations", kernel,
                     at_bar, live - at_bar);
            abandon(n);
            return -1;
        }
        if (done > 0) {
            emu_fail(cudaErrorLaunchFailure, "%s: %s:%d: __syncthreads reached by %d live threads, %d have exited", kernel,
                     bar->file, bar->line, live, done);
            abandon(n);
            return -1;
        }
        for (i = 0; i < n; i++)
            if (fibers[i].file != bar->file || fibers[i].line != bar->line) {
                emu_fail(cudaErrorLaunchFailure, "%s: divergent __syncthreads: thread 0 waits at %s:%d, thread %d at %s:%d",
                         kernel, bar->file, bar->line, i, fibers[i].file, fibers[i].line);
                abandon(n);
                return -1;
            }
        for (i = 0; i < n; i++) fibers[i].state = F_RUN;
    }
}

void emu_run_grid(dim3 g, dim3 b, size_t shmem, cudaStream_t s, emu_body body, void *closure, const char *name)
{
    cudaDeviceProp p = emu_props();
    unsigned long long nt = (unsigned long long)b.x * b.y * b.z, bx, by, bz;
    if (cur_fiber) {
        emu_fail(cudaErrorLaunchFailure, "%s: launched from inside a kernel", name);
        emu_n_launch_failures++;
        return;
    }
    if (!valid_stream(s)) {
        emu_fail(cudaErrorInvalidResourceHandle, "%s: launch on an invalid stream", name);
        emu_n_launch_failures++;
        return;
    }
    if (g.x < 1 || g.y < 1 || g.z < 1 || b.x < 1 || b.y < 1 || b.z < 1 || nt > (unsigned)p.maxThreadsPerBlock ||
        b.x > (unsigned)p.maxThreadsDim[0] || b.y > (unsigned)p.maxThreadsDim[1] || b.z > (unsigned)p.maxThreadsDim[2] ||
        g.x > (unsigned)p.maxGridSize[0] || g.y > (unsigned)p.maxGridSize[1] || g.z > (unsigned)p.maxGridSize[2] ||
        shmem > p.sharedMemPerBlock) {
        emu_fail(cudaErrorInvalidConfiguration, "%s: launch geometry grid (%u, %u, %u) block (%u, %u, %u) shmem %zu "
                 "outside the device limits", name, g.x, g.y, g.z, b.x, b.y, b.z, shmem);
        emu_n_launch_failures++;
        return;
    }
    if (!ensure_fibers((int)nt)) {
        emu_fail(cudaErrorMemoryAllocation, "%s: no memory for %llu fibers", name, nt);
        emu_n_launch_failures++;
        return;
    }
    emu_grid_dim = g, emu_block_dim = b;
    cur_body = body, cur_closure = closure;
    launch_failed = 0;
    emu_device_access(1);
    for (bz = 0; bz < g.z; bz++)
        for (by = 0; by < g.y; by++)
            for (bx = 0; bx < g.x; bx++) {
                emu_block_idx.x = (unsigned)bx, emu_block_idx.y = (unsigned)by, emu_block_idx.z = (unsigned)bz;
                if (run_block((int)nt, name) != 0) {
                    fprintf(stderr, "cuda-emu: %s: the launch failed in block (%llu, %llu, %llu)\n", name, bx, by, bz);
                    set_last(cudaErrorLaunchFailure);
                    emu_n_launch_failures++;
                    emu_device_access(0);
                    return;
                }
            }
    emu_device_access(0);
}

/* ---- cuBLAS ----------------------------------------------------------------------------------- */

struct emu_blas {
    int magic;
    cudaStream_t stream;
};

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    if (!h) return CUBLAS_STATUS_INVALID_VALUE;
    *h = (cublasHandle_t)malloc(sizeof **h);
    if (!*h) return CUBLAS_STATUS_ALLOC_FAILED;
    (*h)->magic = EMU_MAGIC, (*h)->stream = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    if (!h || h->magic != EMU_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->magic = 0;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    if (!h || h->magic != EMU_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!valid_stream(s)) return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t blas_fail(const char *what, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cuda-emu: %s: ", what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* a column-major rows x cols matrix with leading dimension ld inside device memory */
static int dev_matrix(const void *p, int rows, int cols, int ld)
{
    size_t need;
    if (rows == 0 || cols == 0) return 1;
    need = ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * sizeof(float);
    return device_range(p, need);
}

#define A_(i, j) ((double)A[(size_t)(j) * (size_t)lda + (size_t)(i)])
#define B_(i, j) ((double)B[(size_t)(j) * (size_t)ldb + (size_t)(i)])
#define C_(i, j) C[(size_t)(j) * (size_t)ldc + (size_t)(i)]

static cublasStatus_t gemm_one(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                               const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    int i, j, l;
    double *acc = (double *)malloc((size_t)(m > 0 ? m : 1) * sizeof *acc);
    if (!acc) return CUBLAS_STATUS_ALLOC_FAILED;
    for (j = 0; j < n; j++) {
        if (ta == CUBLAS_OP_N) { /* columns of A are contiguous: an axpy per l */
            for (i = 0; i < m; i++) acc[i] = 0.0;
            for (l = 0; l < k; l++) {
                double b = tb == CUBLAS_OP_N ? B_(l, j) : B_(j, l);
                const float *a = A + (size_t)l * (size_t)lda;
                for (i = 0; i < m; i++) acc[i] += (double)a[i] * b;
            }
        } else { /* rows of op(A) are contiguous: a dot product per i */
            for (i = 0; i < m; i++) {
                const float *a = A + (size_t)i * (size_t)lda;
                double s = 0.0;
                if (tb == CUBLAS_OP_N) {
                    const float *b = B + (size_t)j * (size_t)ldb;
                    for (l = 0; l < k; l++) s += (double)a[l] * (double)b[l];
                } else {
                    for (l = 0; l < k; l++) s += (double)a[l] * B_(j, l);
                }
                acc[i] = s;
            }
        }
        for (i = 0; i < m; i++) C_(i, j) = (float)(alpha * acc[i] + (beta == 0.0f ? 0.0 : (double)beta * (double)C_(i, j)));
    }
    free(acc);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t gemm_check(const char *what, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                 int n, int k, const void *alpha, const void *A, int lda, const void *B, int ldb,
                                 const void *beta, const void *C, int ldc, int batch, long long sa, long long sb,
                                 long long sc)
{
    int ra = ta == CUBLAS_OP_N ? m : k, ca = ta == CUBLAS_OP_N ? k : m;
    int rb = tb == CUBLAS_OP_N ? k : n, cb = tb == CUBLAS_OP_N ? n : k, q;
    if (!h || h->magic != EMU_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
        return blas_fail(what, "unsupported operation");
    if (m < 0 || n < 0 || k < 0 || batch < 0) return blas_fail(what, "negative size m %d n %d k %d batch %d", m, n, k, batch);
    if (lda < (ra > 1 ? ra : 1)) return blas_fail(what, "lda %d < max(1, %d) (op %s, m %d k %d)", lda, ra, ta ? "T" : "N", m, k);
    if (ldb < (rb > 1 ? rb : 1)) return blas_fail(what, "ldb %d < max(1, %d) (op %s, k %d n %d)", ldb, rb, tb ? "T" : "N", k, n);
    if (ldc < (m > 1 ? m : 1)) return blas_fail(what, "ldc %d < max(1, %d)", ldc, m);
    if (!alpha || !beta) return blas_fail(what, "NULL alpha or beta");
    for (q = 0; q < batch; q++) {
        const float *a = (const float *)A + (size_t)q * (size_t)sa, *b = (const float *)B + (size_t)q * (size_t)sb;
        const float *c = (const float *)C + (size_t)q * (size_t)sc;
        if ((k > 0 && (!dev_matrix(a, ra, ca, lda) || !dev_matrix(b, rb, cb, ldb))) || !dev_matrix(c, m, n, ldc))
            return blas_fail(what, "batch %d: an operand runs outside device memory (m %d n %d k %d lda %d ldb %d ldc %d)",
                             q, m, n, k, lda, ldb, ldc);
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B,
                            cudaDataType bt, int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1,
                                      compute, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc, long long sc,
                                          int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    cublasStatus_t st;
    int q;
    (void)algo;
    if (at != CUDA_R_32F || bt != CUDA_R_32F || ct != CUDA_R_32F ||
        (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32))
        return blas_fail("cublasGemmEx", "only fp32 data with fp32 or TF32 compute is emulated");
    st = gemm_check("cublasGemm(StridedBatched)Ex", h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch, sa,
                    sb, sc);
    if (st != CUBLAS_STATUS_SUCCESS || m == 0 || n == 0) return st;
    emu_device_access(1);
    for (q = 0; q < batch; q++)
        gemm_one(ta, tb, m, n, k, *(const float *)alpha, (const float *)A + (size_t)q * (size_t)sa, lda,
                 (const float *)B + (size_t)q * (size_t)sb, ldb, *(const float *)beta, (float *)C + (size_t)q * (size_t)sc,
                 ldc);
    emu_device_access(0);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    return cublasGemmEx(h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, beta, C, CUDA_R_32F, ldc,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t cublasSsyrk(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t trans, int n, int k,
                           const float *alpha, const float *A, int lda, const float *beta, float *C, int ldc)
{
    int ra = trans == CUBLAS_OP_N ? n : k, ca = trans == CUBLAS_OP_N ? k : n, i, j, l;
    if (!h || h->magic != EMU_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) ||
        (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T))
        return blas_fail("cublasSsyrk", "bad uplo or trans");
    if (n < 0 || k < 0) return blas_fail("cublasSsyrk", "negative size n %d k %d", n, k);
    if (lda < (ra > 1 ? ra : 1)) return blas_fail("cublasSsyrk", "lda %d < max(1, %d) (trans %s, n %d k %d)", lda, ra, trans ? "T" : "N", n, k);
    if (ldc < (n > 1 ? n : 1)) return blas_fail("cublasSsyrk", "ldc %d < max(1, %d)", ldc, n);
    if (!alpha || !beta) return blas_fail("cublasSsyrk", "NULL alpha or beta");
    if ((k > 0 && !dev_matrix(A, ra, ca, lda)) || !dev_matrix(C, n, n, ldc))
        return blas_fail("cublasSsyrk", "an operand runs outside device memory");
    emu_device_access(1);
    for (j = 0; j < n; j++)
        for (i = uplo == CUBLAS_FILL_MODE_LOWER ? j : 0; i < (uplo == CUBLAS_FILL_MODE_LOWER ? n : j + 1); i++) {
            double s = 0.0;
            for (l = 0; l < k; l++) s += trans == CUBLAS_OP_N ? A_(i, l) * A_(j, l) : A_(l, i) * A_(l, j);
            C_(i, j) = (float)(*alpha * s + (*beta == 0.0f ? 0.0 : (double)*beta * (double)C_(i, j)));
        }
    emu_device_access(0);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSsymm(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, int m, int n,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    int na = side == CUBLAS_SIDE_LEFT ? m : n, i, j, l;
    if (!h || h->magic != EMU_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((side != CUBLAS_SIDE_LEFT && side != CUBLAS_SIDE_RIGHT) ||
        (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER))
        return blas_fail("cublasSsymm", "bad side or uplo");
    if (m < 0 || n < 0) return blas_fail("cublasSsymm", "negative size m %d n %d", m, n);
    if (lda < (na > 1 ? na : 1)) return blas_fail("cublasSsymm", "lda %d < max(1, %d) (side %s)", lda, na, side ? "R" : "L");
    if (ldb < (m > 1 ? m : 1)) return blas_fail("cublasSsymm", "ldb %d < max(1, %d)", ldb, m);
    if (ldc < (m > 1 ? m : 1)) return blas_fail("cublasSsymm", "ldc %d < max(1, %d)", ldc, m);
    if (!alpha || !beta) return blas_fail("cublasSsymm", "NULL alpha or beta");
    if (!dev_matrix(A, na, na, lda) || !dev_matrix(B, m, n, ldb) || !dev_matrix(C, m, n, ldc))
        return blas_fail("cublasSsymm", "an operand runs outside device memory");
    emu_device_access(1);
    /* only the uplo triangle of A is read */
#define SYM(i, j) ((uplo == CUBLAS_FILL_MODE_LOWER) == ((i) >= (j)) ? A_(i, j) : A_(j, i))
    for (j = 0; j < n; j++)
        for (i = 0; i < m; i++) {
            double s = 0.0;
            if (side == CUBLAS_SIDE_LEFT)
                for (l = 0; l < m; l++) s += SYM(i, l) * B_(l, j);
            else
                for (l = 0; l < n; l++) s += B_(i, l) * SYM(l, j);
            C_(i, j) = (float)(*alpha * s + (*beta == 0.0f ? 0.0 : (double)*beta * (double)C_(i, j)));
        }
#undef SYM
    emu_device_access(0);
    return CUBLAS_STATUS_SUCCESS;
}
