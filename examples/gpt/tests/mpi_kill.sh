#!/usr/bin/env bash
# mpi_kill.sh - a rank killed mid-run (docs: examples/gpt/README.md "Many processes"): with
# `mpirun -np 2 build/gpt/train_mpi ... --ckpt-every N`, SIGKILL one rank after a checkpoint
# and before the end of the schedule. The job must end (no hang: bounded here, a hang is
# a FAIL), with a non-zero status and a message that names the dead rank, with no process of the
# job left behind; then `--resume` from the last checkpoint must continue exactly like the
# uninterrupted run: every CSV row after the checkpoint's step (train rows: loss, lr, gradient norm,
# D bounds; eval rows: validation loss, Hilbert RMS; the final row) string-equal, i.e. bit for bit
# (the log prints doubles with %.17g, which round-trips; the losses are floats widened to double).
# Done once killing rank 1 (rank 0, the checkpoint writer, survives until mpirun ends it) and once
# killing rank 0.
#
# The message: Open MPI's mpirun (4.x; prterun in 5.x says the same) prints
#   "mpirun noticed that process rank 1 with PID ... on node ... exited on signal 9 (Killed)."
# and kills the surviving rank (it is blocked in a collective: with MPI_ERRORS_ARE_FATAL, the
# default that comm_mpi.c keeps, no MPI call returns to the trainer in between; the survivor
# catches mpirun's SIGTERM as a stop request it cannot act on, and mpirun's SIGKILL follows about
# 2 s later). Other MPIs: the check only asks for "signal 9" / "Killed".
#
# The kill: each rank is started through `bash -c 'echo $$ > pid.RANK; exec train_mpi ...'`
# (Open MPI's OMPI_COMM_WORLD_RANK, PMI_RANK elsewhere), so pid.RANK is the rank's own pid.
#
# Builds nothing (make test-mpi / make test-build build build/gpt/train_mpi and prepare; GPT_BIN
# names another directory). Skips (exit 0, "mpi_kill: 0 passed, 0 failed (SKIPPED: no MPI)", then
# the plain summary line) only when mpicc or mpirun is missing. Ends with
# "mpi_kill: N passed, M failed" (tests/run.sh sums these) and exits 1 on a failure.
# About 15 s on 2 cores.
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=${GPT_BIN:-build/gpt}
MPIRUN=${MPIRUN:-mpirun}
HANG_S=${HANG_S:-20} # seconds a killed job may take to end before it counts as a hang
NAME=mpi_kill

. examples/gpt/tests/mpi_lib.sh # skip rule, ok/bad, RUNFLAGS, OPENMPI
# leftovers of a failed check: only processes whose command line names this run's temp dir
reap() { local p; for p in $(pgrep -f "$T/" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; }
finish() { reap; echo "$NAME: $pass passed, $fail failed"; rm -rf "$T"; [ "$fail" = 0 ]; exit $?; }

T=$(mktemp -d /tmp/mpi_kill.XXXXXX)
trap 'reap; rm -rf "$T"; exit 130' INT TERM
for f in "$B/train_mpi" "$B/prepare"; do
    if [ ! -x "$f" ]; then bad "$f is missing (make test-mpi builds it)"; finish; fi
done

export OMP_NUM_THREADS=1

# A small corpus: two of the project's documents, vocabulary 512.
if ! "$B/prepare" --vocab 512 --out "$T/data" docs/SPEC.md docs/DESIGN.md >"$T/prepare.txt" 2>&1; then
    cat "$T/prepare.txt"; bad "prepare"; finish
fi

# RowNorm head and Muown blocks (their states live on the owner ranks and are gathered into the
# checkpoint), a checkpoint every 20 of 120 updates, evaluations at 40 and 80 and the final one.
STEPS=120
BASE=(--data "$T/data" --layers 2 --d-model 32 --heads 2 --seq 32 --steps "$STEPS" --eval-every 40 --eval-batches 2
      --panel 2 --diam-every 10 --log-every 0 --no-progress --batch 4 --head rownorm --block muown --ckpt-every 20)

# rows K: the CSV rows after step K without the timing columns (ms, tok/s, GFLOP/s, opt_ms)
rows() { awk -F, -v k="$2" 'NR > 1 && $2 > k' "$1" | cut -d, -f1-5,9-15; }
# same A B K: "ok N rows" or "FAIL why" (string equality of every remaining cell)
same() {
    local a b
    a=$(rows "$1" "$3"); b=$(rows "$2" "$3")
    if [ -z "$a" ]; then echo "FAIL no rows after step $3 in $1"
    elif [ "$a" = "$b" ]; then echo "ok $(printf '%s\n' "$a" | wc -l) rows"
    else
        paste -d'\n' <(printf '%s\n' "$a") <(printf '%s\n' "$b") |
            awk 'NR % 2 == 1 { x = $0; next } $0 != x { printf "FAIL first difference: \"%s\" vs \"%s\"\n", x, $0; f = 1; exit }
                 END { if (!f) print "FAIL the row counts differ" }' 
    fi
}
final_val() { awk -F, '$1 == "final" { print $13 }' "$1"; }

# 1. The uninterrupted run.
timeout 120 "$MPIRUN" "${RUNFLAGS[@]}" "$B/train_mpi" "${BASE[@]}" --out "$T/full" >"$T/full.txt" 2>&1; rc=$?
if [ "$rc" = 0 ] && grep -q "^done: $STEPS steps" "$T/full.txt" && [ -n "$(final_val "$T/full/train.csv")" ]; then
    ok "uninterrupted 2-rank run: $STEPS updates, final val loss $(final_val "$T/full/train.csv")"
else tail -5 "$T/full.txt"; bad "uninterrupted 2-rank run (exit $rc)"; finish; fi

# kill_run VICTIM W: start the job, SIGKILL rank VICTIM once a checkpoint exists and the log holds the
# row of update W (rank 0 flushes the log at evaluations and before each checkpoint), check how the
# job ends, resume from the last checkpoint and compare with the uninterrupted run.
kill_run() {
    local v=$1 w=$2 d="$T/kill$1" pid rc vpid t0 t1 k msg a b
    mkdir -p "$d"
    # shellcheck disable=SC2016 # $$ and the rank variables belong to the rank's shell
    timeout 120 "$MPIRUN" "${RUNFLAGS[@]}" bash -c 'echo $$ > "$1/pid.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}"; shift; exec "$@"' \
        rank "$d" "$B/train_mpi" "${BASE[@]}" --out "$d" >"$d.out" 2>"$d.err" &
    pid=$!
    for _ in $(seq 1 3000); do # up to 30 s for the checkpoint and row W
        [ -f "$d/ckpt.bin" ] && [ -s "$d/pid.$v" ] && grep -q "^train,$w," "$d/train.csv" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    vpid=$(cat "$d/pid.$v" 2>/dev/null)
    if [ ! -f "$d/ckpt.bin" ] || [ -z "$vpid" ] || ! kill -0 "$pid" 2>/dev/null; then
        tail -5 "$d.out" "$d.err"; bad "rank $v: no checkpoint and row $w while the job ran, or no pid file (pid '$vpid')"
        reap; { wait "$pid"; } 2>/dev/null; return
    fi
    t0=$(date +%s.%N)
    kill -KILL "$vpid"
    for _ in $(seq 1 $((HANG_S * 20))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then
        bad "rank $v killed: the job still runs after $HANG_S s (a hang)"
        reap; { wait "$pid"; } 2>/dev/null; return
    fi
    wait "$pid"; rc=$?
    t1=$(date +%s.%N)
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && ! grep -q "^done:" "$d.out"; then
        ok "rank $v SIGKILLed (pid $vpid, log at update $w+): the job ended $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s later, exit $rc"
    else tail -5 "$d.out" "$d.err"; bad "rank $v killed: exit $rc (0 or 124 = timeout), or the run finished anyway"; fi
    if [ "$OPENMPI" = 1 ]; then msg=$(grep -E "process rank $v .*exited on signal 9" "$d.err" | head -1)
    else msg=$(grep -Ei "signal:? 9|killed" "$d.err" | head -1); fi
    if [ -n "$msg" ]; then ok "rank $v killed: stderr says so: \"${msg#"${msg%%[! ]*}"}\""
    else cat "$d.err"; bad "rank $v killed: no message naming the dead rank on stderr"; fi
    sleep 0.2
    if [ -z "$(pgrep -f "$d" 2>/dev/null)" ]; then ok "rank $v killed: no process of the job left"
    else ps -o pid,args -p "$(pgrep -d, -f "$d")"; bad "rank $v killed: processes of the job left behind"; reap; fi

    # Resume from the last checkpoint (the evaluation flags again; the rest comes from the file).
    timeout 120 "$MPIRUN" "${RUNFLAGS[@]}" "$B/train_mpi" "${BASE[@]}" --resume "$d/ckpt.bin" \
        --out "$d" >"$d.resume.txt" 2>&1; rc=$?
    k=$(sed -nE 's/^resumed from .* at step ([0-9]+) of [0-9]+$/\1/p' "$d.resume.txt" | head -1)
    if [ "$rc" = 0 ] && [ -n "$k" ] && [ "$k" -gt 0 ] && [ "$k" -lt "$STEPS" ] && grep -q "^done: $STEPS steps" "$d.resume.txt"; then
        ok "rank $v killed: resumed from the checkpoint of step $k of $STEPS, finished"
    else tail -5 "$d.resume.txt"; bad "rank $v killed: resume (exit $rc, step '$k': the kill must come after a checkpoint and before the end)"; return; fi
    msg=$(same "$T/full/train.csv" "$d/train.csv" "$k")
    case $msg in
        ok*) ok "rank $v killed: every row after step $k equals the uninterrupted run's, bit for bit (${msg#ok })" ;;
        *) bad "rank $v killed: rows after step $k: ${msg#FAIL }" ;;
    esac
    msg=$(same "$T/full/train.csv" "$d/train.csv" -1) # rows up to K: kept from the killed job's log
    case $msg in
        ok*) ok "rank $v killed: the whole resumed log equals the uninterrupted one (${msg#ok })" ;;
        *) bad "rank $v killed: the log with the killed job's rows up to step $k: ${msg#FAIL }" ;;
    esac
    a=$(final_val "$T/full/train.csv"); b=$(final_val "$d/train.csv")
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "rank $v killed: final validation loss $b, bit for bit"
    else bad "rank $v killed: final validation loss '$b', uninterrupted '$a'"; fi
}

# 2. Rank 1 killed just after the first checkpoint (rank 0, the checkpoint writer, survives); rank 0
# killed when the log shows update 45, i.e. while it saves the checkpoint of update 60 (the log is
# flushed just before): the resume starts from 60, or from 40 if the kill lands inside the save.
kill_run 1 1
kill_run 0 45

# 3. The comparison can fail: one loss changed in its last printed digit (a few ulps) is caught.
if [ -f "$T/full/train.csv" ]; then
    awk -F, -v OFS=, '$1 == "train" && !done && $2 == '"$STEPS"' - 1 {
        c = substr($4, length($4)); $4 = substr($4, 1, length($4) - 1) (c == "9" ? "8" : c + 1); done = 1 } { print }' \
        "$T/full/train.csv" >"$T/perturbed.csv"
    msg=$(same "$T/full/train.csv" "$T/perturbed.csv" 0)
    case $msg in
        FAIL*) ok "the comparison rejects a loss changed in its 17th digit (${msg#FAIL first difference: })" ;;
        *) bad "a perturbed loss passed the comparison: $msg" ;;
    esac
fi
finish
