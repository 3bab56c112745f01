#!/usr/bin/env bash
# Process replay: what coil generates for every fixture and example, at two revisions,
# diffed. For each graph it keeps the C++ translation unit (graph.cpp), the Triton kernels
# (kernels/*.py), the host program (launch_plan.json) and every stage dump, the kernel plans
# among them; a refactor must show no diff, and a change that means to change kernels shows
# exactly which.
#
#   scripts/process_replay.sh [BASE [HEAD]]
#
# BASE and HEAD are git revisions; BASE defaults to the commit checked out (HEAD), and
# HEAD to the working tree as it is now (built into ./build). A revision is checked out
# into a temporary worktree and its `coil` built there (with ccache when installed).
# Kernels are generated for AVX-512 whatever this machine has, and Triton sources without
# cubins, so the output depends on the revision alone; nothing is compiled. Exit status: 0
# when nothing differs, 1 when something does (the diff is printed and kept under
# $COIL_REPLAY_DIR, default build-replay/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base=${1:-HEAD}
head=${2:-}
out=${COIL_REPLAY_DIR:-$root/build-replay}
jobs=${COIL_JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# coil_at REV: the path of a `coil` built from REV ("" for the working tree).
coil_at() {
  local rev=$1
  if [[ -z $rev ]]; then
    cmake --build "$root/build" --target coil >/dev/null
    echo "$root/build/coil"
    return
  fi
  local sha tree
  sha=$(git -C "$root" rev-parse --verify "$rev^{commit}")
  tree="$out/trees/$sha"
  if [[ ! -d $tree ]]; then
    git -C "$root" worktree add --detach "$tree" "$sha" >/dev/null 2>&1
  fi
  if [[ ! -f $tree/build/build.ninja ]]; then
    cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOIL_TESTS=OFF "${launcher[@]}" >/dev/null
  fi
  cmake --build "$tree/build" --target coil -j "$jobs" >/dev/null
  echo "$tree/build/coil"
}

# replay_one COIL DIR GRAPH: one graph's sources and dumps for both dialects.
replay_one() {
  local coil=$1 dir=$2 g=$3
  local name kind d
  name=$(basename "$(dirname "$g")")
  kind=$(basename "$(dirname "$(dirname "$g")")")
  d="$dir/$kind/$name"
  mkdir -p "$d"
  "$coil" compile "$g" --out "$d/cpu" --set cpp.isa=avx512 >"$d/cpu.log" 2>&1 || echo "compile failed" >>"$d/cpu.log"
  "$coil" compile "$g" --out "$d/cuda" --device cuda --set triton.python=/nonexistent >"$d/cuda.log" 2>&1 ||
    echo "compile failed" >>"$d/cuda.log"
  rm -f "$d/cpu/graph.so"
  # Where and how long it ran is not part of the replay.
  sed -i -E "s#,? (built )?in [0-9.e+-]+ s( \(cached\))?##; s# -> .*##; s#$root|$out/trees/[0-9a-f]+#ROOT#g" "$d/cpu.log" "$d/cuda.log"
}
export -f replay_one
export root out

# generate COIL DIR: every graph's sources and dumps into DIR.
generate() {
  rm -rf "$2"
  mkdir -p "$2"
  find "$root/tests/fixtures" "$root/examples" -name graph.py | sort |
    xargs -P "$jobs" -I{} bash -c 'replay_one "$0" "$1" "$2"' "$1" "$2" {}
}

mkdir -p "$out"
export COIL_CACHE_DIR="$out/cache"
# The replay compares sources: a stand-in compiler writes the shared library it is asked
# for without compiling anything.
cat >"$out/replay-cxx" <<'CXX'
#!/bin/sh
case " $* " in *" --version "*) echo "replay-cxx (compiles nothing) 1"; exit 0 ;; esac
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then echo "not compiled" >"$2"; fi
  shift
done
CXX
chmod +x "$out/replay-cxx"
export COIL_CPP_COMPILER="$out/replay-cxx" COIL_CPP_PCH=0
echo "== process replay: ${base} against ${head:-the working tree}"
base_coil=$(coil_at "$base")
head_coil=$(coil_at "$head")
generate "$base_coil" "$out/base"
generate "$head_coil" "$out/head"
if diff -ru "$out/base" "$out/head" >"$out/replay.diff"; then
  echo "== no difference in $(find "$out/head" -name graph.cpp | wc -l) C++ units and $(find "$out/head" -name launch_plan.json | wc -l) host programs"
  exit 0
fi
echo "== differences ($(grep -c '^diff ' "$out/replay.diff") files; all of it in $out/replay.diff):"
head -n 400 "$out/replay.diff"
exit 1
