#!/usr/bin/env bash
# One version everywhere (issue 40): rownorm.h's and muon.h's version macros and header comment
# lines, cmake/rownorm.pc, cmake/rownormConfigVersion.cmake, CMakeLists.txt's project() and the
# CHANGELOG's latest released heading ("## X.Y.Z (YYYY-MM-DD)") must all give the same X.Y.Z;
# an "Unreleased (V)" heading above it must name a later version; every find_package(rownorm X.Y)
# quoted in the README, docs/ and the CMake files must ask for this X.Y. A value this script
# cannot find counts as a mismatch. ROWNORM_VERSION_ROOT checks another tree (for testing this
# script: a copy with one value changed must fail).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "${ROWNORM_VERSION_ROOT:-$here/..}" || exit 1
rel_name=version
. "$here/rel_lib.sh"

macro() { # macro FILE NAME: the value of "#define NAME value"
    sed -nE "s/^#define $2[[:space:]]+([0-9]+)[[:space:]]*$/\1/p" "$1" | head -n 1
}
ver_of_macros() { # ver_of_macros FILE PREFIX
    local a b c
    a=$(macro "$1" "$2_MAJOR"); b=$(macro "$1" "$2_MINOR"); c=$(macro "$1" "$2_PATCH")
    [ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ] && echo "$a.$b.$c"
}
semver='[0-9]+\.[0-9]+\.[0-9]+'
names=() vals=()
add() { names+=("$1"); vals+=("$2"); }
add "rownorm.h RN_VERSION_*" "$(ver_of_macros rownorm.h RN_VERSION)"
add "muon.h MUON_VERSION_*" "$(ver_of_macros muon.h MUON_VERSION)"
add "rownorm.h comment line 1" "$(head -n 1 rownorm.h | sed -nE "s/^\/\* rownorm\.h - v($semver) - .*/\1/p")"
add "muon.h comment line 1" "$(head -n 1 muon.h | sed -nE "s/^\/\* muon\.h - v($semver) - .*/\1/p")"
add "cmake/rownorm.pc Version" "$(sed -nE "s/^Version:[[:space:]]*($semver)[[:space:]]*$/\1/p" cmake/rownorm.pc)"
add "cmake/rownormConfigVersion.cmake" "$(sed -nE "s/^set\(PACKAGE_VERSION \"($semver)\"\)$/\1/p" cmake/rownormConfigVersion.cmake)"
add "CMakeLists.txt project()" "$(sed -nE "s/^project\(rownorm VERSION ($semver)( .*)?\)$/\1/p" CMakeLists.txt)"
add "CHANGELOG.md latest release" "$(sed -nE "s/^## ($semver) \([0-9]{4}-[0-9]{2}-[0-9]{2}\)[[:space:]]*$/\1/p" CHANGELOG.md | head -n 1)"

ref=${vals[0]}
for i in "${!names[@]}"; do
    if [ -z "${vals[$i]}" ]; then rel_bad "${names[$i]}: no version found"
    elif [ "${vals[$i]}" != "$ref" ]; then rel_bad "${names[$i]} says ${vals[$i]}, ${names[0]} says $ref"
    else rel_pass=$((rel_pass + 1)); echo "    ${names[$i]}: ${vals[$i]}"; fi
done

# an "Unreleased (V)" heading before the latest release must be a later version than it
unrel=$(awk -v re="^## $semver \\\\(" '$0 ~ re { exit } /^## Unreleased/ { print }' CHANGELOG.md |
        sed -nE "s/^## Unreleased \(($semver)\).*/\1/p")
if [ -n "$unrel" ] && [ -n "$ref" ]; then
    if [ "$(printf '%s\n%s\n' "$ref" "$unrel" | sort -V | tail -n 1)" = "$unrel" ] && [ "$unrel" != "$ref" ]; then
        rel_pass=$((rel_pass + 1)); echo "    CHANGELOG.md Unreleased ($unrel) is after $ref"
    else rel_bad "CHANGELOG.md: Unreleased ($unrel) is not after this version, $ref"; fi
fi

# every find_package(rownorm X.Y) quoted asks for this minor version
want=${ref%.*}
quotes=$(grep -nEo 'find_package\(rownorm [0-9]+\.[0-9]+[^)]*\)' README.md docs/*.md CMakeLists.txt cmake/*.cmake 2>/dev/null)
stale=$(printf '%s\n' "$quotes" | grep -v -F "find_package(rownorm $want)" | grep -v '^$')
if [ -z "$quotes" ]; then rel_bad "no find_package(rownorm X.Y) quoted in README.md, docs/ or cmake/"
elif [ -n "$stale" ]; then rel_bad "find_package quotes that do not ask for $want: $(echo $stale)"
else rel_pass=$((rel_pass + 1)); echo "    find_package(rownorm $want) in $(printf '%s\n' "$quotes" | cut -d: -f1 | sort -u | tr '\n' ' ')"; fi
rel_finish
