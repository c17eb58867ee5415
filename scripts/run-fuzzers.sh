#!/usr/bin/env bash
# run-fuzzers.sh BUILD_DIR SECONDS [TARGET...] - runs each libFuzzer target built in
# BUILD_DIR (default: every fuzz_* there) for SECONDS with its own corpus directory
# (BUILD_DIR/corpus/<target>), one after the other, and prints each run's final
# statistics (number of executions, coverage). Exits non-zero on the first finding;
# the crash input and the log stay in BUILD_DIR (crash-*, <target>.log).
set -euo pipefail
build=${1:?build dir}
seconds=${2:?seconds}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$build"/fuzz_*; do
    [ -x "$f" ] && [ -f "$f" ] && targets+=("$(basename "$f")")
  done
fi
[ ${#targets[@]} -gt 0 ] || { echo "run-fuzzers: no fuzz targets in $build" >&2; exit 1; }
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  echo "== $t: $seconds s"
  rc=0
  (cd "$build" && "./$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
      -rss_limit_mb=4096 "corpus/$t" > "$t.log" 2>&1) || rc=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ *DONE)" "$build/$t.log" || true
  if [ $rc -ne 0 ]; then
    tail -40 "$build/$t.log"
    echo "run-fuzzers: $t failed (exit $rc); see $build/$t.log" >&2
    exit $rc
  fi
done
