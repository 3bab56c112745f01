"""What coil compiles and what runs in eager PyTorch, op by op.

A graph with an op coil does not lower (a custom op, a higher-order op, an ATen op coil has
no lowering for) is split with torch.fx's CapabilityBasedPartitioner: the largest groups of
ops coil supports become submodules compiled by coil, and the rest runs in eager PyTorch
between them, on the same tensors. Each op left to eager has a reason in words.
Tests: tests/python/test_backend.py.
"""
from __future__ import annotations

import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase


def unsupported(node: torch.fx.Node, native: set[str]) -> str | None:
    """Why coil cannot compile `node`, or None when it can (placeholders and outputs too)."""
    if node.op != "call_function":
        return None
    target = node.target
    if target is operator.getitem:
        return unsupported(node.args[0], native) if isinstance(node.args[0], torch.fx.Node) else None
    if isinstance(target, torch._ops.OpOverload):
        name = str(target)
        if name not in native:
            return f"coil does not compile {name}"
        return _too_long_to_sort(node, name)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"the higher-order op {target.name()} is not compiled by coil"
    return f"{getattr(target, '__name__', target)} is not an ATen op"


_SORTS = {"aten.sort.default", "aten.sort.stable", "aten.topk.default"}


def _too_long_to_sort(node: torch.fx.Node, name: str) -> str | None:
    """Why coil leaves a sort or topk to eager: a row longer than coil sorts (its rank count
    is quadratic in the row; the C++ lowering refuses the same rows)."""
    if name not in _SORTS:
        return None
    from coil import _C

    x = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    if x is None or x.dim() == 0:
        return None
    schema = node.target._schema.arguments
    at = next(i for i, a in enumerate(schema) if a.name == "dim")
    dim = node.kwargs.get("dim", node.args[at] if at < len(node.args) else schema[at].default_value)
    length = x.shape[dim]
    if isinstance(length, torch.SymInt) or length > _C.MAX_SORT_LENGTH:
        return f"a row of {length} elements: coil sorts rows of at most {_C.MAX_SORT_LENGTH}"
    return None


class _Support(OperatorSupportBase):
    def __init__(self, native: set[str]):
        super().__init__()
        self.native = native

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and unsupported(node, self.native) is None


def split(gm: torch.fx.GraphModule, native: set[str]) -> tuple[torch.fx.GraphModule, list[str]]:
    """`gm` with every group of supported ops in a submodule `fused_N` (the ones to compile),
    and the ops left to eager PyTorch, each as "name (op): why"."""
    eager = [f"{n.name} ({n.target}): {why}" for n in gm.graph.nodes if (why := unsupported(n, native))]
    partitioner = CapabilityBasedPartitioner(gm, _Support(native), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    return partitioner.fuse_partitions(partitions), eager


def submodule_inputs(parent: torch.fx.GraphModule, call: torch.fx.Node) -> list:
    """The example values a `call_module` node passes its submodule (fake tensors, from the
    parent graph's metadata)."""
    return [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in call.args]


def returns_one_value(sub: torch.fx.GraphModule) -> bool:
    out = next(n for n in sub.graph.nodes if n.op == "output")
    return not isinstance(out.args[0], (list, tuple))


class CompiledPart(torch.nn.Module):
    """A submodule's call through coil, returning what the submodule returned (one tensor or
    a tuple); `fn` is backend.compile_whole's function, which returns a tuple."""

    def __init__(self, fn, one_value: bool):
        super().__init__()
        self.fn = fn
        self.one_value = one_value

    def forward(self, *args):
        out = self.fn(*args)
        return out[0] if self.one_value else out
