#!/usr/bin/env bash
# test_bench_prefetch.sh BENCH_PREFETCH - bench_prefetch's rows and refusals, run by ctest
# with the path of the built binary: every shape, dtype, thread count and op gives one row
# of the header's eleven fields with positive times (two tiny shapes, which the size rule
# never prefetches: rule 0; the ratios mean nothing at this size), and a malformed shape,
# thread list or count exits 2 with nothing on stdout and the usage or the shape named on
# stderr.
set -u
bin=${1:?usage: test_bench_prefetch.sh path/to/bench_prefetch}
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout 120 "$bin" --threads 1,2 --reps 3 --shapes 4x64x7x7,2x16x14x14 >"$out" 2>"$err"
rc=$?
[ "$rc" -eq 0 ] || fail "exit $rc ($(head -n 1 "$err"))"
head -n 1 "$out" | grep -q '^op,shape,dtype,threads,rule,off_min_ms,' || fail "no header"
row='^(stats|backward_reduce),(4x64x7x7|2x16x14x14),(f32|bf16),[12],0,([0-9.]+,){5}[0-9.]+$'
rows=$(grep -cE "$row" "$out")
[ "$rows" -eq 16 ] || fail "$rows well-formed rows, expected 16: $(sed -n 2p "$out")"
if awk -F, 'NR > 1 && ($6 <= 0 || $8 <= 0) { bad = 1 } END { exit !bad }' "$out"; then
  fail "a time that is not positive"
fi
# refused: "ARGS|TEXT ON STDERR"
for spec in "--shapes 4x64x7|shape 4x64x7" "--shapes 4x64x7x7x9|shape 4x64x7x7x9" \
  "--shapes 4x0x7x7|shape 4x0x7x7" "--shapes 99999999999x99999999999x9x9|shape 9999" \
  "--shapes 4x64x7x7,|--shapes" "--threads 0|usage" "--threads 1,|usage" "--reps 0|usage" \
  "--reps 5x|usage" "--bogus 1|usage" "--threads|usage"; do
  args=${spec%%|*} text=${spec#*|}
  # shellcheck disable=SC2086
  timeout 60 "$bin" $args >"$out" 2>"$err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "$args: exit $rc, expected 2"
  grep -qF -- "$text" "$err" || fail "$args: stderr '$(head -n 1 "$err")' lacks '$text'"
  [ ! -s "$out" ] || fail "$args: printed on stdout"
done
echo "$failures failures"
[ "$failures" -eq 0 ]
