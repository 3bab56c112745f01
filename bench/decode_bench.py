"""A decode loop with one compile: the LLaMA-style model generating token by token.

    python bench/decode_bench.py --device cuda [--steps 512] [--tiny] [--out DIR]

The model is model_zoo's LLaMA (LlamaForCausalLM from its config, random weights, eval,
bf16 on CUDA and f32 on the CPU, or --dtype) without a KV cache: each step runs the whole
sequence so far, from 1 token to --steps tokens, and appends the most likely next token. The
sequence is eager PyTorch's, decided first; every way then runs the same prefixes (teacher
forcing), so that they run the same sizes and their logits can be compared. The ways:
eager, torch.compile(dynamic=True) with Inductor, and with coil (backend="coil"), each in
a new process with empty caches. Dynamo specializes a length of 1, so a compiler sees two
graphs: one of 1 token and one of symbolic length that serves every other.

The table gives, per way: the first step (compiles included), the step at length 2 (the
graph of symbolic length compiled), the rest of the loop, the median step at a few lengths
(CUDA events on the GPU, a steady clock on the CPU, over --repeat runs of that step), how
many graphs Dynamo made and how many graphs coil compiled (and how many of those have
symbolic sizes). coil's last logits are checked against the same weights in float64 on the
CPU at the timed lengths, as the model tests check (tests/python/model_tolerance.py: an
error at most 3x eager's); the script exits 1 when they fail or a way fails.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

CHECKED = (2, 17, 128, 511)  # lengths whose logits are checked against float64, and timed


def build(device: str, dtype, tiny: bool):
    from transformers import LlamaConfig, LlamaForCausalLM

    from model_zoo import LLAMA_SIZES

    torch.manual_seed(0)
    sizes = dict(LLAMA_SIZES["tiny" if tiny else "full"], max_position_embeddings=4096)
    config = LlamaConfig(**sizes, use_cache=False, attn_implementation="sdpa")
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()


def sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def run_way(way: str, device: str, dtype, tiny: bool, tokens: list[int], repeat: int) -> dict:
    """One way through the whole loop, in this process: times, counts, checked errors."""
    from model_tolerance import FLOOR, MULTIPLIER, model_errors

    model = build(device, dtype, tiny)
    f = model
    if way != "eager":
        torch._dynamo.reset()
        f = torch.compile(model, backend="inductor" if way == "inductor" else "coil", dynamic=True)
    ids = torch.tensor([tokens], device=device)
    step_s, timed, errors = [], {}, {}
    reference = build("cpu", torch.float64, tiny) if way == "coil" else None
    # Each step's input a tensor of its own, contiguous, as a loop that appends tokens makes
    # them (a view of one long tensor would keep its strides, which Dynamo makes symbolic).
    prefix = [ids[:, :n].clone(memory_format=torch.contiguous_format) for n in range(1, len(tokens) + 1)]
    with torch.no_grad():
        for n in range(1, len(tokens) + 1):
            start = time.perf_counter()
            logits = f(prefix[n - 1]).logits[:, -1]
            sync(device)
            step_s.append(time.perf_counter() - start)
            if n in CHECKED:
                times = []
                for _ in range(repeat):
                    if device == "cuda":
                        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        begin.record()
                        f(prefix[n - 1])
                        end.record()
                        end.synchronize()
                        times.append(begin.elapsed_time(end))
                    else:
                        t = time.perf_counter()
                        f(prefix[n - 1])
                        times.append((time.perf_counter() - t) * 1e3)
                timed[n] = statistics.median(times)
                if reference is not None:
                    eager = model(prefix[n - 1]).logits[:, -1]
                    want = reference(prefix[n - 1].cpu()).logits[:, -1]
                    (ours, theirs, kind), = model_errors(logits, eager, want)
                    errors[n] = (ours, theirs, ours <= MULTIPLIER * theirs + FLOOR.get(kind, 0.0))
    from torch._dynamo.utils import counters as dynamo_counters

    out = dict(way=way, first=step_s[0], second=step_s[1] if len(step_s) > 1 else 0.0, rest=sum(step_s[2:]),
               timed=timed, errors=errors, graphs=dynamo_counters["stats"]["unique_graphs"] if way != "eager" else 0)
    if way == "coil":
        from coil import backend

        out["coil_compiles"] = f"{backend.counters['graphs_compiled']} graphs, {backend.counters['sizes_compiled']} of symbolic sizes"
        out["coil_eager"] = backend.counters["sizes_eager"] + backend.counters["graphs_eager"]
    return out


def child(a) -> int:
    dtype = getattr(torch, a.dtype_name)
    tokens = json.loads(Path(a.tokens).read_text())
    result = run_way(a.way, a.device, dtype, a.tiny, tokens, a.repeat)
    Path(a.result).write_text(json.dumps(result))
    return 0


def eager_tokens(device: str, dtype, tiny: bool, steps: int) -> list[int]:
    """The greedy sequence of eager PyTorch, from token 1."""
    model = build(device, dtype, tiny)
    ids = torch.tensor([[1]], device=device)
    with torch.no_grad():
        while ids.shape[1] < steps:
            nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], 1)
    return ids[0].tolist()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=["bf16", "f32"])
    p.add_argument("--steps", type=int, default=512)
    p.add_argument("--repeat", type=int, default=20, help="runs of each timed length")
    p.add_argument("--tiny", action="store_true", help="model_zoo's tiny LLaMA")
    p.add_argument("--ways", default="eager,inductor,coil")
    p.add_argument("--out")
    p.add_argument("--way", help=argparse.SUPPRESS)
    p.add_argument("--tokens", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--dtype-name", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.way:
        return child(a)
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}.get(a.dtype) or (
        torch.bfloat16 if a.device == "cuda" else torch.float32)
    import gpu_bench

    head, dirty = gpu_bench.commit()
    machine = torch.cuda.get_device_name() if a.device == "cuda" else platform.processor() or platform.machine()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        tokens_file = Path(work) / "tokens.json"
        tokens_file.write_text(json.dumps(eager_tokens(a.device, dtype, a.tiny, a.steps)))
        for way in a.ways.split(","):
            caches = Path(work) / f"caches_{way}"
            env = dict(os.environ, COIL_CACHE_DIR=str(caches / "coil"), TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
                       TRITON_CACHE_DIR=str(caches / "triton"))
            result = Path(work) / f"{way}.json"
            cmd = [sys.executable, __file__, "--way", way, "--device", a.device, "--tokens", str(tokens_file),
                   "--result", str(result), "--repeat", str(a.repeat), "--dtype-name", str(dtype).removeprefix("torch.")]
            if a.tiny:
                cmd.append("--tiny")
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            shutil.rmtree(caches, ignore_errors=True)
            if r.returncode != 0:
                print(f"{way} failed:\n{r.stderr[-3000:]}", file=sys.stderr)
                rows.append(dict(way=way, failed=r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "?"))
                continue
            rows.append(json.loads(result.read_text()))
    lengths = [n for n in CHECKED if n <= a.steps]
    lines = [f"A decode loop of {a.steps} steps, on {machine} ({a.device}), commit {head}"
             f"{' with uncommitted changes' if dirty else ''}, torch {torch.__version__}; "
             f"{str(dtype).removeprefix('torch.')}{', tiny LLaMA' if a.tiny else ''}; each way a new process with "
             f"empty caches; the median of {a.repeat} runs at each timed length",
             "",
             "| way | first step (s) | step at length 2 (s) | the other steps (s) | "
             + " | ".join(f"length {n} (ms)" for n in lengths) + " | Dynamo graphs | coil compiles |",
             "|---|---|---|---|" + "---|" * len(lengths) + "---|---|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['way']} | failed: {r['failed'][:120]} |")
            continue
        timed = " | ".join(f"{r['timed'][str(n)]:.2f}" for n in lengths)
        lines.append(f"| {r['way']} | {r['first']:.2f} | {r['second']:.2f} | {r['rest']:.2f} | {timed} | "
                     f"{r['graphs'] or '-'} | {r.get('coil_compiles', '-')} |")
    coil = next((r for r in rows if r["way"] == "coil" and "failed" not in r), None)
    if coil:
        worst = [f"length {n}: {ours:.3g} (eager {theirs:.3g})" for n, (ours, theirs, _) in coil["errors"].items()]
        lines += ["", "coil's largest error against float64 at the checked lengths: " + "; ".join(worst)]
        if coil.get("coil_eager"):
            lines.append(f"coil left {coil['coil_eager']} graph(s) or size(s) to eager PyTorch")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "decode.md").write_text(text)
    failed = [r for r in rows if "failed" in r]
    bad = coil and not all(ok for _, _, ok in coil["errors"].values())
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
