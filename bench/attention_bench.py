#!/usr/bin/env python3
"""coil's fused attention kernels against PyTorch's fused attention, on the GPU or the CPU.

Each case is a graph of one scaled_dot_product_attention ([b, h, s, d], causal or not; bf16
on the GPU, f32 on the CPU unless --dtype says otherwise), run with `coil run --device D
--bench N` (on the GPU autotuned, under CUDA graphs, so that the time is the kernel's, not
the host's), beside PyTorch's fused backends on the same inputs (GPU: flash and cuDNN; CPU:
flash and math), timed with CUDA events or a steady clock (medians). TFLOP/s count
4*b*h*s^2*d FLOPs, halved for causal. coil's output is checked against PyTorch's math
backend in float32 before it is timed.

With --backward, attention for training instead: a graph of the fused op with its logsumexp
read and its backward op (the graph a training step's forward and backward hold: the
memory-efficient op on the GPU, the CPU's flash op on the CPU), which coil runs as its fused
kernels (output, logsumexp, D = rowsum(dO * out), and the gradients of query, key and
value), against PyTorch's forward and backward through autograd with each fused backend;
FLOPs 3.5x the forward's (its two products and the backward's five). coil's gradients are
checked against the math backend's in float32 first.

    python3 bench/attention_bench.py [--device cuda|cpu] [--dtype bf16|f32] [--coil build/coil]
                                     [--iters 100] [--quick] [--backward]
"""
import argparse
import os
import warnings
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
    """The fused op a training graph holds on the inputs' device, with its logsumexp, and its
    backward op for gradient dy: the memory-efficient op on CUDA, the flash op on the CPU."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, dy):
        A = torch.ops.aten
        if q.device.type == "cpu":
            out, lse = A._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, self.causal)
            grads = A._scaled_dot_product_flash_attention_for_cpu_backward.default(dy, q, k, v, out, lse, 0.0, self.causal)
            return out, grads[0], grads[1], grads[2]
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


def coil_ms(coil: str, folder: Path, iters: int, device: str) -> float:
    saved = folder / "out.safetensors"
    cmd = [coil, "run", str(folder / "graph.py"), "--inputs", str(folder / "inputs.safetensors"), "--device", device,
           "--bench", str(iters), "--save", str(saved)]
    env = dict(os.environ)
    if device == "cuda":
        cmd += ["--set", "triton.autotune=1"]
        env["COIL_TRITON_CUDAGRAPHS"] = "1"
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"median ([0-9.e+-]+) us per call", r.stdout)
    if r.returncode != 0 or not m:
        sys.exit(f"coil run failed in {folder}:\n{r.stdout}{r.stderr}")
    return float(m.group(1)) / 1e3


# PyTorch's fused backends timed beside coil, by device.
BACKENDS = {
    "cuda": (("flash", SDPBackend.FLASH_ATTENTION), ("cuDNN", SDPBackend.CUDNN_ATTENTION)),
    "cpu": (("flash", SDPBackend.FLASH_ATTENTION), ("math", SDPBackend.MATH)),
}
TRAINING_BACKENDS = {
    "cuda": (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
             ("cuDNN", SDPBackend.CUDNN_ATTENTION)),
    "cpu": BACKENDS["cpu"],
}
CASES = {
    ("cuda", False): [(8, 12, 2048, d, causal) for d in (64, 128) for causal in (False, True)],
    ("cuda", True): [(8, 12, 512, 64, True), (8, 12, 2048, 64, True), (8, 12, 2048, 128, False)],
    ("cpu", False): [(2, 12, 512, 64, False), (2, 12, 512, 64, True), (1, 12, 2048, 64, True)],
    ("cpu", True): [(2, 12, 512, 64, True), (1, 12, 1024, 64, True)],
}


def main() -> int:
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's, on every case
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--coil", default=str(REPO / "build" / "coil"))
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--dtype", choices=("bf16", "f32"), help="default: bf16 on the GPU, f32 on the CPU")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--quick", action="store_true", help="one shape only")
    p.add_argument("--backward", action="store_true", help="forward and backward, as a training step runs them")
    a = p.parse_args()
    device, training = a.device, a.backward
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype or ("bf16" if device == "cuda" else "f32")]
    backends = (TRAINING_BACKENDS if training else BACKENDS)[device]
    cases = CASES[(device, training)][:1 if a.quick else None]
    work = Path(tempfile.mkdtemp(prefix="coil_attention_"))
    machine = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"{machine}, torch {torch.__version__}, {str(dtype).split('.')[-1]}{', forward and backward' if training else ''}")
    names = [name for name, _ in backends]
    unit, per = ("TFLOP/s", 1e12) if device == "cuda" else ("GFLOP/s", 1e9)
    print("| b | h | s | d | causal | coil (ms) | " + " | ".join(f"{n} (ms)" for n in names) + f" | coil {unit} | coil / best |")
    print("|---" * (8 + len(names)) + "|")
    for b, h, s, d, causal in cases:
        torch.manual_seed(0)
        inputs = [torch.randn(b, h, s, d, device=device, dtype=dtype) for _ in range(4 if training else 3)]
        folder = work / f"b{b}_h{h}_s{s}_d{d}_{'causal' if causal else 'full'}"
        folder.mkdir()
        export((AttentionTraining if training else Attention)(causal), tuple(inputs), folder)
        ours_ms = coil_ms(a.coil, folder, a.iters, device)
        check(run_plan.read_safetensors(str(folder / "out.safetensors")), inputs, causal, folder.name)
        q, k, v = inputs[:3]
        times = {}
        for name, backend in backends:
            qg, kg, vg = (t.detach().clone().requires_grad_(training) for t in (q, k, v))

            def call():
                with sdpa_kernel([backend]):
                    out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                    if training:
                        out.backward(inputs[3])
            try:
                times[name] = median_ms(call, a.iters, device)
            except RuntimeError:
                times[name] = float("nan")
        flops = (3.5 if training else 1) * 4 * b * h * s * s * d / (2 if causal else 1)
        best = min([t for t in times.values() if t == t] or [float("nan")])
        print(f"| {b} | {h} | {s} | {d} | {causal} | {ours_ms:.3f} | " + " | ".join(f"{times[n]:.3f}" for n in names) +
              f" | {flops / (ours_ms * 1e-3) / per:.0f} | {ours_ms / best:.2f}x |")
    return 0


def check(got: dict, inputs: list, causal: bool, case_name: str) -> None:
    """coil's output (and with dO, its gradients) against PyTorch's math backend in float32:
    the largest error within 3% of the largest value (2e-2 absolute for the output alone)."""
    qf, kf, vf = (t.detach().float().requires_grad_(len(inputs) == 4) for t in inputs[:3])
    with sdpa_kernel([SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal)
    if len(inputs) == 3:
        err = (got["out0"].float() - out.detach().cpu()).abs().max().item()
        if err > 2e-2:
            sys.exit(f"coil's attention is wrong on {case_name}: max abs error {err:.3g}")
        return
    out.backward(inputs[3].float())
    for name, want in (("out1", qf.grad), ("out2", kf.grad), ("out3", vf.grad)):
        err = (got[name].float() - want.cpu()).abs().max().item() / max(want.abs().max().item(), 1e-6)
        if err > 3e-2:
            sys.exit(f"coil's attention gradient {name} is wrong on {case_name}: max error {err:.3g} of the largest")


if __name__ == "__main__":
    sys.exit(main())
