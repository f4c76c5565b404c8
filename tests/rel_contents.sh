#!/usr/bin/env bash
# The CONTENTS block at the top of each header matches the file (issue 42): every public
# function declared (a line starting with MUONDEF / RNDEF before the implementation) is named
# in it, the names stand in the order of their declarations (a name's first mention counts),
# every name of the library it mentions exists in the header, and its numbered lines
# ("N. title") are the file's banners, in order, numbered 1, 2, 3, ... A banner is a line
# "/* ---- title ----" or a "/* ==== */" line followed by a one-line "/* title */".
# ROWNORM_CONTENTS_ROOT checks another tree (for testing this script: a copy with one name
# deleted from a CONTENTS must fail).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "${ROWNORM_CONTENTS_ROOT:-$here/..}" || exit 1
rel_name=contents
. "$here/rel_lib.sh"

# contents FILE: the CONTENTS block (its paragraph, then the list: the lines " *   ..." and
# blank " *" lines after it, up to the first other line)
contents() {
    awk '/^ \* CONTENTS/ { s = 1 }
         s == 1 && /^ \*   / { s = 2 }
         s == 2 && !/^ \*   / && !/^ \*$/ { exit }
         s { print }' "$1"
}
# outside FILE: the file without its CONTENTS block (where the names must exist)
outside() {
    awk '/^ \* CONTENTS/ { s = 1 }
         s == 1 && /^ \*   / { s = 2 }
         s == 2 && !/^ \*   / && !/^ \*$/ { s = 0 }
         !s { print }' "$1"
}
# banners FILE: the banner titles, one a line, in the order of the file (CONTENTS excluded)
banners() {
    outside "$1" | awk '
        /^\/\* ---- / { t = $0; sub(/^\/\* ---- /, "", t); sub(/ ---+.*$/, "", t); sub(/ *\*\/$/, "", t); print t; next }
        eq && /^\/\* .*\*\/$/ && !/^\/\* =/ { t = $0; sub(/^\/\* /, "", t); sub(/ *\*\/$/, "", t); print t }
        { eq = /^\/\* =+ \*\/$/ }'
}

check_header() { # check_header FILE DEFMACRO IMPLMACRO NAMEREGEX
    local f=$1 def=$2 impl=$3 re=$4
    local block decl bad n missing=() stale=() got want i line num title
    if [ ! -f "$f" ]; then rel_bad "$f not found"; return; fi
    block=$(contents "$f")
    if [ -z "$block" ]; then rel_bad "$f: no CONTENTS block"; return; fi

    # the public functions, in the order of their declarations
    decl=$(awk -v impl="#ifdef $impl" '$0 == impl { exit } { print }' "$f" | grep -E "^$def[[:space:]]")
    bad=$(printf '%s\n' "$decl" | grep -v '(' || true)
    if [ -n "$bad" ]; then rel_bad "$f: a $def declaration without its name and '(' on its line: $bad"; return; fi
    if awk -v impl="#ifdef $impl" '$0 == impl { exit } { print }' "$f" | grep -qE "^[[:space:]]+$def[[:space:]]"; then
        rel_bad "$f: an indented $def declaration (this check reads lines that start with $def)"
    fi
    want=$(printf '%s\n' "$decl" | sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*$/\1/')
    n=$(printf '%s\n' "$want" | grep -c .)
    if [ "$n" -lt 10 ]; then rel_bad "$f: only $n $def declarations found"; return; fi

    # (1) every one is named in CONTENTS
    for name in $want; do
        printf '%s\n' "$block" | grep -qw -- "$name" || missing+=("$name")
    done
    if [ ${#missing[@]} -gt 0 ]; then rel_bad "$f: CONTENTS does not name ${missing[*]}"
    else rel_pass=$((rel_pass + 1)); echo "    $f: CONTENTS names all $n public functions"; fi

    # (2) in the order of the declarations (first mentions)
    got=$(printf '%s\n' "$block" | grep -oE "\\b($re)_[a-z0-9_]+\\b" | awk 'NR == FNR { d[$0] = 1; next } d[$0] && !seen[$0]++' \
          <(printf '%s\n' "$want") -)
    if [ ${#missing[@]} -eq 0 ] && [ "$got" != "$want" ]; then
        line=$(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | grep -m1 -E '^[<>]')
        rel_bad "$f: CONTENTS names the functions out of their declarations' order (first difference: $line)"
    elif [ ${#missing[@]} -eq 0 ]; then rel_pass=$((rel_pass + 1)); echo "    $f: in the order of the declarations"; fi

    # (3) every name it mentions exists in the header
    for name in $(printf '%s\n' "$block" | grep -oE "\\b($re)_[a-z0-9_]+\\b" | sort -u); do
        outside "$f" | grep -qw -- "$name" || stale+=("$name")
    done
    if [ ${#stale[@]} -gt 0 ]; then rel_bad "$f: CONTENTS names what the header does not have: ${stale[*]}"
    else rel_pass=$((rel_pass + 1)); echo "    $f: every name in CONTENTS exists"; fi

    # (4) the numbered lines are the banners, in order, numbered 1..N
    got=$(printf '%s\n' "$block" | sed -nE 's/^ \*[[:space:]]+([0-9]+)\.[[:space:]]+(.*[^[:space:]])[[:space:]]*$/\1|\2/p')
    want=$(banners "$f")
    i=0 bad=
    while IFS= read -r line; do
        i=$((i + 1)); num=${line%%|*}; title=${line#*|}
        [ "$num" = "$i" ] || { bad="number $num where $i was due ($title)"; break; }
    done <<<"$got"
    if [ -z "$bad" ] && [ "$(printf '%s\n' "$got" | sed 's/^[0-9]*|//')" != "$want" ]; then
        bad=$(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got" | sed 's/^[0-9]*|//') | grep -m1 -E '^[<>]')
        bad="its titles are not the banners ('<' banner, '>' CONTENTS; first difference: $bad)"
    fi
    if [ -n "$bad" ]; then rel_bad "$f: CONTENTS numbering: $bad"
    else rel_pass=$((rel_pass + 1)); echo "    $f: CONTENTS numbers all $(printf '%s\n' "$want" | grep -c .) banners in order"; fi
}

check_header muon.h MUONDEF MUON_IMPLEMENTATION 'muon|muown'
check_header rownorm.h RNDEF ROWNORM_IMPLEMENTATION 'rn'
rel_finish
