/* fuzz_impl.c - the implementations of both headers, compiled once (instrumented, sanitized)
 * and linked into every fuzz target. */
#define MUON_IMPLEMENTATION
#define ROWNORM_IMPLEMENTATION
#include "muon.h"
#include "rownorm.h"
