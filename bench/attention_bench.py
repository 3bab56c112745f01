#!/usr/bin/env python3
"""coil's fused attention kernel against PyTorch's fused attention on the GPU.

Each case is a graph of one scaled_dot_product_attention (bf16, [b, h, s, d], causal or not),
run with `coil run --device cuda --bench N` (autotuned) under CUDA graphs (so that the time is the
kernel's, not the host's), beside PyTorch's SDPBackend.FLASH_ATTENTION and
SDPBackend.CUDNN_ATTENTION on the same inputs, timed with CUDA events (medians). TFLOP/s
count 4*b*h*s^2*d FLOPs, halved for causal. coil's output is checked against PyTorch's math
backend in float32 before it is timed.

    python3 bench/attention_bench.py [--coil build/coil] [--iters 100] [--quick]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import capture_fixtures as capture  # noqa: E402  (export and tensor files as the fixtures write them)
sys.path.insert(0, str(REPO / "python" / "coil_triton"))
import run_plan  # noqa: E402  (its safetensors reader)
sys.path.insert(0, str(REPO / "bench"))
from models_bench import median_ms  # noqa: E402  (CUDA-event medians, as the model benchmark times)


class Attention(torch.nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


def coil_ms(coil: str, folder: Path, iters: int) -> float:
    saved = folder / "out.safetensors"
    r = subprocess.run([coil, "run", str(folder / "graph.py"), "--inputs", str(folder / "inputs.safetensors"),
                        "--device", "cuda", "--bench", str(iters), "--save", str(saved), "--set", "triton.autotune=1"],
                       capture_output=True, text=True, env={**os.environ, "COIL_TRITON_CUDAGRAPHS": "1"})
    m = re.search(r"median ([0-9.e+-]+) us per call", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"coil run failed in {folder}:\n{r.stdout}{r.stderr}")
    return float(m.group(1)) / 1e3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--coil", default=str(REPO / "build" / "coil"))
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--quick", action="store_true", help="one shape only")
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="coil_attention_"))
    cases = [(8, 12, 2048, d, causal) for d in (64, 128) for causal in (False, True)]
    if a.quick:
        cases = cases[:1]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16")
    print("| b | h | s | d | causal | coil (ms) | flash (ms) | cuDNN (ms) | coil TFLOP/s | flash | cuDNN | coil / best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for b, h, s, d, causal in cases:
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        folder = work / f"b{b}_h{h}_s{s}_d{d}_{'causal' if causal else 'full'}"
        folder.mkdir()
        ep = capture.export_program(Attention(causal), (q, k, v), "empty")
        (folder / "graph.py").write_text(capture.graph_text(ep))
        capture.write_tensors(folder / "inputs.safetensors",
                              {name: capture.host(t) for name, t in capture.placeholder_tensors(ep, (q, k, v)).items()})
        ours_ms = coil_ms(a.coil, folder, a.iters)
        got = run_plan.read_safetensors(str(folder / "out.safetensors"))["out0"].float()
        with sdpa_kernel([SDPBackend.MATH]):
            want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal).cpu()
        err = (got - want).abs().max().item()
        if err > 2e-2:
            sys.exit(f"coil's attention is wrong on {folder.name}: max abs error {err:.3g}")
        times = {}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel([backend]):
                    times[name] = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), a.iters, "cuda")
            except RuntimeError:
                times[name] = float("nan")
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        tf = lambda ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
        best = min(t for t in times.values() if t == t)
        print(f"| {b} | {h} | {s} | {d} | {causal} | {ours_ms:.3f} | {times['flash']:.3f} | {times['cudnn']:.3f} | "
              f"{tf(ours_ms):.0f} | {tf(times['flash']):.0f} | {tf(times['cudnn']):.0f} | {ours_ms / best:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
