#!/usr/bin/env bash
# install-deps.sh - makes sure the build and test tools are present: a C compiler,
# make, cmake, and OpenMPI (the MPI backend and its tests). As root it installs
# what is missing with apt-get (Debian packages); otherwise it names what to install.
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
if [ "${SBN_WITH_MPI:-1}" = 1 ]; then
  command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
  command -v mpicc >/dev/null 2>&1 || need+=(libopenmpi-dev)
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
