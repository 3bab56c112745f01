"""Training steps: coil against eager PyTorch and Inductor, in one run on one machine
(`python bench/models_bench.py --train ...` runs this).

A step is the forward with its loss, the backward, AdamW's update and zero_grad, of a model
of bench/model_zoo.py's TRAINING at full size (GPT-2 small and BERT-base at batch 8, seq 512;
ResNet-50 at batch 64; --tiny: the tests' sizes): f32 master weights under bf16 autocast on CUDA, f32 on the CPU.
Eager, Inductor (torch.compile, default mode) and coil (torch.compile(backend="coil")) each
train a copy of the same weights in this process (on the CPU side by side, taking turns in
rounds); the optimizer runs eagerly for all three, or (--compile-optimizer) its step is
compiled by the step's backend. Every time is the median of N steps after
warm-up ones (CUDA events on the GPU, a steady clock on the CPU: the median of the rounds'
medians). Peak memory (CUDA): the most PyTorch's allocator held during
a step, weights, gradients and optimizer state included. The first step's loss of each is
printed beside eager's. Compile times (unless --no-compile-times): the first step, in a new
process with empty caches (cold) and with the caches it filled (warm).

Run alone (`python bench/training_bench.py [models]`), it prints the bytes the forward saves
for the backward under AOTAutograd's default partition and under the min-cut one the backend
uses.
"""
from __future__ import annotations

import contextlib
import gc
import statistics
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from model_zoo import build_training  # noqa: E402

DEFAULT_MODELS = "gpt2,bert,resnet50"
BACKENDS = (("eager", None), ("inductor", "inductor"), ("coil", "coil"))


def autocast(device: str):
    return torch.autocast(device, dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()


def make_step(model, args, device: str, optimizer, backend: str | None = None):
    """A training step; with `backend`, optimizer.step() compiled by it too."""
    update = optimizer.step
    if backend:
        @torch.compile(backend=backend)
        def update():
            optimizer.step()

    def step():
        with autocast(device):
            loss = model(*args)
        loss.backward()
        update()
        optimizer.zero_grad(set_to_none=True)
        return loss
    return step


ROUNDS = 5  # on the CPU, each backend's steps are timed in this many rounds, taking turns


def bench_training(name: str, device: str, iters: int, median_ms, tiny: bool = False,
                   compile_optimizer: bool = False) -> dict:
    """One row: each backend's median step (ms), peak memory (MB), first loss; or why not.
    On CUDA each backend trains alone (its peak memory is its own); on the CPU the three
    train side by side and take turns, ROUNDS rounds of iters / ROUNDS steps each, so that a
    machine whose speed drifts (a shared 2-vCPU one) moves all three alike."""
    row: dict = {"model": name}
    steps = {}
    # A new Dynamo state per model: TrainStep.forward is one code object for every model, and
    # Dynamo would make the sizes it saw change symbolic.
    torch._dynamo.reset()
    for key, backend in BACKENDS:
        torch.manual_seed(0)
        try:
            model, args = build_training(name, device, torch.float32, tiny)
            if device == "cuda":  # alone; on the CPU the others stay compiled beside it
                torch._dynamo.reset()
            run = torch.compile(model, backend=backend) if backend else model
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
            step = make_step(run, args, device, optimizer, backend if compile_optimizer else None)
            if device == "cuda":
                outside = Outside()
            if key == "coil":
                from coil import backend as coil_backend
                coil_backend.counters.clear()
            row[key + "_loss"] = float(step())
            if device == "cuda":
                row[key] = median_ms(step, iters, device)
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                step()
                torch.cuda.synchronize()
                row[key + "_mb"] = torch.cuda.max_memory_allocated() / 2**20
                row[key + "_phases"] = phases(run, args, device)
                row[key + "_outside_mb"] = outside.mb()
            else:
                steps[key] = step
            if key == "coil":
                c = coil_backend.counters
                if c["graphs_eager"] + c["parts_eager"] + c["ops_eager"]:
                    row["coil_why"] = (f"{c['graphs']} graph(s), {c['graphs_eager']} in eager whole, "
                                       f"{c['parts_eager']} part(s) and {c['ops_eager']} op(s) in eager")
        except Exception as e:  # noqa: BLE001  (the row says why)
            row[key + "_why"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        finally:
            if device == "cuda":
                model = run = optimizer = step = None
                gc.collect()
                torch.cuda.empty_cache()
    samples: dict = {key: [] for key in steps}
    for _ in range(ROUNDS):
        for key, step in steps.items():
            samples[key].append(median_ms(step, max(iters // ROUNDS, 1), device))
    for key, times in samples.items():
        row[key] = statistics.median(times)
    return row


class Outside:
    """Device memory held outside PyTorch's allocator (a compiler's own arenas and buffers,
    loaded kernels, the libraries' workspaces): the fall in free memory (cuMemGetInfo) from
    now, less the growth of what PyTorch's allocator reserves."""

    def __init__(self):
        torch.cuda.synchronize()
        self.free, self.reserved = torch.cuda.mem_get_info()[0], torch.cuda.memory_reserved()

    def mb(self) -> float:
        torch.cuda.synchronize()
        used = self.free - torch.cuda.mem_get_info()[0]
        return (used - (torch.cuda.memory_reserved() - self.reserved)) / 2**20


def phases(run, args, device: str) -> dict:
    """One more step's forward and backward apart (CUDA), in MB of PyTorch's allocator above
    what it held before the step: what the forward leaves for the backward (its saved tensors
    and the loss), the peak within the forward, the peak within the backward."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    with autocast(device):
        loss = run(*args)
    torch.cuda.synchronize()
    saved, forward_peak = torch.cuda.memory_allocated() - base, torch.cuda.max_memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    backward_peak = torch.cuda.max_memory_allocated() - base
    for p in run.parameters():
        p.grad = None
    return {"saved": saved / 2**20, "forward_peak": forward_peak / 2**20, "backward_peak": backward_peak / 2**20}


# The first training step, timed in a process of its own (compiles included): the script
# models_bench.py's process_seconds runs, with the bench folder, model, device, "tiny" or
# "full", "compiled" or "eager" (the optimizer step) and the backend as its arguments.
FIRST_STEP = """
import json, sys, time, torch
sys.path.insert(0, sys.argv[1])
from model_zoo import build_training
from training_bench import make_step
name, device, tiny, backend = sys.argv[2], sys.argv[3], sys.argv[4] == "tiny", sys.argv[6]
compile_optimizer = sys.argv[5] == "compiled"
torch.manual_seed(0)
model, args = build_training(name, device, torch.float32, tiny)
step = make_step(torch.compile(model, backend=backend), args, device, torch.optim.AdamW(model.parameters(), lr=1e-5),
                 backend if compile_optimizer else None)
start = time.perf_counter()
step()
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def _cell(v, fmt):
    return fmt.format(v) if v is not None else "—"


def table(rows: list[dict], device: str, compile_table) -> str:
    lines = ["| model | eager (ms) | Inductor (ms) | coil (ms) | coil / Inductor | first loss eager / Inductor / coil |",
             "|---|---|---|---|---|---|"]
    notes = []
    for r in rows:
        ratio = f"{r['inductor'] / r['coil']:.2f}x" if r.get("coil") and r.get("inductor") else "—"
        losses = " / ".join(_cell(r.get(k + "_loss"), "{:.4f}") for k, _ in BACKENDS)
        lines.append(f"| {r['model']} | " + " | ".join(_cell(r.get(k), "{:.2f}") for k, _ in BACKENDS) +
                     f" | {ratio} | {losses} |")
        notes += [f"- {r['model']}, {k}: {r[k + '_why']}" for k, _ in BACKENDS if r.get(k + "_why")]
    text = "\n".join(lines + ([""] + notes if notes else [])) + "\n"
    if device == "cuda":
        text += ("\nPeak device memory during a step (weights, gradients and AdamW's state included)\n\n"
                 "| model | eager (MB) | Inductor (MB) | coil (MB) | coil / Inductor |\n|---|---|---|---|---|\n")
        for r in rows:
            ratio = f"{r['coil_mb'] / r['inductor_mb']:.2f}x" if r.get("coil_mb") and r.get("inductor_mb") else "—"
            text += f"| {r['model']} | " + " | ".join(_cell(r.get(k + "_mb"), "{:.0f}") for k, _ in BACKENDS) + \
                    f" | {ratio} |\n"
        text += ("\nWhere it goes (MB): what the forward leaves for the backward (saved tensors, the loss), the "
                 "peaks within the forward and within the backward (PyTorch's allocator, above what it held before "
                 "the step), and what each holds outside PyTorch's allocator (its own arenas, loaded kernels, "
                 "libraries' workspaces)\n\n"
                 "| model | backend | saved | forward peak | backward peak | outside the allocator |\n"
                 "|---|---|---|---|---|---|\n")
        for r in rows:
            for k, _ in BACKENDS:
                ph = r.get(k + "_phases")
                if ph:
                    text += (f"| {r['model']} | {k} | {ph['saved']:.0f} | {ph['forward_peak']:.0f} | "
                             f"{ph['backward_peak']:.0f} | {_cell(r.get(k + '_outside_mb'), '{:.0f}')} |\n")
    if any("compile" in r for r in rows):
        text += ("\nThe first step through torch.compile (forward and backward compiled), each in a new process: "
                 "cold with empty coil, Inductor and Triton caches, warm with those the cold run filled\n\n" +
                 compile_table(rows))
    return text


def saved_kib(name: str, partition) -> float:
    """KiB the forward saves for the backward (the backward graph's inputs but its
    tangents) of model `name` at tiny sizes on the CPU, AOTAutograd partitioning with
    `partition`, coil's decompositions."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from coil import backend

    saved = []

    def forward(gm, inputs):
        return make_boxed_func(gm.forward)

    def backward(gm, inputs):
        vals = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder" and not n.name.startswith("tangents")]
        saved.append(sum(v.numel() * v.element_size() for v in vals if isinstance(v, torch.Tensor)))
        return make_boxed_func(gm.forward)

    def compiler(gm, example_inputs):
        return aot_autograd(fw_compiler=forward, bw_compiler=backward, decompositions=backend.decompositions(),
                            partition_fn=partition)(gm, example_inputs)

    torch.manual_seed(0)
    model, args = build_training(name, "cpu", torch.float32, tiny=True)
    torch._dynamo.reset()
    torch.compile(model, backend=compiler)(*args).backward()
    return sum(saved) / 1024


if __name__ == "__main__":
    # python bench/training_bench.py gpt2,bert,...: saved tensors, AOTAutograd's default
    # partition against the min-cut one the backend uses.
    from functorch.compile import default_partition, min_cut_rematerialization_partition

    print("| model | default partition (KiB) | min-cut (KiB) | default / min-cut |\n|---|---|---|---|")
    for model_name in (sys.argv[1] if len(sys.argv) > 1 else "gpt2,bert,llama,resnet18,vit").split(","):
        d, m = saved_kib(model_name, default_partition), saved_kib(model_name, min_cut_rematerialization_partition)
        print(f"| {model_name} | {d:.0f} | {m:.0f} | {d / m:.2f}x |")
