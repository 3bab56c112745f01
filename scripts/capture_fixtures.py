#!/usr/bin/env python3
"""Capture coil's test fixtures: small graphs printed by PyTorch, with inputs and eager outputs.

Every fixture is a folder tests/fixtures/<case>/ holding

  graph.py              the aten-level FX graph exactly as torch.export prints it
                        (`print_readable(include_stride=True, include_device=True)`); only the
                        file paths in `# File:` comments are made relative, so that the text does
                        not depend on where the checkout or the virtual environment lives
  inputs.safetensors    one tensor per placeholder, by placeholder name (parameters, buffers and
                        lifted constants included), contiguous; a graph that draws random numbers
                        also gets coil's random state, `coil.random_state` (seed 0, offset 0)
  expected.safetensors  out0, out1, ... in the graph's return order, from eager PyTorch
  meta.json             what the case is and what Inductor made of it (see README.md there)

Why torch.export and not torch.compile: export gives one whole graph with parameters lifted to
placeholders, which is what coil reads; `run_decompositions()` with the default table gives the
graph Inductor would lower (model and workload cases), and with the empty table `{}` the op under
test survives (op cases).

Everything is deterministic: each case seeds torch from a hash of its name, builds its module and
inputs on the CPU (then moves them, for --cuda-counts), and runs eagerly with one thread, so the
bytes written do not depend on --jobs or on what ran before in the same process.

Usage: scripts/capture_fixtures.py [--out DIR] [--only A,B] [--list] [--no-inductor] [--jobs N]
       scripts/capture_fixtures.py --cuda-counts [--only A,B] [--jobs N]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import math
import multiprocessing
import re
import sys
import time
import traceback
import warnings
import zlib
from pathlib import Path
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils._pytree as pytree

import coil.ops  # noqa: F401  (coil's own ops: coil::dropout_keep, coil::max_pool2d_with_offsets, ...)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "fixtures"

A = torch.ops.aten
P = torch.ops.prims

f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
i8, u8, i16, i32, i64, b8 = torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool

# The dtypes an op case tries besides its main one; each is kept only where eager PyTorch
# accepts it (probed on tiny tensors, see `accepts`), so the table needs no per-op dtype lists.
OTHER_DTYPES = (f16, bf16, f64, i64, i32, i8, u8, b8)

# Mixed-dtype pairs for binary ops: the interesting corners of PyTorch's type promotion
# (float widths, bf16 with f16, signed with unsigned, bool with anything, and 0-dim tensors,
# which only count when their category is higher).
MIXED_PAIRS = (
    ((f16, [3, 5]), (f32, [3, 5])),
    ((bf16, [3, 5]), (f16, [3, 5])),
    ((f32, [3, 5]), (f64, [5])),
    ((i32, [3, 5]), (i64, [3, 5])),
    ((u8, [3, 5]), (i8, [3, 5])),
    ((b8, [3, 5]), (i32, [5])),
    ((i64, [3, 5]), (f32, [3, 1])),
    ((i32, [3, 5]), (f16, [3, 5])),
    ((b8, [3, 5]), (f32, [3, 5])),
    ((f16, [3, 5]), (f32, [])),
    ((i32, [3, 5]), (i64, [])),
    ((i64, [3, 5]), (f64, [])),
    ((u8, [3, 5]), (b8, [])),
)

DTYPE_NAMES = {
    b8: "b8", u8: "u8", i8: "i8", i16: "i16", i32: "i32", i64: "i64",
    f16: "f16", bf16: "bf16", f32: "f32", f64: "f64",
}
DTYPE_ORDER = list(DTYPE_NAMES.values())

TAGS = ("size0", "size1", "noncontig", "broadcast", "odd", "dynamic")


# ---------------------------------------------------------------------------------------------
# The case table
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Case:
    """One fixture. `build(dev)` is called right after seeding and returns (module, args): args are
    made on the CPU (so CPU and CUDA runs see the same values) and moved by the caller; `dev` is
    only for tensors the forward creates itself (full, arange, masks)."""

    name: str
    kind: str                          # "op" | "model" | "workload"
    build: Callable[[str], tuple]
    ops: tuple[str, ...] = ()          # op targets under test, e.g. "aten.exp.default"
    tags: tuple[str, ...] = ()
    decomp: str = ""                   # "default" | "empty" | "none"; "" = by kind

    @property
    def decompositions(self) -> str:
        return self.decomp or ("empty" if self.kind == "op" else "default")


CASES: dict[str, Case] = {}


def add_case(case: Case) -> None:
    assert case.name not in CASES, f"duplicate case {case.name}"
    assert set(case.tags) <= set(TAGS), case.tags
    assert case.kind in ("op", "model", "workload")
    CASES[case.name] = case


class Fn(nn.Module):
    """Wraps a function as a module for torch.export. `*a` names the placeholders a_0, a_1, ...
    exactly like the graphs in examples/."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *a):
        return self.fn(*a)


def op_name(op) -> str:
    """'aten.exp.default' for torch.ops.aten.exp.default (the spelling coil's errors use)."""
    return str(op)


def fn_case(name: str, kind: str, ops: Sequence = (), tags: Sequence[str] = (), decomp: str = ""):
    """Decorator for a hand-written case: the function takes `dev` and returns (fn, inputs);
    the fixture's module is Fn(fn) and its placeholders are a_0, a_1, ... in input order."""

    def register(make_fn: Callable[[str], tuple]):
        def build(dev: str):
            fn, inputs = make_fn(dev)
            return Fn(fn), tuple(inputs)

        add_case(Case(name, kind, build, tuple(op_name(o) for o in ops), tuple(tags), decomp))
        return make_fn

    return register


def op_case(name: str, ops: Sequence, tags: Sequence[str] = (), decomp: str = ""):
    return fn_case("op_" + name, "op", ops, tags, decomp)


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def make(shape: Sequence[int], dtype: torch.dtype = f32, dom: str = "any") -> torch.Tensor:
    """A random CPU tensor whose values keep the op under test well defined.

    dom: any (normal / small ints), wide (normal*4 / ints in [-20, 20]), pos (positive),
    nonzero (|v| >= 0.25 / nonzero ints), unit (in (-0.9, 0.9)), gtm1 (> -1), tan (|v| < 1.3),
    smallint (integers in [-3, 3], so comparisons see ties), near1 (in [0.5, 1.5], for products),
    powbase / powexp (ints stay small enough not to overflow i8), special (nan and +-inf mixed in),
    distinct (all values different, so argmax/max indices and pooling indices are unambiguous).
    """
    shape = list(shape)
    n = math.prod(shape)
    if dom == "distinct":
        t = torch.randperm(max(n, 1))[:n].reshape(shape)
        if dtype.is_floating_point:
            return (t.to(f64) * (4.0 / max(n, 1)) - 2.0).to(dtype)
        lo = 0 if dtype in (u8, b8) else -(n // 2)
        return (t + lo).to(dtype)
    if dtype == b8:
        return torch.rand(shape) < 0.5
    if dtype.is_floating_point:
        if dom in ("any", "powexp"):
            t = torch.randn(shape)
        elif dom == "wide":
            t = torch.randn(shape) * 4
        elif dom == "pos":
            t = torch.rand(shape) * 3 + 0.05
        elif dom == "powbase":
            t = torch.rand(shape) * 2 + 0.1
        elif dom == "nonzero":
            t = (torch.rand(shape) * 2 + 0.25) * torch.where(torch.rand(shape) < 0.5, -1.0, 1.0)
        elif dom == "unit":
            t = torch.rand(shape) * 1.8 - 0.9
        elif dom == "gtm1":
            t = torch.rand(shape) * 3.9 - 0.9
        elif dom == "tan":
            t = torch.rand(shape) * 2.6 - 1.3
        elif dom == "smallint":
            t = torch.randint(-3, 4, shape).to(f32)
        elif dom == "near1":
            t = torch.rand(shape) + 0.5
        elif dom == "special":
            t = torch.randn(shape)
            flat = t.view(-1)
            flat[0::5] = float("nan")
            flat[1::7] = float("inf")
            flat[3::11] = float("-inf")
        else:
            raise ValueError(dom)
        return t.to(dtype)
    lo, hi = {
        "any": (-8, 9), "wide": (-20, 21), "pos": (1, 10), "nonzero": (1, 10), "unit": (-1, 2),
        "gtm1": (0, 10), "tan": (-8, 9), "smallint": (-3, 4), "near1": (1, 3),
        "powbase": (1, 4), "powexp": (0, 4), "special": (-8, 9),
    }[dom]
    if dtype == u8:
        lo = max(lo, 0)
    t = torch.randint(lo, hi, shape)
    if dom == "nonzero" and dtype != u8:
        t = t * torch.where(torch.rand(shape) < 0.5, -1, 1)
    return t.to(dtype)


def accepts(fn: Callable, *specs) -> bool:
    """Whether eager PyTorch runs `fn` on tensors of these (dtype, shape) specs (or plain scalars).
    Uses ones(), so probing consumes no random numbers and never depends on values."""
    args = [torch.ones(s[1], dtype=s[0]) if isinstance(s, tuple) else s for s in specs]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args)
        return True
    except Exception:
        return False


def dtag(dt: torch.dtype) -> str:
    return DTYPE_NAMES[dt]


# ---------------------------------------------------------------------------------------------
# Op cases: unary ops
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Unary:
    name: str
    op: object
    args: tuple = ()
    kwargs: tuple = ()          # (key, value) pairs
    dom: str = "any"
    main: torch.dtype = f32     # bitwise ops have no f32, so their main case is i64

    def call(self, x):
        return self.op(x, *self.args, **dict(self.kwargs))


UNARY = [
    Unary("abs", A.abs.default),
    Unary("neg", A.neg.default),
    Unary("exp", A.exp.default),
    Unary("exp2", A.exp2.default),
    Unary("expm1", A.expm1.default),
    Unary("log", A.log.default, dom="pos"),
    Unary("log1p", A.log1p.default, dom="gtm1"),
    Unary("log2", A.log2.default, dom="pos"),
    Unary("sqrt", A.sqrt.default, dom="pos"),
    Unary("rsqrt", A.rsqrt.default, dom="pos"),
    Unary("reciprocal", A.reciprocal.default, dom="nonzero"),
    Unary("sin", A.sin.default, dom="wide"),
    Unary("cos", A.cos.default, dom="wide"),
    Unary("tan", A.tan.default, dom="tan"),
    Unary("tanh", A.tanh.default),
    Unary("sigmoid", A.sigmoid.default, dom="wide"),
    Unary("erf", A.erf.default),
    Unary("relu", A.relu.default),
    Unary("gelu", A.gelu.default),
    Unary("gelu_tanh", A.gelu.default, kwargs=(("approximate", "tanh"),)),
    Unary("silu", A.silu.default),
    Unary("hardswish", A.hardswish.default, dom="wide"),
    Unary("hardsigmoid", A.hardsigmoid.default, dom="wide"),
    Unary("hardtanh", A.hardtanh.default, args=(-0.5, 1.5)),
    Unary("leaky_relu", A.leaky_relu.default, args=(0.2,)),
    Unary("elu", A.elu.default, args=(0.7, 1.2, 0.9)),
    Unary("softplus", A.softplus.default, args=(2.0, 3.0)),
    Unary("floor", A.floor.default, dom="wide"),
    Unary("ceil", A.ceil.default, dom="wide"),
    Unary("round", A.round.default, dom="wide"),
    Unary("round_decimals", A.round.decimals, kwargs=(("decimals", 2),), dom="wide"),
    Unary("trunc", A.trunc.default, dom="wide"),
    Unary("sign", A.sign.default),
    Unary("logical_not", A.logical_not.default, dom="smallint"),
    Unary("bitwise_not", A.bitwise_not.default, main=i64),
    Unary("isnan", A.isnan.default, dom="special"),
    Unary("isinf", A.isinf.default, dom="special"),
]


def register_unary(u: Unary) -> None:
    """Two cases per unary op: the main dtype over many layouts (odd sizes, a transposed and a
    strided view, size-1 and size-0 dims, a 0-dim tensor, a broadcast (stride-0) expand, a 3-d
    permute), and every other dtype the op accepts on a small odd-sized tensor."""
    m = u.main

    def layouts(dev):
        def fn(x, xt, xs, x1, x0, xd, xe, xp):
            f = u.call
            return (f(x), f(xt.t()), f(xs[::2, 1::3]), f(x1), f(x0), f(xd),
                    f(xe.expand(4, 5, 13)), f(xp.permute(2, 0, 1)))
        shapes = ([7, 13], [13, 7], [9, 20], [1, 13, 1], [0, 5], [], [5, 1], [3, 4, 5])
        return fn, [make(s, m, u.dom) for s in shapes]

    add_case(Case("op_" + u.name, "op", _fn_build(layouts), (op_name(u.op),),
                  ("odd", "noncontig", "size1", "size0", "broadcast")))

    dts = [dt for dt in OTHER_DTYPES if dt != m and accepts(u.call, (dt, [2]))]
    if not dts:
        return

    def dtypes(dev):
        def fn(*xs):
            outs = [u.call(x) for x in xs[: len(dts)]]
            return tuple(outs) + (u.call(xs[-1].t()),)
        return fn, [make([3, 5], dt, u.dom) for dt in dts] + [make([5, 3], dts[0], u.dom)]

    add_case(Case(f"op_{u.name}_dtypes", "op", _fn_build(dtypes), (op_name(u.op),),
                  ("odd", "noncontig")))


def _fn_build(make_fn: Callable[[str], tuple]) -> Callable[[str], tuple]:
    def build(dev):
        fn, inputs = make_fn(dev)
        return Fn(fn), tuple(inputs)
    return build


# ---------------------------------------------------------------------------------------------
# Op cases: binary ops
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Binary:
    name: str
    op: object                          # the Tensor overload
    scalar_op: object = None            # the Scalar overload, if any
    kwargs: tuple = ()
    xdom: str = "any"
    ydom: str = "any"
    main: torch.dtype = f32
    alpha: bool = False                 # add/sub: also test alpha
    special: bool = False               # also feed nan/inf (nan propagation of maximum etc.)
    scalars: tuple = (2.5, 3, -1.5)     # right-hand scalars for the Scalar overload

    def call(self, x, y, **kw):
        return self.op(x, y, **dict(self.kwargs), **kw)

    def scall(self, x, s):
        return self.scalar_op(x, s, **dict(self.kwargs))


TRUNC = (("rounding_mode", "trunc"),)
FLOOR = (("rounding_mode", "floor"),)
CMP = dict(xdom="smallint", ydom="smallint", scalars=(0, 1, 0.5, -2))
BITS = dict(main=i64, scalars=(3, 6, -1))

BINARY = [
    Binary("add", A.add.Tensor, A.add.Scalar, alpha=True),
    Binary("sub", A.sub.Tensor, A.sub.Scalar, alpha=True),
    Binary("mul", A.mul.Tensor, A.mul.Scalar),
    Binary("div", A.div.Tensor, A.div.Scalar, ydom="nonzero", scalars=(2.5, 3, -4)),
    Binary("div_trunc", A.div.Tensor_mode, A.div.Scalar_mode, TRUNC, "wide", "nonzero",
           scalars=(2.5, 3, -4)),
    Binary("div_floor", A.div.Tensor_mode, A.div.Scalar_mode, FLOOR, "wide", "nonzero",
           scalars=(2.5, 3, -4)),
    Binary("remainder", A.remainder.Tensor, A.remainder.Scalar, (), "wide", "nonzero",
           scalars=(2.5, 3, -4)),
    Binary("fmod", A.fmod.Tensor, A.fmod.Scalar, (), "wide", "nonzero", scalars=(2.5, 3, -4)),
    Binary("pow", A.pow.Tensor_Tensor, A.pow.Tensor_Scalar, (), "powbase", "powexp",
           scalars=(2, 3, 0.5, -1.0, 0, 1, -2.0)),
    Binary("maximum", A.maximum.default, special=True),
    Binary("minimum", A.minimum.default, special=True),
    Binary("atan2", A.atan2.default),
    Binary("eq", A.eq.Tensor, A.eq.Scalar, **CMP),
    Binary("ne", A.ne.Tensor, A.ne.Scalar, **CMP),
    Binary("lt", A.lt.Tensor, A.lt.Scalar, **CMP),
    Binary("le", A.le.Tensor, A.le.Scalar, **CMP),
    Binary("gt", A.gt.Tensor, A.gt.Scalar, **CMP),
    Binary("ge", A.ge.Tensor, A.ge.Scalar, **CMP),
    Binary("logical_and", A.logical_and.default, xdom="smallint", ydom="smallint"),
    Binary("logical_or", A.logical_or.default, xdom="smallint", ydom="smallint"),
    Binary("logical_xor", A.logical_xor.default, xdom="smallint", ydom="smallint"),
    Binary("bitwise_and", A.bitwise_and.Tensor, A.bitwise_and.Scalar, **BITS),
    Binary("bitwise_or", A.bitwise_or.Tensor, A.bitwise_or.Scalar, **BITS),
    Binary("bitwise_xor", A.bitwise_xor.Tensor, A.bitwise_xor.Scalar, **BITS),
]


def register_binary(b: Binary) -> None:
    """Up to three cases per binary op: the main dtype over shapes and broadcasts (row, column,
    outer, 0-dim, 3-d, size-1, size-0, transposed and strided operands, both operand orders);
    same-dtype and mixed-dtype pairs (type promotion); and the Scalar overload."""
    m = b.main
    tags = ["odd", "noncontig", "size1", "size0", "broadcast"]

    def shapes(dev):
        def fn(x, y, yr, xc, y0, xt, xs, x0, x3, y3, x1, y1, *sp):
            f = b.call
            outs = [f(x, y), f(x, yr), f(yr, x), f(xc, yr), f(x, y0), f(y0, x), f(xt.t(), y),
                    f(xs[::2, ::2], yr), f(x0, yr), f(x3, y3), f(x1, y1)]
            if b.alpha:
                outs.append(f(x, y, alpha=2))
                outs.append(f(xc, yr, alpha=-0.5))
            if sp:
                outs.append(f(sp[0], sp[1]))
            return tuple(outs)
        ins = [make([7, 13], m, b.xdom), make([7, 13], m, b.ydom), make([13], m, b.ydom),
               make([7, 1], m, b.xdom), make([], m, b.ydom), make([13, 7], m, b.xdom),
               make([13, 26], m, b.xdom), make([0, 13], m, b.xdom), make([2, 1, 5], m, b.xdom),
               make([3, 1], m, b.ydom), make([1, 1], m, b.xdom), make([1, 1], m, b.ydom)]
        if b.special:
            ins += [make([4, 5], m, "special"), make([4, 5], m, "special")]
        return fn, ins

    add_case(Case("op_" + b.name, "op", _fn_build(shapes), (op_name(b.op),), tuple(tags)))

    same = [dt for dt in OTHER_DTYPES if dt != m and accepts(b.call, (dt, [2]), (dt, [2]))]
    mixed = [(x, y) for x, y in MIXED_PAIRS if accepts(b.call, x, y)]

    def dtypes(dev):
        def fn(*xs):
            return tuple(b.call(xs[2 * i], xs[2 * i + 1]) for i in range(len(xs) // 2))
        ins = []
        for dt in same:
            ins += [make([3, 5], dt, b.xdom), make([3, 5], dt, b.ydom)]
        for (dx, sx), (dy, sy) in mixed:
            ins += [make(sx, dx, b.xdom), make(sy, dy, b.ydom)]
        return fn, ins

    if same or mixed:
        add_case(Case(f"op_{b.name}_dtypes", "op", _fn_build(dtypes), (op_name(b.op),),
                      ("odd", "broadcast")))

    if b.scalar_op is None:
        return
    # Every scalar with the main dtype; with each other dtype the first scalar, the first int
    # and the first float one (an int tensor with a float scalar promotes to the default dtype).
    first_int = [s for s in b.scalars if isinstance(s, int)][:1]
    first_float = [s for s in b.scalars if isinstance(s, float)][:1]
    variants = []   # (dtype, shape, scalar)
    for dt in (m,) + OTHER_DTYPES:
        cands = b.scalars if dt == m else [b.scalars[0]] + first_int + first_float
        for s in dict.fromkeys(cands):
            if accepts(b.scall, (dt, [2]), s):
                variants.append((dt, [3, 5], s))
    if not variants:
        return
    xs = b.scalars[0]

    def scalar(dev):
        def fn(*xs_):
            outs = [b.scall(x, s) for x, (_, _, s) in zip(xs_, variants)]
            t, z = xs_[len(variants):]
            outs += [b.scall(t.t(), xs), b.scall(z, xs)]
            if b.name == "pow":   # pow.Scalar: a scalar base and a tensor exponent
                outs += [A.pow.Scalar(2.0, xs_[0]), A.pow.Scalar(3, xs_[-2].t())]
            return tuple(outs)
        ins = [make(sh, dt, b.xdom) for dt, sh, _ in variants]
        ins += [make([5, 3], m, b.xdom), make([0, 4], m, b.xdom)]
        return fn, ins

    ops = (op_name(b.scalar_op),) + ((op_name(A.pow.Scalar),) if b.name == "pow" else ())
    add_case(Case(f"op_{b.name}_scalar", "op", _fn_build(scalar), ops,
                  ("odd", "noncontig", "size0")))


# ---------------------------------------------------------------------------------------------
# Op cases: written by hand (each returns (fn, inputs); placeholders are a_0, a_1, ...)
# ---------------------------------------------------------------------------------------------

ALL_TAGS = ("odd", "noncontig", "size1", "size0", "broadcast")


@op_case("where", [A.where.self], ALL_TAGS)
def _where(dev):
    def fn(c, x, y, cr, y0, xh, yf, ci, xi, yi, c0, x0, xt):
        w = A.where.self
        return (w(c, x, y), w(cr, x, y0), w(c, xh, yf), w(ci, xi, yi), w(c0, x0, y0),
                w(c.t().t(), xt.t(), y), w(cr, y0, x))
    return fn, [make([7, 13], b8), make([7, 13]), make([7, 13]), make([13], b8), make([]),
                make([7, 13], f16), make([7, 1], f32), make([1, 5], b8), make([4, 5], i64),
                make([4, 1], i32), make([0, 3], b8), make([0, 3]), make([13, 7])]


@op_case("where_dtypes", [A.where.self], ("odd", "broadcast"))
def _where_dtypes(dev):
    dts = (f16, bf16, f64, i64, i32, i8, u8, b8)

    def fn(c, *xs):
        return tuple(A.where.self(c, xs[2 * i], xs[2 * i + 1]) for i in range(len(dts)))
    ins = [make([3, 5], b8)]
    for dt in dts:
        ins += [make([3, 5], dt), make([5], dt)]
    return fn, ins


@op_case("clamp", [A.clamp.default], ALL_TAGS)
def _clamp(dev):
    def fn(x, xt, x0, xi, xh, xn, x1):
        c = A.clamp.default
        return (c(x, -0.5, 0.7), c(x, None, 0.3), c(x, -0.2), c(xt.t(), -1, 1), c(x0, 0, 1),
                c(xi, -3, 4), c(xi, 2.5), c(xh, -0.5, 0.5), c(xn, -1.0, 1.0), c(x1, 0.1, 0.2),
                c(x, 0.5, -0.5))
    return fn, [make([7, 13]), make([13, 7]), make([0, 4]), make([3, 5], i64, "wide"),
                make([3, 5], f16), make([4, 5], f32, "special"), make([1, 1])]


@op_case("clamp_tensor", [A.clamp.Tensor], ("odd", "broadcast"))
def _clamp_tensor(dev):
    def fn(x, lo, hi, xi, loi):
        return (A.clamp.Tensor(x, lo, hi), A.clamp.Tensor(x, lo, None), A.clamp.Tensor(xi, loi, None))
    return fn, [make([7, 13], f32, "wide"), make([13]) - 1, make([7, 1]) + 1, make([3, 5], i32),
                make([5], i64)]


@op_case("clamp_min", [A.clamp_min.default], ("odd", "noncontig", "size0"))
def _clamp_min(dev):
    def fn(x, xt, xi, xh, x0, xb):
        c = A.clamp_min.default
        return c(x, 0.1), c(xt.t(), -0.5), c(xi, 2), c(xi, 0.5), c(xh, 0.0), c(x0, 1.0), c(xb, 2.5)
    return fn, [make([7, 13]), make([13, 7]), make([3, 5], i64), make([3, 5], f16), make([0, 3]),
                make([3, 5], bf16)]


@op_case("clamp_max", [A.clamp_max.default], ("odd", "noncontig", "size0"))
def _clamp_max(dev):
    def fn(x, xt, xi, xh, x0, xb):
        c = A.clamp_max.default
        return c(x, 0.1), c(xt.t(), -0.5), c(xi, 2), c(xi, 0.5), c(xh, 0.0), c(x0, 1.0), c(xb, 2.5)
    return fn, [make([7, 13]), make([13, 7]), make([3, 5], i64), make([3, 5], f16), make([0, 3]),
                make([3, 5], bf16)]


def _tri(op):
    def build(dev):
        def fn(x, x3, xw, xt, xi, xb, x0, xh):
            return (op(x), op(x, 1), op(x, -2), op(x, 20), op(x, -20), op(x3, 1), op(xw, -1),
                    op(xt.t()), op(xi), op(xb, 1), op(x0), op(xh, -1))
        return fn, [make([7, 7]), make([2, 5, 6]), make([5, 9]), make([9, 5]), make([4, 6], i64),
                    make([5, 5], b8), make([0, 3]), make([3, 4], f16)]
    return build


op_case("triu", [A.triu.default], ("odd", "noncontig", "size0"))(_tri(A.triu.default))
op_case("tril", [A.tril.default], ("odd", "noncontig", "size0"))(_tri(A.tril.default))


# --- creation and copies ---------------------------------------------------------------------

@op_case("full", [A.full.default], ("size0", "broadcast"))
def _full(dev):
    def fn(x):
        fl = A.full.default
        return (fl([3, 5], 1.5, dtype=f32, device=dev), fl([2, 0, 3], 7, dtype=i64, device=dev),
                fl([], True, dtype=b8, device=dev), fl([4], 2.5, dtype=f16, device=dev),
                fl([3, 4], 3, device=dev), fl([2, 3], -0.25, device=dev),
                x + fl([13], 0.5, dtype=f32, device=dev))
    return fn, [make([7, 13])]


@op_case("full_like", [A.full_like.default], ("noncontig", "size0"))
def _full_like(dev):
    def fn(x, xi, xt, x4, x0):
        fl = A.full_like.default
        return (fl(x, 2.0), fl(xi, 1.5, dtype=f32), fl(xi, 7), fl(xt.t(), 3.0), fl(x, 1, dtype=b8),
                fl(x4, 0.5, memory_format=torch.channels_last), fl(x0, 9.0), fl(x, -1, dtype=f16))
    return fn, [make([7, 13]), make([3, 5], i64), make([13, 7]), make([2, 3, 4, 5]), make([0, 6])]


@op_case("empty", [A.empty.memory_format, A.copy.default], ("size0",))
def _empty(dev):
    """Never returns empty()'s memory: each result is overwritten (copy, fill) or only its shape
    is used (full_like), so the outputs are deterministic."""
    def fn(x, x4):
        e1 = A.empty.memory_format([7, 13], dtype=f32, device=dev)
        e2 = A.empty.memory_format([2, 3, 4, 5], dtype=f32, device=dev,
                                   memory_format=torch.channels_last)
        e3 = A.empty.memory_format([3, 0], dtype=i64, device=dev)
        e4 = A.empty.memory_format([4, 6], dtype=f16, device=dev)
        return (A.copy.default(e1, x), A.copy.default(e2, x4), A.full_like.default(e3, 1),
                A.fill.Scalar(e4, 0.5), A.full_like.default(e1, 2.0) + x)
    return fn, [make([7, 13]), make([2, 3, 4, 5])]


@op_case("empty_strided", [A.empty_strided.default, A.copy.default], ("noncontig", "size0"))
def _empty_strided(dev):
    def fn(x, x3):
        es = A.empty_strided.default
        return (A.copy.default(es([7, 13], [1, 7], dtype=f32, device=dev), x),
                A.copy.default(es([2, 3, 4], [12, 1, 3], dtype=f32, device=dev), x3),
                A.full_like.default(es([0, 5], [5, 1], dtype=f32, device=dev), 1.0),
                A.copy.default(es([7, 13], [13, 1], dtype=f64, device=dev), x))
    return fn, [make([7, 13]), make([2, 3, 4])]


@op_case("scalar_tensor", [A.scalar_tensor.default], ("broadcast",))
def _scalar_tensor(dev):
    def fn(x):
        st = A.scalar_tensor.default
        return (st(3.5, device=dev), st(2, dtype=i64, device=dev), st(True, dtype=b8, device=dev),
                st(1.5, dtype=f16, device=dev), x * st(-2.0, dtype=f32, device=dev))
    return fn, [make([7, 13])]


@op_case("arange", [A.arange.default, A.arange.start, A.arange.start_step], ("size0", "broadcast"))
def _arange(dev):
    def fn(x):
        return (A.arange.default(10, device=dev), A.arange.default(5, dtype=f32, device=dev),
                A.arange.default(7.5, device=dev), A.arange.start(3, 11, device=dev),
                A.arange.start(-2.5, 2.5, device=dev), A.arange.start(0, 0, device=dev),
                A.arange.start_step(0, 20, 3, device=dev), A.arange.start_step(10, 0, -3, device=dev),
                A.arange.start_step(1, 2.5, 0.25, dtype=f16, device=dev),
                A.arange.start_step(0, 13, 1, dtype=i32, device=dev),
                x + A.arange.default(13, dtype=f32, device=dev))
    return fn, [make([7, 13])]


@op_case("iota", [P.iota.default])
def _iota(dev):
    def fn():
        return (P.iota.default(10, start=0, step=1, dtype=i64, device=dev, requires_grad=False),
                P.iota.default(7, start=5, step=-2, dtype=i32, device=dev, requires_grad=False),
                P.iota.default(0, start=0, step=1, dtype=i64, device=dev, requires_grad=False))
    return fn, []


@op_case("to_copy", [A._to_copy.default], ("odd", "noncontig"))
def _to_copy(dev):
    def fn(x, xp, xi, xb, xh, xt, x4):
        tc = A._to_copy.default
        return (tc(x, dtype=f16), tc(x, dtype=bf16), tc(x, dtype=f64), tc(x, dtype=i64),
                tc(x, dtype=i32), tc(x, dtype=i8), tc(xp, dtype=u8), tc(x, dtype=b8),
                tc(xi, dtype=f32), tc(xb, dtype=f32), tc(xb, dtype=i64), tc(xh, dtype=bf16),
                tc(xt.t(), dtype=f16), tc(x), tc(x4, memory_format=torch.channels_last),
                tc(xi, dtype=b8))
    return fn, [make([7, 13], f32, "wide"), make([7, 13], f32, "pos"), make([3, 5], i64),
                make([3, 5], b8), make([3, 5], f16), make([13, 7]), make([2, 3, 4, 5])]


@op_case("to_dtype", [A._to_copy.default, A._assert_tensor_metadata.default], ("odd",))
def _to_dtype(dev):
    """Tensor.to(dtype) as models write it: export records an _assert_tensor_metadata check
    before each _to_copy."""
    def fn(x, xb):
        return x.to(f16), x.to(torch.bfloat16).float(), xb.to(i64), x.double() + 1
    return fn, [make([7, 13]), make([3, 5], bf16)]


@op_case("assert_tensor_metadata", [A._assert_tensor_metadata.default])
def _assert_metadata(dev):
    def fn(x, xi):
        A._assert_tensor_metadata.default(x, None, None, f32, device=x.device, layout=torch.strided)
        A._assert_tensor_metadata.default(xi, dtype=i64, layout=torch.strided)  # sizes/strides: fake-tensor bug in 2.11 (list vs Size)
        return x * 2, xi + 1
    return fn, [make([7, 13]), make([3, 5], i64)]


@op_case("clone", [A.clone.default], ("odd", "noncontig", "size0"))
def _clone(dev):
    def fn(x, xt, xs, x4, xi, xb, x0):
        c = A.clone.default
        return (c(x), c(xt.t()), c(xs[::2, 1::2]), c(xt.t(), memory_format=torch.contiguous_format),
                c(x4, memory_format=torch.channels_last), c(xi), c(xb), c(x0),
                c(x4.permute(0, 2, 3, 1)))
    return fn, [make([7, 13]), make([13, 7]), make([9, 10]), make([2, 3, 4, 5]), make([3, 5], i64),
                make([3, 5], b8), make([0, 4])]


@op_case("copy", [A.copy.default], ("odd", "noncontig", "broadcast"))
def _copy(dev):
    def fn(x, y, yh, yr, xt, yi):
        c = A.copy.default
        return c(x, y), c(x, yh), c(x, yr), c(xt.t(), y), c(x, yi), c(yi, x)
    return fn, [make([7, 13]), make([7, 13]), make([7, 13], f16), make([13]), make([13, 7]),
                make([7, 13], i32)]


@op_case("alias", [A.alias.default], ("noncontig",))
def _alias(dev):
    def fn(x, xt):
        return A.alias.default(x), A.alias.default(xt.t()) * 2, A.alias.default(x) + x
    return fn, [make([7, 13]), make([13, 7])]


@op_case("lift_fresh_copy", [A.lift_fresh_copy.default], decomp="none")
def _lift_fresh_copy(dev):
    """run_decompositions() turns lift_fresh_copy into clone even with the empty table, so this
    case keeps export's own graph (no run_decompositions) to show the op as export prints it."""
    def fn(x):
        return A.lift_fresh_copy.default(x), A.lift_fresh_copy.default(x) + 1
    return fn, [make([7, 13])]


@op_case("lifted_constant", [A.clone.default])
def _lifted_constant(dev):
    """A tensor literal in forward becomes a lifted constant placeholder (c_lifted_tensor_0)."""
    def fn(x):
        return x + torch.tensor([1.5, -2.0, 3.0], device=dev), torch.tensor([2, 7], device=dev) * 3
    return fn, [make([4, 3])]


# --- views -----------------------------------------------------------------------------------

@op_case("view", [A.view.default], ("odd", "noncontig", "size0", "size1"))
def _view(dev):
    def fn(x, xt, x1, x0, xi, xb, xh):
        v = A.view.default
        return (v(x, [2, 12]), v(x, [-1]), v(x, [3, -1, 2]), v(x, [24, 1]), v(x1, []),
                v(xt.t(), [6, 2, 2]), v(x0, [5, 0]), v(xi, [15]), v(xb, [5, 3]), v(xh, [1, 15, 1]))
    return fn, [make([4, 6]), make([4, 6]), make([1]), make([0, 5]), make([3, 5], i64),
                make([3, 5], b8), make([3, 5], f16)]


@op_case("unsafe_view", [A._unsafe_view.default], ("size0",))
def _unsafe_view(dev):
    def fn(x, x0, xi):
        uv = A._unsafe_view.default
        return uv(x * 2, [2, 12]), uv(x + 1, [-1, 3]), uv(x0, [0]), uv(xi, [5, 3])
    return fn, [make([4, 6]), make([0, 5]), make([3, 5], i64)]


@op_case("reshape", [A.view.default, A._unsafe_view.default], ("noncontig",))
def _reshape(dev):
    """reshape is CompositeImplicitAutograd: export records view (when the strides allow) or
    clone + _unsafe_view (when not); reshape.default itself never reaches the graph."""
    def fn(x, xt):
        r = A.reshape.default
        return r(x, [2, 12]), r(xt.t(), [-1]), r(xt.t(), [6, 2, 2]), r(x, [24])
    return fn, [make([4, 6]), make([4, 6])]


@op_case("permute", [A.permute.default], ("odd", "size0", "noncontig"))
def _permute(dev):
    def fn(x3, x4, xd, x0, xi):
        p = A.permute.default
        return (p(x3, [2, 0, 1]), p(x3, [-1, 0, 1]), p(x4, [0, 2, 3, 1]), p(xd, []), p(x0, [1, 0]),
                p(xi, [1, 0]), p(p(x3, [1, 2, 0]), [2, 1, 0]))
    return fn, [make([3, 4, 5]), make([2, 3, 4, 5]), make([]), make([0, 3]), make([3, 5], i64)]


@op_case("expand", [A.expand.default], ("broadcast", "size1", "noncontig"))
def _expand(dev):
    def fn(x, x3, xd, xt, xb):
        e = A.expand.default
        return (e(x, [7, 13]), e(x, [-1, 13]), e(x3, [2, 3, 4, 5]), e(xd, [3, 4]),
                e(xt.t(), [2, 5, 3]), e(xb, [4, 3, 5]), e(x, [7, 13]) + 1)
    return fn, [make([1, 13]), make([3, 1, 5]), make([]), make([3, 5]), make([3, 5], b8)]


@op_case("squeeze", [A.squeeze.default, A.squeeze.dim, A.squeeze.dims], ("size1", "size0"))
def _squeeze(dev):
    def fn(x, xd, x0, xi):
        s = A.squeeze
        return (s.default(x), s.dim(x, 0), s.dim(x, 1), s.dim(x, -2), s.dims(x, [0, 2]),
                s.dims(x, [1]), s.dims(x, [-1, 0]), s.dim(xd, 0), s.default(x0), s.default(xi))
    return fn, [make([1, 7, 1, 13]), make([]), make([0, 1, 3]), make([1, 3, 1], i64)]


@op_case("unsqueeze", [A.unsqueeze.default], ("size1", "noncontig"))
def _unsqueeze(dev):
    def fn(x, xd, xt):
        u = A.unsqueeze.default
        return u(x, 0), u(x, -1), u(x, 1), u(xd, 0), u(xd, -1), u(xt.t(), 1)
    return fn, [make([7, 13]), make([]), make([5, 3])]


@op_case("slice", [A.slice.Tensor], ("odd", "noncontig", "size0"))
def _slice(dev):
    big = 9223372036854775807

    def fn(x, xi):
        s = A.slice.Tensor
        return (s(x, 0, 1, 7, 2), s(x, 1, -5, big), s(x, 1, 2, 100), s(x, 0, 5, 2), s(x, 1, 0, 13, 3),
                s(x, 0, -100, 3), s(x, -1, None, None, 4), s(s(x, 0, 1, big, 2), 1, 3, 11, 2),
                s(xi, 0, 2), s(x, 0, big, big))
    return fn, [make([9, 13]), make([5, 3], i64)]


@op_case("select", [A.select.int], ("odd", "noncontig"))
def _select(dev):
    def fn(x, x3, xt):
        s = A.select.int
        return (s(x, 0, 2), s(x, 1, -1), s(x3, 1, 0), s(x3, -1, 4), s(xt.t(), 0, 3),
                s(s(x3, 0, 1), 0, 2))
    return fn, [make([7, 13]), make([2, 3, 5]), make([5, 7])]


@op_case("as_strided", [A.as_strided.default], ("noncontig",))
def _as_strided(dev):
    def fn(x, y):
        a = A.as_strided.default
        return (a(x, [3, 4], [4, 1]), a(x, [4, 3], [1, 4]), a(x, [5, 3], [2, 1]),
                a(x, [2, 5], [5, 1], 2), a(y + 1, [3, 3], [4, 1], 1), a(x, [4, 2, 2], [3, 6, 1]))
    return fn, [make([24]), make([3, 4])]


@op_case("t", [A.t.default], ("noncontig",))
def _t(dev):
    def fn(x, x1, xd, xi):
        return A.t.default(x), A.t.default(x1), A.t.default(xd), A.t.default(xi) + 1
    return fn, [make([7, 13]), make([5]), make([]), make([3, 5], i64)]


@op_case("transpose", [A.transpose.int], ("noncontig",))
def _transpose(dev):
    def fn(x, x3):
        tr = A.transpose.int
        return tr(x, 0, 1), tr(x3, 0, 2), tr(x3, -1, -2), tr(x3, 1, 1), tr(tr(x3, 0, 1), 1, 2)
    return fn, [make([7, 13]), make([2, 3, 4])]


@op_case("split", [A.split.Tensor], ("odd", "size0"))
def _split(dev):
    def fn(x, x0):
        sp = A.split.Tensor
        return sp(x, 3), sp(x, 5, -1), sp(x, 20, 1), sp(x0, 2, 1)
    return fn, [make([7, 13]), make([0, 4])]


@op_case("split_with_sizes", [A.split_with_sizes.default], ("odd", "size0"))
def _split_with_sizes(dev):
    def fn(x):
        sw = A.split_with_sizes.default
        return sw(x, [2, 5, 6], 1), sw(x, [0, 7], 0), sw(x, [3, 4])
    return fn, [make([7, 13])]


@op_case("unbind", [A.unbind.int], ("odd",))
def _unbind(dev):
    def fn(x, x3):
        return A.unbind.int(x), A.unbind.int(x3, 2), A.unbind.int(x3, -2)
    return fn, [make([3, 5]), make([2, 4, 3])]


# --- data movement ---------------------------------------------------------------------------

@op_case("cat", [A.cat.default], ("odd", "noncontig", "size0"))
def _cat(dev):
    def fn(a, b, c, d, e, h, z0, at):
        cat = A.cat.default
        return (cat([a, b]), cat([a, c], 1), cat([a, c, a], -1), cat([a, h]), cat([a, z0]),
                cat([a, e], 1), cat([at.t(), b], 0), cat([d, d], 0), cat([a]))
    return fn, [make([2, 13]), make([5, 13]), make([2, 3]), make([3, 5], i64), make([2, 1]),
                make([4, 13], f16), make([0, 13]), make([13, 2])]


@op_case("cat_legacy_empty", [A.cat.default], ("size0",))
def _cat_legacy_empty(dev):
    """cat still skips 1-d empty tensors of any other shape (legacy behaviour)."""
    def fn(a, z):
        return A.cat.default([a, z, a], 1), A.cat.default([z, a])
    return fn, [make([3, 4]), make([0])]


@op_case("constant_pad_nd", [A.constant_pad_nd.default], ("odd", "size0", "noncontig"))
def _constant_pad_nd(dev):
    def fn(x, x4, xi, xt, x0):
        p = A.constant_pad_nd.default
        return (p(x, [1, 2]), p(x, [1, 2, 0, 3], 1.5), p(x, [-1, 2]), p(x, [0, 0, -2, -1]),
                p(x4, [1, 1, 2, 0]), p(xi, [2, 1], 3), p(xt.t(), [1, 1, 1, 1], -1.0), p(x0, [1, 1]))
    return fn, [make([7, 13]), make([1, 2, 3, 4]), make([3, 5], i64), make([13, 7]), make([0, 3])]


@op_case("index", [A.index.Tensor], ("odd", "broadcast", "noncontig"))
def _index(dev):
    def fn(x, x3, i, j, k, i32_, neg):
        ix = A.index.Tensor
        return (ix(x, [i]), ix(x, [None, j]), ix(x, [k, j]), ix(x3, [None, i32_, j[:3]]),
                ix(x3, [i32_, None, j[:3]]), ix(x, [neg]), ix(x.t(), [j]))
    return fn, [make([7, 13]), make([3, 4, 6]), torch.randint(0, 7, [4]), torch.randint(0, 4, [5]),
                torch.randint(0, 7, [3, 1]), torch.randint(0, 3, [3]).to(i32),
                torch.randint(-7, 0, [2, 2])]


@op_case("index_select", [A.index_select.default], ("odd", "noncontig"))
def _index_select(dev):
    def fn(x, xi, i, j, jd):
        s = A.index_select.default
        return s(x, 0, i), s(x, 1, j), s(xi, 1, i % 5), s(x.t(), 0, j), s(x, -1, jd.to(i32))
    return fn, [make([7, 13]), make([3, 5], i64), torch.tensor([6, 0, 3, 3]),
                torch.randint(0, 13, [5]), torch.randint(0, 13, [])]


@op_case("gather", [A.gather.default], ("odd", "noncontig"))
def _gather(dev):
    def fn(x, xi, i0, i1):
        g = A.gather.default
        return g(x, 0, i0), g(x, 1, i1), g(xi, 1, i1[:3, :4]), g(x.t(), 0, i1.t())
    return fn, [make([7, 13]), make([3, 5], i64), torch.randint(0, 7, [4, 13]),
                torch.randint(0, 5, [6, 5])]


def _unique_index(rows: int, cols: int, n: int) -> torch.Tensor:
    """Row indices unique within each column, so scatter writes each place at most once."""
    return torch.argsort(torch.rand(n, cols), dim=0)[:rows]


@op_case("scatter", [A.scatter.src, A.scatter.value], ("odd",))
def _scatter(dev):
    def fn(x, i0, src, i1, src1, xi, srci):
        return (A.scatter.src(x, 0, i0, src), A.scatter.value(x, 0, i0, 2.5),
                A.scatter.src(x, 1, i1, src1), A.scatter.value(xi, 0, i0[:, :5], 7),
                A.scatter.src(xi, 0, i0[:, :5], srci))
    return fn, [make([7, 13]), _unique_index(3, 13, 7), make([4, 14]), _unique_index(4, 7, 13).t(),
                make([7, 5]), make([7, 5], i64), make([3, 5], i64)]


@op_case("gather_of_computed", [A.gather.default, A.index_select.default], ("odd",))
def _gather_of_computed(dev):
    """Gathers of computed values, recomputed at the gathered elements only: cross-entropy's
    log-probability of each row's target (log-softmax written out, as training graphs
    decompose it), and rows of a bf16 product picked by index_select."""
    def fn(x, t, y, rows):
        m = A.amax.default(x, [1], True)
        shifted = A.sub.Tensor(x, m)
        logp = A.sub.Tensor(shifted, A.log.default(A.sum.dim_IntList(A.exp.default(shifted), [1], True)))
        picked = A.gather.default(logp, 1, t)
        scaled = A.mul.Tensor(A.add.Tensor(y, 1.0), 3.0)
        return A.neg.default(picked), A.index_select.default(scaled, 0, rows)
    return fn, [make([9, 37]), torch.randint(0, 37, [9, 1]), make([6, 10], torch.bfloat16),
                torch.tensor([5, 0, 2, 2])]


@op_case("scatter_one_per_row", [A.scatter.src, A.scatter.value], ("odd",))
def _scatter_one_per_row(dev):
    """Scatters that write one element of each row (an index of size 1 along dim, full along
    the others), computed as pointwise nodes: cross-entropy's one-hot gradient, into zeros
    and read by a product, and over a tensor along dim 0, 1 and a middle dim in bf16."""
    def fn(x, t, src, t0, src0, xb, tb):
        onehot = A.scatter.value(A.zeros_like.default(x), 1, t, -1.0)
        return (A.mul.Tensor(onehot, A.exp.default(x)), A.scatter.src(x, 1, t, src),
                A.scatter.src(x, 0, t0, src0), A.scatter.value(xb, 1, tb, 2.0))
    return fn, [make([9, 37]), torch.randint(0, 37, [9, 1]), make([9, 1]), torch.randint(0, 9, [1, 37]),
                make([1, 37]), make([5, 6, 11], torch.bfloat16), torch.randint(0, 6, [5, 1, 11])]


@op_case("embedding", [A.embedding.default], ("odd", "size1"))
def _embedding(dev):
    def fn(w, i, j, k, wh):
        e = A.embedding.default
        return e(w, i), e(w, j, 0), e(w, k), e(wh, i)
    return fn, [make([10, 5]), torch.randint(0, 10, [2, 7]), torch.randint(0, 10, [4]),
                torch.randint(0, 10, []), make([10, 3], f16)]


@op_case("flip", [A.flip.default], ("odd", "noncontig", "size0"))
def _flip(dev):
    def fn(x, x3, xi, xb, x0):
        f = A.flip.default
        return (f(x, [0]), f(x, [1]), f(x, [0, 1]), f(x3, [-1, 0]), f(x.t(), [0]), f(xi, [1]),
                f(xb, [0]), f(x0, [0]))
    return fn, [make([7, 13]), make([2, 3, 4]), make([3, 5], i64), make([3, 5], b8), make([0, 3])]


# --- reductions ------------------------------------------------------------------------------

@op_case("sum", [A.sum.default, A.sum.dim_IntList], ("odd", "noncontig", "size0", "size1"))
def _sum(dev):
    def fn(x, x3, x0, x1, xd):
        s, sd = A.sum.default, A.sum.dim_IntList
        return (s(x), sd(x, [1]), sd(x, [0], True), sd(x, [-1, 0]), sd(x3, [0, 2]),
                sd(x, [1], dtype=f64), s(x, dtype=f64), sd(x.t(), [0]), sd(x0, [0]), sd(x0, [1]),
                s(x0), sd(x1, [1]), sd(x, []), s(xd), sd(x3, [1], True))
    return fn, [make([7, 13]), make([2, 3, 5]), make([0, 5]), make([5, 1]), make([])]


@op_case("sum_dtypes", [A.sum.default, A.sum.dim_IntList], ("odd",))
def _sum_dtypes(dev):
    dts = (f16, bf16, f64, i64, i32, i8, u8, b8)

    def fn(*xs):
        return tuple(A.sum.default(x) for x in xs) + tuple(A.sum.dim_IntList(x, [1]) for x in xs)
    return fn, [make([3, 5], dt) for dt in dts]


@op_case("mean", [A.mean.dim, A.mean.default], ("odd", "noncontig", "size1"))
def _mean(dev):
    def fn(x, x3, xh, xb, x1):
        m = A.mean.dim
        return (m(x, [1]), m(x, [0], True), m(x, [-1, 0]), m(x3, [0, 2]), m(x, [1], dtype=f64),
                m(x.t(), [1]), m(xh, [1]), m(xb, [0]), m(x1, [-1]), A.mean.default(x),
                m(x, None), m(xh, [1], dtype=f32))
    return fn, [make([7, 13]), make([2, 3, 5]), make([3, 5], f16), make([3, 5], bf16), make([5, 1])]


def _minmax_red(op):
    def build(dev):
        def fn(x, x3, xi, xb, xh, xn):
            return (op(x, [1]), op(x, [0], True), op(x, []), op(x3, [0, 2]), op(x.t(), [1]),
                    op(xi, [1]), op(xb, [0]), op(xh, [-1]), op(xn, [1]))
        return fn, [make([7, 13]), make([2, 3, 5]), make([3, 5], i64), make([3, 5], b8),
                    make([3, 5], f16), make([4, 5], f32, "special")]
    return build


op_case("amax", [A.amax.default], ("odd", "noncontig"))(_minmax_red(A.amax.default))
op_case("amin", [A.amin.default], ("odd", "noncontig"))(_minmax_red(A.amin.default))


def _max_min(ops):
    default, dim = ops

    def build(dev):
        def fn(x, x3, xi, xh, xb):
            return (default(x), dim(x, 1), dim(x, 0, True), dim(x3, -1), dim(x.t(), 1),
                    default(xi), dim(xi, 1), dim(xh, 0), default(xb))
        return fn, [make([7, 13], f32, "distinct"), make([2, 3, 5], f32, "distinct"),
                    make([3, 5], i64, "distinct"), make([3, 5], f16, "distinct"), make([3, 5], b8)]
    return build


op_case("max", [A.max.default, A.max.dim], ("odd", "noncontig"))(_max_min((A.max.default, A.max.dim)))
op_case("min", [A.min.default, A.min.dim], ("odd", "noncontig"))(_max_min((A.min.default, A.min.dim)))


def _arg_red(op):
    def build(dev):
        def fn(x, x3, xi, xh, x1):
            return (op(x), op(x, 1), op(x, 0, True), op(x3, -1), op(x.t(), 1), op(xi, 0), op(xh, 1),
                    op(x1, 1))
        return fn, [make([7, 13], f32, "distinct"), make([2, 3, 5], f32, "distinct"),
                    make([3, 5], i32, "distinct"), make([3, 5], f16, "distinct"), make([3, 1])]
    return build


op_case("argmax", [A.argmax.default], ("odd", "noncontig", "size1"))(_arg_red(A.argmax.default))
op_case("argmin", [A.argmin.default], ("odd", "noncontig", "size1"))(_arg_red(A.argmin.default))


@op_case("prod", [A.prod.default, A.prod.dim_int], ("odd", "size0", "noncontig"))
def _prod(dev):
    def fn(x, xi, xb, x0, xh):
        return (A.prod.default(x), A.prod.dim_int(x, 1), A.prod.dim_int(x, 0, True),
                A.prod.default(xi), A.prod.dim_int(xi, 1), A.prod.default(xb),
                A.prod.default(x, dtype=f64), A.prod.dim_int(x0, 0), A.prod.default(x0),
                A.prod.dim_int(x.t(), 0), A.prod.dim_int(xh, -1))
    return fn, [make([7, 13], f32, "near1"), make([3, 5], i64, "near1"), make([3, 5], b8),
                make([0, 3]), make([3, 5], f16, "near1")]


def _any_all(ops):
    default, dim, dims = ops

    def build(dev):
        def fn(xb, x, xi, x0, xb2):
            return (default(xb), dim(xb, 1), dim(xb, 0, True), dims(xb2, [0, 2]), default(x),
                    dim(x, 1), default(xi), dim(xi, 0), default(x0), dim(x0, 1), dim(xb.t(), 1))
        return fn, [make([7, 13], b8), make([3, 5], f32, "smallint"), make([3, 5], i64, "smallint"),
                    make([0, 4], b8), make([2, 3, 4], b8)]
    return build


op_case("any", [A.any.default, A.any.dim, A.any.dims], ("odd", "size0", "noncontig"))(
    _any_all((A.any.default, A.any.dim, A.any.dims)))
op_case("all", [A.all.default, A.all.dim, A.all.dims], ("odd", "size0", "noncontig"))(
    _any_all((A.all.default, A.all.dim, A.all.dims)))


@op_case("var", [A.var.correction], ("odd", "noncontig"))
def _var(dev):
    def fn(x, x3, xd):
        v = A.var.correction
        return (v(x, [1]), v(x, [1], correction=0), v(x, None), v(x, [0], keepdim=True),
                v(x3, [0, 2], correction=1), v(x.t(), [1]), v(xd, [1], correction=2))
    return fn, [make([7, 13]), make([2, 3, 5]), make([3, 5], f64)]


@op_case("var_mean", [A.var_mean.correction], ("odd", "noncontig"))
def _var_mean(dev):
    def fn(x, x3):
        vm = A.var_mean.correction
        return (vm(x, [1]), vm(x, [1], correction=0), vm(x, None), vm(x3, [0, 2], keepdim=True),
                vm(x.t(), [0], correction=1))
    return fn, [make([7, 13]), make([2, 3, 5])]


@op_case("cumsum", [A.cumsum.default], ("odd", "noncontig", "size0"))
def _cumsum(dev):
    def fn(x, xi, xb, x0, xd, xh):
        c = A.cumsum.default
        return (c(x, 0), c(x, -1), c(x, 1, dtype=f64), c(xi, 1), c(xb, 0), c(x0, 0), c(xd, 0),
                c(x.t(), 1), c(xh, 1))
    return fn, [make([7, 13]), make([3, 5], i32), make([3, 5], b8), make([0, 3]), make([]),
                make([3, 5], f16)]


# --- normalization ---------------------------------------------------------------------------

def _softmaxes(op):
    def build(dev):
        def fn(x, x3, xd, x1, xh, xb):
            return (op(x, -1, False), op(x, 0, False), op(x3, 1, False), op(xd, 1, False),
                    op(x1, 1, False), op(x.t(), 1, False), op(xh, -1, False), op(xb, 0, False))
        return fn, [make([7, 13], f32, "wide"), make([2, 3, 5]), make([3, 5], f64), make([4, 1]),
                    make([3, 5], f16), make([3, 5], bf16)]
    return build


op_case("softmax", [A._softmax.default], ("odd", "noncontig", "size1"))(_softmaxes(A._softmax.default))
op_case("log_softmax", [A._log_softmax.default], ("odd", "noncontig", "size1"))(
    _softmaxes(A._log_softmax.default))


def _softmaxes_int(op):
    """softmax.int / log_softmax.int, as torch.export keeps torch.softmax: with and without dtype."""
    def build(dev):
        def fn(x, x3, xh, xb):
            return (op(x, -1), op(x, 0), op(x3, 1), op(x.t(), 1), op(xh, -1), op(xb, 0, torch.float32),
                    op(x, -1, torch.float64))
        return fn, [make([7, 13], f32, "wide"), make([2, 3, 5]), make([3, 5], f16), make([3, 5], bf16)]
    return build


op_case("softmax_int", [A.softmax.int], ("odd", "noncontig"))(_softmaxes_int(A.softmax.int))


@op_case("var_mean_dim", [A.var_mean.dim, A.var.dim], ("odd", "noncontig"))
def _var_mean_dim(dev):
    def fn(x, x3, xd):
        return (*A.var_mean.dim(x, [1]), *A.var_mean.dim(x, [0], False, True), A.var.dim(x3, [0, 2]),
                A.var.dim(x.t(), [1], False), *A.var_mean.dim(xd, [-1]))
    return fn, [make([7, 13]), make([2, 3, 5]), make([3, 5], f64)]


@op_case("layer_norm_default", [A.layer_norm.default], ("odd", "noncontig"))
def _layer_norm_default(dev):
    def fn(x, w, b, x3, xh, wh):
        op = A.layer_norm.default
        return (op(x, [13], w, b), op(x, [13]), op(x3, [3, 5], None, None, 1e-3), op(x.t(), [7]), op(xh, [5], wh, wh))
    return fn, [make([7, 13]), make([13]), make([13]), make([2, 3, 5]), make([3, 5], f16), make([5], f16)]
op_case("log_softmax_int", [A.log_softmax.int], ("odd", "noncontig"))(_softmaxes_int(A.log_softmax.int))


@op_case("layer_norm", [A.native_layer_norm.default], ("odd", "noncontig"))
def _layer_norm(dev):
    def fn(x, w, b, x3, w2, b2, xh, wh, bh, xd):
        ln = A.native_layer_norm.default
        return (ln(x, [13], w, b, 1e-5), ln(x3, [3, 8], w2, b2, 1e-6), ln(x, [13], None, None, 1e-5),
                ln(x.t().contiguous().t(), [13], w, None, 1e-5), ln(xh, [13], wh, bh, 1e-5),
                ln(xd, [13], None, None, 1e-5))
    return fn, [make([7, 13]), make([13]), make([13]), make([2, 3, 8]), make([3, 8]), make([3, 8]),
                make([4, 13], f16), make([13], f16), make([13], f16), make([3, 13], f64)]


@op_case("batch_norm", [A._native_batch_norm_legit_no_training.default], ("odd", "size1"))
def _batch_norm(dev):
    def fn(x4, x2, x3, w, b, rm, rv):
        bn = A._native_batch_norm_legit_no_training.default
        return (bn(x4, w, b, rm, rv, 0.1, 1e-5), bn(x2, w, b, rm, rv, 0.1, 1e-3),
                bn(x3, None, None, rm, rv, 0.1, 1e-5), bn(x4[:1], w, None, rm, rv, 0.1, 1e-5))
    return fn, [make([2, 3, 5, 4]), make([4, 3]), make([2, 3, 7]), make([3]), make([3]), make([3]),
                make([3], f32, "pos")]


@op_case("group_norm", [A.native_group_norm.default], ("odd",))
def _group_norm(dev):
    def fn(x, w, b, x3, x1):
        gn = A.native_group_norm.default
        return (gn(x, w, b, 2, 6, 15, 3, 1e-5), gn(x, None, None, 2, 6, 15, 2, 1e-5),
                gn(x3, w[:4], b[:4], 2, 4, 7, 2, 1e-6), gn(x1, w, b, 1, 6, 15, 6, 1e-5))
    return fn, [make([2, 6, 5, 3]), make([6]), make([6]), make([2, 4, 7]), make([1, 6, 5, 3])]


# --- matmul, convolution, pooling ------------------------------------------------------------

@op_case("mm", [A.mm.default], ("odd", "noncontig", "size0", "size1"))
def _mm(dev):
    def fn(a, b, at, bt, z, zk, a1, ad, bd, ah, bh, ab, bb):
        mm = A.mm.default
        return (mm(a, b), mm(at.t(), b), mm(a, bt.t()), mm(z, b), mm(zk, zk.t()), mm(a1, b),
                mm(ad, bd), mm(ah, bh), mm(ab, bb))
    return fn, [make([7, 13]), make([13, 5]), make([13, 7]), make([5, 13]), make([0, 13]),
                make([3, 0]), make([1, 13]), make([3, 4], f64), make([4, 5], f64),
                make([3, 8], f16), make([8, 5], f16), make([3, 8], bf16), make([8, 5], bf16)]


@op_case("bmm", [A.bmm.default], ("odd", "noncontig", "size1"))
def _bmm(dev):
    def fn(a, b, bt, a1, b1, ah, bh):
        bmm = A.bmm.default
        return (bmm(a, b), bmm(a, bt.transpose(1, 2)), bmm(a1, b1), bmm(ah, bh),
                bmm(a.permute(0, 2, 1).contiguous().permute(0, 2, 1), b))
    return fn, [make([3, 5, 7]), make([3, 7, 4]), make([3, 4, 7]), make([1, 2, 3]),
                make([1, 3, 1]), make([2, 3, 8], bf16), make([2, 8, 5], bf16)]


@op_case("addmm", [A.addmm.default], ("odd", "broadcast", "noncontig"))
def _addmm(dev):
    def fn(bias, bias2, biasc, a, b, bt):
        am = A.addmm.default
        return (am(bias, a, b), am(bias2, a, b), am(biasc, a, b), am(bias, a, b, beta=0.5, alpha=2),
                am(bias, a, bt.t()), am(bias2, a, b, beta=0))
    return fn, [make([5]), make([7, 5]), make([7, 1]), make([7, 13]), make([13, 5]), make([5, 13])]


# Products and convolutions with the pointwise ops a library runs as post-ops after them
# (coil fuses these onto the call as its epilogue). Each call has inputs of its own, so
# that no two calls are the same one after CSE.

@op_case("addmm_relu", [A.addmm.default, A.relu.default], ("odd", "broadcast", "noncontig"))
def _addmm_relu(dev):
    def fn(bias, x, w, x2):
        return (A.relu.default(A.addmm.default(bias, x, w.t())),
                A.relu.default(A.addmm.default(bias, x2, w.t(), beta=0.5, alpha=2)))
    return fn, [make([23]), make([9, 37]), make([23, 37]), make([9, 37])]


@op_case("mm_bias_gelu", [A.mm.default, A.add.Tensor, A.gelu.default], ("odd", "broadcast"))
def _mm_bias_gelu(dev):
    def fn(x, x2, w, bias):
        return (A.gelu.default(A.add.Tensor(A.mm.default(x, w), bias)),
                A.gelu.default(A.add.Tensor(A.mm.default(x2, w), bias), approximate="tanh"))
    return fn, [make([11, 40]), make([11, 40]), make([40, 29]), make([29])]


@op_case("bmm_transposed", [A.bmm.default, A.mul.Tensor, A.sigmoid.default], ("odd", "noncontig"))
def _bmm_transposed(dev):
    def fn(a, b, a2):
        return (A.bmm.default(a, b.transpose(1, 2)),
                A.sigmoid.default(A.mul.Tensor(A.bmm.default(a2, b.transpose(1, 2)), 0.125)))
    return fn, [make([3, 10, 17]), make([3, 12, 17]), make([3, 10, 17])]


@op_case("bmm_broadcast_weight", [A.bmm.default, A.expand.default], ("odd", "noncontig", "broadcast"))
def _bmm_broadcast_weight(dev):
    """A sequence-first projection as nn.MultiheadAttention exports it: the activations
    transposed to [seq, batch, dim] and one weight expanded over the sequence (a batch
    stride of 0)."""
    def fn(x, w):
        weight = A.expand.default(A.unsqueeze.default(A.t.default(w), 0), [17, 64, 192])
        return (A.bmm.default(A.permute.default(x, [1, 0, 2]), weight),)
    return fn, [make([2, 17, 64]), make([192, 64])]


@op_case("convolution_bias_relu", [A.convolution.default, A.relu.default, A.hardtanh.default, A.silu.default],
         ("odd",))
def _convolution_bias_relu(dev):
    def fn(x, w, b, x2, wg, bg, x3):
        c = A.convolution.default
        return (A.relu.default(c(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)),
                A.hardtanh.default(c(x2, w, b, [2, 2], [1, 1], [1, 1], False, [0, 0], 1), 0.0, 6.0),
                A.silu.default(c(x3, wg, bg, [1, 1], [1, 1], [2, 2], False, [0, 0], 2)))
    return fn, [make([2, 4, 9, 8]), make([6, 4, 3, 3]), make([6]), make([2, 4, 9, 8]), make([6, 2, 3, 3]),
                make([6]), make([2, 4, 9, 8])]


@op_case("mm_epilogues", [A.mm.default, A.tanh.default, A.sigmoid.default, A.silu.default, A.hardswish.default,
                          A.leaky_relu.default, A.elu.default, A.exp.default, A.clamp.default, A.mul.Tensor,
                          A.sub.Tensor, A.div.Tensor], ("odd", "broadcast"))
def _mm_epilogues(dev):
    """One product per epilogue: activations, constants on either side, tensors of every broadcast."""
    def fn(w, t, col, *xs):
        mm = A.mm.default
        y = [mm(x, w) for x in xs]
        return (A.tanh.default(y[0]), A.sigmoid.default(y[1]), A.silu.default(y[2]), A.hardswish.default(y[3]),
                A.leaky_relu.default(y[4], 0.1), A.elu.default(y[5]), A.exp.default(A.mul.Tensor(y[6], 0.25)),
                A.clamp.default(y[7], -0.5, 0.75), A.mul.Tensor(A.sub.Tensor(y[8], t), 3.0),
                A.div.Tensor(y[9], col), A.sub.Tensor(1.0, A.div.Tensor(y[10], 2.0)),
                A.relu.default(A.add.Tensor(A.mul.Tensor(y[11], t), 1.0)))
    return fn, [make([24, 13]), make([9, 13]), make([9, 1], f32, "nonzero")] + [make([9, 24]) for _ in range(12)]


@op_case("convolution", [A.convolution.default], ("odd",))
def _convolution(dev):
    def fn(x, w, b, w2, wg, wd, w1, wa):
        c = A.convolution.default
        return (c(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
                c(x, w, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1),
                c(x, w, b, [1, 1], [2, 2], [2, 2], False, [0, 0], 1),
                c(x, wg, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2),
                c(x, wd, b[:4], [2, 1], [1, 1], [1, 1], False, [0, 0], 4),
                c(x, w1, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                c(x, wa, None, [2, 1], [1, 0], [1, 1], False, [0, 0], 1))
    return fn, [make([2, 4, 9, 8]), make([6, 4, 3, 3]), make([6]), make([6, 4, 3, 3]),
                make([6, 2, 3, 3]), make([4, 1, 3, 3]), make([5, 4, 1, 1]), make([3, 4, 3, 2])]


@op_case("convolution_more", [A.convolution.default], ("odd", "noncontig"))
def _convolution_more(dev):
    """1-d, transposed, channels-last input and f64/bf16 convolutions."""
    def fn(x1, w1, xt, wt, bt, x4, w4, xd, wd, xb, wb):
        c = A.convolution.default
        return (c(x1, w1, None, [1], [1], [1], False, [0], 1),
                c(x1, w1, None, [2], [0], [2], False, [0], 1),
                c(xt, wt, bt, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
                c(x4.permute(0, 3, 1, 2), w4, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
                c(xd, wd, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                c(xb, wb, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))
    return fn, [make([2, 3, 11]), make([5, 3, 3]), make([1, 4, 5, 5]), make([4, 3, 3, 3]),
                make([3]), make([1, 6, 5, 3]), make([4, 3, 3, 3]), make([1, 2, 5, 5], f64),
                make([3, 2, 2, 2], f64), make([1, 2, 5, 5], bf16), make([3, 2, 3, 3], bf16)]


@op_case("convolution_few_channels", [A.convolution.default, A.relu.default, A.hardtanh.default, A.add.Tensor],
         ("odd", "noncontig"))
def _convolution_few_channels(dev):
    """Convolutions on few channels, the kind oneDNN runs fast only in blocked layouts: a
    ResNet stem (3 -> 8 channels, 7x7, stride 2) with bias and relu, the same on a
    channels-last input, and a 3x3 on 8 channels with a residual add and relu."""
    def fn(x, w, b, x4, xr, wr, br, res):
        c = A.convolution.default
        return (A.relu.default(c(x, w, b, [2, 2], [3, 3], [1, 1], False, [0, 0], 1)),
                A.hardtanh.default(c(x4.permute(0, 3, 1, 2), w, b, [2, 2], [3, 3], [1, 1], False, [0, 0], 1), 0.0, 6.0),
                A.relu.default(A.add.Tensor(c(xr, wr, br, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), res)))
    return fn, [make([2, 3, 21, 18]), make([8, 3, 7, 7]), make([8]), make([2, 13, 11, 3]), make([2, 8, 9, 7]),
                make([16, 8, 3, 3]), make([16]), make([2, 16, 9, 7])]


@op_case("convolution_1x1", [A.convolution.default, A.relu.default, A.add.Tensor], ("odd", "noncontig"))
def _convolution_1x1(dev):
    """1x1 convolutions, which coil runs as products where the channels are innermost: with
    bias and relu; strided with a residual add; 1-d; on transposed weights; in bf16; and
    two that stay convolutions (two groups, and channels outermost); transposed (a
    convolution's input gradient) at stride 1, a product, and at stride 2, a convolution."""
    def fn(x4, w, b, res4, x1, w1, wt, xb4, wb, bb, xc):
        c = A.convolution.default
        x = x4.permute(0, 3, 1, 2)
        return (A.relu.default(c(x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)),
                A.relu.default(A.add.Tensor(c(x, w, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1),
                                            res4.permute(0, 3, 1, 2))),
                c(x1.permute(0, 2, 1), w1, b[:8], [1], [0], [1], False, [0], 1),
                c(x, wt.transpose(0, 1), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                c(xb4.permute(0, 3, 1, 2), wb, bb, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                c(x, w[:, :8], None, [1, 1], [0, 0], [1, 1], False, [0, 0], 2),
                c(xc, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                c(x, wt, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1),
                c(x, wt, None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1))
    return fn, [make([2, 6, 5, 16]), make([24, 16, 1, 1]), make([24]), make([2, 3, 3, 24]), make([2, 7, 16]),
                make([8, 16, 1]), make([16, 24, 1, 1]), make([2, 4, 3, 32], bf16), make([16, 32, 1, 1], bf16),
                make([16], bf16), make([2, 16, 6, 5])]


@op_case("max_pool2d", [A.max_pool2d_with_indices.default], ("odd",))
def _max_pool2d(dev):
    def fn(x, x3, xi):
        mp = A.max_pool2d_with_indices.default
        return (mp(x, [3, 3], [2, 2], [1, 1]), mp(x, [2, 2], [2, 2]), mp(x, [3, 3], [1, 1], [0, 0], [2, 2]),
                mp(x, [3, 2], [2, 2], [1, 0], [1, 1], True), mp(x3, [2, 2]), mp(xi, [2, 2], [1, 1]))
    return fn, [make([2, 3, 9, 7], f32, "distinct"), make([3, 6, 5], f32, "distinct"),
                make([1, 2, 4, 4], i64, "distinct")]


@op_case("avg_pool2d", [A.avg_pool2d.default], ("odd",))
def _avg_pool2d(dev):
    def fn(x, x3):
        ap = A.avg_pool2d.default
        return (ap(x, [3, 3], [2, 2], [1, 1]), ap(x, [2, 2]), ap(x, [3, 3], [2, 2], [1, 1], False, False),
                ap(x, [3, 2], [2, 2], [1, 0], True, True), ap(x, [2, 2], [2, 2], [0, 0], False, True, 3),
                ap(x3, [2, 2], [1, 1]))
    return fn, [make([2, 3, 9, 7]), make([3, 6, 5])]


@op_case("adaptive_avg_pool2d", [A._adaptive_avg_pool2d.default], ("odd", "size1"))
def _adaptive_avg_pool2d(dev):
    def fn(x, x3):
        aap = A._adaptive_avg_pool2d.default
        return aap(x, [3, 3]), aap(x, [1, 1]), aap(x, [7, 7]), aap(x, [2, 5]), aap(x3, [2, 2])
    return fn, [make([2, 4, 7, 7]), make([3, 5, 6])]


# ---------------------------------------------------------------------------------------------
# Workloads: the benchmark suite's graphs at small sizes (default decompositions)
# ---------------------------------------------------------------------------------------------

WORKLOADS: dict[str, tuple[Callable, Callable]] = {
    # name: (fn, inputs(m, n) -> list)
    "pointwise_chain": (lambda x: (x * 2 + 1).relu(), lambda m, n: [make([m * n])]),
    "gelu_mul": (lambda x, y: F.gelu(x) * y, lambda m, n: [make([m, n]), make([m, n])]),
    "bcast_add_tanh": (lambda x, b: torch.tanh(x + b), lambda m, n: [make([m, n]), make([n])]),
    "softmax_lastdim": (lambda x: torch.softmax(x, -1), lambda m, n: [make([m, n])]),
    "layernorm": (lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
                  lambda m, n: [make([m, n]), make([n]), make([n])]),
    "rmsnorm_bf16": (
        lambda x, w: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6))
        .to(torch.bfloat16) * w,
        lambda m, n: [make([m, n], bf16), make([n], bf16)]),
    "sum_all": (lambda x: x.sum(), lambda m, n: [make([m * n])]),
    "sum_dim0": (lambda x: x.sum(0), lambda m, n: [make([m, n])]),
    "transpose_add": (lambda x, y: x + y.t(), lambda m, n: [make([m, n]), make([n, m])]),
    "var_mean_lastdim": (lambda x: torch.var_mean(x, -1), lambda m, n: [make([m, n])]),
    "residual_ln": (lambda x, y: F.layer_norm(x + y, (x.shape[-1],)) * 0.5 + x,
                    lambda m, n: [make([m, n]), make([m, n])]),
}

# (suffix, m, n, tags): the standard small size for every workload, odd sizes for some.
WORKLOAD_SIZES = [("", 32, 128, ())]
ODD_WORKLOADS = ("pointwise_chain", "softmax_lastdim", "layernorm", "rmsnorm_bf16", "sum_all",
                 "sum_dim0", "transpose_add", "var_mean_lastdim", "residual_ln", "bcast_add_tanh")


def register_workload(name: str, suffix: str, m: int, n: int, tags: tuple) -> None:
    fn, inputs = WORKLOADS[name]

    def build(dev):
        return Fn(fn), tuple(inputs(m, n))

    add_case(Case(f"wl_{name}{suffix}", "workload", build, (), tags))


# ---------------------------------------------------------------------------------------------
# Models: small blocks written by hand, random weights, eval mode (default decompositions)
# ---------------------------------------------------------------------------------------------

def jitter_norms(module: nn.Module) -> nn.Module:
    """Give norm layers non-trivial affine parameters and running statistics, so a fixture
    would catch a compiler that ignores them (default init makes them 1, 0, 0, 1)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.LayerNorm, nn.BatchNorm2d, RMSNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(1 + 0.1 * torch.randn_like(m.weight))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(0.1 * torch.randn_like(m.bias))
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn_like(m.running_mean))
                m.running_var.copy_(0.5 + torch.rand_like(m.running_var))
    return module


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def attention(q, k, v, mask=None):
    """Attention written with matmul and softmax (not scaled_dot_product_attention), so the graph
    holds the ops coil fuses itself. mask is additive or boolean (True = keep)."""
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, dim=-1) @ v


class SelfAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = attention(q, k, v, mask).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPT2Block(nn.Module):
    """Pre-LN transformer block: causal attention with a boolean mask buffer, GELU-tanh MLP."""

    def __init__(self, d=24, heads=3, T=8):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.register_buffer("bias", torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T))

    def forward(self, x):
        T = x.shape[1]
        x = x + self.attn(self.ln_1(x), self.bias[:, :, :T, :T])
        return x + self.mlp(self.ln_2(x))


class BertLayer(nn.Module):
    """Post-LN encoder layer; the 0/1 attention mask becomes an additive mask like HF's BERT."""

    def __init__(self, d=24, heads=3):
        super().__init__()
        self.attn = SelfAttention(d, heads)
        self.ln_1 = nn.LayerNorm(d, eps=1e-12)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.ln_2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, attention_mask):
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        x = self.ln_1(x + self.attn(x, ext))
        return self.ln_2(x + self.fc2(F.gelu(self.fc1(x))))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    """RMSNorm, rotary embeddings from cos/sin tables (one a persistent buffer, one not, to
    exercise both lifting paths), grouped-query attention (KV heads repeated), causal additive
    mask built in forward, SiLU-gated MLP."""

    def __init__(self, d=32, heads=4, kv_heads=2, T=8, hidden=48):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.input_layernorm = RMSNorm(d)
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d)
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(T).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin(), persistent=False)

    def repeat_kv(self, x):
        B, H, T, D = x.shape
        n = self.heads // self.kv_heads
        return x[:, :, None, :, :].expand(B, H, n, T, D).reshape(B, H * n, T, D)

    def forward(self, x):
        B, T, C = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        scores = (q @ k.transpose(2, 3)) / math.sqrt(self.hd) + mask
        p = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        y = (p @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class ViTBlock(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.attn = SelfAttention(d, heads)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    """Patch-embedding conv, class token cat, position embedding, 2 blocks, head on the class token."""

    def __init__(self, img=16, patch=4, d=16, heads=2, depth=2, classes=10):
        super().__init__()
        n = (img // patch) ** 2
        self.patch_embed = nn.Conv2d(3, d, patch, stride=patch)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n + 1, d))
        self.blocks = nn.Sequential(*[ViTBlock(d, heads, 2 * d) for _ in range(depth)])
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class TinyResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class ConvNeXtBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dwconv = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.pwconv1 = nn.Linear(d, 4 * d)
        self.pwconv2 = nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(0.1 * torch.randn(d))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class TinyConvNeXtStage(nn.Module):
    """Downsampling (channels-first LayerNorm via permute, 2x2 stride-2 conv) then two blocks."""

    def __init__(self, cin=8, d=16):
        super().__init__()
        self.down_norm = nn.LayerNorm(cin, eps=1e-6)
        self.down_conv = nn.Conv2d(cin, d, 2, stride=2)
        self.blocks = nn.Sequential(ConvNeXtBlock(d), ConvNeXtBlock(d))

    def forward(self, x):
        x = self.down_norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.blocks(self.down_conv(x))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.fc1 = nn.Conv2d(c, r, 1)
        self.fc2 = nn.Conv2d(r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cexp, cout, k, stride, act):
        super().__init__()
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, cexp, 1, bias=False), nn.BatchNorm2d(cexp), act(),
            nn.Conv2d(cexp, cexp, k, stride, k // 2, groups=cexp, bias=False), nn.BatchNorm2d(cexp), act(),
            SqueezeExcite(cexp, 8),
            nn.Conv2d(cexp, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class TinyMobileNetV3(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish(),
            InvertedResidual(8, 16, 8, 3, 1, nn.ReLU),
            InvertedResidual(8, 24, 12, 5, 2, nn.Hardswish),
            nn.Conv2d(12, 32, 1, bias=False), nn.BatchNorm2d(32), nn.Hardswish())
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(32, 24), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(24, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def _attention_mask():
    m = torch.ones(2, 8, dtype=torch.int64)
    m[1, 5:] = 0
    return m


MODELS: dict[str, Callable[[], tuple]] = {
    # name: () -> (module, args); called after seeding, weights and inputs on the CPU
    "gpt2_block": lambda: (GPT2Block(), [make([2, 8, 24])]),
    "bert_layer": lambda: (BertLayer(), [make([2, 8, 24]), _attention_mask()]),
    "llama_block": lambda: (LlamaBlock(), [make([2, 8, 32])]),
    "llama_block_bf16": lambda: (LlamaBlock().to(torch.bfloat16), [make([1, 8, 32], bf16)]),
    "vit_tiny": lambda: (TinyViT(), [make([2, 3, 16, 16])]),
    "resnet_tiny": lambda: (TinyResNet(), [make([1, 3, 32, 32])]),
    "convnext_stage": lambda: (TinyConvNeXtStage(), [make([1, 8, 14, 14])]),
    "mobilenetv3_tiny": lambda: (TinyMobileNetV3(), [make([1, 3, 32, 32])]),
}


def register_model(name: str) -> None:
    def build(dev):
        module, args = MODELS[name]()
        return jitter_norms(module).eval(), tuple(args)

    add_case(Case(f"model_{name}", "model", build))


# ---------------------------------------------------------------------------------------------
# Op cases added later: every op coil registers has a graph. They sit here, below the models,
# so that adding them moved no `# File:` line number in the graphs captured before them.
# ---------------------------------------------------------------------------------------------

# --- matrix-vector and batched products ------------------------------------------------------

@op_case("mv", [A.mv.default], ("odd", "noncontig", "size0", "size1"))
def _mv(dev):
    def fn(a, v, at, vs, a0, ak, vk, a1, ad, vd, ah, vh, ab, vb):
        mv = A.mv.default
        return (mv(a, v), mv(at.t(), v), mv(a, vs[::2]), mv(a0, v), mv(ak, vk), mv(a1, v),
                mv(ad, vd), mv(ah, vh), mv(ab, vb))
    return fn, [make([7, 13]), make([13]), make([13, 7]), make([26]), make([0, 13]), make([5, 0]),
                make([0]), make([1, 13]), make([3, 4], f64), make([4], f64), make([3, 8], f16),
                make([8], f16), make([3, 8], bf16), make([8], bf16)]


@op_case("addmv", [A.addmv.default], ("odd", "broadcast", "noncontig", "size0"))
def _addmv(dev):
    """beta=0 ignores self, nan and inf included (bn holds them)."""
    def fn(b, b1, bd, bn, a, v, at, a0, b0, ad, vd, bdd, ah, vh, bh, ab, vb, bb):
        am = A.addmv.default
        return (am(b, a, v), am(b1, a, v), am(bd, a, v), am(b, a, v, beta=0.5, alpha=2),
                am(b, at.t(), v), am(bn, a, v, beta=0), am(b, a, v, alpha=0), am(b0, a0, v),
                am(bdd, ad, vd, beta=2, alpha=-1), am(bh, ah, vh), am(bb, ab, vb))
    return fn, [make([7]), make([1]), make([]), make([7], f32, "special"), make([7, 13]), make([13]),
                make([13, 7]), make([0, 13]), make([0]), make([3, 4], f64), make([4], f64),
                make([3], f64), make([3, 8], f16), make([8], f16), make([3], f16), make([3, 8], bf16),
                make([8], bf16), make([1], bf16)]


@op_case("baddbmm", [A.baddbmm.default], ("odd", "broadcast", "noncontig", "size1"))
def _baddbmm(dev):
    def fn(c, cr, cc, cd, cn, b1, b2, b2t, b1t, ad, bd, cdd, ah, bh, ch, ab, bb, cb):
        bm = A.baddbmm.default
        return (bm(c, b1, b2), bm(cr, b1, b2), bm(cc, b1, b2), bm(cd, b1, b2),
                bm(c, b1, b2, beta=0.5, alpha=-2), bm(c, b1, b2t.transpose(1, 2)),
                bm(c, b1t.transpose(1, 2), b2), bm(cn, b1, b2, beta=0), bm(c[:1], b1[:1], b2[:1]),
                bm(cdd, ad, bd), bm(ch, ah, bh, alpha=0.5), bm(cb, ab, bb))
    return fn, [make([3, 5, 4]), make([4]), make([5, 1]), make([]), make([3, 5, 4], f32, "special"),
                make([3, 5, 7]), make([3, 7, 4]), make([3, 4, 7]), make([3, 7, 5]),
                make([2, 3, 4], f64), make([2, 4, 5], f64), make([2, 3, 5], f64),
                make([2, 3, 8], f16), make([2, 8, 5], f16), make([5], f16),
                make([2, 3, 8], bf16), make([2, 8, 5], bf16), make([2, 1, 5], bf16)]


@op_case("matvec_int", [A.mv.default, A.addmv.default, A.baddbmm.default], ("odd",))
def _matvec_int(dev):
    """Integer products: eager runs them on the CPU (cuBLAS has no integer GEMM)."""
    def fn(a, v, b, ai, vi, bi, c, b1, b2, a8, v8):
        return (A.mv.default(a, v), A.addmv.default(b, a, v, beta=2, alpha=3), A.mv.default(ai, vi),
                A.addmv.default(bi, ai, vi), A.baddbmm.default(c, b1, b2, alpha=2),
                A.mv.default(a8, v8))
    return fn, [make([4, 6], i64), make([6], i64), make([4], i64), make([3, 5], i32), make([5], i32),
                make([3], i32), make([2, 3, 5], i64), make([2, 3, 4], i64), make([2, 4, 5], i64),
                make([3, 4], i8, "smallint"), make([4], i8, "smallint")]


# --- clamps with tensor bounds, remainder with a scalar dividend -----------------------------

def _clamp_bound(op):
    """clamp_min.Tensor / clamp_max.Tensor: the bound broadcasts (row, column, 0-d, and the
    other way round) and takes part in type promotion."""
    def build(dev):
        def fn(x, b, br, bc, bd, xt, x0, xi, bi, xn, bn, xh, bh, xi32, bf, bdd, x8, bu8):
            return (op(x, b), op(x, br), op(x, bc), op(x, bd), op(bc, br), op(xt.t(), br),
                    op(x[::2, 1::3], bc[::2]), op(x0, br), op(xi, bi), op(xn, bn), op(xh, bh),
                    op(xi32, bf), op(xh, bd), op(x, bdd), op(x8, bu8))
        return fn, [make([7, 13]), make([7, 13]), make([13]), make([7, 1]), make([]), make([13, 7]),
                    make([0, 13]), make([3, 5], i64, "wide"), make([5], i64), make([4, 5], f32, "special"),
                    make([4, 5], f32, "special"), make([3, 5], f16), make([3, 5], f16),
                    make([3, 5], i32, "wide"), make([5]), make([1, 13], f64), make([3, 5], i8),
                    make([3, 5], u8)]
    return build


op_case("clamp_min_tensor", [A.clamp_min.Tensor], ("odd", "noncontig", "size0", "broadcast"))(
    _clamp_bound(A.clamp_min.Tensor))
op_case("clamp_max_tensor", [A.clamp_max.Tensor], ("odd", "noncontig", "size0", "broadcast"))(
    _clamp_bound(A.clamp_max.Tensor))


def _remainder_st(s, x):
    return A.remainder.Scalar_Tensor(s, x)


# (dtype, scalar dividend) pairs eager accepts: every scalar with f32, with each other dtype
# the first, an int and a float one. bool tensors are left out: any False divides by zero.
_REM_ST = [(dt, s) for dt in (f32,) + OTHER_DTYPES if dt != b8
           for s in dict.fromkeys((2.5, 3, -4, 0, -0.75) if dt == f32 else (2.5, 3, -4.5))
           if accepts(_remainder_st, s, (dt, [2]))]


@op_case("remainder_scalar_tensor", [A.remainder.Scalar_Tensor], ("odd", "noncontig", "size0"))
def _remainder_scalar_tensor(dev):
    def fn(*xs):
        outs = [_remainder_st(s, x) for x, (_, s) in zip(xs, _REM_ST)]
        t, z = xs[len(_REM_ST):]
        return tuple(outs) + (_remainder_st(2.5, t.t()), _remainder_st(-3, z))
    return fn, [make([3, 5], dt, "nonzero") for dt, _ in _REM_ST] + [make([5, 3], f32, "nonzero"),
                                                                     make([0, 4], f32, "nonzero")]


# --- factories -------------------------------------------------------------------------------

def _sized(op):
    """ones / zeros: size and dtype options, size-0 and 0-d results, one used in a broadcast."""
    def build(dev):
        def fn(x):
            return (op([3, 5], device=dev), op([2, 0, 3], dtype=i64, device=dev),
                    op([], dtype=b8, device=dev), op([4], dtype=f16, device=dev),
                    op([2, 3], dtype=bf16, device=dev), op([3, 2], dtype=i32, device=dev),
                    x + op([13], dtype=f32, device=dev))
        return fn, [make([7, 13])]
    return build


op_case("ones", [A.ones.default], ("size0", "broadcast"))(_sized(A.ones.default))
op_case("zeros", [A.zeros.default], ("size0", "broadcast"))(_sized(A.zeros.default))


def _like(op):
    """ones_like / zeros_like: self's dtype and layout (preserve_format keeps dense strides),
    or the dtype and memory format asked for."""
    def build(dev):
        def fn(x, xi, xt, x4, x0, xb):
            return (op(x), op(xi), op(xi, dtype=f32), op(xt.t()), op(x, dtype=b8),
                    op(x4, memory_format=torch.channels_last), op(x4.permute(0, 2, 3, 1)), op(x0),
                    op(x, dtype=f16), op(xb), op(xt[::2, 1:]), x + op(x[0]))
        return fn, [make([7, 13]), make([3, 5], i64), make([13, 7]), make([2, 3, 4, 5]),
                    make([0, 6]), make([3, 5], b8)]
    return build


op_case("ones_like", [A.ones_like.default], ("noncontig", "size0", "broadcast"))(
    _like(A.ones_like.default))
op_case("zeros_like", [A.zeros_like.default], ("noncontig", "size0", "broadcast"))(
    _like(A.zeros_like.default))


@op_case("empty_like", [A.empty_like.default], ("noncontig", "size0"))
def _empty_like(dev):
    """Never returns empty_like()'s memory: each result is overwritten (copy, fill) or only its
    shape is used (full_like), as in op_empty."""
    def fn(x, xt, xi, x4, x0):
        el = A.empty_like.default
        return (A.copy.default(el(x), x * 2), A.copy.default(el(xt.t()), xt.t()),
                A.fill.Scalar(el(xi), 7), A.fill.Scalar(el(x, dtype=f16), 0.5),
                A.copy.default(el(x4, memory_format=torch.channels_last), x4),
                A.full_like.default(el(x0), 1.0), A.full_like.default(el(x), 2.0) + x,
                A.fill.Scalar(el(xi, dtype=b8), True), A.copy.default(el(x4.permute(0, 2, 3, 1)), x4.permute(0, 2, 3, 1)))
    return fn, [make([7, 13]), make([13, 7]), make([3, 5], i64), make([2, 3, 4, 5]), make([0, 6])]


def _new_sized(op, *fill):
    """new_ones / new_zeros / new_full: self's dtype and device unless asked; self's layout
    does not matter (the result is contiguous)."""
    def build(dev):
        def fn(x, xi, xh, xt):
            return (op(x, [3, 5], *fill), op(xi, [2, 0, 3], *fill), op(xh, [], *fill),
                    op(xi, [4], *fill, dtype=f32), op(x, [2, 3], *fill, dtype=i32),
                    op(xt.t(), [3, 2], *fill), op(x, [2, 2], *fill, dtype=bf16),
                    x + op(x, [13], *fill))
        return fn, [make([7, 13]), make([3, 5], i64), make([3, 5], f16), make([5, 3])]
    return build


op_case("new_ones", [A.new_ones.default], ("size0", "broadcast", "noncontig"))(
    _new_sized(A.new_ones.default))
op_case("new_zeros", [A.new_zeros.default], ("size0", "broadcast", "noncontig"))(
    _new_sized(A.new_zeros.default))
op_case("new_full", [A.new_full.default], ("size0", "broadcast", "noncontig"))(
    _new_sized(A.new_full.default, 3))


@op_case("new_full_values", [A.new_full.default], ("broadcast",))
def _new_full_values(dev):
    """new_full's fill value: float, negative, bool, and an int into float."""
    def fn(x, xi):
        nf = A.new_full.default
        return (nf(x, [3, 5], 1.5), nf(x, [2, 3], -0.25), nf(xi, [4], -7), nf(x, [2, 3], True, dtype=b8),
                nf(xi, [2, 2], 2.5, dtype=f16), nf(x, [3], 4), x + nf(x, [7, 1], 0.5))
    return fn, [make([7, 13]), make([3, 5], i64)]


@op_case("new_empty", [A.new_empty.default], ("size0", "broadcast"))
def _new_empty(dev):
    """Never returns new_empty()'s memory (see op_empty_like)."""
    def fn(x, xi):
        ne = A.new_empty.default
        return (A.fill.Scalar(ne(x, [3, 5]), 1.5), A.copy.default(ne(x, [7, 13]), x * 2),
                A.fill.Scalar(ne(xi, [4]), 3), A.full_like.default(ne(x, [2, 0, 3]), 1.0),
                A.fill.Scalar(ne(x, [2, 3], dtype=i32), 4), A.copy.default(ne(xi, [3, 5], dtype=f64), xi),
                A.full_like.default(ne(x, [13]), 0.5) + x)
    return fn, [make([7, 13]), make([3, 5], i64)]


@op_case("new_empty_strided", [A.new_empty_strided.default], ("noncontig", "size0"))
def _new_empty_strided(dev):
    """Never returns new_empty_strided()'s memory (see op_empty_like)."""
    def fn(x, x3, xi):
        nes = A.new_empty_strided.default
        return (A.copy.default(nes(x, [7, 13], [1, 7]), x), A.copy.default(nes(x, [2, 3, 4], [12, 1, 3]), x3),
                A.full_like.default(nes(x, [0, 5], [5, 1]), 1.0),
                A.fill.Scalar(nes(x, [3, 4], [4, 1], dtype=f64), 2.0),
                A.copy.default(nes(x, [7, 13], [13, 1], dtype=f16), x),
                A.fill.Scalar(nes(xi, [2, 3], [1, 2]), -5))
    return fn, [make([7, 13]), make([2, 3, 4]), make([3, 5], i64)]


@op_case("fill_tensor", [A.fill.Tensor], ("noncontig", "size0"))
def _fill_tensor(dev):
    """The value is a 0-d tensor, cast to self's dtype (a float into an int tensor truncates)."""
    def fn(x, v, vi, xt, xi, xh, x0, xb, vb, x4, vd):
        f = A.fill.Tensor
        return (f(x, v), f(xt.t(), v), f(xi, vi), f(x, vi), f(xi, v), f(xh, v), f(x0, v),
                f(xb, vb), f(x4.permute(0, 2, 3, 1), v), f(x, vd), f(xh, vd))
    return fn, [make([7, 13]), torch.tensor(2.75), torch.tensor(-3), make([13, 7]), make([3, 5], i64),
                make([3, 5], f16), make([0, 4]), make([3, 5], b8), torch.tensor(True), make([2, 3, 4, 5]),
                torch.tensor(-1.125, dtype=f64)]


# --- scatters into a copy --------------------------------------------------------------------

@op_case("index_put", [A.index_put.default], ("odd", "broadcast", "noncontig", "size0"))
def _index_put(dev):
    """Integer indices, unique wherever values could collide, except for accumulate=True on
    integers (where the order of the additions does not matter)."""
    def fn(x, i, v, vr, vd, j, vc, vct, neg, x3, k, v3, xi, ii, vi, xh, ih, vh, xb, ib, vb, xt, e):
        ip = A.index_put.default
        return (ip(x, [i], v), ip(x, [i], vr), ip(x, [i], vd), ip(x, [i, j[:3]], vr[:3]),
                ip(x, [None, j], vc), ip(x, [None, j], vct.t()), ip(x, [neg], vr), ip(x3, [None, k], v3),
                ip(x3, [k, None, k[:1]], vd), ip(xi, [ii], vi, True), ip(x, [i], v, True),
                ip(xh, [ih], vh), ip(xb, [ib], vb), ip(xt.t(), [i], v), ip(x, [e], vd))
    return fn, [make([7, 13]), torch.randperm(7)[:3], make([3, 13]), make([13]), make([]),
                torch.randperm(13)[:4], make([7, 4]), make([4, 7]), torch.randperm(7)[:2] - 7,
                make([2, 5, 3]), torch.randperm(2), make([3]), make([5, 4], i64),
                torch.randint(0, 5, [8]), make([8, 4], i64), make([5, 6], f16),
                torch.randperm(5)[:3].to(i32), make([3, 6], f16), make([4, 5], b8), torch.randperm(4)[:2],
                make([5], b8), make([13, 7]), torch.zeros(0, dtype=i64)]


@op_case("index_put_mask", [A.index_put.default], ("broadcast",))
def _index_put_mask(dev):
    """Boolean masks: a whole-shape mask with a 0-d value, a row mask with a row value."""
    def fn(x, m, vd, mr, vr, xi, mi, vi):
        ip = A.index_put.default
        return ip(x, [m], vd), ip(x, [mr], vr), ip(xi, [mi], vi), ip(x, [None, mr[:1].expand(13)], vd)
    return fn, [make([7, 13]), make([7, 13], b8), make([]), make([7], b8), make([13]), make([3, 5], i64),
                make([3, 5], b8), make([], i64)]


@op_case("select_scatter", [A.select_scatter.default], ("odd", "noncontig", "size0", "size1"))
def _select_scatter(dev):
    def fn(x, s0, s1, s26, x3, s3, s3t, xt, xi, si, xb, sb, xh, sh, x1, s13, x0, se, xv, sd):
        ss = A.select_scatter.default
        return (ss(x, s0, 0, 2), ss(x, s1, 1, -1), ss(x, s26[::2], 0, 0), ss(x3, s3, 1, 0),
                ss(x3, s3t.t(), 1, 2), ss(x3, s3[:, :3], -1, 4), ss(xt.t(), s0, 0, 6), ss(xi, si, 0, -1),
                ss(xb, sb, 1, 2), ss(xh, sh, 0, 1), ss(x1, s13, 0, 0), ss(x0, se, 1, 3), ss(xv, sd, 0, 2))
    return fn, [make([7, 13]), make([13]), make([7]), make([26]), make([2, 3, 5]), make([2, 5]),
                make([5, 2]), make([13, 7]), make([3, 5], i64), make([5], i64), make([3, 5], b8),
                make([3], b8), make([3, 5], f16), make([5], f16), make([1, 13]), make([13]),
                make([0, 5]), make([0]), make([4]), make([])]


@op_case("slice_scatter", [A.slice_scatter.default], ("odd", "noncontig", "size0"))
def _slice_scatter(dev):
    big = 9223372036854775807

    def fn(x, sa, sb, sc, sd, se, xt, sat, xi, si, x3, s3, xb, sbb, xh, sh):
        sl = A.slice_scatter.default
        return (sl(x, sa, 0, 1, 7, 2), sl(x, sb, 1, -5, big), sl(x, sc, 1, 0, 13, 3),
                sl(x, sd, 1, None, None, 4), sl(x, se, 0, 5, 2), sl(xt.t(), sb, 1, 8, 100),
                sl(x, sat.t(), 0, -100, 3), sl(x, x * 2), sl(xi, si, 0, 2), sl(x3, s3, -1, 1, 4),
                sl(xb, sbb, 0, 0, 1), sl(xh, sh, 1, 1, big, 2))
    return fn, [make([9, 13]), make([3, 13]), make([9, 5]), make([9, 5]), make([9, 4]), make([0, 13]),
                make([13, 9]), make([13, 3]), make([5, 3], i64), make([3, 3], i64), make([2, 3, 5]),
                make([2, 3, 3]), make([3, 5], b8), make([1, 5], b8), make([3, 6], f16), make([3, 3], f16)]


# --- pooling: the overloads without indices --------------------------------------------------

@op_case("max_pool2d_default", [A.max_pool2d.default], ("odd", "noncontig"))
def _max_pool2d_default(dev):
    """max_pool2d.default (no indices), as F.max_pool2d records it; op_max_pool2d has the
    _with_indices overload."""
    def fn(x, x3, xi, xh, xb, xl):
        mp = A.max_pool2d.default
        return (mp(x, [3, 3], [2, 2], [1, 1]), mp(x, [2, 2]), mp(x, [3, 3], [1, 1], [0, 0], [2, 2]),
                mp(x, [3, 2], [2, 2], [1, 0], [1, 1], True), mp(x3, [2, 2]), mp(xi, [2, 2], [1, 1]),
                mp(xh, [2, 2]), mp(xb, [3, 3], [2, 2], [1, 1]), mp(xl.permute(0, 3, 1, 2), [2, 2]))
    return fn, [make([2, 3, 9, 7], f32, "distinct"), make([3, 6, 5], f32, "distinct"),
                make([1, 2, 4, 4], i64, "distinct"), make([1, 2, 5, 5], f16), make([1, 2, 5, 5], bf16),
                make([1, 6, 5, 3], f32, "distinct")]


@op_case("adaptive_avg_pool2d_default", [A.adaptive_avg_pool2d.default], ("odd", "size1", "noncontig"))
def _adaptive_avg_pool2d_default(dev):
    """adaptive_avg_pool2d.default, as F.adaptive_avg_pool2d records it (eager takes a mean for
    a 1x1 output); op_adaptive_avg_pool2d has the _adaptive_avg_pool2d overload."""
    def fn(x, x3, xd, xh, xb, xl):
        aap = A.adaptive_avg_pool2d.default
        return (aap(x, [3, 3]), aap(x, [1, 1]), aap(x, [7, 7]), aap(x, [2, 5]), aap(x, [5, 1]),
                aap(x3, [2, 2]), aap(xd, [3, 2]), aap(xh, [2, 2]), aap(xb, [1, 1]),
                aap(xl.permute(0, 3, 1, 2), [2, 3]), aap(xl.permute(0, 3, 1, 2), [1, 1]))
    return fn, [make([2, 4, 7, 7]), make([3, 5, 6]), make([1, 2, 5, 4], f64), make([1, 2, 5, 5], f16),
                make([1, 3, 4, 4], bf16), make([1, 5, 6, 3])]


# --- what export keeps only before run_decompositions ----------------------------------------

@op_case("reshape_export", [A.reshape.default], ("noncontig", "size0", "size1", "broadcast"), decomp="none")
def _reshape_export(dev):
    """reshape.default as export itself records it (export keeps CompositeImplicitAutograd ops);
    run_decompositions, even with the empty table, turns it into view or clone + _unsafe_view
    (op_reshape). Like op_lift_fresh_copy, this case keeps export's graph."""
    def fn(x, xt, x0, x1, xi):
        r = A.reshape.default
        return (r(x, [2, 12]), r(x, [-1]), r(xt.t(), [-1]), r(xt.t(), [6, 2, 2]), r(x[::2], [2, 2, 3]),
                r(x0, [5, 0]), r(x1, []), r(x1.expand(4), [2, 2]), r(xi, [5, 3]), r(x, [24, 1]) + 1)
    return fn, [make([4, 6]), make([4, 6]), make([0, 5]), make([1]), make([3, 5], i64)]


@op_case("assert_async", [A._assert_async.default, A._assert_async.msg], ("size1",), decomp="none")
def _assert_async(dev):
    """run_decompositions drops _assert_async.default even with the empty table: its dead-code
    elimination keeps only the targets torch.fx lists as side-effectful (_assert_async.msg is
    one, the default overload is not). So this case keeps export's graph, like
    op_lift_fresh_copy; op_assert_async_msg has the msg overload after run_decompositions({}).
    Every asserted value is true (nonzero)."""
    def fn(x, xb, xi, xd, xh):
        A._assert_async.default(xb)
        A._assert_async.default(xi)
        A._assert_async.default(xd)
        A._assert_async.default(A.ge.Scalar(A.sum.default(A.abs.default(x)), 0.0))
        A._assert_async.msg(xh, "xh is zero")
        A._assert_async.msg(A.lt.Scalar(A.amax.default(x, [0, 1]), 1e9), "x holds a huge value")
        return x * 2, xi + 1
    return fn, [make([7, 13]), torch.tensor(True), make([1], i64, "nonzero"), make([], f32, "nonzero"),
                make([1, 1], f16, "nonzero")]


@op_case("assert_async_msg", [A._assert_async.msg], ("size1",))
def _assert_async_msg(dev):
    def fn(x, xb, xi):
        A._assert_async.msg(xb, "xb is false")
        A._assert_async.msg(xi, "xi is zero")
        A._assert_async.msg(A.ge.Scalar(A.sum.default(A.abs.default(x)), 0.0), "sum of |x| < 0")
        return x + 1
    return fn, [make([7, 13]), torch.tensor(True), make([1], i32, "nonzero")]


# Loads that walk the last two dims transposed, which the C++ dialect copies into tiles of
# their own: 16-bit floats, doubles and integers, tiles cut at the edges, a batch dim, two
# distinct transposed loads and one read twice.
@fn_case("tile_transpose_bf16_40x72", "workload", tags=("odd",))
def _tile_transpose_bf16(dev):
    return (lambda x, y: (x + y.t()) * 2), [make([40, 72], bf16), make([72, 40], bf16)]


@fn_case("tile_transpose_batched", "workload")
def _tile_transpose_batched(dev):
    def fn(x, y, z):
        yt, zt = y.transpose(1, 2), z.transpose(1, 2)
        return x * yt + yt * zt - zt.exp()
    return fn, [make([3, 48, 64]), make([3, 64, 48]), make([3, 64, 48])]


@fn_case("tile_transpose_f64_i32", "workload", tags=("odd",))
def _tile_transpose_f64_i32(dev):
    return (lambda x, y, a, b: (x + y.t(), a * 3 + b.t())), [make([33, 64], f64), make([64, 33], f64),
                                                            make([64, 40], i32), make([40, 64], i32)]


# A cat along the rows of a vectorized row (ViT's class token before the patches, which are
# the columns of a conv's output): the C++ dialect tests the row's mask once per vector, not
# per lane, and computes what is the same in every lane as scalars.
@fn_case("cat_rows_layernorm", "workload")
def _cat_rows_layernorm(dev):
    def fn(x, cls, pos, w, b):
        t = x.flatten(2).transpose(1, 2)
        t = torch.cat([cls.expand(x.shape[0], -1, -1), t], 1) + pos
        return torch.nn.functional.layer_norm(t, [t.shape[-1]], w, b), t * 2
    return fn, [make([2, 48, 8, 8]), make([1, 1, 48]), make([1, 65, 48]), make([48]), make([48])]


# Graphs that once stopped coil with an internal error. A 0-d result fused into a kernel
# whose loops are [1] (a reduction to 0-d beside one that keeps its dim, a 0-d tensor beside a
# one-element one in a horizontal fusion); a tensor with no elements read by a reduction or a
# matrix product after its writer was dropped (nothing to compute).
@fn_case("softmax_1d_sum", "workload", tags=("size1",))
def _softmax_1d_sum(dev):
    return (lambda x: torch.softmax(x, -1).sum()), [make([13])]


@fn_case("reduce_1d_keepdim_and_not", "workload", tags=("odd", "size1"))
def _reduce_1d_keepdim_and_not(dev):
    def fn(x):
        return x.sum(0, keepdim=True) * 2, x.amax(0), x.mean(0, keepdim=True), x.max(0), x.amin(0) + 1
    return fn, [make([13], f32, "distinct")]


@fn_case("horizontal_0d_1elem", "workload", tags=("size1",))
def _horizontal_0d_1elem(dev):
    return (lambda a, b: (b.exp(), a.exp(), a * 2 + 1, b * 3)), [make([]), make([1])]


@fn_case("empty_slice_reductions", "workload", tags=("size0",))
def _empty_slice_reductions(dev):
    def fn(x, y, m, i):
        e = x[2:2] * y[2:2]
        # Eager refuses softmax of integers only where a kernel runs: an empty one passes.
        return (e.sum(dtype=f64), e.sum(0, keepdim=True), (m[:, 1:1] * 2) @ (m[1:1] * 3), torch.softmax(i[:, :0], 1),
                torch.log_softmax(i[:0], 0))
    return fn, [make([7]), make([7]), make([3, 5]), make([4, 3], torch.int8, "smallint")]


# Scalars a printed literal once got wrong, and logical ops of operands of different dtypes:
# division by -0.0 divided by +0.0 in Triton (a constant equal to 0 becomes +0.0), the zero of
# floor_divide kept no sign, and a bool scalar of a comparison, splat to a block, was a float
# block that `|` refused under Triton's interpreter (a 0-d bf16 or-ed with a u8).
@fn_case("special_scalars_logical_mixed", "workload", tags=("size1",))
def _special_scalars_logical_mixed(dev):
    def fn(x, h, i, d, z, n):
        r = torch.relu(x)
        return (x / -0.0, i / -0.0, d / -0.0, 1.0 / torch.floor_divide(z, 1.0), 1.0 / (z * -0.0),
                torch.logical_or(h, torch.log_softmax(h, 0).to(u8)), torch.logical_and(r, n), torch.logical_xor(n, r),
                torch.logical_or(r, n.bool()), torch.logical_not(r), torch.where(r > 0, n, d))
    z = torch.tensor([-0.0, 0.0, 0.5, -0.5, 2.5, -3.0])
    return fn, [make([4, 5]), make([], bf16), make([], i64), make([5], f64), z, make([5], i64, "smallint")]


# A cat wider than one node loads (64 inputs): groups of inputs are concatenated first, so no
# kernel grows with the number of inputs. 130 inputs of 1 to 3 columns: three groups.
@fn_case("cat_wide", "workload", tags=("odd",))
def _cat_wide(dev):
    return (lambda *xs: torch.cat(xs, 1) * 2), [make([2, 1 + k % 3]) for k in range(130)]


@op_case("unfold", [A.unfold.default], ("odd", "noncontig", "size1", "size0"))
def _unfold(dev):
    """unfold (a view): windows along every dim, overlapping (step < size), apart (step >
    size), of the whole dim, of size 0 and 1, of strided, 0-dim and empty tensors, unfolded
    twice, and read by a later op (a sum over the windows)."""
    u = A.unfold.default

    def fn(x, x3, xd, x0, xi, xh):
        return (u(x, 1, 3, 1), u(x, 0, 2, 2), u(x, -1, 2, 4), u(x, 1, 7, 1), u(x, 1, 0, 1), u(x, 0, 1, 3),
                u(x3, 2, 4, 2), u(x.t(), 0, 3, 2), u(x[:, ::2], 1, 2, 1), u(xd, 0, 1, 1), u(xd, 0, 0, 2),
                u(x0, 1, 2, 1), u(xi, 1, 2, 2), u(xh, 0, 2, 1), u(u(x, 1, 3, 2), 0, 2, 1),
                A.sum.dim_IntList(u(x3, 1, 2, 1), [-1]))
    return fn, [make([5, 7]), make([2, 3, 9]), make([]), make([0, 4]), make([3, 6], i64), make([4, 5], f16)]


@op_case("empty_permuted", [A.empty_permuted.default, A.copy.default], ("size0",))
def _empty_permuted(dev):
    """Each result's memory is overwritten (copy, fill) or only its layout used (full_like), so
    the outputs are deterministic; channels-last, reversed and identity layouts, and an empty
    one, so that the strides each layout gives reach the outputs."""
    ep = A.empty_permuted.default

    def fn(x4, x3):
        e1 = ep([2, 3, 4, 5], [0, 2, 3, 1], dtype=f32, device=dev)
        e2 = ep([4, 3, 5], [2, 1, 0], dtype=f32, device=dev)
        e3 = ep([4, 3, 5], [0, 1, 2], dtype=f16, device=dev)
        e4 = ep([2, 0, 4], [2, 0, 1], dtype=i64, device=dev)
        return (A.copy.default(e1, x4), A.copy.default(e2, x3), A.fill.Scalar(e3, 0.5), A.full_like.default(e4, 1),
                A.full_like.default(e2, 2.0) + x3)
    return fn, [make([2, 3, 4, 5]), make([4, 3, 5])]


@op_case("sdpa", [A.scaled_dot_product_attention.default], ("odd", "noncontig", "broadcast"))
def _sdpa(dev):
    """scaled_dot_product_attention as torch.export keeps it: plain and causal; additive and
    boolean masks (broadcast from [L, S], one row with every key masked); query and key lengths
    that differ with a value head of its own size; a given scale; q, k, v as strided views of one
    qkv projection; 3-d inputs; grouped-query heads; bf16, f16 and f64."""
    sdpa = A.scaled_dot_product_attention.default

    def fn(q, k, v, am, bm, q2, k2, v2, qkv, q3, qg, kg, vg, qb, kb, vb, qh, kh, vh, qd, kd, vd):
        bm = bm.clone()
        bm[2] = False
        qs, ks, vs = (t.view(2, 9, 3, 8).transpose(1, 2) for t in qkv.split(24, dim=2))
        return (sdpa(q, k, v), sdpa(q, k, v, None, 0.0, True), sdpa(q, k, v, am), sdpa(q, k, v, bm),
                sdpa(q2, k2, v2), sdpa(q2, k2, v2, None, 0.0, True, scale=0.3), sdpa(qs, ks, vs, None, 0.0, True),
                sdpa(q3, q3, q3), sdpa(qg, kg, vg, None, 0.0, True, enable_gqa=True),
                sdpa(qb, kb, vb, None, 0.0, True), sdpa(qh, kh, vh), sdpa(qd, kd, vd, am[:7].to(f64)))
    return fn, [make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([9, 9]), make([9, 9], b8),
                make([2, 2, 5, 8]), make([2, 2, 11, 8]), make([2, 2, 11, 12]), make([2, 9, 72]), make([3, 7, 8]),
                make([1, 4, 6, 8]), make([1, 2, 6, 8]), make([1, 2, 6, 8]),
                make([2, 2, 33, 64], bf16), make([2, 2, 33, 64], bf16), make([2, 2, 33, 64], bf16),
                make([1, 2, 17, 32], f16), make([1, 2, 17, 32], f16), make([1, 2, 17, 32], f16),
                make([1, 2, 7, 8], f64), make([1, 2, 9, 8], f64), make([1, 2, 9, 8], f64)]


@op_case("sdpa_flash_cpu", [A._scaled_dot_product_flash_attention_for_cpu.default], ("odd",))
def _sdpa_flash_cpu(dev):
    """The CPU's fused attention op that AOTAutograd leaves in graphs: causal, masked, scaled,
    and 130 keys (more than one block of 64) in bf16."""
    fa = A._scaled_dot_product_flash_attention_for_cpu.default

    def fn(q, k, v, m, qb, kb, vb):
        return (fa(q, k, v)[0], fa(q, k, v, 0.0, True)[0], fa(q, k, v, attn_mask=m)[0], fa(q, k, v, scale=0.5)[0],
                fa(qb, kb, vb, 0.0, True)[0])
    return fn, [make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 9]),
                make([1, 2, 130, 32], bf16), make([1, 2, 130, 32], bf16), make([1, 2, 130, 32], bf16)]


_CPU_ATTENTION = []


def cuda_attention_on_cpu():
    """The fused attention ops that PyTorch has for CUDA only, given CPU kernels through its math
    attention (float32 and up, as those kernels compute), so that their graphs are captured and
    their outputs computed by PyTorch here; the GPU check runs the same graphs' ops for real."""
    if _CPU_ATTENTION:
        return
    lib = torch.library.Library("aten", "IMPL")
    _CPU_ATTENTION.append(lib)

    def math(q, k, v, mask, causal, scale, heads_inner=False):  # laid out as the CUDA kernels write it
        out = A._scaled_dot_product_attention_math.default(q, k, v, mask, 0.0, causal, scale=scale)[0]
        return out.transpose(1, 2).contiguous().transpose(1, 2) if heads_inner else out

    def scores(q, k, mask, causal, scale):  # in f32, -inf where a key is left out
        s = (q.float() @ k.float().transpose(-2, -1)) * (scale if scale is not None else q.shape[-1] ** -0.5)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.float()
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
        return s

    def logsumexp(q, k, mask, causal, scale):
        return torch.logsumexp(scores(q, k, mask, causal, scale), -1)

    def grads(dy, q, k, v, mask, causal, scale, heads_inner=False):  # of math attention, written out
        p = torch.softmax(scores(q, k, mask, causal, scale), -1)
        dy, q, k, v = dy.float(), q.float(), k.float(), v.float()
        dp = dy @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * (scale if scale is not None else q.shape[-1] ** -0.5)
        g = (ds @ k, ds.transpose(-2, -1) @ q, p.transpose(-2, -1) @ dy)
        return tuple(t.to(dy.dtype).transpose(1, 2).contiguous().transpose(1, 2) if heads_inner else t.contiguous()
                     for t in g)

    def scalar():
        return torch.zeros((), dtype=i64)

    def flash(q, k, v, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
        e = torch.zeros(0, dtype=i64)
        return (math(q, k, v, None, is_causal, scale), logsumexp(q, k, None, is_causal, scale), e, e, q.shape[2],
                k.shape[2], torch.zeros(2, dtype=i64), scalar(), q.new_zeros(0))

    def efficient(q, k, v, bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
        lse = torch.zeros(*q.shape[:2], (q.shape[2] + 31) // 32 * 32 if compute_log_sumexp else 0)
        if compute_log_sumexp:  # rows padded to a multiple of 32, with zeros here
            lse[:, :, :q.shape[2]] = logsumexp(q, k, bias, is_causal, scale)
        return math(q, k, v, bias, is_causal, scale, True), lse, scalar(), scalar()

    def cudnn(q, k, v, bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, return_debug_mask=False, *,
              scale=None):
        e = torch.zeros(0, dtype=i64)
        return (math(q, k, v, bias, is_causal, scale), logsumexp(q, k, bias, is_causal, scale)[..., None], e, e,
                q.shape[2], k.shape[2], scalar(), scalar(), q.new_zeros(0))

    def flash_backward(dy, q, k, v, out, lse, cum_q, cum_k, max_q, max_k, dropout_p, is_causal, seed, offset, *,
                       scale=None):
        return grads(dy, q, k, v, None, is_causal, scale)

    def efficient_backward(dy, q, k, v, bias, out, lse, seed, offset, dropout_p, grad_input_mask, is_causal=False, *,
                           scale=None):
        return (*grads(dy, q, k, v, bias, is_causal, scale, True), None)

    def cudnn_backward(dy, q, k, v, out, lse, seed, offset, bias, cum_q, cum_k, max_q, max_k, dropout_p, is_causal, *,
                       scale=None):
        return grads(dy, q, k, v, bias, is_causal, scale)

    lib.impl("_scaled_dot_product_flash_attention", flash, "CPU")
    lib.impl("_scaled_dot_product_efficient_attention", efficient, "CPU")
    lib.impl("_scaled_dot_product_cudnn_attention", cudnn, "CPU")
    lib.impl("_scaled_dot_product_flash_attention_backward", flash_backward, "CPU")
    lib.impl("_scaled_dot_product_efficient_attention_backward", efficient_backward, "CPU")
    lib.impl("_scaled_dot_product_cudnn_attention_backward", cudnn_backward, "CPU")


@op_case("sdpa_cuda_ops", [A._scaled_dot_product_flash_attention.default,
                           A._scaled_dot_product_efficient_attention.default,
                           A._scaled_dot_product_cudnn_attention.default], ("odd",))
def _sdpa_cuda_ops(dev):
    """The fused attention ops that AOTAutograd leaves in CUDA graphs (flash, memory-efficient,
    cuDNN), causal, with an additive bias, and scaled; their outputs from PyTorch's math
    attention (cuda_attention_on_cpu)."""
    cuda_attention_on_cpu()
    fa, ea, ca = (A._scaled_dot_product_flash_attention.default, A._scaled_dot_product_efficient_attention.default,
                  A._scaled_dot_product_cudnn_attention.default)

    def fn(q, k, v, bias, q2, k2, v2):
        return (fa(q, k, v, 0.0, True)[0], fa(q2, k2, v2, scale=0.2)[0], ea(q, k, v, bias, False)[0],
                ea(q2, k2, v2, None, False, 0.0, True)[0], ca(q, k, v, None, False, 0.0, True)[0],
                ca(q, k, v, bias, False)[0])
    return fn, [make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 9]),
                make([1, 2, 70, 32]), make([1, 2, 70, 32]), make([1, 2, 70, 32])]


@op_case("sdpa_backward", [A._scaled_dot_product_flash_attention_for_cpu.default,
                           A._scaled_dot_product_flash_attention_for_cpu_backward.default], ("odd",))
def _sdpa_backward(dev):
    """Attention as a training graph has it on the CPU: the fused op with its logsumexp read,
    and the backward op: plain, causal, with an additive mask and a scale, fewer queries than
    keys (causal), and 33 of each (not a multiple of a block). (Half-precision gradients are
    sums that cancel, whose eager values are off by more than a per-element tolerance allows:
    the model tests check those against float64.)"""
    fa, fb = (A._scaled_dot_product_flash_attention_for_cpu.default,
              A._scaled_dot_product_flash_attention_for_cpu_backward.default)

    def fn(q, k, v, dy, m, q2, k2, v2, dy2, qb, kb, vb, dyb):
        outs = []
        for q_, k_, v_, dy_, causal, mask, scale in ((q, k, v, dy, False, None, None), (q, k, v, dy, True, None, None),
                                                     (q, k, v, dy, False, m, 0.5), (q2, k2, v2, dy2, True, None, None),
                                                     (qb, kb, vb, dyb, True, None, None)):
            out, lse = fa(q_, k_, v_, 0.0, causal, attn_mask=mask, scale=scale)
            outs += [lse, *fb(dy_, q_, k_, v_, out, lse, 0.0, causal, attn_mask=mask, scale=scale)]
        return tuple(outs)
    return fn, [make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 9]),
                make([1, 2, 5, 8]), make([1, 2, 11, 8]), make([1, 2, 11, 8]), make([1, 2, 5, 8]),
                make([1, 2, 33, 32]), make([1, 2, 33, 32]), make([1, 2, 33, 32]), make([1, 2, 33, 32])]


@op_case("sdpa_backward_cuda_ops", [A._scaled_dot_product_flash_attention_backward.default,
                                    A._scaled_dot_product_efficient_attention_backward.default,
                                    A._scaled_dot_product_cudnn_attention_backward.default], ("odd",))
def _sdpa_backward_cuda_ops(dev):
    """The fused CUDA attention ops with their logsumexp read, and their backward ops: causal,
    with an additive bias, and scaled; outputs from PyTorch's math attention and its autograd
    (cuda_attention_on_cpu)."""
    cuda_attention_on_cpu()
    fa, ea, ca = (A._scaled_dot_product_flash_attention.default, A._scaled_dot_product_efficient_attention.default,
                  A._scaled_dot_product_cudnn_attention.default)
    fb, eb, cb = (A._scaled_dot_product_flash_attention_backward.default,
                  A._scaled_dot_product_efficient_attention_backward.default,
                  A._scaled_dot_product_cudnn_attention_backward.default)

    def fn(q, k, v, dy, bias, q2, k2, v2, dy2, seed, offset):
        f = fa(q, k, v, 0.0, True)  # its random state is u64, a dtype coil has not: given as i64
        gf = fb(dy, q, k, v, f[0], f[1], f[2], f[3], f[4], f[5], 0.0, True, seed, offset)
        e = ea(q2, k2, v2, None, True, 0.0, False, scale=0.2)
        ge = eb(dy2, q2, k2, v2, None, e[0], e[1], e[2], e[3], 0.0, [True, True, True, False], False, scale=0.2)
        c = ca(q, k, v, bias, True)
        gc = cb(dy, q, k, v, c[0], c[1], c[6], c[7], bias, c[2], c[3], c[4], c[5], 0.0, False)
        return (f[1], *gf, e[1][:, :, :q2.shape[2]], *ge[:3], c[1], *gc)
    return fn, [make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 16]), make([2, 3, 9, 9]),
                make([1, 2, 40, 32]), make([1, 2, 40, 32]), make([1, 2, 40, 32]), make([1, 2, 40, 32]),
                torch.zeros(2, dtype=i64), torch.zeros((), dtype=i64)]


# Findings of the differential tester (tests/difftest/), each a graph coil got wrong:
# - softmax and log_softmax of 0-d tensors (a row of one) holding infinities or NaN give NaN,
#   as x - x does (a constant 1 and 0 were printed);
# - fmod, remainder and floor division of infinities, NaN, denormals and quotients too large
#   for a - trunc(a / b) * b (Triton's float % on the GPU; now libdevice's fmod), denormals
#   as dividends (Triton flushed them in libdevice's functions);
# - a select from the second half of a cat (a masked-off load at a negative constant index,
#   which Triton's broadcast_to refused);
# - zeros_like + x in f16, and a 0-d where, prod and cumsum compared, with
#   fusion.inline_pointwise=0 (tests/cli/cli_test.sh): a constant forwarded to a later member
#   was taken for a scalar, and a value of one pass was read in another;
# - integer divisions inlined into a cat: the lanes of the other input read 0, and divided
#   by it reported a division by zero that eager never does.
@fn_case("difftest_findings", "workload", tags=("size1",))
def _difftest_findings(dev):
    def fn(s0, s1, s2, s3, x, y, c, ci, h, b, i, k, r, u, e):
        zero_d = [s0, s1, s2, s3]
        # The variance of products whose deviations from their mean are exactly 0 (one element,
        # rows of one value): with the product and the difference contracted into a fused
        # multiply-add on the GPU they were not, and var of one element was inf, not NaN.
        products = torch.nn.functional.hardswish(r) * 0.7
        return (torch.stack([torch.softmax(s, 0) for s in zero_d]), torch.stack([torch.log_softmax(s, 0) for s in zero_d]),
                torch.fmod(x, y), torch.remainder(x, y), torch.floor_divide(x, y), torch.fmod(x, 0.001),
                torch.remainder(y, 0.001), torch.floor(torch.cat([c, c])[12]), torch.cat([ci, ci])[0] / torch.cat([ci, ci]),
                h + torch.zeros_like(h), torch.where(b, b, i) != torch.cumsum(i.prod(), 0),
                torch.cat([torch.div(k, k, rounding_mode="trunc"), torch.remainder(k + 3, k), torch.floor_divide(7, k)]),
                torch.var(products, 1), torch.var(products[:, :1], 1), torch.var_mean(products[0, 0], 0)[0],
                # A prefix sum near 1 to a power of 15173 multiplies its relative error by 15173:
                # a running f32 sum on the GPU was 0.5% off, where a sum in f64 rounded once is exact.
                torch.pow(torch.cumsum(u, 1), e))
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e-39, -1e-39, 5.5, -7.25, 1e30, 0.0, 3.0,
                            12345.678, -0.0])
    # No denormal divisor: CPU eager's vectorized fmod gives NaN for one (the reference here).
    divisors = torch.tensor([float("inf"), float("-inf"), float("nan"), 5.5, -7.25, 1e30, 0.0, 3.0, 12345.678, -0.0,
                             0.001, -2.5])
    x = special.repeat_interleave(12)
    y = divisors.repeat(12)
    s = [torch.tensor(v) for v in (float("inf"), float("-inf"), float("nan"), 1.5)]
    rows = make([5, 1]).expand(5, 9).contiguous()
    near_one = make([16, 33]) * 1e-4 + 1 / 33
    return fn, [*s, x, y, make([8], bf16), make([1], i64, "nonzero"), make([17], f16), torch.tensor(False),
                torch.tensor(3), make([3], i64, "nonzero"), rows, near_one, torch.tensor(15173)]


@op_case("std_logsumexp_square", [A.std.dim, A.std.correction, A.logsumexp.default, A.square.default],
         ("size1", "noncontig", "odd"))
def _std_logsumexp_square(dev):
    """std over dims and all (unbiased, correction 0 and 2, keepdim), logsumexp over rows,
    columns and all dims of rows holding -inf, +inf and NaN (the max taken as 0 where it is
    infinite) and of integers (a float result), square of floats, integers and bools."""
    def fn(x, s, i, b):
        return (A.std.dim(x, [1]), A.std.dim(x, [0, 1], False, True), A.std.correction(x, None, correction=0),
                A.std.correction(x.t(), [0], correction=2, keepdim=True), A.logsumexp.default(x, [1]),
                A.logsumexp.default(s, [1], True), A.logsumexp.default(s, [0]), A.logsumexp.default(i, [0, 1]),
                A.square.default(x), A.square.default(i), A.square.default(b))
    s = make([4, 5])
    s[0, :] = float("-inf")
    s[1, 2] = float("inf")
    s[2, 3] = float("nan")
    return fn, [make([6, 7]), s, make([3, 5], i64, "smallint"), make([4], torch.bool)]


@op_case("where_scalar_masked_fill", [A.where.ScalarOther, A.where.ScalarSelf, A.masked_fill.Scalar,
                                      A.masked_fill.Tensor], ("broadcast", "size1"))
def _where_scalar_masked_fill(dev):
    """where with a number for one side (promoting as eager does: an int tensor with a float
    gives the default float), and masked_fill with a number or a 0-d tensor, of floats and ints
    (the value converted to self's dtype), with a mask that broadcasts self."""
    def fn(c, x, i, m, v):
        return (A.where.ScalarOther(c, x, 2.5), A.where.ScalarSelf(c, -1, i), A.where.ScalarOther(c, i, 0.5),
                A.masked_fill.Scalar(x, m, -7.0), A.masked_fill.Scalar(i, m, 2.7), A.masked_fill.Tensor(x, m, v),
                A.masked_fill.Scalar(x[:1], m, float("-inf")))
    return fn, [make([3, 4]) > 0, make([3, 4]), make([3, 4], i64), make([2, 3, 4]) > 0.5, make([])]


@op_case("pad_modes", [A.pad.default, A.reflection_pad1d.default, A.reflection_pad2d.default,
                        A.reflection_pad3d.default, A.replication_pad1d.default, A.replication_pad2d.default,
                        A.replication_pad3d.default], ("noncontig", "size1", "odd"))
def _pad_modes(dev):
    """pad in every mode (constant with and without a value and cropping, reflect, replicate,
    circular with a crop on one side), of 1 to 3 trailing dims, of a transposed and an integer
    input; and the core ops reflection_pad1d/2d/3d and replication_pad1d/2d/3d."""
    def fn(x3, x4, x5, i4):
        return (A.pad.default(x3, [2, 3]), A.pad.default(x3, [1, -2], "constant", 1.5),
                A.pad.default(x3, [2, 3], "reflect"), A.pad.default(x4, [1, 2, 3, 1], "reflect"),
                A.pad.default(x4.transpose(2, 3), [2, 0, 1, 4], "replicate"),
                A.pad.default(x5, [1, 1, 2, 0, 1, 2], "replicate"), A.pad.default(x4, [1, 2, -1, 3], "circular"),
                A.pad.default(i4, [1, 1, 1, 1], "reflect"),
                A.reflection_pad1d.default(x3, [3, 1]), A.reflection_pad2d.default(x4, [1, 1, 2, 2]),
                A.reflection_pad3d.default(x5, [1, 0, 1, 1, 0, 2]), A.replication_pad1d.default(x3[0], [0, 4]),
                A.replication_pad2d.default(x4, [3, 0, 0, 3]), A.replication_pad3d.default(x5, [2, 2, 1, 1, 1, 1]))
    return fn, [make([2, 3, 8]), make([2, 3, 5, 6]), make([1, 2, 3, 4, 5]), make([2, 2, 4, 3], i64)]


@op_case("upsample_scatter_add", [A.upsample_nearest2d.vec, A.upsample_bilinear2d.vec, A.scatter_add.default],
         ("noncontig", "size1", "odd"))
def _upsample_scatter_add(dev):
    """upsample_nearest2d and upsample_bilinear2d (align_corners or not) up and down, to an
    output size or by scale factors (given ones used as 1/scale, as eager does), of a
    contiguous and a channels-last input and one row; scatter_add along each dim with
    repeated indices."""
    def fn(x, xc, s, i0, i1, src):
        return (A.upsample_nearest2d.vec(x, [10, 7], None), A.upsample_nearest2d.vec(x, None, [2.0, 1.5]),
                A.upsample_nearest2d.vec(xc, [3, 4], None), A.upsample_nearest2d.vec(x, None, [0.7, 2.3]),
                A.upsample_bilinear2d.vec(x, [9, 13], False, None), A.upsample_bilinear2d.vec(x, [9, 13], True, None),
                A.upsample_bilinear2d.vec(x, None, False, [1.7, 0.6]), A.upsample_bilinear2d.vec(xc, [1, 7], True, None),
                A.upsample_bilinear2d.vec(xc, [2, 2], False, None),
                A.scatter_add.default(s, 0, i0, src), A.scatter_add.default(s, 1, i1, src[:, :3]))
    xc = make([2, 3, 5, 6]).to(memory_format=torch.channels_last)
    i0 = torch.tensor([[0, 1, 2, 0], [3, 3, 1, 1], [0, 0, 0, 2]])
    i1 = torch.tensor([[0, 0, 4], [1, 2, 1], [4, 4, 4]])
    return fn, [make([2, 3, 5, 6]), xc, make([4, 5]), i0, i1, make([3, 4])]


@op_case("pool3d", [A.max_pool3d_with_indices.default, A.avg_pool3d.default, A._adaptive_avg_pool3d.default],
         ("noncontig", "size1", "odd"))
def _pool3d(dev):
    """3-d pooling: max with indices (padding, dilation, ceil mode), average (count_include_pad
    off, a divisor override, ceil mode), adaptive average to larger and smaller sizes, of a
    batched, an unbatched and a channels-last input."""
    def fn(x, u, xc):
        m, i = A.max_pool3d_with_indices.default(x, [2, 3, 3], [2, 2, 1], [1, 1, 0], [1, 1, 2], True)
        m2, i2 = A.max_pool3d_with_indices.default(u, [3], [2])
        return (m, i, m2, i2, A.max_pool3d_with_indices.default(xc, [2, 2, 2])[0],
                A.avg_pool3d.default(x, [3, 2, 3], [2, 2, 2], [1, 1, 1], True, False),
                A.avg_pool3d.default(u, [2, 2, 2], [], [0, 1, 1], False, True, 5), A.avg_pool3d.default(xc, [3]),
                A._adaptive_avg_pool3d.default(x, [3, 5, 2]), A._adaptive_avg_pool3d.default(u, [1, 1, 1]),
                A._adaptive_avg_pool3d.default(xc, [2, 3, 4]))
    xc = make([2, 3, 4, 5, 6], dom="distinct").to(memory_format=torch.channels_last_3d)
    return fn, [make([2, 3, 5, 6, 7], dom="distinct"), make([3, 5, 6, 7], dom="distinct"), xc]


@op_case("scatter_reduce", [A.scatter_reduce.two], ("noncontig", "odd"))
def _scatter_reduce(dev):
    """scatter_reduce with every reduce, with and without self, along each dim, with
    repeated indices and positions no index reaches; a NaN among the amax/amin values; an
    integer mean (floor division) and prod."""
    def fn(s, i0, src, sn, i1, srcn, si, srci):
        outs = []
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            for include in (True, False):
                outs.append(A.scatter_reduce.two(s, 0, i0, src, reduce, include_self=include))
        outs += [A.scatter_reduce.two(sn, 1, i1, srcn, "amax"), A.scatter_reduce.two(sn, 1, i1, srcn, "amin"),
                 A.scatter_reduce.two(si, 0, i0, srci, "mean", include_self=False),
                 A.scatter_reduce.two(si, 0, i0, srci, "prod"), A.scatter_reduce.two(si.t(), 1, i0.t(), srci.t(), "amin")]
        return tuple(outs)
    i0 = torch.tensor([[0, 1, 2, 0], [3, 3, 1, 1], [0, 0, 0, 2]])
    i1 = torch.tensor([[0, 0, 4], [1, 2, 1], [4, 4, 4]])
    srcn = make([3, 3])
    srcn[1, 1] = float("nan")
    return fn, [make([4, 5]), i0, make([3, 4], dom="near1"), make([4, 5]), i1, srcn, make([4, 4], i64, "smallint"),
                make([3, 4], i64, "powbase")]


@op_case("scatter_narrow", [A.scatter_add.default, A.scatter_reduce.two], ("odd",))
def _scatter_narrow(dev):
    """Scatters into 8- and 16-bit elements, with many writes to one position (on the GPU
    a compare-and-swap of the 32-bit word holding the element): int8 and uint8 sums that
    wrap, int16 products and maxima, bool sums, bf16 and f16 maxima with a NaN, minima and
    products of values near one; an f16 sum of positive values (a sum that cancels would
    compare eager's rounding after every write with coil's)."""
    def fn(a8, u8_, s16, b, h, bh, i, src8, srcu8, src16, srcb, srch, srcbh, srcp):
        return (A.scatter_add.default(a8, 0, i, src8), A.scatter_add.default(u8_, 0, i, srcu8),
                A.scatter_reduce.two(s16, 0, i, src16, "prod"), A.scatter_reduce.two(s16, 0, i, src16, "amax"),
                A.scatter_add.default(b, 0, i, srcb), A.scatter_reduce.two(h, 0, i, srch, "amax"),
                A.scatter_reduce.two(bh, 0, i, srcbh, "amin", include_self=False),
                A.scatter_reduce.two(bh, 0, i, srcbh, "prod"), A.scatter_reduce.two(h, 0, i, srcp, "sum"))
    # 3 of 67 rows receive every write: each column of them sees about 20 at once.
    i = torch.randint(0, 3, [61, 5])
    srch = make([61, 5], f16)
    srch[7, 2] = float("nan")
    return fn, [make([67, 5], i8, "wide"), make([67, 5], u8, "wide"), make([67, 5], i16, "smallint"),
                make([67, 5], b8), make([67, 5], f16), make([67, 5], bf16, "near1"), i, make([61, 5], i8, "wide"),
                make([61, 5], u8, "wide"), make([61, 5], i16, "near1"), make([61, 5], b8), srch,
                make([61, 5], bf16, "near1"), make([61, 5], f16, "pos")]


@op_case("sort_topk", [A.sort.default, A.sort.stable, A.topk.default], ("noncontig", "odd", "size1"))
def _sort_topk(dev):
    """sort ascending and descending along each dim, of a transposed input, stable sorts of
    rows with NaN and infinities (NaN last ascending, first descending) and of ties (eager's
    default sort orders ties its own way: those rows are sorted stably), of
    integers, bools and bf16; topk largest and smallest along each dim, k of 0 and of the
    whole row, of a row with one NaN and infinities; a 0-d tensor."""
    def fn(x, sp, ties, ints, bools, h, s, sp1):
        xt = x.t()
        outs = [*A.sort.default(x), *A.sort.default(x, 0, True), *A.sort.default(xt, 1),
                *A.sort.stable(sp, stable=True), *A.sort.stable(sp, stable=True, descending=True),
                *A.sort.stable(ties, stable=True), *A.sort.stable(ties, stable=True, dim=0, descending=True),
                *A.sort.default(ints, 1, True), *A.sort.stable(bools, stable=True), *A.sort.default(h),
                *A.topk.default(x, 3), *A.topk.default(x, 2, 0, False), *A.topk.default(xt, 6, 1),
                *A.topk.default(sp1, 4), *A.topk.default(sp1, 3, largest=False), *A.topk.default(x, 0), *A.topk.default(h, 5, -1, False),
                *A.sort.default(s), *A.topk.default(s, 1)]
        return tuple(outs)
    sp1 = make([3, 29], dom="distinct")
    sp1[0, 5], sp1[1, 3], sp1[1, 8], sp1[2, 0] = float("nan"), float("inf"), float("-inf"), float("nan")
    return fn, [make([6, 37], dom="distinct"), make([3, 29], dom="special"), make([5, 33], dom="smallint"),
                make([4, 9], i32, "distinct"), make([3, 17], b8), make([4, 23], bf16, "distinct"), make([], f32), sp1]


@op_case("sort_long_rows", [A.sort.default, A.sort.stable, A.topk.default], ("odd",))
def _sort_long_rows(dev):
    """Rows longer than one block of 1024 (ranked in their block, then searched for in the
    other blocks): a stable sort of ties, of NaN and infinities ascending and descending,
    of bools (the last block of one element), topk from a row of three blocks."""
    def fn(ties, sp, bools, long):
        return (*A.sort.stable(ties, stable=True), *A.sort.stable(sp, stable=True),
                *A.sort.stable(sp, stable=True, descending=True), *A.sort.stable(bools, stable=True, descending=True),
                *A.topk.default(long, 7))
    return fn, [make([1, 1500], dom="smallint"), make([1, 1100], dom="special"), make([1, 1025], b8),
                make([1, 2100], dom="distinct")]


@op_case("batch_norm_training", [A._native_batch_norm_legit_functional.default, A._native_batch_norm_legit.no_stats],
         ("noncontig", "odd"))
def _batch_norm_training(dev):
    """Batch norm as training graphs hold it: the functional form (the batch's statistics,
    the running ones moved by momentum, the variance unbiased) of a contiguous, a
    channels-last and a 3-d input, without weight and bias, in evaluation mode; no_stats in
    training, of a bf16 input too (no bias: an output near zero after adding one compares
    eager's bf16 rounding of the difference). (The in-place form is exported as a mutation of its
    inputs, which a graph of coil's does not hold; for a bf16 input to the functional form,
    or f32 parameters for a bf16 input, PyTorch's meta function and its CPU kernel disagree
    on the statistics' dtypes.)"""
    def fn(x, xc, x3, w, b, rm, rv, h, wh):
        return (*A._native_batch_norm_legit_functional.default(x, w, b, rm, rv, True, 0.1, 1e-5),
                *A._native_batch_norm_legit_functional.default(xc, None, None, rm, rv, True, 0.3, 1e-3),
                *A._native_batch_norm_legit_functional.default(x3, w, b, rm, rv, False, 0.1, 1e-5),
                *A._native_batch_norm_legit.no_stats(x3, w, None, True, 0.1, 1e-5),
                *A._native_batch_norm_legit.no_stats(h, wh, None, True, 0.1, 1e-5))
    xc = make([2, 5, 4, 3]).to(memory_format=torch.channels_last)
    return fn, [make([3, 5, 6, 7]), xc, make([4, 5, 9]), make([5]), make([5]), make([5]), make([5], dom="pos"),
                make([3, 5, 4, 4], bf16), make([5], bf16)]


@op_case("trilinear", [A._trilinear.default], ("broadcast", "noncontig", "odd"))
def _trilinear(dev):
    """_trilinear as F.bilinear gives it (x1 W x2 for each output feature), of f32, bf16 and i64
    (sums that wrap), a transposed operand; with broadcasting between operands, one sumdim, and
    none (a pointwise product of three)."""
    def fn(x1, x2, w, b1, b2, bw, i1, i2, iw, p, q, r):
        return (A._trilinear.default(x1, w, x2, [1, 3], [0], [1, 2], [2, 3]),
                A._trilinear.default(x1, w.transpose(1, 2).contiguous().transpose(1, 2), x2, [1, 3], [0], [1, 2], [2, 3]),
                A._trilinear.default(b1, bw, b2, [1, 3], [0], [1, 2], [2, 3]),
                A._trilinear.default(i1, iw, i2, [1, 3], [0], [1, 2], [2, 3]),
                A._trilinear.default(p, q, r, [0], [], [1], [2], 0),
                A._trilinear.default(p, q, r, [0], [], [1], [], 0))
    return fn, [make([4, 3]), make([4, 5]), make([6, 3, 5]), make([2, 8], bf16), make([2, 7], bf16), make([3, 8, 7], bf16),
                make([3, 4], i64), make([3, 2], i64), make([5, 4, 2], i64), make([5, 4]), make([3, 5, 4]), make([3, 4])]


@op_case("batch_norm_with_update", [A._batch_norm_with_update_functional.default], ("noncontig", "odd"))
def _batch_norm_with_update(dev):
    """Batch norm in training as PyTorch 2.4 and later export it: the functional form's outputs
    with an empty u8 reserve; a contiguous, a channels-last and a 3-d input. (PyTorch's trace
    fails without a weight: its backend selection takes no None there.)"""
    def fn(x, xc, x3, w, b, rm, rv):
        return (*A._batch_norm_with_update_functional.default(x, w, b, rm, rv, 0.1, 1e-5),
                *A._batch_norm_with_update_functional.default(xc, w, b, rm, rv, 0.3, 1e-3),
                *A._batch_norm_with_update_functional.default(x3, w, b, rv, rm, 0.1, 1e-5))
    xc = make([2, 5, 4, 3]).to(memory_format=torch.channels_last)
    return fn, [make([3, 5, 6, 7]), xc, make([4, 5, 9]), make([5]), make([5]), make([5]), make([5], dom="pos")]


@op_case("random", [A.rand.default, A.randn.default, A.rand_like.default, A.randn_like.default, A.randint.default,
                     A.randint.low, A.randperm.default, A.bernoulli.default, A.bernoulli.p, A.native_dropout.default],
         ("odd", "noncontig", "size0", "size1"))
def _random(dev):
    """Random ops, each through a function of its draws that does not depend on them: rand
    in [0, 1) (f32, f64, bf16, of strided and empty tensors), randn finite, randint in its
    range, randperm sorted back to arange, bernoulli of probabilities 0 and 1, dropout with
    p = 0, p = 1, not training, and of an empty tensor (its mask left out: eager gives an
    empty mask the input's dtype, PyTorch's meta bool). The numbers themselves are checked
    by tests/unit/random_test.cpp."""
    def unit(r):
        return torch.logical_and(r >= 0, r < 1)

    def fn(x, xt, p01, pd, x0, xh):
        kw = dict(device=x.device)
        return (unit(A.rand.default([5, 7], **kw)), unit(A.rand.default([1, 9], dtype=torch.float64, **kw)),
                unit(A.rand.default([6, 4], dtype=torch.bfloat16, **kw)), unit(A.rand.default([0, 3], **kw)),
                torch.isfinite(A.randn.default([6, 5], **kw)), torch.isfinite(A.randn.default([3], dtype=torch.float64, **kw)),
                unit(A.rand_like.default(xt.t())), torch.isfinite(A.randn_like.default(x, dtype=torch.bfloat16)),
                (A.randint.low(-3, 4, [4, 6], **kw) + 3).div(7, rounding_mode="floor"),
                A.randint.default(5, [7], dtype=torch.int32, **kw).div(5, rounding_mode="floor"),
                A.randperm.default(10, **kw).sort().values, A.randperm.default(1, **kw), A.randperm.default(0, **kw),
                A.randperm.default(6, dtype=torch.int32, **kw).sort().values,
                A.bernoulli.default(p01), A.bernoulli.default(pd), A.bernoulli.p(x, 0.0), A.bernoulli.p(xt.t(), 1.0),
                *A.native_dropout.default(x, 0.0, True), *A.native_dropout.default(x, 1.0, True),
                *A.native_dropout.default(xt.t(), 0.5, False), A.native_dropout.default(x0, 0.3, True)[0],
                *A.native_dropout.default(xh, 0.0, True))
    p01 = (torch.rand(5, 6) < 0.5).float()
    return fn, [make([5, 6]), make([6, 5]), p01, p01.double(), make([0, 4]), make([3, 4], bf16)]


@op_case("coil_dropout_keep", [torch.ops.coil.dropout_keep.default], ("odd", "size0"))
def _coil_dropout_keep(dev):
    """coil's own op, the dropout mask a training graph computes again in its backward from a
    seed: a pure function of the seed, so eager's values (its form in coil/ops.py, the same
    Philox rounds) are the expected ones, bit for bit. p = 0.3 over odd sizes, p = 0 and 1,
    an empty mask, a seed with a negative key and a counter past 2^32."""
    def fn(seed, other):
        keep = torch.ops.coil.dropout_keep.default
        return (keep(seed, [37, 129], 0.3), keep(seed, [7], 0.0), keep(seed, [3, 5], 1.0), keep(seed, [0, 4], 0.5),
                keep(other, [2, 3, 65], 0.5))
    return fn, [torch.tensor([12345, 0]), torch.tensor([-8_123_456_789_012, 2**32 + 7])]


@op_case("coil_max_pool_offsets", [torch.ops.coil.max_pool2d_with_offsets.default,
                                    torch.ops.coil.max_pool2d_offsets_backward.default], ("odd",))
def _coil_max_pool_offsets(dev):
    """coil's own max pooling of training graphs (coil/ops.py): values and int8 offsets within
    each window, and the gradient from the offsets and the input's sizes; eager's form
    converts to and from PyTorch's indices. A 3x3 window at stride 2 with padding (ResNet's
    stem), channels-last at stride 2, ceil mode, and a dilated window (the scatter path)."""
    def fn(x, dy, dyd):
        mp, back = torch.ops.coil.max_pool2d_with_offsets.default, torch.ops.coil.max_pool2d_offsets_backward.default
        v, o = mp(x, [3, 3], [2, 2], [1, 1], [1, 1], False)
        g = back(dy, o, [2, 3, 9, 7], [3, 3], [2, 2], [1, 1], [1, 1], False)
        xcl = x.contiguous(memory_format=torch.channels_last)
        vcl, ocl = mp(xcl, [2, 2], [2, 2], [0, 0], [1, 1], False)
        gcl = back(dy[:, :, :4, :3].contiguous(memory_format=torch.channels_last), ocl, [2, 3, 9, 7], [2, 2], [2, 2],
                   [0, 0], [1, 1], False)
        vc, oc = mp(x, [2, 2], [2, 2], [0, 0], [1, 1], True)
        gc = back(dy[:, :, :5, :4], oc, [2, 3, 9, 7], [2, 2], [2, 2], [0, 0], [1, 1], True)
        vd, od = mp(x, [2, 2], [1, 1], [0, 0], [2, 2], False)
        gd = back(dyd, od, [2, 3, 9, 7], [2, 2], [1, 1], [0, 0], [2, 2], False)
        return v, o, g, vcl, ocl, gcl, vc, oc, gc, vd, od, gd
    return fn, [make([2, 3, 9, 7], f32, "distinct"), make([2, 3, 5, 4]), make([2, 3, 7, 5])]


@op_case("multinomial", [A.multinomial.default], ("odd", "noncontig", "size1"))
def _multinomial(dev):
    """multinomial through functions of its draws that do not depend on them: with
    replacement every drawn category has a positive weight (f32 rows, f64 1-d weights with
    zeros); without replacement a row drawn as many times as it has categories holds each
    once (sorted back to arange), bf16 rows with zeros draw only positive weights, and a row
    with one positive weight always draws it. The f32 rows are a transposed (strided) input.
    Its numbers are checked by tests/unit/random_test.cpp."""
    def fn(wt, wd, wh, one):
        w = wt.t()
        a = A.multinomial.default(w, 7, True)
        b = A.multinomial.default(w, 5)
        c = A.multinomial.default(wd, 3, True)
        d = A.multinomial.default(wh, 2)
        e = A.multinomial.default(one, 4, True)
        return w.gather(1, a) > 0, b.sort(-1).values, wd.gather(0, c) > 0, wh.gather(1, d) > 0, e
    wd = torch.tensor([0, 1, 0, 2, 3, 0.5], dtype=f64)
    wh = torch.tensor([[1, 0, 2, 3], [0, 1, 1, 0], [5, 0, 0, 1]], dtype=bf16)
    one = torch.tensor([[0.0, 0.0, 3.0, 0.0]])
    return fn, [make([5, 4], dom="pos"), wd, wh, one]


@op_case("random_distributions", [A.uniform.default, A.normal.Tensor_float, A.normal.float_Tensor, A.normal.Tensor_Tensor,
                                   A.normal.float_float, A.normal_functional.default, A.log_normal.default,
                                   A.exponential.default, A.cauchy.default, A.geometric.default,
                                   A.randint_like.default, A.randint_like.low_dtype,
                                   A.rrelu_with_noise_functional.default],
         ("odd", "noncontig", "size0", "size1", "broadcast"))
def _random_distributions(dev):
    """The distributions of the in-place samplers (Tensor.uniform_, normal_, log_normal_,
    exponential_, cauchy_, geometric_, random_), normal's tensor forms and rrelu's noise, each
    through a function of its draws that does not depend on them: in range, finite, integral,
    positive; normal with std 0 is its mean; rrelu of non-negative numbers is the identity
    with noise 1, and out of training leaky_relu. Their numbers are checked by
    tests/unit/random_test.cpp."""
    def fn(x, xt, xb, m, s, x0, xi):
        u = A.uniform.default(xt.t(), -2.0, 3.0)
        g = A.geometric.default(xi, 0.25)
        r = A.randint_like.low_dtype(x, -2, 3)
        pos = x.abs()
        rr, noise = A.rrelu_with_noise_functional.default(pos, torch.zeros_like(pos), 0.1, 0.3, True)
        ev, noise_ev = A.rrelu_with_noise_functional.default(x, xt.t(), 0.1, 0.3, False)
        return (torch.logical_and(u >= -2, u < 3), A.normal.Tensor_float(m, 0.0), A.normal.float_Tensor(1.5, s * 0),
                A.normal.Tensor_Tensor(m, s * 0), torch.isfinite(A.normal.Tensor_Tensor(m.double(), s.abs())),
                torch.isfinite(A.normal.float_float(0.0, 2.0, [3, 1, 4], device=x.device)),
                torch.isfinite(A.normal_functional.default(xb, 1.0, 3.0)), A.log_normal.default(x, 0.0, 1.0) > 0,
                A.exponential.default(x0, 3.0), A.exponential.default(xb, 3.0) >= 0,
                torch.isfinite(A.cauchy.default(x, 0.0, 1.0)), torch.logical_and(g >= 1, g == g.floor()),
                A.randint_like.default(xi, 1), torch.logical_and(r >= -2, r < 3), rr, noise, ev, noise_ev,
                A.geometric.default(x, 0.5) >= 1)
    return fn, [make([5, 6]), make([6, 5]), make([1, 7], bf16), make([4, 1]), make([3, 1, 5]), make([0, 3]),
                torch.randint(0, 5, (2, 9))]


@op_case("backward_ops", [A.native_layer_norm_backward.default, A.native_group_norm_backward.default,
                           A.max_pool2d_with_indices_backward.default, A.avg_pool2d_backward.default,
                           A._adaptive_avg_pool2d_backward.default, A.embedding_dense_backward.default],
         ("odd", "noncontig", "size1"))
def _backward_ops(dev):
    """The backward ops of the norms, poolings and embedding, on statistics and indices their
    forward ops computed in the same graph (bf16 statistics as inputs): layer norm over one
    and two dims, with and without parameters, in bf16, not every output asked; group norm with a weight; max pool's
    gradient gathered at its argmax (channels-last too, in ceil mode) and, dilated, scattered; avg pool with padding counted or
    not, ceil mode and a divisor; adaptive avg pool shrinking and growing; embedding with a
    padding index and scaled by frequency."""
    def fn(x, dy, w, b, xh, dyh, wh, mean3, rstd3, xg, dyg, wg, xp, dyp, xs, dys, dya, idx, dye, dyd):
        _, mean, rstd = A.native_layer_norm.default(x, [6], w, b, 1e-5)
        ln = A.native_layer_norm_backward.default(dy, x, [6], mean, rstd, w, b, [True, True, True])
        _, mean2, rstd2 = A.native_layer_norm.default(x, [5, 6], None, None, 1e-5)
        ln2 = A.native_layer_norm_backward.default(dy, x, [5, 6], mean2, rstd2, None, None, [True, False, False])[0]
        ln3 = A.native_layer_norm_backward.default(dyh, xh, [8], mean3, rstd3, wh, None, [True, True, False])[:2]
        _, gmean, grstd = A.native_group_norm.default(xg, wg, None, 2, 6, 12, 3, 1e-5)
        gn = A.native_group_norm_backward.default(dyg, xg, gmean, grstd, wg, 2, 6, 12, 3, [True, True, True])
        _, ind = A.max_pool2d_with_indices.default(xp, [3, 3], [2, 2], [1, 1])
        mp = A.max_pool2d_with_indices_backward.default(dyp, xp, [3, 3], [2, 2], [1, 1], [1, 1], False, ind)
        xcl = xp.contiguous(memory_format=torch.channels_last)
        _, indcl = A.max_pool2d_with_indices.default(xcl, [2, 2], [2, 2])
        mpcl = A.max_pool2d_with_indices_backward.default(dyp[:, :, :4, :4], xcl, [2, 2], [2, 2], [0, 0], [1, 1], False, indcl)
        _, indc = A.max_pool2d_with_indices.default(xp, [2, 2], [2, 2], [0, 0], [1, 1], True)
        mpc = A.max_pool2d_with_indices_backward.default(dyp, xp, [2, 2], [2, 2], [0, 0], [1, 1], True, indc)
        _, indd = A.max_pool2d_with_indices.default(xp, [2, 2], [1, 1], [0, 0], [2, 2])
        mpd = A.max_pool2d_with_indices_backward.default(dyd, xp, [2, 2], [1, 1], [0, 0], [2, 2], False, indd)
        ap = A.avg_pool2d_backward.default(dyp, xp, [3, 3], [2, 2], [1, 1], False, True, None)
        ap2 = A.avg_pool2d_backward.default(dyp, xp, [3, 3], [2, 2], [1, 1], False, False, None)
        ap3 = A.avg_pool2d_backward.default(dyp, xp, [2, 2], [2, 2], [0, 0], True, False, None)
        ap4 = A.avg_pool2d_backward.default(dyp.transpose(2, 3), xp, [3, 3], [2, 2], [1, 1], False, True, 5)
        ad = A._adaptive_avg_pool2d_backward.default(dya, xp)
        ad2 = A._adaptive_avg_pool2d_backward.default(dys, xs)
        emb = A.embedding_dense_backward.default(dye, idx, 10, -1, False)
        emb2 = A.embedding_dense_backward.default(dye, idx, 10, 2, True)
        return (*ln, ln2, *ln3, *gn, mp, mpcl, mpc, mpd, ap, ap2, ap3, ap4, ad, ad2, emb, emb2)
    idx = torch.randint(0, 10, (4, 5))
    idx[0, :3] = 2  # the padding index, and a row seen often
    # bf16 statistics as inputs: computed in the graph, fusion would read them unrounded.
    xh = make([4, 8], bf16)
    _, mean3, rstd3 = A.native_layer_norm.default(xh, [8], None, None, 1e-5)
    return fn, [make([3, 5, 6]), make([3, 5, 6]), make([6]), make([6]), xh, make([4, 8], bf16),
                make([8], bf16), mean3, rstd3, make([2, 6, 3, 4]), make([2, 6, 3, 4]), make([6]), make([2, 3, 9, 9], dom="distinct"),
                make([2, 3, 5, 5]), make([1, 2, 3, 3]), make([1, 2, 5, 7]), make([2, 3, 4, 3]), idx, make([4, 5, 8]),
                make([2, 3, 7, 7])]


@op_case("scatter_fold_distances", [A.masked_scatter.default, A.col2im.default, A._cdist_forward.default,
                                     A._pdist_forward.default], ("odd", "noncontig", "broadcast", "size0"))
def _scatter_fold_distances(dev):
    """masked_scatter with a full, a broadcast and a transposed mask, in bf16; col2im batched
    and not, with padding, dilation and strides; cdist of every p (0, 1, 2, 3, inf) and with
    batch dims broadcast; pdist of several p and of one row (no pairs)."""
    inf = float("inf")

    def fn(x, m, src, mb, xh, srch, cols, cols2, a, b, a3, b3, pts, one):
        return (A.masked_scatter.default(x, m, src), A.masked_scatter.default(x, mb, src.view(5, 6)),
                A.masked_scatter.default(x.t(), m.t(), src), A.masked_scatter.default(xh, m, srch),
                A.col2im.default(cols, [5, 6], [2, 3], [1, 1], [0, 1], [1, 2]),
                A.col2im.default(cols2, [4, 4], [2, 2], [2, 1], [1, 0], [2, 2]),
                *[A._cdist_forward.default(a, b, p, None) for p in (2.0, 1.0, 0.0, inf, 3.0)],
                A._cdist_forward.default(a3, b3, 2.0, None), A._cdist_forward.default(a.t().t(), b[::2], 1.0, None),
                *[A._pdist_forward.default(pts, p) for p in (2.0, 1.0, inf, 0.5)], A._pdist_forward.default(one, 2.0))
    m = torch.rand(4, 6) < 0.6
    return fn, [make([4, 6]), m, make([30]), torch.tensor([True, False, True, True, False, True]), make([4, 6], bf16),
                make([30], bf16), make([2, 12, 12]), make([12, 4]), make([7, 5]), make([6, 5]), make([2, 1, 4, 5]),
                make([3, 6, 5]), make([7, 4]), make([1, 4])]


@op_case("grid_sampler", [A.grid_sampler_2d.default], ("odd", "noncontig"))
def _grid_sampler(dev):
    """grid_sampler_2d in every interpolation (bilinear, nearest, bicubic), padding (zeros,
    border, reflection) and align_corners, at grid points reaching past the edges; in f64, on
    a transposed input, and on a grid that is a strided view."""
    def fn(x, g, xd, gd):
        outs = [A.grid_sampler_2d.default(x, g, mode, pad, align)
                for mode in (0, 1, 2) for pad in (0, 1, 2) for align in (False, True)]
        outs.append(A.grid_sampler_2d.default(xd, gd, 0, 2, False))
        outs.append(A.grid_sampler_2d.default(xd, gd, 2, 0, True))
        outs.append(A.grid_sampler_2d.default(x.transpose(2, 3), g[:, ::2], 0, 0, False))
        return tuple(outs)
    g = torch.rand(2, 4, 6, 2) * 2.6 - 1.3
    return fn, [make([2, 3, 5, 7]), g, make([1, 2, 4, 3], f64), (torch.rand(1, 3, 5, 2) * 2.6 - 1.3).double()]


@op_case("grid_sampler_3d", [A.grid_sampler_3d.default], ("odd", "noncontig"))
def _grid_sampler_3d(dev):
    """grid_sampler_3d in both interpolations (trilinear, nearest), every padding (zeros, border,
    reflection) and align_corners, at grid points reaching past the edges; in f64, on a permuted
    input, and on a grid that is a strided view. (Not bf16: eager's CPU kernel computes the grid's
    pixel coordinates in bf16, coil in f32, as for the 2-d sampler.)"""
    def fn(x, g, xd, gd):
        outs = [A.grid_sampler_3d.default(x, g, mode, pad, align)
                for mode in (0, 1) for pad in (0, 1, 2) for align in (False, True)]
        outs.append(A.grid_sampler_3d.default(xd, gd, 0, 2, True))
        outs.append(A.grid_sampler_3d.default(x.permute(0, 1, 4, 3, 2), g[:, ::2], 0, 1, False))
        return tuple(outs)
    g = torch.rand(2, 4, 3, 5, 3) * 2.6 - 1.3
    return fn, [make([2, 3, 4, 5, 6]), g, make([1, 2, 3, 4, 3], f64), (torch.rand(1, 2, 3, 2, 3) * 2.6 - 1.3).double()]


@op_case("convolution_backward", [A.convolution_backward.default], ("odd", "noncontig"))
def _convolution_backward(dev):
    """convolution_backward of 2-d convolutions with strides, padding, dilation and groups (an
    output row the stride dropped included), of a channels-last input, of a 1-d convolution,
    and with only some outputs asked for; without groups (the CPU's weight gradient as a
    convolution), strided and dilated with input rows the stride leaves unread, plain and
    channels last."""
    cb = A.convolution_backward.default

    def fn(dy, x, w, dy2, x2, w2, dy3, x3, w3, dy4, x4, w4):
        xcl = x.contiguous(memory_format=torch.channels_last)
        x4cl = x4.contiguous(memory_format=torch.channels_last)
        return (*cb(dy, x, w, [6], [2, 1], [1, 1], [1, 2], False, [0, 0], 2, [True, True, True]),
                *cb(dy, xcl, w, [6], [2, 1], [1, 1], [1, 2], False, [0, 0], 2, [True, True, True]),
                *[t for t in cb(dy2, x2, w2, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, False, True])
                  if t is not None],
                *cb(dy3, x3, w3, [5], [2], [1], [1], False, [0], 1, [True, True, True]),
                *cb(dy4, x4, w4, [4], [2, 2], [0, 1], [1, 2], False, [0, 0], 1, [True, True, True]),
                *cb(dy4, x4cl, w4, None, [2, 2], [0, 1], [1, 2], False, [0, 0], 1, [False, True, False])[1:2])
    return fn, [make([2, 6, 4, 4]), make([2, 4, 7, 6]), make([6, 2, 3, 3]), make([1, 4, 4, 4]), make([1, 3, 5, 5]),
                make([4, 3, 2, 2]), make([2, 5, 5]), make([2, 3, 9]), make([5, 3, 3]),
                make([2, 4, 5, 3]), make([2, 3, 12, 7]), make([4, 3, 3, 3])]


@op_case("convolution_backward_1x1", [A.convolution_backward.default], ("odd", "noncontig"))
def _convolution_backward_1x1(dev):
    """convolution_backward of 1x1 convolutions, whose weight gradient is one product of the
    pixels on the CPU: channels last at stride 1 (the rows views), channels first at stride 2
    (the rows copied), channels last at stride 2 with the weight gradient alone, and 1-d."""
    cb = A.convolution_backward.default

    def fn(dy4, x4, w, dy2, x2, dy24, x24, dy3, x3, w3):
        # [N, H, W, C] inputs seen as [N, C, H, W]: channels last.
        dy, x, dycl, xcl = (t.permute(0, 3, 1, 2) for t in (dy4, x4, dy24, x24))
        return (*cb(dy, x, w, [6], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]),
                *cb(dy2, x2, w, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])[:2],
                cb(dycl, xcl, w, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False])[1],
                *cb(dy3, x3, w3, [5], [1], [0], [1], False, [0], 1, [True, True, True]))
    return fn, [make([2, 5, 4, 6]), make([2, 5, 4, 4]), make([6, 4, 1, 1]), make([2, 6, 4, 3]), make([2, 4, 7, 6]),
                make([2, 4, 3, 6]), make([2, 7, 6, 4]), make([3, 5, 9]), make([3, 2, 9]), make([5, 2, 1])]


@op_case("embedding_bag", [A._embedding_bag.default], ("odd", "size0"))
def _embedding_bag(dev):
    """_embedding_bag in sum, mean and max mode, with per-sample weights, include_last_offset,
    a padding index, an empty bag, int32 indices and offsets, and f64; the bags (and mean's
    offset2bag), not the outputs only the backward reads."""
    eb = A._embedding_bag.default

    def fn(w, idx, off, psw, idx32, off32, wd, off_last):
        return (eb(w, idx, off)[0], *eb(w, idx, off, False, 1)[:2], eb(w, idx, off, False, 2)[0],
                eb(w, idx, off, False, 0, False, psw)[0], eb(w, idx32, off32, False, 1)[0],
                eb(w, idx, off, False, 0, False, None, False, 3)[0], eb(w, idx, off, False, 1, False, None, False, 3)[0],
                eb(wd, idx, off, False, 2)[0], eb(w, idx, off_last, False, 1, False, None, True)[0])
    idx = torch.randint(0, 10, (12,))
    idx[[1, 6]] = 3  # the padding index in two bags
    off = torch.tensor([0, 3, 3, 7, 9])  # bag 1 is empty
    return fn, [make([10, 5]), idx, off, make([12]), idx.int(), off.int(), make([10, 5], f64),
                torch.tensor([0, 3, 3, 7, 9, 12])]


@op_case("embedding_bag_forward_only", [A._embedding_bag_forward_only.default], ("odd", "size0"))
def _embedding_bag_forward_only(dev):
    """_embedding_bag_forward_only in sum, mean and max mode with include_last_offset and a
    padding index: the bags and their sizes (one per offset on the CPU)."""
    eb = A._embedding_bag_forward_only.default

    def fn(w, idx, off, off_last):
        return (eb(w, idx, off)[0], *eb(w, idx, off, False, 1)[:3], eb(w, idx, off, False, 2)[0],
                eb(w, idx, off_last, False, 0, False, None, True, 3)[0])
    return fn, [make([10, 5]), torch.randint(0, 10, (12,)), torch.tensor([0, 3, 3, 7, 9]),
                torch.tensor([0, 3, 3, 7, 9, 12])]


@op_case("kthvalue_median_mode", [A.kthvalue.default, A.median.default, A.median.dim, A.nanmedian.default,
                                   A.nanmedian.dim, A.mode.default], ("odd", "noncontig", "size1"))
def _kthvalue_median_mode(dev):
    """kthvalue at both ends and between, along dims 0 and -1, keepdim; median and nanmedian of
    rows with and without NaN (all NaN too), of every element, of even and odd lengths; mode
    with ties between values (the smallest wins, at its last position) and among NaNs; in
    f32, bf16, i64, and bool for mode; 0-d inputs. Indices only where the values are unique
    or eager's choice among equal ones is what coil's stable order gives."""
    def fn(x, xn, xi, xb, xt, z, bo):
        return (*A.kthvalue.default(x, 1), *A.kthvalue.default(x, 7), *A.kthvalue.default(x, 3, 0, True),
                A.kthvalue.default(xi, 2, 0)[0], A.kthvalue.default(xb, 4)[0], A.kthvalue.default(xt.t(), 2, -1)[0],
                A.median.default(x), A.median.default(xn), A.median.default(xi), *A.median.dim(x, 1),
                A.median.dim(xn, 1)[0], A.median.dim(xi, 0, True)[0], A.median.dim(xb, 1)[0],
                A.nanmedian.default(xn), A.nanmedian.default(x), *A.nanmedian.dim(x, -1), A.nanmedian.dim(xn, 1)[0],
                A.nanmedian.dim(xn, 0, True)[0], A.mode.default(xi)[0], *A.mode.default(xt, 0), A.mode.default(xn)[0],
                A.mode.default(bo, 1)[0], *A.kthvalue.default(z, 1), A.median.default(z), *A.mode.default(z))
    x = make([5, 7])
    xn = make([4, 6])
    xn[0, 2] = float("nan")
    xn[2, :] = float("nan")
    xn[3, 1] = xn[3, 4] = float("nan")
    xi = torch.tensor([[2, 2, 1, 1, 3, 3, 3, 0, 0, 0], [5, 5, 1, 1, 2, 9, 7, 7, 7, 5], [4, 4, 4, 4, 4, 4, 4, 4, 4, 4]])
    xt = torch.tensor([[1.5, 2.0, 1.5, 2.0], [0.0, 0.0, 3.0, 3.0], [7.0, 7.0, 7.0, 1.0]]).t().contiguous()
    return fn, [x, xn, xi, make([3, 8], bf16), xt, make([]), torch.tensor([[True, False, True], [False, False, True]])]


@op_case("cummax_cummin", [A.cummax.default, A.cummin.default], ("odd", "noncontig", "size0", "size1"))
def _cummax_cummin(dev):
    """cummax and cummin along each dim, with ties (the last position wins), NaNs (kept from
    the first on, the position of the latest), rows longer than a Triton block (2500), f32,
    bf16, i64 with the extremes of i64, bool, 0-d and empty tensors."""
    def fn(x, xn, xl, xb, xi, bo, z, e):
        out = []
        for t, dims in ((x, (0, 1, -1)), (xn, (1,)), (xl, (0,)), (xb, (1,)), (xi, (1,)), (bo, (0,)), (z, (0,)), (e, (1,))):
            for d in dims:
                out += [*A.cummax.default(t, d), *A.cummin.default(t, d)]
        return tuple(out)
    xn = torch.tensor([[1.0, 3.0, 3.0, 2.0, float("nan"), 5.0, float("nan"), 0.0], [4.0, 4.0, 1.0, 1.0, 0.5, 7.0, 7.0, -1.0]])
    xi = torch.tensor([[0, -9223372036854775807 - 1, 5, 5, 9223372036854775807, 3], [2, 2, 2, -1, -1, 8]])
    xl = torch.randint(-50, 50, (2500,)).float()
    return fn, [make([5, 7]), xn, xl, make([3, 9], bf16), xi, torch.tensor([False, True, False, True]), make([]),
                make([2, 0])]


@op_case("logcumsumexp", [A.logcumsumexp.default], ("odd", "noncontig", "size0", "size1"))
def _logcumsumexp(dev):
    """logcumsumexp along each dim: rows of values far apart (-1000 before 1000, where a shift by
    the row's maximum would underflow), -inf (alone, the identity), +inf, NaN (kept from the first
    on), a row longer than a Triton block (2500), f32, f64, bf16, a transposed input, 0-d and
    empty tensors."""
    def fn(x, s, xl, xb, xd, z, e):
        return (A.logcumsumexp.default(x, 0), A.logcumsumexp.default(x, 1), A.logcumsumexp.default(x.t(), -1),
                A.logcumsumexp.default(s, 1), A.logcumsumexp.default(xl, 0), A.logcumsumexp.default(xb, 1),
                A.logcumsumexp.default(xd, 0), A.logcumsumexp.default(z, 0), A.logcumsumexp.default(e, 1))
    inf, nan = float("inf"), float("nan")
    s = torch.tensor([[-inf, -inf, 1.0, nan, 2.0], [inf, 1.0, -inf, inf, 3.0], [-inf, inf, -inf, 2.0, nan],
                      [-1000.0, -999.0, 1000.0, -inf, 1000.0], [1e30, 1e30, -1e30, 0.0, 88.0]])
    return fn, [make([5, 7]) * 10, s, make([2500]) * 30, make([3, 9], bf16), make([6, 2], f64), make([]), make([2, 0])]


@op_case("pool_nan_windows", [A.max_pool2d_with_indices.default, A.max_pool3d_with_indices.default,
                               A.adaptive_max_pool2d.default], ("odd",))
def _pool_nan_windows(dev):
    """Where the maximum of a window is, as eager finds it: the first of equal maxima, the
    last of several NaNs, the window's first position when every element is -inf; in
    windows unrolled into the output's body (at most 25 elements) and in reductions."""
    def fn(x, v):
        return (*A.max_pool2d_with_indices.default(x, [2, 3], [2, 3]), *A.max_pool2d_with_indices.default(x, [6, 6]),
                *A.max_pool3d_with_indices.default(v, [2, 2, 2]), *A.adaptive_max_pool2d.default(x, [2, 2]),
                *A.adaptive_max_pool2d.default(x, [3, 2]))
    x = make([2, 2, 6, 6], dom="smallint")
    x[0, 0, 0, :] = float("nan")
    x[0, 1, 1, 0::2] = float("nan")
    x[1, 0, :2, :3] = float("-inf")
    x[1, 1, 3:, 3:] = float("nan")
    v = make([1, 2, 4, 4, 4], dom="smallint")
    v[0, 0, 0, 0, :] = float("nan")
    v[0, 1, :2, :2, :2] = float("-inf")
    return fn, [x, v]


@op_case("fractional_max_pool", [A.fractional_max_pool2d.default, A.fractional_max_pool3d.default],
         ("odd", "noncontig", "size1"))
def _fractional_max_pool(dev):
    """fractional_max_pool2d and 3d at fixed random samples (one per plane and spatial dim):
    windows that overlap and that skip, an output of one along a dim (its window at the end),
    windows over 25 elements (a reduction), unbatched and channels-last input, NaNs in a
    window (it wins, at the last NaN's position), bf16 (each step of the window starts rounded
    to bf16, as CPU eager computes them); values and their positions in the plane (volume)."""
    def fn(x, u, xu, uu, big, ub, xn, un, xb, ubf, v, uv):
        f2, f3 = A.fractional_max_pool2d.default, A.fractional_max_pool3d.default
        return (*f2(x, [2, 3], [4, 5], u), *f2(x, [3, 2], [7, 1], u), *f2(xu, [2, 2], [3, 3], uu),
                *f2(big, [5, 6], [4, 3], ub), *f2(xn, [3, 3], [3, 3], un), *f2(xb, [2, 2], [6, 5], ubf),
                *f3(v, [2, 2, 3], [3, 4, 4], uv))
    xn = make([1, 2, 7, 7], dom="smallint")
    xn[0, 0, 1, :] = float("nan")
    xn[0, 1, 2:5, 3] = float("nan")
    return fn, [make([2, 3, 9, 11], dom="distinct"), torch.rand(2, 3, 2),
                make([2, 6, 5], dom="distinct").permute(0, 2, 1), torch.rand(1, 2, 2),
                make([1, 2, 12, 10], dom="distinct").to(memory_format=torch.channels_last), torch.rand(1, 2, 2),
                xn, torch.rand(1, 2, 2), make([2, 2, 13, 11], bf16, "distinct"), torch.rand(2, 2, 2).to(bf16),
                make([1, 2, 6, 7, 8], dom="distinct"), torch.rand(1, 2, 3)]


@op_case("airy_ai", [A.special_airy_ai.default], ("odd",))
def _airy_ai(dev):
    """Airy's Ai on a grid across its three pieces (the oscillation below -8, the series on
    [-8, 2], the decay beyond 2) and their joins, near its first zeros, far out on the right,
    at the infinities (NaN, as eager) and NaN; an integer input. In float32 only, and no
    further left than -40: eager's float64 Ai is off by up to 2.5e-6 near its first zero and
    its float32 one by 2.5e-5 at -300 (against mpmath, which coil's series match to 1e-15)."""
    def fn(x, i):
        return A.special_airy_ai.default(x), A.special_airy_ai.default(i)
    x = torch.cat([torch.linspace(-40, 30, 701), torch.tensor([-8.0, -7.999, -8.001, 2.0, 2.001, -2.338107, -4.087949,
                                                                25.0, float("inf"), -float("inf"), float("nan")])])
    return fn, [x, torch.arange(-12, 12)]


@op_case("igamma_zeta", [A.igamma.default, A.igammac.default, A.special_zeta.default, A.special_zeta.self_scalar,
                          A.special_zeta.other_scalar], ("broadcast",))
def _igamma_zeta(dev):
    """The regularized incomplete gamma functions on both sides of x = a + 1 (series and
    continued fraction), large a near x, and eager's special values (a or x 0, infinite,
    negative, NaN); the Hurwitz zeta at s near 1, large s, q near 0, large q, negative q with
    whole s, the poles, s < 1 and NaN; f64 and a broadcast."""
    def fn(a, x, ad, xd, s, q, sd):
        return (A.igamma.default(a, x), A.igammac.default(a, x), A.igamma.default(ad, xd), A.igammac.default(ad, xd),
                A.special_zeta.default(s, q), A.special_zeta.default(sd, q.to(f64)), A.special_zeta.self_scalar(2.5, q),
                A.special_zeta.other_scalar(s, 0.75))
    a = torch.tensor([0.5, 1, 2.5, 10, 100, 3000, 0.01, 3, 0, 0, 1, float("inf"), 2, -1, float("nan"), 7.5])
    x = torch.tensor([0.1, 1, 2.5, 9, 110, 2950, 0.5, 30, 1, 0, 0, 3, float("inf"), 1, 1, 0.2])
    s = torch.tensor([2, 3, 1.5, 1.0001, 50, 3, 4, 2.5, 1, 0.5, 2, 2.5, float("nan"), 6])
    q = torch.tensor([1, -2.5, 0.3, 2, 1.5, 1e9, -30.5, 1e-3, 1, 1, 0, -1.5, 1, 4])
    return fn, [a, x, (torch.rand(3, 1, dtype=f64) * 20), (torch.rand(1, 4, dtype=f64) * 20), s, q, s.to(f64)]


@op_case("upsample_bilinear_aa", [A._upsample_bilinear2d_aa.default, A._upsample_bilinear2d_aa.vec], ("odd", "noncontig"))
def _upsample_bilinear_aa(dev):
    """Antialiased bilinear resizing: shrinking by uneven factors (windows of several inputs,
    cut at the borders), growing (the plain triangle filter), one output, align_corners, scale
    factors given (.vec), a channels-last input and f64 (eager's CPU kernel has no bf16)."""
    def fn(x, xcl, xb):
        return (A._upsample_bilinear2d_aa.default(x, [5, 3], False), A._upsample_bilinear2d_aa.default(x, [30, 41], False),
                A._upsample_bilinear2d_aa.default(x, [1, 1], False), A._upsample_bilinear2d_aa.default(x, [4, 7], True),
                A._upsample_bilinear2d_aa.default(x, [25, 9], True),
                A._upsample_bilinear2d_aa.vec(x, None, False, [0.3, 0.45]),
                A._upsample_bilinear2d_aa.default(xcl, [6, 5], False), A._upsample_bilinear2d_aa.default(xb, [7, 4], False))
    return fn, [make([2, 3, 17, 23]), make([1, 4, 13, 11]).to(memory_format=torch.channels_last), make([1, 2, 15, 9], f64)]


@op_case("histogram", [A.histogram.bin_ct, A.histogram.bins_tensor, A._histogramdd_bin_edges.default,
                       A._histogramdd_from_bin_cts.default, A._histogramdd_from_bin_tensors.default], ("odd", "size1"))
def _histogram(dev):
    """histogram by bin count (over the data's range, a range given that leaves points out,
    points on the edges, a NaN, weights, density) and by uneven edges; histogramdd's edges
    and counts by bin counts and by edge tensors in 2 and 3 dims with weights and density; one
    point (a range of one number, widened); f64."""
    def fn(x, xn, w, edges, pts, pw, e0, e1, one, xd):
        dd_edges = A._histogramdd_bin_edges.default(pts, [3, 4])
        return (*A.histogram.bin_ct(x, 7), *A.histogram.bin_ct(xn, 5, range=[-1.0, 1.5], weight=w),
                A.histogram.bin_ct(x, 4, range=[-2.0, 2.0], density=True)[0], *A.histogram.bins_tensor(x, edges),
                A.histogram.bins_tensor(x, edges, weight=w, density=True)[0], *dd_edges,
                A._histogramdd_from_bin_cts.default(pts, [3, 4]),
                A._histogramdd_from_bin_cts.default(pts, [2, 5], range=[-1.0, 1.0, 0.0, 2.0], weight=pw, density=True),
                A._histogramdd_from_bin_tensors.default(pts, [e0, e1], weight=pw),
                *A._histogramdd_bin_edges.default(pts.reshape(-1, 3)[:, :3], [2, 2, 3]),
                A._histogramdd_from_bin_cts.default(pts.reshape(-1, 3), [2, 2, 3]), *A.histogram.bin_ct(one, 3),
                *A.histogram.bin_ct(xd, 6, range=[-3.0, 3.0]))
    x = torch.randn(37)
    x[:4] = torch.tensor([-1.0, 0.0, 1.5, 0.25])  # on edges of the bins below
    xn = x.clone()
    xn[5] = float("nan")
    edges = torch.tensor([-2.0, -0.5, 0.0, 0.1, 1.5, 3.0])
    pts = torch.randn(30, 2)
    e0, e1 = torch.tensor([-1.0, 0.0, 0.5, 2.0]), torch.tensor([-3.0, -1.0, 1.0])
    return fn, [x, xn, torch.rand(37), edges, pts, torch.rand(30), e0, e1, torch.tensor([2.0]), x.to(f64)]


@op_case("resize", [A.resize.default], ("noncontig",))
def _resize(dev):
    """resize (resize_ made functional) keeps the storage's order: shrinking and reshaping a
    contiguous input, a transposed one (its storage order, not its logical one), into a
    channels-last layout, a scalar to [1, 1, 1], and bf16. (Growing leaves memory
    uninitialized in eager, so no case compares it.)"""
    def fn(x, y, s, xb):
        return (A.resize.default(x, [2, 5]), A.resize.default(x.t(), [5]), A.resize.default(x.t(), [2, 6]),
                A.resize.default(y, [1, 3, 2, 2], memory_format=torch.channels_last), A.resize.default(s, [1, 1, 1]),
                A.resize.default(xb, [7]))
    return fn, [make([3, 4]), make([1, 2, 3, 4]), make([]), make([3, 4], bf16)]


@op_case("segment_reduce", [A.segment_reduce.default], ("noncontig", "odd"))
def _segment_reduce(dev):
    """segment_reduce by lengths and by offsets, every reduce with and without initial,
    empty segments (identity, NaN for mean, or initial), along axis 0 and axis 1 (lengths per
    row), a NaN in a max segment, segments longer than a vector, and bf16."""
    def fn(d, lengths, offsets, d2, lengths2, db):
        outs = []
        for r in ("sum", "prod", "max", "min", "mean"):
            outs.append(A.segment_reduce.default(d, r, lengths=lengths))
            outs.append(A.segment_reduce.default(d, r, lengths=lengths, initial=0.5))
            outs.append(A.segment_reduce.default(d, r, offsets=offsets))
        return (*outs, A.segment_reduce.default(d2, "sum", lengths=lengths2, axis=1),
                A.segment_reduce.default(d2.transpose(0, 1).contiguous().transpose(0, 1), "max", lengths=lengths2,
                                         axis=1, initial=-1.0),
                A.segment_reduce.default(db, "mean", lengths=lengths))
    d = torch.randn(40, 3)
    d[1, 2] = float("nan")
    lengths = torch.tensor([2, 0, 19, 1, 0, 18])
    offsets = torch.tensor([0, 3, 3, 25, 40])
    return fn, [d, lengths, offsets, torch.randn(2, 30, 4), torch.tensor([[5, 25], [0, 30]]), d.to(bf16)]


@op_case("adaptive_max_pool", [A.adaptive_max_pool2d.default, A.adaptive_max_pool3d.default],
         ("odd", "noncontig", "size1"))
def _adaptive_max_pool(dev):
    """adaptive_max_pool2d and 3d shrinking (overlapping windows of uneven size), keeping and
    growing the size, one output, windows over 25 elements (a reduction, not unrolled), a
    channels-last input, 3-d (unbatched) input, NaNs (they win), bf16; values and their
    positions in the plane (volume)."""
    def fn(x, xl, xcl, xu, xn, xb, v):
        return (*A.adaptive_max_pool2d.default(x, [3, 4]), *A.adaptive_max_pool2d.default(x, [7, 9]),
                *A.adaptive_max_pool2d.default(x, [10, 12]), *A.adaptive_max_pool2d.default(x, [1, 1]),
                *A.adaptive_max_pool2d.default(xl, [2, 3]), *A.adaptive_max_pool2d.default(xcl, [3, 5]),
                *A.adaptive_max_pool2d.default(xu, [2, 2]), *A.adaptive_max_pool2d.default(xn, [2, 3]),
                A.adaptive_max_pool2d.default(xb, [3, 3])[0], *A.adaptive_max_pool3d.default(v, [2, 3, 2]),
                *A.adaptive_max_pool3d.default(v, [4, 5, 6]))
    xn = make([1, 2, 6, 6])
    xn[0, 0, 1, 1] = float("nan")
    xn[0, 1, 5, 0] = float("nan")
    return fn, [make([2, 3, 7, 9]), make([1, 2, 20, 30]), make([2, 4, 6, 10]).to(memory_format=torch.channels_last),
                make([3, 5, 5]), xn, make([1, 2, 8, 8], bf16), make([1, 2, 4, 5, 6])]


@op_case("nonzero_static_put_histc", [A.nonzero_static.default, A.put.default, A.histc.default,
                                       A.as_strided_scatter.default], ("odd", "noncontig", "size0"), decomp="none")
def _nonzero_static_put_histc(dev):
    """nonzero_static with room for fewer, as many and more rows than nonzero elements, of a
    transposed, a bool, a 0-d and an empty input; put with negative positions (repeated ones
    only accumulating: which write wins is unspecified), into a transposed tensor; histc over
    a given range (elements outside, on the edges), over the data's range, over data of one
    value, in bf16; as_strided_scatter onto a transposed tensor at an offset."""
    def fn(x, xt, bo, z, e, s, idx, src, h, hb, same, small):
        return (A.nonzero_static.default(x, size=3), A.nonzero_static.default(x, size=40, fill_value=-7),
                A.nonzero_static.default(xt.t(), size=9), A.nonzero_static.default(bo, size=4),
                A.nonzero_static.default(z, size=2), A.nonzero_static.default(e, size=3),
                A.put.default(s, idx[:3], src[:3]), A.put.default(s, idx, src, True), A.put.default(xt.t(), idx[:3], src[:3]),
                A.histc.default(h, 7, -1.0, 1.0), A.histc.default(h, 5), A.histc.default(hb, 4, -2.0, 2.0),
                A.histc.default(same, 3), A.histc.default(h, 1, 0.0, 0.5),
                A.as_strided_scatter.default(xt.t(), small, [2, 2], [1, 2], 1),
                A.as_strided_scatter.default(s, small, [2, 2], [3, 1], 0))
    x = make([5, 6])
    x[x.abs() < 0.8] = 0
    xt = torch.tensor([[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 4.0], [0.0, 0.0, 5.0, 0.0]]).t().contiguous()
    h = torch.cat([torch.rand(50) * 3 - 1.5, torch.tensor([-1.0, 1.0, 0.0, 0.25, 2.0, -2.0])])
    return fn, [x, xt, torch.tensor([[True, False], [False, True]]), torch.tensor(2.5), make([0, 3]), make([4, 3]),
                torch.tensor([0, -1, 5, 5, 11, -12]), make([6]), h, h.to(torch.bfloat16), torch.full((6,), 3.5),
                make([2, 2])]


@op_case("overloads_of_sweep", [A.upsample_bilinear2d.default, A.upsample_nearest2d.default, A.scatter.reduce,
                                 A.scatter.value_reduce, A.addmv.default], ("odd",), decomp="none")
def _overloads_of_sweep(dev):
    """The overloads the OpInfo sweep brought in: upsampling to an output size with and
    without per-dim scales (channels-last too), scatter with reduce 'add' and 'multiply' from
    a tensor and from a value, and addmv of integers with fractional factors (truncated)."""
    def fn(x, xcl, s, idx, src, m, v, mi, vi, si):
        return (A.upsample_bilinear2d.default(x, [7, 9], False), A.upsample_bilinear2d.default(x, [10, 5], True),
                A.upsample_bilinear2d.default(xcl, [8, 8], False, 1.7, 1.4),
                A.upsample_nearest2d.default(x, [7, 9]), A.upsample_nearest2d.default(xcl, [9, 4], 2.1, 0.9),
                A.scatter.reduce(s, 0, idx, src, reduce="add"), A.scatter.reduce(s, 1, idx, src, reduce="multiply"),
                A.scatter.value_reduce(s, 0, idx, 1.5, reduce="multiply"),
                A.addmv.default(si, mi, vi, beta=0.2, alpha=1.6), A.addmv.default(s[0], m, v, beta=0.5, alpha=2.0))
    x = make([2, 3, 5, 6])
    return fn, [x, x.contiguous(memory_format=torch.channels_last), make([4, 5], dom="near1"),
                torch.randint(0, 4, (3, 5)), make([3, 5], dom="near1"), make([5, 6]), make([6]),
                torch.randint(-5, 5, (4, 6)), torch.randint(-5, 5, (6,)), torch.randint(-5, 5, (4,))]


@op_case("signbit_angle_diagonal_scatter", [A.signbit.default, A.angle.default, A.diagonal_scatter.default,
                                             torch.ops.prims.convert_element_type.default], ("odd", "noncontig"),
         decomp="none")
def _signbit_angle_diagonal_scatter(dev):
    """signbit of -0.0, nan, -nan, +-inf, integers and bf16; angle of reals with nan and
    of integers; diagonal_scatter above and below the diagonal, with dims swapped, on a 3-d
    tensor and on int64; prims.convert_element_type to f16 and to i32."""
    def fn(x, xb, i, s, d0, d1, d2, d3, si, s3, di):
        return (A.signbit.default(x), A.signbit.default(xb), A.signbit.default(i), A.angle.default(x),
                A.angle.default(i), A.diagonal_scatter.default(s, d0), A.diagonal_scatter.default(s, d1, 2),
                A.diagonal_scatter.default(s, d2, -1, 1, 0), A.diagonal_scatter.default(s3, d3, 1, 2, 1),
                A.diagonal_scatter.default(si, di),
                torch.ops.prims.convert_element_type.default(x, f16), torch.ops.prims.convert_element_type.default(s, torch.int32))
    x = make([40], dom="special")
    x[:4] = torch.tensor([-0.0, 0.0, float("nan"), -float("nan")])
    return fn, [x, x.to(torch.bfloat16), torch.randint(-5, 5, (9,)), make([4, 6]), make([4]), make([4]),
                make([4]), make([3, 3]), torch.randint(-5, 5, (4, 6)), make([3, 4, 6]), torch.randint(-5, 5, (4,))]


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
               "legendre_polynomial_p"]


@op_case("special_gamma", [A.lgamma.default, A.digamma.default, A.polygamma.default,
                            A.special_spherical_bessel_j0.default], ("odd", "noncontig", "size0"), decomp="none")
def _special_gamma(dev):
    """lgamma, digamma, polygamma (n = 0 to 4) and the spherical Bessel j0 over positive and
    negative numbers, the poles (0, -0, negative integers), the infinities, NaN, tiny and huge
    values: f32 and bf16 where eager's float math is exact enough, f64 across the negatives
    (eager's float32 trigamma loses digits there; at the negative integers, poles, eager's
    trigamma is a large finite number, coil's inf, so its negatives are not integers), int64
    and bool."""
    def fn(x, xn, xb, i, b, e):
        out = [A.special_spherical_bessel_j0.default(t) for t in (x, xn, i, b)]
        for t in (x, xn, xb, i, b, e):
            out += [A.lgamma.default(t), A.digamma.default(t)]
        for n in range(5):
            out += [A.polygamma.default(n, x), A.polygamma.default(n, xn if n != 1 else xn[3:])]
        return tuple(out)
    x = torch.cat([torch.rand(30) * 20 + 0.01, torch.tensor([0.0, -0.0, 1.0, 2.0, 0.5, 1e-30, 1e30, float("inf"),
                                                             float("nan"), 1.4616321])])
    xn = torch.cat([torch.tensor([-1.0, -2.0, -7.0], dtype=torch.float64), torch.rand(32, dtype=torch.float64) * -30,
                    torch.tensor([-0.5, -1e-300, -float("inf"), 3.25], dtype=torch.float64)])
    return fn, [x, xn.reshape(3, 13).t(), x.to(torch.bfloat16), torch.randint(-6, 30, (12,)),
                torch.tensor([True, False]), make([0, 3])]


@op_case("special_erf", [A.erfc.default, A.special_erfcx.default, A.special_log_ndtr.default, A.erfinv.default,
                          A.special_ndtri.default], ("odd", "noncontig", "size0"), decomp="none")
def _special_erf(dev):
    """erfc, erfcx and log_ndtr from -40 to 40 (erfc's underflow, erfcx's overflow, log_ndtr's
    far left tail) with infinities, NaN and -0; erfinv and ndtri across
    (-1, 1) and (0, 1), up to their ends (1 - 2^-53, denormal probabilities) and beyond them,
    in f64, f32, bf16, int64 and bool."""
    def fn(x, xd, y, yd, p, pd, i, b, e):
        out = []
        for t in (x, xd, i, b, e):
            # eager's f32 erfcx loses digits in exp(x^2) below -2: the f32 one stays above.
            wide = t.dtype == torch.float64 or t.dtype == torch.bool
            out += [A.erfc.default(t), A.special_erfcx.default(t if wide else t.clamp_min(-2)),
                    A.special_log_ndtr.default(t)]
        for t in (y, yd, i, b, e):
            out += [A.erfinv.default(t)]
        for t in (p, pd, i, b):
            out += [A.special_ndtri.default(t)]
        return tuple(out)
    edges = [0.0, -0.0, float("inf"), -float("inf"), float("nan")]
    x = torch.cat([torch.rand(40) * 18 - 9, torch.tensor(edges + [0.5, -0.5, 4.0, 26.0, 27.5, 38.0, -38.0])])
    xd = torch.cat([torch.rand(40, dtype=torch.float64) * 80 - 40, torch.tensor(edges + [26.5, 27.2, -27.0],
                                                                                    dtype=torch.float64)])
    y = torch.cat([torch.rand(40) * 2 - 1, torch.tensor(edges + [1.0, -1.0, 0.9, -0.9, 0.95, 1.5, 0.9999999])])
    yd = torch.cat([torch.rand(30, dtype=torch.float64) * 2 - 1,
                    torch.tensor(edges + [1.0, -1.0, 1 - 2.0 ** -53, -(1 - 2.0 ** -53), 0.90000001, 0.5], dtype=torch.float64)])
    p = torch.cat([torch.rand(40), torch.tensor(edges + [1.0, 0.05, 0.95, 1e-30, 1.0 - 2.0 ** -24, -0.5, 2.0])])
    pd = torch.cat([torch.rand(30, dtype=torch.float64), torch.tensor(edges + [1e-300, 5e-324, 1 - 2.0 ** -53, 0.05, 0.95],
                                                                       dtype=torch.float64)])
    return fn, [x, xd.reshape(8, 6).t(), y, yd, p, pd, torch.randint(-3, 4, (8,)), torch.tensor([True, False]),
                make([0, 2])]


@op_case("special_bessel", [A.i0.default, A.special_i0e.default, A.special_i1.default, A.special_i1e.default,
                             A.special_modified_bessel_i0.default, A.special_modified_bessel_i1.default,
                             A.special_modified_bessel_k0.default, A.special_modified_bessel_k1.default,
                             A.special_scaled_modified_bessel_k0.default, A.special_scaled_modified_bessel_k1.default,
                             A.special_bessel_j0.default, A.special_bessel_j1.default, A.special_bessel_y0.default,
                             A.special_bessel_y1.default], ("odd", "noncontig", "size0"), decomp="none")
def _special_bessel(dev):
    """The Bessel functions across both sides of their series' seams (2 and 8), from tiny to
    large arguments (I up to 709 in f64, past which eager overflows in exp(x) before dividing
    while coil does not; K's underflow), negative numbers (I odd and even, J odd and even, K
    and Y NaN), 0, -0, the infinities and NaN; f32 up to 30 where eager's float math keeps
    its digits, f64 to 800, bf16, int64 and bool."""
    fns = [A.i0.default, A.special_i0e.default, A.special_i1.default, A.special_i1e.default,
           A.special_modified_bessel_i0.default, A.special_modified_bessel_i1.default,
           A.special_modified_bessel_k0.default, A.special_modified_bessel_k1.default,
           A.special_scaled_modified_bessel_k0.default, A.special_scaled_modified_bessel_k1.default,
           A.special_bessel_j0.default, A.special_bessel_j1.default, A.special_bessel_y0.default,
           A.special_bessel_y1.default]

    def fn(x, xd, xb, i, b, e):  # eager has bf16 for i0, i0e, i1 and i1e only
        return tuple(g(t) for k, g in enumerate(fns) for t in ((x, xd, xb, i, b, e) if k < 4 else (x, xd, i, b, e)))
    edges = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 2.0, 8.0, 1e-20]
    x = torch.cat([torch.rand(30) * 24 - 4, torch.tensor(edges + [1.99999, 2.00001, 7.99999, 8.00001, 30.0, -30.0])])
    xd = torch.cat([torch.rand(20, dtype=torch.float64) * 100 - 20, torch.rand(8, dtype=torch.float64) * 800,
                    torch.tensor(edges + [700.0, 709.0, -705.0, 1e-300, 1e5, 3.0], dtype=torch.float64)])
    return fn, [x, xd.reshape(3, 14).t(), (torch.rand(12) * 16 - 4).to(torch.bfloat16), torch.randint(-5, 20, (9,)),
                torch.tensor([True, False]), make([0, 3])]


@op_case("gcd_lcm_shifts", [A.gcd.default, A.lcm.default, A.bitwise_left_shift.Tensor,
                             A.bitwise_left_shift.Tensor_Scalar, A.bitwise_left_shift.Scalar_Tensor,
                             A.bitwise_right_shift.Tensor, A.bitwise_right_shift.Tensor_Scalar,
                             A.bitwise_right_shift.Scalar_Tensor], ("odd", "noncontig", "broadcast"), decomp="none")
def _gcd_lcm_shifts(dev):
    """gcd and lcm of signed numbers, zeros and consecutive Fibonacci numbers (Euclid's
    longest runs) in i64, i32, i16 and u8; shifts by 0 to 70 and by negative amounts of
    positive and negative numbers (the sign's -1 past the width), into the sign bit, with a
    number on either side, in i64, i32, i8 and u8, mixed dtypes promoting."""
    def fn(a, b, f, g, a32, b32, a16, b16, a8, b8, x, s, x32, s8, xi8, xu8):
        return (A.gcd.default(a, b), A.lcm.default(a, b), A.gcd.default(f, g), A.lcm.default(f, g),
                A.gcd.default(a32, b32), A.lcm.default(a32, b32), A.gcd.default(a16, b16), A.gcd.default(a8, b8),
                A.lcm.default(a16, b16), A.gcd.default(a, b32),
                A.bitwise_left_shift.Tensor(x, s), A.bitwise_right_shift.Tensor(x, s),
                A.bitwise_left_shift.Tensor(x32, s8), A.bitwise_right_shift.Tensor(x32, s8),
                A.bitwise_left_shift.Tensor(xi8, s8), A.bitwise_right_shift.Tensor(xi8, s8),
                A.bitwise_left_shift.Tensor(xu8, s8), A.bitwise_right_shift.Tensor(xu8, s8),
                A.bitwise_left_shift.Tensor_Scalar(x, 3), A.bitwise_right_shift.Tensor_Scalar(x32, 40),
                A.bitwise_left_shift.Scalar_Tensor(5, s), A.bitwise_right_shift.Scalar_Tensor(-1000, s8),
                A.bitwise_left_shift.Tensor(x[:4].reshape(4, 1), s[:5]))
    i64, i32, i16, u8, i8 = torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8
    a = torch.tensor([12, -18, 0, 0, 7, -9223372036854775807, 1 << 40, 35, 1, -6])
    b = torch.tensor([18, 12, 0, 5, -3, 3, 1 << 20, -49, 1, 0])
    fib = [1, 1]
    while len(fib) < 92:
        fib.append(fib[-1] + fib[-2])
    f, g = torch.tensor(fib[1:91]), torch.tensor(fib[2:92])
    s = torch.tensor([0, 1, 5, 62, 63, 64, 70, -1, -64, 3])
    x = torch.tensor([5, -5, 3, 1, -1, 7, -7, 9, -12, 1 << 61])
    return fn, [a, b, f, g, (a % 1000).to(i32), (b % 1000).to(i32), torch.tensor([600, -48, 0, 233], dtype=i16),
                torch.tensor([144, 36, 0, -377], dtype=i16), torch.tensor([200, 0, 255, 89], dtype=u8),
                torch.tensor([150, 7, 0, 144], dtype=u8), x, s, torch.tensor([5, -5, 1 << 30, -(1 << 31), 77, -77, 3, 0, 1, -1], dtype=i32),
                torch.tensor([0, 1, 7, 8, 31, 32, 33, -1, 40, 2], dtype=i8),
                torch.tensor([5, -5, 127, -128, 64, -1, 3, 0, 1, -2], dtype=i8),
                torch.tensor([5, 250, 127, 128, 64, 255, 3, 0, 1, 2], dtype=u8)]


@op_case("index_reduce", [A.index_reduce.default], ("odd", "noncontig", "size1"), decomp="none")
def _index_reduce(dev):
    """index_reduce with each reduce (prod, mean, amax, amin), with and without self, along
    dims 0, 1 and -1, repeated indices and slices no index reaches, a transposed source,
    integers with negative means (eager's division rounds down), bf16, and 0-d tensors."""
    def fn(x, src, idx, src1, idx1, xi, srci, x0, s0, i0, xb, srcb):
        out = []
        for reduce in ("prod", "mean", "amax", "amin"):
            for include in (True, False):
                out.append(A.index_reduce.default(x, 0, idx, src, reduce, include_self=include))
            out.append(A.index_reduce.default(x, -1, idx1, src1.t(), reduce))
            out.append(A.index_reduce.default(xi, 1, idx1, srci, reduce, include_self=False))
            out.append(A.index_reduce.default(xb, 0, idx, srcb, reduce))
        out.append(A.index_reduce.default(x0, 0, i0, s0, "mean"))
        return tuple(out)
    return fn, [make([5, 4]), make([7, 4]), torch.tensor([0, 2, 0, 4, 2, 2, 0]), make([3, 5]),
                torch.tensor([3, 1, 3]), torch.randint(-9, 9, (5, 4)), torch.randint(-9, 9, (5, 3)),
                make([]), make([]), torch.tensor(0), make([5, 4], bf16), make([7, 4], bf16)]


@op_case("orthogonal_polynomials", [getattr(getattr(A, f"special_{name}"), o) for name in POLYNOMIALS
                                    for o in ("default", "x_scalar", "n_scalar")],
         ("odd", "noncontig", "broadcast", "size0"), decomp="none")
def _orthogonal_polynomials(dev):
    """Each orthogonal polynomial (Chebyshev T, U, V, W and their shifted forms, Hermite H
    and He, Laguerre, Legendre) of x across and beyond [-1, 1] (the ends, 0, 1/2 where the
    shifted kinds reach theirs) by degrees -1 to 40 broadcast against it (the closed forms
    past 6, odd and even), a fractional, NaN and infinite degree, in f64 and f32; integer
    operands; x or n a number."""
    def fn(x, n, xf, nf, xi, ni, e):
        out = []
        for name in POLYNOMIALS:
            g = getattr(A, f"special_{name}")
            out += [g.default(x, n), g.default(xf, nf), g.default(xi, ni), g.default(e, ni[:1]), g.x_scalar(0.3, n),
                    g.n_scalar(xf, 5)]
        return tuple(out)
    x = torch.tensor([-1.5, -1.0, -0.999, -0.5, 0.0, 0.3, 0.5, 0.9, 1.0, 1.2], dtype=torch.float64).reshape(10, 1)
    n = torch.tensor([-1.0, 0.0, 1.0, 2.0, 5.0, 7.0, 8.0, 9.0, 20.0, 3.7, float("nan"), float("inf")],
                     dtype=torch.float64)
    xf = torch.tensor([-1.0, -0.7, 0.0, 0.25, 0.5, 1.0, 0.8, -0.2], dtype=torch.float32)
    nf = torch.tensor([0.0, 3.0, 7.0, 12.0, 2.0, 9.0, 1.0, -2.0], dtype=torch.float32)
    return fn, [x, n, xf, nf, torch.tensor([0, 1, -1, 2]), torch.tensor([3, 4, 0, 2]), make([0], torch.float64)]


@op_case("frexp_nextafter", [A.frexp.Tensor, A.nextafter.default], ("odd", "noncontig", "size0"), decomp="none")
def _frexp_nextafter(dev):
    """frexp and nextafter across f64's range (denormals down to the smallest, the largest
    finite), exact powers of two and their neighbours (nextafter toward zero from a power of
    two takes the finer step), 0, -0, the infinities and NaN; f32 (its denormals), bf16,
    f16, a transposed input and an empty one; nextafter toward larger, smaller, equal and
    NaN targets and past the largest finite number."""
    def fn(xd, x, xb, xh, xt, e):
        out = [*A.frexp.Tensor(xd), *A.frexp.Tensor(x), *A.frexp.Tensor(xb), *A.frexp.Tensor(xh),
               *A.frexp.Tensor(xt.t()), *A.frexp.Tensor(e)]
        for t in (xd, x, xb, xh):
            out += [A.nextafter.default(t, t.flip(0)), A.nextafter.default(t, torch.zeros_like(t)),
                    A.nextafter.default(t, torch.full_like(t, float("inf"))),
                    A.nextafter.default(t, torch.full_like(t, -float("inf")))]
        return tuple(out)
    edges = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, 0.5, 2.0, -4.0, 3.0, 0.75]
    xd = torch.tensor(edges + [1e-310, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1 - 2 ** -53,
                               1 + 2 ** -52, 2 ** 1000, -(2 ** -1000), 123456.789], dtype=torch.float64)
    x = torch.cat([torch.randn(20) * 1000, torch.tensor(edges + [1e-40, 1e-45, 3.4e38, 1 - 2 ** -24, 1.17549435e-38])])
    return fn, [xd, x, x.to(torch.bfloat16), (x / 1e4).to(torch.float16), make([4, 5]), make([0, 2])]


@op_case("addbmm_bucketize_searchsorted", [A.addbmm.default, A.bucketize.Tensor, A.searchsorted.Tensor],
         ("odd", "size0", "noncontig"), decomp="none")
def _addbmm_bucketize_searchsorted(dev):
    """addbmm with factors, a row bias, a transposed batch, an empty batch and integers with a
    fractional beta; bucketize of values on, between and beyond the boundaries, with NaN,
    right and out_int32; searchsorted over rows of a 2-d sequence, side='right', and int64."""
    def fn(s, b1, b2, row, b1t, e1, e2, si, i1, i2, v, bounds, seq, vals, iseq, ivals):
        return (A.addbmm.default(s, b1, b2), A.addbmm.default(row, b1, b2, beta=0.5, alpha=-2.0),
                A.addbmm.default(s, b1t.transpose(1, 2), b2), A.addbmm.default(s, e1, e2, beta=3.0),
                A.addbmm.default(si, i1, i2, beta=0.7, alpha=2),
                A.bucketize.Tensor(v, bounds), A.bucketize.Tensor(v, bounds, right=True),
                A.bucketize.Tensor(v, bounds, out_int32=True),
                A.searchsorted.Tensor(seq, vals), A.searchsorted.Tensor(seq, vals, side="right"),
                A.searchsorted.Tensor(iseq, ivals, right=True))
    bounds = torch.tensor([-1.0, -0.5, 0.0, 0.0, 0.5, 2.0])
    v = torch.cat([bounds, make([20]), torch.tensor([float("nan"), -5.0, 5.0])])
    seq = make([3, 7]).sort(-1).values
    vals = torch.cat([seq[:, :3], make([3, 4])], 1)
    iseq = torch.randint(-5, 5, (2, 6)).sort(-1).values
    return fn, [make([3, 5]), make([4, 3, 6]), make([4, 6, 5]), make([5]), make([4, 6, 3]), make([0, 3, 2]),
                make([0, 2, 5]), torch.randint(-5, 5, (2, 3)), torch.randint(-5, 5, (3, 2, 4)),
                torch.randint(-5, 5, (3, 4, 3)), v, bounds, seq, vals, iseq, torch.randint(-6, 6, (2, 5))]


# A model added later, kept here so that no line above moved: ResNet laid out channels-last
# (weights and input), as vision models are run for speed; every activation is NHWC.
MODELS["resnet_tiny_channels_last"] = lambda: (
    TinyResNet().to(memory_format=torch.channels_last),
    [make([2, 3, 32, 32]).contiguous(memory_format=torch.channels_last)])


# ---------------------------------------------------------------------------------------------
# Registration (the order here is the order of --list and of the run)
# ---------------------------------------------------------------------------------------------

def register_all() -> None:
    for name in WORKLOADS:
        for suffix, m, n, tags in WORKLOAD_SIZES:
            register_workload(name, suffix, m, n, tags)
        if name in ODD_WORKLOADS:
            register_workload(name, "_37x129", 37, 129, ("odd",))
    register_workload("softmax_lastdim", "_1x129", 1, 129, ("odd", "size1"))
    register_workload("layernorm", "_5x1", 5, 1, ("size1",))
    for name in MODELS:
        register_model(name)
    for u in UNARY:
        register_unary(u)
    for b in BINARY:
        register_binary(b)


# Hand-written op cases registered themselves (decorators, above); move them after the
# generated ones so the run order reads workloads, models, unary, binary, the rest.
_HAND_WRITTEN = dict(CASES)
CASES.clear()
register_all()
CASES.update(_HAND_WRITTEN)


# ---------------------------------------------------------------------------------------------
# Capturing one case
# ---------------------------------------------------------------------------------------------

def case_seed(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def setup_process() -> None:
    """Settings every capturing process needs, whichever way it was started: one eager thread
    (so float reductions give the same bits in every run), no warnings noise, and no Inductor
    graph caches (a cache hit skips code generation, and then counts no kernels)."""
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    inductor_config.fx_graph_cache = False
    inductor_config.fx_graph_remote_cache = False
    inductor_config.compile_threads = 1
    functorch_config.enable_autograd_cache = False
    import logging
    logging.getLogger("torch").setLevel(logging.ERROR)


def build_case(case: Case, dev: str):
    """Seed, build on the CPU, move to `dev`. Returns (module, args)."""
    torch.manual_seed(case_seed(case.name))
    module, args = case.build(dev)
    module = module.eval().to(dev)
    # Placeholders are contiguous: layouts under test are made inside forward.
    args = tuple(a.contiguous().to(dev) if isinstance(a, torch.Tensor) else a for a in args)
    return module, args


def export_case(case: Case, module: nn.Module, args: tuple):
    if isinstance(case, DynCase):   # exported at its example sizes, with symbolic dims
        return export_program(module, case.example_args(args), case.decompositions, case.dynamic_shapes(module))
    return export_program(module, args, case.decompositions)


def export_program(module: nn.Module, args: tuple, decompositions: str, dynamic_shapes=None):
    """torch.export, then the decomposition table named: "default" (Inductor's graph), "empty"
    (the ops as called), "attention" (the default but scaled_dot_product_attention, which stays
    one op, as coil's torch.compile backend keeps it) or "none" (no run_decompositions).
    `dynamic_shapes` (torch.export's argument) makes the dims it names symbolic."""
    ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    if decompositions == "default":
        ep = ep.run_decompositions()
    elif decompositions == "attention":
        table = torch.export.default_decompositions()
        for op in (A.scaled_dot_product_attention.default, A._scaled_dot_product_flash_attention_for_cpu.default):
            table.pop(op, None)
        ep = ep.run_decompositions(table)
    elif decompositions == "empty":
        ep = ep.run_decompositions({})
    return ep


_FILE_COMMENT = re.compile(r"^(\s*# File: )(.*?)(:\d+ in )", re.M)


def _short_path(path: str) -> str:
    """torch/nn/modules/linear.py for files of installed packages, scripts/... for the repo."""
    i = path.rfind("site-packages/")
    if i >= 0:
        return path[i + len("site-packages/"):]
    try:
        return Path(path).resolve().relative_to(REPO).as_posix()
    except ValueError:
        return path


def graph_text(ep) -> str:
    text = ep.graph_module.print_readable(print_output=False, include_stride=True, include_device=True)
    return _FILE_COMMENT.sub(lambda m: m.group(1) + _short_path(m.group(2)) + m.group(3), text)


def strip_comments(text: str) -> str:
    """The graph without its `# File:` comments, to tell whether a regenerated graph changed."""
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#") and l.strip())


def placeholder_tensors(ep, args: tuple) -> dict[str, torch.Tensor]:
    """One tensor per placeholder, by name, in graph order: parameters and buffers from the
    state dict (non-persistent buffers and lifted constants from ep.constants), user inputs
    from the flattened example arguments."""
    user = iter(pytree.tree_leaves(args))
    out = {}
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            value = next(user)
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            value = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
        else:
            raise RuntimeError(f"unsupported input kind {kind} for {spec.arg.name}")
        assert isinstance(value, torch.Tensor), (spec.arg.name, type(value))
        out[spec.arg.name] = value
    names = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert names == list(out), (names, list(out))
    return out


def host(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy that owns its memory (safetensors wants no shared storage)."""
    return t.detach().to("cpu").contiguous().clone()


def eager_outputs(ep, args: tuple) -> list[torch.Tensor]:
    """Run the exported program eagerly; its outputs are the graph's outputs in return order."""
    with torch.no_grad():
        outs = pytree.tree_leaves(ep.module()(*args))
    specs = ep.graph_signature.output_specs
    assert all(s.kind.name == "USER_OUTPUT" for s in specs), [s.kind.name for s in specs]
    assert len(outs) == len(specs), (len(outs), len(specs))
    assert all(isinstance(o, torch.Tensor) for o in outs), [type(o) for o in outs]
    return outs


def check_against_module(case: Case, module, args, outs) -> str | None:
    """Sanity check: the captured graph computes what the original module computes."""
    with torch.no_grad():
        ref = pytree.tree_leaves(module(*args))
    if len(ref) != len(outs):
        return f"module returns {len(ref)} tensors, graph {len(outs)}"
    for i, (r, o) in enumerate(zip(ref, outs)):
        if r.shape != o.shape or r.dtype != o.dtype:
            return f"out{i}: module gives {r.dtype}{list(r.shape)}, graph {o.dtype}{list(o.shape)}"
        if r.is_floating_point():
            tol = 1e-2 if r.dtype in (f16, bf16) else 1e-4
            if not torch.allclose(r.double(), o.double(), rtol=tol, atol=tol, equal_nan=True):
                return f"out{i}: values differ"
        elif not torch.equal(r, o):
            return f"out{i}: values differ"
    return None


def graph_dtypes(ep) -> list[str]:
    """Every dtype of every tensor value in the graph (placeholders, intermediates, outputs), of
    the dtypes coil has (the random state of a fused attention op, uint64, is read by nothing)."""
    seen = set()
    for node in ep.graph.nodes:
        for v in pytree.tree_leaves(node.meta.get("val")):
            if isinstance(v, torch.Tensor) and v.dtype in DTYPE_NAMES:
                seen.add(DTYPE_NAMES[v.dtype])
    return [d for d in DTYPE_ORDER if d in seen]


def graph_ops(ep) -> set[str]:
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload)}


def inductor_kernels(ep, args: tuple) -> tuple[int | None, str | None]:
    """Kernels Inductor generates for this graph: one inference compile of ep.module() from a
    clean state (torch.no_grad(): coil compiles forward graphs, and with grad enabled Inductor
    would plan for a backward and could split kernels differently)."""
    import torch._inductor.metrics as metrics
    torch._dynamo.reset()
    metrics.reset()
    try:
        with torch.no_grad():
            torch.compile(ep.module())(*args)
        return metrics.generated_kernel_count, None
    except Exception as e:  # noqa: BLE001 - any failure is recorded, not fatal
        first = (str(e).strip().splitlines() or [""])[0]
        return None, f"{type(e).__name__}: {first}"[:400]
    finally:
        torch._dynamo.reset()


def read_meta(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_if_changed(path: Path, data: bytes) -> None:
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def meta_json(meta: dict) -> bytes:
    return (json.dumps(meta, indent=1) + "\n").encode()


# The ops that draw random numbers: coil's compiled graph takes its random state as an input.
RANDOM_OP = re.compile(r"torch\.ops\.aten\.(rand|randn|rand_like|randn_like|randint|randint_like|randperm|bernoulli|"
                       r"multinomial|native_dropout|uniform|normal|normal_functional|log_normal|exponential|cauchy|geometric|"
                       r"rrelu_with_noise_functional)\.")


def write_graph_files(folder: Path, text: str, inputs: dict[str, torch.Tensor], outs: list[torch.Tensor]) -> None:
    """graph.py, inputs.safetensors (by placeholder name) and expected.safetensors (out0, out1, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_if_changed(folder / "graph.py", text.encode())
    tensors = {k: host(v) for k, v in inputs.items()}
    if RANDOM_OP.search(text):
        tensors["coil.random_state"] = torch.zeros(2, dtype=torch.int64)
    write_tensors(folder / "inputs.safetensors", tensors)
    write_tensors(folder / "expected.safetensors", {f"out{i}": host(o) for i, o in enumerate(outs)})


def write_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """With the safetensors package where it is installed; the project's .venv (torch and triton
    only) has the writer of coil's Triton runner instead, which coil reads the same."""
    try:
        from safetensors.torch import save
    except ImportError:
        sys.path.insert(0, str(REPO / "python" / "coil_triton"))
        import run_plan
        # In standard strides: it writes a tensor's flat view, and a dim of size 1 may have any stride.
        run_plan.write_safetensors(str(path), {k: torch.empty(v.shape, dtype=v.dtype).copy_(v) for k, v in tensors.items()})
        return
    write_if_changed(path, save(tensors))


def capture(name: str, out_dir: str, inductor: bool) -> dict:
    """Capture one case into out_dir/name. Returns a summary for the log."""
    t0 = time.time()
    case = CASES[name]
    folder = Path(out_dir) / name
    module, args = build_case(case, "cpu")
    ep = export_case(case, module, args)
    text = graph_text(ep)
    inputs = placeholder_tensors(ep, args)
    outs = eager_outputs(ep, args)
    problem = check_against_module(case, module, args, outs)

    missing = [op for op in case.ops if op not in graph_ops(ep)]
    old = read_meta(folder / "meta.json") or {}
    old_graph = (folder / "graph.py").read_text() if (folder / "graph.py").exists() else None
    same_graph = old_graph is not None and strip_comments(old_graph) == strip_comments(text)

    if inductor:
        n_cpu, err = inductor_kernels(ep, args)
    elif same_graph:   # keep what a full run found for this very graph
        n_cpu, err = old.get("inductor_kernels_cpu"), old.get("inductor_error")
    else:
        n_cpu, err = None, None
    meta = {
        "placeholders": list(inputs),
        "n_outputs": len(outs),
        "torch": torch.__version__,
        "kind": case.kind,
        "ops": list(case.ops),
        "dtypes": graph_dtypes(ep),
        "tags": [t for t in TAGS if t in case.tags],
        "decompositions": case.decompositions,
        "inductor_kernels_cpu": n_cpu,
        "inductor_kernels_cuda": old.get("inductor_kernels_cuda") if same_graph else None,
        "seed": case_seed(name),
    }
    if isinstance(case, DynCase):
        meta["dynamic"] = case.meta(ep)
    if err:
        meta["inductor_error"] = err
    if same_graph and old.get("inductor_error_cuda"):
        meta["inductor_error_cuda"] = old["inductor_error_cuda"]

    write_graph_files(folder, text, inputs, outs)
    write_if_changed(folder / "meta.json", meta_json(meta))
    return {"name": name, "seconds": time.time() - t0, "kernels": n_cpu, "inductor_error": err,
            "missing_ops": missing, "problem": problem}


def cuda_count(name: str, out_dir: str) -> dict:
    """Rebuild the case on cuda, compile it, and write only inductor_kernels_cuda (and
    inductor_error_cuda when Inductor fails) into the existing meta.json."""
    t0 = time.time()
    case = CASES[name]
    path = Path(out_dir) / name / "meta.json"
    meta = read_meta(path)
    if meta is None:
        return {"name": name, "seconds": 0.0, "kernels": None, "inductor_error": "no meta.json; capture first"}
    try:
        module, args = build_case(case, "cuda")
        ep = export_case(case, module, args)
        n, err = inductor_kernels(ep, args)
    except Exception as e:  # noqa: BLE001
        n, err = None, f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"[:400]
    meta["inductor_kernels_cuda"] = n
    meta.pop("inductor_error_cuda", None)
    if err:
        meta["inductor_error_cuda"] = err
    write_if_changed(path, meta_json(meta))
    return {"name": name, "seconds": time.time() - t0, "kernels": n, "inductor_error": err}


def _run_one(job: tuple) -> dict:
    mode, name, out_dir, inductor = job
    try:
        if mode == "cuda":
            return cuda_count(name, out_dir)
        return capture(name, out_dir, inductor)
    except Exception:  # noqa: BLE001 - report, keep going with the other cases
        return {"name": name, "seconds": 0.0, "kernels": None, "failed": traceback.format_exc()}


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="fixture folder (default tests/fixtures)")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--no-inductor", action="store_true",
                    help="skip the Inductor kernel count (keeps the previous count if the graph is unchanged)")
    ap.add_argument("--jobs", type=int, default=1, help="cases in parallel processes")
    ap.add_argument("--cuda-counts", action="store_true",
                    help="on a CUDA machine: write only inductor_kernels_cuda into existing meta.json files")
    opts = ap.parse_args(argv)

    names = list(CASES)
    if opts.only:
        wanted = [n.strip() for n in opts.only.split(",") if n.strip()]
        # A dynamic case's own name stands for its folders, one per size.
        wanted = [f for n in wanted for f in (DYNAMIC[n].folders() if n in DYNAMIC else [n])]
        unknown = [n for n in wanted if n not in CASES]
        if unknown:
            print(f"unknown case(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
            return 2
        names = wanted
    if opts.list:
        for n in names:
            c = CASES[n]
            what = c.describe() if isinstance(c, DynCase) else ' '.join(c.ops)
            print(f"{n:40} {c.kind:9} {','.join(c.tags):38} {what}")
        return 0

    mode = "cpu"
    if opts.cuda_counts:
        if not torch.cuda.is_available():
            print("--cuda-counts: no CUDA device here; nothing done", file=sys.stderr)
            return 0
        mode = "cuda"

    out_dir = str(Path(opts.out).resolve())
    jobs = [(mode, n, out_dir, not opts.no_inductor) for n in names]
    t0 = time.time()
    results = []
    setup_process()
    if opts.jobs <= 1:
        for job in jobs:
            results.append(_run_one(job))
            _report(results[-1], len(results), len(jobs))
    else:
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(opts.jobs, mp_context=ctx, initializer=setup_process) as pool:
            for r in pool.map(_run_one, jobs):
                results.append(r)
                _report(r, len(results), len(jobs))

    failed = [r for r in results if r.get("failed")]
    print(f"{len(results)} case(s) in {time.time() - t0:.0f} s; {len(failed)} failed")
    if mode == "cpu":
        known = set(CASES)
        stale = sorted(p.name for p in Path(out_dir).iterdir() if p.is_dir() and p.name not in known) \
            if Path(out_dir).is_dir() else []
        if stale:
            print(f"folders with no case in the table (delete them by hand): {', '.join(stale)}")
    return 1 if failed else 0


def _report(r: dict, i: int, n: int) -> None:
    line = f"[{i}/{n}] {r['name']}: {r['seconds']:.1f} s"
    if r.get("failed"):
        line += " FAILED\n" + r["failed"]
    else:
        line += f", kernels {r['kernels']}"
        for key in ("inductor_error", "problem"):
            if r.get(key):
                line += f"; {key}: {r[key]}"
        if r.get("missing_ops"):
            line += f"; ops under test not in the graph: {' '.join(r['missing_ops'])}"
    print(line, flush=True)


# ---------------------------------------------------------------------------------------------
# Op cases: NaN and infinities through reductions, norms and conversions. They are here, at the
# end, so that the `# File:` line numbers in the graphs of the cases above stay as they are.
# ---------------------------------------------------------------------------------------------

def special_rows(rows: int, cols: int, dtype: torch.dtype = f32, nan_only: bool = False) -> torch.Tensor:
    """Random rows, each but the first with one kind of special value at a different place: NaN
    inside, +inf first (the element a shifted sum starts from), +inf inside, -inf in the scalar
    tail of a vector loop, +inf and -inf together, NaN last. With nan_only every special is NaN
    (the mean of a row with an infinity is inf or NaN depending on the order eager sums in)."""
    t = torch.randn(rows, cols, dtype=f64)
    inf, nan = float("inf"), float("nan")
    marks = [(1, cols // 7, nan), (2, 0, inf), (3, cols // 2, inf), (4, cols - 1, -inf),
             (5, 1, inf), (5, cols - 2, -inf), (6, cols - 1, nan)]
    for r, c, v in marks:
        if r < rows:
            t[r, c] = nan if nan_only else v
    return t.to(dtype)


@op_case("var_special", [A.var.correction, A.var_mean.correction], ("odd", "noncontig"))
def _var_special(dev):
    """Every path of the variance over rows holding NaN or infinities: rows in vectors with a
    tail, columns (rows side by side; tiled over lanes in C++, looped in Triton), the whole
    tensor as one row, f64."""
    def fn(x, xc, xn, xd):
        v, vm = A.var.correction, A.var_mean.correction
        return (v(x, [1]), v(x, [1], correction=0), v(xc, [0]), v(x, None), v(x.t(), [0]),
                *vm(xn, [1]), vm(x, [1])[0], vm(xc, [0])[0], v(xd, [1]))
    return fn, [special_rows(7, 37), special_rows(20, 100).t().contiguous(), special_rows(7, 37, nan_only=True),
                special_rows(7, 37, f64)]


@op_case("layer_norm_special", [A.native_layer_norm.default], ("odd",))
def _layer_norm_special(dev):
    """A row holding NaN or an infinity normalizes to NaN, its rstd too."""
    def fn(x, w, b, xn, xh):
        ln = A.native_layer_norm.default
        y, _, rstd = ln(x, [37], w, b, 1e-5)
        yh, _, rstdh = ln(xh, [37], None, None, 1e-5)
        return (y, rstd, *ln(xn, [37], w, b, 1e-5), yh, rstdh)
    return fn, [special_rows(7, 37), make([37]), make([37]), special_rows(7, 37, nan_only=True),
                special_rows(7, 37, f16)]


@op_case("group_norm_special", [A.native_group_norm.default], ("odd",))
def _group_norm_special(dev):
    """A group holding NaN or an infinity normalizes to NaN (the same Welford as layer_norm's)."""
    def fn(x, w, b):
        y, _, rstd = A.native_group_norm.default(x, w, b, 7, 6, 37, 3, 1e-5)
        return y, rstd
    return fn, [special_rows(7, 6 * 37).reshape(7, 6, 37), make([6]), make([6])]


@op_case("softmax_special", [A._softmax.default, A._log_softmax.default], ("odd",))
def _softmax_special(dev):
    """Rows holding NaN or infinities, and a row of -inf only: NaN where eager gives NaN."""
    def fn(x):
        return A._softmax.default(x, 1, False), A._log_softmax.default(x, 1, False)
    x = special_rows(7, 37)
    x[0] = float("-inf")
    return fn, [x]


@op_case("reductions_special", [A.sum.dim_IntList, A.mean.dim, A.amax.default, A.amin.default, A.prod.dim_int,
                                A.max.dim, A.min.dim, A.argmax.default, A.cumsum.default], ("odd",))
def _reductions_special(dev):
    """NaN and infinities through the other reductions, over rows (vectors and tails) and over
    columns side by side: NaN wins max/min and their indices, inf - inf is NaN in sums."""
    def fn(x, xc):
        return (A.sum.dim_IntList(x, [1]), A.mean.dim(x, [1]), A.amax.default(x, [1]), A.amin.default(xc, [0]),
                A.prod.dim_int(x, 1), *A.max.dim(x, 1), *A.min.dim(xc, 0), A.argmax.default(x, 1),
                A.cumsum.default(x, 1), A.sum.dim_IntList(xc, [0]))
    return fn, [special_rows(7, 37), special_rows(20, 100).t().contiguous()]


@op_case("sign_special", [A.sign.default], ("odd",))
def _sign_special(dev):
    def fn(x, xd, xh, xb):
        return A.sign.default(x), A.sign.default(xd), A.sign.default(xh), A.sign.default(xb)
    return fn, [make([7, 13], f32, "special"), make([3, 5], f64, "special"), make([3, 5], f16, "special"),
                make([3, 5], bf16, "special")]


# Values whose conversion to an integer is out of range somewhere: NaN, infinities, beyond int64,
# int32, int16 and int8, negative values for uint8, halves, and the exact limits.
CAST_SPECIALS = (float("nan"), float("inf"), float("-inf"), 3e9, -3e9, 1e20, -1e20, 300.0, -300.0, 70000.0,
                 -70000.0, -1.5, 2.5, 2147483904.0, -2147483904.0, 2.0 ** 40 + 7, -(2.0 ** 40) - 7, 2.0 ** 63,
                 -(2.0 ** 63), 2147483520.0, -2147483648.0, 255.9, -0.9, 128.0, -129.0, 32768.0, -32769.0,
                 65535.0, 65536.5)


@op_case("to_copy_special", [A._to_copy.default], ("odd",))
def _to_copy_special(dev):
    """Floats to every integer dtype where the conversion is out of range: eager's own results,
    from each float dtype, the values shuffled over a 7x13 tensor (vector lanes and tails)."""
    ints = (i64, i32, i16, i8, u8, b8)

    def fn(*xs):
        return tuple(A._to_copy.default(x, dtype=dt) for x in xs for dt in ints)
    vals = torch.tensor(CAST_SPECIALS, dtype=f64)
    order = torch.randint(0, len(CAST_SPECIALS), (7 * 13,))
    order[: len(CAST_SPECIALS)] = torch.randperm(len(CAST_SPECIALS))
    x = vals[order].reshape(7, 13)
    return fn, [x.to(f32), x, x.to(f16), x.to(bf16)]


@op_case("pow_int_negative", [A.pow.Tensor_Tensor, A.pow.Scalar], ("odd", "broadcast"))
def _pow_int_negative(dev):
    """Integers to negative powers: 1, -1 or 0, as integer arithmetic gives 1 / base**-exp."""
    def fn(a, e, a32, e32, a8, e8):
        p = A.pow.Tensor_Tensor
        return (p(a, e), p(a32, e32), p(a8, e8), p(a[:1], e), A.pow.Scalar(2, e), A.pow.Scalar(-1, e))
    a = torch.randint(-3, 4, (7, 13))
    e = torch.randint(-5, 4, (7, 13))
    return fn, [a, e, a.to(i32), e.to(i32), a.to(i8), e.to(i8)]


@op_case("div_near_integer", [A.div.Tensor_mode, A.remainder.Tensor], ("odd",))
def _div_near_integer(dev):
    """a = k * b rounded to f32: the f32 quotient is often k exactly where the f64 one falls
    just short of it, so trunc and floor must divide in f32 as eager does."""
    def fn(a, b, ad, bd):
        d = A.div.Tensor_mode
        return (d(a, b, rounding_mode="trunc"), d(a, b, rounding_mode="floor"), A.remainder.Tensor(a, b),
                d(ad, bd, rounding_mode="trunc"), d(ad, bd, rounding_mode="floor"))
    b = make([7, 13], f32, "nonzero") * 0.37
    k = torch.randint(-20, 21, (7, 13)).to(f32)
    return fn, [k * b, b, (k * b).to(f64) * 3, b.to(f64) * 3]


# ---------------------------------------------------------------------------------------------
# Op cases: inverse and hyperbolic trigonometry, log10, copysign, fmax/fmin, hypot, several ops
# to a graph (issue 20's first batch). Here, at the end, for the same reason as the cases above.
# ---------------------------------------------------------------------------------------------

MATH_UNARY = {  # domain -> ops whose inputs come from it
    "unit": (A.acos.default, A.asin.default, A.atanh.default),
    "ge1": (A.acosh.default,),
    "pos": (A.log10.default,),
    "wide": (A.atan.default, A.asinh.default, A.cosh.default, A.sinh.default),
}
MATH_UNARY_OPS = [op for ops in MATH_UNARY.values() for op in ops]
MATH_SPECIALS = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
                 1e-30, -1e-30, 100.0, -100.0, 1e38, 0.999999, -0.999999, 1.000001, 80.0, -80.0)


def math_input(shape: Sequence[int], dtype: torch.dtype, dom: str) -> torch.Tensor:
    """Values in the domain of the ops of MATH_UNARY[dom]."""
    if dom == "ge1":
        return (make(shape, f32, "pos") + 1).to(dtype)
    return make(shape, dtype, dom)


def math_specials(shape: Sequence[int]) -> torch.Tensor:
    """MATH_SPECIALS, each at least once, the rest of the tensor drawn from them."""
    vals = torch.tensor(MATH_SPECIALS, dtype=f64)
    n = math.prod(shape)
    order = torch.randint(0, len(vals), (n,))
    order[: len(vals)] = torch.randperm(len(vals))
    return vals[order].reshape(list(shape))


@op_case("math_unary", MATH_UNARY_OPS, ("odd", "noncontig", "size1", "size0", "broadcast"))
def _math_unary(dev):
    """Each op over the layouts of the unary cases, on values in its domain, and over NaN,
    infinities, signed zeros and the edges of each domain (eager's NaN outside it)."""
    doms = list(MATH_UNARY)

    def fn(sp, *xs):
        outs = []
        for d, (x, xt, xs_, x0, xd, xe) in zip(doms, zip(*[iter(xs)] * 6)):
            for op in MATH_UNARY[d]:
                outs += [op(x), op(xt.t()), op(xs_[::2, 1::3]), op(x0), op(xd), op(xe.expand(4, 5, 13))]
        return tuple(outs) + tuple(op(sp) for op in MATH_UNARY_OPS)
    ins = [math_specials([7, 13]).to(f32)]
    for d in doms:
        ins += [math_input(s, f32, d) for s in ([7, 13], [13, 7], [9, 20], [0, 5], [], [5, 1])]
    return fn, ins


@op_case("math_unary_dtypes", MATH_UNARY_OPS, ("odd",))
def _math_unary_dtypes(dev):
    """Every other dtype eager accepts (integers and bools become the default float), and the
    specials in f64, f16 and bf16."""
    dts = [dt for dt in OTHER_DTYPES if all(accepts(op, (dt, [2])) for op in MATH_UNARY_OPS)]
    floats = [dt for dt in dts if dt.is_floating_point]
    ints = [dt for dt in dts if not dt.is_floating_point]
    n_doms = len(MATH_UNARY)

    def fn(*xs):
        outs = [op(x) for x in xs[: len(ints)] for op in MATH_UNARY_OPS]
        per_dom = xs[len(ints): len(ints) + n_doms * len(floats)]
        for k, x in enumerate(per_dom):
            outs += [op(x) for op in list(MATH_UNARY.values())[k % n_doms]]
        sp = xs[len(ints) + n_doms * len(floats):]
        return tuple(outs) + tuple(op(s) for s in sp for op in MATH_UNARY_OPS)
    ins = [make([3, 5], dt, "smallint") for dt in ints]
    ins += [math_input([3, 5], dt, d) for dt in floats for d in MATH_UNARY]
    ins += [math_specials([3, 7]).to(dt) for dt in (f64, f16, bf16)]
    return fn, ins


MATH_BINARY = (A.copysign.Tensor, A.fmax.default, A.fmin.default, A.hypot.default)
BINARY_SPECIALS = (float("nan"), -float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.0, -1.0, 2.5, -3.0)


def special_pairs() -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair of BINARY_SPECIALS, shuffled over a 10x10 tensor (vector lanes and tails)."""
    vals = torch.tensor(BINARY_SPECIALS, dtype=f64)
    n = len(vals)
    order = torch.randperm(n * n)
    return vals[order // n].reshape(n, n), vals[order % n].reshape(n, n)


@op_case("math_binary", list(MATH_BINARY) + [A.copysign.Scalar], ("odd", "noncontig", "size1", "size0", "broadcast"))
def _math_binary(dev):
    """copysign, fmax, fmin and hypot over the binary cases' shapes and broadcasts, and over
    every pair of NaN, infinities, signed zeros and numbers; the sign of a zero is made visible
    through a reciprocal (copysign of -0.0 and of NaN's sign bit)."""
    def fn(x, y, yr, xc, y0, xt, xs, x0, x3, y3, sa, sb, z):
        outs = []
        for f in MATH_BINARY:
            outs += [f(x, y), f(x, yr), f(yr, x), f(xc, yr), f(x, y0), f(xt.t(), y), f(xs[::2, ::2], yr),
                     f(x0, yr), f(x3, y3), f(sa, sb)]
        cs = A.copysign.Tensor
        outs += [A.reciprocal.default(cs(z, sb)), A.reciprocal.default(cs(sa, sb)), A.reciprocal.default(A.fmax.default(sa, sb)),
                 A.reciprocal.default(A.fmin.default(sa, sb))]
        outs += [A.copysign.Scalar(x, -1.5), A.copysign.Scalar(xt.t(), 0.0), A.copysign.Scalar(sa, -0.0),
                 A.reciprocal.default(A.copysign.Scalar(z, -0.0))]
        return tuple(outs)
    sa, sb = special_pairs()
    ins = [make([7, 13]), make([7, 13]), make([13]), make([7, 1]), make([]), make([13, 7]), make([13, 26]),
           make([0, 13]), make([2, 1, 5]), make([3, 1]), sa.to(f32), sb.to(f32), torch.zeros(10, 10)]
    return fn, ins


@op_case("math_binary_dtypes", list(MATH_BINARY) + [A.copysign.Scalar], ("odd", "broadcast"))
def _math_binary_dtypes(dev):
    """Same-dtype pairs of every dtype each op takes, the mixed pairs of type promotion, the
    Scalar overload of copysign on integers and bools, and the special pairs in f64, f16, bf16."""
    pairs = [((dt, [3, 5]), (dt, [3, 5])) for dt in OTHER_DTYPES] + list(MIXED_PAIRS)
    calls = [(f, k) for f in MATH_BINARY for k, (x, y) in enumerate(pairs) if accepts(f, x, y)]
    ins = [make(shape, dt, "smallint") for pair in pairs for dt, shape in pair]
    n_plain = len(ins)
    sa, sb = special_pairs()
    for dt in (f64, f16, bf16):
        ins += [sa.to(dt), sb.to(dt)]
    ints = [make([3, 5], dt, "smallint") for dt in (i64, i32, u8, b8)]
    ins += ints

    def fn(*xs):
        outs = [f(xs[2 * k], xs[2 * k + 1]) for f, k in calls]
        for k in range(3):
            a, b = xs[n_plain + 2 * k], xs[n_plain + 2 * k + 1]
            outs += [f(a, b) for f in MATH_BINARY]
        outs += [A.copysign.Scalar(x, -2) for x in xs[n_plain + 6:]]
        return tuple(outs)
    return fn, ins


@op_case("vector_norm", [A.linalg_vector_norm.default], ("odd", "noncontig", "size1", "size0"))
def _vector_norm(dev):
    """Every kind of order (2, 1, inf, -inf, 0, other positive and negative p) over dims, dim
    lists, all dims, keepdim, strided inputs, 0-dim and empty tensors, a requested dtype, low
    precision, and rows holding NaN or infinities."""
    n = A.linalg_vector_norm.default
    inf = float("inf")
    orders = (2, 1, inf, -inf, 0, 3, 0.5, -1, -2.5)

    def fn(x, x3, xt, xd, x0, xe, xh, xb, xf, sp):
        outs = [n(x), n(x, 2, [1]), n(x, 2, [0], True), n(x, 2, []), n(x3, 2, [0, 2]), n(x3, 1, [-1], True),
                n(xt.t(), 2, [1]), n(x[:, ::3], inf, [0]), n(xd), n(xd, 3, [0]), n(x0, 2, [1]), n(xe, 2, [1]),
                n(xe, 1, [1], True), n(x, 2, [1], False, dtype=torch.float64), n(xh, 2, [1], dtype=torch.float32),
                n(xh, 2, [1]), n(xb, 2, [1]), n(xb, inf, [0]), n(xf, 2, [1]), n(xf, 0.5, [0])]
        outs += [n(x, o, [1]) for o in orders[1:]]
        outs += [n(sp, o, [1]) for o in orders]
        return tuple(outs)
    return fn, [make([7, 13]), make([2, 3, 5]), make([13, 7]), make([]), make([0, 5]), make([3, 0]),
                make([5, 9], f16), make([5, 9], bf16), make([5, 9], f64), special_rows(7, 13)]


@op_case("repeat_diagonal", [A.repeat.default, A.diagonal.default], ("odd", "noncontig", "size1", "size0", "broadcast"))
def _repeat_diagonal(dev):
    """repeat with leading new dims, zero and one repeats, of strided, expanded, 0-dim and
    empty tensors; diagonal (a view) with positive, negative and out-of-range offsets, dims in
    either order, of strided inputs, and read by a later op (the view feeds an add)."""
    r, dg = A.repeat.default, A.diagonal.default

    def fn(x, x3, xd, x0, xe, xi, xb, y):
        return (r(x, [2, 3]), r(x, [2, 1, 3]), r(x3, [1, 2, 1]), r(x.t(), [3, 1]), r(x[:, ::2], [2, 2]),
                r(xd, [4]), r(xd, []), r(x0, [2, 3]), r(x, [0, 2]), r(xe.expand(3, 4), [1, 2]), r(xi, [3, 1]),
                r(xb, [2, 1, 2]),
                dg(x), dg(x, 2), dg(x, -3), dg(x, 20), dg(x3, 1, 0, 2), dg(x3, -1, 2, 0), dg(x3, 0, -1, -2),
                dg(x.t()), dg(x[1:, ::2], 1), dg(x0), dg(xi, 1), A.add.Tensor(dg(x, 1), y))
    return fn, [make([5, 7]), make([3, 4, 6]), make([]), make([0, 3]), make([3, 1]), make([4, 5], i64),
                make([3, 2], b8), make([5])]


@op_case("cumprod", [A.cumprod.default], ("odd", "noncontig", "size1", "size0"))
def _cumprod(dev):
    """cumprod along every dim, of strided, 0-dim and empty tensors, with a dtype, of integers
    (i64 results, wrapping) and bools, in low precision, and over zeros, NaN and infinities."""
    c = A.cumprod.default

    def fn(x, x3, xd, x0, xi, xi8, xb, xh, xbf, xf, sp, big):
        return (c(x, 1), c(x, 0), c(x, -1), c(x3, 1), c(x.t(), 1), c(x[:, ::2], 1), c(xd, 0), c(x0, 0), c(x0, 1),
                c(x, 1, dtype=torch.float64), c(xi, 1), c(xi8, 0), c(xb, 1), c(xh, 1), c(xbf, 1), c(xf, 0), c(sp, 1),
                c(big, 1), c(xh, 1, dtype=torch.float32), c(xi, 1, dtype=torch.float32))
    return fn, [make([5, 7], f32, "near1"), make([2, 40, 3], f32, "near1"), make([]), make([0, 4]),
                make([3, 7], i64, "smallint"), make([3, 5], i8, "smallint"), make([3, 5], b8), make([4, 6], f16, "near1"),
                make([4, 6], bf16, "near1"), make([4, 6], f64, "near1"), special_rows(7, 13),
                make([2, 30], i64, "wide")]


@op_case("matmul_linear", [A.matmul.default, A.linear.default], ("odd", "noncontig", "size0", "broadcast"))
def _matmul_linear(dev):
    """matmul over every rank pair it takes (1-D x 1-D, 1-D x 2-D, 2-D x 1-D, N-D x 2-D and
    x 1-D, 1-D and 2-D x N-D, batch dims broadcast), transposed and strided operands (a batch
    that no view can fold), empty batches; linear with and without bias, of 1-D to 4-D
    inputs, a transposed input, a bias over the whole result, and in f64."""
    mm, lin = A.matmul.default, A.linear.default

    def fn(v4, v4b, m54, m43, b254, b243, b2154, b346, m45t, w64, bias6, x3t, b56, d54, d64, d6, e054):
        return (mm(v4, v4b), mm(v4, m43), mm(m54, v4), mm(m54, m43), mm(b254, m43), mm(b254, v4), mm(v4, b243),
                mm(m54, b243), mm(b254, b243), mm(b2154, b346), mm(m45t.t(), m43), mm(x3t.transpose(0, 1), m43),
                mm(b254[:, ::2], m43), mm(e054, m43),
                lin(v4, w64, bias6), lin(m54, w64, bias6), lin(b254, w64, bias6), lin(b2154, w64, bias6),
                lin(m54, w64), lin(b254, w64), lin(x3t.transpose(0, 1), w64, bias6), lin(m54, w64, b56),
                lin(m54, v4), lin(d54, d64, d6), lin(e054, w64, bias6))
    return fn, [make([4]), make([4]), make([5, 4]), make([4, 3]), make([2, 5, 4]), make([2, 4, 3]),
                make([2, 1, 5, 4]), make([3, 4, 6]), make([4, 5]), make([6, 4]), make([6]), make([5, 2, 4]),
                make([5, 6]), make([5, 4], f64), make([6, 4], f64), make([6], f64), make([0, 5, 4])]


# ---------------------------------------------------------------------------------------------
# Dynamic shapes: graphs exported with symbolic dims (torch.export.Dim), each captured at several
# sizes. A fixture folder holds one input set, so every size is a case of its own,
# dyn_<name>_s<values>, and all of a case's folders hold the same graph.py, exported once at the
# case's example sizes; each folder has its own inputs and eager outputs. At the end of the file
# so that the `# File:` line numbers of the graphs above stay as they are.
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Dynamic:
    """One symbolic graph. `module()` is called right after seeding with dyn_<name> (so every
    size has the same weights); `inputs(*values)` is called with one value per Dim, in `dims`
    order, right after seeding with the folder's name (or with dyn_<name> for the example the
    graph is exported at) and returns the arguments, on the CPU. `shapes` gives, per argument,
    {dim index: Dim name}; every Dim is torch.export.Dim(name, min=2), since export specializes
    sizes 0 and 1. `sizes` holds one tuple of values per folder."""

    name: str
    kind: str                                  # "workload" (a function) or "model" (weights)
    module: Callable[[], nn.Module]
    inputs: Callable[..., list]
    dims: tuple[str, ...]
    shapes: tuple[dict[int, str], ...]
    sizes: tuple[tuple[int, ...], ...]      # here and in example, an int stands for a 1-tuple
    example: tuple[int, ...]

    @property
    def case(self) -> str:
        return "dyn_" + self.name

    def folder(self, values: tuple[int, ...]) -> str:
        return f"{self.case}_s" + "x".join(str(v) for v in values)

    def folders(self) -> list[str]:
        return [self.folder(v) for v in self.sizes]


@dataclasses.dataclass(frozen=True)
class DynCase(Case):
    """One size of a Dynamic case; `build` gives the module and this size's arguments."""

    dynamic: Dynamic | None = None
    values: tuple[int, ...] = ()

    def example_args(self, args: tuple) -> tuple:
        """The arguments the graph is exported at, on the device of `args`."""
        torch.manual_seed(case_seed(self.dynamic.case))
        dev = args[0].device
        return tuple(a.contiguous().to(dev) for a in self.dynamic.inputs(*self.dynamic.example))

    def dynamic_shapes(self, module: nn.Module) -> tuple:
        dims = {n: torch.export.Dim(n, min=2) for n in self.dynamic.dims}
        per_arg = tuple({i: dims[n] for i, n in s.items()} for s in self.dynamic.shapes)
        return (per_arg,) if isinstance(module, Fn) else per_arg   # Fn's forward takes *a

    def meta(self, ep) -> dict:
        """meta.json's "dynamic": each Dim's symbol in graph.py, the symbols' values in this
        folder and at export, and the symbolic shape of every placeholder that has one."""
        users = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
        vals = {n.name: n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"}
        symbol = {}
        shapes = {}
        for name, dims in zip(users, self.dynamic.shapes):
            if not dims:
                continue
            shape = vals[name].shape
            for i, d in dims.items():
                symbol[d] = str(shape[i])
            shapes[name] = [d if isinstance(d, int) else str(d) for d in shape]
        return {
            "dims": {d: symbol[d] for d in self.dynamic.dims},
            "sizes": {symbol[d]: v for d, v in zip(self.dynamic.dims, self.values)},
            "example": {symbol[d]: v for d, v in zip(self.dynamic.dims, self.dynamic.example)},
            "shapes": shapes,
        }

    def describe(self) -> str:
        """For --list: the symbolic shapes and this folder's values."""
        d = self.dynamic
        dims = " ".join(f"arg{k}[{i}]={n}" for k, s in enumerate(d.shapes) for i, n in s.items())
        return dims + ": " + " ".join(f"{n}={v}" for n, v in zip(d.dims, self.values))


DYNAMIC: dict[str, Dynamic] = {}   # by case name, dyn_<name>


def register_dynamic(d: Dynamic) -> None:
    sizes = tuple(v if isinstance(v, tuple) else (v,) for v in d.sizes)
    example = d.example if isinstance(d.example, tuple) else (d.example,)
    d = dataclasses.replace(d, sizes=sizes, example=example)
    assert d.case not in DYNAMIC and all(len(v) == len(d.dims) for v in sizes + (example,))
    DYNAMIC[d.case] = d
    for values in sizes:
        folder = d.folder(values)

        def build(dev, values=values, folder=folder):
            torch.manual_seed(case_seed(d.case))
            module = d.module()
            torch.manual_seed(case_seed(folder))
            return module, tuple(d.inputs(*values))

        tags = ("dynamic",) + (("odd",) if any(v % 2 for v in values) else ())
        add_case(DynCase(folder, d.kind, build, (), tags, dynamic=d, values=values))


class DynConv(nn.Module):
    """nn.Conv2d inside a module: exporting nn.Conv2d itself names its placeholder `input`, which
    shadows a Python builtin, and the printed graph then begins with an alias `input_1 = input`."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class DynLinearGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return F.gelu(self.fc(x))


class DynAttentionBlock(nn.Module):
    """Pre-norm self-attention over [b, s, 32], two heads, attention written with matmul and
    softmax (no scaled_dot_product_attention), then a residual."""

    def __init__(self, d: int = 32, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        return x + self.proj(y)


class DynTokenBlock(nn.Module):
    """GPT-style input: token and position embeddings (positions by arange over the symbolic
    sequence), layer norm, a linear layer with GELU, and a residual."""

    def __init__(self, vocab: int = 50, d: int = 16, positions: int = 64):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(positions, d)
        self.ln = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        return x + F.gelu(self.fc(self.ln(x)))


class DynPool(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 3, 1, 1) + F.avg_pool2d(x, 3, 1, 1), F.adaptive_avg_pool2d(x, 1)


SIZES = (2, 7, 16, 61)   # the smallest size export keeps symbolic, a prime, a power of two, a larger prime

for _d in (
    Dynamic("sum", "workload", lambda: Fn(lambda x: (x.sum(0), x.sum(1))),
            lambda n: [make([n, 24])], ("n",), ({0: "n"},), SIZES, 7),
    Dynamic("softmax_seq", "workload", lambda: Fn(lambda x: torch.softmax(x, -1)),
            lambda s: [make([2, 3, s])], ("seq",), ({2: "seq"},), SIZES, 7),
    Dynamic("softmax_seq_bf16", "workload", lambda: Fn(lambda x: torch.softmax(x, -1)),
            lambda s: [make([2, 3, s], bf16)], ("seq",), ({2: "seq"},), SIZES, 7),
    Dynamic("reshape", "workload",
            lambda: Fn(lambda x: (x.reshape(-1) * 2, x.reshape(x.shape[0] * 4, 8).sum(1))),
            lambda n: [make([n, 4, 8])], ("n",), ({0: "n"},), SIZES, 7),
    Dynamic("cat", "workload", lambda: Fn(lambda a, b: torch.cat([a, b])),
            lambda m, n: [make([m, 5]), make([n, 5])], ("m", "n"), ({0: "m"}, {0: "n"}),
            ((2, 3), (7, 2), (16, 5), (61, 9)), (7, 2)),
    Dynamic("conv2d_hw", "model", DynConv,
            lambda h, w: [make([1, 3, h, w])], ("h", "w"), ({2: "h", 3: "w"},),
            ((2, 5), (7, 11), (16, 16), (61, 9)), (7, 11)),
    Dynamic("matmul_inner", "workload", lambda: Fn(lambda a, b: a @ b),
            lambda k: [make([5, k]), make([k, 6])], ("k",), ({1: "k"}, {0: "k"}), SIZES, 7),
    Dynamic("linear_gelu", "model", DynLinearGelu, lambda n: [make([n, 16])], ("n",), ({0: "n"},), SIZES, 7),
    Dynamic("attention_block", "model", lambda: jitter_norms(DynAttentionBlock()),
            lambda b, s: [make([b, s, 32])], ("b", "s"), ({0: "b", 1: "s"},),
            ((2, 2), (3, 7), (4, 16), (2, 61)), (3, 7)),
):
    register_dynamic(_d)

# Further op families over symbolic sizes: means and variances, slices and padding, a scan,
# views that permute and broadcast, an embedding lookup with positions from arange, pooling.
for _d in (
    Dynamic("mean_var", "workload", lambda: Fn(lambda x: (x.mean(-1), x.var(0), torch.var_mean(x, 1)[1])),
            lambda n: [make([3, n, 5])], ("n",), ({1: "n"},), SIZES, 7),
    Dynamic("slice_pad", "workload",
            lambda: Fn(lambda x: (F.pad(x, (1, 2)) * 2, x.flip(1), x[:, -1], torch.roll(x, 1, 1))),
            lambda n: [make([4, n])], ("n",), ({1: "n"},), SIZES, 7),
    Dynamic("cumsum_seq", "workload", lambda: Fn(lambda x: (torch.cumsum(x, 1), torch.cumsum(x, 0))),
            lambda n: [make([3, n])], ("n",), ({1: "n"},), SIZES, 7),
    Dynamic("permute_expand", "workload",
            lambda: Fn(lambda x, y: (x.t() * 2, x.unsqueeze(0).expand(3, -1, -1) + y.reshape(1, 1, -1),
                                     x.transpose(0, 1).contiguous().view(-1))),
            lambda n: [make([n, 6]), make([6])], ("n",), ({0: "n"}, {}), SIZES, 7),
    Dynamic("token_block", "model", DynTokenBlock,
            lambda b, s: [torch.randint(0, 50, (b, s))], ("b", "s"), ({0: "b", 1: "s"},),
            ((2, 2), (3, 7), (4, 16), (2, 61)), (3, 7)),
    Dynamic("pool2d_hw", "workload", DynPool,
            lambda h, w: [make([2, 3, h, w])], ("h", "w"), ({2: "h", 3: "w"},),
            ((2, 4), (8, 6), (16, 16), (62, 10)), (8, 6)),
):
    register_dynamic(_d)


def pad_to_eight(x):
    """What scaled_dot_product_attention does to a mask on CUDA: padded to the next multiple
    of 8 (a pad of `8 - n % 8`, 8 where n is one already), then sliced back to n."""
    padded = F.pad(x, (0, 8 - x.shape[-1] % 8))
    return padded.sum(-1), padded[..., :x.shape[-1]] * 2


register_dynamic(Dynamic("pad_to_eight", "workload", lambda: Fn(pad_to_eight),
                         lambda n: [make([3, n])], ("n",), ({1: "n"},), SIZES + (8,), 7))

# Indices that divide by a symbolic size: a repeat reads x at (i % n), and a masked_scatter
# takes source elements by their flat position over [n, 4].
for _d in (
    Dynamic("repeat_scatter", "workload",
            lambda: Fn(lambda x, m, src: (x.repeat(2, 1, 3), x.masked_scatter(m, src))),
            lambda n: [make([3, n, 4]), torch.rand(3, n, 4) > 0.5, make([3, n, 4])], ("n",),
            ({1: "n"}, {1: "n"}, {1: "n"}), SIZES, 7),
):
    register_dynamic(_d)


if __name__ == "__main__":
    sys.exit(main())
