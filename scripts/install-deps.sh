#!/usr/bin/env bash
# install-deps.sh - makes sure the build and test tools are present: a C compiler,
# make, cmake, a C++ compiler (the CANN-style samples), clang with libFuzzer (the
# aclnn fuzzer), OpenMPI (the MPI backend and its tests) and, for the Python package's
# tests and demo, Debian's python3 with torch, numpy, pytest and torchvision, and pip,
# setuptools and wheel for `pip install .`. As root it installs
# what is missing with apt-get (Debian packages); otherwise it names what to install.
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v c++ >/dev/null 2>&1 || need+=(g++)
# libFuzzer for the aclnn fuzz target: clang and its runtime
fuzz_probe=$(mktemp -d)
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
  > "$fuzz_probe/probe.c"
if ! clang -fsanitize=fuzzer,address "$fuzz_probe/probe.c" -o "$fuzz_probe/probe" >/dev/null 2>&1; then
  command -v clang >/dev/null 2>&1 || need+=(clang)
  need+=(libclang-rt-14-dev)
fi
rm -rf "$fuzz_probe"
if [ "${SBN_WITH_MPI:-1}" = 1 ]; then
  command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
  command -v mpicc >/dev/null 2>&1 || need+=(libopenmpi-dev)
fi
# the Python package's tests (make test-python) and demo: Debian's interpreter and packages
if ! /usr/bin/python3 -c "import torch, numpy, pytest, torchvision" >/dev/null 2>&1; then
  need+=(python3 python3-torch python3-numpy python3-pytest python3-torchvision)
fi
# `pip install .` of the package (tests/python/test_packaging.py), offline with
# --no-build-isolation: Debian's pip, setuptools and wheel
if ! /usr/bin/python3 -c "import pip, setuptools, wheel" >/dev/null 2>&1; then
  need+=(python3-pip python3-setuptools python3-wheel)
fi

[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "install-deps: missing ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
  exit 1
fi
