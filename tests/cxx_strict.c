/* cxx_strict.c - both implementations compiled as C++20 the way a game engine builds its code:
 * -fno-exceptions -fno-rtti -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wold-style-cast
 * -Wcast-qual -Wdouble-promotion -Wzero-as-null-pointer-constant -Werror, with g++ and clang++, the
 * headers by -I as add_subdirectory gives them (tests/reliability.mk; tests/rel_cxx_strict.sh checks
 * the objects). The implementations silence -Wold-style-cast for themselves only
 * (push/pop), so the declarations and this file stay under the full set. */
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#define MUON_IMPLEMENTATION
#include "muon.h"

int cxx_strict_check(void);
int cxx_strict_check(void)
{
    return rn_status_string(RN_OK)[0] != 0 && muon_status_string(MUON_OK)[0] != 0;
}
