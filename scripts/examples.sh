#!/usr/bin/env bash
# coil's main job, from a fresh machine: set up, build, then check every bundled
# example graph (and its input and expected-output tensors) and summarize it.
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
  if "$coil" check "$dir/graph.py" --inputs "$dir/inputs.safetensors" --expect "$dir/expected.safetensors"; then
    "$coil" info "$dir/graph.py" | tail -n +2
  else
    status=1
  fi
done
echo
if [[ $status -eq 0 ]]; then echo "every example checked"; else echo "some examples failed"; fi
exit $status
