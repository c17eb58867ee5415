#!/usr/bin/env bash
# install-bench-deps.sh [BUILD_DIR [JOBS]] - makes sure the peers of `make bench` are present:
# PyTorch (python3-torch), oneDNN (libdnnl-dev) and matplotlib for build/bench/summary.png
# (python3-matplotlib), all Debian packages for Debian's /usr/bin/python3. As root it installs the
# missing ones with apt-get; otherwise it names them and goes on. It never fails: a peer that is
# still missing afterwards is reported as "missing" by bench/run_bench.py, and a missing matplotlib
# only skips the picture.
#
# bench_onednn.c is compiled into bench_ops only when CMake found oneDNN at configure time, so when
# oneDNN's header is present but BUILD_DIR (default build/release) was configured without it (for
# example: this script just installed libdnnl-dev) it re-runs cmake on BUILD_DIR and rebuilds.
set -uo pipefail

build=${1:-build/release}
jobs=${2:-$(nproc 2>/dev/null || echo 2)}
py=${PYTHON:-/usr/bin/python3}

need=()
"$py" -c "import torch" >/dev/null 2>&1 || need+=(python3-torch)
[ -f /usr/include/oneapi/dnnl/dnnl.h ] || need+=(libdnnl-dev)
"$py" -c "import matplotlib" >/dev/null 2>&1 || need+=(python3-matplotlib)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-bench-deps: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || echo "install-bench-deps: apt-get update failed (going on)" >&2
    if ! apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; then
      # one at a time, so that one package apt cannot find does not keep the others out
      for p in "${need[@]}"; do
        apt-get install -y -qq --no-install-recommends "$p" >/dev/null ||
          echo "install-bench-deps: could not install $p; the benchmark reports it as missing" >&2
      done
    fi
  else
    echo "install-bench-deps: missing ${need[*]}; the benchmark reports them as missing" \
         "(Debian, as root: apt-get install ${need[*]})" >&2
  fi
fi

# oneDNN present but not configured in: re-configure (keeps the cache's other settings) and rebuild
cache="$build/CMakeCache.txt"
if [ -f /usr/include/oneapi/dnnl/dnnl.h ] && [ -f "$cache" ] &&
   grep -q '^SBN_DNNL_INCLUDE_DIR:PATH=.*NOTFOUND' "$cache"; then
  echo "install-bench-deps: oneDNN found; re-configuring $build so that bench_ops is built with it"
  if cmake "$build" >/dev/null && cmake --build "$build" -j "$jobs" >/dev/null; then
    grep -q '^SBN_DNNL_INCLUDE_DIR:PATH=.*NOTFOUND' "$cache" &&
      echo "install-bench-deps: cmake still does not find oneDNN in $build" >&2
  else
    echo "install-bench-deps: re-configuring/rebuilding $build failed (going on)" >&2
  fi
fi
exit 0
