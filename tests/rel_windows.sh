#!/usr/bin/env bash
# Windows: both implementations compile after <windows.h> (mingw-w64, C99 and C++11, -Werror),
# and the whole test suite, built for Windows by tests/reliability.mk, passes under wine.
set -u
cd "$(dirname "$0")/.."
rel_name=windows
. tests/rel_lib.sh
rel_have x86_64-w64-mingw32-gcc || rel_missing x86_64-w64-mingw32-gcc "apt-get install g++-mingw-w64-x86-64"
rel_have wine || rel_missing wine "apt-get install wine64"
for o in windows_h_c windows_h_cxx; do
    if [ -s "$REL_B/win/$o.o" ]; then
        rel_pass=$((rel_pass + 1)); echo "    $REL_B/win/$o.o: compiled after <windows.h>"
    else
        rel_bad "$REL_B/win/$o.o: the implementations do not compile after <windows.h>"
        [ -f "$REL_B/win/$o.o.log" ] && tail -n 20 "$REL_B/win/$o.o.log"
    fi
done
export WINEPREFIX=${WINEPREFIX:-$PWD/$REL_B/win/prefix} WINEDEBUG=-all
mkdir -p "$WINEPREFIX"
# wine passes the programs' CRLF line ends through: strip them for the summary line
winrun() { local o rc; o=$(wine "$@" 2>&1); rc=$?; printf '%s\n' "$o" | tr -d '\r'; return $rc; }
for t in tests/test_*.c; do
    n=$(basename "$t" .c)
    rel_run_bin "$REL_B/win/$n.exe" winrun
done
wineserver -k 2>/dev/null
rel_finish
