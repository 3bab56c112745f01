#!/usr/bin/env bash
# coil's main job, from a fresh machine: set up, build, then for every bundled example
# graph: check it (with its input and expected-output tensors), compile it into fused
# C++ kernels with an empty cache and again from the cache (dumps, graph.cpp and
# graph.so under build/examples/<name>, --explain printed), and run the compiled graph
# on the CPU against PyTorch's outputs, with its median time per call.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

coil_build "$COIL_ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
coil="$COIL_ROOT/build/coil"

cd "$COIL_ROOT"
status=0
for dir in examples/*/; do
  dir=${dir%/}
  echo
  echo "== $dir"
  name=$(basename "$dir")
  cold_cache=$(mktemp -d)
  if "$coil" check "$dir/graph.py" --inputs "$dir/inputs.safetensors" --expect "$dir/expected.safetensors" &&
     COIL_CACHE_DIR=$cold_cache "$coil" compile "$dir/graph.py" --out "build/examples/$name" --explain &&
     COIL_CACHE_DIR=$cold_cache "$coil" compile "$dir/graph.py" --out "build/examples/$name" &&
     COIL_CACHE_DIR=$cold_cache "$coil" run "$dir/graph.py" --device cpu --bench 50 \
       --inputs "$dir/inputs.safetensors" --expect "$dir/expected.safetensors"; then
    :
  else
    status=1
  fi
  rm -rf "$cold_cache"
done
echo
if [[ $status -eq 0 ]]; then echo "every example checked, compiled and matched"; else echo "some examples failed"; fi
exit $status
