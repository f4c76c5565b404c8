/* libs.c - the trainer's one translation unit with muon.h's implementation (stb convention:
 * MUON_IMPLEMENTATION in exactly one file). rownorm.h's is in libs_rownorm.c, apart so that the
 * binaries of the model alone (cpu.c needs muon_sgemm only) do not carry it. */
#define MUON_IMPLEMENTATION
#include "muon.h"
