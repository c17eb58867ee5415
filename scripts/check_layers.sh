#!/usr/bin/env bash
# check_layers.sh [SOURCE_DIR] - checks that every #include "..." of the library, the tools
# and the public headers follows the one direction of docs/architecture.md:
#
#   core  <-  kernels  <-  ops  <-  layer
#   core  <-  comm     <-  layer          info -> ops, kernels, core
#   tools, aclnn (the CANN face, libsyncbn_acl) -> include/ (the public API) only
#
# A module may include its own headers, the public headers (include/) and the headers of the
# modules below it, nothing else; so no two directories can include each other. An include is
# resolved as the compiler would: include/<path> (public), else src/<path>, else next to the
# file. Prints every violation; exit status 1 when there is one. ctest runs it
# (the test `layers`).
set -u
src_dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src_dir" || exit 2

# allowed[module]: the modules its files may include (besides itself and the public headers).
declare -A allowed=(
  [core]=""
  [kernels]="core"
  [ops]="core kernels"
  [comm]="core"
  [layer]="core kernels ops comm"
  [info]="core kernels ops"
  [tools]=""
  [aclnn]=""
  [public]=""
)

# The module a file belongs to, into $mod_of: src/<module>/..., tools/, include/ (public).
module_of() {
  case $1 in
    src/*) mod_of=${1#src/}; mod_of=${mod_of%%/*} ;;
    tools/*) mod_of=tools ;;
    include/*) mod_of=public ;;
    *) mod_of="?" ;;
  esac
}

# The module an include of `file` names, into $to: public, a src module, or the file's own.
target_of() {
  local file=$1 inc=$2
  if [ -e "include/$inc" ]; then to=public
  elif [ -e "src/$inc" ]; then to=${inc%%/*}
  elif [ -e "${file%/*}/$inc" ]; then module_of "${file%/*}/$inc"; to=$mod_of
  else to="?"
  fi
}

bad=0
declare -A seen=()
re='^([^:]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)"'
while IFS= read -r line; do
  [[ $line =~ $re ]] || continue
  file=${BASH_REMATCH[1]} inc=${BASH_REMATCH[2]}
  module_of "$file"
  mod=$mod_of
  [ -n "${allowed[$mod]+set}" ] || continue # a directory not in the table: not checked here
  seen[$file]=1
  target_of "$file" "$inc"
  [ "$to" = public ] && [ "$mod" != public ] && continue
  [ "$to" = "$mod" ] && continue
  ok=0
  for m in ${allowed[$mod]}; do [ "$m" = "$to" ] && ok=1; done
  if [ $ok = 0 ]; then
    echo "check_layers: $file ($mod) includes \"$inc\" ($to); $mod may include its own" \
         "headers, the public ones and: ${allowed[$mod]:-no other module}" >&2
    bad=1
  fi
done < <(find src tools include/syncbn -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' \) \
           -exec grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' {} + | sort)
checked=${#seen[@]}

if [ "$checked" -lt 20 ]; then
  echo "check_layers: only $checked files found under $src_dir; wrong directory?" >&2
  exit 2
fi
[ $bad = 0 ] && echo "check_layers: the includes of $checked files follow the layers"
exit $bad
