#!/usr/bin/env python3
"""coil's fused attention kernel against PyTorch's fused attention on the GPU.

Each case is a graph of one scaled_dot_product_attention (bf16, [b, h, s, d], causal or not),
run with `coil run --device cuda --bench N` (autotuned) under CUDA graphs (so that the time is the
kernel's, not the host's), beside PyTorch's SDPBackend.FLASH_ATTENTION and
SDPBackend.CUDNN_ATTENTION on the same inputs, timed with CUDA events (medians). TFLOP/s
count 4*b*h*s^2*d FLOPs, halved for causal. coil's output is checked against PyTorch's math
backend in float32 before it is timed.

With --backward, attention for training instead: a graph of the memory-efficient op with its
logsumexp read and its backward op (the graph a training step's forward and backward hold),
which coil runs as its fused kernels (output, logsumexp, D = rowsum(dO * out), and the
gradients of query, key and value), against PyTorch's forward and backward through autograd
with each fused backend; FLOPs 3.5x the forward's (its two products and the backward's five).
coil's gradients are checked against the math backend's in float32 first.

    python3 bench/attention_bench.py [--coil build/coil] [--iters 100] [--quick] [--backward]
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


class AttentionTraining(torch.nn.Module):
    """The memory-efficient op with its logsumexp, and its backward op for gradient dy."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, dy):
        A = torch.ops.aten
        out, lse, seed, offset = A._scaled_dot_product_efficient_attention.default(q, k, v, None, True, 0.0, self.causal)
        grads = A._scaled_dot_product_efficient_attention_backward.default(
            dy, q, k, v, None, out, lse, seed, offset, 0.0, [True, True, True, False], self.causal)
        return out, grads[0], grads[1], grads[2]


def export(module: torch.nn.Module, inputs: tuple, folder: Path) -> None:
    """`module` on `inputs` as a graph and its inputs in `folder`, as the fixtures write them."""
    ep = capture.export_program(module, inputs, "empty")
    (folder / "graph.py").write_text(capture.graph_text(ep))
    capture.write_tensors(folder / "inputs.safetensors",
                          {name: capture.host(t) for name, t in capture.placeholder_tensors(ep, inputs).items()})


def case(work: Path, b: int, h: int, s: int, d: int, causal: bool, count: int) -> tuple[list, Path]:
    """`count` bf16 tensors [b, h, s, d] on the GPU drawn from seed 0, and a new folder for the case."""
    torch.manual_seed(0)
    tensors = [torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(count)]
    folder = work / f"b{b}_h{h}_s{s}_d{d}_{'causal' if causal else 'full'}"
    folder.mkdir()
    return tensors, folder


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
    p.add_argument("--backward", action="store_true", help="forward and backward, as a training step runs them")
    a = p.parse_args()
    if a.backward:
        return backward(a)
    work = Path(tempfile.mkdtemp(prefix="coil_attention_"))
    cases = [(8, 12, 2048, d, causal) for d in (64, 128) for causal in (False, True)]
    if a.quick:
        cases = cases[:1]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16")
    print("| b | h | s | d | causal | coil (ms) | flash (ms) | cuDNN (ms) | coil TFLOP/s | flash | cuDNN | coil / best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for b, h, s, d, causal in cases:
        (q, k, v), folder = case(work, b, h, s, d, causal, 3)
        export(Attention(causal), (q, k, v), folder)
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


def backward(a) -> int:
    """--backward: the training graph's attention, coil against PyTorch's autograd."""
    work = Path(tempfile.mkdtemp(prefix="coil_attention_backward_"))
    cases = [(8, 12, 512, 64, True), (8, 12, 2048, 64, True), (8, 12, 2048, 128, False)]
    if a.quick:
        cases = cases[:1]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16, forward and backward")
    print("| b | h | s | d | causal | coil (ms) | flash (ms) | efficient (ms) | cuDNN (ms) | coil TFLOP/s | coil / best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for b, h, s, d, causal in cases:
        (q, k, v, dy), folder = case(work, b, h, s, d, causal, 4)
        export(AttentionTraining(causal), (q, k, v, dy), folder)
        ours_ms = coil_ms(a.coil, folder, a.iters)
        got = run_plan.read_safetensors(str(folder / "out.safetensors"))
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        with sdpa_kernel([SDPBackend.MATH]):
            F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal).backward(dy.float())
        for name, want in (("out1", qf.grad), ("out2", kf.grad), ("out3", vf.grad)):
            err = (got[name].float() - want.cpu()).abs().max().item() / max(want.abs().max().item(), 1e-6)
            if err > 3e-2:
                sys.exit(f"coil's attention gradient {name} is wrong on {folder.name}: max error {err:.3g} of the largest")
        times = {}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

            def step():
                with sdpa_kernel([backend]):
                    F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal).backward(dy)
            try:
                times[name] = median_ms(step, a.iters, "cuda")
            except RuntimeError:
                times[name] = float("nan")
        flops = 3.5 * 4 * b * h * s * s * d / (2 if causal else 1)
        best = min(t for t in times.values() if t == t)
        print(f"| {b} | {h} | {s} | {d} | {causal} | {ours_ms:.3f} | {times['flash']:.3f} | {times['efficient']:.3f} | "
              f"{times['cudnn']:.3f} | {flops / (ours_ms * 1e-3) / 1e12:.0f} | {ours_ms / best:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
