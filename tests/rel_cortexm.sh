#!/usr/bin/env bash
# rownorm.h and muon.h on microcontrollers: Cortex-M4F (qemu's mps2-an386) and Cortex-M7
# (mps2-an500) under qemu-system-arm with semihosting, built with Debian's arm-none-eabi-gcc and
# newlib-nano, every MUON_MALLOC / RN_MALLOC from a static arena (tests/cortexm/arena.c):
#   * tests/cortexm/test_cortexm.c on a 64 KB arena: the issue's muon_init(32, 64) + muon_step
#     layer, Muown, AdamW, the RowNorm step, exact row diameter, Hilbert distance, bad input;
#     each case's arena peak and stack (painted) printed, the stack held to a limit;
#   * every README example with a main(), unchanged, on a 3.5 MB arena (their layers are
#     1000 x 64 and 256 x 512), with its stack and arena peak (on the M7: see below);
#   * the code size of each implementation (-Os and -O2, text + data + bss of its object);
#   * on the M4F, the software-double calls per element of a RowNorm step with and without
#     RN_FLOAT_ARITH (tests/cortexm/softfp.c; the option must cut them at least 3x);
#   * tests/cortexm/bits.c built -std=c99 gives the host's bits (scalar build) for both headers;
#     built -std=gnu99 (FMA contraction) it must not (the probe that the comparison can fail).
# docs/embedding.md ("Microcontrollers") quotes the figures.
set -u
cd "$(dirname "$0")/.."
rel_name=cortexm
. tests/rel_lib.sh
CC_ARM=${CC_ARM:-arm-none-eabi-gcc}
rel_have "$CC_ARM" || rel_missing "$CC_ARM" "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"
rel_have qemu-system-arm || rel_missing qemu-system-arm "apt-get install qemu-system-arm"
O=$REL_B/cortexm
rm -rf "$O"; mkdir -p "$O"
if ! printf '#include <stdio.h>\nint main(void){return 0;}\n' | "$CC_ARM" -mthumb -mcpu=cortex-m4 -x c - -c \
        --specs=nano.specs -o "$O/probe.o" 2>/dev/null; then
    rel_missing newlib "apt-get install libnewlib-arm-none-eabi"
fi
SIZE_ARM=${CC_ARM%gcc}size
ALLOC="-DMUON_MALLOC=cm_malloc -DMUON_FREE=cm_free -DRN_MALLOC=cm_malloc -DRN_FREE=cm_free"
LINK="-nostartfiles --specs=nano.specs --specs=rdimon.specs -u _printf_float -T tests/cortexm/link.ld"
WARN_ARM="-std=c99 -O2 -Wall -Wextra -Wpedantic -Werror"
QEMU_FL="-nographic -monitor none -serial none -semihosting-config enable=on,target=native"
cpus="m4f:cortex-m4:fpv4-sp-d16:mps2-an386 m7:cortex-m7:fpv5-d16:mps2-an500"

# the README's examples, extracted as tests/readme_examples.sh does
awk -v dir="$O" '/^```c$/{n++; f=sprintf("%s/readme%d.c", dir, n); inb=1; next} /^```$/{inb=0} inb{print > f}' README.md

# the host's bits (tests/cortexm/bits.c, scalar, -std=c99: no FMA contraction) for the
# bit-identity check below
host_bits=""
# shellcheck disable=SC2086
if ${CC:-cc} -std=c99 -O2 -DRN_NO_SIMD -DMUON_NO_SIMD -I. tests/cortexm/bits.c -o "$O/bits_host" -lm > "$O/bits_host.log" 2>&1; then
    host_bits=$("$O/bits_host" | grep '^bits: ')
    echo "    host (scalar, -std=c99): ${host_bits#bits: }"
fi
[ -n "$host_bits" ] || { cat "$O/bits_host.log"; rel_bad "tests/cortexm/bits.c did not build or run on the host"; }

for c in $cpus; do
    IFS=: read -r name cpu fpu mach <<< "$c"
    CPU="-mthumb -mcpu=$cpu -mfpu=$fpu -mfloat-abi=hard"
    echo "    $name: -mcpu=$cpu -mfpu=$fpu, qemu-system-arm -M $mach"
    bin=$O/test_cortexm_$name.elf
    # shellcheck disable=SC2086
    "$CC_ARM" $CPU $WARN_ARM -Wno-unused-function -DTEST_VARIANT="\"cortexm-$name\"" $ALLOC -I. -Itests \
        -Itests/cortexm $LINK tests/cortexm/start.c tests/cortexm/arena.c tests/cortexm/test_cortexm.c -lm \
        -o "$bin" > "$bin.log" 2>&1 || { cat "$bin.log"; rm -f "$bin"; }
    if [ -f "$bin" ]; then
        # shellcheck disable=SC2086
        res=$(timeout 300 qemu-system-arm -M "$mach" $QEMU_FL -kernel "$bin" 2>&1); rc=$?
        printf '%s\n' "$res" | grep -E '^    ' | sed 's/^/    /'
        line=$(printf '%s\n' "$res" | grep -E '^cortexm-[a-z0-9]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
        p=$(printf '%s\n' "$line" | sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/p')
        f=$(printf '%s\n' "$line" | sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/p')
        if [ -z "$line" ] || [ "$rc" != 0 ] || [ "$f" != 0 ]; then
            printf '%s\n' "$res" | grep -v -E '^    ' | tail -n 30
            rel_bad "$name: test_cortexm (exit $rc, ${line:-no summary line})"
            p=${p:-0}
        fi
        echo "        test_cortexm: ${line#*: }"
        rel_pass=$((rel_pass + p))
    else
        rel_bad "$name: test_cortexm did not build"
    fi
    # the README examples on the M7 only: the muon one's diagnostic (muon_singular_values, float64
    # Jacobi on 256 x 512) runs in software double on the M4F's single-precision FPU, 130 s under qemu
    [ "$name" = m7 ] || echo "        README examples: on the M7 (double-precision FPU) only"
    for ex in "$O"/readme*.c; do
        [ "$name" = m7 ] && [ -e "$ex" ] || continue
        grep -q 'int main' "$ex" || continue
        exb=${ex%.c}_$name.elf
        # shellcheck disable=SC2086
        if ! "$CC_ARM" $CPU $WARN_ARM -include tests/cortexm/arena.h -DCM_REPORT -DCM_ARENA_BYTES=3670016 \
                -DCM_ARENA_SECTION $ALLOC -I. -Itests/cortexm $LINK tests/cortexm/start.c tests/cortexm/arena.c \
                "$ex" -lm -o "$exb" > "$exb.log" 2>&1; then
            cat "$exb.log"; rel_bad "$name: README example $(basename "$ex") did not build"; continue
        fi
        # shellcheck disable=SC2086
        res=$(timeout 300 qemu-system-arm -M "$mach" $QEMU_FL -kernel "$exb" 2>&1); rc=$?
        line=$(printf '%s\n' "$res" | grep '^cortexm: stack')
        if [ "$rc" = 0 ] && [ -n "$line" ]; then
            rel_pass=$((rel_pass + 1))
            printf '        README %s: %s | %s\n' "$(basename "$ex" .c)" "$(printf '%s\n' "$res" | sed -n 2p)" "${line#cortexm: }"
        else
            printf '%s\n' "$res" | tail -n 10; rel_bad "$name: README example $(basename "$ex") exited $rc"
        fi
    done
    # bit-identical to the host: -std=c99 (WARN_ARM) must give the host's bits; -std=gnu99, GCC's
    # default, contracts a*b+c into VFMA (-ffp-contract=fast) and must differ (the probe that the
    # comparison sees the last bits; docs/embedding.md, "Bit-identical results on a Cortex-M")
    for std in c99 gnu99; do
        bb=$O/bits_${name}_$std.elf
        # shellcheck disable=SC2086
        if [ -n "$host_bits" ] && "$CC_ARM" $CPU $WARN_ARM -std=$std -include tests/cortexm/arena.h -DCM_ARENA_BYTES=262144 \
                -DCM_ARENA_SECTION $ALLOC -I. -Itests/cortexm $LINK tests/cortexm/start.c tests/cortexm/arena.c \
                tests/cortexm/bits.c -lm -o "$bb" > "$bb.log" 2>&1 &&
                res=$(timeout 120 qemu-system-arm -M "$mach" $QEMU_FL -kernel "$bb" 2>&1); then
            got=$(printf '%s\n' "$res" | grep '^bits: ')
            echo "        -std=$std: ${got#bits: }"
            if [ "$std" = c99 ]; then
                if [ "$got" = "$host_bits" ]; then rel_pass=$((rel_pass + 1))
                else rel_bad "$name: -std=c99 results differ from the host's"; fi
            elif [ -n "$got" ] && [ "$got" != "$host_bits" ]; then rel_pass=$((rel_pass + 1))
            else rel_bad "$name: probe: -std=gnu99 (contraction) gave the host's bits: the comparison shows nothing"; fi
        elif [ -n "$host_bits" ]; then
            cat "$bb.log"; rel_bad "$name: bits.c (-std=$std) did not build or run"
        fi
    done
    # code size of each implementation alone (text + data + bss of the object)
    for lvl in Os O2; do
        sizes=""
        for h in rownorm:ROWNORM_IMPLEMENTATION muon:MUON_IMPLEMENTATION; do
            hn=${h%%:*}; def=${h#*:}
            obj=$O/${hn}_${name}_$lvl.o
            # shellcheck disable=SC2086
            if printf '#define %s\n#include "%s.h"\n' "$def" "$hn" | "$CC_ARM" $CPU -std=c99 -$lvl -Wall -Wextra \
                    -Wpedantic -Werror -I. -x c - -c -o "$obj" > "$obj.log" 2>&1; then
                sizes="$sizes $hn.h $("$SIZE_ARM" "$obj" | awk 'NR == 2 { printf "%d B (text %d)", $4, $1 }'),"
                rel_pass=$((rel_pass + 1))
            else
                cat "$obj.log"; rel_bad "$name: $hn.h did not build at -$lvl"
            fi
        done
        echo "        code size -$lvl:${sizes%,}"
    done
    # software-double calls of a RowNorm step per element (tests/cortexm/softfp.c), with and
    # without RN_FLOAT_ARITH, on the single-precision FPU only; the option must cut them 3x
    [ "$name" = m4f ] || continue
    WRAP=""
    for f in dadd dsub drsub dmul ddiv dcmpeq dcmplt dcmple dcmpge dcmpgt dcmpun f2d d2f ui2d i2d; do
        WRAP="$WRAP,--wrap=__aeabi_$f"
    done
    per=()
    for fl in "" -DRN_FLOAT_ARITH; do
        sb=$O/softfp_$name${fl:+_float}.elf
        # shellcheck disable=SC2086
        if "$CC_ARM" $CPU $WARN_ARM $fl -DRN_MALLOC=cm_malloc -DRN_FREE=cm_free -I. -Itests/cortexm $LINK \
                -Wl$WRAP tests/cortexm/start.c tests/cortexm/arena.c tests/cortexm/softfp.c -lm -o "$sb" > "$sb.log" 2>&1 &&
                res=$(timeout 120 qemu-system-arm -M "$mach" $QEMU_FL -kernel "$sb" 2>&1) &&
                line=$(printf '%s\n' "$res" | grep '^softfp: .* per element per step$'); then
            per+=("$(printf '%s\n' "$line" | sed -nE 's/.* ([0-9.]+) per element per step$/\1/p')")
            echo "        RowNorm step, software-double calls${fl:+ (RN_FLOAT_ARITH)}: ${line#softfp: }"
        else
            cat "$sb.log"; printf '%s\n' "${res:-}" | tail -n 5; rel_bad "$name: softfp${fl:+ $fl} did not build or run"
        fi
    done
    if [ "${#per[@]}" = 2 ]; then
        if awk -v d="${per[0]}" -v f="${per[1]}" 'BEGIN { exit !(f * 3 <= d && d > 0) }'; then rel_pass=$((rel_pass + 1))
        else rel_bad "$name: RN_FLOAT_ARITH left ${per[1]} software-double calls per element (default ${per[0]})"; fi
    fi
done
rel_finish
