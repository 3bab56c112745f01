"""The price of symbolic sizes on a whole model: one compile of symbolic length against a
compile per length, in one process, on the same GPU.

    python bench/shape_gap_bench.py [--device cuda|cpu] [--tiny] [--lengths 2,17,128] [--cudagraphs] [--calls 50]

The model is model_zoo's LLaMA (LlamaForCausalLM from its config, random weights, eval; bf16
on CUDA, f32 on the CPU; --tiny for model_zoo's tiny sizes) without a KV cache, as
bench/decode_bench.py runs it. Ways, each a fresh torch.compile:
`static`, coil with dynamic=False compiled again at each length; `dynamic`, coil with
dynamic=True compiled once (at length 5) and called at every length; `inductor`, Inductor
with dynamic=True (without --cudagraphs only: it takes mode="reduce-overhead" for that).
--cudagraphs turns on coil's triton.cudagraphs, which replays a call's launches as one CUDA
graph: the figures are then the GPU's time, where without it they include the host's
launches. Per length and way: the median of --calls calls (between CUDA events on the GPU, by
a steady clock on the CPU), the host's time per call (calls queued back to back), and the largest difference of the dynamic
graph's logits from the static one's. Exits 1 when a way fails or the two coil graphs'
logits differ by more than 5% of the largest logit: a wrong graph, not bf16 rounding (the
model tests check each against float64: tests/python/test_models.py).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch._dynamo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "python"))


def sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, x, calls: int, device: str) -> tuple[float, float]:
    """(median ms per call, host ms per call with calls queued back to back)."""
    for _ in range(5):
        fn(x)
    sync(device)
    times = []
    for _ in range(calls):
        if device == "cuda":
            start, end = torch.cuda.Event(True), torch.cuda.Event(True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - t) * 1e3)
    sync(device)
    t = time.perf_counter()
    for _ in range(calls):
        fn(x)
    sync(device)
    host = (time.perf_counter() - t) / calls * 1e3
    return statistics.median(times), host


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--tiny", action="store_true", help="model_zoo's tiny LLaMA")
    p.add_argument("--lengths", default="2,17,128")
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--cudagraphs", action="store_true", help="coil's triton.cudagraphs on (Inductor left out)")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device")
    if a.cudagraphs and a.device != "cuda":
        sys.exit("--cudagraphs is for --device cuda")
    from transformers import LlamaConfig, LlamaForCausalLM

    from model_zoo import LLAMA_SIZES

    torch.manual_seed(0)
    config = LlamaConfig(**dict(LLAMA_SIZES["tiny" if a.tiny else "full"], max_position_embeddings=4096),
                         use_cache=False, attn_implementation="sdpa")
    dtype = torch.bfloat16 if a.device == "cuda" else torch.float32
    model = LlamaForCausalLM(config).to(device=a.device, dtype=dtype).eval()
    lengths = [int(n) for n in a.lengths.split(",")]
    inputs = {n: torch.randint(0, config.vocab_size, (1, n), device=a.device) for n in lengths + [5]}
    options = {"triton.cudagraphs": True} if a.cudagraphs else {}
    ways = ("static", "dynamic") if a.cudagraphs else ("static", "dynamic", "inductor")
    where = torch.cuda.get_device_name() if a.device == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    print(f"{where}; LLaMA {'tiny' if a.tiny else 'full'} {dtype}; torch {torch.__version__}; coil "
          f"triton.cudagraphs {'on' if a.cudagraphs else 'off'}; medians of {a.calls} calls")
    print("| length | way | median (ms) | host per call (ms) | coil graphs compiled so far | max abs difference from static |")
    print("|---|---|---|---|---|---|")
    logits, failed = {}, False
    with torch.no_grad():
        for way in ways:
            torch._dynamo.reset()
            if way == "inductor":
                compiled = torch.compile(model, dynamic=True)
            else:
                compiled = torch.compile(model, backend="coil", dynamic=way == "dynamic", options=options)
            from coil.backend import counters
            before = counters["graphs_compiled"]
            if way == "dynamic":
                compiled(inputs[5])
            for n in lengths:
                if way == "static":
                    torch._dynamo.reset()
                    compiled = torch.compile(model, backend="coil", dynamic=False, options=options)
                try:
                    out = compiled(inputs[n]).logits
                    median, host = timed(lambda x: compiled(x).logits, inputs[n], a.calls, a.device)
                except Exception as e:  # a way that fails is reported, and the script exits 1
                    print(f"| {n} | {way} | failed: {type(e).__name__}: {e} | | | |")
                    failed = True
                    continue
                logits[(way, n)] = out.float()
                diff = ""
                if way == "dynamic" and ("static", n) in logits:
                    d = (out.float() - logits[("static", n)]).abs().max().item()
                    diff = f"{d:.4f}"
                    scale = logits[("static", n)].abs().max().item()
                    if not d <= 0.05 * max(scale, 1.0):
                        failed = True
                        diff += " (too large)"
                compiles = counters["graphs_compiled"] - before if way != "inductor" else "-"
                print(f"| {n} | {way} | {median:.3f} | {host:.3f} | {compiles} | {diff} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
