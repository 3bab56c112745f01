"""coil's CPU backend against PyTorch eager and torch.compile (Inductor's C++ backend).

Run on purpose, not as a test:  .venv/bin/python bench/cpu_bench.py [--only NAME] [--reps N]

For each workload of the kernel suite (at the suite's sizes: 64M-float vectors, 8192x4096
matrices, more than this machine's caches hold) the script exports the aten graph with
torch.export, compiles it with `coil compile` (the C++ backend), loads the shared library
with ctypes and calls it on torch tensors' memory; eager and torch.compile run in the
same process on the same inputs. Each of the three is timed as whole calls, the three
alternating, and the median over --reps rounds is reported, with the bytes each workload
must move at least as a share of the copy bandwidth measured in the same run: `%bw`
against a copy into a tensor allocated once, `%fresh` against a copy into a fresh tensor
per call (`clone`), which is what every contender's call does with its outputs (256 MiB
outputs are fresh pages, first touched by the kernel). coil is also timed writing the
same output memory every call (`coil kept ms`, `kept %bw` against the kept copy): the
kernels' own speed, as a caller that owns its outputs sees it. Compile
time: coil cold (empty cache, fresh process) and warm (cached); Inductor cold (fresh
process, its cache directory emptied) and warm.

With --dynamic instead: each workload of the kernel suite exported twice, with static sizes
and with every dim of every input symbolic (torch.export's Dim.AUTO, as torch.compile's
dynamic=True marks them), each compiled by `coil compile`; both are called at the suite's
sizes into outputs they keep (coil_run against coil_run_sized: the kernels' own time), taking
turns, and the table gives the medians, their ratio, and the compile times.
"""
import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COIL = os.path.join(ROOT, "build", "coil")
N = 64 * 1024 * 1024
R, C = 8192, 4096


def workloads():
    f32 = torch.float32
    return {
        "pointwise_chain": (lambda x: (x * 2 + 1).relu(), lambda: [torch.randn(N)], 2 * N * 4),
        "gelu_mul": (lambda x, y: torch.nn.functional.gelu(x) * y, lambda: [torch.randn(N), torch.randn(N)], 3 * N * 4),
        "bcast_add_tanh": (lambda x, b: torch.tanh(x + b), lambda: [torch.randn(R, C), torch.randn(C)], 2 * R * C * 4),
        "softmax_lastdim": (lambda x: torch.softmax(x, -1), lambda: [torch.randn(R, C)], 2 * R * C * 4),
        "layernorm": (lambda x, w, b: torch.nn.functional.layer_norm(x, [C], w, b),
                      lambda: [torch.randn(R, C), torch.randn(C), torch.randn(C)], 2 * R * C * 4),
        "residual_ln": (lambda x, r: torch.nn.functional.layer_norm(x + r, [C]) * 0.5 + x,
                        lambda: [torch.randn(R, C), torch.randn(R, C)], 3 * R * C * 4),
        "rmsnorm_bf16": (lambda x, w: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16) * w,
                         lambda: [torch.randn(R, C, dtype=torch.bfloat16), torch.randn(C, dtype=torch.bfloat16)], 2 * R * C * 2),
        "sum_all": (lambda x: x.sum(), lambda: [torch.randn(N)], N * 4),
        "sum_dim0": (lambda x: x.sum(0), lambda: [torch.randn(R, C)], R * C * 4),
        "transpose_add": (lambda x, y: x + y.t(), lambda: [torch.randn(R, C), torch.randn(C, R)], 3 * R * C * 4),
        "var_mean_lastdim": (lambda x: torch.var_mean(x, -1), lambda: [torch.randn(R, C)], R * C * 4),
        # Dropout in training as a transformer's residual applies it: random, checked by RANDOM.
        "dropout_residual": (lambda x, y: x + torch.nn.functional.dropout(y, 0.1, training=True),
                             lambda: [torch.randn(R, C), torch.randn(R, C)], 3 * R * C * 4),
    }


def check_dropout_residual(outputs, inputs):
    """x + dropout(y, 0.1): x where y was dropped, x + y / 0.9 elsewhere, kept at a rate of 0.9
    (five standard errors)."""
    (out,), (x, y) = outputs, [t.to(outputs[0].device) for t in inputs]
    kept = out != x
    assert torch.allclose(out[kept], (x + y / 0.9)[kept], rtol=1e-4, atol=1e-4), "kept elements are not x + y / 0.9"
    rate, n = kept.double().mean().item(), kept.numel()
    assert abs(rate - 0.9) < 5 * (0.09 / n) ** 0.5, f"keep rate {rate:.5f}, expected 0.9"


# Workloads whose outputs are random: each checked by its function of (outputs, inputs), never
# against eager's numbers, which come from another generator.
RANDOM = {"dropout_residual": check_dropout_residual}


def model_blocks():
    """The ResNet and transformer blocks of the test fixtures (scripts/capture_fixtures.py),
    at sizes where the work outweighs the per-call overhead: f32 inference, no bytes bound."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import capture_fixtures as cf

    def block(build, make):
        def run_setup():
            torch.manual_seed(0)
            return build().eval()
        return run_setup, make

    b, t = 8, 128
    mask = lambda: torch.cat([torch.ones(b, t - 16, dtype=torch.int64), torch.zeros(b, 16, dtype=torch.int64)], 1)
    return {
        "model_gpt2_block": block(lambda: cf.GPT2Block(d=256, heads=4, T=t), lambda: [torch.randn(b, t, 256)]),
        "model_bert_layer": block(lambda: cf.BertLayer(d=256, heads=4), lambda: [torch.randn(b, t, 256), mask()]),
        "model_llama_block": block(lambda: cf.LlamaBlock(d=256, heads=4, kv_heads=2, T=t, hidden=688),
                                   lambda: [torch.randn(b, t, 256)]),
        "model_vit_tiny": block(lambda: cf.TinyViT(img=32, patch=4, d=64, heads=4, depth=2), lambda: [torch.randn(16, 3, 32, 32)]),
        "model_resnet_tiny": block(lambda: cf.TinyResNet(), lambda: [torch.randn(16, 3, 32, 32)]),
    }


class Fn(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *a):
        return self.f(*a)


class CoilGraph:
    """A graph compiled by coil, called through the entry points of coil/artifact.h."""

    class Desc(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                    ("sizes", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                    ("storage_offset", ctypes.c_int64), ("storage_elements", ctypes.c_int64),
                    ("kind", ctypes.c_int32), ("alias_index", ctypes.c_int32)]

    DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
              torch.int16, torch.int8, torch.uint8, torch.bool]

    def __init__(self, so_path):
        self.lib = ctypes.CDLL(so_path)
        for f in ("coil_input", "coil_output"):
            getattr(self.lib, f).restype = ctypes.POINTER(CoilGraph.Desc)
        self.lib.coil_run.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        self.n_out = self.lib.coil_num_outputs()
        self.descs = [self.lib.coil_output(i).contents for i in range(self.n_out)]
        # A graph that draws random numbers takes its state (seed, offset) as its last input.
        n_in = self.lib.coil_num_inputs()
        self.random = n_in > 0 and self.lib.coil_input(n_in - 1).contents.name == b"coil.random_state"
        self.state = torch.tensor([12345, 0], dtype=torch.int64)
        for d in self.descs:
            assert d.kind == 0, "the benchmark expects outputs coil writes"

    def bind(self, inputs):
        inputs = [*inputs, self.state] if self.random else inputs
        self.in_ptrs = (ctypes.c_void_p * len(inputs))(*[t.data_ptr() for t in inputs])
        self.kept = self.fresh_outputs()
        self.kept_ptrs = (ctypes.c_void_p * max(self.n_out, 1))(*[s.data_ptr() for s in self.kept])

    def fresh_outputs(self):
        return [torch.empty(max(d.storage_elements, 1), dtype=self.DTYPES[d.dtype]) for d in self.descs]

    def into_kept_outputs(self):
        """One call writing the same output memory every time (a caller that owns its
        outputs): the kernels' own speed, without the first touch of fresh pages."""
        status = self.lib.coil_run(self.in_ptrs, self.kept_ptrs)
        assert status == 0, f"coil_run returned {status}"

    def __call__(self):
        # Fresh outputs on every call, as eager and torch.compile allocate theirs.
        storages = self.fresh_outputs()
        out_ptrs = (ctypes.c_void_p * max(self.n_out, 1))(*[s.data_ptr() for s in storages])
        status = self.lib.coil_run(self.in_ptrs, out_ptrs)
        assert status == 0, f"coil_run returned {status}"
        return [torch.as_strided(s, [d.sizes[k] for k in range(d.rank)], [d.strides[k] for k in range(d.rank)],
                                 d.storage_offset) for s, d in zip(storages, self.descs)]


def export_graph(f, inputs, path):
    """Writes the aten graph of f(*inputs) and returns the graph's inputs in order: a
    module's parameters and buffers (lifted by torch.export), then the user inputs."""
    # The default table for modules, as the fixtures' models (it decomposes linear and
    # conv2d, which inference mode would keep); the empty one for the kernel suite.
    module = isinstance(f, torch.nn.Module)
    ep = torch.export.export(Fn(f), tuple(inputs))
    ep = ep.run_decompositions() if module else ep.run_decompositions({})
    with open(path, "w") as out:
        out.write(ep.graph_module.print_readable(print_output=False, include_stride=True, include_device=True))
    user = iter(inputs)
    ordered = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT:
            ordered.append(next(user))
        elif spec.target in ep.state_dict:
            ordered.append(ep.state_dict[spec.target])
        else:
            ordered.append(ep.constants[spec.target])
    return [t.contiguous() if not t.is_contiguous() else t for t in ordered]


def coil_compile(graph, out_dir, cache_dir, extra=()):
    env = dict(os.environ, COIL_CACHE_DIR=cache_dir)
    start = time.perf_counter()
    r = subprocess.run([COIL, "compile", graph, "--out", out_dir, *extra], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return time.perf_counter() - start


def inductor_cold_compile(name, reps_dir):
    """Inductor's compile in a fresh process with an empty cache, in seconds."""
    cache = tempfile.mkdtemp(prefix="inductor_cold_")
    code = f"""
import sys, time, torch
sys.path.insert(0, {ROOT + '/bench'!r})
from cpu_bench import workloads, Fn, model_blocks
all_ = dict(workloads())
all_.update({{k: (v[0](), v[1], None) for k, v in model_blocks().items()}} if {name!r}.startswith("model_") else {{}})
f, make, _ = all_[{name!r}]
torch.set_grad_enabled(False)
torch.manual_seed(0)
x = make()
g = torch.compile(Fn(f))
t = time.perf_counter(); g(*x); print(time.perf_counter() - t)
"""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    shutil.rmtree(cache, ignore_errors=True)
    return float(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else float("nan")


def copy_bandwidth(reps):
    """Bytes per second of a copy of N floats (read + write): into a tensor allocated once,
    and into a fresh one per call (`clone`: the pages are touched for the first time, as the
    outputs every contender allocates per call are)."""
    src, dst = torch.randn(N), torch.empty(N)
    kept, fresh = [], []
    for _ in range(reps):
        t = time.perf_counter()
        dst.copy_(src)
        kept.append(time.perf_counter() - t)
        t = time.perf_counter()
        src.clone()
        fresh.append(time.perf_counter() - t)
    return 2 * N * 4 / statistics.median(kept), 2 * N * 4 / statistics.median(fresh)


def each_workload(suite, only, work):
    """(name, f, inputs, min_bytes, folder) of each workload of `suite` that `only` names (all
    without it), its inputs made and a folder of its own made under `work`."""
    for name, (f, make, min_bytes) in suite.items():
        if only and name not in only:
            continue
        d = os.path.join(work, name)
        os.makedirs(d)
        yield name, f, make(), min_bytes, d


def export_dynamic(f, inputs, path):
    """Writes the aten graph of f(*inputs) with every dim of every input symbolic where
    export keeps it so (Dim.AUTO), and returns the symbols' values: {name: size}."""
    auto = torch.export.Dim.AUTO
    shapes = tuple({d: auto for d in range(t.dim())} for t in inputs)
    ep = torch.export.export(Fn(f), tuple(inputs), dynamic_shapes=(shapes,)).run_decompositions({})
    with open(path, "w") as out:
        out.write(ep.graph_module.print_readable(print_output=False, include_stride=True, include_device=True))
    values = {}
    for node in ep.graph_module.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and isinstance(val, torch.Tensor):
            for n in val.shape:
                if isinstance(n, torch.SymInt) and n.node.expr.is_Symbol:
                    values[str(n.node.expr)] = n.node.hint
    return values


class SizedGraph(CoilGraph):
    """A graph of symbolic sizes called at the sizes compiled for, through coil_run_sized."""

    class Symbol(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("input", ctypes.c_int32), ("dim", ctypes.c_int32),
                    ("compiled", ctypes.c_int64)]

    def __init__(self, so_path):
        super().__init__(so_path)
        self.lib.coil_symbol.restype = ctypes.POINTER(SizedGraph.Symbol)
        n = self.lib.coil_num_symbols()
        assert n > 0, "the graph kept no symbol"
        self.sizes = (ctypes.c_int64 * n)(*[self.lib.coil_symbol(i).contents.compiled for i in range(n)])
        self.lib.coil_run_sized.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]

    def into_kept_outputs(self):
        status = self.lib.coil_run_sized(self.sizes, self.in_ptrs, self.kept_ptrs, None)
        assert status == 0, f"coil_run_sized returned {status}"


def dynamic(args):
    """--dynamic: the kernel suite, static sizes against symbolic ones (see the top)."""
    work = tempfile.mkdtemp(prefix="coil_bench_dynamic_")
    print(f"threads: coil {os.environ.get('COIL_NUM_THREADS', 'all')}; medians of {args.reps} calls each, taking turns")
    print("| workload | symbols | static (ms) | dynamic (ms) | dynamic / static | compile static (s) | compile dynamic (s) |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for name, f, inputs, _, d in each_workload(workloads(), args.only, work):
        graph_inputs = export_graph(f, inputs, os.path.join(d, "static.py"))
        values = export_dynamic(f, inputs, os.path.join(d, "dynamic.py"))
        cache = os.path.join(work, "cache")
        shutil.rmtree(cache, ignore_errors=True)
        static_s = coil_compile(os.path.join(d, "static.py"), os.path.join(d, "static"), cache)
        shutil.rmtree(cache, ignore_errors=True)
        sizes = [f"{k}={v}" for k, v in values.items()]
        dynamic_s = coil_compile(os.path.join(d, "dynamic.py"), os.path.join(d, "dynamic"), cache,
                                 [a for s_ in sizes for a in ("--size", s_)])
        graphs = {"static": CoilGraph(os.path.join(d, "static", "graph.so")),
                  "dynamic": SizedGraph(os.path.join(d, "dynamic", "graph.so"))}
        for g in graphs.values():
            g.bind(graph_inputs)
        times = {k: [] for k in graphs}
        for _ in range(2):
            for g in graphs.values():
                g.into_kept_outputs()
        if name not in RANDOM:
            for a, b in zip(graphs["static"].kept, graphs["dynamic"].kept):
                assert torch.equal(a, b) or torch.allclose(a.float(), b.float(), rtol=1e-5, atol=1e-5), \
                    f"{name}: the dynamic graph's outputs differ from the static one's"
        for _ in range(args.reps):
            for k, g in graphs.items():
                t = time.perf_counter()
                g.into_kept_outputs()
                times[k].append(time.perf_counter() - t)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        ratios.append(med["dynamic"] / med["static"])
        print(f"| {name} | {', '.join(sizes)} | {med['static']:.2f} | {med['dynamic']:.2f} | {ratios[-1]:.2f} | "
              f"{static_s:.2f} | {dynamic_s:.2f} |", flush=True)
    if ratios:
        print(f"\ngeometric mean of dynamic / static: {statistics.geometric_mean(ratios):.3f}; "
              f"worst {max(ratios):.3f}")
    shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--no-models", action="store_true", help="only the kernel suite, not the model blocks")
    ap.add_argument("--dynamic", action="store_true", help="the kernel suite at static against symbolic sizes")
    args = ap.parse_args()
    torch.set_grad_enabled(False)  # inference, as the compiled graphs compute
    torch.manual_seed(0)
    if args.dynamic:
        return dynamic(args)
    work = tempfile.mkdtemp(prefix="coil_bench_")
    cold_cache = os.path.join(work, "cold_cache")
    bw, bw_fresh = copy_bandwidth(args.reps)
    print(f"threads: torch {torch.get_num_threads()}, coil {os.environ.get('COIL_NUM_THREADS', 'all')}; "
          f"copy bandwidth {bw / 1e9:.1f} GB/s into a kept tensor, {bw_fresh / 1e9:.1f} GB/s into a fresh one "
          f"(clone) (read + write)")
    header = (f"{'workload':18} {'eager ms':>9} {'inductor ms':>11} {'coil ms':>8} {'ind/coil':>8} "
              f"{'coil %bw':>8} {'ind %bw':>8} {'coil %fresh':>11} {'ind %fresh':>10} {'coil kept ms':>12} "
              f"{'kept %bw':>8} {'coil cold s':>11} {'coil warm s':>11} {'ind cold s':>10} {'ind warm s':>10}")
    print(header)
    rows = []
    suite = dict(workloads())
    if not args.no_models:
        suite.update({k: (setup(), make, None) for k, (setup, make) in model_blocks().items()})
    for name, f, inputs, min_bytes, d in each_workload(suite, args.only, work):
        graph_inputs = export_graph(f, inputs, os.path.join(d, "graph.py"))
        shutil.rmtree(cold_cache, ignore_errors=True)
        try:
            coil_cold = coil_compile(os.path.join(d, "graph.py"), os.path.join(d, "out"), cold_cache)
        except RuntimeError as e:
            print(f"{name:18} coil failed: {e}", flush=True)
            continue
        coil_warm = coil_compile(os.path.join(d, "graph.py"), os.path.join(d, "out"), cold_cache)
        g = CoilGraph(os.path.join(d, "out", "graph.so"))
        g.bind(graph_inputs)
        # Every workload is a Fn.forward: without a reset, dynamo counts each new workload as
        # a recompile of the same frame and, past its recompile limit (8), runs it in eager.
        torch._dynamo.reset()
        compiled = torch.compile(Fn(f))
        t = time.perf_counter()
        compiled(*inputs)
        ind_warm = time.perf_counter() - t  # this process's cache may already hold it
        ind_cold = inductor_cold_compile(name, work)
        want = f(*inputs)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        got = g()
        if name in RANDOM:
            RANDOM[name](got, inputs)
            want = []
        for w, o in zip(want, got):
            tol = 1e-2 if w.dtype == torch.bfloat16 or min_bytes is None else 1e-3
            assert torch.allclose(o.float(), w.float(), rtol=tol, atol=tol * 10), f"{name}: coil's output differs from eager"
        times = {"eager": [], "inductor": [], "coil": [], "coil_kept": []}
        runs = {"eager": lambda: f(*inputs), "inductor": lambda: compiled(*inputs), "coil": g,
                "coil_kept": g.into_kept_outputs}
        for _ in range(2):  # warm up
            for r in runs.values():
                r()
        for _ in range(args.reps):
            for k, r in runs.items():
                t = time.perf_counter()
                r()
                times[k].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        row = dict(workload=name, eager_ms=med["eager"] * 1e3, inductor_ms=med["inductor"] * 1e3, coil_ms=med["coil"] * 1e3,
                   speedup=med["inductor"] / med["coil"], coil_bw=(min_bytes or float("nan")) / med["coil"] / bw,
                   inductor_bw=(min_bytes or float("nan")) / med["inductor"] / bw, coil_cold_s=coil_cold, coil_warm_s=coil_warm,
                   inductor_cold_s=ind_cold, inductor_warm_s=ind_warm,
                   coil_fresh_bw=(min_bytes or float("nan")) / med["coil"] / bw_fresh,
                   inductor_fresh_bw=(min_bytes or float("nan")) / med["inductor"] / bw_fresh,
                   coil_kept_ms=med["coil_kept"] * 1e3, coil_kept_bw=(min_bytes or float("nan")) / med["coil_kept"] / bw)
        rows.append(row)
        print(f"{name:18} {row['eager_ms']:9.2f} {row['inductor_ms']:11.2f} {row['coil_ms']:8.2f} {row['speedup']:8.2f} "
              f"{row['coil_bw'] * 100:7.0f}% {row['inductor_bw'] * 100:7.0f}% {row['coil_fresh_bw'] * 100:10.0f}% "
              f"{row['inductor_fresh_bw'] * 100:9.0f}% {row['coil_kept_ms']:12.2f} {row['coil_kept_bw'] * 100:7.0f}% "
              f"{coil_cold:11.2f} {coil_warm:11.3f} {ind_cold:10.2f} {ind_warm:10.2f}", flush=True)
    suite_rows = [r for r in rows if not r["workload"].startswith("model_")]
    if suite_rows:
        geo = statistics.geometric_mean([r["speedup"] for r in suite_rows])
        print(f"geometric mean of inductor/coil over the kernel suite: {geo:.2f}")
    model_rows = [r for r in rows if r["workload"].startswith("model_")]
    if model_rows:
        geo = statistics.geometric_mean([r["speedup"] for r in model_rows])
        print(f"geometric mean of inductor/coil over the model blocks: {geo:.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(copy_bandwidth=bw, copy_bandwidth_fresh=bw_fresh, rows=rows), out, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
