#!/usr/bin/env python3
"""OpInfo conformance: PyTorch's own op database (op_db) through coil, against eager.

For every op of op_db (or those named), the first samples of each dtype asked for are traced
to an aten graph with coil's decomposition table (the one the torch.compile backend uses:
PyTorch's core ATen decompositions less the ops coil compiles natively), printed as PyTorch
prints graphs, compiled by coil itself for each target (never through torch.compile, so a
sample passes only when coil compiled every op of it) and run; each output is compared with
eager's (on the same device: CPU eager for ref and cpu, CUDA eager for cuda) at coil's
tolerance (coil._C.tolerance: by dtype, scaled by sqrt(n) for reductions).

A sample is one of
  pass      every output within tolerance on every target;
  wrong     an output differs (the table names the first);
  refused   coil does not compile the graph (an op it lacks or refuses, with the reason);
  skipped   not a comparable sample: the trace failed, an output is not a tensor, a complex
            or sparse tensor, a random op (its numbers come from another generator).
With --inductor, the same samples through torch.compile (Inductor, with its ATen fallbacks)
on the CPU, compared the same way, beside coil's.

    .venv/bin/python scripts/opinfo_sweep.py --inductor --out tests/OPINFO.md   # the whole sweep, its table
    python3 scripts/opinfo_sweep.py --targets cuda --out tests/OPINFO_CUDA.md   # the same on a GPU (coil's package
                                                                                  # on PYTHONPATH)
    .venv/bin/python scripts/opinfo_sweep.py --subset     # the fixed subset CI runs (ctest opinfo)
    .venv/bin/python scripts/opinfo_sweep.py --ops sort,topk --targets ref,cpu,cuda-interpret
Options: --dtypes (float32,bfloat16,float16,int64,bool), --targets (ref,cpu; also cuda,
cuda-interpret), --samples N per op and dtype (2), --jobs N ops at once (one process each;
the CPU count), --shard K/N with --json F to split a sweep over runs and --report F... to
make the table of their rows, --merge TABLE to sweep a few ops again into a table:
    .venv/bin/python scripts/opinfo_sweep.py --ops multinomial --merge tests/OPINFO.md --out tests/OPINFO.md
Exit status: 1 when any sample is wrong (a refusal is not a failure: it names the op and why).
"""
from __future__ import annotations

import argparse
import collections
import itertools
import json
import multiprocessing
import os
import re
import sys
import time
import warnings

import torch
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx


from coil import _C, backend

# The ops CI sweeps (a few minutes): common elementwise, reductions, norms, indexing, views,
# sorts and the newer lowerings; chosen to touch every lowering family.
SUBSET = ["abs", "add", "mul", "div", "where", "clamp", "sigmoid", "tanh", "exp", "log1p", "pow", "atan2",
          "sum", "mean", "amax", "var", "std", "prod", "cumsum", "logsumexp", "softmax", "log_softmax",
          "nn.functional.layer_norm", "nn.functional.group_norm", "nn.functional.gelu", "nn.functional.silu",
          "index_select", "gather", "scatter_add", "index_put", "masked_fill", "cat", "stack", "flip", "roll",
          "narrow", "transpose", "permute", "expand", "repeat", "diagonal", "sort", "topk", "argmax",
          "nn.functional.embedding", "nn.functional.embedding_bag", "_native_batch_norm_legit", "nn.functional.max_pool2d", "nn.functional.avg_pool2d",
          "nn.functional.grid_sample", "cdist", "linalg.vector_norm", "addmm", "bmm", "matmul", "lgamma",
          "erfinv"]

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64,
          "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
_CODES = {t: i for i, t in enumerate(backend._DTYPES)}


class Skip(Exception):
    pass


def tensor_args(sample):
    """The sample as (leaves, spec, positions of the tensor leaves)."""
    leaves, spec = pytree.tree_flatten(((sample.input, *sample.args), sample.kwargs))
    positions = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    for i in positions:
        t = leaves[i]
        if t.is_complex() or t.layout != torch.strided or t.is_quantized:
            raise Skip("a complex, sparse or quantized input")
    return leaves, spec, positions


def own_storage(t, copy=False):
    """`t` with the same sizes and strides in a storage of its own, from offset 0: a graph
    input is its own storage, so an op that reads storage (as_strided) means the same to
    eager and to coil only then. With `copy`, always a new tensor."""
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0
    if not copy and t.storage_offset() == 0 and t.untyped_storage().nbytes() == span * t.element_size():
        return t
    copy = torch.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype)
    copy.copy_(t)
    return copy


def as_function(op, leaves, spec, positions):
    def fn(*tensors):
        filled = list(leaves)
        for i, t in zip(positions, tensors):
            filled[i] = t
        args, kwargs = pytree.tree_unflatten(filled, spec)
        return op(*args, **kwargs)
    return fn


def trace(fn, inputs):
    """fn as a functional aten graph with coil's decomposition table, as AOTAutograd gives the
    torch.compile backend: decomposed, then mutations made functional (the decompositions'
    own among them; views stay views), an op that writes into its inputs applied to copies
    of them inside the graph."""
    from torch.func import functionalize

    table = backend.decompositions()

    def functional(f):
        decomposed = make_fx(f, decomposition_table=table)(*inputs)
        return make_fx(functionalize(decomposed, remove="mutations"), decomposition_table=table)(*inputs)
    gm = functional(fn)
    if any(n.target is torch.ops.aten.copy_.default for n in gm.graph.nodes):  # it writes an input
        gm = functional(lambda *ts: fn(*[t.clone() for t in ts]))
    return gm


def flat_outputs(out):
    flat = pytree.tree_leaves(out)
    if not flat or not all(isinstance(t, torch.Tensor) for t in flat):
        raise Skip("an output is not a tensor")
    if any(t.is_complex() for t in flat):
        raise Skip("a complex output")
    return flat


def run_coil(gm, inputs, target):
    """The outputs of gm compiled by coil for `target`, and the reduction sizes of each."""
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    compiled = _C.compile(text, target, [], "", "opinfo.py")
    placeholders = sum(n.op == "placeholder" for n in gm.graph.nodes)
    attrs = {n.name: n.target for n in gm.graph.nodes if n.op == "get_attr"}
    device = "cuda" if target == "cuda" else "cpu"
    given = [t.to(device) for t in inputs]
    for info in compiled.inputs[placeholders:]:
        if info[5]:  # random state: the graph draws numbers; never compared
            raise Skip("a random op")
        given.append(getattr(gm, attrs[info[0]]).to(device))
    ins = [(t.data_ptr(), _CODES[t.dtype], tuple(t.shape), t.stride(), t.get_device(), -1, -1) for t in given]
    outs = [torch.empty_strided(tuple(s), tuple(st), dtype=backend._DTYPES[code], device=device)
            for _, code, s, st, *_ in compiled.outputs]
    refs = [(o.data_ptr(), _CODES[o.dtype], tuple(o.shape), o.stride(), o.get_device(), -1, -1) for o in outs]
    compiled.run(ins, refs, torch.cuda.current_stream().cuda_stream if device == "cuda" else 0)
    if device == "cuda":
        torch.cuda.synchronize()
        outs = [o.cpu() for o in outs]
    return outs, [info[4] for info in compiled.outputs]


def mismatch(got, want, reduced):
    """None when `got` matches `want` at coil's tolerance, else what differs."""
    if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):
        return f"{got.dtype}{list(got.shape)} vs eager's {want.dtype}{list(want.shape)}"
    rtol, atol = _C.tolerance(_CODES[want.dtype], reduced)
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
    except AssertionError as e:
        return str(e).splitlines()[0] if str(e) else "values differ"
    return None


# The dtypes whose samples may match eager computed in float64 (and rounded) instead of eager.
UPCAST_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def upcast_reference(fn, inputs, want):
    """Eager's outputs computed from the inputs in float64 and rounded to eager's dtypes: the
    reference for a half-precision sample (as Inductor's own tests use), where eager's
    arithmetic in the narrow type is less exact than coil's in float32, and for a float32
    one, where eager's float32 special functions are less exact than coil's in float64
    (trigamma of negative numbers). None when the op does not run in float64."""
    try:
        wide = flat_outputs(fn(*[t.double() if t.dtype in UPCAST_DTYPES else t for t in inputs]))
    except Exception:  # noqa: BLE001
        return None
    if len(wide) != len(want):
        return None
    return [w.to(e.dtype) if w.is_floating_point() else w for w, e in zip(wide, want)]


# Ops whose outputs are uninitialized memory: only their sizes, strides and dtypes compare
# (coil's outputs are zeroed for the comparison, as eager's are).
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}

# Ops whose indices among equal values PyTorch leaves unspecified: an index output passes when
# it selects, from the input, the values output (output 0) it came with; argsort's indices, its
# only output, when they select what eager's select.
TIES = {"sort", "topk", "argsort", "kthvalue", "mode", "median", "nanmedian"}


def selects_values(inputs, values, indices):
    """Whether `indices` picks `values` out of the op's input along some dim."""
    source = inputs[0]
    if source.dim() == 0:
        return torch.equal(indices, torch.zeros_like(indices)) and mismatch(values, source.reshape(values.shape), 1) is None
    for d in range(source.dim()):
        try:
            picked = source.gather(d, indices if indices.dim() == source.dim() else indices.unsqueeze(d))
        except (RuntimeError, IndexError):
            continue
        if mismatch(picked.reshape(values.shape), values, 1) is None:
            return True
    return False


def same_selection(source, got, want):
    """Whether index tensors `got` and `want` pick the same values out of `source` along some dim."""
    for d in range(source.dim()):
        try:
            picked, wanted = source.gather(d, got), source.gather(d, want)
        except (RuntimeError, IndexError):
            continue
        if mismatch(picked, wanted, 1) is None:
            return True
    return False


def equally_frequent(source, got, want):
    """Whether each of `got`'s values is as frequent in its row of `source` (along some dim) as
    `want`'s: two modes of the same rows."""
    for d in range(source.dim()):
        g, w = (got, want) if got.dim() == source.dim() else (got.unsqueeze(d), want.unsqueeze(d))
        if g.shape != source.shape[:d] + (1,) + source.shape[d + 1:] or g.shape != w.shape:
            continue
        if torch.equal((source == g).sum(d), (source == w).sum(d)):
            return True
    return False


def compare(got, want, reduced, fn, inputs, op_name="", any_mode=False):
    """None when every output matches eager (or, for float32 and half precision, eager computed
    in float64 and rounded; for the indices of equal values, any that select the values), else what
    differs. With any_mode, mode's value may be any of the row's most frequent ones: CUDA eager
    picks among equally frequent values by its sort's order, by no rule coil could follow (it
    gives 5 for [5, 3, 4, 4, 5] and 9 for [9, -5, 9, -5, -7]; the CPU the smallest)."""
    if len(got) != len(want):
        return f"{len(got)} outputs for eager's {len(want)}"

    def a_mode(g, w):
        return any_mode and op_name == "mode" and inputs and equally_frequent(inputs[0], g, w)

    def differs(i, g, w, r):
        m = mismatch(g, w, r)
        if m and i == 0 and a_mode(g, w):
            return None
        if m and op_name in TIES and g.dtype == torch.int64 and g.shape == w.shape:
            values_match = mismatch(got[0], want[0], reduced[0]) is None or a_mode(got[0], want[0])
            if i > 0 and values_match and selects_values(inputs, got[0], g):
                return None
            if len(got) == 1 and inputs and same_selection(inputs[0], g, w):
                return None
        return m
    bad = next(((i, m) for i, (g, w, r) in enumerate(zip(got, want, reduced)) if (m := differs(i, g, w, r))), None)
    if bad is None:
        return None
    if any(w.dtype in UPCAST_DTYPES for w in want):
        wide = upcast_reference(fn, inputs, want)
        if wide is not None and all(mismatch(g, w, r) is None for g, w, r in zip(got, wide, reduced)):
            return None
    return f"output {bad[0]}: {bad[1]}"


def check_sample(op, sample, targets, inductor):
    """(coil's outcome, its detail, Inductor's outcome or None)."""
    leaves, spec, positions = tensor_args(sample)
    fn = as_function(op, leaves, spec, positions)
    inputs = [own_storage(leaves[i]) for i in positions]
    want = flat_outputs(fn(*[own_storage(t, copy=True) for t in inputs]))  # an in-place op leaves `inputs` as they are
    if op.name in UNINITIALIZED:
        want = [torch.zeros_like(w) for w in want]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gm = trace(fn, inputs)
    except Exception as e:  # noqa: BLE001  (PyTorch's tracer raises many kinds)
        raise Skip(f"the trace failed: {type(e).__name__}")
    outcome, detail = "pass", ""
    for target in targets:
        graph, expected = gm, want
        if target == "cuda":
            # Eager on the same device, first: its libraries round as coil's, and a sample
            # CUDA eager cannot run (integer matrix products) is no sample for coil there.
            try:
                on_device = flat_outputs(fn(*[own_storage(t, copy=True).cuda() for t in inputs]))
            except Skip:
                raise
            except Exception as e:  # noqa: BLE001
                raise Skip(f"eager on CUDA failed: {type(e).__name__}")
            if op.name not in UNINITIALIZED:
                expected = [w.cpu() for w in on_device]
            try:  # traced on the device: a graph's sizes can differ by device (saved batch-norm stats)
                graph = trace(fn, [own_storage(t, copy=True).cuda() for t in inputs])
            except Exception as e:  # noqa: BLE001
                raise Skip(f"the trace on CUDA failed: {type(e).__name__}")
        try:
            got, reduced = run_coil(graph, inputs, target)
        except _C.CoilError as e:
            outcome, detail = "refused", str(e).splitlines()[0]
            break
        if op.name in UNINITIALIZED:
            got = [torch.zeros_like(g) for g in got]
        problem = compare(got, expected, reduced, fn, inputs, op.name, any_mode=target == "cuda")
        if problem:
            outcome, detail = "wrong", f"{target}, {problem}"
            break
    ind = None
    if inductor:
        try:
            torch._dynamo.reset()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = flat_outputs(torch.compile(fn, backend="inductor")(*[own_storage(t, copy=True) for t in inputs]))
            if op.name in UNINITIALIZED:
                got = [torch.zeros_like(g) for g in got]
            ind = "pass" if compare(got, want, [1] * len(got), fn, inputs, op.name) is None else "wrong"
        except Exception:  # noqa: BLE001
            ind = "error"
    return outcome, detail, ind


def sweep_op(job):
    """One op of op_db over its samples: (row name, counts, its first problem)."""
    index, dtypes, targets, samples, inductor = job
    from torch.testing._internal.common_methods_invocations import op_db
    op = op_db[index]
    counts = {"pass": 0, "wrong": 0, "refused": 0, "skipped": 0, "inductor_pass": 0, "inductor_run": 0}
    first, tested = "", []
    for dtype in dtypes:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        torch.manual_seed(index)
        try:
            cases = list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False), samples))
        except Exception:  # noqa: BLE001
            continue
        for sample in cases:
            try:
                outcome, detail, ind = check_sample(op, sample, targets, inductor)
            except Exception:  # noqa: BLE001  (Skip, or eager failing on a sample: not comparable)
                counts["skipped"] += 1
                continue
            counts[outcome] += 1
            name = str(dtype).replace("torch.", "")
            if name not in tested:
                tested.append(name)
            if outcome != "pass" and not first:
                first = f"{name}: {detail}"
            if ind is not None:
                counts["inductor_run"] += 1
                counts["inductor_pass"] += ind == "pass"
    name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    return index, name, counts, first, tested


def _worker_init():
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")


def main() -> int:
    from torch.testing._internal.common_methods_invocations import op_db

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", help="comma-separated op names (OpInfo names: add, nn.functional.gelu, ...)")
    ap.add_argument("--subset", action="store_true", help="the ops CI sweeps")
    ap.add_argument("--dtypes", default="float32,bfloat16,float16,int64,bool")
    ap.add_argument("--targets", default="ref,cpu")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--inductor", action="store_true", help="also torch.compile (Inductor) on the same samples")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="ops swept at once, one process each")
    ap.add_argument("--shard", help="K/N: only every N-th op from the K-th (0-based), to split a sweep over runs")
    ap.add_argument("--json", help="write the rows here (for --report)")
    ap.add_argument("--report", nargs="+", help="no sweep: the table of the rows these --json files hold")
    ap.add_argument("--out", help="write the markdown table here")
    ap.add_argument("--merge", help="a table this script wrote: its rows, with those of the ops swept now replaced")
    args = ap.parse_args()
    if args.report:
        rows, meta = [], None
        for path in args.report:
            with open(path) as f:
                part = json.load(f)
            rows += [tuple(r) for r in part["rows"]]
            if meta is None:
                meta = dict(part["meta"], seconds=0)
                words = meta["command"].split()
                for flag in ("--shard", "--json"):  # the sweep the shards make up
                    if flag in words:
                        del words[words.index(flag):words.index(flag) + 2]
                meta["command"] = " ".join(words) + f" (as {len(args.report)} shards)"
            meta["seconds"] += part["meta"]["seconds"]
        return finish(sorted(rows), meta, args.out)
    names = set(SUBSET if args.subset else (args.ops.split(",") if args.ops else []))
    dtypes = [DTYPES[d] for d in args.dtypes.split(",")]
    targets = args.targets.split(",")
    indices = [i for i, op in enumerate(op_db) if not names or op.name in names]
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        indices = indices[k::n]
    jobs = [(i, dtypes, targets, args.samples, args.inductor) for i in indices]
    start, rows = time.time(), []
    meta = {"command": " ".join(["scripts/opinfo_sweep.py"] + sys.argv[1:]), "torch": torch.__version__,
            "seconds": 0, "samples": args.samples, "inductor": args.inductor,
            "dtypes": args.dtypes, "targets": args.targets,
            "machine": f"{os.cpu_count()} CPU cores" + (f", {torch.cuda.get_device_name()}" if "cuda" in targets else "")}
    with multiprocessing.get_context("spawn").Pool(max(1, args.jobs), initializer=_worker_init,
                                                   maxtasksperchild=20) as pool:
        for row in pool.imap_unordered(sweep_op, jobs):
            index, name, c, first, tested = row
            rows.append(row)
            print(f"{name}: {c['pass']} pass, {c['wrong']} wrong, {c['refused']} refused, "
                  f"{c['skipped']} skipped{' - ' + first if first else ''}", flush=True)
            meta["seconds"] = time.time() - start
            if args.json:  # after every op, so that a sweep cut short keeps what it did
                with open(args.json, "w") as f:
                    json.dump({"meta": meta, "rows": sorted(rows)}, f)
    rows = sorted(rows)
    if args.merge:
        rows, meta = merged(args.merge, rows, meta)
    return finish(rows, meta, args.out)


def merged(path, rows, meta):
    """The rows and meta of the table at `path` (as report() wrote it), with the rows of the
    ops swept now in place of theirs. Where the new sweep ran without Inductor, the table's
    Inductor counts stay (they do not depend on coil) if the row compares as many samples as
    before; else they go, since Inductor ran on samples the row no longer counts."""
    with open(path) as f:
        text = f.read()
    head = re.search(r"Generated by `(.*?)` with torch (\S+) in (\d+) s(?: on (.*?))?; do not edit\.", text)
    old_meta = dict(meta, command=head.group(1), seconds=float(head.group(3)), machine=head.group(4) or "",
                    inductor=meta["inductor"] or "Inductor: `torch.compile`" in text)
    new = {name: (c, first, tested) for _, name, c, first, tested in rows}
    out = []
    for line in text.split("\n## ")[0].splitlines():
        cells = [c[1:-1] for c in line.split("|")[1:-1]]  # "| name | ... |": one space each side
        if len(cells) != 9 or not cells[2].isdigit():
            continue
        name, tested, _, passed, wrong, refused, skipped, ind, first = cells
        c = {"pass": int(passed), "wrong": int(wrong), "refused": int(refused), "skipped": int(skipped),
             "inductor_pass": int(ind.split("/")[0]) if ind != "-" else 0,
             "inductor_run": int(ind.split("/")[1]) if ind != "-" else 0}
        tested = [] if tested == "-" else tested.split()
        if name in new:
            c_new, first, tested = new.pop(name)
            compared = sum(c[k] for k in ("pass", "wrong", "refused"))
            if not c_new["inductor_run"] and compared == sum(c_new[k] for k in ("pass", "wrong", "refused")):
                c_new = dict(c_new, inductor_pass=c["inductor_pass"], inductor_run=c["inductor_run"])
            c = c_new
        out.append((len(out), name, c, first, tested))
    out += [(len(out) + i, name, *row) for i, (name, row) in enumerate(new.items())]
    command = re.sub(r"--ops \S+", "--ops OPS", meta["command"])
    old_meta["then"] = re.findall(r"^Then .*$", text, re.M) + [
        f"Then the rows of {len(rows)} entries swept again by `{command}` (OPS: their ops) with torch {meta['torch']}"
        f" in {meta['seconds']:.0f} s on {meta['machine']}."]
    return out, old_meta


def finish(rows, meta, out) -> int:
    table = report(rows, meta)
    if out:
        with open(out, "w") as f:
            f.write(table)
    print(table)
    return 1 if any(c["wrong"] for _, _, c, _, _ in rows) else 0


# What the Core ATen issue lets wait, each for its reason: linear algebra (LAPACK and
# cuSOLVER-class factorizations and solvers) and complex tensors. A refusal whose first
# problem matches is counted apart.
WAITS = {
    "linear algebra": re.compile(r"is not supported: it is a linear algebra factorization or solver"),
    "complex tensors": re.compile(r"complex"),
}


def waits_for(row):
    """The reason an op that coil refuses may wait, or None."""
    _, _, c, first, _ = row
    if not c["refused"]:
        return None
    return next((why for why, pattern in WAITS.items() if pattern.search(first)), None)


def report(rows, meta) -> str:
    compared = [r for r in rows if r[2]["pass"] + r[2]["wrong"] + r[2]["refused"] > 0]
    waiting = collections.Counter(why for r in compared if (why := waits_for(r)))
    rest = [r for r in compared if not waits_for(r)]
    rest_pass = [r for r in rest if r[2]["wrong"] == 0 and r[2]["refused"] == 0]
    all_pass = [r for r in compared if r[2]["wrong"] == 0 and r[2]["refused"] == 0]
    wrong = [r for r in compared if r[2]["wrong"]]
    samples = sum(r[2]["pass"] + r[2]["wrong"] + r[2]["refused"] for r in rows)
    passed = sum(r[2]["pass"] for r in rows)
    lines = [
        "# OpInfo conformance",
        "",
        f"Generated by `{meta['command']}` with torch {meta['torch']} in {meta['seconds']:.0f} s"
        f"{' on ' + meta['machine'] if meta.get('machine') else ''}; do not edit.",
        *meta.get("then", []),
        f"Each op of PyTorch's `op_db`: its first {meta['samples']} samples per dtype ({meta['dtypes']}), traced"
        " with coil's decomposition table and compiled by coil itself for each target"
        f" ({meta['targets']}), against eager on the same device at coil's tolerance (float32 and half precision: eager, or eager in float64"
        " rounded to the dtype). Refused: coil does not compile an op of the sample, and says why."
        + (" Inductor: `torch.compile` on the CPU on the same samples, with its ATen fallbacks, compared the"
           " same way." if meta["inductor"] else ""),
        "",
        f"{len(compared)} ops with comparable samples: {len(all_pass)} with every sample passing "
        f"({100 * len(all_pass) / max(len(compared), 1):.1f}%), {len(wrong)} with a wrong result; "
        f"{passed} of {samples} samples pass ({100 * passed / max(samples, 1):.1f}%)."
        f" Leaving out the ops that may wait ({', '.join(f'{n} of {why}' for why, n in sorted(waiting.items()))}):"
        f" {len(rest_pass)} of {len(rest)} with every sample passing ({100 * len(rest_pass) / max(len(rest), 1):.1f}%)."
        + (f" Inductor: {sum(r[2]['inductor_pass'] for r in rows)} of {sum(r[2]['inductor_run'] for r in rows)}"
           " samples." if meta["inductor"] else ""),
        "",
        "| op | dtypes | samples | pass | wrong | refused | skipped | Inductor pass | first problem |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, name, c, first, tested in rows:
        n = c["pass"] + c["wrong"] + c["refused"]
        ind = f"{c['inductor_pass']}/{c['inductor_run']}" if c["inductor_run"] else "-"
        lines.append(f"| {name} | {' '.join(tested) or '-'} | {n} | {c['pass']} | {c['wrong']} | {c['refused']} | "
                     f"{c['skipped']} | {ind} | {first.replace('|', '/')[:160]} |")
    reasons = collections.defaultdict(list)
    for _, name, c, first, _ in rows:
        if c["refused"] and (m := re.search(r"error: (?:unknown op '([^']*)'|(?:node '[^']*' \()?'?([a-z_.]+\.[a-zA-Z_]+)'?)",
                                            first)):
            reasons[m.group(1) or m.group(2)].append(name)
    lines += ["", "## Refusals by the op refused first", "",
              "| op coil refused | OpInfo entries |", "|---|---|"]
    for what, names in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| {what} | {', '.join(names)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
