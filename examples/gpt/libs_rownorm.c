/* libs_rownorm.c - the trainer's one translation unit with rownorm.h's implementation (stb
 * convention: ROWNORM_IMPLEMENTATION in exactly one file; muon.h's is in libs.c). */
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
