/* windows_h.c - both implementations compiled after <windows.h> (tests/reliability.mk builds it
 * with mingw-w64 as C99 and as C++11 with -Werror; tests/rel_windows.sh checks the objects).
 * windows.h defines far, near, min, max, small, interface, IN, OUT, ... as macros: an identifier
 * of that name in either header breaks the build of a Windows program that includes it first. */
#include <windows.h>
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#define MUON_IMPLEMENTATION
#include "muon.h"

int windows_h_check(void);
int windows_h_check(void)
{
    return rn_status_string(RN_OK)[0] != 0 && muon_status_string(MUON_OK)[0] != 0;
}
