"""coil's Triton GPU backend against PyTorch eager and torch.compile (Inductor) on CUDA.

Run on purpose, not as a test, on a machine with an NVIDIA GPU:

    python3 bench/gpu_bench.py [--only NAME]... [--reps R] [--calls N] [--json FILE] [--coil PATH] [--dynamic]

The workloads are cpu_bench's kernel suite (64M-float vectors, 8192x4096 matrices). coil runs
in two variants (VARIANTS), each with caches of its own: `coil`, its defaults, and `tuned`,
with autotuning and CUDA graphs on. For each workload the script:
- exports the aten graph with torch.export (cpu_bench.export_graph, CPU example inputs: the
  graph's `cpu` annotations do not matter, coil compiles it for the GPU) and writes the
  inputs, by placeholder name, to inputs.safetensors;
- times `coil compile --device cuda` cold (a fresh process, empty coil and Triton caches, so
  it includes Triton's compile of every kernel) and warm (the same command, same caches);
- checks coil once against eager's outputs on the GPU (`coil run --expect`), FAIL in the
  table when they differ;
- times, in --reps rounds that take turns: `coil run --device cuda --bench N` (its median
  per call), eager and torch.compile (default mode) in this process (N calls after 3
  warm-up calls, in runs of 10 back-to-back calls between two CUDA events, the median per
  call); each figure is the median of the rounds' medians;
- times Inductor's compile cold (a fresh Python process with empty Inductor and Triton
  caches, measured as the first call) and warm (a second fresh process, same caches).
The bytes each workload must move at least are given as a share of a device-to-device copy
of 256 MiB timed in the same run (read + write).

With --dynamic instead: each workload exported twice, with static sizes and with every dim
of every input symbolic (cpu_bench.export_dynamic: torch.export's Dim.AUTO, as
torch.compile's dynamic=True marks them), each compiled once by `coil compile --device cuda`
(the symbolic one at the suite's sizes as hints), each checked against eager's outputs
(`coil run --expect`) and timed by `coil run --bench` at the suite's sizes, taking turns;
the table gives the medians, their ratio, the compile times and the kernels of each.

Both sides are timed the same way: runs of 10 calls back to back between one pair of CUDA
events, so that the host's work for a call overlaps the GPU's work for the one before (timing
each call alone between events, with a wait, charged Inductor about 50 us of Python per call
on the GPU's clock). What a call does still differs: coil's figure covers its kernel launches
with the inputs already on the device and its outputs allocated once; eager's and Inductor's
cover whole Python calls, with their dispatch and output allocation.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import cpu_bench  # noqa: E402  (the workload list and the export are shared with the CPU benchmark)

# torch.export's pytree warns on every export (LeafSpec's deprecation), between the table's rows.
warnings.filterwarnings("ignore", category=FutureWarning, message=".*LeafSpec")

COPY_BYTES = 256 * 1024 * 1024
# coil as it compiles by default, and with autotuning and CUDA graphs on: each variant
# compiles (cold and warm) with caches of its own, is checked and is timed.
VARIANTS = {"coil": {}, "tuned": {"COIL_TRITON_AUTOTUNE": "1", "COIL_TRITON_CUDAGRAPHS": "1"}}
MEDIAN_RE = re.compile(r"median ([-+0-9.eE]+|nan|inf) us per call")


def commit():
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        if head.returncode != 0:
            return "unknown", False
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True)
        return head.stdout.strip(), bool(dirty.stdout.strip())
    except OSError:
        return "unknown", False


def triton_version():
    try:
        import triton
        return triton.__version__
    except ImportError:
        return "not installed"


def tail(text, lines=8):
    return "\n".join(text.strip().splitlines()[-lines:])


def placeholder_names(graph_path):
    """The graph's inputs in order, as its forward's parameters name them."""
    with open(graph_path) as f:
        text = f.read()
    m = re.search(r"def forward\(self,?(.*?)\):", text, re.S)
    if not m:
        raise RuntimeError(f"no forward signature in {graph_path}")
    return re.findall(r"(\w+)\s*:\s*\"", m.group(1))


def host(t):
    """A contiguous CPU tensor that owns its memory, as safetensors wants."""
    return t.detach().to("cpu").contiguous().clone()


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def save_tensors(tensors, path):
    from safetensors.torch import save_file
    save_file({k: host(v) for k, v in tensors.items()}, path)


def run_coil(coil, args, cache, env_extra=None):
    """Runs coil with its cache (and Triton's) in `cache`; returns (seconds, CompletedProcess)."""
    env = dict(os.environ, COIL_CACHE_DIR=os.path.join(cache, "coil"), TRITON_CACHE_DIR=os.path.join(cache, "triton"))
    env.update(env_extra or {})
    start = time.perf_counter()
    r = subprocess.run([coil] + args, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, r


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


INDUCTOR_FIRST_CALL = """
import sys, time, torch
sys.path.insert(0, {bench!r})
import cpu_bench
torch.set_grad_enabled(False)
torch.manual_seed(0)
f, make, _ = cpu_bench.workloads()[{name!r}]
x = [t.cuda() for t in make()]
torch.cuda.synchronize()
g = torch.compile(cpu_bench.Fn(f))
t = time.perf_counter()
g(*x)
torch.cuda.synchronize()
print("first call", time.perf_counter() - t)
"""


def inductor_first_call(name, cache):
    """Seconds of the first call of torch.compile in a fresh Python process whose Inductor and
    Triton caches are under `cache`: a cold compile when they are empty, warm otherwise."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"),
               TRITON_CACHE_DIR=os.path.join(cache, "triton"))
    r = subprocess.run([sys.executable, "-c", INDUCTOR_FIRST_CALL.format(bench=BENCH, name=name)],
                       capture_output=True, text=True, env=env)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("first call "):
            return float(line.split()[-1])
    print(f"  inductor compile in a fresh process failed (exit {r.returncode}):\n{tail(r.stderr)}", flush=True)
    return float("nan")


# Calls per timed run: back to back between one pair of CUDA events, so that the host's
# work for one call (Python, dispatch, launches) overlaps the GPU's work for the one before,
# as in a model; coil's `--bench` times its calls the same way (CudaProgram::median_seconds).
RUN = 10


def time_calls(fn, calls, warmup=3):
    """Median microseconds per call over runs of RUN back-to-back calls (`calls` in all, at
    least one run), each run between two CUDA events on the current stream, after `warmup`
    calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(max(calls // RUN, 1)):
        start.record()
        for _ in range(RUN):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / RUN)
    return statistics.median(times)


def copy_bandwidth(calls):
    """Bytes per second of a device-to-device copy of 256 MiB into a preallocated tensor,
    counting the read and the write."""
    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    us = time_calls(lambda: dst.copy_(src), calls)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * COPY_BYTES / (us * 1e-6)


def fmt(v, spec, missing="—"):
    return missing if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def markdown(rows):
    cols = ["workload", "coil us", "tuned us", "eager us", "inductor us", "inductor/coil", "inductor/tuned",
            "coil %bw", "tuned %bw", "inductor %bw", "coil cold s", "tuned cold s", "coil warm s", "inductor cold s",
            "inductor warm s"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    pct = lambda v: fmt(None if v is None else v * 100, ".0f") + ("%" if v is not None and not math.isnan(v) else "")
    for r in rows:
        cells = {}
        for v in VARIANTS:
            cell = fmt(r[f"{v}_us"], ".1f")
            if r[f"{v}_check"] == "FAIL":
                cell += " FAIL"
            elif r[f"{v}_check"] not in ("PASS", None):
                cell = r[f"{v}_check"]
            cells[v] = cell
        out.append("| " + " | ".join([
            r["workload"], cells["coil"], cells["tuned"], fmt(r["eager_us"], ".1f"), fmt(r["inductor_us"], ".1f"),
            fmt(r["inductor_over_coil"], ".2f"), fmt(r["inductor_over_tuned"], ".2f"), pct(r["coil_bw"]),
            pct(r["tuned_bw"]), pct(r["inductor_bw"]), fmt(r["coil_cold_s"], ".2f"), fmt(r["tuned_cold_s"], ".2f"),
            fmt(r["coil_warm_s"], ".3f"), fmt(r["inductor_cold_s"], ".1f"), fmt(r["inductor_warm_s"], ".2f")]) + " |")
    return "\n".join(out)


def bench_workload(name, f, make, min_bytes, args, work, bw):
    row = dict(workload=name, min_bytes=min_bytes, eager_us=None, inductor_us=None, inductor_bw=None,
               inductor_cold_s=None, inductor_warm_s=None, eager_us_reps=[], inductor_us_reps=[])
    for v in VARIANTS:
        row.update({f"{v}_check": None, f"{v}_us": None, f"inductor_over_{v}": None, f"{v}_bw": None,
                    f"{v}_cold_s": None, f"{v}_warm_s": None, f"{v}_us_reps": []})
    d = fresh_dir(os.path.join(work, name))
    graph = os.path.join(d, "graph.py")
    in_file, expect_file = os.path.join(d, "inputs.safetensors"), os.path.join(d, "expected.safetensors")
    ind_cache = os.path.join(d, "inductor_cache")
    caches = {v: os.path.join(d, f"{v}_cache") for v in VARIANTS}

    # The graph and its inputs, on the CPU.
    torch.manual_seed(0)
    inputs = make()
    graph_inputs = cpu_bench.export_graph(f, inputs, graph)
    names = placeholder_names(graph)
    if len(names) != len(graph_inputs):
        raise RuntimeError(f"{name}: the graph has {len(names)} placeholders ({names}) for {len(graph_inputs)} inputs")
    save_tensors(dict(zip(names, graph_inputs)), in_file)

    # coil's compile: cold with empty caches, warm from them. With autotuning, the cold
    # compile includes compiling and timing every config.
    for v, env in VARIANTS.items():
        fresh_dir(caches[v])
        compile_args = ["compile", graph, "--device", "cuda", "--out", os.path.join(d, f"{v}_out")]
        cold, r = run_coil(args.coil, compile_args, caches[v], env)
        if r.returncode != 0:
            print(f"  coil ({v}) compile failed:\n{tail(r.stderr)}", flush=True)
            row[f"{v}_check"] = "compile failed"
        else:
            row[f"{v}_cold_s"] = cold
            warm, r = run_coil(args.coil, compile_args, caches[v], env)
            row[f"{v}_warm_s"] = warm if r.returncode == 0 else None

    if args.dry_run:
        # No GPU needed: eager's outputs from the CPU, and coil's check of both files' names,
        # dtypes and sizes against the graph.
        save_tensors({f"out{i}": o for i, o in enumerate(as_list(f(*inputs)))}, expect_file)
        _, r = run_coil(args.coil, ["check", graph, "--inputs", in_file, "--expect", expect_file], caches["coil"])
        if r.returncode != 0:
            print(f"  coil check of the tensor files failed:\n{tail(r.stdout + r.stderr)}", flush=True)
        for v in VARIANTS:
            row[f"{v}_check"] = row[f"{v}_check"] or ("files ok" if r.returncode == 0 else "files FAIL")
        return row

    # Correctness: coil once against eager's outputs from the GPU.
    dev_inputs = [t.cuda() for t in inputs]
    save_tensors({f"out{i}": o for i, o in enumerate(as_list(f(*dev_inputs)))}, expect_file)
    timed = {}
    for v, env in VARIANTS.items():
        timed[v] = row[f"{v}_check"] is None
        if not timed[v]:
            continue
        if name in cpu_bench.RANDOM:
            # Random outputs: checked by the workload's own function, not against eager's numbers.
            saved = os.path.join(d, f"{v}_outputs.safetensors")
            _, r = run_coil(args.coil, ["run", graph, "--device", "cuda", "--inputs", in_file, "--save", saved],
                            caches[v], env)
            if r.returncode == 0:
                try:
                    from safetensors.torch import load_file
                    got = load_file(saved)
                    cpu_bench.RANDOM[name]([got[f"out{i}"] for i in range(len(got))], inputs)
                except AssertionError as e:
                    r = subprocess.CompletedProcess(r.args, 1, f"{r.stdout} FAIL {e}", r.stderr)
        else:
            _, r = run_coil(args.coil, ["run", graph, "--device", "cuda", "--inputs", in_file, "--expect", expect_file],
                            caches[v], env)
        row[f"{v}_check"] = "PASS" if r.returncode == 0 else "FAIL"
        if r.returncode != 0:
            print(f"  coil ({v}) check against eager (exit {r.returncode}):\n{tail(r.stdout + r.stderr)}", flush=True)
            timed[v] = " PASS" in r.stdout or " FAIL" in r.stdout  # a wrong answer is still timed; an error is not

    # Kernel times: coil's variants, eager and Inductor taking turns.
    torch._dynamo.reset()  # one Fn.forward for every workload: keep earlier compiles from counting as recompiles
    compiled = torch.compile(cpu_bench.Fn(f))
    compiled(*dev_inputs)
    for _ in range(args.reps):
        for v, env in VARIANTS.items():
            if not timed[v]:
                continue
            _, r = run_coil(args.coil, ["run", graph, "--device", "cuda", "--inputs", in_file, "--bench",
                                        str(args.calls)], caches[v], env)
            m = MEDIAN_RE.search(r.stdout)
            if r.returncode != 0 or not m:
                print(f"  coil ({v}) run --bench failed (exit {r.returncode}):\n{tail(r.stdout + r.stderr)}", flush=True)
                timed[v] = False
            else:
                row[f"{v}_us_reps"].append(float(m.group(1)))
        row["eager_us_reps"].append(time_calls(lambda: f(*dev_inputs), args.calls))
        row["inductor_us_reps"].append(time_calls(lambda: compiled(*dev_inputs), args.calls))
    del compiled, dev_inputs
    torch._dynamo.reset()
    torch.cuda.empty_cache()

    for k in list(VARIANTS) + ["eager", "inductor"]:
        reps = row[f"{k}_us_reps"]
        row[f"{k}_us"] = statistics.median(reps) if reps else None
    for v in VARIANTS:
        if row[f"{v}_us"] and row["inductor_us"]:
            row[f"inductor_over_{v}"] = row["inductor_us"] / row[f"{v}_us"]
    for k in list(VARIANTS) + ["inductor"]:
        if row[f"{k}_us"]:
            row[f"{k}_bw"] = min_bytes / (row[f"{k}_us"] * 1e-6) / bw

    # Inductor's compile: cold in a fresh process with empty caches, warm in another from them.
    fresh_dir(ind_cache)
    row["inductor_cold_s"] = inductor_first_call(name, ind_cache)
    row["inductor_warm_s"] = inductor_first_call(name, ind_cache)
    return row


def dynamic(args, work):
    """--dynamic: the kernel suite at static sizes against symbolic ones (see the top)."""
    print("| workload | symbols | static (us) | dynamic (us) | dynamic / static | check | compile static (s) | "
          "compile dynamic (s) | kernels static / dynamic |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    ratios, failed = [], []
    kernels_re = re.compile(r"(\d+) Triton kernels?\b")
    for name, (f, make, _) in cpu_bench.workloads().items():
        if args.only and name not in args.only:
            continue
        d = fresh_dir(os.path.join(work, name))
        torch.manual_seed(0)
        inputs = make()
        graphs = {"static": os.path.join(d, "static.py"), "dynamic": os.path.join(d, "dynamic.py")}
        graph_inputs = cpu_bench.export_graph(f, inputs, graphs["static"])
        values = cpu_bench.export_dynamic(f, inputs, graphs["dynamic"])
        in_file, expect_file = os.path.join(d, "inputs.safetensors"), os.path.join(d, "expected.safetensors")
        save_tensors(dict(zip(placeholder_names(graphs["static"]), graph_inputs)), in_file)
        save_tensors({f"out{i}": o for i, o in enumerate(as_list(f(*[t.cuda() for t in inputs])))}, expect_file)
        sizes = [a for k, v in values.items() for a in ("--size", f"{k}={v}")]
        compile_s, kernels, checks, reps = {}, {}, [], {k: [] for k in graphs}
        for k, graph in graphs.items():
            cache = fresh_dir(os.path.join(d, f"{k}_cache"))
            compile_s[k], r = run_coil(args.coil, ["compile", graph, "--device", "cuda", "--out", os.path.join(d, k)] +
                                       (sizes if k == "dynamic" else []), cache)
            m = kernels_re.search(r.stdout + r.stderr)
            kernels[k] = m.group(1) if r.returncode == 0 and m else "?"
            if name in cpu_bench.RANDOM:
                checks.append("random")
                continue
            _, r = run_coil(args.coil, ["run", graph, "--device", "cuda", "--inputs", in_file, "--expect", expect_file],
                            cache)
            checks.append("PASS" if r.returncode == 0 else "FAIL")
            if r.returncode != 0:
                print(f"  {name} ({k}) check against eager (exit {r.returncode}):\n{tail(r.stdout + r.stderr)}", flush=True)
        for _ in range(args.reps):
            for k, graph in graphs.items():
                _, r = run_coil(args.coil, ["run", graph, "--device", "cuda", "--inputs", in_file, "--bench",
                                            str(args.calls)], os.path.join(d, f"{k}_cache"))
                m = MEDIAN_RE.search(r.stdout)
                if r.returncode == 0 and m:
                    reps[k].append(float(m.group(1)))
        med = {k: statistics.median(v) if v else None for k, v in reps.items()}
        check = "PASS" if all(c in ("PASS", "random") for c in checks) else "FAIL"
        if check != "PASS" or None in med.values():
            failed.append(name)
        ratio = med["dynamic"] / med["static"] if None not in med.values() else None
        if ratio:
            ratios.append(ratio)
        print(f"| {name} | {', '.join(f'{k}={v}' for k, v in values.items())} | {fmt(med['static'], '.1f')} | "
              f"{fmt(med['dynamic'], '.1f')} | {fmt(ratio, '.2f')} | {check} | {compile_s['static']:.2f} | "
              f"{compile_s['dynamic']:.2f} | {kernels['static']} / {kernels['dynamic']} |", flush=True)
        if not args.work:
            shutil.rmtree(d, ignore_errors=True)
    if ratios:
        print(f"\ngeometric mean of dynamic / static: {statistics.geometric_mean(ratios):.3f}; worst {max(ratios):.3f}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", help="a workload to run (repeatable; default: all)")
    ap.add_argument("--reps", type=int, default=5, help="rounds of timing, taking turns (default 5)")
    ap.add_argument("--calls", type=int, default=100, help="timed calls per round and contender (default 100)")
    ap.add_argument("--json", help="write every figure here too")
    ap.add_argument("--coil", default=os.path.join(ROOT, "build", "coil"), help="the coil binary (default build/coil)")
    ap.add_argument("--work", help="keep the graphs, tensor files and caches in this folder (default: a temporary "
                                   "folder, removed at the end)")
    ap.add_argument("--dynamic", action="store_true", help="the kernel suite at static against symbolic sizes")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU needed: export the graphs, write the tensor files (eager's outputs from the CPU), "
                         "time coil's compiles and check the files with `coil check`; no kernel timing")
    args = ap.parse_args()
    args.coil = os.path.abspath(args.coil)
    if not os.access(args.coil, os.X_OK):
        sys.exit(f"no coil binary at {args.coil}: build it, or pass --coil PATH")
    suite = cpu_bench.workloads()
    for name in args.only or []:
        if name not in suite:
            sys.exit(f"unknown workload '{name}'; the suite has: {', '.join(suite)}")
    if args.dynamic and args.dry_run:
        sys.exit("--dynamic times kernels on the GPU: it takes no --dry-run")
    if not args.dry_run and not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device (use --dry-run to check the export and compile steps without one)")
    # coil compiles its Triton kernels in a helper Python: this one, which has torch's Triton,
    # unless the caller chose another.
    os.environ.setdefault("COIL_TRITON_PYTHON", sys.executable)
    torch.set_grad_enabled(False)  # inference, as the compiled graphs compute

    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="coil_gpu_bench_")
    os.makedirs(work, exist_ok=True)
    head, dirty = commit()
    info = dict(commit=head, uncommitted_changes=dirty, torch=torch.__version__, triton=triton_version(),
                gpu=torch.cuda.get_device_name() if not args.dry_run else None, reps=args.reps, calls=args.calls,
                dry_run=args.dry_run)
    bw = None
    if not args.dry_run:
        bw = copy_bandwidth(max(args.calls, 20))
        info["copy_bandwidth"] = bw
    print(f"GPU: {info['gpu'] or 'none (dry run)'}; torch {info['torch']}, triton {info['triton']}; "
          f"coil commit {head}{' with uncommitted changes' if dirty else ''}")
    if bw:
        print(f"copy bandwidth: {bw / 1e9:.0f} GB/s (read + write, 256 MiB device to device)")
    print(f"reps {args.reps}, calls {args.calls}; files in {work}", flush=True)

    if args.dynamic:
        try:
            return dynamic(args, work)
        finally:
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)
    rows = []
    try:
        for name, (f, make, min_bytes) in suite.items():
            if args.only and name not in args.only:
                continue
            print(f"{name} ...", flush=True)
            row = bench_workload(name, f, make, min_bytes, args, work, bw)
            rows.append(row)
            print(f"  coil {fmt(row['coil_us'], '.1f')} us, tuned {fmt(row['tuned_us'], '.1f')} us, eager "
                  f"{fmt(row['eager_us'], '.1f')} us, inductor {fmt(row['inductor_us'], '.1f')} us; check "
                  f"{row['coil_check']}/{row['tuned_check']}; compile coil {fmt(row['coil_cold_s'], '.2f')}/"
                  f"{fmt(row['coil_warm_s'], '.3f')} s, tuned {fmt(row['tuned_cold_s'], '.2f')} s, inductor "
                  f"{fmt(row['inductor_cold_s'], '.1f')}/{fmt(row['inductor_warm_s'], '.1f')} s (cold/warm)", flush=True)
            if not args.work:  # the tensor files of the large inputs add up
                shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(markdown(rows))
    print()
    geomeans = {}
    for v in VARIANTS:
        ratios = [r[f"inductor_over_{v}"] for r in rows if r[f"inductor_over_{v}"] and r[f"{v}_check"] == "PASS"]
        geomeans[v] = statistics.geometric_mean(ratios) if ratios else None
        if ratios:
            print(f"geometric mean of inductor/{v}: {geomeans[v]:.2f} (over {len(ratios)} workloads that passed the check)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(info, variants=VARIANTS, geomean_inductor_over=geomeans, rows=rows), out, indent=1)


if __name__ == "__main__":
    sys.exit(main())
