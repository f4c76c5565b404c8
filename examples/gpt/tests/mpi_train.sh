#!/usr/bin/env bash
# mpi_train.sh - data-parallel training (examples/gpt/README.md "Many processes") against one
# process: `mpirun -np 2 build/gpt/train_mpi` with global micro-batch B must give the losses of
# `build/gpt/train` with the same flags, up to floating-point reassociation.
#
# Builds nothing (make test-mpi / make test-build build build/gpt/train, train_mpi and prepare).
# Skips (exit 0, "mpi_train: 0 passed, 0 failed (SKIPPED: no MPI)", then the plain summary line)
# only when mpicc or mpirun is missing. Ends with "mpi_train: N passed, M failed" (tests/run.sh sums these) and exits 1 on a
# failure.
#
# Tolerance: TOL (default 1e-4) on |loss_np2 - loss_np1| per update and on the validation losses.
# Measured on this test's runs (20 updates, the configurations below): the largest difference is
# a few 1e-7 (1-2 float ulps of the loss; the differences are the reassociated gradient sums and
# the smaller per-rank GEMMs), so 1e-4 leaves a margin of more than 100x, while a wrong batch
# slice, a missing average or a lost Muon step shows up above 1e-2 (the "another seed" check below
# proves the comparison can fail). The script prints the largest difference it saw.
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=${GPT_BIN:-build/gpt}
MPIRUN=${MPIRUN:-mpirun}
TOL=${TOL:-1e-4}
NAME=mpi_train

. examples/gpt/tests/mpi_lib.sh # skip rule, ok/bad, RUNFLAGS, OPENMPI
finish() { echo "$NAME: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }

T=$(mktemp -d /tmp/mpi_train.XXXXXX)
for f in "$B/train" "$B/train_mpi" "$B/test_comm_mpi" "$B/prepare"; do
    if [ ! -x "$f" ]; then bad "$f is missing (make test-mpi builds it)"; finish; fi
done

export OMP_NUM_THREADS=1
np2() { timeout 120 "$MPIRUN" "${RUNFLAGS[@]}" "$B/train_mpi" "$@"; }
np1() { timeout 120 "$B/train" "$@"; }

# 0. The communicator and the sharded library calls (test_comm_mpi.c) on 2 ranks: its tests count
# as this script's.
out=$(timeout 120 "$MPIRUN" "${RUNFLAGS[@]}" "$B/test_comm_mpi" 2>&1); rc=$?
line=$(printf '%s\n' "$out" | grep -E '^mpi_comm: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.*, ([0-9]+) failed/\1/')
    pass=$((pass + p)); fail=$((fail + f))
    [ "$f" != 0 ] && printf '%s\n' "$out" | grep -v "^mpi_comm:" | tail -20
    echo "  ---- $line (communicator, owner-split Muon, sharded RowNorm vs unsharded)"
fi
if [ -z "$line" ] || [ "$rc" != 0 ]; then printf '%s\n' "$out" | tail -20; bad "test_comm_mpi (exit $rc)"; fi

# A small corpus: two of the project's documents, vocabulary 512.
if ! "$B/prepare" --vocab 512 --out "$T/data" docs/SPEC.md docs/DESIGN.md >"$T/prepare.txt" 2>&1; then
    cat "$T/prepare.txt"; bad "prepare"; finish
fi

BASE=(--data "$T/data" --layers 2 --d-model 32 --heads 2 --seq 32 --steps 20 --eval-every 10 --eval-batches 2
      --panel 2 --diam-every 5 --log-every 0 --no-progress)

# compare A B: "ok max" or "FAIL why"; compares the train rows' losses and the eval rows' val
# losses step by step (the same steps must be present in both), and the train rows' gradient
# norms (before clipping) relatively: Muon, AdamW and RowNorm are nearly scale-invariant, so a
# gradient averaged wrongly (e.g. summed over ranks) would hardly move the losses; the norm
# catches it. Measured relative differences of the norms: a few 1e-7.
MAXDIFF=0
compare() {
    awk -F, -v tol="$TOL" '
        FNR == 1 { f++; next }
        ($1 == "train") { k = $1 "," $2; v = $4; g = $9 }
        ($1 == "eval")  { k = $1 "," $2; v = $13; g = "" }
        ($1 != "train" && $1 != "eval") { next }
        f == 1 { a[k] = v; gn[k] = g; na++ }
        f == 2 { if (!(k in a)) { miss = k; exit } d = a[k] - v; if (d < 0) d = -d; if (d > m) m = d; nb++
                 if (g != "") { r = (gn[k] - g) / g; if (r < 0) r = -r; if (r > mg) mg = r } }
        END {
            if (miss != "") { print "FAIL row " miss " only in the second log"; exit }
            if (na != nb || na == 0) { print "FAIL " na " rows vs " nb; exit }
            if (m > tol) print "FAIL max |loss difference| " m " > " tol " over " na " rows"
            else if (mg > tol) print "FAIL max relative gradient-norm difference " mg " > " tol
            else print "ok " m " (gradient norms within " mg " relative)"
        }' "$1" "$2"
}
check() { # name logA logB
    local r; r=$(compare "$2" "$3")
    case $r in
        ok*) ok "$1 (max |loss difference| ${r#ok })"; r=${r#ok }; r=${r%% *}
             MAXDIFF=$(awk -v a="$MAXDIFF" -v b="$r" 'BEGIN{print (b > a ? b : a)}') ;;
        *) bad "$1: $r" ;;
    esac
}
run_pair() { # name, then flags: one process and 2 ranks with the same flags
    local n=$1; shift
    if ! np1 "${BASE[@]}" "$@" --out "$T/$n.1" >"$T/$n.1.txt" 2>&1; then tail -5 "$T/$n.1.txt"; bad "$n: 1 process failed"; return 1; fi
    if ! np2 "${BASE[@]}" "$@" --out "$T/$n.2" >"$T/$n.2.txt" 2>&1; then tail -5 "$T/$n.2.txt"; bad "$n: 2 ranks failed"; return 1; fi
    check "$n: 2 ranks = 1 process" "$T/$n.1/train.csv" "$T/$n.2/train.csv"
}

# 1. AdamW head, global micro-batch 4 (2 rows per rank), Muon blocks split between the ranks
run_pair adamw --batch 4
line=$(grep "data parallel:" "$T/adamw.2.txt")
if echo "$line" | grep -Eq "rank 0: [1-9][0-9]* .*rank 1: [1-9][0-9]* "; then
    ok "Muon matrices owned by both ranks: ${line#*Muon matrices: }"
else bad "the owner split does not use both ranks: $line"; fi

# 2. RowNorm head, accumulation 2, an odd batch (3 = 2 + 1 rows: weighted by rows), Muown blocks
run_pair rownorm-accum --batch 3 --accum 2 --head rownorm --block muown
# 3. Every rank steps every matrix (no owner split): the same losses again
run_pair nosplit --batch 4 --no-muon-split --head rownorm
# 4. The vocabulary-sharded RowNorm head
run_pair shard-head --batch 4 --head rownorm --shard-head

# 5. The comparison can fail: another seed is far outside the tolerance
np1 "${BASE[@]}" --batch 4 --seed 2 --out "$T/seed2" >"$T/seed2.txt" 2>&1
r=$(compare "$T/adamw.1/train.csv" "$T/seed2/train.csv")
case $r in FAIL*) ok "another seed is rejected by the comparison (${r#FAIL })" ;; *) bad "another seed passed the comparison: $r" ;; esac

# 6. Checkpoints (a resume takes model, batch, schedule and recipe from the checkpoint; the
# evaluation flags are given again): 2 ranks stop at 10 and 1 process resumes (and the reverse); both continue like
# the uninterrupted 2-rank / 1-process runs. Same file format both ways.
R=(--batch 4 --head rownorm --accum 2 --block muown) # Muown states gathered from their owners
np2 "${BASE[@]}" "${R[@]}" --out "$T/full2" >"$T/full2.txt" 2>&1 || bad "uninterrupted 2-rank run"
np2 "${BASE[@]}" "${R[@]}" --out "$T/ck2" --stop-at 10 >"$T/ck2.txt" 2>&1 || bad "2 ranks --stop-at 10"
if np1 "${BASE[@]}" --resume "$T/ck2/ckpt.bin" --out "$T/ck2" >"$T/ck2r.txt" 2>&1; then
    check "2-rank checkpoint resumed by 1 process" "$T/full2/train.csv" "$T/ck2/train.csv"
else tail -5 "$T/ck2r.txt"; bad "1 process cannot resume the 2-rank checkpoint"; fi
np1 "${BASE[@]}" "${R[@]}" --out "$T/ck1" --stop-at 10 >"$T/ck1.txt" 2>&1 || bad "1 process --stop-at 10"
if np2 "${BASE[@]}" --resume "$T/ck1/ckpt.bin" --out "$T/ck1" >"$T/ck1r.txt" 2>&1; then
    check "1-process checkpoint resumed by 2 ranks" "$T/full2/train.csv" "$T/ck1/train.csv"
else tail -5 "$T/ck1r.txt"; bad "2 ranks cannot resume the 1-process checkpoint"; fi
# the two checkpoints at the end hold the same fields in the same order (same size)
s1=$(stat -c %s "$T/ck1/ckpt.bin" 2>/dev/null); s2=$(stat -c %s "$T/ck2/ckpt.bin" 2>/dev/null)
if [ -n "$s1" ] && [ "$s1" = "$s2" ]; then ok "final checkpoints of both routes have the same size ($s1 bytes)"
else bad "checkpoint sizes differ: $s1 vs $s2"; fi

# 7. A 2-rank checkpoint resumed by 2 ranks continues exactly like the uninterrupted 2-rank run.
np2 "${BASE[@]}" "${R[@]}" --out "$T/ck22" --stop-at 10 >/dev/null 2>&1
np2 "${BASE[@]}" --resume "$T/ck22/ckpt.bin" --out "$T/ck22" >"$T/ck22r.txt" 2>&1 || bad "2 ranks cannot resume their own checkpoint"
if cmp -s <(grep -v "^final" "$T/full2/train.csv" | cut -d, -f1-5,9-15) <(grep -v "^final" "$T/ck22/train.csv" | cut -d, -f1-5,9-15); then
    ok "2 ranks: stop + resume = uninterrupted, bit for bit (losses, grad norms, D)"
else bad "2 ranks: the resumed log differs from the uninterrupted one"; fi

# The same with the sharded RowNorm head and Muon blocks (B's rows and the momenta gathered to
# rank 0, then split again on resume).
S=(--batch 4 --head rownorm --shard-head)
np2 "${BASE[@]}" "${S[@]}" --out "$T/cks" --stop-at 10 >"$T/cks.txt" 2>&1 || bad "2 ranks --shard-head --stop-at 10"
cp -r "$T/cks" "$T/cks1"
if np1 "${BASE[@]}" --resume "$T/cks1/ckpt.bin" --out "$T/cks1" >"$T/cks1r.txt" 2>&1; then
    check "sharded-head 2-rank checkpoint resumed by 1 process" "$T/shard-head.2/train.csv" "$T/cks1/train.csv"
else tail -5 "$T/cks1r.txt"; bad "1 process cannot resume the sharded-head checkpoint"; fi
np2 "${BASE[@]}" "${S[@]}" --resume "$T/cks/ckpt.bin" --out "$T/cks" >"$T/cksr.txt" 2>&1 || bad "2 ranks cannot resume the sharded-head checkpoint"
if cmp -s <(grep -v "^final" "$T/shard-head.2/train.csv" | cut -d, -f1-5,9-15) <(grep -v "^final" "$T/cks/train.csv" | cut -d, -f1-5,9-15); then
    ok "sharded head, 2 ranks: stop + resume = uninterrupted, bit for bit"
else bad "sharded head, 2 ranks: the resumed log differs from the uninterrupted one"; fi

# Momentum spectra (--sv all) are computed on each matrix's owner and logged by rank 0: the same
# rows as one process, values within 1e-3 relative.
np1 "${BASE[@]}" --batch 4 --steps 10 --sv all --out "$T/sv1" >/dev/null 2>&1
np2 "${BASE[@]}" --batch 4 --steps 10 --sv all --out "$T/sv2" >/dev/null 2>&1
r=$(awk -F, 'FNR == 1 { f++; next } f == 1 { a[$1 "," $2] = $4; n1++ }
    f == 2 { k = $1 "," $2; if (!(k in a)) { print "FAIL " k " missing"; exit } d = (a[k] - $4) / a[k]; if (d < 0) d = -d
             if (d > m) m = d; n2++ }
    END { if (n1 != n2 || n1 == 0) print "FAIL " n1 " vs " n2 " rows"; else if (m > 1e-3) print "FAIL q50 differs by " m; else print "ok " n1 " rows, q50 within " m }' \
    "$T/sv1/spectra.csv" "$T/sv2/spectra.csv" 2>&1)
case $r in ok*) ok "momentum spectra from the owners: ${r#ok }" ;; *) bad "spectra: $r" ;; esac

# 8. Stops are agreed: a signal to mpirun (SIGUSR1 is forwarded to every rank) stops both ranks
# at the same update with a checkpoint (exit 130), no rank is left waiting.
"$MPIRUN" "${RUNFLAGS[@]}" "$B/train_mpi" "${BASE[@]}" --batch 4 --steps 100000 --eval-every 0 --diam-every 0 \
    --out "$T/sig" >"$T/sig.txt" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "^data parallel:" "$T/sig.txt" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -USR1 "$pid" 2>/dev/null
for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; bad "SIGUSR1: the ranks did not stop within 30 s"
else
    wait "$pid"; rc=$?
    if [ "$rc" != 0 ] && grep -q "interrupted at step" "$T/sig.txt" && [ -f "$T/sig/ckpt.bin" ]; then
        ok "SIGUSR1 to mpirun: both ranks stopped together ($(grep -o 'interrupted at step [0-9]*' "$T/sig.txt")), checkpoint saved"
    else tail -5 "$T/sig.txt"; bad "SIGUSR1: exit $rc, no 'interrupted' line or no checkpoint"; fi
fi

# 9. Failures are agreed: a missing checkpoint fails on every rank (no hang), exit status 1.
if np2 --resume "$T/nothing.bin" --data "$T/data" --out "$T/none" >"$T/none.txt" 2>&1; then bad "missing checkpoint: exit 0"
else
    rc=$?
    if [ "$rc" = 124 ]; then bad "missing checkpoint: the ranks hung"
    elif grep -q "nothing.bin" "$T/none.txt"; then ok "missing checkpoint: every rank stops with the message (exit $rc)"
    else tail -3 "$T/none.txt"; bad "missing checkpoint: no message"; fi
fi

echo "$NAME: tolerance $TOL; largest difference seen $MAXDIFF"
finish
