#!/usr/bin/env bash
# Every test of coil, from a fresh machine: set up, build, unit and command-line tests,
# the same tests under AddressSanitizer and UndefinedBehaviorSanitizer (built with
# clang), then the fuzz targets seeded with the bundled examples.
#   COIL_FUZZ_SECONDS  seconds for the frontend fuzzer (default 60; the safetensors
#                      fuzzer gets a third of it)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$COIL_ROOT"
coil_setup_python

echo "== build (g++) at $(date +%T)"
# The unit tests run as a few processes (tests/CMakeLists.txt, COIL_TEST_SHARDS), not one per
# test. Both builds are from scratch, so coil is compiled 16 files to a unit (COIL_UNITY_BUILD)
# and at -O1 (the sanitizers' advice; -O2 took 1.7 times as long a file, for tests that spend
# their time in the compilers coil calls). Debug information is line tables only (-g1):
# enough for the sanitizers' and a crash's stack traces, a third of the time less than -g.
ci=(-DCOIL_TEST_SHARDS=$((COIL_JOBS * 4)) -DCOIL_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
coil_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ci[@]}"
coil_install_package
echo "== tests (g++) at $(date +%T)"
ctest --test-dir build --output-on-failure -j "$COIL_JOBS"

echo "== build (clang, ASan + UBSan, libFuzzer) at $(date +%T)"
coil_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCOIL_SANITIZE=ON -DCOIL_FUZZ=ON "${ci[@]}"
echo "== tests (ASan + UBSan) at $(date +%T)"
# The sanitizer build runs coil's own C++: what only exercises Python (Triton's compiler and
# interpreter over every config, the package's tests) and the fixtures' extra CPU compiles
# are the g++ run's (tests/CMakeLists.txt says which).
# Thread-local storage is not scanned for leaks: clang 14's leak tracer crashes on the
# TLS of oneDNN when a compiled graph loads it (tests/lsan.supp says what that hides).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="use_tls=0:suppressions=$COIL_ROOT/tests/lsan.supp" \
  ctest --test-dir build-fuzz --output-on-failure -j "$COIL_JOBS"

seconds=${COIL_FUZZ_SECONDS:-60}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/fx" "$corpus/st"
for d in examples/*/; do
  n=$(basename "$d")
  cp "$d/graph.py" "$corpus/fx/$n.py"
  cp "$d/inputs.safetensors" "$corpus/st/$n.in.safetensors"
  cp "$d/expected.safetensors" "$corpus/st/$n.out.safetensors"
done
# run_fuzzer NAME SECONDS CORPUS [FLAGS...]: a finding prints the fuzzer's report and fails.
run_fuzzer() {
  local name=$1 secs=$2 dir=$3
  shift 3
  echo "== fuzz $name for ${secs}s"
  if ! "build-fuzz/$name" -seed=1 -max_total_time="$secs" -print_final_stats=1 "$@" "$dir" >"$corpus/$name.log" 2>&1; then
    tail -n 80 "$corpus/$name.log"
    echo "== $name found a failure"
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$corpus/$name.log" || true
}
run_fuzzer fuzz_parse "$seconds" "$corpus/fx" -max_len=8192 -dict=tests/fuzz/fx.dict
run_fuzzer fuzz_safetensors $((seconds / 3)) "$corpus/st" -max_len=4096 -rss_limit_mb=4096
echo "== all tests passed at $(date +%T)"
