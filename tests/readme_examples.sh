#!/usr/bin/env bash
# Compiles and runs every ```c block of README.md that has a main(), with -Werror, so the
# README's examples cannot rot. Prints "readme: N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '/^```c$/{n++; f=sprintf("%s/ex%d.c", dir, n); inb=1; next} /^```$/{inb=0} inb{print > f}' "$root/README.md"
pass=0; fail=0
for f in "$tmp"/ex*.c; do
    [ -e "$f" ] || continue
    grep -q 'int main' "$f" || continue
    if $cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I"$root" "$f" -o "$f.bin" -lm && "$f.bin" >/dev/null; then
        pass=$((pass + 1))
    else
        echo "README example $(basename "$f") failed"; sed -n 1,5p "$f"; fail=$((fail + 1))
    fi
done
[ $((pass + fail)) -gt 0 ] || { echo "no README examples found"; fail=1; }
echo "readme: $pass passed, $fail failed"
[ "$fail" = 0 ]
