#!/usr/bin/env bash
# scale.sh - the many-core scaling run, for a machine with many cores (the device host):
# builds Release with every core in build/scale, then
#   0. after the build: syncbn info, and bench/spills.py on the kernels that host's compiler
#      made (spills.txt);
#   1. bench_pool: a parallel loop's start and join at 1, 2, 4, ... CPUs threads (hot, cold,
#      and the tail of loops of 50 us pieces: p90/p99/max), and small ops on pools of those
#      sizes (pool.csv); bench_kernels: the kernels alone on one core, what the slices of
#      a channel split of one chunk cost a core, and the row reductions from memory with and
#      without the prefetch of the table beyond the cache (kernels.csv, about 30 s);
#      bench_prefetch: the reductions over short NCHW planes with their prefetch forced off
#      and on, at SCALE_THREADS (prefetch.csv, about 30 s);
#   2. bench/run_bench.py over bench/shapes/quick.txt, bench/shapes/small_batch.txt and
#      32x2048x7x7, SCALE_DTYPES (default f32,bf16; f32,bf16,f16 adds fp16 at about half
#      the time again), both layouts, three modes, at SCALE_THREADS (default 1,4,CPUs)
#      against the PyTorch of
#      $PYTHON (default: the python3 on PATH), without the aclnn, layer and MPI rows:
#      results.csv, raw.csv, scaling.csv, summary.png, scaling.png and the printed tables
#      (run.log);
#   3. bench_ops --pool-stats on four rows whose medians sat far above their minimums at 16
#      threads: what the pool's loops cost a call (pool_stats.csv).
# Results go to $OUT when it is set (the device tool's folder), else build/scale/out.
# SCALE_AB=0 skips the closing A/B of the one-pass schedule (bench_ops alone, channels-first).
# SCALE_SHAPES replaces the shape files (a smoke test: a file with one small shape).
# Meant to finish in under 8 minutes on 16 cores; SCALE_MIN_TIME / SCALE_MAX_TIME (seconds
# per implementation and row) trade time for steadier medians.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/scale/out}
mkdir -p "$out"
cpus=$(nproc)
threads=${SCALE_THREADS:-1,4,$cpus}
py=${PYTHON:-$(command -v python3)}
{
  echo "# scale.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC') at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# $(grep -m1 'model name' /proc/cpuinfo); $cpus cpus; threads $threads; python $py"
  lscpu 2>/dev/null | grep -E 'cache|NUMA node|Socket|Core|Thread' || true
} | tee "$out/run.log"
cmake -S . -B build/scale -DCMAKE_BUILD_TYPE=Release -DSBN_BUILD_TESTS=OFF -DSBN_WITH_MPI=OFF \
  >/dev/null && cmake --build build/scale -j "$cpus" --target syncbn_cli bench_ops bench_pool \
  bench_kernels bench_prefetch syncbn >/dev/null ||
  { echo "scale.sh: build failed" | tee -a "$out/run.log"; exit 1; }
build/scale/syncbn info 2>&1 | tee -a "$out/run.log"
# that host's compiler may keep other kernel accumulators on the stack than the project's
{ "${CC:-cc}" --version | head -1; "$py" bench/spills.py build/scale; } > "$out/spills.txt" 2>&1
tail -1 "$out/spills.txt" | tee -a "$out/run.log"
echo "# bench_pool" | tee -a "$out/run.log"
pool_counts=1
t=2
while [ "$t" -lt "$cpus" ]; do pool_counts="$pool_counts,$t"; t=$((t * 2)); done
[ "$cpus" -gt 1 ] && pool_counts="$pool_counts,$cpus"
timeout 120 build/scale/bench_pool --threads "$pool_counts" --reps 2000 | tee "$out/pool.csv"
echo "# bench_kernels" | tee -a "$out/run.log"
timeout 120 build/scale/bench_kernels | tee "$out/kernels.csv"
# the short NCHW planes' prefetch forced off and on, in one process: whether the size rule
# (beyond half the L3) should also take planes from this host's L3
echo "# bench_prefetch" | tee -a "$out/run.log"
timeout 90 build/scale/bench_prefetch --threads "$threads" --reps 40 | tee "$out/prefetch.csv"
echo "# run_bench.py" | tee -a "$out/run.log"
printf '32x2048x7x7\n' > build/scale/wide.txt
shapes=${SCALE_SHAPES:-bench/shapes/quick.txt bench/shapes/small_batch.txt build/scale/wide.txt}
timeout 420 "$py" bench/run_bench.py --build build/scale --out "$out/results.csv" \
  --shapes $shapes --threads "$threads" --dtypes "${SCALE_DTYPES:-f32,bf16}" \
  --no-mpi --no-syncbn --no-aclnn --torch-python "$py" --plot-python "$py" \
  --min-reps 10 --min-time "${SCALE_MIN_TIME:-0.1}" --max-time "${SCALE_MAX_TIME:-0.3}" \
  2>&1 | tee -a "$out/run.log"
# where the time of the rows with slow medians goes: the pool's own counts per call
# (sleepers woken, invitations cancelled, members waited for, the wait), syncbn rows only
echo "# pool stats: bench_ops --pool-stats" | tee -a "$out/run.log"
for spec in 32x2048x7x7:bf16:cl 4096x1024:f32:cf 2x512x32x32:f32:cf 8x256x28x28:f32:cf; do
  IFS=: read -r shape dt lay <<< "$spec"
  timeout 60 build/scale/bench_ops --shape "$shape" --dtypes "$dt" --layouts "$lay" \
    --threads "$threads" --modes fwd-train,bwd,eval --no-aclnn --no-onednn --pool-stats \
    --min-reps 10 --min-time 0.1 --max-time 0.3 | grep '^syncbn' | tee -a "$out/pool_stats.csv"
done
if [ "${SCALE_AB:-1}" = 1 ]; then
  # the one-pass schedule forced (a budget of half the L2) against the size rule, on the
  # channels-first shapes whose N pieces per block the rule finds too short
  echo "# A/B: SBN_ONE_PASS_BYTES=l2 vs the size rule" | tee -a "$out/run.log"
  for env in "" "SBN_ONE_PASS_BYTES=l2"; do
    for shape in 32x64x56x56:f32 32x2048x7x7:bf16; do
      env $env timeout 60 build/scale/bench_ops --shape "${shape%%:*}" --dtypes "${shape##*:}" \
        --threads "$threads" --layouts cf --modes fwd-train,bwd --no-aclnn --no-onednn \
        --min-reps 10 --min-time 0.1 --max-time 0.3 | grep '^syncbn' | sed "s/^/${env:-rule},/" \
        | tee -a "$out/run.log"
    done
  done
fi
echo "# scale.sh done $(date -u '+%H:%M:%S UTC')" | tee -a "$out/run.log"
