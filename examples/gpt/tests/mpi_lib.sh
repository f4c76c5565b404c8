# mpi_lib.sh - sourced by the MPI test scripts (mpi_train.sh, mpi_kill.sh) after they set NAME
# and MPIRUN: the skip rule when MPI is missing, the pass/fail counters, and mpirun's flags.
# Skips (exit 0, "NAME: 0 passed, 0 failed (SKIPPED: no MPI)", then the plain summary line)
# only when mpicc or mpirun is missing.
if ! command -v mpicc >/dev/null 2>&1 || ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "$NAME: mpicc or mpirun not found (install openmpi-bin libopenmpi-dev)"
    echo "$NAME: 0 passed, 0 failed (SKIPPED: no MPI)"
    echo "$NAME: 0 passed, 0 failed" # the form tests/run.sh parses (its pattern ends at "failed")
    exit 0
fi
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL $*"; }

# OpenMPI: root in containers needs --allow-run-as-root; 2 ranks on fewer cores need
# --oversubscribe; containers without ptrace need the copy mechanism off.
RUNFLAGS=(-np 2)
OPENMPI=0
if "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
    OPENMPI=1
    RUNFLAGS+=(--oversubscribe)
    [ "$(id -u)" = 0 ] && RUNFLAGS+=(--allow-run-as-root)
    export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
fi
