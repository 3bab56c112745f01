#!/usr/bin/env python3
"""coil against eager PyTorch on random programs: every backend and option variant, every outcome classified.

    .venv/bin/python tests/difftest/difftest.py --seeds 0:2000 [--all-variants] [--shrink] [--jobs N]
    .venv/bin/python tests/difftest/difftest.py --ci          (the fixed seed range CTest runs)
    .venv/bin/python tests/difftest/difftest.py --summarize RESULTS.jsonl   (the summary of an earlier run)

Each seed draws one program (programs.py), exports it with torch.export, writes it as the fixtures
are written (scripts/capture_fixtures.py: graph.py, inputs.safetensors, expected.safetensors from
eager), and runs `coil run --expect` on it: on the reference interpreter, as C++ on the CPU (and one
option variant per seed, or all of them), and under Triton's interpreter. Tolerances are coil's own.

Outcomes: pass; rejected (coil says it does not support an op: the op is named); and the failures:
mismatch (FAIL against eager), user_error (coil calls a graph PyTorch runs wrong), internal_error,
crash (killed by a signal) and timeout. With --shrink each failure is shrunk (nodes removed, shapes
narrowed, special values made normal) while it stays the same failure of the same configuration,
and the minimal graph is written to --found with the command that shows the failure (repro.txt).

The reference interpreter runs each program alone (it takes milliseconds, and a rejection there is
one everywhere). The compiled configurations take seconds per graph, most of it fixed cost (the C++
compiler, Triton's Python), so they run the programs of a batch merged into one graph, each output
still checked against its own eager value; a program runs alone where its batch fails other than
by a mismatch, or where it failed alone on the reference interpreter.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import copy
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "python"))
sys.path.insert(0, str(REPO / "python" / "coil_triton"))

import capture_fixtures as cf  # noqa: E402
import model_tolerance  # noqa: E402
import run_plan  # noqa: E402
import programs  # noqa: E402
import torch  # noqa: E402

# How each configuration runs a graph (after `coil run G --inputs I --expect E`).
CONFIGS = {
    "ref": ["--device", "ref"],
    "cpu": ["--device", "cpu"],
    "cpu-scalar": ["--device", "cpu", "--set", "cpp.isa=scalar"],
    "cpu-lanes4": ["--device", "cpu", "--set", "cpp.vector_lanes=4"],
    "cpu-noinline": ["--device", "cpu", "--set", "fusion.inline_pointwise=0"],
    "cpu-fusion2": ["--device", "cpu", "--set", "max_fusion_size=2"],
    "triton-interp": ["--device", "cuda", "--interpret"],
    "cuda": ["--device", "cuda"],   # --cuda only: on a GPU, against CUDA eager (expected_cuda.safetensors)
}
VARIANTS = ["cpu-scalar", "cpu-lanes4", "cpu-noinline", "cpu-fusion2"]
FAILURES = ("crash", "internal_error", "timeout", "user_error", "mismatch")   # worst first

# Set in each worker from --cuda: programs also get CUDA eager's outputs, and the "cuda" configuration runs.
CUDA = False

# The seed range CTest runs (`--ci`): under four minutes with two jobs on two busy cores.
CI_SEEDS = range(0, 16)

# Known bugs, by name: the kind of failure each gives, a pattern of what coil says, the bug.
KNOWN_BUGS: dict[str, tuple[str, str, str]] = {}

# Seeds of the CI range that fail by a known bug. A marked seed that passes, or fails another way,
# fails the run: when the bug is fixed, its marks go. (Seeds 1 and 12 were marked with the
# internal error of a 0-d reduction beside another reduction of the same input until it was fixed.)
EXPECTED_FAILURES: dict[int, str] = {}

UNSUPPORTED = re.compile(r"unknown op|unknown overload|not supported|does not support|unsupported|not registered")
OP_IN_ERROR = re.compile(r"unknown (?:op|overload) '([\w.]+)'|\((aten\.[\w.]+|prims\.[\w.]+)\)")


@dataclasses.dataclass
class Outcome:
    config: str
    kind: str            # pass | precision | skipped | rejected | mismatch | user_error | internal_error | crash | timeout
    op: str = ""         # the op a rejection or user error names
    detail: str = ""     # the first line that says what went wrong
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------------
# One program: export, files, coil runs
# ---------------------------------------------------------------------------------------------

def write_program(prog: dict, folder: Path, inputs: list[torch.Tensor] | None = None) -> str | None:
    """Export the program and write it as a fixture is written, on its own inputs (the ones its
    seeds make unless given). Returns why it could not be, or None."""
    inputs = programs.make_inputs(prog) if inputs is None else inputs
    try:
        ep = cf.export_program(cf.Fn(programs.as_function(prog)), tuple(inputs), prog["decompositions"])
        text = cf.graph_text(ep)
        tensors = cf.placeholder_tensors(ep, tuple(inputs))
        outs = cf.eager_outputs(ep, tuple(inputs))
    except Exception as e:  # noqa: BLE001 - an unexportable program is skipped, with its reason
        return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
    traced = [n.meta.get("val") for n in ep.graph.find_nodes(op="output")[0].args[0]]
    for i, (o, t) in enumerate(zip(outs, traced)):
        if isinstance(t, torch.Tensor) and (o.dtype != t.dtype or o.shape != t.shape):
            # PyTorch disagrees with itself (a matrix product of an empty i64 and a bool is bool in
            # eager, i64 in its trace): there is no reference to hold coil to.
            return f"eager and its trace disagree: out{i} is {o.dtype} {list(o.shape)} in eager, " \
                   f"{t.dtype} {list(t.shape)} in the trace"
    if folder.exists():
        shutil.rmtree(folder)
    cf.write_graph_files(folder, text, tensors, outs)
    (folder / "program.json").write_text(json.dumps(prog, indent=1) + "\n")
    if programs.converts_float_to_int(prog, inputs):
        # The Triton dialect converts as CUDA does: its expected outputs under Triton's interpreter.
        with torch.no_grad():
            gpu = programs.as_function(prog, gpu_casts=True)(*inputs)
        cf.write_tensors(folder / "expected_gpu.safetensors", {f"out{i}": cf.host(o) for i, o in enumerate(gpu)})
    wide = float64_outputs(prog, inputs, outs)
    if wide is not None:
        cf.write_tensors(folder / "expected_f64.safetensors", {f"out{i}": cf.host(o) for i, o in enumerate(wide)})
    if CUDA:
        write_cuda_expected(prog, inputs, folder)
    return None


def float64_outputs(prog: dict, inputs: list, like: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """The program run by eager with its floating inputs in float64 (its own casts still cast),
    each output rounded to the dtype of eager's (`like`): the reference a mismatch is judged
    against (precision). None when eager refuses that."""
    try:
        with torch.no_grad():
            wide = programs.as_function(prog)(*(t.double() if t.is_floating_point() else t for t in inputs))
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None
    if len(wide) != len(like) or any(w.shape != o.shape for w, o in zip(wide, like)):
        return None
    return [w.to(o.dtype) for w, o in zip(wide, like)]


def write_cuda_expected(prog: dict, inputs: list, folder: Path) -> None:
    """expected_cuda.safetensors: the program run by CUDA eager on the same inputs. Where the
    devices' eager results differ (a float out of an integer's range converted), coil's GPU code
    is held to CUDA eager's. Nothing is written where CUDA eager refuses the program (an op with
    no CUDA kernel for a dtype): the "cuda" configuration is then skipped."""
    try:
        with torch.no_grad(), torch.device("cuda"):
            outs = programs.as_function(prog)(*(t.cuda() for t in inputs))
    except (RuntimeError, IndexError, ValueError, TypeError):
        return
    cf.write_tensors(folder / "expected_cuda.safetensors", {f"out{i}": cf.host(o) for i, o in enumerate(outs)})


def coil_command(coil: Path, folder: Path, config: str) -> list[str]:
    expected = "expected.safetensors"
    if config == "cuda":
        expected = "expected_cuda.safetensors"
    elif config == "triton-interp" and (folder / "expected_gpu.safetensors").exists():
        expected = "expected_gpu.safetensors"
    return [str(coil), "run", str(folder / "graph.py"), "--inputs", str(folder / "inputs.safetensors"),
            "--expect", str(folder / expected), *CONFIGS[config]]


def run_coil(coil: Path, folder: Path, config: str, timeout: float) -> Outcome:
    if config == "cuda" and not (folder / "expected_cuda.safetensors").exists():
        return Outcome(config, "skipped", detail="CUDA eager does not run this program")
    t0 = time.time()
    try:
        r = subprocess.run(coil_command(coil, folder, config), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome(config, "timeout", detail=f"no result after {timeout:.0f} s", seconds=time.time() - t0)
    out = classify(config, r.returncode, r.stdout, r.stderr)
    out.seconds = time.time() - t0
    return out


def classify(config: str, rc: int, stdout: str, stderr: str) -> Outcome:
    """coil's exit status and words as one outcome: 0 passes, 1 is a FAIL against eager or a user
    error (a rejection when it says the op is not supported), 2 an internal error, a signal a crash."""
    lines = stderr.strip().splitlines() or [""]
    # A message that goes on below its first line (the Triton runner's) ends with what failed.
    first = (lines[0] + (" ... " + lines[-1] if lines[0].endswith(":") and len(lines) > 1 else ""))[:300]
    if rc == 0:
        return Outcome(config, "pass")
    if rc < 0:
        return Outcome(config, "crash", detail=f"killed by {signal.Signals(-rc).name}: {first}")
    if rc == 2:
        return Outcome(config, "internal_error", detail=first)
    if rc == 1 and " FAIL " in stdout and not stderr.strip():
        return Outcome(config, "mismatch", detail=next(l for l in stdout.splitlines() if " FAIL " in l)[:300])
    if rc == 1:
        m = OP_IN_ERROR.search(stderr)
        op = (m.group(1) or m.group(2)) if m else ""
        return Outcome(config, "rejected" if UNSUPPORTED.search(lines[0]) else "user_error", op, first)
    return Outcome(config, "crash", detail=f"exit status {rc}: {first}")


def configs_for(batch: int, all_variants: bool) -> list[str]:
    """cpu and the Triton interpreter always; the option variants in turn, one per batch."""
    variants = VARIANTS if all_variants else [VARIANTS[batch % len(VARIANTS)]]
    return ["cpu", *variants, "triton-interp", *(["cuda"] if CUDA else [])]


def graph_kind(outcomes: list[Outcome]) -> str:
    kinds = {o.kind for o in outcomes}
    for k in FAILURES + ("rejected", "precision"):
        if k in kinds:
            return k
    return "pass"


def failing_outputs(stdout: str) -> set[int]:
    """The outputs `coil run --expect` calls FAIL (its lines read `outN dtype[sizes]: ... FAIL ...`)."""
    return {int(m.group(1)) for m in re.finditer(r"^out(\d+) .* FAIL ", stdout, re.M)}


def run_batch(progs: list[dict], folder: Path, coil: Path, config: str, timeout: float) -> list[Outcome] | None:
    """One configuration on the programs merged into one graph: each program's outcome when the
    batch passes or only mismatches (by the outputs that FAIL), None when it fails otherwise."""
    merged = programs.merge(progs)
    if write_program(merged, folder) is not None:
        return None
    if config == "cuda" and not (folder / "expected_cuda.safetensors").exists():
        return None   # one of them CUDA eager refuses: each runs alone
    t0 = time.time()
    try:
        r = subprocess.run(coil_command(coil, folder, config), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    out = classify(config, r.returncode, r.stdout, r.stderr)
    if out.kind not in ("pass", "mismatch"):
        return None
    bad, outcomes, first = failing_outputs(r.stdout), [], 0
    seconds = (time.time() - t0) / len(progs)
    for prog in progs:
        mine = range(first, first + len(prog["outputs"]))
        first += len(prog["outputs"])
        lines = [l for l in r.stdout.splitlines() if any(l.startswith(f"out{i} ") for i in mine if i in bad)]
        outcomes.append(Outcome(config, "mismatch", detail=lines[0][:300], seconds=seconds) if lines
                        else Outcome(config, "pass", seconds=seconds))
    return outcomes


def test_programs(progs: list[dict], folders: list[Path], coil: Path, configs: list[str], work: Path,
                  timeout: float) -> list[list[Outcome]]:
    """Every program's outcomes: each alone on the reference interpreter (fast, and a rejection
    there is one everywhere), then the rest batched per configuration, each alone where its batch
    fails other than by a mismatch or where it failed alone on ref."""
    ref = [run_coil(coil, f, "ref", timeout) for f in folders]
    results = [[o] for o in ref]
    live = [i for i, o in enumerate(ref) if o.kind != "rejected"]
    batched = [i for i in live if ref[i].kind in ("pass", "mismatch")]
    for config in configs:
        for i, o in enumerate(ref):
            if o.kind == "rejected":
                results[i].append(dataclasses.replace(o, config=config))
        got = run_batch([progs[i] for i in batched], work / "batch", coil, config, timeout) if batched else None
        alone = [i for i in live if i not in batched] if got is not None else live
        for i, o in zip(batched, got or []):
            results[i].append(o)
        for i in alone:
            results[i].append(run_coil(coil, folders[i], config, timeout))
    for i, outcomes in enumerate(results):
        for k, o in enumerate(outcomes):
            why = precision(coil, folders[i], o.config, timeout) if o.kind == "mismatch" else None
            if why:
                outcomes[k] = dataclasses.replace(o, kind="precision", detail=f"{why}; against eager: {o.detail}")
    return results


def precision(coil: Path, folder: Path, config: str, timeout: float) -> str | None:
    """Why a mismatch is one of coil's documented precision choices, or None when it is a failure:
    - bf16 and f16 values kept in f32 inside a kernel, where eager rounds each op's result: the
      program passes with emulate_precision_casts=1, which rounds as eager does;
    - more exact than eager: coil matches, at its own tolerance, eager computed in float64 (eager's
      float32 kernels are not always exact: CPU eager's vectorized gelu(+inf) is NaN, its fmod by a
      denormal NaN, its bf16 log_softmax rounds an intermediate; CUDA eager divides by a number as
      a product by its reciprocal);
    - an error that a later op amplifies (a sum in another order raised to a power): against eager
      in float64, coil's error is at most 3x that of eager on the same device, the rule the
      whole-model tests apply (tests/python/model_tolerance.py)."""
    def run(*extra: str, expected: str | None = None) -> subprocess.CompletedProcess | None:
        command = coil_command(coil, folder, config)
        if expected:
            command[command.index("--expect") + 1] = str(folder / expected)
        try:
            r = subprocess.run(command + list(extra), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return r
    r = run("--set", "emulate_precision_casts=1")
    if r is not None and r.returncode == 0:
        return "emulate_precision_casts=1 passes"
    if not (folder / "expected_f64.safetensors").exists():
        return None
    if config == "cuda" and (folder / "expected_gpu.safetensors").exists():
        return None   # the program converts floats to integers, as CUDA does otherwise than the CPU
    saved = folder / f"coil-{config}.safetensors"
    r = run("--save", str(saved), expected="expected_f64.safetensors")
    if r is None or r.returncode not in (0, 1) or not saved.exists():
        return None
    if r.returncode == 0:
        return "matches eager in float64"
    same_device = "expected_cuda.safetensors" if config == "cuda" else "expected.safetensors"
    got, eager, wide = (run_plan.read_safetensors(str(f)) for f in
                        (saved, folder / same_device, folder / "expected_f64.safetensors"))
    if within_eager_error(got, eager, wide):
        return "within 3x eager's error against eager in float64"
    return None


def within_eager_error(got: dict, eager: dict, wide: dict) -> bool:
    """Every output within the whole-model rule (model_tolerance: its error against the float64
    result at most 3x eager's own), over the elements float64 finds finite; at the others, coil's
    value is float64's or eager's. Integer outputs are compared by that rule as equal to eager's."""
    for name, e in eager.items():
        g, w = got[name], wide[name]
        if e.is_floating_point():
            finite = torch.isfinite(w)
            same = (g == w) | (g == e) | (g.isnan() & (w.isnan() | e.isnan()))
            if not (finite | same).all():
                return False
            g, e, w = g[finite], e[finite], w[finite]
        try:
            model_tolerance.assert_model_close(g, e, w)
        except AssertionError:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Shrinking
# ---------------------------------------------------------------------------------------------

def signature(o: Outcome) -> tuple:
    """What must stay the same while shrinking: the configuration, the kind of failure, and for
    errors the op they name."""
    return (o.config, o.kind, o.op)


def prune(prog: dict) -> dict:
    """Drop nodes no output needs and inputs no node reads (renumbering inputs a0, a1, ...)."""
    live = set(prog["outputs"])
    nodes = []
    for n in reversed(prog["nodes"]):
        if n["id"] in live:
            nodes.append(n)
            live.update(n["args"])
    nodes.reverse()
    keep = [i for i in range(len(prog["inputs"])) if f"a{i}" in live]
    rename = {f"a{old}": f"a{new}" for new, old in enumerate(keep)}
    out = dict(prog, nodes=[dict(n, args=[rename.get(a, a) for a in n["args"]]) for n in nodes],
               inputs=[prog["inputs"][i] for i in keep])
    return out


def bypass(prog: dict, nid: str, by: str) -> dict:
    """The program with node nid removed and its readers reading `by` instead."""
    sub = lambda a: by if a == nid else a  # noqa: E731
    nodes = [dict(n, args=[sub(a) for a in n["args"]]) for n in prog["nodes"] if n["id"] != nid]
    outputs = list(dict.fromkeys(sub(o) for o in prog["outputs"]))
    outputs = [o for o in outputs if not o.startswith("a")] or outputs
    return prune(dict(prog, nodes=nodes, outputs=outputs))


def smaller_programs(prog: dict):
    """Candidates, biggest cut first: one output, one node fewer, narrower or plainer inputs."""
    if len(prog["outputs"]) > 1:
        for o in prog["outputs"]:
            yield prune(dict(prog, outputs=[o]))
        for o in prog["outputs"]:
            yield prune(dict(prog, outputs=[x for x in prog["outputs"] if x != o]))
    for n in reversed(prog["nodes"]):
        for a in dict.fromkeys(n["args"]):
            if not (a.startswith("a") and n["id"] in prog["outputs"]):
                yield bypass(prog, n["id"], a)
    for i, spec in enumerate(prog["inputs"]):
        for shape in narrower(spec["shape"]):
            yield with_input(prog, i, shape=shape)
        if spec["fill"] != "normal":
            yield with_input(prog, i, fill="normal")


def narrower(shape: list[int]):
    for d, s in enumerate(shape):
        if s > 1:
            yield shape[:d] + [1] + shape[d + 1:]
            if s > 3:
                yield shape[:d] + [s // 2] + shape[d + 1:]
    if shape:
        yield shape[1:]


def with_input(prog: dict, i: int, **change) -> dict:
    inputs = copy.deepcopy(prog["inputs"])
    inputs[i].update(change)
    return dict(prog, inputs=inputs)


def shrink(prog: dict, failure: Outcome, coil: Path, work: Path, timeout: float, budget_s: float) -> dict:
    """Greedy: take the first smaller program that fails the same way, until none does or time is up."""
    want = signature(failure)
    deadline = time.time() + budget_s
    improved = True
    while improved and time.time() < deadline:
        improved = False
        for cand in smaller_programs(prog):
            if time.time() > deadline:
                break
            if programs.eager_values(cand, programs.make_inputs(cand)) is None:
                continue
            if write_program(cand, work) is not None:
                continue
            if signature(run_coil(coil, work, failure.config, timeout)) == want:
                prog, improved = cand, True
                break
    return prog


def failure_name(o: Outcome, prog: dict) -> str:
    ops = "-".join(sorted({n["op"] for n in prog["nodes"]}))[:60]
    return f"{o.kind}-{o.config}-{ops}-seed{prog['seed']}"


def save_found(prog: dict, o: Outcome, coil: Path, found: Path) -> Path:
    folder = found / failure_name(o, prog)
    write_program(prog, folder)
    command = coil_command(coil, folder, o.config)
    rel = [os.path.relpath(c, REPO) if c.startswith(str(REPO)) else c for c in command]
    r = subprocess.run(command, capture_output=True, text=True)
    said = (r.stdout + r.stderr).replace(str(REPO) + "/", "")
    said = re.sub(r"/tmp/coil-interpret-\w+", "TMPDIR", said)   # where this run kept its kernels
    (folder / "repro.txt").write_text(" ".join(rel) + "\n\n" + said)
    return folder


# ---------------------------------------------------------------------------------------------
# A seed from start to end (one worker process each)
# ---------------------------------------------------------------------------------------------

def run_chunk(job: tuple) -> list[dict]:
    """Draw, export, test (and shrink) the programs of some seeds of one decomposition table."""
    seeds, batch, args = job
    cf.setup_process()
    global CUDA
    CUDA = args.cuda
    coil, work = Path(args.coil), Path(args.work) / f"batch{seeds[0]}"
    results, progs, folders = [], [], []
    for seed in seeds:
        prog = programs.draw_program(seed)
        why = write_program(prog, work / f"seed{seed}")
        if why is not None:
            results.append({"seed": seed, "graph": "not_exported", "why": why, "outcomes": []})
            continue
        progs.append(prog)
        folders.append(work / f"seed{seed}")
    configs = configs_for(batch, args.all_variants)
    for prog, folder, outcomes in zip(progs, folders, test_programs(progs, folders, coil, configs, work,
                                                                   args.timeout)):
        result = {"seed": prog["seed"], "graph": graph_kind(outcomes), "ops": sorted({n["op"] for n in prog["nodes"]}),
                  "outcomes": [dataclasses.asdict(o) for o in outcomes], "found": []}
        if args.shrink:
            result["found"] = shrink_failures(prog, outcomes, coil, work / "shrink", args)
        results.append(result)
    keep = any(r["graph"] in FAILURES for r in results)
    if not keep:   # a failing batch stays in --work to be looked at
        shutil.rmtree(work, ignore_errors=True)
    return results


def shrink_failures(prog: dict, outcomes: list[Outcome], coil: Path, work: Path, args) -> list[str]:
    """One minimal repro per distinct failure: a mismatch once per backend (the CPU's option
    variants count as the CPU), an error once per message."""
    found, seen = [], set()
    for o in outcomes:
        key = (o.kind, o.config.split("-")[0] if o.kind == "mismatch" else o.detail)
        if o.kind not in FAILURES or key in seen:
            continue
        seen.add(key)
        if write_program(prog, work) is not None or signature(run_coil(coil, work, o.config, args.timeout)) != signature(o):
            found.append(f"seed {prog['seed']}: {o.kind} on {o.config} only in its batch")
            continue
        small = shrink(prog, o, coil, work, args.timeout, args.shrink_seconds)
        found.append(str(save_found(small, o, coil, Path(args.found))))
    return found


def chunks(seeds: range, size: int):
    """Consecutive seeds in batches of one decomposition table (even seeds "empty", odd "default")."""
    for lo in range(seeds.start, seeds.stop, 2 * size):
        block = range(lo, min(lo + 2 * size, seeds.stop))
        for parity in (0, 1):
            part = [s for s in block if s % 2 == parity]
            if part:
                yield part


# ---------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------

def summary(results: list[dict]) -> str:
    graphs = collections.Counter(r["graph"] for r in results)
    lines = [f"{len(results)} graphs: " + ", ".join(f"{graphs[k]} {k}" for k in
                                                   ("pass", "precision", "rejected", *FAILURES, "not_exported",
                                                    "tester_error")
                                                   if graphs[k])]
    by_config = collections.defaultdict(collections.Counter)
    rejected_by_op = collections.Counter()
    failures = collections.Counter()
    for r in results:
        for o in r["outcomes"]:
            by_config[o["config"]][o["kind"]] += 1
            if o["kind"] in FAILURES:
                failures[(o["kind"], o["config"], o["op"] or o["detail"][:90])] += 1
        if r["graph"] == "rejected":
            rejected_by_op[next(o["op"] or o["detail"][:60] for o in r["outcomes"] if o["kind"] == "rejected")] += 1
    lines.append("\nby configuration (runs):")
    for config, c in sorted(by_config.items()):
        lines.append(f"  {config:14} " + ", ".join(f"{n} {k}" for k, n in c.most_common()))
    if rejected_by_op:
        lines.append("\nrejected graphs, by the op coil names:")
        lines += [f"  {n:4} {op}" for op, n in rejected_by_op.most_common()]
    if failures:
        lines.append("\nfailures (runs), by kind, configuration and what coil said:")
        lines += [f"  {n:4} {k} {cfg}: {what}" for (k, cfg, what), n in failures.most_common()]
    tester = collections.Counter(r["why"][:120] for r in results if r["graph"] == "tester_error")
    if tester:
        lines.append("\nerrors of the tester itself (seeds not tested):")
        lines += [f"  {n:4} {why}" for why, n in tester.most_common()]
    not_exported = collections.Counter(r["why"][:80] for r in results if r["graph"] == "not_exported")
    if not_exported:
        lines.append("\nnot exported by torch.export (not coil's):")
        lines += [f"  {n:4} {why}" for why, n in not_exported.most_common()]
    return "\n".join(lines)


def ci_verdict(results: list[dict]) -> list[str]:
    """What makes the CI run fail: a failure not marked as expected, or a marked one that does not
    fail the way its bug does."""
    problems = []
    for r in results:
        if r["graph"] == "tester_error":
            problems.append(f"seed {r['seed']}: the tester failed: {r['why']}")
            continue
        failures = [o for o in r["outcomes"] if o["kind"] in FAILURES]
        mark = EXPECTED_FAILURES.get(r["seed"])
        if mark is None:
            problems += [f"seed {r['seed']}: {o['kind']} on {o['config']}: {o['detail']}" for o in failures[:1]]
            continue
        kind, pattern, bug = KNOWN_BUGS[mark]
        if not failures:
            problems.append(f"seed {r['seed']}: marked as {mark} ({bug}) but it is {r['graph']} now: "
                            "remove its mark from EXPECTED_FAILURES")
        elif not all(o["kind"] == kind and re.search(pattern, o["detail"]) for o in failures):
            o = next(o for o in failures if not (o["kind"] == kind and re.search(pattern, o["detail"])))
            problems.append(f"seed {r['seed']}: marked as {mark} but {o['kind']} on {o['config']}: {o['detail']}")
    return problems


def read_results(path: str) -> list[dict]:
    """A --results file, each error outcome classified again (by what this version knows)."""
    results = [json.loads(line) for line in open(path)]
    for r in results:
        for o in r["outcomes"]:
            if o["kind"] in ("rejected", "user_error"):
                m = OP_IN_ERROR.search(o["detail"])
                o["op"] = (m.group(1) or m.group(2)) if m else o["op"]
                o["kind"] = "rejected" if UNSUPPORTED.search(o["detail"].split(" ... ")[0]) else "user_error"
        if r["outcomes"]:
            r["graph"] = graph_kind([Outcome(**o) for o in r["outcomes"]])
    return sorted(results, key=lambda r: r["seed"])


def parse_seeds(text: str) -> range:
    lo, _, hi = text.partition(":")
    return range(int(lo), int(hi)) if hi else range(int(lo), int(lo) + 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:100", help="A:B, the seeds A..B-1 (default 0:100)")
    ap.add_argument("--ci", action="store_true", help=f"the CI range {CI_SEEDS.start}:{CI_SEEDS.stop}, "
                    "failing on any failure not in EXPECTED_FAILURES and on any of those that passes")
    ap.add_argument("--all-variants", action="store_true", help="every option variant on every seed")
    ap.add_argument("--shrink", action="store_true", help="shrink each failure and save it under --found")
    ap.add_argument("--shrink-seconds", type=float, default=90)
    ap.add_argument("--found", default=str(HERE / "found"))
    ap.add_argument("--coil", default=str(REPO / "build" / "coil"))
    ap.add_argument("--work", default=str(REPO / "build" / "difftest"))
    ap.add_argument("--results", help="write one JSON line per seed here")
    ap.add_argument("--summarize", metavar="RESULTS", help="no runs: the summary of a --results file")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8, help="programs merged into one graph for the compiled runs")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one coil run may take")
    ap.add_argument("--minutes", type=float, default=0, help="stop starting seeds after this long")
    ap.add_argument("--cuda", action="store_true", help="on a machine with a GPU: also run each program "
                    "as coil's GPU code, against CUDA eager's outputs (the configuration \"cuda\")")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")   # torch's deprecation notes, while results come back from workers
    os.environ.setdefault("COIL_CACHE_DIR", str(REPO / "build-test-cache"))
    seeds = CI_SEEDS if args.ci else parse_seeds(args.seeds)
    results = read_results(args.summarize) if args.summarize else run_all(seeds, args)
    print(summary(results))
    if not args.ci:
        return 0
    problems = ci_verdict(results)
    for p in problems:
        print("difftest:", p, file=sys.stderr)
    return 1 if problems else 0


def run_all(seeds: range, args) -> list[dict]:
    start = time.time()
    results, log = [], open(args.results, "w") if args.results else None
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        pending = enumerate(chunks(seeds, args.batch))
        running, jobs = set(), {}
        while True:
            while len(running) < args.jobs and not (args.minutes and time.time() - start > args.minutes * 60):
                job = next(pending, None)
                if job is None:
                    break
                f = pool.submit(run_chunk, (job[1], job[0], args))
                jobs[f] = job[1]
                running.add(f)
            if not running:
                break
            done, running = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                for r in chunk_results(f, jobs[f]):
                    results.append(r)
                    report_seed(r, log)
    results.sort(key=lambda r: r["seed"])
    print(f"{time.time() - start:.0f} s", flush=True)
    return results


def chunk_results(f: concurrent.futures.Future, seeds: list[int]) -> list[dict]:
    """The chunk's results, or each of its seeds as a failure of the tester itself (counted, never
    taken for a pass), so that one bad seed does not end a long run."""
    try:
        return f.result()
    except Exception as e:  # noqa: BLE001
        why = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
        return [{"seed": s, "graph": "tester_error", "why": why, "outcomes": []} for s in seeds]


def report_seed(r: dict, log) -> None:
    print(f"seed {r['seed']}: {r['graph']}" + "".join(
        f"  [{o['config']}: {o['kind']} {o['op'] or o['detail'][:120]}]" for o in r["outcomes"]
        if o["kind"] != "pass"), flush=True)
    if log:
        log.write(json.dumps(r) + "\n")
        log.flush()


if __name__ == "__main__":
    sys.exit(main())
