/* libs.c - the one translation unit of the trainer that compiles the single-header libraries'
 * implementations (stb convention: X_IMPLEMENTATION in exactly one file). Add
 * ROWNORM_IMPLEMENTATION here too when the trainer links rownorm.h. */
#define MUON_IMPLEMENTATION
#include "muon.h"
