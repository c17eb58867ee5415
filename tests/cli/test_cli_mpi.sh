#!/usr/bin/env bash
# test_cli_mpi.sh MPIEXEC SYNCBN NP - `syncbn demo|verify --backend mpi` when the NP processes
# do not all run the same command (issue 25): mpirun MPMD with NP - 1 processes plain and one
# with another flag (--reproducible, --shape), on the last rank or on rank 0. Such a run once
# hung forever (rank 1 in MPI_Bcast, rank 0 in MPI_Finalize); now every rank refuses it at its
# first collective, the command's own timed one, with a message naming the ranks and exit 2.
# Also: a bad SBN_COMM_TIMEOUT on one process ends the job, --ranks under --backend mpi is a
# usage error, and the good runs (every rank alike, or only --threads differing) still pass.
# Every run is bounded by `timeout`: a hang fails the check (exit 124) instead of stalling ctest.
set -u
mpiexec=${1:?usage: test_cli_mpi.sh MPIEXEC SYNCBN NP}
syncbn=${2:?usage: test_cli_mpi.sh MPIEXEC SYNCBN NP}
np=${3:?usage: test_cli_mpi.sh MPIEXEC SYNCBN NP}
limit=90
failures=0
checks=0
export SBN_COMM_TIMEOUT=${SBN_COMM_TIMEOUT:-10} # what a failure may wait for, at most
mpi=("$mpiexec" --allow-run-as-root --oversubscribe -x SBN_COMM_TIMEOUT)
small=(--shape 8x3x4 --iters 2)

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_mpi STATUS "OUTPUT REGEX" MPIRUN-ARGS... : mpirun ends within $limit s with STATUS
# (or any non-zero one for STATUS "nonzero") and prints a line matching the regex.
expect_mpi() {
  local want=$1 regex=$2 out rc
  shift 2
  checks=$((checks + 1))
  out=$(mktemp)
  timeout "$limit" "${mpi[@]}" "$@" >"$out" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ]; then
    fail "mpirun $*: still running after $limit s (a hang)"
  elif [ "$want" = nonzero ] && [ "$rc" -eq 0 ]; then
    fail "mpirun $*: exit 0, expected a failure"
  elif [ "$want" != nonzero ] && [ "$rc" -ne "$want" ]; then
    fail "mpirun $*: exit $rc, expected $want: $(grep -v '^ *$' "$out" | head -n 3 | tr '\n' ' ')"
  elif ! grep -Eq -e "$regex" "$out"; then
    fail "mpirun $*: no line /$regex/: $(grep -v '^ *$' "$out" | head -n 3 | tr '\n' ' ')"
  fi
  rm -f "$out"
}

rest=$((np - 1))
# --- one process with other flags: refused on every rank, whichever rank it is
expect_mpi 2 "different flags.*Ranks that differ: $rest\$" \
  -np "$rest" "$syncbn" demo --backend mpi "${small[@]}" : \
  -np 1 "$syncbn" demo --backend mpi "${small[@]}" --reproducible
expect_mpi 2 "different flags.*Ranks that differ: 1" \
  -np 1 "$syncbn" demo --backend mpi "${small[@]}" --reproducible : \
  -np "$rest" "$syncbn" demo --backend mpi "${small[@]}"
expect_mpi 2 "rank $rest runs: verify --backend mpi --reproducible" \
  -np "$rest" "$syncbn" verify --backend mpi : -np 1 "$syncbn" verify --backend mpi --reproducible
expect_mpi 2 "rank 1 runs: verify --backend mpi \(not" \
  -np 1 "$syncbn" verify --backend mpi --reproducible : -np "$rest" "$syncbn" verify --backend mpi
expect_mpi 2 "different flags" \
  -np "$rest" "$syncbn" demo --backend mpi "${small[@]}" : \
  -np 1 "$syncbn" demo --backend mpi --shape 8x3x5 --iters 2
# --- a bad SBN_COMM_TIMEOUT on one process: it refuses to start, and the job ends
expect_mpi nonzero "SBN_COMM_TIMEOUT is \"abc\"" \
  -np "$rest" "$syncbn" demo --backend mpi "${small[@]}" : \
  -np 1 env SBN_COMM_TIMEOUT=abc "$syncbn" demo --backend mpi "${small[@]}"
# --- --ranks is mpirun's business
expect_mpi 2 "--ranks 4 with --backend mpi" -np "$np" "$syncbn" demo --backend mpi --ranks 4
# --- the good runs: the same flags (the flag order aside), or only --threads differing
# the default split gives every process samples (two processes once got "16 0")
expect_mpi 0 "^  samples per rank:( [1-9][0-9]*){$np}\$" -np "$np" "$syncbn" demo --backend mpi --iters 1
expect_mpi 0 "^  samples per rank: [1-9][0-9]* 0" -np "$np" "$syncbn" demo --backend mpi "${small[@]}" --empty
expect_mpi 0 "W = 1 digest [0-9a-f]+: equal" \
  -np "$np" "$syncbn" demo --backend mpi "${small[@]}" --reproducible
expect_mpi 0 "matches whole-batch BN" \
  -np "$rest" "$syncbn" demo --backend mpi "${small[@]}" --threads 2 : \
  -np 1 "$syncbn" demo --backend mpi --iters 2 --shape 8x3x4
expect_mpi 0 "verify --reproducible \(mpi backend, $np processes\): [0-9]+ passed, 0 failed" \
  -np "$np" "$syncbn" verify --reproducible --backend mpi

echo "test_cli_mpi (np $np): $((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
