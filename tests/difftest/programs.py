"""Random programs over coil's ops: what a program is, how it runs in eager PyTorch, how one is drawn.

A program is plain data (JSON), so a failing one can be saved, shrunk and replayed:

  {"inputs":  [{"shape": [3, 5], "dtype": "f32", "fill": "special"}, ...],   # a0, a1, ...
   "nodes":   [{"id": "v0", "op": "add", "args": ["a0", "a1"], "p": {}}, ...],
   "outputs": ["v3", "v1"],
   "decompositions": "empty" | "default",
   "seed": 17}

Each op of OPS is a function of tensors and JSON parameters. Drawing a program evaluates every
candidate node eagerly on the program's own inputs and keeps it only if PyTorch accepts it, so
every drawn program is one eager PyTorch runs; what coil makes of it is the test.
"""

from __future__ import annotations

import math
import random
from typing import Callable

import torch
import torch.nn.functional as F

DTYPES = {"b8": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i32": torch.int32, "i64": torch.int64,
          "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
DTYPE_NAME = {v: k for k, v in DTYPES.items()}

# f32 most often; the rest for promotion corners. Integer and bool inputs reach float ops too.
INPUT_DTYPES = ["f32"] * 8 + ["f16", "bf16", "f64", "i64", "i32", "i8", "u8", "b8"]
FILLS = ["normal"] * 5 + ["special", "special", "smallint", "denormal"]
SIZES = [1, 1, 2, 3, 4, 5, 7, 8, 16, 17, 33]

# The smallest positive subnormal-ish value of each float dtype (a few steps above the smallest,
# so that it survives a cast back and forth).
DENORMAL = {torch.float16: 1e-6, torch.bfloat16: 1e-39, torch.float32: 1e-39, torch.float64: 1e-310}


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def make_input(spec: dict, gen: torch.Generator) -> torch.Tensor:
    """A contiguous tensor for one input spec. `special` mixes in nan, +-inf, -0.0 and a denormal;
    `denormal` is mostly denormals; `smallint` integers in [-4, 4] (so comparisons see ties)."""
    shape, dtype, fill = spec["shape"], DTYPES[spec["dtype"]], spec["fill"]
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) < 0.5
    if not dtype.is_floating_point:
        lo = 0 if dtype == torch.uint8 else -4
        return torch.randint(lo, 9, shape, generator=gen).to(dtype)
    if fill == "smallint":
        return torch.randint(-4, 5, shape, generator=gen).to(dtype)
    t = torch.randn(shape, generator=gen, dtype=torch.float64)
    if fill == "denormal":
        t = t * DENORMAL[dtype]
    elif fill == "special" and t.numel() > 0:
        flat = t.view(-1)
        picks = torch.randint(0, flat.numel(), (max(1, flat.numel() // 4),), generator=gen)
        specials = torch.tensor([math.nan, math.inf, -math.inf, -0.0, DENORMAL[dtype]], dtype=torch.float64)
        flat[picks] = specials[torch.randint(0, len(specials), (len(picks),), generator=gen)]
    return t.to(dtype)


def make_inputs(prog: dict) -> list[torch.Tensor]:
    """Each input from its own seed, so that it has the same values in a batch of programs."""
    return [make_input(s, torch.Generator().manual_seed(s["seed"])) for s in prog["inputs"]]


def merge(progs: list[dict]) -> dict:
    """Independent programs as one: inputs and nodes renamed apart, outputs one after another."""
    merged = {"seed": progs[0]["seed"], "inputs": [], "nodes": [], "outputs": [],
              "decompositions": progs[0]["decompositions"]}
    for k, prog in enumerate(progs):
        rename = {f"a{i}": f"a{len(merged['inputs']) + i}" for i in range(len(prog["inputs"]))}
        rename.update({n["id"]: f"p{k}{n['id']}" for n in prog["nodes"]})
        merged["inputs"] += prog["inputs"]
        merged["nodes"] += [dict(n, id=rename[n["id"]], args=[rename[a] for a in n["args"]]) for n in prog["nodes"]]
        merged["outputs"] += [rename[o] for o in prog["outputs"]]
    return merged


# ---------------------------------------------------------------------------------------------
# The ops: name -> function(*tensors, **params)
# ---------------------------------------------------------------------------------------------

UNARY: dict[str, Callable] = {
    "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "abs": torch.abs,
    "neg": torch.neg, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "sign": torch.sign,
    "reciprocal": torch.reciprocal, "erf": torch.erf, "expm1": torch.expm1, "log1p": torch.log1p,
    "log2": torch.log2, "exp2": torch.exp2, "isnan": torch.isnan, "isinf": torch.isinf,
    "logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "softplus": F.softplus, "elu": F.elu, "leaky_relu": F.leaky_relu,
    "hardtanh": F.hardtanh, "square": torch.square, "clone": torch.clone,
}

BINARY: dict[str, Callable] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
    "minimum": torch.minimum, "pow": torch.pow, "atan2": torch.atan2, "fmod": torch.fmod,
    "remainder": torch.remainder, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
    "gt": torch.gt, "ge": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
}

REDUCTIONS: dict[str, Callable] = {
    "sum": lambda x, dims, keep: x.sum(dims, keepdim=keep) if dims else x.sum(),
    "mean": lambda x, dims, keep: x.mean(dims, keepdim=keep) if dims else x.mean(),
    "amax": lambda x, dims, keep: x.amax(dims, keepdim=keep),
    "amin": lambda x, dims, keep: x.amin(dims, keepdim=keep),
    "prod": lambda x, dims, keep: x.prod(dims[0], keepdim=keep) if dims else x.prod(),
    "var": lambda x, dims, keep: x.var(dims or None, keepdim=keep),
    "std": lambda x, dims, keep: x.std(dims or None, keepdim=keep),
    "var0": lambda x, dims, keep: x.var(dims or None, correction=0, keepdim=keep),
    "argmax": lambda x, dims, keep: x.argmax(dims[0], keepdim=keep) if dims else x.argmax(),
    "argmin": lambda x, dims, keep: x.argmin(dims[0], keepdim=keep) if dims else x.argmin(),
    "any": lambda x, dims, keep: x.any(dims[0], keepdim=keep) if dims else x.any(),
    "all": lambda x, dims, keep: x.all(dims[0], keepdim=keep) if dims else x.all(),
    "max_dim": lambda x, dims, keep: x.max(dims[0], keepdim=keep).values if dims else x.max(),
    "min_dim": lambda x, dims, keep: x.min(dims[0], keepdim=keep).values if dims else x.min(),
    "var_mean": lambda x, dims, keep: torch.var_mean(x, dims or None, keepdim=keep)[0],
    "logsumexp": lambda x, dims, keep: torch.logsumexp(x, dims, keepdim=keep),
}


def _index(x, dim, idx):
    return x[(slice(None),) * dim + (torch.tensor(idx),)]


def _gather(x, dim, idx):
    return torch.gather(x, dim, torch.tensor(idx).reshape([len(idx) if d == dim else 1 for d in range(x.dim())])
                        .expand([len(idx) if d == dim else x.shape[d] for d in range(x.dim())]))


OPS: dict[str, Callable] = {
    **{k: (lambda f: lambda x: f(x))(f) for k, f in UNARY.items()},
    **{k: (lambda f: lambda x, y: f(x, y))(f) for k, f in BINARY.items()},
    **{k: (lambda f: lambda x, s: f(x, s))(f) for k, f in (("add_s", torch.add), ("mul_s", torch.mul),
                                                            ("sub_s", torch.sub), ("div_s", torch.div),
                                                            ("pow_s", torch.pow), ("gt_s", torch.gt),
                                                            ("eq_s", torch.eq), ("remainder_s", torch.remainder),
                                                            ("fmod_s", torch.fmod))},
    "rpow_s": lambda x, s: torch.pow(s, x),
    "div_mode": lambda x, y, mode: torch.div(x, y, rounding_mode=mode),
    **{k: (lambda f: lambda x, dims, keep: f(x, dims, keep))(f) for k, f in REDUCTIONS.items()},
    "cumsum": lambda x, dim: torch.cumsum(x, dim),
    "permute": lambda x, perm: x.permute(perm),
    "transpose": lambda x, d0, d1: x.transpose(d0, d1),
    "slice": lambda x, dim, start, end, step: x[(slice(None),) * dim + (slice(start, end, step),)],
    "select": lambda x, dim, i: x.select(dim, i),
    "unsqueeze": lambda x, dim: x.unsqueeze(dim),
    "squeeze": lambda x, dim: x.squeeze(dim),
    "expand": lambda x, shape: x.expand(shape),
    "reshape": lambda x, shape: x.reshape(shape),
    "flip": lambda x, dims: x.flip(dims),
    "split": lambda x, size, dim, i: torch.split(x, size, dim)[i],
    "cat": lambda x, y, dim: torch.cat([x, y], dim),
    "softmax": lambda x, dim: torch.softmax(x, dim),
    "log_softmax": lambda x, dim: torch.log_softmax(x, dim),
    "layer_norm": lambda x, k: F.layer_norm(x, x.shape[x.dim() - k:]),
    "where": lambda c, x, y: torch.where(c, x, y),
    "where_s": lambda c, x, s: torch.where(c, x, s),
    "masked_fill": lambda x, c, s: x.masked_fill(c, s),
    "matmul": lambda x, y: torch.matmul(x, y),
    "matmul_t": lambda x: torch.matmul(x, x.transpose(-1, -2)),
    "index": _index,
    "index_select": lambda x, dim, idx: torch.index_select(x, dim, torch.tensor(idx)),
    "gather": _gather,
    "to": lambda x, dtype: x.to(DTYPES[dtype]),
    "clamp": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "pad": lambda x, pad, value: F.pad(x, pad, value=value),
    "tril": lambda x, k: torch.tril(x, k),
    "triu": lambda x, k: torch.triu(x, k),
    "add_arange": lambda x: x + torch.arange(x.shape[-1]),
    "zeros_like_add": lambda x: x + torch.zeros_like(x),
}


# ---------------------------------------------------------------------------------------------
# Running a program eagerly
# ---------------------------------------------------------------------------------------------

def gpu_cast(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """x.to(dtype) as CUDA eager's conversion kernel converts a float to an integer: toward
    zero, saturating; NaN to 0 from f32 (f16, bf16) to int32, else to the minimum; int8 and
    int16 through int32 and uint8 through int64, wrapping. (CPU eager gives INT_MIN for any
    value out of range.)"""
    t = DTYPES[dtype]
    if not x.is_floating_point() or t.is_floating_point or t == torch.bool:
        return x.to(t)
    wide = torch.int64 if t in (torch.int64, torch.uint8) else torch.int32
    top = 2.0 ** (torch.iinfo(wide).bits - 1)
    nan = 0.0 if wide == torch.int32 and x.dtype != torch.float64 else -top
    v = torch.nan_to_num(x.double(), nan=nan, posinf=top, neginf=-top)
    # Below the top in double: 2^63 - 1024 is the largest double under 2^63.
    converted = v.clamp(-top, top - (1024 if wide == torch.int64 else 1)).to(wide)
    return torch.where(v >= top, torch.iinfo(wide).max, converted).to(t)


def as_function(prog: dict, gpu_casts: bool = False) -> Callable:
    """The program as a Python function of its inputs, for eager runs and torch.export; with
    gpu_casts, converting floats to integers as CUDA eager does (gpu_cast)."""
    def fn(*inputs):
        env = {f"a{i}": t for i, t in enumerate(inputs)}
        for node in prog["nodes"]:
            op = gpu_cast if gpu_casts and node["op"] == "to" else OPS[node["op"]]
            env[node["id"]] = op(*(env[a] for a in node["args"]), **node["p"])
        return tuple(env[o] for o in prog["outputs"])
    return fn


def converts_float_to_int(prog: dict, inputs: list[torch.Tensor]) -> bool:
    """Whether a node converts a float to an integer, where the devices' eager results differ."""
    env = eager_values(prog, inputs) or {}
    return any(n["op"] == "to" and env.get(n["args"][0]) is not None and env[n["args"][0]].is_floating_point()
               and not DTYPES[n["p"]["dtype"]].is_floating_point and DTYPES[n["p"]["dtype"]] != torch.bool
               for n in prog["nodes"])


def eager_values(prog: dict, inputs: list[torch.Tensor]) -> dict[str, torch.Tensor] | None:
    """Every value of the program, or None when eager PyTorch rejects one of its nodes."""
    env = {f"a{i}": t for i, t in enumerate(inputs)}
    try:
        for node in prog["nodes"]:
            out = OPS[node["op"]](*(env[a] for a in node["args"]), **node["p"])
            if not isinstance(out, torch.Tensor):
                return None
            env[node["id"]] = out
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None
    return env


# ---------------------------------------------------------------------------------------------
# Drawing a program
# ---------------------------------------------------------------------------------------------

def draw_shape(rng: random.Random) -> list[int]:
    rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
    shape = [rng.choice(SIZES) for _ in range(rank)]
    if rank and rng.random() < 0.06:
        shape[rng.randrange(rank)] = 0          # an empty tensor
    while math.prod(shape) > 4096:
        shape[shape.index(max(shape))] //= 2
    return shape


def draw_input(rng: random.Random, like: list[int] | None, seed: int) -> dict:
    """An input spec; with `like`, a shape that broadcasts against it (dims dropped or set to 1)."""
    shape = draw_shape(rng) if like is None else broadcastable_to(rng, like)
    return {"shape": shape, "dtype": rng.choice(INPUT_DTYPES), "fill": rng.choice(FILLS), "seed": seed}


def broadcastable_to(rng: random.Random, shape: list[int]) -> list[int]:
    out = list(shape[rng.randrange(len(shape) + 1):]) if shape and rng.random() < 0.3 else list(shape)
    return [1 if rng.random() < 0.25 else s for s in out]


def draw_dims(rng: random.Random, rank: int) -> list[int]:
    if rank == 0:
        return []
    k = rng.randint(1, rank)
    return sorted(rng.sample(range(rank), k))


def draw_scalar(rng: random.Random, x: torch.Tensor):
    if x.dtype.is_floating_point or rng.random() < 0.3:
        return rng.choice([0.5, -1.5, 2.0, 3.0, 1e-3, 0.0, -0.0, math.inf, -math.inf, math.nan])
    return rng.choice([0, 1, 2, 3, -2, 7])


def draw_reshape(rng: random.Random, shape: list[int]) -> list[int]:
    n = math.prod(shape)
    if n == 0 or rng.random() < 0.4:
        return [-1] if rng.random() < 0.5 else [n]
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    d = rng.choice(divisors)
    return [d, n // d] if rng.random() < 0.7 else [d, 1, n // d]


def draw_params(rng: random.Random, op: str, x: torch.Tensor) -> dict | None:
    """Parameters of `op` for its first operand x (None when the op does not fit x)."""
    r, shape = x.dim(), list(x.shape)
    if op in REDUCTIONS:
        dims = [] if rng.random() < 0.25 else draw_dims(rng, r)
        return {"dims": dims, "keep": rng.random() < 0.4}
    if op in ("cumsum", "softmax", "log_softmax", "unsqueeze", "squeeze"):
        hi = r + 1 if op == "unsqueeze" else r
        if hi == 0 and op in ("cumsum", "softmax", "log_softmax", "squeeze"):
            return {"dim": 0} if op in ("softmax", "log_softmax", "cumsum") else None
        return {"dim": rng.randrange(hi)}
    if op == "permute":
        perm = list(range(r))
        rng.shuffle(perm)
        return {"perm": perm} if r >= 2 else None
    if op == "transpose":
        return {"d0": rng.randrange(r), "d1": rng.randrange(r)} if r >= 2 else None
    if op == "slice":
        if r == 0:
            return None
        dim = rng.randrange(r)
        n = shape[dim]
        start = rng.randint(-n, n) if rng.random() < 0.2 else rng.randint(0, max(0, n - 1))
        return {"dim": dim, "start": start, "end": rng.choice([None, rng.randint(0, n + 2)]),
                "step": rng.choice([1, 1, 2, 3])}
    if op == "select":
        live = [d for d in range(r) if shape[d] > 0]
        if not live:
            return None
        dim = rng.choice(live)
        return {"dim": dim, "i": rng.randint(-shape[dim], shape[dim] - 1)}
    if op == "expand":
        new = [rng.choice([2, 3, 5]) if s == 1 and rng.random() < 0.7 else s for s in shape]
        return {"shape": ([rng.choice([2, 3])] if rng.random() < 0.3 else []) + new}
    if op == "reshape":
        return {"shape": draw_reshape(rng, shape)}
    if op == "flip":
        return {"dims": draw_dims(rng, r)} if r else None
    if op == "split":
        if r == 0:
            return None
        dim = rng.randrange(r)
        size = rng.randint(1, max(1, shape[dim]))
        pieces = max(1, math.ceil(shape[dim] / size))
        return {"size": size, "dim": dim, "i": rng.randrange(pieces)}
    if op == "layer_norm":
        return {"k": rng.randint(1, r)} if r else None
    if op in ("index", "index_select", "gather"):
        live = [d for d in range(r) if shape[d] > 0]
        if not live:
            return None
        dim = rng.choice(live)
        idx = [rng.randrange(-shape[dim] if op == "index" else 0, shape[dim]) for _ in range(rng.randint(1, 5))]
        return {"dim": dim, "idx": idx}
    if op == "to":
        return {"dtype": rng.choice(list(DTYPES))}
    if op == "clamp":
        lo = rng.choice([None, -1.0, -0.5, 0])
        return {"lo": lo, "hi": rng.choice([1.0, 2, 0.25] if lo is not None else [1.0, 0.5])}
    if op == "pad":
        k = rng.randint(1, min(r, 2)) if r else 0
        if k == 0:
            return None
        return {"pad": [rng.randint(-1 if rng.random() < 0.2 else 0, 2) for _ in range(2 * k)],
                "value": rng.choice([0.0, 1.5, -1.0])}
    if op in ("tril", "triu"):
        return {"k": rng.randint(-2, 2)} if r >= 2 else None
    if op == "div_mode":
        return {"mode": rng.choice(["floor", "trunc"])}
    return {}


# Weights of the op families: every family drawn often enough in a few hundred programs.
FAMILIES = [
    (list(UNARY), 14), (list(BINARY), 16), (["add_s", "mul_s", "sub_s", "div_s", "pow_s", "gt_s", "eq_s",
                                             "remainder_s", "fmod_s", "rpow_s"], 6),
    (["div_mode"], 2), (list(REDUCTIONS), 12), (["cumsum"], 1),
    (["permute", "transpose", "slice", "select", "unsqueeze", "squeeze", "expand", "reshape", "flip",
      "split"], 14), (["cat"], 3), (["softmax", "log_softmax", "layer_norm"], 5),
    (["where", "where_s", "masked_fill"], 4), (["matmul", "matmul_t"], 3),
    (["index", "index_select", "gather"], 4), (["to"], 5), (["clamp", "pad", "tril", "triu"], 3),
    (["add_arange", "zeros_like_add"], 1),
]

# Ops whose extra operands are more values of the program.
TWO_TENSORS = set(BINARY) | {"div_mode", "cat", "matmul"}


def draw_op(rng: random.Random) -> str:
    total = sum(w for _, w in FAMILIES)
    pick = rng.uniform(0, total)
    for ops, w in FAMILIES:
        if pick < w:
            return rng.choice(ops)
        pick -= w
    return FAMILIES[-1][0][0]


def draw_node(rng: random.Random, env: dict[str, torch.Tensor], nid: str) -> dict | None:
    """One candidate node over the values in env (None when the drawn op does not fit)."""
    op = draw_op(rng)
    names = list(env)
    x = rng.choice(names[-3:] if rng.random() < 0.6 else names)   # prefer chains
    p = draw_params(rng, op, env[x])
    if p is None:
        return None
    args = [x]
    if op in TWO_TENSORS:
        args.append(rng.choice(names))
        if op == "cat":
            p["dim"] = rng.randrange(max(1, env[x].dim()))
    elif op in ("where", "where_s"):
        args = [rng.choice(names), x] + ([rng.choice(names)] if op == "where" else [])
        if op == "where_s":
            p["s"] = draw_scalar(rng, env[x])
    elif op == "masked_fill":
        args.append(rng.choice(names))
        p["s"] = draw_scalar(rng, env[x])
    elif op.endswith("_s"):
        p["s"] = draw_scalar(rng, env[x])
    return {"id": nid, "op": op, "args": args, "p": p}


def fits(node: dict, env: dict[str, torch.Tensor]) -> torch.Tensor | None:
    """The node's value when eager PyTorch takes it (a mask operand must be bool) and its meta
    function agrees on the value's dtype and shape, else None."""
    if node["op"] in ("where", "where_s", "masked_fill"):
        mask = env[node["args"][0 if node["op"] != "masked_fill" else 1]]
        if mask.dtype != torch.bool:
            return None
    try:
        out = OPS[node["op"]](*(env[a] for a in node["args"]), **node["p"])
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None
    if not isinstance(out, torch.Tensor) or out.numel() > 1 << 16:
        return None
    try:   # the traced graph's annotations come from meta functions: they must agree with eager
        meta = OPS[node["op"]](*(env[a].to("meta") for a in node["args"]), **node["p"])
    except (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError):
        return out
    if meta.dtype != out.dtype or meta.shape != out.shape:
        return None   # PyTorch disagrees with itself (an empty i64 matrix times a bool vector is bool in eager)
    return out


def draw_program(seed: int) -> dict:
    """A program of 1 to 8 nodes over 1 to 3 inputs, each node accepted by eager PyTorch."""
    rng = random.Random(seed)
    first = draw_input(rng, None, seed * 4)
    specs = [first] + [draw_input(rng, first["shape"] if rng.random() < 0.7 else None, seed * 4 + 1 + i)
                       for i in range(rng.choice([0, 1, 1, 2]))]
    prog = {"seed": seed, "inputs": specs, "nodes": [], "outputs": [],
            "decompositions": "empty" if seed % 2 == 0 else "default"}
    env = {f"a{i}": t for i, t in enumerate(make_inputs(prog))}
    want = rng.randint(1, 8)
    for attempt in range(want * 20):
        if len(prog["nodes"]) == want:
            break
        node = draw_node(rng, env, f"v{len(prog['nodes'])}")
        value = fits(node, env) if node else None
        if value is None:
            continue
        prog["nodes"].append(node)
        env[node["id"]] = value
    if not prog["nodes"]:
        prog["nodes"].append({"id": "v0", "op": "clone", "args": ["a0"], "p": {}})
    prog["outputs"] = pick_outputs(rng, prog)
    return prog


def pick_outputs(rng: random.Random, prog: dict) -> list[str]:
    """Every node nothing else reads (so no node is dead), the last one first, at most three."""
    used = {a for n in prog["nodes"] for a in n["args"]}
    sinks = [n["id"] for n in reversed(prog["nodes"]) if n["id"] not in used]
    return sinks[:1] + rng.sample(sinks[1:], min(2, len(sinks) - 1))
