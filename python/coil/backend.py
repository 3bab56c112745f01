"""The torch.compile backend: `torch.compile(model, backend="coil", options={...})`.

Dynamo's graph goes through AOTAutograd with coil's decomposition table (PyTorch's core ATen
decompositions, minus the ops coil compiles natively), and the forward graph into coil's
pipeline in memory: printed as PyTorch prints graphs and compiled through coil._C. The
backward, until coil compiles training graphs, runs in eager PyTorch.

Options are coil's, by their `coil config` names (`options={"cpp.isa": "avx2"}`);
mode="reduce-overhead" turns on CUDA graphs (triton.cudagraphs) and "max-autotune" Triton's
autotuning. An unknown option is an error naming it.

A graph coil cannot compile (an op it does not support, symbolic sizes, a compiler error)
runs in eager PyTorch, with a warning on the logger `coil` naming why; with
COIL_FALLBACK=error the error is raised instead.

Tensors cross as data pointers with their strides and device, without copies through the
host: on the CPU coil's kernels read and write them; on CUDA the work is queued on PyTorch's
current stream (torch.cuda.current_stream().cuda_stream) and the call returns without
waiting for the GPU. Outputs are allocated by PyTorch (torch.empty_strided on the inputs'
device, in the layout coil writes: the CUDA caching allocator on the GPU), so they are
ordinary tensors the caller owns, on the stream that writes them; a later call never writes
them. coil runs on cuda:0; a graph on another GPU runs in eager PyTorch.
Tests: tests/python/test_backend.py.
"""
from __future__ import annotations

import functools
import itertools
import logging
import os

import torch

from coil import _C

log = logging.getLogger("coil")

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


@functools.cache
def decompositions() -> dict:
    """PyTorch's core ATen decompositions, less the ops coil compiles as they are."""
    from torch._decomp import core_aten_decompositions

    native = set(_C.supported_ops())
    return {op: fn for op, fn in core_aten_decompositions().items() if str(op) not in native}


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
    return gm.forward


def compile_graph(gm: torch.fx.GraphModule, example_inputs, options: list[tuple[str, str]]):
    """A function running `gm` through coil, or gm itself (eager) when coil cannot."""
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        return _eager(gm, "an input is not a tensor (symbolic sizes are not compiled yet)")
    devices = {x.device.type for x in example_inputs}
    if not devices <= {"cpu", "cuda"} or len(devices) > 1:
        return _eager(gm, f"inputs on devices {sorted(devices)}")
    device = devices.pop() if devices else "cpu"
    if device == "cuda" and {x.get_device() for x in example_inputs} != {0}:
        return _eager(gm, f"inputs on {sorted({str(x.device) for x in example_inputs})}: coil runs on cuda:0 only")
    returned = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    returned = returned if isinstance(returned, (list, tuple)) else (returned,)
    tensor_outputs = [isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.Tensor) for r in returned]
    if not all(t or r is None for t, r in zip(tensor_outputs, returned)):
        return _eager(gm, "an output is not a tensor")
    text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    trace, rest = _trace_dir(options)
    try:
        compiled = _C.compile(text, "cuda" if device == "cuda" else "cpu", rest, trace, "graph.py")
    except _C.CoilError as e:
        return _eager(gm, str(e))
    log.info("coil: compiled a graph of %d nodes for %s", len(gm.graph.nodes), device)
    outputs = [(_DTYPES[code], tuple(sizes), tuple(strides)) for _, code, sizes, strides, _ in compiled.outputs]
    target = torch.device("cuda", 0) if device == "cuda" else torch.device("cpu")

    def run(*args):
        # get_device(): -1 for host memory, else the CUDA device's index, as coil._C takes it.
        ins = [(t.data_ptr(), _CODES[t.dtype], tuple(t.shape), t.stride(), t.get_device()) for t in args]
        outs = [torch.empty_strided(sizes, strides, dtype=dtype, device=target) for dtype, sizes, strides in outputs]
        refs = [(o.data_ptr(), _CODES[o.dtype], tuple(o.shape), o.stride(), o.get_device()) for o in outs]
        stream = torch.cuda.current_stream(target).cuda_stream if target.type == "cuda" else 0
        compiled.run(ins, refs, stream)
        it = iter(outs)
        return tuple(next(it) if t else None for t in tensor_outputs)

    run.coil_graph = compiled
    return run


def coil_backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None, mode: str | None = None):
    """The backend torch.compile calls (entry point torch_dynamo_backends: coil)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    pairs = options_of(options, mode)

    def forward(fx, inputs):
        return make_boxed_func(compile_graph(fx, inputs, pairs))

    def backward(fx, inputs):
        log.info("coil: the backward graph runs in eager PyTorch (training graphs are not compiled yet)")
        return make_boxed_func(fx.forward)

    return aot_autograd(fw_compiler=forward, bw_compiler=backward, decompositions=decompositions())(gm, example_inputs)
