#!/usr/bin/env bash
# The `coil` command line end to end: usage: cli_test.sh PATH/TO/coil (run from the repo root).
set -u
coil=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect NAME WANT_STATUS WANT_SUBSTRING -- COMMAND...: runs COMMAND, checks its exit
# status and that stdout+stderr contain WANT_SUBSTRING.
expect() {
  local name=$1 want_status=$2 want_text=$3
  shift 4
  local out status
  out=$("$@" 2>&1)
  status=$?
  if [[ $status -ne $want_status || $out != *"$want_text"* ]]; then
    echo "FAIL $name: status $status (want $want_status), output:"
    echo "$out" | head -20
    echo "  (wanted to find: $want_text)"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

expect help 0 "commands:" -- "$coil" --help
expect no-command 1 "usage: coil <command>" -- "$coil"
expect unknown-command 1 "coil: unknown command 'frobnicate'" -- "$coil" frobnicate
expect check-help 0 "usage: coil check FILE..." -- "$coil" check --help
expect print-help 0 "usage: coil print FILE" -- "$coil" print --help
expect info-help 0 "usage: coil info FILE" -- "$coil" info --help
expect unknown-option 1 "coil check: unknown option '--frob'" -- "$coil" check --frob examples/sum_all/graph.py
expect check-no-file 1 "coil check: expected at least one graph file" -- "$coil" check

for d in examples/*/; do
  n=$(basename "$d")
  expect "check-$n" 0 "ok (" -- "$coil" check "$d/graph.py" --inputs "$d/inputs.safetensors" --expect "$d/expected.safetensors"
  "$coil" print "$d/graph.py" > "$tmp/$n.py" && "$coil" print "$tmp/$n.py" > "$tmp/$n.again.py"
  if cmp -s "$tmp/$n.py" "$tmp/$n.again.py"; then echo "ok   print-round-trip-$n"; else
    echo "FAIL print-round-trip-$n"; failures=$((failures + 1)); fi
done

expect info-ops 0 "  2  aten.convolution.default" -- "$coil" info examples/resnet_basic_block/graph.py
expect info-outputs 0 "getitem_1  f32[64][1]cpu" -- "$coil" info examples/var_mean_lastdim/graph.py

printf 'class GraphModule(torch.nn.Module):\n    def forward(self, x: "f32[4][1]cpu"):\n        y: "f16[4][1]cpu" = torch.ops.aten.relu.default(x)\n        return (y,)\n' > "$tmp/bad.py"
expect check-bad 1 "$tmp/bad.py:3:12: error: node 'y' (aten.relu.default): annotation says f16[4][1]cpu but is f32[4][1]cpu (dtypes differ)" -- "$coil" check "$tmp/bad.py"
expect check-good-and-bad 1 "examples/sum_all/graph.py: ok" -- "$coil" check examples/sum_all/graph.py "$tmp/bad.py"
expect check-missing 1 "$tmp/none.py: error: cannot open: No such file or directory" -- "$coil" check "$tmp/none.py"
expect inputs-mismatch 1 "examples/sum_dim0/inputs.safetensors: error: tensor 'a_0' is f32[64, 256] but the graph expects f32[65536]" -- \
  "$coil" check examples/sum_all/graph.py --inputs examples/sum_dim0/inputs.safetensors
expect expect-mismatch 1 "examples/sum_dim0/expected.safetensors: error: tensor 'out0' is f32[256] but the graph expects f32[64]" -- \
  "$coil" check examples/var_mean_lastdim/graph.py --expect examples/sum_dim0/expected.safetensors

# Files are read with a size bound: a stream without end is an error, not all of memory.
expect check-endless-graph 1 "/dev/zero: error: more than 256 MiB from a stream that is not a regular file" -- "$coil" check /dev/zero
expect check-endless-inputs 1 "/dev/zero: error: more than 1024 MiB from a stream that is not a regular file" -- \
  "$coil" check examples/sum_all/graph.py --inputs /dev/zero

# compile: the dumps, stats.json and --explain; the same dumps again from COIL_TRACE, identical.
expect compile-softmax 0 "1 kernel, 0 extern calls" -- "$coil" compile examples/softmax_lastdim/graph.py --out "$tmp/sm"
for f in graph.txt graph_after_passes.txt ir_pre_fusion.txt ir_post_fusion.txt memory_plan.txt stats.json; do
  if [[ -s "$tmp/sm/$f" ]]; then echo "ok   compile-writes-$f"; else echo "FAIL compile-writes-$f"; failures=$((failures + 1)); fi
done
expect compile-stats 0 '"kernels": 1' -- cat "$tmp/sm/stats.json"
expect compile-explain 0 "kernel0  reduction over [64, 1] reducing [256]" -- "$coil" compile examples/softmax_lastdim/graph.py --out "$tmp/sm2" --explain
expect compile-explain-apart 0 "an extern call (convolution) runs in a library" -- "$coil" compile examples/resnet_basic_block/graph.py --out "$tmp/rn" --explain
expect compile-explain-library 0 "kernel1 (convolution) extern library: " -- "$coil" compile examples/resnet_basic_block/graph.py --out "$tmp/rn2" --explain
expect compile-set 0 "2 kernels" -- "$coil" compile examples/softmax_lastdim/graph.py --out "$tmp/sm3" --set max_fusion_size=2
expect compile-no-out 1 "coil: error: coil compile: --out DIR is required" -- "$coil" compile examples/sum_all/graph.py
expect compile-device 1 "unknown device 'tpu'" -- "$coil" compile examples/sum_all/graph.py --out "$tmp/x" --device tpu
expect compile-bad-env 1 "coil: error: COIL_MAX_FUSION_SIZE='abc': max_fusion_size expects an integer" -- \
  env COIL_MAX_FUSION_SIZE=abc "$coil" compile examples/sum_all/graph.py --out "$tmp/x"
COIL_TRACE="$tmp/trace" "$coil" run examples/softmax_lastdim/graph.py --inputs examples/softmax_lastdim/inputs.safetensors > /dev/null
for f in graph.txt graph_after_passes.txt ir_pre_fusion.txt ir_post_fusion.txt memory_plan.txt; do
  if cmp -s "$tmp/trace/$f" "$tmp/sm/$f"; then echo "ok   trace-same-$f"; else echo "FAIL trace-same-$f"; failures=$((failures + 1)); fi
done
# cpp.profile: after the run, each kernel's calls and time (with --bench 2: a warm-up call and 2
# timed ones, after the first call).
sm=examples/softmax_lastdim
expect run-profile-header 0 "kernel    calls  total ms   mean us       %  what it computes" -- \
  "$coil" run $sm/graph.py --device cpu --inputs $sm/inputs.safetensors --set cpp.profile=1 --bench 2
expect run-profile-row 0 "kernel0       3 " -- \
  "$coil" run $sm/graph.py --device cpu --inputs $sm/inputs.safetensors --set cpp.profile=1 --bench 2
expect run-profile-what 0 "100.0  reduction over [64, 1] reducing [256]: " -- \
  "$coil" run $sm/graph.py --device cpu --inputs $sm/inputs.safetensors --set cpp.profile=1
expect run-profile-ref 0 "cpp.profile times compiled kernels: use --device cpu" -- \
  "$coil" run $sm/graph.py --inputs $sm/inputs.safetensors --set cpp.profile=1
out=$("$coil" run $sm/graph.py --device cpu --inputs $sm/inputs.safetensors 2>&1)
if [[ $out != *"calls  total ms"* ]]; then echo "ok   run-no-profile"; else echo "FAIL run-no-profile"; failures=$((failures + 1)); fi
# A convolution on 3 channels runs in oneDNN's blocked layouts, between reorders, with a jit
# kernel, not gemm (coil/onednn.h); where coil calls oneDNN and the CPU has AVX2 at least.
fc=tests/fixtures/op_convolution_few_channels
if "$coil" compile $fc/graph.py --out "$tmp/fc" --explain 2>&1 | grep -q "extern library: oneDNN convolution" &&
  grep -qw avx2 /proc/cpuinfo; then
  out=$(ONEDNN_VERBOSE=1 "$coil" run $fc/graph.py --device cpu --inputs $fc/inputs.safetensors \
    --expect $fc/expected.safetensors 2>&1)
  stem=$(grep "exec,cpu,convolution,.*mb2_ic3oc8_ih21" <<<"$out")
  if [[ $out == *PASS* && $stem == *"convolution,jit:"* && $out == *"exec,cpu,reorder,"* ]]; then
    echo "ok   run-onednn-blocked"
  else
    echo "FAIL run-onednn-blocked: $stem"
    failures=$((failures + 1))
  fi
fi
# A graph of symbolic sizes: run for the sizes of its inputs, compiled for --size, refused
# without sizes with the ways to give them.
dy=tests/fixtures/dyn_cat_s7x2
expect run-symbolic-sizes 0 "out0 f32[9, 5]" -- \
  "$coil" run $dy/graph.py --device cpu --inputs $dy/inputs.safetensors --expect $dy/expected.safetensors
expect compile-symbolic-sizes 0 "1 kernel, 0 extern calls" -- \
  "$coil" compile $dy/graph.py --out "$tmp/dy" --size s10=7 --size s86=2
expect compile-symbolic-no-size 1 "symbolic size 's10' has no value (none given: coil run reads them from --inputs' shapes, coil compile takes --size s0=N" -- \
  "$coil" compile $dy/graph.py --out "$tmp/dy2"
# Findings of the differential tester that need an option: without inlining, a constant of
# one member forwarded to a later one, and a value of one pass read in another.
df=tests/fixtures/difftest_findings
expect run-noinline-difftest-findings 0 "out10 b8[]: max abs error 0, max rel error 0 (rtol 0, atol 0) PASS" -- \
  "$coil" run $df/graph.py --device cpu --inputs $df/inputs.safetensors --expect $df/expected.safetensors \
  --set fusion.inline_pointwise=0
# The Triton dialect: sources, host program and cubins without a GPU; the kernels under
# Triton's interpreter; a clean error where no GPU is.
expect compile-cuda 0 "1 Triton kernel, 0 extern calls, arena 0 bytes, 1 cubins for sm_90" -- \
  "$coil" compile $sm/graph.py --device cuda --out "$tmp/cu"
expect compile-cuda-source 0 "@triton.jit" -- cat "$tmp/cu/kernels/kernel0.py"
expect compile-cuda-plan 0 '"format": "coil-launch-plan"' -- cat "$tmp/cu/launch_plan.json"
expect compile-cuda-facts 0 '"num_warps"' -- cat "$tmp/cu/kernels/kernel0.json"
expect compile-cuda-explain 0 "kernel0 (convolution) extern library: cuDNN" -- \
  "$coil" compile examples/resnet_basic_block/graph.py --device cuda --out "$tmp/cu2" --explain
expect compile-cuda-layout 0 "kernel0  persistent: a row in one program" -- \
  "$coil" compile $sm/graph.py --device cuda --out "$tmp/cu3" --explain
# Heads longer than the CPU's attention kernel holds are refused, naming the node.
cat > "$tmp/long_heads.py" <<'GRAPH'
class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[1, 1, 4, 1100][4400, 4400, 1100, 1]cpu"):
        out: "f32[1, 1, 4, 1100][4400, 4400, 1100, 1]cpu" = torch.ops.aten.scaled_dot_product_attention.default(q, q, q)
        return (out,)
GRAPH
expect compile-attention-long-heads 0 "coil's fused attention loop, forward" -- \
  "$coil" compile "$tmp/long_heads.py" --out "$tmp/lh" --explain
expect compile-cuda-attention 0 "kernel1  fused attention, forward: causal, scale 0.25; grid 6x1x1" -- \
  "$coil" compile tests/fixtures/op_sdpa_flash_cpu/graph.py --device cuda --out "$tmp/cu6" --explain
# Only a missing Triton leaves the sources alone, and says so; a kernel Triton fails to
# compile (here its compiler dies: a Python that has Triton for --version only, and a
# cache of its own so that nothing is found compiled) is an error naming the kernel.
expect compile-cuda-no-triton 0 "no Triton, so the sources alone and no cubins: cannot compile Triton kernels" -- \
  "$coil" compile $sm/graph.py --device cuda --out "$tmp/cu4" --set triton.python="$tmp/no-such-python"
if [[ -x .venv/bin/python ]]; then
  printf '#!/bin/sh\nif [ "$2" = --version ]; then exec %s "$@"; fi\necho "LLVM ERROR: out of registers" >&2\nexit 134\n' \
    "$PWD/.venv/bin/python" > "$tmp/dying-python" && chmod +x "$tmp/dying-python"
  expect compile-cuda-kernel-fails 1 "$sm/graph.py: error: Triton failed to compile kernel 'kernel0'" -- \
    env COIL_CACHE_DIR="$tmp/cache-dying" "$coil" compile $sm/graph.py --device cuda --out "$tmp/cu5" \
    --set triton.python="$tmp/dying-python"
  expect compile-cuda-kernel-fails-why 1 "LLVM ERROR: out of registers" -- \
    env COIL_CACHE_DIR="$tmp/cache-dying" "$coil" compile $sm/graph.py --device cuda --out "$tmp/cu5" \
    --set triton.python="$tmp/dying-python"
fi
expect run-interpret 0 "PASS" -- \
  "$coil" run $sm/graph.py --device cuda --interpret --inputs $sm/inputs.safetensors --expect $sm/expected.safetensors
expect run-interpret-cpu 1 "--interpret runs the Triton kernels: use it with --device cuda" -- \
  "$coil" run $sm/graph.py --device cpu --interpret --inputs $sm/inputs.safetensors
if [[ ! -e /dev/nvidia0 ]]; then
  expect run-cuda-no-gpu 1 "libcuda.so.1" -- "$coil" run $sm/graph.py --device cuda --inputs $sm/inputs.safetensors
fi
# num_threads reaches the compiled graph; a malformed COIL_NUM_THREADS stops the run.
expect run-threads 0 "PASS" -- "$coil" run $sm/graph.py --device cpu --set num_threads=3 \
  --inputs $sm/inputs.safetensors --expect $sm/expected.safetensors
expect run-bad-threads 1 "COIL_NUM_THREADS='abc': num_threads expects an integer" -- \
  env COIL_NUM_THREADS=abc "$coil" run $sm/graph.py --device cpu --inputs $sm/inputs.safetensors
expect config-table 0 "max_fusion_size" -- "$coil" config
expect config-one 0 "max_fusion_size = 64  (default)" -- "$coil" config max_fusion_size
expect config-unknown 1 "unknown option 'max_fusion' (did you mean 'max_fusion_size'?)" -- "$coil" config max_fusion

# The bad-input catalogue: each input with the exact message and the exit status.
mkdir -p "$tmp/dir.py"
expect bad-directory 1 "$tmp/dir.py: error: cannot read: Is a directory" -- "$coil" check "$tmp/dir.py"
printf '\xef\xbb\xbfclass GraphModule(torch.nn.Module):\n    def forward(self, x: "f32[4][1]cpu"):\n        return (x,)\n' > "$tmp/bom.py"
expect bad-bom 1 "$tmp/bom.py:1:1: error: the file starts with a UTF-8 byte order mark (bytes 0xef 0xbb 0xbf); save it without one, as PyTorch prints graphs" -- \
  "$coil" check "$tmp/bom.py"
printf 'class GraphModule(torch.nn.Module):\n    def forward(self, x: "f32[4, 4][4, 1]cpu"):\n        y: "f32[4, 4][4, 1]cpu" = torch.ops.aten.as_strided.default(x, [4, 4], [4, 1], 2)\n        return (y,)\n' > "$tmp/oob.py"
expect bad-view-past-storage 1 "$tmp/oob.py:3:9: error: node 'y' (aten.as_strided.default): sizes [4, 4] and strides [4, 1] from storage offset 2 need 72 bytes of storage, but the storage of 'x' (f32[4, 4][4, 1]cpu) holds 64 bytes" -- \
  "$coil" check "$tmp/oob.py"
sa=examples/sum_all
for n in 1e30 99999999999999999999 2.5 0 -3; do
  expect "bad-bench-$n" 1 "coil: error: coil run: --bench expects a whole number of calls from 1 to 1000000, got '$n'" -- \
    "$coil" run $sa/graph.py --device cpu --inputs $sa/inputs.safetensors --bench "$n"
done
expect bad-save-dir 1 "$tmp/no/out.safetensors: error: cannot write: No such file or directory" -- \
  "$coil" run $sa/graph.py --inputs $sa/inputs.safetensors --save "$tmp/no/out.safetensors"
mkdir -p "$tmp/trace2/graph.txt/taken"
expect bad-trace-file 1 "$tmp/trace2/graph.txt: error: cannot move the temporary file into place: Is a directory" -- \
  env COIL_TRACE="$tmp/trace2" "$coil" run $sa/graph.py --inputs $sa/inputs.safetensors
if ls "$tmp/trace2" | grep -q tmp; then echo "FAIL bad-trace-file-leaves-temp"; failures=$((failures + 1)); fi
# An output too large for memory names its size (AddressSanitizer aborts on such an
# allocation instead of throwing, so a sanitizer build skips this one).
if ! grep -qa __asan_init "$coil"; then
  printf 'class GraphModule(torch.nn.Module):\n    def forward(self, a_0: "f32[65536][1]cpu"):\n        y: "f32[2097152, 65536, 65536][0, 0, 1]cpu" = torch.ops.aten.expand.default(a_0, [2097152, 65536, 65536])\n        return (y,)\n' > "$tmp/huge.py"
  expect bad-huge-output 1 "coil: error: not enough memory for a tensor f32[2097152, 65536, 65536] (36028797018963968 bytes)" -- \
    "$coil" run "$tmp/huge.py" --inputs $sa/inputs.safetensors
fi
# A NaN against a number: the FAIL line's largest error is nan, not the largest finite one.
printf 'class GraphModule(torch.nn.Module):\n    def forward(self, a_0: "f32[65536][1]cpu"):\n        y: "f32[65536][1]cpu" = torch.ops.aten.%s.default(a_0)\n        return (y,)\n' sqrt > "$tmp/sqrt.py"
printf 'class GraphModule(torch.nn.Module):\n    def forward(self, a_0: "f32[65536][1]cpu"):\n        y: "f32[65536][1]cpu" = torch.ops.aten.%s.default(a_0)\n        return (y,)\n' abs > "$tmp/abs.py"
"$coil" run "$tmp/sqrt.py" --inputs $sa/inputs.safetensors --save "$tmp/sqrt.safetensors" > /dev/null
expect bad-nan-fail-line 1 "out0 f32[65536]: max abs error nan, max rel error nan (rtol 1.3e-06, atol 1e-05) FAIL" -- \
  "$coil" run "$tmp/abs.py" --inputs $sa/inputs.safetensors --expect "$tmp/sqrt.safetensors"

# The cache. `coil cache clear` on a folder that is not a coil cache refuses and removes nothing.
check() {  # check NAME CONDITION...: ok when the condition holds
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
mkdir -p "$tmp/home/projects" && echo "chapter 1" > "$tmp/home/projects/thesis.tex"
expect cache-clear-not-a-cache 1 "$tmp/home is not a coil cache (it has no CACHEDIR.TAG written by coil, and coil did not write its 'projects'): coil removes nothing from it." -- \
  env COIL_CACHE_DIR="$tmp/home" "$coil" cache clear
check cache-clear-not-a-cache-kept test -f "$tmp/home/projects/thesis.tex"
# Built with a umask that lets everyone write, every folder of the cache is 0700 and every file 0600.
cache=$tmp/cache
run_cached() {  # run_cached CACHE CASE: compiled for the CPU through CACHE, against eager's outputs
  env COIL_CACHE_DIR="$1" "$coil" run "$2/graph.py" --device cpu --inputs "$2/inputs.safetensors" \
    --expect "$2/expected.safetensors" --set cpp.pch=0
}
(umask 0 && run_cached "$cache" $sm) > "$tmp/umask-run.txt" 2>&1
check cache-umask-run grep -q PASS "$tmp/umask-run.txt"
check cache-private test -z "$(find "$cache" \( -type d ! -perm 700 \) -o \( -type f ! -perm 600 \))"
# A damaged graph.so is found by its content hash, reported, removed and rebuilt, and the run
# matches eager (without the check: SIGBUS, SIGSEGV, and another graph's outputs).
run_cached "$tmp/cache2" examples/sum_dim0 > /dev/null
for damage in truncated zeroed swapped; do
  so=$(echo "$cache"/cpp/*/*/graph.so)
  size=$(stat -c %s "$so")
  case $damage in
    truncated) truncate -s $((size / 2)) "$so" ;;
    zeroed) dd if=/dev/zero of="$so" bs=4096 seek=$((size / 8192)) count=1 conv=notrunc status=none ;;
    swapped) cp "$tmp"/cache2/cpp/*/*/graph.so "$so" ;;
  esac
  out=$(run_cached "$cache" $sm 2>&1)
  status=$?
  if [[ $status -eq 0 && $out == *"is damaged (graph.so has"* && $out == *PASS* ]]; then echo "ok   cache-$damage-so"; else
    echo "FAIL cache-$damage-so: status $status"; echo "$out" | head -5; failures=$((failures + 1)); fi
done
# clear removes coil's entries and leaves a stranger's files.
echo mine > "$cache/notes.txt" && echo mine > "$cache/cpp/README"
expect cache-clear 0 "removed 1 entry and 0 failed sources from $cache" -- env COIL_CACHE_DIR="$cache" "$coil" cache clear
check cache-clear-kept-strangers test -f "$cache/notes.txt" -a -f "$cache/cpp/README"
check cache-clear-removed test -z "$(find "$cache/cpp" -name graph.so)"
# The compiler command printed after a failure, pasted into bash, runs with each path one
# argument, and nothing hidden in a path runs.
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "fake c++ 1.0"; exit 0; }\nprintf "%%s\\n" "$@" > "%s/args"\necho "no" >&2\nexit 1\n' "$tmp" > "$tmp/fake-c++"
chmod +x "$tmp/fake-c++"
quoted_cache="$tmp/it's \$(touch marker) here"
out=$(env COIL_CACHE_DIR="$quoted_cache" "$coil" run $sm/graph.py --device cpu --inputs $sm/inputs.safetensors \
  --set cpp.pch=0 --set cpp.compiler="$tmp/fake-c++" 2>&1)
command=$(grep '^command: ' <<<"$out")
rm -f "$tmp/args"
(cd "$tmp" && bash -c "${command#command: }") > /dev/null 2>&1
check cache-command-no-marker test ! -e "$tmp/marker"
kept_source_argument() {  # one argument of the compiler's is the kept source, whole
  local arg
  while IFS= read -r arg; do [[ $arg == "$quoted_cache"/failed/graph-*.cpp ]] && return 0; done < "$tmp/args"
  return 1
}
check cache-command-one-argument kept_source_argument

if [[ $failures -ne 0 ]]; then echo "$failures CLI checks failed"; exit 1; fi
echo "all CLI checks passed"
