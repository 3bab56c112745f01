#!/usr/bin/env bash
# Vector math of generated kernels against scalar libm, per function (bench/vecmath_bench.cpp),
# built with the flags of coil's kernels for the given ISA (default: this machine's).
#   bench/vecmath.sh [avx512|avx2]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
isa=${1:-avx512}
case $isa in
  avx512) flags="-march=native"; lanes=16 ;;
  avx2) flags="-march=haswell"; lanes=8 ;;
  *) echo "usage: $0 [avx512|avx2]" >&2; exit 2 ;;
esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
c++ -std=c++17 -O3 $flags -fopenmp -fno-math-errno -ffp-contract=off -DCOIL_BENCH_LANES=$lanes \
  -I "$root/runtime/include" "$root/bench/vecmath_bench.cpp" -o "$out/vecmath" -lmvec
"$out/vecmath"
