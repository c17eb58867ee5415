#!/usr/bin/env bash
# device-python.sh - the Python package on the device host's PyTorch (2.x) and frameworks, in one
# run of under 5 minutes: builds libsyncbn (Release, every core, no C tests, no MPI) in
# build/device, prints the versions of torch, torchvision, timm and Lightning found, then runs
#   1. the whole Python suite (tests/python) on that torch: torch.compile, the frameworks
#      (test_frameworks.py: timm's converter, Lightning's ddp with sync_batchnorm=True) and
#      every version-dependent check run there where Debian's torch 1.13 skips them;
#   2. bench/peers/syncbn_torch_bench.py: the layer's per-call overhead and bytes per W.
# Results go to $OUT when it is set (the device tool's folder), else build/device/out:
# run.log, pytest.xml (one line per test with its outcome), overhead.log.
# PYTHON picks the interpreter (default: the python3 on PATH).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/device/out}
mkdir -p "$out"
py=${PYTHON:-$(command -v python3)}
cpus=$(nproc)
{
  echo "# device-python.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC') at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# $(grep -m1 'model name' /proc/cpuinfo); $cpus cpus; python $py"
  "$py" - <<'PYEOF'
import importlib
for name in ("torch", "torchvision", "timm", "lightning", "numpy", "pytest"):
    try:
        print("#", name, importlib.import_module(name).__version__)
    except Exception as e:  # absent or broken: the suite's skips say which tests it costs
        print("#", name, "unavailable:", type(e).__name__, e)
PYEOF
} 2>&1 | tee "$out/run.log"
cmake -S . -B build/device -DCMAKE_BUILD_TYPE=Release -DSBN_BUILD_TESTS=OFF -DSBN_WITH_MPI=OFF \
  >/dev/null && cmake --build build/device -j "$cpus" --target syncbn >/dev/null \
  || { echo "device-python.sh: build failed" | tee -a "$out/run.log"; exit 1; }
export SBN_LIBRARY=$PWD/build/device/libsyncbn.so PYTHONPATH=$PWD/python
echo "# pytest tests/python" | tee -a "$out/run.log"
timeout 240 "$py" -m pytest -q -rs --junitxml "$out/pytest.xml" tests/python 2>&1 \
  | tail -60 | tee -a "$out/run.log"
rc=${PIPESTATUS[0]}
echo "# pytest exit $rc" | tee -a "$out/run.log"
echo "# syncbn_torch_bench.py" | tee -a "$out/run.log"
timeout 90 "$py" bench/peers/syncbn_torch_bench.py 2>&1 | tee "$out/overhead.log" | tail -30
exit "$rc"
