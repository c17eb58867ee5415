#!/usr/bin/env bash
# test_bench_prefetch.sh BENCH_PREFETCH - bench_prefetch's rows and refusals, run by ctest
# with the path of the built binary: every shape, dtype, thread count and op gives one row
# of the header's eleven fields with positive times (two tiny shapes; the ratios mean
# nothing at this size), and a malformed shape, thread list or rep count exits 2 with the
# usage or the shape named on stderr and no rows.
set -u
bin=${1:?usage: test_bench_prefetch.sh path/to/bench_prefetch}
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
out=$(mktemp) err=$(mktemp)
timeout 120 "$bin" --threads 1,2 --reps 3 --shapes 4x64x7x7,2x16x14x14 >"$out" 2>"$err"
rc=$?
[ "$rc" -eq 0 ] || fail "exit $rc ($(head -n 1 "$err"))"
head -n 1 "$out" | grep -q '^op,shape,dtype,threads,rule,off_min_ms,' || fail "no header"
rows=$(grep -cE '^(stats|backward_reduce),(4x64x7x7|2x16x14x14),(f32|bf16),[12],[01],([0-9.]+,){5}[0-9.]+$' "$out")
[ "$rows" -eq 16 ] || fail "$rows well-formed rows, expected 16: $(sed -n 2p "$out")"
if awk -F, 'NR > 1 && ($6 <= 0 || $8 <= 0) { bad = 1 } END { exit !bad }' "$out"; then
  fail "a time that is not positive"
fi
for args in "--shapes 4x64x7" "--threads 0" "--reps 0" "--bogus"; do
  # shellcheck disable=SC2086
  timeout 60 "$bin" $args >"$out" 2>"$err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "$args: exit $rc, expected 2"
  [ -s "$err" ] || fail "$args: nothing on stderr"
  if grep -q '^stats' "$out"; then fail "$args: rows printed"; fi
done
rm -f "$out" "$err"
echo "$failures failures"
[ "$failures" -eq 0 ]
