#!/usr/bin/env bash
# The GPU check: builds coil and runs every fixture (tests/fixtures/*) and every bundled
# example (examples/*) on the GPU with `coil run --device cuda`, each against PyTorch's
# eager outputs, and prints one row per case: PASS or FAIL, seconds, and the first line
# that says why it failed. Then, without a NAME_FILTER, the checks of tests/gpu/ (the
# launcher, the executor with and without CUDA graphs and autotuning, the extern calls, the
# public API on device tensors and a caller's stream) and torch.compile(backend="coil") on
# CUDA (tests/python: the backend's CUDA tests, the model suite at tiny sizes), one row
# each. Exits 0 only when every case passed.
#
# coil's options come from the environment as usual: COIL_TRITON_AUTOTUNE=1 and
# COIL_TRITON_CUDAGRAPHS=1 run every case tuned and replayed from a CUDA graph.
#
# What it needs, on the machine with the GPU (nothing is carried from elsewhere):
#   - an NVIDIA driver (libcuda.so.1), CMake, Ninja, a C++20 compiler and the nlohmann-json
#     headers (the build's needs; the unit tests are not built, so no GoogleTest);
#   - Python with triton (compiling the kernels) and torch's CUDA libraries where
#     cuBLAS/cuDNN come from; coil finds its Python through the option triton.python
#     (COIL_TRITON_PYTHON), which this script sets to python3 unless it is set already;
#     with nanobind too, the Python package is built and checked (else those rows say
#     SKIPPED), and the model suite needs torchvision and transformers.
# Nothing is installed. The build goes to its own folder (build-gpu-check, or
# $COIL_GPU_BUILD) so that it never mixes with another build of the checkout; kernels go
# to a fresh cache (or $COIL_CACHE_DIR when set).
#
#   scripts/gpu_check.sh [NAME_FILTER]   # only the cases whose name contains NAME_FILTER
#
# Environment: COIL_GPU_TIMEOUT (seconds per case, default 300), COIL_JOBS (build jobs,
# default 16), COIL_GPU_PARALLEL (cases at once, default 8), OUT (when set, the table is also
# written to $OUT/$COIL_GPU_CHECK_NAME.md, default gpu_check.md, with the logs of failures).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${COIL_GPU_BUILD:-$root/build-gpu-check}
jobs=${COIL_JOBS:-16}
timeout_s=${COIL_GPU_TIMEOUT:-300}
filter=${1:-}
export COIL_TRITON_PYTHON=${COIL_TRITON_PYTHON:-python3}
if [[ -z ${COIL_CACHE_DIR:-} ]]; then
  COIL_CACHE_DIR=$(mktemp -d)
  export COIL_CACHE_DIR
  trap 'rm -rf "$COIL_CACHE_DIR"' EXIT
fi

# The Python package (coil._C) is built too when the Python has nanobind, for the
# torch.compile checks at the end; without it they are skipped, and the table says so.
python_targets=()
python_flags=()
if "$COIL_TRITON_PYTHON" -c "import nanobind" 2>/dev/null; then
  python_targets=(_C)
  python_flags=(-DCOIL_PYTHON=ON "-DPython_EXECUTABLE=$(command -v "$COIL_TRITON_PYTHON")")
fi

echo "== building coil in $build (Release, $jobs jobs)"
if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOIL_TESTS=OFF -DCOIL_GPU_TESTS=ON \
  "${python_flags[@]}" >"$build.configure.log" 2>&1; then
  tail -n 30 "$build.configure.log"
  echo "configuring failed: see $build.configure.log"
  exit 2
fi
gpu_tests=(coil_gpu_launch_test coil_gpu_program_test coil_gpu_extern_test coil_gpu_device_io_test)
if ! cmake --build "$build" -j "$jobs" --target coil "${gpu_tests[@]}" "${python_targets[@]}" >"$build.build.log" 2>&1; then
  grep -m 20 -E 'error|Error' "$build.build.log"
  tail -n 20 "$build.build.log"
  echo "building failed: see $build.build.log"
  exit 2
fi
coil=$build/coil

echo "== $("$COIL_TRITON_PYTHON" -c 'import triton; print("triton", triton.__version__)' 2>&1 | tail -n 1)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# Every case directory: a graph (graph.py, else graph.txt) with its input and expected tensors.
cases=()
for dir in "$root"/tests/fixtures/*/ "$root"/examples/*/; do
  dir=${dir%/}
  [[ -f $dir/inputs.safetensors && -f $dir/expected.safetensors ]] || continue
  [[ -f $dir/graph.py || -f $dir/graph.txt ]] || continue
  [[ -z $filter || $dir == *"$filter"* ]] || continue
  cases+=("$dir")
done
if [[ ${#cases[@]} -eq 0 ]]; then
  echo "no case matches '$filter'"
  exit 2
fi

logs=$(mktemp -d)
parallel=${COIL_GPU_PARALLEL:-8}

# A case whose eager results differ by device (a float out of an integer's range converts
# differently on CUDA than on the CPU) keeps CUDA eager's outputs beside the CPU's, as
# expected_cuda.safetensors (written on a GPU by scripts/cuda_eager_expected.py); the check
# compares with those.

# run_case INDEX DIR: runs one case and leaves its row (status, seconds, why) in $logs/INDEX.row.
run_case() {
  local i=$1 dir=$2 graph log start rc seconds status why expected
  graph=$dir/graph.py
  [[ -f $graph ]] || graph=$dir/graph.txt
  log=$logs/$i.log
  start=$(date +%s%N)
  expected=$dir/expected.safetensors
  [[ -f $dir/expected_cuda.safetensors ]] && expected=$dir/expected_cuda.safetensors
  timeout --kill-after=10 "$timeout_s" "$coil" run "$graph" --device cuda \
    --inputs "$dir/inputs.safetensors" --expect "$expected" >>"$log" 2>&1
  rc=$?
  seconds=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  if [[ $rc -eq 0 ]]; then
    status=PASS
    why=""
  else
    status=FAIL
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then
      why="timed out after ${timeout_s} s"
    else
      # The first line that says what went wrong: coil's error, else a failed output, else
      # the last line. ("max abs error" is in every output's line, failed or not.)
      why=$(grep -m 1 -E '(^|: )(internal )?error:|^coil: ' "$log" || true)
      [[ -n $why ]] || why=$(grep -m 1 -E ' FAIL ' "$log" || true)
      [[ -n $why ]] || why=$(tail -n 1 "$log")
      why="exit $rc: $why"
    fi
  fi
  why=${why//|/\\|}
  printf '%s\t%s\t%s\n' "$status" "$seconds" "${why:0:200}" >"$logs/$i.row"
}

# Cases run $parallel at a time (COIL_GPU_PARALLEL): each compiles its kernels in a Python
# process of its own and then shares the GPU.
total_start=$(date +%s%N)
for i in "${!cases[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $parallel ]]; do wait -n; done
  run_case "$i" "${cases[$i]}" &
done
wait

rows=()
passed=0
failed=0
failed_logs=()
for i in "${!cases[@]}"; do
  dir=${cases[$i]}
  name=$(basename "$(dirname "$dir")")/$(basename "$dir")
  name=${name#fixtures/}
  IFS=$'\t' read -r status seconds why <"$logs/$i.row"
  if [[ $status == PASS ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    cp "$logs/$i.log" "$logs/$(echo "$name" | tr '/' '_').log"
    failed_logs+=("$logs/$(echo "$name" | tr '/' '_').log")
  fi
  rows+=("| $name | $status | $seconds | $why |")
  printf '%-44s %s %7s s  %s\n' "$name" "$status" "$seconds" "$why"
done
total_seconds=$(awk -v ns=$(($(date +%s%N) - total_start)) 'BEGIN { printf "%.0f", ns / 1e9 }')

# add_check NAME LOG RC SECONDS WHY: one row of the checks below; a failure is counted and
# its log kept for $OUT.
checks=()
add_check() {
  local name=$1 log=$2 rc=$3 seconds=$4 why=$5 status=PASS kept
  if [[ $rc -ne 0 ]]; then
    status=FAIL
    failed=$((failed + 1))
    kept=$logs/$(echo "$name" | tr ' /.' '___').log
    cp "$log" "$kept"
    failed_logs+=("$kept")
  fi
  why=${why//|/\\|}
  checks+=("| $name | $status | $seconds | ${why:0:200} |")
  printf '%-44s %s %7s s  %s\n' "$name" "$status" "$seconds" "$why"
}

# timed LOG COMMAND...: runs COMMAND from the source folder (the executor's check reads
# ./examples) with its output in LOG, within 10 minutes; sets rc and seconds.
timed() {
  local log=$1 start
  shift
  start=$(date +%s%N)
  (cd "$root" && timeout --kill-after=10 600 "$@" >"$log" 2>&1)
  rc=$?
  seconds=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.1f", ns / 1e9 }')
}

# The checks of tests/gpu.
if [[ -z $filter ]]; then
  for t in "${gpu_tests[@]}"; do
    log=$logs/$t.log
    timed "$log" "$build/tests/gpu/$t"
    npass=$(grep -c '^PASS ' "$log")
    nfail=$(grep -c '^FAIL ' "$log")
    why="$npass checks passed"
    [[ $rc -eq 0 ]] || why="exit $rc, $nfail of $((npass + nfail)) checks failed: $(grep -m 1 '^FAIL ' "$log" || tail -n 1 "$log")"
    add_check "tests/gpu/$t" "$log" "$rc" "$seconds" "$why"
  done
fi

# torch.compile(backend="coil") on CUDA: the package installed (CMake's python component)
# into a folder of its own with its entry point, then the backend's CUDA tests, the model
# suite at tiny sizes in f32 and bf16, and training steps in bf16 autocast (tests/python).
if [[ -z $filter ]]; then
  package=$logs/package
  if [[ ${#python_targets[@]} -gt 0 ]]; then
    cmake --install "$build" --component python --prefix "$package" >/dev/null
    mkdir -p "$package/coil-0.dist-info"
    printf 'Metadata-Version: 2.1\nName: coil\nVersion: 0\n' >"$package/coil-0.dist-info/METADATA"
    printf '[torch_dynamo_backends]\ncoil = coil.backend:coil_backend\n' >"$package/coil-0.dist-info/entry_points.txt"
  fi
  for check in "tests/python/test_backend.py Cuda" "tests/python/test_models.py CudaModels" \
    "tests/python/test_training.py CudaTraining"; do
    if [[ ${#python_targets[@]} -eq 0 ]]; then
      checks+=("| $check | SKIPPED | 0 | $COIL_TRITON_PYTHON has no nanobind: the package was not built |")
      printf '%-44s SKIPPED (no nanobind)\n' "$check"
      continue
    fi
    log=$logs/$(echo "$check" | tr ' /.' '___').run.log
    # shellcheck disable=SC2086  (the check is a script and its test class)
    timed "$log" env PYTHONPATH="$package" "$COIL_TRITON_PYTHON" $check
    why=$(grep -m 1 -E '^Ran ' "$log")
    [[ $rc -eq 0 ]] || why="exit $rc: $(grep -m 1 -E '^(FAIL|ERROR):' "$log" || tail -n 1 "$log")"
    add_check "$check" "$log" "$rc" "$seconds" "$why"
  done
fi

table=$({
  echo "# coil GPU check"
  echo
  echo "$passed of ${#cases[@]} cases passed, in $total_seconds s; $failed failures in all (cases and tests/gpu checks)"
  echo "options: triton.autotune=${COIL_TRITON_AUTOTUNE:-0} triton.cudagraphs=${COIL_TRITON_CUDAGRAPHS:-0}"
  echo
  echo "| case | result | seconds | first line of the failure |"
  echo "|---|---|---|---|"
  [[ ${#checks[@]} -eq 0 ]] || printf '%s\n' "${checks[@]}"
  printf '%s\n' "${rows[@]}"
})
echo
echo "$table"
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  echo "$table" >"$OUT/${COIL_GPU_CHECK_NAME:-gpu_check}.md"
  # The whole output of each failed case, for reading later.
  if [[ ${#failed_logs[@]} -gt 0 ]]; then
    mkdir -p "$OUT/${COIL_GPU_CHECK_NAME:-gpu_check}_logs"
    cp "${failed_logs[@]}" "$OUT/${COIL_GPU_CHECK_NAME:-gpu_check}_logs/"
  fi
fi
rm -rf "$logs"
[[ $failed -eq 0 ]]
