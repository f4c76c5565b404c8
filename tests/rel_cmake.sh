#!/usr/bin/env bash
# The install paths a CMake or pkg-config user takes (issue 13): `make install` and
# `cmake --install` must install the same files; a consumer finds them with
# find_package(rownorm 0.3) (and is refused 0.1, 0.2, 0.4, 0.3.1 and 1.0), or with pkg-config from a
# relocated prefix; under add_subdirectory() nothing of ours is installed unless ROWNORM_INSTALL=ON,
# and a parent's STATIC library linked to rownorm::rownorm can be install(EXPORT)ed, its installed
# package then used by a consumer (issue 40). Each consumer runs a step of each header.
set -u
cd "$(dirname "$0")/.."
rel_name=cmake
. tests/rel_lib.sh
rel_have cmake || rel_missing cmake "apt-get install cmake"
rel_have pkg-config || rel_missing pkg-config "apt-get install pkg-config"
T=$(mktemp -d /tmp/rel_cmake.XXXXXX)
trap 'rm -rf "$T"' EXIT
src=$PWD
ok() { rel_pass=$((rel_pass + 1)); echo "    ok   $*"; }
q() { "$@" >"$T/last.log" 2>&1 || { tail -n 20 "$T/last.log"; return 1; }; }

mkdir -p "$T/consumer"
cat >"$T/consumer/main.c" <<'CEOF'
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#define MUON_IMPLEMENTATION
#include "muon.h"
#include <stdio.h>
int main(void)
{
    float W[12] = {0}, G[12], S[12];
    double d = -1.0;
    int i, bad = 0;
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    muon_state ms;
    muon_config mc = muon_default();
    for (i = 0; i < 12; i++) G[i] = (float)((i * 7) % 5) - 2.0f;
    bad |= rn_rownorm_init(&st, 3, 4) != RN_OK || rn_rownorm_step(&st, &cfg, W, 4, G, 4, S, 4) != RN_OK;
    bad |= rn_row_diameter(S, 3, 4, 4, &d, NULL, NULL) != RN_OK || !(d > 0.0);
    bad |= muon_init(&ms, 3, 4) != MUON_OK || muon_step(&ms, &mc, W, 4, G, 4, NULL, 0) != MUON_OK;
    rn_rownorm_free(&st);
    muon_free(&ms);
    printf("consumer: D(S) = %.6g, %s\n", d, bad ? "FAILED" : "ok");
    return bad;
}
CEOF
cat >"$T/consumer/CMakeLists.txt" <<'CEOF'
cmake_minimum_required(VERSION 3.13)
project(consumer C)
find_package(rownorm ${WANT} REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer rownorm::rownorm rownorm::muon)
CEOF

# 1. both installers, the same files
q make -s install PREFIX="$T/mk" && ok "make install" || rel_bad "make install failed"
if q cmake -S "$src" -B "$T/b" && q cmake --install "$T/b" --prefix "$T/cm"; then
    if diff -r "$T/mk" "$T/cm" >"$T/diff.txt"; then ok "cmake --install installs what make install does"
    else rel_bad "cmake --install differs from make install: $(head -5 "$T/diff.txt")"; fi
else rel_bad "cmake configure / install of the tree failed"; fi
for f in include/rownorm.h include/muon.h lib/cmake/rownorm/rownormConfig.cmake \
         lib/cmake/rownorm/rownormConfigVersion.cmake lib/pkgconfig/rownorm.pc; do
    [ -f "$T/mk/$f" ] || rel_bad "make install did not install $f"
done

# 2. find_package with a version, from a prefix that was moved after installing
mv "$T/mk" "$T/moved"
for pfx in moved cm; do
    if q cmake -S "$T/consumer" -B "$T/c-$pfx" -DWANT=0.3 -DCMAKE_PREFIX_PATH="$T/$pfx" &&
       q cmake --build "$T/c-$pfx" && q "$T/c-$pfx/consumer"; then ok "find_package(rownorm 0.3) from $pfx, built, ran"
    else rel_bad "find_package(rownorm 0.3) consumer from $pfx"; fi
done
for v in 0.1 0.2 0.4 0.3.1 1.0; do
    if cmake -S "$T/consumer" -B "$T/c-v$v" -DWANT=$v -DCMAKE_PREFIX_PATH="$T/moved" >/dev/null 2>&1; then
        rel_bad "find_package(rownorm $v) accepted version 0.3.0"
    else ok "find_package(rownorm $v) refused"; fi
done

# 3. pkg-config from the moved prefix
cf=$(PKG_CONFIG_PATH="$T/moved/lib/pkgconfig" pkg-config --cflags --libs rownorm 2>/dev/null)
# shellcheck disable=SC2086
if [ -n "$cf" ] && q cc -std=c99 -O1 "$T/consumer/main.c" -o "$T/pc" $cf && q "$T/pc"; then ok "pkg-config (relocated prefix): $cf"
else rel_bad "pkg-config consumer (flags: '$cf')"; fi

# 4. add_subdirectory: nothing installed unless asked
mkdir -p "$T/parent"
cp "$T/consumer/main.c" "$T/parent/"
cat >"$T/parent/CMakeLists.txt" <<CEOF
cmake_minimum_required(VERSION 3.13)
project(parent C)
add_subdirectory("$src" rownorm)
add_executable(parent main.c)
target_link_libraries(parent rownorm::rownorm rownorm::muon)
install(TARGETS parent DESTINATION bin)
CEOF
for opt in OFF ON; do
    if q cmake -S "$T/parent" -B "$T/p-$opt" -DROWNORM_INSTALL=$opt && q cmake --build "$T/p-$opt" &&
       q "$T/p-$opt/parent" && q cmake --install "$T/p-$opt" --prefix "$T/pi-$opt"; then
        if [ "$opt" = OFF ] && [ ! -e "$T/pi-$opt/include/rownorm.h" ] && [ -x "$T/pi-$opt/bin/parent" ]; then
            ok "add_subdirectory: built, ran, installed the parent only"
        elif [ "$opt" = ON ] && [ -e "$T/pi-$opt/include/rownorm.h" ]; then
            ok "add_subdirectory with -DROWNORM_INSTALL=ON installs the headers"
        else rel_bad "add_subdirectory ROWNORM_INSTALL=$opt installed the wrong files"; fi
    else rel_bad "add_subdirectory parent (ROWNORM_INSTALL=$opt)"; fi
done

# 5. a parent that add_subdirectory()s this tree, builds a STATIC library linked to
# rownorm::rownorm (PUBLIC: its header includes rownorm.h) and rownorm::muon (PRIVATE), and
# install(EXPORT)s it with a package config that finds rownorm as a dependency; then a consumer of
# the parent's installed package builds and runs. ROWNORM_INSTALL=OFF: rownorm comes from its own
# install ($T/cm); ON: from the parent's prefix, where the parent installed it.
mkdir -p "$T/mylib" "$T/mylib-user"
cat >"$T/mylib/mylib.h" <<'CEOF'
#include "rownorm.h"
rn_status mylib_diameter(double *d);
int mylib_muon_ok(void);
CEOF
cat >"$T/mylib/mylib.c" <<'CEOF'
#define ROWNORM_IMPLEMENTATION
#include "mylib.h"
#define MUON_IMPLEMENTATION
#include "muon.h"
rn_status mylib_diameter(double *d)
{
    const float S[6] = {0.0f, 1.0f, 2.0f, 3.0f, 5.0f, 4.0f};
    return rn_row_diameter(S, 3, 2, 2, d, NULL, NULL);
}
int mylib_muon_ok(void)
{
    float W[12] = {0}, G[12];
    int i, ok;
    muon_state ms;
    muon_config mc = muon_default();
    for (i = 0; i < 12; i++) G[i] = (float)((i * 7) % 5) - 2.0f;
    ok = muon_init(&ms, 3, 4) == MUON_OK && muon_step(&ms, &mc, W, 4, G, 4, NULL, 0) == MUON_OK;
    muon_free(&ms);
    return ok;
}
CEOF
cat >"$T/mylib/mylibConfig.cmake" <<'CEOF'
include(CMakeFindDependencyMacro)
find_dependency(rownorm 0.3)
include("${CMAKE_CURRENT_LIST_DIR}/mylibTargets.cmake")
CEOF
cat >"$T/mylib/CMakeLists.txt" <<CEOF
cmake_minimum_required(VERSION 3.13)
project(mylib C)
add_subdirectory("$src" rownorm)
add_library(mylib STATIC mylib.c)
target_include_directories(mylib PUBLIC \$<BUILD_INTERFACE:\${CMAKE_CURRENT_SOURCE_DIR}> \$<INSTALL_INTERFACE:include>)
target_link_libraries(mylib PUBLIC rownorm::rownorm PRIVATE rownorm::muon)
install(TARGETS mylib EXPORT mylibTargets ARCHIVE DESTINATION lib)
install(FILES mylib.h DESTINATION include)
install(EXPORT mylibTargets NAMESPACE mylib:: DESTINATION lib/cmake/mylib)
install(FILES mylibConfig.cmake DESTINATION lib/cmake/mylib)
CEOF
cat >"$T/mylib-user/main.c" <<'CEOF'
#include <stdio.h>
#include "mylib.h"
int main(void)
{
    double d = -1.0;
    int bad = mylib_diameter(&d) != RN_OK || !(d > 0.0) || !mylib_muon_ok();
    printf("mylib user: D = %.6g, %s\n", d, bad ? "FAILED" : "ok");
    return bad;
}
CEOF
cat >"$T/mylib-user/CMakeLists.txt" <<'CEOF'
cmake_minimum_required(VERSION 3.13)
project(mylib_user C)
find_package(mylib REQUIRED)
add_executable(mylib_user main.c)
target_link_libraries(mylib_user mylib::mylib)
CEOF
for opt in OFF ON; do
    if q cmake -S "$T/mylib" -B "$T/m-$opt" -DROWNORM_INSTALL=$opt && q cmake --build "$T/m-$opt" &&
       q cmake --install "$T/m-$opt" --prefix "$T/mi-$opt"; then
        ok "add_subdirectory + STATIC lib on rownorm::rownorm + install(EXPORT), ROWNORM_INSTALL=$opt"
        pp="$T/mi-$opt"
        [ "$opt" = OFF ] && pp="$T/mi-$opt;$T/cm"
        if [ "$opt" = ON ] && [ ! -f "$T/mi-ON/lib/cmake/rownorm/rownormConfig.cmake" ]; then
            rel_bad "ROWNORM_INSTALL=ON: the parent's prefix has no rownorm package"
        elif q cmake -S "$T/mylib-user" -B "$T/mu-$opt" -DCMAKE_PREFIX_PATH="$pp" &&
             q cmake --build "$T/mu-$opt" && q "$T/mu-$opt/mylib_user"; then
            ok "a consumer of the exported STATIC library built and ran (ROWNORM_INSTALL=$opt)"
        else rel_bad "consumer of the parent's installed package (ROWNORM_INSTALL=$opt)"; fi
    else rel_bad "add_subdirectory parent exporting a STATIC library (ROWNORM_INSTALL=$opt)"; fi
done
rel_finish
