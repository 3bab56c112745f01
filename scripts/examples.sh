#!/usr/bin/env bash
# coil's main job, from a fresh machine: set up, build, then for every bundled example
# graph: check it (with its input and expected-output tensors), compile it into fused
# kernels (dumps under build/examples/<name>, with --explain printed), and run the
# compiled kernels against PyTorch's outputs.
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
  if "$coil" check "$dir/graph.py" --inputs "$dir/inputs.safetensors" --expect "$dir/expected.safetensors" &&
     "$coil" compile "$dir/graph.py" --out "build/examples/$name" --explain &&
     "$coil" run "$dir/graph.py" --inputs "$dir/inputs.safetensors" --expect "$dir/expected.safetensors"; then
    :
  else
    status=1
  fi
done
echo
if [[ $status -eq 0 ]]; then echo "every example checked, compiled and matched"; else echo "some examples failed"; fi
exit $status
