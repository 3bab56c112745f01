"""Whole models: coil against eager PyTorch and Inductor, measured in one run on one machine.

    python bench/models_bench.py --device cuda [--models resnet50,gpt2_b1] [--iters 100] [--out DIR]
                                 [--keep DIR]   # keep the exported graphs, to run them again

Each model (bench/model_zoo.py) is built from its config with random weights (torchvision,
transformers; no downloads), in eval mode, bf16 on CUDA and f32 on the CPU (or --dtype). Eager, Inductor
(torch.compile, default mode) and Inductor mode="reduce-overhead" are timed in this process,
taking turns; coil runs the model exported with torch.export (parameters as inputs, the
default decompositions but scaled_dot_product_attention, kept whole as coil's torch.compile
backend keeps it, for coil's fused attention kernel) as `coil run --device D --bench N` in a subprocess: its steady
calls, plain and with CUDA graphs (triton.cudagraphs). Where the Python package `coil` imports,
coil is also timed in this process through torch.compile(backend="coil") (the columns
"torch.compile coil", plain and with CUDA graphs): the path users take, with Dynamo's guards,
AOTAutograd and the Python call around coil's compiled graph; a graph break or an op left to
eager PyTorch is noted under the table. Every time is the median of N calls
(CUDA events around each call on the GPU, a steady clock on the CPU), after warm-up calls.
With --baseline, a second coil binary (built at an earlier commit) is timed on the same
exported graphs: the before and after of a change, in one run.
coil's outputs are checked as the model tests check them (tests/python/model_tolerance.py:
against the same weights in float64 on the CPU, coil's error at most 3x eager's); a model
coil cannot run, or runs wrongly, shows the reason in the notes under the table. Where coil
misses that rule but is within 3x of Inductor's own error, its time is shown and the note
says so (Inductor's outputs are checked against the same float64 run). A table gives each
way's error against that float64 run: the largest absolute difference and the root mean
square, over every floating-point output element.

Device memory (CUDA): for eager, Inductor and coil through torch.compile, what each holds
between calls beyond the weights and inputs plus the peak of PyTorch's allocator within a call
(class Memory), in a table of its own.
Compile times (unless --no-compile-times): torch.compile's first call, Inductor and coil,
each in a new process, cold (empty coil, Inductor and Triton caches) and warm (the caches the
cold run filled), in a second table.

Prints a markdown table with the commit and the machine, and writes it to DIR/models.md.
With --train, training steps instead (bench/training_bench.py), written to DIR/training.md.
With --dynamic, shapes that change (DIR/dynamic.md): each model through torch.compile with
dynamic=False (a compile for every size) and dynamic=True, Inductor and coil, each in a new
process with empty caches, called at the sizes of model_zoo.dynamic_sizes: the first call's
seconds, each new size's, and the median call at the first size.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import capture_fixtures as capture  # noqa: E402  (export and writing graphs as the fixtures are)

sys.path.insert(0, str(REPO / "tests" / "python"))
from model_tolerance import model_errors, MULTIPLIER, FLOOR  # noqa: E402  (whole models compare in one way)
sys.path.insert(0, str(REPO / "python" / "coil_triton"))
import run_plan  # noqa: E402  (its safetensors reader, where the safetensors package is missing)


sys.path.insert(0, str(REPO / "bench"))
import gpu_bench  # noqa: E402  (the commit, as every benchmark states it)
from model_zoo import MODELS, build  # noqa: E402  (the suite, shared with tests/python/test_models.py)

try:
    import coil.backend as coil_backend
except ImportError as e:  # the package is not installed: no torch.compile columns
    coil_backend = None
    COIL_IMPORT_ERROR = str(e)

DEFAULT_MODELS = "resnet50,gpt2_b1,gpt2_b8"


def median_ms(fn, iters: int, device: str) -> float:
    for _ in range(5):
        fn()
    times = []
    if device == "cuda":
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def coil_ms(coil: str, folder: Path, device: str, iters: int, env: dict, key: str) -> dict:
    """coil run's median as row[key], or None and why not (row[key + "_why"]); the outputs are
    checked against folder/eager.pt and folder/reference.pt, their error in row[key + "_err"]."""
    saved = folder / "coil_outputs.safetensors"
    cmd = [coil, "run", str(folder / "graph.py"), "--inputs", str(folder / "inputs.safetensors"), "--device", device,
           "--save", str(saved), "--bench", str(iters)]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    m = re.search(r"median ([0-9.e+-]+) us per call", r.stdout)
    if r.returncode != 0 or not m:
        why = (r.stderr.strip() or r.stdout.strip()).splitlines()
        return {key: None, key + "_why": (why[-1] if why else f"exit {r.returncode}")[:400]}
    got = run_plan.read_safetensors(str(saved))
    counts, note, err = verdict([got[f"out{i}"] for i in range(len(got))], folder)
    return {key: float(m.group(1)) / 1e3 if counts else None, key + "_why": note, key + "_err": err}


def output_error(got: list, reference: list) -> tuple[float, float]:
    """The largest absolute difference from the float64 outputs and the root mean square of
    the differences, over every floating-point element of every output."""
    most, squares, count = 0.0, 0.0, 0
    for g, r in zip(got, reference, strict=True):
        if not r.is_floating_point() or r.numel() == 0:
            continue
        d = (g.detach().cpu().double() - r.detach().cpu().double()).abs()
        most, squares, count = max(most, float(d.max())), squares + float(d.square().sum()), count + d.numel()
    return most, (squares / count) ** 0.5 if count else 0.0


def verdict(got: list, folder: Path) -> tuple[bool, str, tuple[float, float]]:
    """Whether a time with outputs `got` counts, the note its row gets, and their error
    (output_error): against the same weights in float64 (folder/reference.pt), coil's error at
    most 3x eager's; a miss within 3x of Inductor's own error is timed but noted, a worse one
    is wrong (no time)."""
    eager, reference = torch.load(folder / "eager.pt"), torch.load(folder / "reference.pt")
    inductor = torch.load(folder / "inductor.pt")
    got = [capture.host(o) for o in capture.pytree.tree_leaves(got)]
    err = output_error(got, reference)
    for i, ((ours, theirs, dtype), (theirs_inductor, _, _)) in enumerate(
            zip(model_errors(got, eager, reference), model_errors(inductor, eager, reference))):
        if ours > MULTIPLIER * theirs + FLOOR.get(dtype, 0.0):
            wrong = ours > MULTIPLIER * theirs_inductor + FLOOR.get(dtype, 0.0)
            return not wrong, (
                f"{'wrong' if wrong else 'as accurate as Inductor, not within 3x of eager'}: output {i}: "
                f"coil's error {ours:.3g} against float64, eager's {theirs:.3g}, Inductor's {theirs_inductor:.3g}"), err
    return True, "", err


class Memory:
    """Device memory one way of running the model uses beyond the weights and inputs, in MB:
    what it holds between calls (free memory by cuMemGetInfo, from before its compile to after
    its calls, PyTorch's cache emptied: coil's workspace and arena, CUDA graph pools) plus the
    peak of what PyTorch's allocator hands out within a call (intermediates, outputs). None on
    the CPU."""

    def __init__(self, device: str):
        self.on = device == "cuda"
        if self.on:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            self.free = torch.cuda.mem_get_info()[0]

    def of(self, call) -> float | None:
        """After `call` has been compiled and run: its memory, over three more calls."""
        if not self.on:
            return None
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        within = torch.cuda.max_memory_allocated() - base
        torch.cuda.empty_cache()
        held = self.free - torch.cuda.mem_get_info()[0]
        return (max(held, 0) + within) / 2**20


def torch_compile_ms(model, args, device: str, iters: int, folder: Path, options: dict, key: str) -> dict:
    """torch.compile(model, backend="coil")'s median (the package's backend function, so
    that no entry point is needed) as row[key], or None and why (row[key + "_why"], with a note
    when ops ran in eager); its memory (row[key + "_mb"]) and error (row[key + "_err"])."""
    import functools

    torch._dynamo.reset()
    coil_backend.counters.clear()
    memory = Memory(device)
    compiled = torch.compile(model, backend=functools.partial(coil_backend.coil_backend, options=options))
    try:
        with torch.no_grad():
            counts, note, err = verdict(compiled(*args), folder)
            ms = median_ms(lambda: compiled(*args), iters, device) if counts else None
            mb = memory.of(lambda: compiled(*args)) if counts else None
    except Exception as e:  # noqa: BLE001  (the row says why)
        return {key: None, key + "_why": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
    c = coil_backend.counters
    if c["graphs_eager"] + c["parts_eager"] + c["ops_eager"] or c["graphs"] != 1:
        note = "; ".join(x for x in (note, f"{c['graphs']} graph(s), {c['graphs_eager']} in eager whole, "
                                           f"{c['parts_eager']} part(s) and {c['ops_eager']} op(s) in eager") if x)
    return {key: ms, key + "_why": note, key + "_mb": mb, key + "_err": err}


# One compile, timed in a process of its own: the model built, torch.compile with the backend
# asked for, the first call's result on the host's clock (the device waited for).
_FIRST_CALL = """
import json, sys, time, torch
sys.path.insert(0, sys.argv[1])
from model_zoo import build
name, device, dtype, backend = sys.argv[2], sys.argv[3], getattr(torch, sys.argv[4]), sys.argv[6]
torch.manual_seed(0)
model, args = build(name, device, dtype, sys.argv[5] == "tiny")
start = time.perf_counter()
with torch.no_grad():
    torch.compile(model, backend=backend)(*args)
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


_DYNAMIC_CALLS = """
import json, statistics, sys, time, torch
sys.path.insert(0, sys.argv[1])
from model_zoo import build, dynamic_sizes, resized
from torch._dynamo.utils import counters
name, device, dtype, backend, mode, tiny, iters = sys.argv[2:9]
torch.manual_seed(0)
model, args = build(name, device, getattr(torch, dtype), tiny=tiny == "tiny")
f = torch.compile(model, backend=backend, dynamic=mode == "dynamic")
sync = torch.cuda.synchronize if device == "cuda" else lambda: None
seconds = []
with torch.no_grad():
    for batch, seq in dynamic_sizes(name, args):
        inputs = resized(args, batch, seq)
        start = time.perf_counter()
        f(*inputs)
        sync()
        seconds.append(time.perf_counter() - start)
    inputs = resized(args, *dynamic_sizes(name, args)[0])
    calls = []
    for _ in range(int(iters)):
        start = time.perf_counter()
        f(*inputs)
        sync()
        calls.append(time.perf_counter() - start)
print(json.dumps({"seconds": seconds[0], "sizes": seconds[1:], "steady_ms": statistics.median(calls) * 1e3,
                  "graphs": counters["stats"]["unique_graphs"]}))
"""


def dynamic_row(name: str, device: str, dtype, tiny: bool, iters: int, work: Path) -> list[dict]:
    """--dynamic: one row per backend and mode, each in a new process with empty caches."""
    rows = []
    for backend in ("inductor", "coil"):
        for mode in ("static", "dynamic"):
            caches = work / f"{name}_{backend}_{mode}"
            shutil.rmtree(caches, ignore_errors=True)
            args = [str(REPO / "bench"), name, device, str(dtype).removeprefix("torch."), backend, mode,
                    "tiny" if tiny else "full", str(iters)]
            printed, why = process_json(_DYNAMIC_CALLS, args, caches)
            shutil.rmtree(caches, ignore_errors=True)
            row = {"model": name, "backend": backend, "mode": mode, **(printed or {"error": why})}
            rows.append(row)
            print(row, flush=True)
    return rows


def dynamic_table(rows: list[dict]) -> str:
    lines = ["| model | backend | dynamic | first call (s) | each new size (s) | Dynamo graphs | median call (ms) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        mode = "True" if r["mode"] == "dynamic" else "False"
        if "error" in r:
            lines.append(f"| {r['model']} | {r['backend']} | {mode} | — | — | — | {r['error']} |")
            continue
        sizes = ", ".join(f"{s:.2f}" for s in r["sizes"])
        lines.append(f"| {r['model']} | {r['backend']} | {mode} | {r['seconds']:.2f} | {sizes} | {r['graphs']} | "
                     f"{r['steady_ms']:.2f} |")
    return "\n".join(lines) + "\n"


def dynamic(a) -> int:
    """--dynamic: the table of dynamic_row, per model."""
    head, dirty = gpu_bench.commit()
    commit = head + (" with uncommitted changes" if dirty else "")
    machine = torch.cuda.get_device_name() if a.device == "cuda" else platform.processor() or platform.machine()
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}.get(a.dtype) or (
        torch.bfloat16 if a.device == "cuda" else torch.float32)
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        for name in a.models.split(","):
            rows += dynamic_row(name, a.device, dtype, a.tiny, a.iters, Path(temporary))
    text = (f"Shapes that change, on {machine} ({a.device}), commit {commit}, torch {torch.__version__}; "
            f"{str(dtype).removeprefix('torch.')}{', tiny sizes' if a.tiny else ''}; each row a new process with empty "
            f"caches; the sizes of model_zoo.dynamic_sizes; the median of {a.iters} calls at the first size\n\n"
            + dynamic_table(rows))
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "dynamic.md").write_text(text)
    return 0


def process_json(script: str, args: list[str], caches: Path) -> tuple[dict | None, str]:
    """What `script` (run as python -c with `args`) prints as its last line's JSON, in a new
    process whose coil, Inductor and Triton caches are the folders under `caches` (empty: a
    cold compile; kept from an earlier call: a warm one), or None and why."""
    env = {**os.environ, "COIL_CACHE_DIR": str(caches / "coil"), "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
           "TRITON_CACHE_DIR": str(caches / "triton")}
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        why = (r.stderr.strip() or r.stdout.strip()).splitlines()
        return None, (why[-1] if why else f"exit {r.returncode}")[:300]
    return json.loads(lines[-1]), ""


def process_seconds(script: str, args: list[str], caches: Path) -> tuple[float | None, str]:
    """The "seconds" of process_json."""
    printed, why = process_json(script, args, caches)
    return (printed["seconds"] if printed else None), why


def compile_times(name: str, work: Path, measure) -> dict:
    """Cold and warm compile of Inductor and of coil (through torch.compile), each in new
    processes: measure(backend, caches) -> (seconds or None, why)."""
    row = {}
    for key in ("inductor", "coil"):
        if key == "coil" and coil_backend is None:
            continue
        caches = work / f"{name}_caches_{key}"
        shutil.rmtree(caches, ignore_errors=True)
        for kind in ("cold", "warm"):
            row[f"{key}_{kind}"], row[f"{key}_{kind}_why"] = measure(key, caches)
        shutil.rmtree(caches, ignore_errors=True)
    return row


def memory_table(rows: list[dict]) -> str:
    cols = [("eager_mb", "eager"), ("inductor_mb", "Inductor"), ("inductor_ro_mb", "Inductor reduce-overhead"),
            ("coil_tc_mb", "torch.compile coil"), ("coil_tc_graphs_mb", "torch.compile coil + CUDA graphs")]
    lines = ["| model | " + " | ".join(label + " (MB)" for _, label in cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for r in rows:
        if "error" not in r:
            lines.append(f"| {r['model']} | " + " | ".join(f"{r[k]:.0f}" if r.get(k) is not None else "—" for k, _ in cols) + " |")
    return "\n".join(lines) + "\n"


def error_table(rows: list[dict]) -> str:
    """Each way's error against the same weights in float64: the largest absolute difference /
    the root mean square, over every floating-point output element."""
    cols = [("eager_err", "eager"), ("inductor_err", "Inductor"), ("coil_err", "coil run"),
            ("coil_tc_err", "torch.compile coil")]
    lines = ["| model | " + " | ".join(label for _, label in cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for r in rows:
        if "error" not in r:
            lines.append(f"| {r['model']} | " + " | ".join(
                f"{r[k][0]:.2e} / {r[k][1]:.2e}" if r.get(k) is not None else "—" for k, _ in cols) + " |")
    return "\n".join(lines) + "\n"


def compile_table(rows: list[dict]) -> str:
    cols = [("inductor_cold", "Inductor cold"), ("inductor_warm", "Inductor warm"), ("coil_cold", "coil cold"),
            ("coil_warm", "coil warm")]
    lines = ["| model | " + " | ".join(label + " (s)" for _, label in cols) + " | cold: Inductor / coil | warm: Inductor / coil |",
             "|" + "---|" * (len(cols) + 3)]
    notes = []
    for r in rows:
        if "error" in r:
            continue
        c = r.get("compile", {})
        cells = [f"{c[k]:.1f}" if c.get(k) is not None else "—" for k, _ in cols]
        notes += [f"- {r['model']}, {label}: {c[k + '_why']}" for k, label in cols if c.get(k + "_why")]
        ratio = [f"{c[f'inductor_{kind}'] / c[f'coil_{kind}']:.2f}x" if c.get(f"inductor_{kind}") and c.get(f"coil_{kind}")
                 else "—" for kind in ("cold", "warm")]
        lines.append(f"| {r['model']} | " + " | ".join(cells + ratio) + " |")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def bench_model(name: str, device: str, dtype: torch.dtype, iters: int, coil: str, baseline: str, work: Path,
                tiny: bool = False) -> dict:
    torch.manual_seed(0)
    model, args = build(name, device, dtype, tiny)
    row = {"model": name}
    with torch.no_grad():
        model(*args)  # the libraries' kernels loaded (CUDA loads them lazily) before memory counts
        memory = Memory(device)
        row["eager"] = median_ms(lambda: model(*args), iters, device)
        row["eager_mb"] = memory.of(lambda: model(*args))
        torch._dynamo.reset()
        memory = Memory(device)
        inductor = torch.compile(model)
        row["inductor"] = median_ms(lambda: inductor(*args), iters, device)
        row["inductor_mb"] = memory.of(lambda: inductor(*args))
        inductor_out = inductor(*args)
        if device == "cuda":
            torch._dynamo.reset()
            memory = Memory(device)
            overhead = torch.compile(model, mode="reduce-overhead")
            row["inductor_ro"] = median_ms(lambda: overhead(*args), iters, device)
            row["inductor_ro_mb"] = memory.of(lambda: overhead(*args))
        torch._dynamo.reset()
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        ep = capture.export_program(model, args, "attention")
        (folder / "graph.py").write_text(capture.graph_text(ep))
        capture.write_tensors(folder / "inputs.safetensors",
                              {k: capture.host(v) for k, v in capture.placeholder_tensors(ep, args).items()})
        outs = capture.eager_outputs(ep, args)
        torch.save([capture.host(o) for o in outs], folder / "eager.pt")
        inductor_flat = [capture.host(o) for o in capture.pytree.tree_leaves(inductor_out)]
        torch.save(inductor_flat, folder / "inductor.pt")
        reference = copy.deepcopy(model).to(device="cpu", dtype=torch.float64)
        flat = reference(*[a.cpu().double() if a.is_floating_point() else a.cpu() for a in args])
        reference_flat = [capture.host(o) for o in capture.pytree.tree_leaves(flat)]
        torch.save(reference_flat, folder / "reference.pt")
        row["eager_err"] = output_error([capture.host(o) for o in outs], reference_flat)
        row["inductor_err"] = output_error(inductor_flat, reference_flat)
        del reference
    if coil_backend is not None:
        row.update(torch_compile_ms(model, args, device, iters, folder, {}, "coil_tc"))
        if device == "cuda":
            row.update(torch_compile_ms(model, args, device, iters, folder, {"triton.cudagraphs": "1"}, "coil_tc_graphs"))
        torch._dynamo.reset()
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    row.update(coil_ms(coil, folder, device, iters, {}, "coil"))
    if baseline:
        row.update(coil_ms(baseline, folder, device, iters, {}, "baseline"))
    if device == "cuda":
        row.update(coil_ms(coil, folder, device, iters, {"COIL_TRITON_CUDAGRAPHS": "1"}, "coil_graphs"))
    return row


def table(rows: list[dict], device: str, baseline: bool) -> str:
    cols = [("eager", "eager"), ("inductor", "Inductor"), ("coil", "coil")]
    if device == "cuda":
        cols = [("eager", "eager"), ("inductor", "Inductor"), ("inductor_ro", "Inductor reduce-overhead"),
                ("coil", "coil"), ("coil_graphs", "coil + CUDA graphs")]
    if baseline:
        cols.insert(cols.index(("coil", "coil")), ("baseline", "coil at the baseline"))
    if coil_backend is not None:
        cols.append(("coil_tc", "torch.compile coil"))
        if device == "cuda":
            cols.append(("coil_tc_graphs", "torch.compile coil + CUDA graphs"))
    head = "| model | " + " | ".join(c[1] + " (ms)" for c in cols) + " | coil / Inductor | best coil / best Inductor |"
    lines = [head, "|" + "---|" * (len(cols) + 3)]
    notes = []
    for r in rows:
        cells = []
        if "error" in r:
            lines.append(f"| {r['model']} | failed: {r['error']} |")
            continue
        said: dict[str, list[str]] = {}  # a note, and the columns it is of
        for key, label in cols:
            v = r.get(key)
            cells.append(f"{v:.3f}" if v is not None else "—")
            if r.get(key + "_why"):
                said.setdefault(r[key + "_why"], []).append(label)
        notes += [f"- {r['model']}, {', '.join(labels)}: {why}" for why, labels in said.items()]
        ratio = f"{r['inductor'] / r['coil']:.2f}x" if r.get("coil") else "—"
        coil_times = [r.get(k) for k in ("coil", "coil_graphs", "coil_tc", "coil_tc_graphs") if r.get(k) is not None]
        best_coil = min(coil_times) if coil_times else None
        best_ind = min(v for v in (r.get("inductor"), r.get("inductor_ro")) if v is not None)
        best = f"{best_ind / best_coil:.2f}x" if best_coil else "—"
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {ratio} | {best} |")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    p.add_argument("--models", default=DEFAULT_MODELS, help=f"of {', '.join(MODELS)}")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--dtype", choices=["bf16", "f32"], default="", help="default: bf16 on CUDA, f32 on the CPU")
    p.add_argument("--coil", default=str(REPO / "build" / "coil"))
    p.add_argument("--baseline", default="", help="another coil binary (an earlier commit's) for a column of its own")
    p.add_argument("--out", default="")
    p.add_argument("--keep", default="", help="keep each model's exported graph and tensors in this folder")
    p.add_argument("--no-compile-times", action="store_true",
                   help="leave out the cold and warm compile times (new processes, a minute or more per model)")
    p.add_argument("--train", action="store_true",
                   help="time training steps instead (bench/training_bench.py; models of its TRAINING)")
    p.add_argument("--tiny", action="store_true", help="the tests' tiny sizes")
    p.add_argument("--dynamic", action="store_true",
                   help="shapes that change: dynamic=False against dynamic=True, the first call and each new size's")
    p.add_argument("--compile-optimizer", action="store_true",
                   help="with --train: optimizer.step() compiled by each step's backend (else eager for all)")
    a = p.parse_args()
    if a.train:
        return train(a)
    if a.dynamic:
        return dynamic(a)
    head, dirty = gpu_bench.commit()
    commit = head + (" with uncommitted changes" if dirty else "")
    machine = torch.cuda.get_device_name() if a.device == "cuda" else platform.processor() or platform.machine()
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}.get(a.dtype) or (
        torch.bfloat16 if a.device == "cuda" else torch.float32)
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(a.keep or temporary)
        for name in a.models.split(","):
            try:
                rows.append(bench_model(name, a.device, dtype, a.iters, a.coil, a.baseline, work, a.tiny))
                if not a.no_compile_times:
                    args = [str(REPO / "bench"), name, a.device, str(dtype).removeprefix("torch."),
                            "tiny" if a.tiny else "full"]
                    rows[-1]["compile"] = compile_times(
                        name, work, lambda backend, caches: process_seconds(_FIRST_CALL, [*args, backend], caches))
            except Exception as e:  # a model that cannot be built, exported or compiled: its row says why
                rows.append({"model": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"})
            print(rows[-1], flush=True)
    if coil_backend is None:
        print(f"no torch.compile columns: the package coil does not import ({COIL_IMPORT_ERROR})")
    text = (f"Models on {machine} ({a.device}), commit {commit}, torch {torch.__version__}; "
            f"{str(dtype).removeprefix('torch.')}{', tiny sizes' if a.tiny else ''}, medians of {a.iters} calls; ratios > 1: coil faster\n\n" + table(rows, a.device, bool(a.baseline)))
    text += ("\nError against the same weights in float64 on the CPU: largest absolute difference / root mean "
             "square, over every floating-point output element\n\n" + error_table(rows))
    if a.device == "cuda":
        text += ("\nDevice memory beyond the weights and inputs: what each holds between calls (cuMemGetInfo, "
                 "from before its compile) plus the peak PyTorch's allocator hands out within a call\n\n" + memory_table(rows))
    if not a.no_compile_times:
        text += ("\nCompile time through torch.compile, from the first call to its result, each in a new process: "
                 "cold with empty coil, Inductor and Triton caches, warm with those the cold run filled\n\n" + compile_table(rows))
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "models.md").write_text(text)
    return 0


def train(a) -> int:
    """--train: training steps of bench/training_bench.py, in a table of their own."""
    import training_bench

    head, dirty = gpu_bench.commit()
    commit = head + (" with uncommitted changes" if dirty else "")
    machine = torch.cuda.get_device_name() if a.device == "cuda" else platform.processor() or platform.machine()
    names = training_bench.DEFAULT_MODELS if a.models == DEFAULT_MODELS else a.models
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        for name in names.split(","):
            rows.append(training_bench.bench_training(name, a.device, a.iters, median_ms, a.tiny, a.compile_optimizer))
            if not a.no_compile_times:
                args = [str(REPO / "bench"), name, a.device, "tiny" if a.tiny else "full",
                        "compiled" if a.compile_optimizer else "eager"]
                rows[-1]["compile"] = compile_times(
                    name, Path(temporary),
                    lambda backend, caches: process_seconds(training_bench.FIRST_STEP, [*args, backend], caches))
            print(rows[-1], flush=True)
    precision = ("f32 weights, bf16 autocast" if a.device == "cuda" else "f32") + (", tiny sizes" if a.tiny else "")
    precision += ", optimizer step compiled by each backend" if a.compile_optimizer else ", optimizer step eager"
    text = (f"Training steps on {machine} ({a.device}), commit {commit}, torch {torch.__version__}; {precision}, "
            f"AdamW, medians of {a.iters} steps; ratios > 1: coil faster\n\n" +
            training_bench.table(rows, a.device, compile_table))
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "training.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
