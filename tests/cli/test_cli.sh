#!/usr/bin/env bash
# test_cli.sh SYNCBN - the `syncbn` command's argument checks (issue 10, item 10), run
# by ctest with the path of the built binary. Every bad flag (out of range, not a
# whole integer, trailing junk, too many or too few --shape dims, a batch over the
# element budget, unknown flags and commands, missing values, flags of the wrong
# command) must exit with status 2, run nothing, and print on stderr a first line
# that names the flag, its value and the limit; good flags must still run a tiny demo
# to a match (exit 0), for several ranks of --shape, dtypes and thread counts.
set -u
syncbn=${1:?usage: test_cli.sh path/to/syncbn}
failures=0
checks=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_usage_error "FIRST LINE PREFIX" "ALSO CONTAINS" ARGS... : exit 2, nothing on stdout,
# stderr's first line starts with the prefix and contains the second string.
expect_usage_error() {
  local prefix=$1 contains=$2 out err rc first
  shift 2
  checks=$((checks + 1))
  out=$(mktemp) err=$(mktemp)
  timeout 60 "$syncbn" "$@" >"$out" 2>"$err"
  rc=$?
  first=$(head -n 1 "$err")
  if [ "$rc" -ne 2 ]; then
    fail "syncbn $*: exit $rc, expected 2 (stderr: $first)"
  elif [[ "$first" != "$prefix"* ]]; then
    fail "syncbn $*: stderr starts '$first', expected '$prefix...'"
  elif [[ "$first" != *"$contains"* ]]; then
    fail "syncbn $*: stderr '$first' does not mention '$contains'"
  elif [ -s "$out" ]; then
    fail "syncbn $*: printed on stdout although the arguments are refused: $(head -n 1 "$out")"
  fi
  rm -f "$out" "$err"
}

# expect_demo_ok ARGS... : a demo that must run and match whole-batch BN.
expect_demo_ok() {
  local out rc
  checks=$((checks + 1))
  out=$(mktemp)
  timeout 120 "$syncbn" demo "$@" >"$out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "syncbn demo $*: exit $rc: $(tail -n 3 "$out" | tr '\n' ' ')"
  elif ! grep -q "matches whole-batch BN" "$out"; then
    fail "syncbn demo $*: no match line: $(tail -n 1 "$out")"
  fi
  rm -f "$out"
}

# --- the cases named in the issue
expect_usage_error "syncbn: --shape 100000x100000x100000x100000:" "16777216" \
  demo --shape 100000x100000x100000x100000
expect_usage_error "syncbn: --shape 1x2x3x4x5x6x7x8x9:" "2 to 8 dims" demo --shape 1x2x3x4x5x6x7x8x9
expect_usage_error "syncbn: --ranks 0:" "1 to 64" demo --ranks 0
expect_usage_error "syncbn: --iters -1:" "1 to 100000" demo --iters -1
expect_usage_error "syncbn: --threads 0:" "1 to 256" demo --threads 0
expect_usage_error "syncbn: --threads 100000:" "1 to 256" demo --threads 100000

# --- integers: strict parsing, both ends of every range
expect_usage_error "syncbn: --ranks 65:" "1 to 64" demo --ranks 65
expect_usage_error "syncbn: --ranks -3:" "1 to 64" demo --ranks -3
expect_usage_error "syncbn: --ranks 4x:" "1 to 64" demo --ranks 4x
expect_usage_error "syncbn: --ranks abc:" "1 to 64" demo --ranks abc
expect_usage_error "syncbn: --ranks :" "1 to 64" demo --ranks ""
expect_usage_error "syncbn: --ranks  4:" "1 to 64" demo --ranks " 4"
expect_usage_error "syncbn: --ranks +4:" "1 to 64" demo --ranks +4
expect_usage_error "syncbn: --ranks 2.5:" "1 to 64" demo --ranks 2.5
expect_usage_error "syncbn: --ranks 0x10:" "1 to 64" demo --ranks 0x10
expect_usage_error "syncbn: --ranks 99999999999999999999999:" "1 to 64" demo --ranks 99999999999999999999999
expect_usage_error "syncbn: --ranks 4294967298:" "1 to 64" demo --ranks 4294967298
expect_usage_error "syncbn: --iters 0:" "1 to 100000" demo --iters 0
expect_usage_error "syncbn: --iters 100001:" "1 to 100000" demo --iters 100001
expect_usage_error "syncbn: --iters 1e3:" "1 to 100000" demo --iters 1e3
expect_usage_error "syncbn: --threads 257:" "1 to 256" demo --threads 257
expect_usage_error "syncbn: --threads -1:" "1 to 256" demo --threads -1

# --- shapes: 2..8 dims, N >= 0, the others >= 1, the element budgets
expect_usage_error "syncbn: --shape 16:" "2 to 8 dims" demo --shape 16
expect_usage_error "syncbn: --shape 4x:" "dim 1" demo --shape 4x
expect_usage_error "syncbn: --shape x4:" "dim 0" demo --shape x4
expect_usage_error "syncbn: --shape 4x0x2:" "dim 1" demo --shape 4x0x2
expect_usage_error "syncbn: --shape -4x3:" "dim 0" demo --shape -4x3
expect_usage_error "syncbn: --shape 4x3x2y2:" "dim 2" demo --shape 4x3x2y2
expect_usage_error "syncbn: --shape 4x3x2x2 :" "dim 3" demo --shape "4x3x2x2 "
expect_usage_error "syncbn: --shape 0x100000x100000:" "16777216" demo --shape 0x100000x100000
expect_usage_error "syncbn: --shape 9223372036854775807x2:" "dim 0" demo --shape 9223372036854775807x2
expect_usage_error "syncbn: --shape 4096x4096x2:" "16777216" demo --shape 4096x4096x2
expect_usage_error "syncbn: --ranks 64 with --shape" "67108864" demo --ranks 64 --shape 1024x16x32x32
expect_usage_error "syncbn: --ranks 64 with --threads 32:" "1024" demo --ranks 64 --threads 32

# --- names: unknown flags and commands, missing values, other commands' flags
expect_usage_error "syncbn: unknown flag '--rank'" "demo" demo --rank 2
expect_usage_error "syncbn: unknown flag 'extra'" "demo" demo extra
expect_usage_error "syncbn: unknown command 'demos'" "demo or verify" demos
expect_usage_error "syncbn: --ranks needs a value" "--ranks" demo --ranks
expect_usage_error "syncbn: --shape needs a value" "--shape" demo --iters 1 --shape
expect_usage_error "syncbn: --dtype f8:" "f32, bf16, f16 or f64" demo --dtype f8
expect_usage_error "syncbn: --backend nccl:" "threads or mpi" demo --backend nccl
expect_usage_error "syncbn: --ranks is not a flag of verify" "--backend" verify --ranks 2
expect_usage_error "syncbn: --iters is not a flag of verify" "--reproducible" \
  verify --reproducible --iters 2
# a flag given twice is refused, not silently the last value (issue 25)
expect_usage_error "syncbn: --ranks is given twice" "once" demo --ranks 2 --ranks 3
expect_usage_error "syncbn: --shape is given twice" "once" demo --shape 4x3 --iters 1 --shape 5x3
expect_usage_error "syncbn: --dtype is given twice" "once" demo --dtype f32 --dtype f32
expect_usage_error "syncbn: --channels-last is given twice" "once" demo --channels-last --channels-last
expect_usage_error "syncbn: --backend is given twice" "once" verify --backend threads --backend threads
expect_usage_error "syncbn: --reproducible is given twice" "once" verify --reproducible --reproducible
expect_usage_error "syncbn: --empty is given twice" "once" demo --empty --empty
expect_usage_error "syncbn: --empty with --no-empty" "rank 1" demo --empty --no-empty
# --ranks under --backend mpi was silently ignored: the world is mpirun's processes
if "$syncbn" info 2>/dev/null | grep -q "^mpi: yes"; then
  expect_usage_error "syncbn: --ranks 4 with --backend mpi:" "mpirun -np 4" demo --backend mpi --ranks 4
  expect_usage_error "syncbn: --ranks 2 with --backend mpi:" "threads backend" \
    demo --ranks 2 --iters 1 --backend mpi
else
  expect_usage_error "syncbn: --backend mpi:" "no MPI" demo --backend mpi --ranks 4
fi
# --print-digests (hidden) is the mode of verify --reproducible's re-executed child: alone, or
# on demo, it is refused
expect_usage_error "syncbn: --print-digests needs --reproducible" "threads backend" \
  verify --print-digests
expect_usage_error "syncbn: unknown flag '--print-digests'" "demo" \
  demo --reproducible --print-digests
expect_usage_error "usage: syncbn demo" "--ranks" # no command at all

# --- the environment as the library parses it (issue 25): info prints each SBN_* variable's
# value or "invalid:", exits 1 on an invalid one; demo and verify refuse a bad SBN_COMM_TIMEOUT
# expect_info STATUS "STDOUT LINE REGEX" VAR=VALUE...
expect_info() {
  local status=$1 regex=$2 out rc
  shift 2
  checks=$((checks + 1))
  out=$(env "$@" timeout 60 "$syncbn" info 2>/dev/null)
  rc=$?
  if [ "$rc" -ne "$status" ]; then
    fail "$* syncbn info: exit $rc, expected $status"
  elif ! grep -Eq "$regex" <<<"$out"; then
    fail "$* syncbn info: no line /$regex/ in: $(grep SBN_ <<<"$out" | tr '\n' ' ')"
  fi
}
expect_info 1 '^SBN_STREAM_STORES: invalid: .*"2"' SBN_STREAM_STORES=2
expect_info 1 '^SBN_ROW_TILES: invalid: .*"yes"' SBN_ROW_TILES=yes
expect_info 1 '^SBN_ONE_PASS_BYTES: invalid: .*"9223372036854775807"' \
  SBN_ONE_PASS_BYTES=9223372036854775807
expect_info 1 '^SBN_FORCE_SCALAR: invalid: .*"2"' SBN_FORCE_SCALAR=2
expect_info 1 '^SBN_COMM_TIMEOUT: invalid: .*"abc"' SBN_COMM_TIMEOUT=abc
expect_info 0 '^comm timeout: 1e\+08 s \(SBN_COMM_TIMEOUT, capped\)' SBN_COMM_TIMEOUT=1e400
expect_info 0 '^SBN_STREAM_STORES: 1 \(always\)' SBN_STREAM_STORES=1
expect_info 0 '^beyond the cache: always' SBN_STREAM_STORES=1
expect_info 0 '^row tiles: never' SBN_ROW_TILES=0
expect_info 0 '^SBN_ONE_PASS_BYTES: [0-9]+ bytes \(l2' SBN_ONE_PASS_BYTES=l2
expect_info 0 '^threads: 3 \(SBN_NUM_THREADS\)' SBN_NUM_THREADS=" 3 "
expect_info 0 '^  L3 instances among these CPUs: [1-9][0-9]*'
# a rank among 65536 on this machine: one thread, and the variable named
expect_info 0 '^threads: 1 \(SBN_NUM_THREADS unset: .*share of 65536 local ranks \(LOCAL_WORLD_SIZE\)' \
  LOCAL_WORLD_SIZE=65536
expect_info 0 '^cpus: [1-9][0-9]* \(in this process' OMPI_COMM_WORLD_LOCAL_SIZE=65536
# a warning on stderr for an ignored one, naming it and its value
checks=$((checks + 1))
err=$(SBN_ROW_TILES=yes timeout 60 "$syncbn" info 2>&1 >/dev/null)
if ! grep -q 'warning: the environment variable SBN_ROW_TILES is "yes"' <<<"$err"; then
  fail "SBN_ROW_TILES=yes syncbn info: no warning on stderr: $err"
fi
# expect_env_refused VAR=VALUE -- ARGS... : exit 1, nothing on stdout, stderr names the variable
expect_env_refused() {
  local assignment=$1 out err rc
  shift 2
  checks=$((checks + 1))
  out=$(mktemp) err=$(mktemp)
  env "$assignment" timeout 60 "$syncbn" "$@" >"$out" 2>"$err"
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "$assignment syncbn $*: exit $rc, expected 1"
  elif ! grep -q "SBN_COMM_TIMEOUT is \"${assignment#*=}\"" "$err"; then
    fail "$assignment syncbn $*: stderr does not name it: $(head -n 1 "$err")"
  elif [ -s "$out" ]; then
    fail "$assignment syncbn $*: ran although the environment is refused: $(head -n 1 "$out")"
  fi
  rm -f "$out" "$err"
}
expect_env_refused SBN_COMM_TIMEOUT=abc -- demo --ranks 2 --shape 4x3 --iters 1
expect_env_refused SBN_COMM_TIMEOUT=-1 -- demo --ranks 2 --shape 4x3 --iters 1 --reproducible
expect_env_refused SBN_COMM_TIMEOUT=nan -- verify
expect_env_refused SBN_COMM_TIMEOUT=0 -- verify --reproducible

# --- good flags still work (tiny runs)
expect_demo_ok --ranks 2 --shape 4x3x2x2 --iters 1
expect_demo_ok --ranks 1 --shape 1x3x1 --iters 1
expect_demo_ok --ranks 3 --shape 6x5 --iters 2 --threads 2
expect_demo_ok --ranks 2 --shape 4x2x2x1x1x2x1x3 --iters 1 --dtype bf16 --channels-last
expect_demo_ok --ranks 2 --shape 0x3x2x2 --iters 1
expect_demo_ok --ranks 3 --shape 5x4x3 --iters 1 --dtype f64 --cumulative --no-empty
expect_demo_ok --ranks 64 --shape 64x2 --iters 1 --threads 16
expect_demo_ok --ranks 3 --shape 7x3x2x2 --iters 2 --reproducible
expect_demo_ok --ranks 4 --shape 9x5x3 --iters 1 --dtype f16 --channels-last --reproducible \
  --threads 2
expect_demo_ok --ranks 2 --shape 4x3x2x2 --iters 1 --empty
expect_demo_ok --ranks 3 --shape 7x3x2x2 --iters 2 --reproducible --empty --threads 2
# the split the demo prints: by default every rank holds samples (two ranks once printed
# "16 0"); --empty leaves rank 1 without any, and the others share the batch
# expect_split "SAMPLES LINE REGEX" ARGS...
expect_split() {
  local regex=$1 line
  shift
  checks=$((checks + 1))
  line=$(timeout 120 "$syncbn" demo "$@" 2>&1 | grep "samples per rank:")
  grep -Eq -e "$regex" <<<"$line" || fail "syncbn demo $*: split '$line' does not match /$regex/"
}
expect_split "^  samples per rank: [1-9][0-9]* [1-9][0-9]*$" --ranks 2 --iters 1
expect_split "^  samples per rank:( [1-9][0-9]*){4}$" --ranks 4 --iters 1
expect_split "^  samples per rank:( [1-9][0-9]*){5}$" --ranks 5 --shape 5x3x2 --iters 1
expect_split "^  samples per rank: [1-9][0-9]* 0 [1-9][0-9]* [1-9][0-9]*$" --ranks 4 --iters 1 --empty
expect_split "^  samples per rank: [1-9][0-9]* 0$" --ranks 2 --iters 1 --empty
# demo --reproducible prints the digest and that it equals one rank's
checks=$((checks + 1))
out=$(timeout 120 "$syncbn" demo --ranks 5 --shape 6x3x2 --iters 2 --reproducible 2>&1)
if ! grep -q "W = 1 digest [0-9a-f]*: equal" <<<"$out"; then
  fail "syncbn demo --reproducible: no equal-digest line: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
fi
checks=$((checks + 1))
if ! timeout 60 "$syncbn" --help | grep -q "limits:"; then fail "syncbn --help: no limits printed"; fi

echo "test_cli: $((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
