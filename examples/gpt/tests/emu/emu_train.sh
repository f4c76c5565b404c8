#!/usr/bin/env bash
# emu_train.sh - the trainer's device path (train.c -> the device optimizer -> cuda*.cu) on the CPU
# emulation of CUDA: 40 updates with --backend cuda against the same run with --backend cpu, for
# an AdamW and a RowNorm head, and NorMuon per-head blocks (the host optimizer): train losses and
# validation losses within 1e-4 (fp32 in a different order), the final exact D within 1e-3 relative. Also: a driver that is too old is
# named as such (not "no CUDA device"). Builds nothing (make test-build builds
# build/gpt/emu/train_cuda_emu and build/gpt/prepare). Ends with "emu_train: N passed, M failed".
set -u
cd "$(dirname "$0")/../../../.." || exit 1
B=${GPT_BIN:-build/gpt}
EXE=${TRAIN_CUDA:-$B/emu/train_cuda_emu} # cuda_check.sh passes the real build/gpt/train_cuda
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }
T=$(mktemp -d /tmp/emu_train.XXXXXX)
finish() { echo "emu_train: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }
for f in "$EXE" "$B/prepare"; do [ -x "$f" ] || { bad "$f is missing (make test-build builds it)"; finish; }; done
export OMP_NUM_THREADS=1
"$B/prepare" --vocab 300 --out "$T/data" docs/SPEC.md >/dev/null 2>&1 || { bad "prepare"; finish; }
F=(--data "$T/data" --layers 2 --d-model 32 --heads 2 --batch 4 --seq 32 --steps 40 --eval-every 20 --eval-batches 2
   --panel 2 --diam-every 10 --log-every 0 --no-progress)
# normuon: NorMuon blocks with per-head NS have no device optimizer: the run says so and steps on
# the host, and still matches the CPU backend
for head in adamw rownorm normuon; do
    X=(--head "$head"); [ "$head" = normuon ] && X=(--head adamw --block normuon --ns-per-head)
    if ! timeout 300 "$EXE" "${F[@]}" "${X[@]}" --backend cuda --out "$T/cu_$head" >"$T/cu_$head.txt" 2>&1; then
        tail -5 "$T/cu_$head.txt"; bad "$head head: the --backend cuda run failed"; continue
    fi
    if [ "$head" = normuon ] && ! grep -q "optimizer on the host (.*NorMuon" "$T/cu_$head.txt"; then
        bad "normuon: the run does not say its optimizer moved to the host"; grep -i optim "$T/cu_$head.txt" | head -3
    fi
    timeout 300 "$EXE" "${F[@]}" "${X[@]}" --backend cpu --out "$T/cp_$head" >"$T/cp_$head.txt" 2>&1 ||
        { bad "$head head: the --backend cpu run failed"; continue; }
    r=$(awk -F, 'FNR == 1 { f++ }
        $1 == "train" || $1 == "eval" { k = $1 "," $2; v = ($1 == "train") ? $4 : $13; if (f == 1) a[k] = v; else { n++; if (!(k in a)) miss = k; d = a[k] - v; if (d < 0) d = -d; if (d > m) m = d } }
        $1 == "final" { if (f == 1) D = $12; else { rd = (D - $12) / $12; if (rd < 0) rd = -rd } }
        END { if (miss != "") print "FAIL row " miss " missing"; else if (n < 40) print "FAIL only " n " rows";
              else if (m > 1e-4) print "FAIL max |loss difference| " m; else if (!(rd <= 1e-3)) print "FAIL final D relative difference " rd;
              else print "ok " n " rows, max |loss difference| " m + 0 ", final D relative difference " rd }' \
        "$T/cu_$head/train.csv" "$T/cp_$head/train.csv")
    case "$r" in ok*) ok "$head head, --backend cuda (emulated) vs cpu: ${r#ok }";; *) bad "$head head: $r";; esac
done
if [ -z "${TRAIN_CUDA:-}" ]; then # the emulation can pretend the driver is too old; a real GPU cannot
    out=$(EMU_CUDA_DEVICE_ERROR=35 timeout 60 "$EXE" "${F[@]}" --backend cuda --out "$T/old" 2>&1 >/dev/null); rc=$?
    if [ "$rc" != 0 ] && [[ "$out" == *"driver version is insufficient"* ]]; then ok "a too-old driver is named in the error"
    else bad "a too-old driver: exit $rc, stderr: $out"; fi
fi
finish
