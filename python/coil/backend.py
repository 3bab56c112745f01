"""The torch.compile backend: `torch.compile(model, backend="coil", options={...})`.

Dynamo's graph goes through AOTAutograd with coil's decomposition table (PyTorch's core ATen
decompositions, minus the ops coil compiles natively), and the forward graph into coil's
pipeline in memory: printed as PyTorch prints graphs and compiled through coil._C. In
training, AOTAutograd's joint graph is split by its min-cut partitioner (cheap pointwise
values are recomputed in the backward rather than saved; dropout's masks are computed
again there from a saved seed, regenerated_dropout), and the backward graph is compiled by
coil too; saved tensors pass between the two as the tensors coil's forward wrote.

Options are coil's, by their `coil config` names (`options={"cpp.isa": "avx2"}`);
mode="reduce-overhead" turns on CUDA graphs (triton.cudagraphs) and "max-autotune" Triton's
autotuning. An unknown option is an error naming it.

A graph with ops coil does not compile (custom ops, higher-order ops, ATen ops without a
lowering) is partitioned (coil/partition.py): coil compiles the groups of ops it supports and
the rest runs in eager PyTorch between them, each such op named with its reason on the logger
`coil`. A graph or part coil fails on (symbolic sizes, a compiler error) runs in eager
PyTorch with a warning naming the failure; with COIL_FALLBACK=error the error is raised
instead. `coil.explain(model, *inputs)` lists every graph, its parts and what ran in eager;
COIL_LOG=1 prints the logger `coil` to stderr. `counters` counts graphs and parts, compiled
and not.

Tensors cross as data pointers (with their dtypes, sizes, strides and device at a graph's
first call; their addresses alone after it, as Dynamo's guards hold the rest), without
copies through the host: on the CPU coil's kernels read and write them; on CUDA the work is
queued on PyTorch's current stream (torch.cuda.current_stream().cuda_stream) and the call
returns without waiting for the GPU, reading a tensor in place when it comes back at the
address coil bound it to (parameters), else through a copy on the GPU. Outputs are allocated
by PyTorch (torch.empty_strided on the inputs' device, in the layout coil writes: the CUDA
caching allocator on the GPU), so they are ordinary tensors the caller owns, on the stream
that writes them; a later call never writes them. coil runs on cuda:0; a graph on another
GPU runs in eager PyTorch.

Inputs a graph mutates (an optimizer step's parameters and state, batch norm's running
statistics) stay in an inference graph as copy_ at its end (keep_inference_input_mutations);
coil computes each new value as an output and writes it over the input's own memory where
the schedule allows (CompiledGraph's TensorInfo::writable_over; on the CPU and on CUDA); the
rest are copied into their inputs by one _foreach_copy_ after the call.
Tests: tests/python/test_backend.py.
"""
from __future__ import annotations

import collections
import functools
import itertools
import logging
import os

import torch

from coil import _C, partition

log = logging.getLogger("coil")
if os.environ.get("COIL_LOG", "") not in ("", "0") and not log.handlers:
    log.addHandler(logging.StreamHandler())
    log.setLevel(logging.INFO)

# What this process compiled: graphs (as Dynamo and AOTAutograd give them) and their parts,
# compiled by coil or run in eager PyTorch, and ops left to eager between coil's parts.
counters: collections.Counter = collections.Counter()
_listeners: list[list] = []  # explain()'s records of each graph

# torch dtypes by coil's codes (include/coil/coil.h, ScalarType).
_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
           torch.int16, torch.int8, torch.uint8, torch.bool]
_CODES = {t: i for i, t in enumerate(_DTYPES)}
_MODES = {
    "reduce-overhead": [("triton.cudagraphs", "true")],
    "max-autotune": [("triton.autotune", "true"), ("triton.cudagraphs", "true")],
    "max-autotune-no-cudagraphs": [("triton.autotune", "true")],
}
_graph_ids = itertools.count()


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def options_of(options: dict | None, mode: str | None) -> list[tuple[str, str]]:
    """coil's options as (name, value) pairs, checked: a CoilError names an unknown one."""
    if mode is not None and mode != "default" and mode not in _MODES:
        raise ValueError(f"coil: unknown mode '{mode}'; coil takes: default, {', '.join(_MODES)}")
    pairs = list(_MODES.get(mode or "default", []))
    pairs += [(name, _text(value)) for name, value in (options or {}).items()]
    _C.check_options(pairs)
    return pairs


# Ops outside the core ATen set whose PyTorch decompositions (torch._decomp) come out in ops
# coil compiles: taken beside the core ones, as Inductor takes its own extra table.
EXTRA_DECOMPOSITIONS = (
    "as_strided_copy", "dist", "ldexp", "narrow_copy", "native_batch_norm", "permute_copy", "tril_indices",
    "triu_indices", "unbind_copy", "upsample_bicubic2d", "upsample_trilinear3d", "view_copy",
)


# Ops coil compiles as they are in inference graphs but decomposes in training ones: there
# the min-cut partition can then save their smaller input (a language model's bf16 logits
# under autocast, with each row's max and log-sum) and recompute the rest in the backward,
# where the op whole would save its f32 output (GPT-2 small at batch 8, seq 512: 823 MB of
# log-probabilities against 411 MB of logits).
TRAINING_DECOMPOSITIONS = ("_log_softmax", "_softmax")


@functools.cache
def decompositions(training: bool = False) -> dict:
    """PyTorch's core ATen decompositions and EXTRA_DECOMPOSITIONS, less the ops coil compiles
    as they are (but for TRAINING_DECOMPOSITIONS when `training`)."""
    from torch._decomp import core_aten_decompositions, decomposition_table

    native = set(_C.supported_ops())
    table = dict(core_aten_decompositions())
    extra = set(EXTRA_DECOMPOSITIONS)
    if training:
        native -= {f"aten.{name}.default" for name in TRAINING_DECOMPOSITIONS}
        extra |= set(TRAINING_DECOMPOSITIONS)
    table.update({op: fn for op, fn in decomposition_table.items()
                  if isinstance(op, torch._ops.OpOverload) and op.namespace == "aten"
                  and op.overloadpacket.__name__ in extra and op not in table})
    table.update(foreach_decompositions())
    table.update(_OWN_DECOMPOSITIONS)
    return {op: fn for op, fn in table.items() if str(op) not in native}


def foreach_decompositions() -> dict:
    """Each aten._foreach_<op> overload (an optimizer's foreach step: the default on CUDA) as
    <op> on each element of its lists, which coil fuses into few kernels:
    _foreach_add.List(xs, ys, alpha=a) is [add(x, y, alpha=a) for x, y in zip(xs, ys)], and
    the in-place _foreach_add_.List copies those into xs. An overload whose scalars come in a
    tensor (_foreach_addcdiv.Tensor) or that returns more than one list is left out."""
    table = {}
    # Every registered aten op ("aten::_foreach_add.List"): torch.ops.aten lists only those
    # looked up so far.
    names = {op.split("::")[1].split(".")[0] for op in torch._C._dispatch_get_all_op_names()
             if op.startswith("aten::_foreach_")}
    for name in sorted(names):
        base = getattr(torch.ops.aten, name.removeprefix("_foreach_").removesuffix("_"), None)
        if base is None:
            continue
        in_place = name.endswith("_")
        # Arguments the base op takes by keyword only (add's alpha, addcdiv's value).
        keywords = {a.name for overload in base.overloads() for a in getattr(base, overload)._schema.arguments
                    if a.kwarg_only}
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            schema = op._schema
            if [str(r.type) for r in schema.returns] != ([] if in_place else ["List[Tensor]"]) or any(
                    str(a.type) == "Tensor" and a.name == "scalars" for a in schema.arguments):
                continue
            fn = functools.partial(_per_element, base, schema, frozenset(keywords))
            table[op] = functools.partial(_in_place, fn) if in_place else fn
    return table


def _in_place(fn, *args, **kwargs):
    for x, new in zip(args[0], fn(*args, **kwargs)):
        x.copy_(new)


def _per_element(base, schema, keywords, *args, **kwargs):
    """base on the i-th elements of the list arguments of a foreach op (schema), the other
    arguments as they are."""
    bound = dict(zip((a.name for a in schema.arguments), args)) | kwargs
    lists = {a.name for a in schema.arguments if str(a.type).startswith("List[")}
    count = len(next(bound[a] for a in bound if a in lists))
    out = []
    for i in range(count):
        value = {k: v[i] if k in lists else v for k, v in bound.items()}
        positional = [value[a.name] for a in schema.arguments if a.name in value and a.name not in keywords]
        named = {k: v for k, v in value.items() if k in keywords}
        out.append(base(*positional, **named))
    return out


def _foreach_norm(tensors, ord=2, dtype=None):
    return [torch.linalg.vector_norm(t, ord, dtype=dtype) for t in tensors]


# Ops that PyTorch has no decomposition of, written as ops coil compiles, one op per tensor:
# clip_grad_norm_'s _foreach_norm, as a compiled optimizer step calls it (the other foreach
# ops: foreach_decompositions).
_OWN_DECOMPOSITIONS = {
    torch.ops.aten._foreach_norm.Scalar: _foreach_norm,
}


def _trace_dir(options: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """A folder of its own for each compiled graph under the trace option (or COIL_TRACE)."""
    base = dict(options).get("trace") or os.environ.get("COIL_TRACE", "")
    rest = [(k, v) for k, v in options if k != "trace"]
    if not base:
        return "", rest
    return os.path.join(base, f"graph{next(_graph_ids)}"), rest


def _eager(gm: torch.fx.GraphModule, why: str):
    if os.environ.get("COIL_FALLBACK", "") == "error":
        raise RuntimeError(f"coil: cannot compile graph: {why}")
    log.warning("coil: graph runs in eager PyTorch: %s", why)

    def eager(*args):
        return gm.forward(*args)

    eager.coil_why = why
    return eager


def _calls(gm: torch.fx.GraphModule) -> int:
    return sum(n.op == "call_function" for n in gm.graph.nodes)


def _part(name: str, gm: torch.fx.GraphModule, fn) -> dict:
    compiled = getattr(fn, "coil_graph", None)
    return {"name": name, "ops": _calls(gm), "compiled": compiled is not None,
            "target": compiled.target if compiled else "", "plans": compiled.plans if compiled else "",
            "why": getattr(fn, "coil_why", "")}


def input_updates(gm: torch.fx.GraphModule) -> list[int]:
    """Takes out of `gm` the input mutations AOTAutograd keeps in it (copy_(input, new) at
    the graph's end; keep_inference_input_mutations): each new value becomes an extra output
    after the graph's own, and the list says which placeholder (by position) each updates.
    compile_graph writes each over its input's memory where coil says it may, and copies the
    rest with one _foreach_copy_ after the call, where AOTAutograd would copy each in eager
    PyTorch (an optimizer step updates three tensors per parameter)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    updated: list[int] = []
    news = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.copy_.default:
            continue
        target, new = node.args[0], node.args[1]
        if not isinstance(target, torch.fx.Node) or not isinstance(new, torch.fx.Node):
            continue
        if target.op != "placeholder" or node.users or len(node.args) > 2 or node.kwargs or target in (
                placeholders[i] for i in updated):
            continue  # anything else stays an op of the graph
        new_val, target_val = new.meta.get("val"), target.meta.get("val")
        if not isinstance(new_val, torch.Tensor) or new_val.shape != target_val.shape or new_val.dtype != target_val.dtype:
            continue
        updated.append(placeholders.index(target))
        news.append(new)
        gm.graph.erase_node(node)
    if updated:
        returned = output.args[0]
        returned = tuple(returned) if isinstance(returned, (list, tuple)) else (returned,)
        output.args = (returned + tuple(news),)
        gm.recompile()
    return updated


def compile_graph(gm: torch.fx.GraphModule, example_inputs, options: list[tuple[str, str]], guarded: bool = True):
    """A function running `gm`: through coil when coil supports every op, else coil's parts
    with the rest in eager PyTorch between them (partition.py); eager as a whole when coil
    cannot compile it. The inputs the graph mutates are updated after each call
    (input_updates)."""
    updated = input_updates(gm)
    if not updated:
        return _compile_graph(gm, example_inputs, options, guarded, [])
    # input_updates made the graph return a tuple: its own outputs, then the new values.
    own = len(next(n for n in gm.graph.nodes if n.op == "output").args[0]) - len(updated)
    fn = _compile_graph(gm, example_inputs, options, guarded, [(own + i, j) for i, j in enumerate(updated)])
    counters["inputs_updated"] += len(updated)
    # The updates coil did not write over the input's own memory, copied after the call.
    copied = [(own + i, j) for i, j in enumerate(updated) if own + i not in getattr(fn, "coil_in_place", ())]
    counters["inputs_updated_in_place"] += len(updated) - len(copied)

    def run(*args):
        outs = fn(*args)
        if copied:
            torch._foreach_copy_([args[j] for _, j in copied], [outs[k] for k, _ in copied])
        return outs[:own]

    for name in ("coil_graph", "coil_why", "coil_in_place"):
        if hasattr(fn, name):
            setattr(run, name, getattr(fn, name))
    return run


def _compile_graph(gm: torch.fx.GraphModule, example_inputs, options: list[tuple[str, str]], guarded: bool,
                   updates: list[tuple[int, int]]):
    native = set(_C.supported_ops())
    record = {"graph": counters["graphs"], "ops": _calls(gm), "parts": [], "eager_ops": []}
    counters["graphs"] += 1
    for listener in _listeners:
        listener.append(record)
    symbolic = any(_symbolic(x) for x in example_inputs)
    if symbolic or not any(partition.unsupported(n, native) for n in gm.graph.nodes):
        # The graph's inputs are held to the example inputs' layouts by Dynamo's guards: its
        # calls pass addresses alone. A graph of symbolic sizes: compile_dynamic.
        if symbolic:
            fn = compile_dynamic(gm, example_inputs, options, guarded=guarded)
        else:
            fn = compile_whole(gm, example_inputs, options, guarded=guarded, updates=updates)
        record["parts"].append(_part("the whole graph", gm, fn))
        counters["graphs_compiled" if hasattr(fn, "coil_graph") else "graphs_eager"] += 1
        return fn
    split, eager_ops = partition.split(gm, native)
    record["eager_ops"] = eager_ops
    counters["ops_eager"] += len(eager_ops)
    log.warning("coil: %d ops run in eager PyTorch between coil's parts: %s", len(eager_ops), "; ".join(eager_ops))
    for node in list(split.graph.nodes):
        if node.op != "call_module":
            continue
        sub = getattr(split, node.target)
        fn = compile_whole(sub, partition.submodule_inputs(split, node), options)
        record["parts"].append(_part(node.target, sub, fn))
        if hasattr(fn, "coil_graph"):
            counters["parts_compiled"] += 1
            setattr(split, node.target, partition.CompiledPart(fn, partition.returns_one_value(sub)))
        else:
            counters["parts_eager"] += 1
    counters["graphs_partitioned"] += 1
    return split


def _symbolic(x) -> bool:
    """Whether a graph input is a symbolic size or a tensor of symbolic sizes or strides."""
    if isinstance(x, torch.SymInt):
        return True
    return isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in (*x.shape, *x.stride()))


def size_sources(example_inputs) -> tuple[list[tuple[str, int, int | None]], list[str]]:
    """Where each symbol of a graph of symbolic sizes takes its value at a call: (symbol,
    input, dim), dim None for a SymInt input, one per symbol; and the symbols that no input
    gives (then the graph cannot be compiled for a call's sizes)."""
    sources: list[tuple[str, int, int | None]] = []
    named: set[str] = set()
    free: list[str] = []
    for i, x in enumerate(example_inputs):
        if isinstance(x, torch.SymInt):
            sizes, dims = [x], [None]
        elif isinstance(x, torch.Tensor):
            sizes, dims = [*x.shape, *x.stride()], [*range(x.dim()), *[-1] * x.dim()]
        else:
            continue
        for s, d in zip(sizes, dims):
            if not isinstance(s, torch.SymInt):
                continue
            expr = s.node.expr
            if expr.is_Symbol and d != -1 and str(expr) not in named:
                named.add(str(expr))
                sources.append((str(expr), i, d))
            free += [str(f) for f in expr.free_symbols]
    return sources, sorted(set(free) - named)


def compile_dynamic(gm: torch.fx.GraphModule, example_inputs, options: list[tuple[str, str]], guarded: bool):
    """A function running a graph of symbolic sizes (torch.compile's dynamic shapes): coil
    compiles it once, with the sizes Dynamo traced it at as hints, and that graph serves
    every size (CompiledGraph.symbols), on the CPU and on the GPU. A graph whose guards fix
    a symbol (a meta function that specializes) is compiled for each size it is called at
    instead, reading a call's sizes from its inputs (size_sources), one compiled graph per
    size up to the option dynamic.sizes_per_graph; a call at another size runs in eager
    PyTorch. An input it updates is copied after the call (compile_graph), never written
    over in place, as which ones may be can change with the size."""
    sources, unknown = size_sources(example_inputs)
    if unknown:
        return _eager(gm, f"symbolic sizes {', '.join(unknown)} are no input's dim")
    names = [name for name, _, _ in sources]

    def hint(x):
        return x.node.hint if isinstance(x, torch.SymInt) else x

    key = tuple(hint(example_inputs[i] if d is None else example_inputs[i].shape[d]) for _, i, d in sources)
    if any(not isinstance(k, int) for k in key):
        return _eager(gm, "a symbolic size without a value to compile for")
    first = compile_whole(gm, example_inputs, options, guarded=guarded, sizes=list(zip(names, key)))
    if not hasattr(first, "coil_graph"):
        return first
    if first.coil_graph.sizes:
        log.debug("coil: what the graph of symbolic sizes relies on (sizes.txt):\n%s", first.coil_graph.sizes)
    counters["sizes_compiled"] += 1
    symbols = first.coil_graph.symbols
    if symbols and all(i >= 0 and not fixed for _, i, _, _, fixed in symbols):
        # One compiled graph for every size (both dialects' kernels take the sizes as arguments);
        # a size it does not serve (one its checks refuse) runs in eager PyTorch. A graph
        # whose guards fix a symbol (a meta function that specializes) is compiled per size.
        log.info("coil: graph of symbolic sizes %s compiled once for every size",
                 ", ".join(f"{n} (input {i} dim {d})" for n, i, d, _, _ in symbols))

        def run_any(*args):
            try:
                return first(*args)
            except _C.CoilError as e:
                if "does not serve the sizes" not in str(e):
                    raise
                log.warning("coil: %s; this call runs in eager PyTorch", e)
                counters["sizes_eager"] += 1
                return gm(*args)

        run_any.coil_graph = first.coil_graph
        run_any.coil_sizes = {key: first}
        return run_any
    limit = int(_C.option_value("dynamic.sizes_per_graph", options))
    log.info("coil: graph of symbolic sizes %s compiled per size, up to %d sizes",
             ", ".join(f"{n} (input {i}{'' if d is None else f' dim {d}'})" for n, i, d in sources), limit)
    by_size = {key: first}

    def run(*args):
        at = tuple(args[i] if d is None else args[i].shape[d] for _, i, d in sources)
        fn = by_size.get(at)
        if fn is None:
            if len(by_size) < limit:
                fn = compile_whole(gm, args, options, guarded=guarded, sizes=list(zip(names, at)))
                counters["sizes_compiled" if hasattr(fn, "coil_graph") else "sizes_eager"] += 1
            else:
                log.warning("coil: graph called at a size beyond dynamic.sizes_per_graph (%d): %s runs in eager "
                            "PyTorch", limit, ", ".join(f"{n}={v}" for n, v in zip(names, at)))
                fn = _eager(gm, "beyond dynamic.sizes_per_graph")
                counters["sizes_eager"] += 1
            by_size[at] = fn
        return fn(*args)

    run.coil_graph = first.coil_graph
    run.coil_sizes = by_size
    return run


def _extent(sizes, strides) -> int:
    """Elements a tensor of these sizes and (non-negative) strides spans from element 0."""
    return 0 if 0 in sizes else 1 + sum((n - 1) * s for n, s in zip(sizes, strides))


def _allocators(target: torch.device):
    """(fast, plain): functions (sizes, strides, dtype) -> a new tensor on `target`. fast is
    the allocation Inductor's generated code calls, a third of torch.empty_strided's time
    (None where this PyTorch lacks it); on CUDA it allocates on the current device, so a
    call takes it only while that is `target`. plain is torch.empty_strided."""
    guards = getattr(torch._C._dynamo, "guards", None)

    def plain(sizes, strides, dtype):
        return torch.empty_strided(sizes, strides, dtype=dtype, device=target)

    return getattr(guards, "_empty_strided_" + target.type, None), plain


def compile_whole(gm: torch.fx.GraphModule, example_inputs, options: list[tuple[str, str]], guarded: bool = False,
                  updates: list[tuple[int, int]] = (), sizes: list[tuple[str, int]] | None = None):
    """A function running all of `gm` through coil, or gm itself (eager) when coil cannot.
    `guarded`: every call's inputs have the example inputs' dtypes, sizes and strides (as
    Dynamo's guards hold a whole graph's), so that after the first call, checked in full,
    a call passes the tensors' addresses alone (CompiledGraph.run_addresses); a part
    between eager ops takes whatever layouts they produce, and is checked every call.
    `updates`: (output, input) pairs, each output the new value of that input (input_updates):
    where coil says it may (TensorInfo::writable_over), the output is written over the
    input's memory, and the function's attribute coil_in_place lists those outputs.
    `sizes`: for a graph of symbolic sizes, their values [(symbol, value)], which it is
    compiled for; its SymInt inputs are then not passed to coil."""
    # The inputs coil takes: all but SymInts (their values are compiled in).
    tensors = [i for i, x in enumerate(example_inputs) if isinstance(x, torch.Tensor)]
    if len(tensors) != len(example_inputs) and sizes is None:
        return _eager(gm, "an input is not a tensor")
    sizes_only = len(tensors) != len(example_inputs)
    example_inputs = [example_inputs[i] for i in tensors]
    devices = {x.device.type for x in example_inputs}
    # 0-d tensors on the CPU in a graph on CUDA (a module's float attribute, which Dynamo
    # passes as an input under dynamic shapes): PyTorch reads such a scalar on the host;
    # coil keeps a copy of each on the device, written again when its value changes.
    host_scalars = []
    if devices == {"cpu", "cuda"}:
        host_scalars = [k for k, x in enumerate(example_inputs) if x.device.type == "cpu" and x.dim() == 0]
        if all(x.device.type == "cuda" or k in host_scalars for k, x in enumerate(example_inputs)):
            devices = {"cuda"}
    if not devices <= {"cpu", "cuda"} or len(devices) > 1:
        return _eager(gm, f"inputs on devices {sorted(devices)}")
    device = devices.pop() if devices else "cpu"
    if device == "cuda" and {x.get_device() for k, x in enumerate(example_inputs) if k not in host_scalars} != {0}:
        return _eager(gm, f"inputs on {sorted({str(x.device) for x in example_inputs})}: coil runs on cuda:0 only")
    returned = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    returned = returned if isinstance(returned, (list, tuple)) else (returned,)
    # Sizes a graph of symbolic sizes returns (a training forward's, for its backward) are
    # numbers at the sizes it is compiled for: returned as they are, beside coil's outputs.
    size_vals = {k: r.meta["val"] for k, r in enumerate(returned)
                 if sizes is not None and isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.SymInt)}
    size_outputs = {k: _size_value(v, sizes) for k, v in size_vals.items()}
    if None in size_outputs.values():
        return _eager(gm, "an output is a size known only when the graph runs")
    if size_outputs:
        gm = _without_outputs(gm, size_outputs)
        returned = [r for k, r in enumerate(returned) if k not in size_outputs]
    tensor_outputs = [isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.Tensor) for r in returned]
    if not all(t or r is None for t, r in zip(tensor_outputs, returned)):
        return _eager(gm, "an output is not a tensor")
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    trace, rest = _trace_dir(options)
    try:
        compiled = _C.compile(text, "cuda" if device == "cuda" else "cpu", rest, trace, "graph.py", sizes or [])
    except _C.CoilError as e:
        return _eager(gm, str(e))
    log.info("coil: compiled a graph of %d nodes for %s", len(gm.graph.nodes), device)

    def layouts(infos):
        """The outputs' (dtype, sizes, strides), and where each lies (TensorInfo's storage
        fields): outputs that are views of one tensor of the graph (a training forward's
        query, key and value, views of one product) are views of one allocation, as eager's
        would be, written in place; [(offset, elements, the output whose allocation it
        shares or -1)]."""
        return ([(_DTYPES[code], tuple(sizes), tuple(strides)) for _, code, sizes, strides, *_ in infos],
                [tuple(info[8:11]) for info in infos])

    outputs, storage = layouts(compiled.outputs)
    # A graph of symbolic sizes that runs at every size it serves (compiled for the CPU):
    # the sizes of a call read from its inputs, and the outputs' layouts at each size it
    # runs at, with the sizes it returns, asked of coil once per size.
    symbols = [(i, d, v) for _, i, d, v, _ in compiled.symbols]
    names = [n for n, *_ in compiled.symbols]
    at_size = {}

    def sized(given):
        key = tuple(v if i < 0 else given[i].shape[d] for i, d, v in symbols)
        got = at_size.get(key)
        if got is None:
            values = list(zip(names, key))
            got = at_size[key] = (*layouts(compiled.outputs_at(list(key))),
                                  {k: _size_value(v, values) for k, v in size_vals.items()}, list(key))
        return got
    # An output that is one of the graph's inputs (a training forward returns the parameters
    # and the logits its backward reads) is that input itself, where the call then copies
    # nothing: when the input comes in the layout the graph states (always, after a guarded
    # graph's first call). (output index, input index, the input's strides)
    same = [(k, info[6], tuple(compiled.inputs[info[6]][3])) for k, info in enumerate(compiled.outputs)
            if info[6] >= 0]
    # Updates written over their input (the input's own memory passed for the output).
    in_place = [(k, j) for k, j in updates if j in compiled.outputs[k][7]]
    if {j for _, j, _ in same} & set(host_scalars) or {j for _, j in updates} & set(host_scalars):
        return _eager(gm, "an output is a scalar input on the CPU")
    scalar_copies: dict[int, torch.Tensor] = {}
    scalar_values: dict[int, float] = {}
    target = torch.device("cuda", 0) if device == "cuda" else torch.device("cpu")
    # The graph's constants (`_tensor_constant0 = self._tensor_constant0`, a tensor the traced
    # code made) are inputs of the compiled graph after the placeholders, by name. They are
    # moved to the target at the first call (here the compile runs under fake tensors).
    attrs = {n.name: n.target for n in gm.graph.nodes if n.op == "get_attr"}
    placeholders = len(example_inputs)
    # A graph that draws random numbers takes its random state last (seed, offset): two
    # words drawn from PyTorch's generator of the target device at each call, so that
    # torch.manual_seed reproduces a run and every call draws new numbers.
    random = bool(compiled.inputs) and compiled.inputs[-1][5]
    constants = []
    for info in compiled.inputs[placeholders:len(compiled.inputs) - random]:
        value = gm
        for part in attrs[info[0]].split("."):
            value = getattr(value, part)
        constants.append(value)
    moved: list = []
    checked = [True]  # whether this call is checked in full: the first, and every one when not guarded
    fast, plain = _allocators(target)
    count = len(outputs)
    reused = {k for k, _, _ in same} | {k for k, _ in in_place}
    fresh = [k for k in range(count) if k not in reused]
    whole = all(tensor_outputs)

    def run(*args):
        if sizes_only:
            args = tuple(args[i] for i in tensors)
        if host_scalars:
            args = list(args)
            for k in host_scalars:
                value = args[k].item()
                if k not in scalar_copies:
                    scalar_copies[k] = torch.empty((), dtype=args[k].dtype, device=target)
                if scalar_values.get(k) != value:
                    scalar_copies[k].fill_(value)
                    scalar_values[k] = value
                args[k] = scalar_copies[k]
            args = tuple(args)
        if len(moved) != len(constants):
            moved[:] = [c.detach().to(target) for c in constants]
        given = args + tuple(moved)
        if random:
            given += (torch.randint(0, 2**62, (2,), dtype=torch.int64, device=target),)
        on_target = target.type == "cpu" or torch.cuda.current_device() == target.index
        alloc = fast if fast is not None and on_target else plain
        layout, where, at = outputs, storage, []
        if symbols:
            layout, where, _, at = sized(given)
        outs = [None] * count
        # Guarded calls after the first hold the layouts: only other calls look.
        for k, j, strides in same:
            if not checked[0] or given[j].stride() == strides:
                outs[k] = given[j]
            else:
                dtype, sizes, out_strides = layout[k]
                outs[k] = alloc(sizes, out_strides, dtype)
        for k, j in in_place:
            outs[k] = given[j]
        for k in fresh:
            dtype, sizes, strides = layout[k]
            offset, elements, home = where[k]
            if home >= 0 and outs[home] is not None and home not in reused:
                outs[k] = outs[home].as_strided(sizes, strides, offset)
            elif offset or elements != _extent(sizes, strides):
                outs[k] = alloc((elements,), (1,), dtype).as_strided(sizes, strides, offset)
            else:
                outs[k] = alloc(sizes, strides, dtype)
        stream = torch.cuda.current_stream(target).cuda_stream if target.type == "cuda" else 0
        if checked[0]:
            # get_device(): -1 for host memory, else the CUDA device's index, as coil._C takes it.
            ins = [(t.data_ptr(), _CODES[t.dtype], tuple(t.shape), t.stride(), t.get_device(), -1, -1) for t in given]
            refs = [(o.data_ptr(), _CODES[o.dtype], tuple(o.shape), o.stride(), o.get_device(), o.storage_offset(),
                     o.untyped_storage().nbytes() // o.element_size()) for o in outs]
            compiled.run(ins, refs, stream)
            checked[0] = not guarded
        else:
            # Dynamo's guards hold a graph of symbolic sizes' layouts as expressions of them:
            # at a call's sizes (`at`), the tensors are as coil lays them out.
            compiled.run_addresses([t.data_ptr() for t in given], [o.data_ptr() for o in outs], stream, True, at)
        if whole:
            return tuple(outs)
        it = iter(outs)
        return tuple(next(it) if t else None for t in tensor_outputs)

    run.coil_graph = compiled
    run.coil_in_place = {k for k, _ in in_place}
    if not size_outputs:
        return run
    every = range(len(returned) + len(size_outputs))

    def run_with_sizes(*args):
        outs = iter(run(*args))
        values = sized(tuple(args[i] for i in tensors) if sizes_only else args)[2] if symbols else size_outputs
        return tuple(next(outs) if k not in size_outputs else values[k] for k in every)

    run_with_sizes.coil_graph = compiled
    return run_with_sizes


def _size_value(size: torch.SymInt, sizes: list[tuple[str, int]]) -> int | None:
    """The value of a symbolic size at `sizes`, None when it has a symbol they lack."""
    values = dict(sizes)
    expr = size.node.expr
    if any(str(s) not in values for s in expr.free_symbols):
        return None
    return int(expr.subs({s: values[str(s)] for s in expr.free_symbols}))


def _without_outputs(gm: torch.fx.GraphModule, drop) -> torch.fx.GraphModule:
    """A copy of `gm` that returns its outputs but those at the positions `drop`."""
    graph = torch.fx.Graph()
    returned = graph.graph_copy(gm.graph, {})
    returned = returned if isinstance(returned, (list, tuple)) else (returned,)
    graph.output(tuple(r for k, r in enumerate(returned) if k not in drop))
    return torch.fx.GraphModule(gm, graph)


def _rewrite_each(joint: torch.fx.GraphModule, target, rewrite) -> int:
    """Calls rewrite(node), which says whether it rewrote the node, on each node of the joint
    graph that calls `target`; lints and recompiles the graph once when any was. Returns how
    many were."""
    count = sum(1 for node in list(joint.graph.nodes) if node.target is target and rewrite(node))
    if count:
        joint.graph.lint()
        joint.recompile()
    return count


def regenerated_dropout(joint: torch.fx.GraphModule) -> int:
    """Rewrites each training dropout of AOTAutograd's joint graph so that its mask is not
    saved for the backward but computed again there: native_dropout(x, p) becomes
    x * keep * scale with keep = coil.dropout_keep(seed, x's sizes, p) (coil/ops.py), a pure
    function of a seed drawn in the forward (an i64[2] randint, 16 bytes saved), and keep is
    marked for recomputation, as activation checkpointing marks what it recomputes. Dropout
    of a tensor that is not contiguous keeps its saved mask (the mask's layout is the
    input's). Returns how many it rewrote."""
    import operator

    from torch.utils.checkpoint import CheckpointPolicy

    from coil import ops  # noqa: F401  (registers coil::dropout_keep)

    aten = torch.ops.aten
    graph = joint.graph

    def rewrite(node) -> bool:
        x, p = node.args[0], float(node.args[1])
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train")
        val = x.meta.get("val")
        items = {u.args[1]: u for u in node.users if u.target is operator.getitem}
        if train is False or not isinstance(val, torch.Tensor) or not val.is_contiguous() or len(items) != len(node.users):
            return False
        fake = torch._guards.detect_fake_mode([val])
        if fake is None:  # no fake tensors to state the new nodes' types with
            return False
        scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
        with graph.inserting_before(node):
            seed = graph.call_function(aten.randint.low, (0, 2**62, [2]), {"dtype": torch.int64, "device": val.device})
            keep = graph.call_function(torch.ops.coil.dropout_keep.default, (seed, list(val.shape), p))
            kept = graph.call_function(aten.mul.Tensor, (x, keep))
            out = graph.call_function(aten.mul.Tensor, (kept, scale))
        with fake:
            seed.meta["val"] = aten.randint.low(0, 2**62, [2], dtype=torch.int64, device=val.device)
            keep.meta["val"] = torch.ops.coil.dropout_keep.default(seed.meta["val"], list(val.shape), p)
            kept.meta["val"] = aten.mul.Tensor(val, keep.meta["val"])
            out.meta["val"] = aten.mul.Tensor(kept.meta["val"], scale)
        keep.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE
        for index, item in items.items():
            item.replace_all_uses_with(out if index == 0 else keep)
            graph.erase_node(item)
        graph.erase_node(node)
        return True

    return _rewrite_each(joint, aten.native_dropout.default, rewrite)


# Max pooling windows of at most this many elements save int8 offsets (max_pool_offsets).
_MAX_OFFSET_WINDOW = 127


def max_pool_offsets(joint: torch.fx.GraphModule) -> int:
    """Rewrites each 2-d max pooling of AOTAutograd's joint graph whose indices only its
    backward reads into coil's ops (coil/ops.py): coil.max_pool2d_with_offsets, whose int8
    offsets within each window the forward saves instead of int64 indices (an eighth of the
    bytes), and coil.max_pool2d_offsets_backward, which takes them and the input's sizes, so
    the input is not kept for it. Windows over _MAX_OFFSET_WINDOW elements and graphs of
    symbolic sizes keep PyTorch's ops. Returns how many it rewrote."""
    import operator

    from coil import ops  # noqa: F401  (registers coil's ops)

    aten, coil = torch.ops.aten, torch.ops.coil
    graph = joint.graph

    def rewrite(node) -> bool:
        items = {u.args[1]: u for u in node.users if u.target is operator.getitem}
        if len(items) != len(node.users) or 1 not in items:
            return False
        indices = items[1]
        backward = list(indices.users)
        if not backward or any(b.target is not aten.max_pool2d_with_indices_backward.default or b.args[7] is not indices
                               or b.args[1] is not node.args[0] for b in backward):
            return False
        val = node.args[0].meta.get("val")
        fake = torch._guards.detect_fake_mode([val]) if isinstance(val, torch.Tensor) else None
        if fake is None or any(isinstance(d, torch.SymInt) for d in val.shape):
            return False
        window = list(node.args[1:]) + [None] * (6 - len(node.args))
        kernel = ops.per_dim(window[0], ())
        pool = (kernel, ops.per_dim(window[1], kernel), ops.per_dim(window[2], (0,)), ops.per_dim(window[3], (1,)),
                bool(window[4]))
        if pool[0][0] * pool[0][1] > _MAX_OFFSET_WINDOW:
            return False
        with graph.inserting_before(node):
            both = graph.call_function(coil.max_pool2d_with_offsets.default, (node.args[0], *pool))
            values = graph.call_function(operator.getitem, (both, 0))
            offsets = graph.call_function(operator.getitem, (both, 1))
        with fake:
            both.meta["val"] = coil.max_pool2d_with_offsets.default(val, *pool)
        values.meta["val"], offsets.meta["val"] = both.meta["val"]
        for b in backward:
            with graph.inserting_before(b):
                grad = graph.call_function(coil.max_pool2d_offsets_backward.default,
                                           (b.args[0], offsets, list(val.shape), *pool))
            with fake:
                grad.meta["val"] = coil.max_pool2d_offsets_backward.default(b.args[0].meta["val"], offsets.meta["val"],
                                                                             list(val.shape), *pool)
            b.replace_all_uses_with(grad)
            graph.erase_node(b)
        if 0 in items:
            items[0].replace_all_uses_with(values)
            graph.erase_node(items[0])
        graph.erase_node(indices)
        graph.erase_node(node)
        return True

    return _rewrite_each(joint, aten.max_pool2d_with_indices.default, rewrite)


def _partition(joint: torch.fx.GraphModule, joint_inputs, **kwargs):
    """AOTAutograd's min-cut partition of the joint graph, its dropout masks recomputed in
    the backward (regenerated_dropout) and its max poolings saving int8 offsets
    (max_pool_offsets)."""
    from functorch.compile import min_cut_rematerialization_partition

    counters["dropout_masks_recomputed"] += regenerated_dropout(joint)
    counters["max_pool_offsets"] += max_pool_offsets(joint)
    return min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)


def coil_backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None, mode: str | None = None):
    """The backend torch.compile calls (entry point torch_dynamo_backends: coil)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    pairs = options_of(options, mode)

    def forward(fx, inputs):
        return make_boxed_func(compile_graph(fx, inputs, pairs))

    def backward(fx, inputs):
        return make_boxed_func(compile_graph(fx, inputs, pairs, guarded=False))

    training = torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in example_inputs)
    # Input mutations (an optimizer's parameters and state, batch norm's running stats) stay
    # in an inference graph as copy_ at its end, which compile_graph takes over.
    compile_aot = aot_autograd(fw_compiler=forward, bw_compiler=backward, decompositions=decompositions(training),
                               partition_fn=_partition, keep_inference_input_mutations=True)
    # scaled_dot_product_attention traces to the fused op PyTorch would run on the inputs'
    # device (flash, memory-efficient or cuDNN on CUDA, flash on the CPU): coil compiles each
    # into its own attention kernel, and their backward ops. A training graph on CUDA is
    # traced with the memory-efficient and cuDNN ops first: the flash op's random state,
    # which its backward op takes, is u64, a dtype coil does not have.
    cuda = any(isinstance(x, torch.Tensor) and x.device.type == "cuda" for x in example_inputs)
    if training and cuda:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH],
                         set_priority=True):
            return compile_aot(gm, example_inputs)
    return compile_aot(gm, example_inputs)


class Explanation:
    """What torch.compile(backend="coil") did with a model: per graph, its parts (compiled by
    coil for a target, with their kernel plans, or run in eager PyTorch and why) and the ops
    left to eager PyTorch between coil's parts. str() is the report."""

    def __init__(self, graphs: list[dict]):
        self.graphs = graphs

    @property
    def compiled_parts(self) -> int:
        return sum(p["compiled"] for g in self.graphs for p in g["parts"])

    @property
    def eager_ops(self) -> list[str]:
        return [op for g in self.graphs for op in g["eager_ops"]]

    def __str__(self) -> str:
        lines = [f"{len(self.graphs)} graph(s), {self.compiled_parts} part(s) compiled by coil, "
                 f"{len(self.eager_ops)} op(s) in eager PyTorch"]
        for g in self.graphs:
            lines.append(f"graph {g['graph']}: {g['ops']} ops")
            for p in g["parts"]:
                if p["compiled"]:
                    lines.append(f"  {p['name']}: {p['ops']} ops compiled by coil for {p['target']}")
                    lines += ["    " + line for line in p["plans"].splitlines()]
                else:
                    lines.append(f"  {p['name']}: {p['ops']} ops in eager PyTorch: {p['why']}")
            lines += [f"  eager PyTorch: {op}" for op in g["eager_ops"]]
        return "\n".join(lines)


def explain(model, *inputs, **compile_kwargs) -> Explanation:
    """Compiles `model` with backend="coil" (after torch._dynamo.reset()), calls it once on
    `inputs`, and returns what coil did with each graph."""
    graphs: list[dict] = []
    _listeners.append(graphs)
    try:
        torch._dynamo.reset()
        torch.compile(model, backend="coil", **compile_kwargs)(*inputs)
    finally:
        _listeners.remove(graphs)
    return Explanation(graphs)
