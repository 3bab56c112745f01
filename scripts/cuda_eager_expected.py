"""Writes a fixture's expected outputs as CUDA eager computes them, from the fixture's own
inputs, for the cases whose eager results differ between devices (conversions of NaN,
infinities and out-of-range floats to integers). Kept in the fixture as
expected_cuda.safetensors: the GPU check and Triton's interpreter test compare coil's Triton
kernels with these instead of the CPU eager outputs.

    python3 scripts/cuda_eager_expected.py FIXTURE_DIR OUT.safetensors
"""
import pathlib
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import capture_fixtures  # noqa: E402  (the fixtures' definitions)


def main(fixture: str, out: str) -> int:
    case = capture_fixtures.CASES[pathlib.Path(fixture).name]
    module, _ = case.build("cuda")
    saved = load_file(str(pathlib.Path(fixture) / "inputs.safetensors"))
    inputs = [saved[f"a_{i}"].cuda() for i in range(len(saved))]
    outputs = module(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    save_file({f"out{i}": o.cpu().contiguous() for i, o in enumerate(outputs)}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
