#!/usr/bin/env bash
# test_bench_ops.sh BENCH_OPS - the benchmark's matrix options, run by ctest with the path
# of the built bench_ops. A dtype, layout or mode the benchmark does not run (a typo, an
# empty item) must exit with status 2, print nothing on stdout and name the option and the
# item on stderr, instead of a run with rows silently missing; and every dtype it takes
# (f32, bf16, f16) must give an `ok` row of syncbn and of the reference kernels for each
# layout and mode of a tiny shape. bench/ab.py (the A/B of two builds or environments)
# must give a row per mode and a geomean over one ABBA round (of a tiny shape: the ratios
# themselves mean nothing), and refuse two identical sides.
set -u
bench=${1:?usage: test_bench_ops.sh path/to/bench_ops}
failures=0
checks=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_refused "STDERR CONTAINS" ARGS...
expect_refused() {
  local contains=$1 out err rc
  shift
  checks=$((checks + 1))
  out=$(mktemp) err=$(mktemp)
  timeout 60 "$bench" --shape 2x8x4x4 --no-onednn --no-aclnn "$@" >"$out" 2>"$err"
  rc=$?
  if [ "$rc" -ne 2 ]; then
    fail "bench_ops $*: exit $rc, expected 2 ($(head -n 1 "$err"))"
  elif ! grep -qF -- "$contains" "$err"; then
    fail "bench_ops $*: stderr '$(head -n 1 "$err")' does not mention '$contains'"
  elif [ -s "$out" ]; then
    fail "bench_ops $*: printed on stdout although refused: $(head -n 1 "$out")"
  fi
  rm -f "$out" "$err"
}

expect_refused "--dtypes: unknown 'f61'" --dtypes f32,f61
expect_refused "--dtypes: unknown 'fp16'" --dtypes fp16
expect_refused "--dtypes" --dtypes ''
expect_refused "ends in a comma" --dtypes f32,
expect_refused "--layouts: unknown 'nhwc'" --layouts nhwc
expect_refused "--modes: unknown 'fwd'" --modes fwd,bwd

out=$(mktemp)
checks=$((checks + 1))
timeout 300 "$bench" --shape 2x8x4x4 --shape 6x5 --dtypes f32,bf16,f16 --threads 1,2 \
  --no-onednn --no-aclnn --min-reps 2 --min-time 0 --max-time 0.001 >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || grep -q "runtime error\|ERROR: AddressSanitizer" "$out"; then
  fail "bench_ops over f32,bf16,f16: exit $rc ($(grep -m1 "runtime error\|ERROR:" "$out"))"
fi
for impl in syncbn ref; do
  for dt in f32 bf16 f16; do
    for t in 1 2; do
      for mode in fwd-train bwd eval; do
        for case in "2x8x4x4,$dt,$t,cf" "2x8x4x4,$dt,$t,cl" "6x5,$dt,$t,cf"; do
          checks=$((checks + 1))
          grep -q "^$impl,$case,$mode,[0-9.]*,[0-9.]*,[1-9][0-9]*,.*,ok," "$out" ||
            fail "no ok row '$impl,$case,$mode' ($(grep "^$impl,$case,$mode," "$out"))"
        done
      done
    done
  done
done
rm -f "$out"

py=$(command -v /usr/bin/python3 || command -v python3)
if [ -n "$py" ]; then
  ab="$(dirname "$0")/../../bench/ab.py"
  out=$(mktemp)
  checks=$((checks + 1))
  timeout 120 "$py" "$ab" --a "$bench" --b-env SBN_STREAM_STORES=1 --rounds 1 -- \
    --shape 2x8x4x4 --dtypes f32 --threads 1 --layouts cf --min-reps 2 --min-time 0 \
    --max-time 0.001 >"$out" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || fail "ab.py: exit $rc ($(tail -n 1 "$out"))"
  for mode in fwd-train bwd eval; do
    checks=$((checks + 1))
    grep -q "^2x8x4x4 *f32 *1 cf *$mode .*x *[0-9.]*x$" "$out" || fail "ab.py: no $mode row"
  done
  checks=$((checks + 1))
  grep -q "^geomean A/B by minimums [0-9.]*x over 3 rows, 1 rounds$" "$out" ||
    fail "ab.py: no geomean line ($(tail -n 1 "$out"))"
  checks=$((checks + 1))
  if "$py" "$ab" --a "$bench" -- --shape 2x8x4x4 >"$out" 2>&1 ||
    ! grep -q "the same binary with the same environment" "$out"; then
    fail "ab.py: two identical sides not refused ($(tail -n 1 "$out"))"
  fi
  rm -f "$out"
else
  echo "note: no python3, bench/ab.py not checked"
fi
echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
