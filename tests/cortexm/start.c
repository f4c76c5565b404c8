/* start.c - bare-metal start-up of the Cortex-M test programs (tests/rel_cortexm.sh) on qemu's
 * MPS2 boards: the vector table, .data/.bss set-up, the FPU enabled, newlib's semihosting
 * handles opened, main() run, its status returned through semihosting's exit (qemu exits 0 on
 * ADP_Stopped_ApplicationExit, 1 otherwise). A fault reports a run-time error and stops. */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
extern void initialise_monitor_handles(void);
extern int main(void);
void cm_reset(void);
/* CM_REPORT: the stack main used (the free RAM between .bss and the stack painted first) and
 * the arena's peak (cm_arena_report, arena.c), printed after main returns */
#ifdef CM_REPORT
#include <stdio.h>
#include <stddef.h>
extern void *_sbrk(ptrdiff_t incr); /* newlib's (libgloss) heap break */
#include "arena.h"
#define CM_PAINT 0xA5C3E1F7u
static __attribute__((noinline)) uintptr_t cm_sp_now(void)
{
    uintptr_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}
#endif

static void cm_fault(void)
{
    for (;;) {
        register uint32_t r0 __asm__("r0") = 0x18u;    /* SYS_EXIT */
        register uint32_t r1 __asm__("r1") = 0x20023u; /* ADP_Stopped_RunTimeErrorUnknown */
        __asm__ volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
    }
}

/* initial stack pointer, reset, NMI, the faults, SVC, PendSV, SysTick */
__attribute__((section(".vectors"), used)) static const uintptr_t cm_vectors[16] = {
    (uintptr_t)&_estack, (uintptr_t)cm_reset, (uintptr_t)cm_fault, (uintptr_t)cm_fault,
    (uintptr_t)cm_fault, (uintptr_t)cm_fault, (uintptr_t)cm_fault, 0, 0, 0, 0, (uintptr_t)cm_fault,
    (uintptr_t)cm_fault, 0, (uintptr_t)cm_fault, (uintptr_t)cm_fault};

void cm_reset(void)
{
    uint32_t *s = &_sidata, *d = &_sdata;
    while (d < &_edata) *d++ = *s++;
    for (d = &_sbss; d < &_ebss;) *d++ = 0;
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10 and CP11 (the FPU) enabled */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
#endif
    initialise_monitor_handles();
#ifdef CM_REPORT
    {
        uintptr_t top;
        uint32_t *p;
        int rc;
        printf("cortexm: main starts\n"); /* newlib's stdout buffer is now on its heap */
        p = (uint32_t *)_sbrk(0) + 1024;    /* the heap's end, and 4 KB for it to grow */
        top = cm_sp_now() - 64u;
        for (d = p; (uintptr_t)d < top; d++) *d = CM_PAINT;
        rc = main();
        while ((uintptr_t)p < top && *p == CM_PAINT) p++;
        printf("cortexm: stack %lu B, arena peak %lu of %lu B\n", (unsigned long)(top + 64u - (uintptr_t)p),
               (unsigned long)cm_arena_peak(), (unsigned long)cm_arena_bytes());
        exit(rc);
    }
#else
    exit(main());
#endif
}
