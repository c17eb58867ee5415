#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR HAVE_MPI - the install as its users meet it (issue 12), run by
# ctest in the optimised build. (1) CANN's layout: `cmake --install --component ascend` into a
# scratch prefix gives lib64/ with every CANN library name resolving to libsyncbn_acl (which
# exports the acl*/aclnn* symbols while libsyncbn exports sbn_* alone), include/acl,
# aclnn, aclnnop, set_env.sh and bin/setenv.bash; in a clean environment `source set_env.sh` sets
# ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH, LD_LIBRARY_PATH... (once, also when sourced twice, from sh,
# and after the prefix is moved), and the samples build with an ops-nn style g++/gcc line and with a
# CANN-style CMakeLists, and run. (2) The plain install: a CMake project with find_package(syncbn
# CONFIG REQUIRED) and syncbn::syncbn, syncbn::syncbn_static, syncbn::acl, syncbn::acl_static (and
# syncbn::mpi under mpirun when MPI is built); an unknown component fails; `pkg-config --cflags --libs
# syncbn` builds without MPI's flags and, with -Wl,-rpath from its libdir variable, runs without
# LD_LIBRARY_PATH; syncbn-mpi (installed only when MPI is built) adds MPI's flags and SBN_HAVE_MPI=1
# and builds an MPI program; a CANN sample builds with syncbn-acl. (3) `syncbn info` prints the
# version of syncbn.h, the kernels, CPUs, threads, MPI, the timeout and honours SBN_FORCE_SCALAR,
# SBN_NUM_THREADS and SBN_COMM_TIMEOUT. Every failed check is printed.
set -u
build=$(cd "${1:?usage: test_install.sh BUILD_DIR SOURCE_DIR HAVE_MPI}" && pwd)
src=$(cd "${2:?}" && pwd)
have_mpi=${3:-0}
case "$have_mpi" in 1|ON|TRUE|YES|on|true|yes) have_mpi=1 ;; *) have_mpi=0 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 checks=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { # check "what" command... : the command must succeed
  local what=$1; shift
  checks=$((checks + 1))
  "$@" >"$tmp/out" 2>&1 || { fail "$what"; sed 's/^/    /' "$tmp/out" | head -n 20; }
}
header=$src/include/syncbn/syncbn.h
version=$(for part in MAJOR MINOR PATCH; do
            sed -n "s/^#define SBN_VERSION_$part \([0-9]*\).*/\1/p" "$header"; done | paste -sd.)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun_np2() { mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }

# ---- 1. CANN's toolkit layout -------------------------------------------------------------
home=$tmp/Ascend/ascend-toolkit/latest
check "install --component ascend" cmake --install "$build" --prefix "$home" --component ascend
for f in set_env.sh bin/setenv.bash bin/syncbn include/acl/acl.h include/aclnn/acl_meta.h \
         include/aclnnop/aclnn_batch_norm_stats.h include/syncbn/syncbn.h lib64/libsyncbn.a \
         lib64/libsyncbn_acl.a lib64/pkgconfig/syncbn.pc lib64/pkgconfig/syncbn-acl.pc \
         lib64/cmake/syncbn/syncbnConfig.cmake opp \
         python/site-packages/syncbn/__init__.py python/site-packages/syncbn/libsyncbn.so; do
  checks=$((checks + 1)); [ -e "$home/$f" ] || fail "ascend layout: $f missing"
done
real=$(readlink -f "$home/lib64/libsyncbn.so")
real_acl=$(readlink -f "$home/lib64/libsyncbn_acl.so")
for name in ascendcl nnopbase opapi opapi_nn opapi_math acl_rt; do
  checks=$((checks + 1))
  [ "$(readlink -f "$home/lib64/lib$name.so")" = "$real_acl" ] || fail "lib64/lib$name.so is not libsyncbn_acl"
done
# The exports: libsyncbn sbn_* alone; libsyncbn_acl the acl/aclnn entry points (and no sbn_ op).
if command -v nm >/dev/null; then
  nm -D --defined-only "$real" | awk '{print $3}' >"$tmp/exports"
  nm -D --defined-only "$real_acl" | awk '{print $3}' >"$tmp/exports_acl"
  checks=$((checks + 3))
  ! grep -v '^sbn_' "$tmp/exports" | grep -q . ||
    fail "libsyncbn exports other than sbn_*: $(grep -v '^sbn_' "$tmp/exports" | head -n 5 | paste -sd' ')"
  grep -qx aclnnBatchNormStatsGetWorkspaceSize "$tmp/exports_acl" && grep -qx aclrtSetDevice "$tmp/exports_acl" ||
    fail "libsyncbn_acl does not export the acl/aclnn entry points"
  ! grep -v '^sbn_acl_' "$tmp/exports_acl" | grep -q '^sbn_' ||
    fail "libsyncbn_acl exports libsyncbn's sbn_* functions"
fi
checks=$((checks + 1)); [ ! -e "$home/lib" ] || fail "ascend layout also has lib/ (the plain layout)"

# A clean environment, as a CANN user's shell: only set_env.sh may point at the prefix.
clean() { env -i PATH=/usr/bin:/bin HOME="$tmp" TMPDIR="$tmp" OMPI_MCA_btl_vader_single_copy_mechanism=none "$@"; }
cat >"$tmp/env_check.sh" <<'EOF'
# env_check.sh, sourced after `set -- HOME` (sh's . takes no arguments): after set_env.sh
# (maybe sourced twice) the variables name HOME, and each list names it once.
want=$1
[ "$ASCEND_TOOLKIT_HOME" = "$want" ] || { echo "ASCEND_TOOLKIT_HOME=$ASCEND_TOOLKIT_HOME"; exit 1; }
[ "$ASCEND_HOME_PATH" = "$want" ] || { echo "ASCEND_HOME_PATH=$ASCEND_HOME_PATH"; exit 1; }
[ "$ASCEND_OPP_PATH" = "$want/opp" ] || { echo "ASCEND_OPP_PATH=$ASCEND_OPP_PATH"; exit 1; }
[ "${LD_LIBRARY_PATH%%:*}" = "$want/lib64" ] || { echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; exit 1; }
[ "$(command -v syncbn)" = "$want/bin/syncbn" ] || { echo "PATH=$PATH"; exit 1; }
[ "${PYTHONPATH%%:*}" = "$want/python/site-packages" ] || { echo "PYTHONPATH=$PYTHONPATH"; exit 1; }
for v in LD_LIBRARY_PATH PATH PYTHONPATH; do
  eval "list=\$$v"
  n=$(printf '%s\n' "$list" | tr ':' '\n' | grep -c "^$want/")
  [ "$n" -eq 1 ] || { echo "$v names the prefix $n times: $list"; exit 1; }
done
EOF
check "bash: source set_env.sh (twice)" clean bash -c \
  "LD_LIBRARY_PATH=/opt/x; source '$home/set_env.sh'; source '$home/set_env.sh'; set -- '$home'; . '$tmp/env_check.sh'"
check "sh: . set_env.sh" clean sh -c ". '$home/set_env.sh'; set -- '$home'; . '$tmp/env_check.sh'"
check "bash: source bin/setenv.bash" clean bash -c "source '$home/bin/setenv.bash'; set -- '$home'; . '$tmp/env_check.sh'"

# The ops-nn example flow: source set_env.sh, build with the CANN line, run.
cat >"$tmp/cann_build.sh" <<'EOF'
# cann_build.sh HOME OUT COMPILER SOURCE...: source set_env.sh, build with CANN's line, run.
source "$1/set_env.sh"; out=$2; shift 2
"$@" -Wall -Wextra -Werror -o "$out" -I"$ASCEND_HOME_PATH/include" -I"$ASCEND_HOME_PATH/include/aclnnop" \
  -L"$ASCEND_HOME_PATH/lib64" -lascendcl -lnnopbase -lopapi -lopapi_nn -lopapi_math -lacl_rt -lm && "$out"
EOF
check "g++ -x c++ batch_norm_stats.c (CANN line)" clean bash "$tmp/cann_build.sh" "$home" "$tmp/s1" \
  g++ -x c++ "$src/samples/batch_norm_stats.c"
check "gcc batch_norm_stats.c (CANN line)" clean bash "$tmp/cann_build.sh" "$home" "$tmp/s2" \
  gcc "$src/samples/batch_norm_stats.c"
check "g++ sync_batch_norm_gather_stats.cpp (CANN line)" clean bash "$tmp/cann_build.sh" "$home" "$tmp/s3" \
  g++ "$src/samples/sync_batch_norm_gather_stats.cpp"
printf '#include "acl/acl.h"\n#include "aclnn_batch_norm_stats.h"\nint main(void) { return aclInit(NULL) == ACL_SUCCESS ? 0 : 1; }\n' >"$tmp/bare.c"
check "gcc: aclnnop header by its bare name" clean bash "$tmp/cann_build.sh" "$home" "$tmp/s4" gcc "$tmp/bare.c"

# A CANN-style CMakeLists: include/ and lib64/ from ASCEND_HOME_PATH, the libraries by CANN's names.
mkdir -p "$tmp/cann_cmake"
cat >"$tmp/cann_cmake/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(cann_sample CXX)
include_directories(\$ENV{ASCEND_HOME_PATH}/include \$ENV{ASCEND_HOME_PATH}/include/aclnnop)
link_directories(\$ENV{ASCEND_HOME_PATH}/lib64)
add_executable(sample "$src/samples/sync_batch_norm_gather_stats.cpp")
target_link_libraries(sample ascendcl nnopbase opapi opapi_nn acl_rt)
EOF
check "CANN-style CMakeLists after set_env.sh" clean bash -c "source '$home/set_env.sh' &&
  cmake -S '$tmp/cann_cmake' -B '$tmp/cann_cmake/b' >/dev/null && cmake --build '$tmp/cann_cmake/b' >/dev/null &&
  '$tmp/cann_cmake/b/sample'"

# The Python package on the PYTHONPATH set_env.sh gives, with the library of lib64/ next to it.
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  check "python3: import syncbn after set_env.sh" clean bash -c "source '$home/set_env.sh' && cd / &&
    /usr/bin/python3 -c 'import syncbn
assert syncbn.__version__ == \"$version\", syncbn.__version__
assert syncbn.library_path == \"$real\", syncbn.library_path'"
fi

# The prefix moved: set_env.sh (bash) follows it; a built sample runs from the new place.
mv "$tmp/Ascend" "$tmp/Moved"
moved=$tmp/Moved/ascend-toolkit/latest
check "bash: set_env.sh after the prefix moved" clean bash -c "source '$moved/set_env.sh'; set -- '$moved'; . '$tmp/env_check.sh'"
check "sample runs from the moved prefix" clean bash -c "source '$moved/set_env.sh' && '$tmp/s2'"

# ---- 2. The plain install: CMake package and pkg-config ---------------------------------------
prefix=$tmp/prefix
check "install (plain)" cmake --install "$build" --prefix "$prefix"
checks=$((checks + 1)); [ ! -e "$prefix/set_env.sh" ] || fail "the plain install has set_env.sh (component ascend)"
libdir=$(dirname "$(find "$prefix" -name syncbn.pc | head -n 1)")/..
libdir=$(cd "$libdir" && pwd)
for name in ascendcl nnopbase opapi opapi_nn opapi_math acl_rt; do
  checks=$((checks + 1)); [ -e "$libdir/lib$name.so" ] || fail "plain install: lib$name.so missing"
done

cat >"$tmp/app.c" <<EOF
/* app.c: the version, and one op (channel means of a 2x2 batch). */
#include <stdio.h>
#include <string.h>
#include <syncbn/ops.h>
int main(void)
{
    float x[4] = {1, 2, 3, 6}, mean[2], invstd[2];
    int64_t shape[2] = {2, 2};
    unsigned char ws[4096];
    size_t bytes = 0;
    sbn_tensor tx = sbn_tensor_contiguous(x, SBN_F32, 2, shape);
    sbn_tensor tm = sbn_tensor_1d(mean, SBN_F32, 2), ti = sbn_tensor_1d(invstd, SBN_F32, 2);
    if (strcmp(sbn_version(), "$version") != 0) { printf("version %s\n", sbn_version()); return 1; }
    if (SBN_FAILED(sbn_stats_workspace_size(&tx, &bytes)) || bytes > sizeof ws) return 2;
    if (SBN_FAILED(sbn_stats(&tx, 1e-5, &tm, &ti, ws, bytes, NULL))) { puts(sbn_last_error()); return 3; }
    if (mean[0] != 2.0f || mean[1] != 4.0f) { printf("mean %g %g\n", mean[0], mean[1]); return 4; }
    puts("app ok");
    return 0;
}
EOF
cat >"$tmp/app_mpi.c" <<'EOF'
/* app_mpi.c: the MPI backend's allreduce over the job's ranks: sum of (rank + 1). */
#include <stdio.h>
#include <syncbn/comm_mpi.h>
int main(int argc, char **argv)
{
    sbn_comm_t *comm = NULL;
    int rank, size, ok;
    double v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    v = rank + 1;
    ok = !SBN_FAILED(sbn_comm_mpi_create(MPI_COMM_WORLD, &comm)) &&
         !SBN_FAILED(sbn_comm_allreduce_sum(comm, &v, 1, 7)) && v == size * (size + 1) / 2.0;
#ifndef SBN_HAVE_MPI
    ok = 0; /* syncbn::mpi and pkg-config define it */
#endif
    if (!ok) printf("rank %d: %s (v=%g)\n", rank, sbn_last_error(), v);
    sbn_comm_destroy(comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
EOF
mkdir -p "$tmp/proj"
cat >"$tmp/proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(syncbn $version CONFIG REQUIRED)
add_executable(app "$tmp/app.c")
target_link_libraries(app PRIVATE syncbn::syncbn)
add_executable(app_static "$tmp/app.c")
target_link_libraries(app_static PRIVATE syncbn::syncbn_static)
add_executable(acl_app "$src/samples/batch_norm_stats.c")
target_link_libraries(acl_app PRIVATE syncbn::acl m)
add_executable(acl_app_static "$src/samples/batch_norm_stats.c")
target_link_libraries(acl_app_static PRIVATE syncbn::acl_static m)
if(SYNCBN_HAVE_MPI)
  find_package(syncbn CONFIG REQUIRED COMPONENTS mpi)
  add_executable(app_mpi "$tmp/app_mpi.c")
  target_link_libraries(app_mpi PRIVATE syncbn::mpi)
endif()
EOF
check "find_package(syncbn CONFIG REQUIRED): configure and build" bash -c \
  "cmake -S '$tmp/proj' -B '$tmp/proj/b' -DCMAKE_PREFIX_PATH='$prefix' && cmake --build '$tmp/proj/b'"
check "syncbn::syncbn app runs" clean "$tmp/proj/b/app"
check "syncbn::syncbn_static app runs" clean "$tmp/proj/b/app_static"
check "syncbn::acl sample runs" clean "$tmp/proj/b/acl_app"
check "syncbn::acl_static sample runs" clean "$tmp/proj/b/acl_app_static"
checks=$((checks + 1))
if [ "$have_mpi" = 1 ]; then
  if [ -x "$tmp/proj/b/app_mpi" ]; then
    check "syncbn::mpi app under mpirun -np 2" mpirun_np2 "$tmp/proj/b/app_mpi"
  else
    fail "MPI is built but the package gave no syncbn::mpi"
  fi
else
  [ ! -e "$tmp/proj/b/app_mpi" ] || fail "syncbn::mpi exists although MPI is not built"
fi
mkdir -p "$tmp/bad"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(bad C)\nfind_package(syncbn CONFIG REQUIRED COMPONENTS nosuch)\n' \
  >"$tmp/bad/CMakeLists.txt"
checks=$((checks + 1))
if cmake -S "$tmp/bad" -B "$tmp/bad/b" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/out" 2>&1; then
  fail "find_package(syncbn COMPONENTS nosuch) succeeded"
elif ! grep -q "no component 'nosuch'" "$tmp/out"; then
  fail "find_package(syncbn COMPONENTS nosuch) failed without naming the component"
fi

export PKG_CONFIG_PATH=$libdir/pkgconfig
check "pkg-config --modversion = syncbn.h" test "$(pkg-config --modversion syncbn)" = "$version"
check "pkg-config build (gcc)" bash -c "gcc -Wall -Werror -o '$tmp/app_pc' '$tmp/app.c' \$(pkg-config --cflags --libs syncbn)"
check "pkg-config app runs" clean env LD_LIBRARY_PATH="$libdir" "$tmp/app_pc"
check "pkg-config syncbn-acl: a CANN sample builds and runs" bash -c \
  "gcc -Wall -Werror -o '$tmp/acl_pc' '$src/samples/batch_norm_stats.c' \$(pkg-config --cflags --libs syncbn-acl) -lm &&
   env -i LD_LIBRARY_PATH='$libdir' '$tmp/acl_pc'"
# The README's line: the rpath from the libdir variable, then the program starts in a clean
# environment (no LD_LIBRARY_PATH); and syncbn alone carries no MPI flag, built or not.
check "pkg-config build with -Wl,-rpath,libdir (gcc)" bash -c "gcc -Wall -Werror -o '$tmp/app_rpath' '$tmp/app.c' \
  \$(pkg-config --cflags --libs syncbn) -Wl,-rpath,\$(pkg-config --variable=libdir syncbn)"
check "pkg-config rpath app runs without LD_LIBRARY_PATH" clean "$tmp/app_rpath"
check "README's C example (examples/channel_stats.c) with pkg-config and rpath" bash -c \
  "cc -Wall -Wextra -Werror -o '$tmp/channel_stats' '$src/examples/channel_stats.c' \
   \$(pkg-config --cflags --libs syncbn) -Wl,-rpath,\$(pkg-config --variable=libdir syncbn)"
check "README's C example runs without LD_LIBRARY_PATH" clean "$tmp/channel_stats"
checks=$((checks + 1))
! pkg-config --cflags --libs syncbn | grep -Eqi -- "SBN_HAVE_MPI|-lmpi|openmpi|mpich" || fail "pkg-config syncbn carries MPI flags: $(pkg-config --cflags --libs syncbn)"
checks=$((checks + 1))
if [ "$have_mpi" = 1 ]; then
  pkg-config --cflags syncbn-mpi | grep -q -- "-DSBN_HAVE_MPI=1" || fail "pkg-config --cflags syncbn-mpi lacks SBN_HAVE_MPI=1"
  check "pkg-config syncbn-mpi --modversion = syncbn.h" test "$(pkg-config --modversion syncbn-mpi)" = "$version"
  check "pkg-config syncbn-mpi build of an MPI program (gcc, no mpicc, rpath)" bash -c \
    "gcc -Wall -Werror -o '$tmp/app_mpi_pc' '$tmp/app_mpi.c' \$(pkg-config --cflags --libs syncbn-mpi) \
     -Wl,-rpath,\$(pkg-config --variable=libdir syncbn-mpi)"
  check "pkg-config syncbn-mpi app under mpirun -np 2 (no LD_LIBRARY_PATH)" mpirun_np2 "$tmp/app_mpi_pc"
else
  [ ! -e "$libdir/pkgconfig/syncbn-mpi.pc" ] || fail "syncbn-mpi.pc is installed although MPI is not built"
fi
check "pkg-config (the ascend layout's lib64/pkgconfig) build" bash -c \
  "PKG_CONFIG_PATH='$moved/lib64/pkgconfig' gcc -o '$tmp/app_pc64' '$tmp/app.c' \$(PKG_CONFIG_PATH='$moved/lib64/pkgconfig' pkg-config --cflags --libs syncbn) && LD_LIBRARY_PATH='$moved/lib64' '$tmp/app_pc64'"

# ---- 3. syncbn info ---------------------------------------------------------------------------
info() { clean "$@" "$prefix/bin/syncbn" info; }
expect_line() { # expect_line REGEX ENV... : `syncbn info` exits 0 and prints a line matching REGEX
  local regex=$1; shift
  checks=$((checks + 1))
  if ! info "$@" >"$tmp/info" 2>&1; then fail "syncbn info ($*) exit status"; cat "$tmp/info"
  elif ! grep -Eq "$regex" "$tmp/info"; then fail "syncbn info ($*): no line /$regex/"; cat "$tmp/info"; fi
}
expect_line "^version: $version "
expect_line "^kernels: (scalar|avx2|avx512|avx512bf16) \(usable on this CPU: scalar"
expect_line "^kernels: scalar " SBN_FORCE_SCALAR=1
expect_line "^cpus: $(nproc) "
expect_line "^threads: $(nproc) \(SBN_NUM_THREADS unset"
expect_line "^threads: 3 \(SBN_NUM_THREADS\)" SBN_NUM_THREADS=3
if [ "$have_mpi" = 1 ]; then expect_line "^mpi: yes"; else expect_line "^mpi: no"; fi
expect_line "^comm timeout: 60 s " 
expect_line "^comm timeout: 2.5 s \(SBN_COMM_TIMEOUT\)" SBN_COMM_TIMEOUT=2.5
if command -v taskset >/dev/null; then expect_line "^cpus: 1 " taskset -c 0; fi
for bad in SBN_NUM_THREADS=0 SBN_NUM_THREADS=2x SBN_COMM_TIMEOUT=abc SBN_COMM_TIMEOUT=-1; do
  checks=$((checks + 1))
  info "$bad" >"$tmp/info" 2>&1 && fail "syncbn info with $bad exits 0"
  grep -q "refused" "$tmp/info" || fail "syncbn info with $bad does not say it is refused"
done
checks=$((checks + 1))
clean "$prefix/bin/syncbn" info --ranks 2 >/dev/null 2>&1; [ $? -eq 2 ] || fail "syncbn info --ranks 2: not a usage error"

echo "install: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
