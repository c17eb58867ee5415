#!/usr/bin/env bash
# run_samples.sh BUILD_DIR - installs the build into a scratch prefix and builds every
# sample with the CANN link line, exactly as a CANN user would:
#   cc/c++ sample -I<prefix>/include -L<prefix>/lib -lascendcl -lnnopbase -lopapi
# C samples (*.c) are built as C and as C++; *.cpp as C++. Each must print its
# documented numbers and exit 0.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
link=(-I"$prefix/include" -L"$prefix/lib" -lascendcl -lnnopbase -lopapi -lm)
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
passed=0 failed=0
run() { # name, then the compiler and its source arguments
  local name=$1; shift
  if "$@" -x none -Wall -Wextra -Werror -o "$prefix/$name" "${link[@]}" && "$prefix/$name"; then
    passed=$((passed + 1))
  else
    echo "FAIL: $name ($*)"; failed=$((failed + 1))
  fi
}
for src in "$here"/*.c; do
  name=$(basename "$src" .c)
  run "${name}_c" "${CC:-cc}" "$src"
  run "${name}_cxx" "${CXX:-c++}" -x c++ "$src"
done
for src in "$here"/*.cpp; do
  run "$(basename "$src" .cpp)_cpp" "${CXX:-c++}" "$src"
done
echo "samples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
