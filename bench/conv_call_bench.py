#!/usr/bin/env python3
"""Host time of one convolution call through coil on the GPU.

Each case is a graph of one bf16 convolution at batch 1 (small enough that the GPU's work
takes a few microseconds), in NCHW and in channels-last, run with `coil run --device cuda
--bench N` plainly and replayed from a CUDA graph. The plain median minus the replayed one
is the host's time per call: the library's planning, descriptors, launches.

    python3 bench/conv_call_bench.py [--coil build/coil] [--iters 300]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python" / "coil_triton"))
import torch  # noqa: E402
import run_plan  # noqa: E402  (its safetensors writer)

CASES = [(64, 56, 3), (256, 14, 1)]  # channels, height = width, kernel size


def annotation(t: torch.Tensor) -> str:
    return f"bf16{list(t.shape)}{list(t.stride())}cuda:0"


def median_us(coil: str, folder: Path, iters: int, graphs: bool) -> float:
    r = subprocess.run([coil, "run", str(folder / "graph.py"), "--inputs", str(folder / "inputs.safetensors"),
                        "--device", "cuda", "--bench", str(iters)], capture_output=True, text=True,
                       env={**os.environ, "COIL_TRITON_CUDAGRAPHS": "1" if graphs else "0"})
    m = re.search(r"median ([0-9.e+-]+) us per call", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"coil run failed in {folder}:\n{r.stdout}{r.stderr}")
    return float(m.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--coil", default=str(REPO / "build" / "coil"))
    p.add_argument("--iters", type=int, default=300)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="coil_conv_call_"))
    print("| layout | channels | HxW | kernel | plain (us) | CUDA graph (us) | host per call (us) |")
    print("|---|---|---|---|---|---|---|")
    for layout in ("NCHW", "NHWC"):
        for c, hw, k in CASES:
            fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
            x = torch.randn(1, c, hw, hw, dtype=torch.bfloat16).contiguous(memory_format=fmt)
            w = torch.randn(c, c, k, k, dtype=torch.bfloat16).contiguous(memory_format=fmt)
            y = torch.empty(1, c, hw, hw, dtype=torch.bfloat16).contiguous(memory_format=fmt)
            folder = work / f"{layout}_{c}_{k}"
            folder.mkdir()
            (folder / "graph.py").write_text(
                "class GraphModule(torch.nn.Module):\n"
                f'    def forward(self, x: "{annotation(x)}", w: "{annotation(w)}"):\n'
                f'        c: "{annotation(y)}" = torch.ops.aten.convolution.default('
                f"x, w, None, [1, 1], [{k // 2}, {k // 2}], [1, 1], False, [0, 0], 1)\n"
                "        return (c,)\n")
            run_plan.write_safetensors(str(folder / "inputs.safetensors"), {"x": x, "w": w})
            plain, graphs = median_us(a.coil, folder, a.iters, False), median_us(a.coil, folder, a.iters, True)
            print(f"| {layout} | {c} | {hw}x{hw} | {k}x{k} | {plain:.1f} | {graphs:.1f} | {plain - graphs:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
