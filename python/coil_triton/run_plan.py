"""Runs the host program of coil's Triton backend with torch tensors.

    python run_plan.py PLAN.json --inputs IN.safetensors --save OUT.safetensors
                       [--device cpu|cuda] [--poison]
    python run_plan.py --batch RUNS.json [--device cpu|cuda] [--poison]

    --device cpu    (default) torch CPU tensors, the kernels run under Triton's interpreter
                    (TRITON_INTERPRET=1): no GPU needed, slow, for tests; its casts to
                    and from bf16 are made to round as a GPU does (fix_interpreter_bf16)
    --device cuda   torch CUDA tensors, the kernels compiled by Triton's JIT
    --poison        fill the arena with 0xFF bytes (NaN for floats) instead of zeros, so that
                    a kernel reading arena memory nothing wrote gives visibly wrong outputs
    --batch         many plans in one process (torch imported once): RUNS.json is a list of
                    {"plan", "inputs", "save"}; a plan that fails writes SAVE.error instead

`coil compile --device cuda` writes PLAN.json (launch_plan.json) next to one Triton module
per kernel (kernels/kernel0.py, ...). The plan:

    {"format": "coil-launch-plan", "version": 2,
     "symbols": [{"name": "s0", "input": 0, "dim": 0}],  a graph of symbolic sizes: each
                                                       symbol read from an input's dim
                                                       (or {"name", "value"}: fixed)
     "checks": [{"check": "s0 - 2 >= 0", "why": "..."}], what the sizes must pass
     "arena_bytes": 4096,                              one device arena, zeroed
     "buffers": [                                      flat storages of `elements` elements
        {"id": 0, "name": "a_0", "dtype": "f32", "elements": 1000, "place": "input", "index": 0},
        {"id": 3, "name": "buf3", "dtype": "f32", "elements": 1000, "place": "arena", "offset": 0},
        {"id": 4, "name": "buf4", "dtype": "f32", "elements": 1000, "place": "output", "index": 0}],
     "inputs":  [{"name": "a_0", "buffer": 0, "dtype": "f32", "sizes": [10, 100], "strides": [100, 1],
                  "offset": 0}],
     "outputs": [{"name": "out0", "buffer": 4, "dtype": "f32", "sizes": [10, 100], "strides": [100, 1],
                  "offset": 0, "alias": "none"}],       alias: none | input | output (informational)
     "steps": [
        {"kind": "launch", "kernel": "kernel0", "file": "kernels/kernel0.py", "grid": [1, 1, 1],
         "args": [0, 3], "sizes": ["s0"], "when": ["16 - s0 < 0", "s0 - 1024 <= 0"],
         "constexprs": {"XBLOCK": 1024}, "num_warps": 4, "num_stages": 1},
        {"kind": "extern", "kernel": "kernel1", "op": "addmm",
         "operands": [{"buffer": 2, "sizes": [5], "strides": [1], "offset": 0}, {"buffer": -1}, ...],
         "out": {"buffer": 4, "sizes": [10, 5], "strides": [5, 1], "offset": 0},
         "attrs": {"stride": [1, 1], "groups": [1], "transposed": [0], ...},
         "scalars": {"alpha": 1.0, "beta": 1.0}}]}

dtypes: f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool. A buffer lives in a graph input (the
input's tensor, read contiguous from IN, is written into a storage of `elements` through
its view), in a fresh zeroed storage for a graph output, or in the arena at a byte offset.
A launch passes the flat storage of each buffer in `args` (kernels index elements from the
storage's start), then the integers `sizes` (optional), and the constexprs as keywords;
`file` is relative to the plan's folder. A step with `when` runs only where each of its
conditions holds (one of a kernel's variants, launched in its size bucket).

Sizes: wherever the plan gives a size, stride, offset, element count, byte count or grid
dim, a string is an expression of the symbols (+ - * // %, min, max, as Python computes
them), evaluated at the sizes the inputs give; so are `sizes`, `when` and `checks` (with
== != < <= > >=). Sizes that fail a check are refused (status 2) naming it. Version 1
plans (no symbols) are read too.
An extern step calls torch.ops.aten.<op> on views of its operands ({"buffer": -1}: none)
and copies the result into the view `out`. An extern step with an "epilogue" (post-ops
fused onto the call, as coil's scheduler/epilogue.h names them) applies its "ops" to the
result in f32, in order, and copies the last value into the epilogue's view "out" instead:

        "epilogue": {"ops": [{"kind": "add", "alpha": 0, "beta": 0,
                              "operand": {"buffer": 2, "sizes": [10, 5], "strides": [0, 1], "offset": 0}},
                             {"kind": "relu", "alpha": 0, "beta": 0}],
                     "out": {"buffer": 4, "sizes": [10, 5], "strides": [5, 1], "offset": 0}} After the last step each output's view is
saved, contiguous, under its name.

Exit status: 0 on success; 1 when a step fails (the message names the plan, the step,
counted from 0 as in "steps", and its kernel); 2 for bad arguments, a bad plan or inputs
that do not match it.
"""

import argparse
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback
import warnings

PROG = "run_plan.py"

# The plan's dtype names: (safetensors name, torch attribute, bytes per element).
DTYPES = {
    "f64": ("F64", "float64", 8), "f32": ("F32", "float32", 4), "f16": ("F16", "float16", 2),
    "bf16": ("BF16", "bfloat16", 2), "i64": ("I64", "int64", 8), "i32": ("I32", "int32", 4),
    "i16": ("I16", "int16", 2), "i8": ("I8", "int8", 1), "u8": ("U8", "uint8", 1),
    "bool": ("BOOL", "bool", 1),
}
SAFETENSORS_DTYPES = {st: name for st, name, _ in DTYPES.values()}
PLACES = ("input", "output", "arena")
ALIASES = ("none", "input", "output")
# The post-ops of an extern step's epilogue (coil's scheduler/epilogue.h), and those that
# read a tensor.
POST_OPS = ("relu", "elu", "gelu_erf", "gelu_tanh", "tanh", "sigmoid", "silu", "hardswish", "exp", "log", "abs",
            "sqrt", "square", "linear", "clip", "pow", "add", "sub", "mul", "div")
BINARY_POST_OPS = ("add", "sub", "mul", "div")

# The extern ops and their operand counts (the aten arguments that follow: extern_args).
EXTERN_OPERANDS = {"mm": 2, "bmm": 2, "mv": 2, "addmm": 3, "baddbmm": 3, "addmv": 3, "convolution": 3}


class PlanError(Exception):
    """The plan, the arguments or the inputs are wrong: exit status 2."""


class StepError(Exception):
    """A step failed while running: exit status 1."""


# ---- safetensors ------------------------------------------------------------------------

def torch_dtype(torch, safetensors_name):
    return getattr(torch, SAFETENSORS_DTYPES[safetensors_name])


def read_safetensors(path):
    """{name: CPU tensor} of the safetensors file at `path` (its __metadata__ is ignored)."""
    import torch
    if sys.byteorder != "little":
        raise ValueError("safetensors data is little-endian; this machine is not")
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
    header_len = int.from_bytes(blob[:8], "little")
    if 8 + header_len > len(blob):
        raise ValueError(f"{path}: the header length {header_len} runs past the end of the file")
    header = json.loads(blob[8:8 + header_len])
    data = memoryview(blob)[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry.get("dtype") not in SAFETENSORS_DTYPES:
            raise ValueError(f"{path}: tensor '{name}' has dtype {entry.get('dtype')}, which is not read here")
        dtype = torch_dtype(torch, entry["dtype"])
        shape = [int(s) for s in entry["shape"]]
        begin, end = (int(o) for o in entry["data_offsets"])
        nbytes = math.prod(shape) * dtype.itemsize
        if not 0 <= begin <= end <= len(data) or end - begin != nbytes:
            raise ValueError(f"{path}: tensor '{name}' has data_offsets {[begin, end]} for {nbytes} bytes "
                             f"of {len(data)}")
        raw = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.uint8) if nbytes else \
            torch.empty(0, dtype=torch.uint8)
        tensors[name] = raw.view(dtype).reshape(shape)
    return tensors


def write_safetensors(path, tensors):
    """Writes {name: tensor} to `path` as safetensors, each tensor contiguous."""
    import torch
    names = {getattr(torch, name): st for st, name, _ in DTYPES.values()}
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        # A fresh tensor of standard strides: contiguous() keeps a one-element tensor's odd
        # stride (a column of one row), which the byte view below refuses.
        t = torch.empty(t.shape, dtype=t.dtype).copy_(t.detach())
        if t.dtype not in names:
            raise ValueError(f"tensor '{name}' has dtype {t.dtype}, which is not written here")
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    partial = path + ".partial"
    with open(partial, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for chunk in chunks:
            f.write(chunk)
    os.replace(partial, path)


# ---- the plan ---------------------------------------------------------------------------

def field(obj, key, kind, where, default=None):
    """obj[key], checked to be a `kind`; `default` when given and the key is absent."""
    if not isinstance(obj, dict):
        raise PlanError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        if default is not None:
            return default
        raise PlanError(f"{where}: '{key}' is missing")
    value = obj[key]
    # bool is an int in Python; a plan never means True by 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise PlanError(f"{where}: '{key}' is {json.dumps(value)}, expected {kind_name(kind)}")
    return value


def kind_name(kind):
    return {int: "an integer", str: "a string", list: "a list", dict: "an object"}[kind]


def int_list(obj, key, where):
    values = field(obj, key, list, where)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise PlanError(f"{where}: '{key}' is {json.dumps(values)}, expected a list of integers")
    return values


def check_view(view, buffers, where):
    """Checks that sizes/strides/offset of `view` stay inside its buffer's storage."""
    buffer = buffers.get(field(view, "buffer", int, where))
    if buffer is None:
        raise PlanError(f"{where}: buffer {view['buffer']} is not in 'buffers'")
    sizes, strides = int_list(view, "sizes", where), int_list(view, "strides", where)
    offset = field(view, "offset", int, where)
    if len(sizes) != len(strides) or min(sizes + strides + [offset], default=0) < 0:
        raise PlanError(f"{where}: bad view sizes {sizes} strides {strides} offset {offset}")
    if 0 not in sizes:
        last = offset + sum((s - 1) * st for s, st in zip(sizes, strides))
        if last >= buffer["elements"]:
            raise PlanError(f"{where}: the view reaches element {last} of buffer {buffer['id']}, "
                            f"which has {buffer['elements']}")
    return buffer


def check_buffers(plan, arena_bytes):
    """{id: buffer} of the plan, each with a known dtype and place inside its storage."""
    buffers = {}
    counts = {"input": len(field(plan, "inputs", list, "plan")), "output": len(field(plan, "outputs", list, "plan"))}
    for i, b in enumerate(field(plan, "buffers", list, "plan")):
        where = f"buffers[{i}]"
        bid = field(b, "id", int, where)
        if bid in buffers:
            raise PlanError(f"{where}: buffer id {bid} appears twice")
        if field(b, "dtype", str, where) not in DTYPES:
            raise PlanError(f"{where}: unknown dtype '{b['dtype']}' (known: {' '.join(DTYPES)})")
        if field(b, "elements", int, where) < 0:
            raise PlanError(f"{where}: negative 'elements'")
        place = field(b, "place", str, where)
        if place in counts:
            index = field(b, "index", int, where)
            if not 0 <= index < counts[place]:
                raise PlanError(f"{where}: {place} index {index} out of range (the plan has {counts[place]})")
        elif place == "arena":
            offset, itemsize = field(b, "offset", int, where), DTYPES[b["dtype"]][2]
            if offset < 0 or offset % itemsize:
                raise PlanError(f"{where}: byte offset {offset} is not a multiple of {itemsize} ({b['dtype']})")
            if offset + b["elements"] * itemsize > arena_bytes:
                raise PlanError(f"{where}: {b['elements']} x {b['dtype']} at byte offset {offset} do not fit "
                                f"an arena of {arena_bytes} bytes")
        else:
            raise PlanError(f"{where}: unknown place '{place}' (known: {' '.join(PLACES)})")
        buffers[bid] = b
    return buffers


def check_graph_values(plan, buffers, key):
    """Checks plan["inputs"] or plan["outputs"]: views of buffers of their own dtype."""
    for i, value in enumerate(plan[key]):
        where = f"{key}[{i}]"
        field(value, "name", str, where)
        buffer = check_view(value, buffers, where)
        if field(value, "dtype", str, where) != buffer["dtype"]:
            raise PlanError(f"{where}: dtype {value['dtype']} but buffer {buffer['id']} is {buffer['dtype']}")
        if key == "inputs" and (buffer["place"] != "input" or buffer["index"] != i):
            raise PlanError(f"{where}: buffer {buffer['id']} is not the storage of input {i}")
        if key == "outputs" and field(value, "alias", str, where, "none") not in ALIASES:
            raise PlanError(f"{where}: unknown alias '{value['alias']}' (known: {' '.join(ALIASES)})")


def check_step(step, buffers, plan_dir, where):
    """Checks one step: a launch of a kernel file that exists, or an extern op known here."""
    kind = field(step, "kind", str, where)
    field(step, "kernel", str, where)
    if kind == "launch":
        path = os.path.join(plan_dir, field(step, "file", str, where))
        if not os.path.isfile(path):
            raise PlanError(f"{where}: no kernel file {path}")
        grid = int_list(step, "grid", where)
        if not 1 <= len(grid) <= 3 or min(grid) < 0:
            raise PlanError(f"{where}: bad grid {grid}")
        missing = [a for a in int_list(step, "args", where) if a not in buffers]
        if missing:
            raise PlanError(f"{where}: args name buffers {missing} that are not in 'buffers'")
        if "sizes" in step:
            int_list(step, "sizes", where)
        field(step, "constexprs", dict, where, {})
        field(step, "num_warps", int, where, 4)
        field(step, "num_stages", int, where, 1)
    elif kind == "extern":
        if field(step, "op", str, where) not in EXTERN_OPERANDS:
            raise PlanError(f"{where}: unknown extern op '{step['op']}' (known: {' '.join(EXTERN_OPERANDS)})")
        operands = field(step, "operands", list, where)
        if len(operands) != EXTERN_OPERANDS[step["op"]]:
            raise PlanError(f"{where}: {step['op']} takes {EXTERN_OPERANDS[step['op']]} operands, not {len(operands)}")
        for j, operand in enumerate(operands):
            if field(operand, "buffer", int, f"{where}: operands[{j}]") != -1:
                check_view(operand, buffers, f"{where}: operands[{j}]")
        epilogue = field(step, "epilogue", dict, where) if "epilogue" in step else None
        if epilogue is None:
            check_view(field(step, "out", dict, where), buffers, f"{where}: out")
        else:
            for j, op in enumerate(field(epilogue, "ops", list, f"{where}: epilogue")):
                at = f"{where}: epilogue ops[{j}]"
                if field(op, "kind", str, at) not in POST_OPS:
                    raise PlanError(f"{at}: unknown post-op '{op['kind']}' (known: {' '.join(POST_OPS)})")
                if op["kind"] in BINARY_POST_OPS:
                    check_view(field(op, "operand", dict, at), buffers, f"{at}: operand")
            check_view(field(epilogue, "out", dict, f"{where}: epilogue"), buffers, f"{where}: epilogue out")
        field(step, "attrs", dict, where, {})
        field(step, "scalars", dict, where, {})
    else:
        raise PlanError(f"{where}: unknown kind '{kind}' (known: launch extern)")


def load_plan(path):
    """The plan at `path`, checked; raises PlanError."""
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError(f"cannot read the plan: {e}")
    if not isinstance(plan, dict) or plan.get("format") != "coil-launch-plan" or plan.get("version") not in (1, 2):
        raise PlanError("not a coil launch plan of version 1 or 2 ('format', 'version')")
    return plan


def check_plan(plan, path):
    """Checks `plan` (read from `path`, at the sizes of a call); raises PlanError."""
    arena_bytes = field(plan, "arena_bytes", int, "plan")
    if arena_bytes < 0:
        raise PlanError("plan: negative 'arena_bytes'")
    buffers = check_buffers(plan, arena_bytes)
    check_graph_values(plan, buffers, "inputs")
    check_graph_values(plan, buffers, "outputs")
    for i, step in enumerate(field(plan, "steps", list, "plan")):
        check_step(step, buffers, os.path.dirname(os.path.abspath(path)), f"step {i}")
    plan["buffers"] = buffers
    return plan


# ---- sizes ------------------------------------------------------------------------------

# The keys whose values are sizes (an integer, an expression, or a list of them).
SIZE_KEYS = ("arena_bytes", "elements", "offset", "sizes", "strides", "grid")


def evaluate(text, values, where):
    """The integer (or truth) of the size expression `text` at the symbols' `values`."""
    import ast
    import operator
    binary = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
              ast.Mod: operator.mod}
    compare = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
               ast.Gt: operator.gt, ast.GtE: operator.ge}

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise PlanError(f"{where}: '{text}' names {node.id}, which is not a symbol of the plan")
            return values[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in binary:
            right = value(node.right)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
                raise PlanError(f"{where}: '{text}' divides by zero")
            return binary[type(node.op)](value(node.left), right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max") \
                and len(node.args) == 2 and not node.keywords:
            return (min if node.func.id == "min" else max)(value(node.args[0]), value(node.args[1]))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in compare:
            return compare[type(node.ops[0])](value(node.left), value(node.comparators[0]))
        raise PlanError(f"{where}: '{text}' is not a size expression")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise PlanError(f"{where}: '{text}' is not a size expression")
    return value(tree.body)


def symbol_values(plan, tensors):
    """{symbol: value} read from the input tensors' shapes as plan["symbols"] says."""
    values = {}
    inputs = field(plan, "inputs", list, "plan")
    for i, symbol in enumerate(field(plan, "symbols", list, "plan", [])):
        where = f"symbols[{i}]"
        name = field(symbol, "name", str, where)
        if "value" in symbol:  # read from no input: the value compiled for
            values[name] = field(symbol, "value", int, where)
            continue
        index, dim = field(symbol, "input", int, where), field(symbol, "dim", int, where)
        if not 0 <= index < len(inputs):
            raise PlanError(f"{where}: input {index} out of range (the plan has {len(inputs)})")
        input_name = field(inputs[index], "name", str, f"inputs[{index}]")
        if input_name not in tensors:
            raise PlanError(f"input {index} '{input_name}' is not in the inputs file")
        shape = list(tensors[input_name].shape)
        if not 0 <= dim < len(shape):
            raise PlanError(f"{where}: input '{input_name}' has {len(shape)} dims, not a dim {dim}")
        values[name] = shape[dim]
    return values


def at_sizes(plan, values):
    """The plan with every size evaluated at `values` and the steps whose `when` fails
    dropped; a PlanError naming the first check the sizes fail."""
    given = ", ".join(f"{k} = {v}" for k, v in values.items())
    for i, c in enumerate(field(plan, "checks", list, "plan", [])):
        if not evaluate(field(c, "check", str, f"checks[{i}]"), values, f"checks[{i}]"):
            raise PlanError(f"the compiled graph does not serve the sizes {given}: it needs {c['check']} "
                            f"({c.get('why') or '?'})")

    def resolve(obj, where, sizes=False):
        if isinstance(obj, dict):
            return {k: resolve(v, f"{where}.{k}", k in SIZE_KEYS) for k, v in obj.items()}
        if isinstance(obj, list):
            return [resolve(v, f"{where}[{i}]", sizes) for i, v in enumerate(obj)]
        if sizes and isinstance(obj, str):
            return evaluate(obj, values, where)
        return obj

    out = resolve({k: v for k, v in plan.items() if k not in ("symbols", "checks")}, "plan")
    if isinstance(out.get("steps"), list):
        steps = []
        for i, step in enumerate(out["steps"]):
            when = step.pop("when", []) if isinstance(step, dict) else []
            if not isinstance(when, list) or not all(isinstance(w, str) for w in when):
                raise PlanError(f"step {i}: 'when' is {json.dumps(when)}, expected a list of strings")
            if all(evaluate(w, values, f"step {i}: when") for w in when):
                steps.append(step)
        out["steps"] = steps
    return out


# ---- Triton's interpreter ----------------------------------------------------------------

def f32_to_bf16_bits(values):
    """The bf16 bit patterns (uint16) nearest `values`, ties to even, NaN kept NaN."""
    import numpy as np
    f32 = np.asarray(values, dtype=np.float32)
    bits = f32.view(np.uint32).astype(np.uint64)  # wide enough that adding the bias cannot wrap
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    quiet_nan = ((bits >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(f32), quiet_nan, rounded)


def bf16_bits_to_f32(bits):
    import numpy as np
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def fix_interpreter_scalar_index():
    """Makes an integer argument of a kernel usable as a loop bound in Triton's interpreter.

    The interpreter holds a scalar argument as a one-element array of one dim and gives its
    tensors `__index__` as int() of that array, which numpy 2 refuses (only an array of no
    dims converts): `range(0, s0, RBLOCK)` over a size argument failed. This reads the one
    element instead. A Triton without these internals is left as it is.
    """
    try:
        from triton.runtime import interpreter
        patch_tensor = interpreter._patch_lang_tensor
    except (ImportError, AttributeError):
        return
    if getattr(patch_tensor, "coil_scalar_index", False):
        return

    def patch_tensor_and_index(tensor, scope):
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patch_tensor_and_index.coil_scalar_index = True
    interpreter._patch_lang_tensor = patch_tensor_and_index


def fix_interpreter_bf16():
    """Makes Triton's interpreter convert to and from bf16 by value, rounding to nearest even.

    The interpreter keeps bf16 values as their raw uint16 bits. Triton 3.6 casts f32 to bf16
    there by truncation (a GPU and torch round to nearest even) and other types to or from
    bf16 as numpy casts of the raw bits (an int32 3 became a denormal). This replaces the
    cast of a bf16 source or destination with one through f32; every other cast is
    Triton's. Arithmetic on bf16 values stays wrong in the interpreter (it adds the bits):
    kernels compute in f32. A Triton without these internals is left as it is.
    """
    try:
        from triton.runtime import interpreter
        builder, handle, bf16 = interpreter.InterpreterBuilder, interpreter.TensorHandle, interpreter.tl.bfloat16
        triton_cast, np_dtype = builder.cast_impl, interpreter._get_np_dtype
    except (ImportError, AttributeError):
        return
    if getattr(triton_cast, "coil_bf16", False):
        return

    def cast_impl(self, src, dst_type):
        src_ty, dst_ty = src.dtype.scalar, dst_type.scalar
        if (src_ty == bf16) == (dst_ty == bf16):
            return triton_cast(self, src, dst_type)
        values = bf16_bits_to_f32(src.data) if src_ty == bf16 else src.data
        if dst_ty == bf16:
            return handle(f32_to_bf16_bits(values), dst_ty)
        return handle(values.astype(np_dtype(dst_type)), dst_ty)

    cast_impl.coil_bf16 = True
    builder.cast_impl = cast_impl


# The libdevice functions coil's kernels call, by name without the __nv_ prefix and the f
# of the float version, and the numpy function that computes the same.
LIBDEVICE_IN_NUMPY = {
    "tanh": "tanh", "tan": "tan", "pow": "power", "atan2": "arctan2", "expm1": "expm1",
    "log1p": "log1p", "nearbyint": "rint", "rint": "rint", "trunc": "trunc", "fmod": "fmod",
    "acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh", "asinh": "arcsinh",
    "atanh": "arctanh", "cosh": "cosh", "sinh": "sinh", "log10": "log10", "copysign": "copysign",
    "hypot": "hypot",
}


def run_libdevice_in_interpreter():
    """Lets Triton's interpreter run libdevice calls, which it refuses, through numpy.

    A generated kernel calls libdevice where Triton has no op of its own (tanh, pow, atan2,
    ...). On a GPU those are NVIDIA's functions; here they are numpy's of the same name,
    in the same dtype: results agree to the last bits or so, which the tolerances allow.
    """
    try:
        import numpy as np
        from triton.runtime import interpreter
        builder = interpreter.InterpreterBuilder
    except (ImportError, AttributeError):
        return

    def create_extern_elementwise(self, lib_name, lib_path, symbol, args, ret_type, is_pure):
        name = symbol[len("__nv_"):] if symbol.startswith("__nv_") else symbol
        fn = LIBDEVICE_IN_NUMPY.get(name) or (LIBDEVICE_IN_NUMPY.get(name[:-1]) if name.endswith("f") else None)
        if fn is None:
            raise NotImplementedError(f"libdevice's {symbol} has no numpy form in Triton's interpreter")
        scalar = getattr(ret_type, "scalar", ret_type)
        with np.errstate(all="ignore"):
            values = getattr(np, fn)(*[a.data for a in args])
        return interpreter.TensorHandle(np.asarray(values).astype(interpreter._get_np_dtype(scalar)), scalar)

    builder.create_extern_elementwise = create_extern_elementwise

    # The interpreter hands its builder only to triton.language's own builtins: libdevice's
    # are given it too, for the kernels that import the module.
    patch_lang = interpreter._patch_lang
    if getattr(patch_lang, "coil_libdevice", False):
        return

    def patch_lang_and_libdevice(fn):
        scope = patch_lang(fn)
        for value in list(fn.__globals__.values()):
            if inspect.ismodule(value) and value.__name__.endswith("libdevice"):
                interpreter._patch_builtin(value, interpreter.interpreter_builder, scope)
        return scope

    patch_lang_and_libdevice.coil_libdevice = True
    interpreter._patch_lang = patch_lang_and_libdevice


# ---- running ----------------------------------------------------------------------------

def view_of(storage, view):
    """The strided view {"sizes", "strides", "offset"} of a flat storage.

    as_strided's offset counts from the start of the underlying memory, not of `storage`
    (an arena buffer starts inside the arena): the storage's own offset is added.
    """
    return storage.as_strided(view["sizes"], view["strides"], storage.storage_offset() + view["offset"])


def allocate(plan, device, poison):
    """{buffer id: flat storage tensor}; the arena is one uint8 tensor all arena buffers view."""
    import torch
    arena = torch.full((plan["arena_bytes"],), 0xFF if poison else 0, dtype=torch.uint8, device=device)
    storages = {}
    for bid, b in plan["buffers"].items():
        dtype = getattr(torch, DTYPES[b["dtype"]][1])
        if b["place"] == "arena":
            begin = b["offset"]
            storages[bid] = arena[begin:begin + b["elements"] * dtype.itemsize].view(dtype)
        else:
            storages[bid] = torch.zeros(b["elements"], dtype=dtype, device=device)
    return storages


def write_inputs(plan, storages, tensors):
    """Writes each graph input from `tensors` into its buffer through the input's view."""
    import torch
    for i, value in enumerate(plan["inputs"]):
        name = value["name"]
        if name not in tensors:
            raise PlanError(f"input {i} '{name}' is not in the inputs file")
        t = tensors[name]
        dtype = getattr(torch, DTYPES[value["dtype"]][1])
        if t.dtype != dtype or list(t.shape) != value["sizes"]:
            raise PlanError(f"input {i} '{name}' is {str(t.dtype).replace('torch.', '')}{list(t.shape)} in the "
                            f"inputs file, but the plan wants {DTYPES[value['dtype']][1]}{value['sizes']}")
        view_of(storages[value["buffer"]], value).copy_(t)


def load_kernel(path, function, modules):
    """The @triton.jit function `function` of the module at `path` (each file loaded once)."""
    path = os.path.abspath(path)
    if path not in modules:
        # One module name per file: two kernels of one stem from different folders stay apart.
        name = f"coil_plan_kernel_{len(modules)}_{abs(hash(path)):x}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        # Triton's JIT reads the function's source through inspect, which finds it by module.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        modules[path] = module
    if not hasattr(modules[path], function):
        raise ValueError(f"{path} defines no function '{function}'")
    return getattr(modules[path], function)


def run_launch(step, storages, plan_dir, device, modules):
    """Launches one Triton kernel on the flat storages of its argument buffers."""
    fn = load_kernel(os.path.join(plan_dir, step["file"]), step["kernel"], modules)
    args = [storages[a] for a in step["args"]] + list(step.get("sizes", []))
    options = {}
    if device == "cuda":  # the interpreter would take them, and ignore them
        options = {"num_warps": step.get("num_warps", 4), "num_stages": step.get("num_stages", 1)}
    fn[tuple(step["grid"])](*args, **step.get("constexprs", {}), **options)


def extern_args(step, operands):
    """(positional, keyword) arguments of torch.ops.aten.<op>.default for an extern step."""
    op, attrs, scalars = step["op"], step.get("attrs", {}), step.get("scalars", {})
    if op in ("addmm", "baddbmm", "addmv"):
        return operands, {"beta": scalars.get("beta", 1.0), "alpha": scalars.get("alpha", 1.0)}
    if op == "convolution":
        extra = [list(attrs.get("stride", [1])), list(attrs.get("padding", [0])), list(attrs.get("dilation", [1])),
                 bool(attrs.get("transposed", [0])[0]), list(attrs.get("output_padding", [0])),
                 int(attrs.get("groups", [1])[0])]
        return operands + extra, {}
    return operands, {}  # mm, bmm, mv


def apply_post_op(op, y, storages):
    """One post-op of an epilogue on the running value y (f32)."""
    import torch
    import torch.nn.functional as F
    kind, a, b = op["kind"], op.get("alpha", 0.0), op.get("beta", 0.0)
    if kind in BINARY_POST_OPS:
        t = view_of(storages[op["operand"]["buffer"]], op["operand"]).float()
        return {"add": lambda: y + t, "sub": lambda: y - t, "mul": lambda: y * t, "div": lambda: y / t}[kind]()
    return {
        "relu": lambda: torch.where(y < 0, a * y, y),
        "elu": lambda: torch.where(y > 0, y, a * torch.expm1(y)),
        "gelu_erf": lambda: F.gelu(y),
        "gelu_tanh": lambda: F.gelu(y, approximate="tanh"),
        "tanh": lambda: torch.tanh(y),
        "sigmoid": lambda: torch.sigmoid(y),
        "silu": lambda: F.silu(y),
        "hardswish": lambda: F.hardswish(y),
        "exp": lambda: torch.exp(y),
        "log": lambda: torch.log(y),
        "abs": lambda: torch.abs(y),
        "sqrt": lambda: torch.sqrt(y),
        "square": lambda: y * y,
        "linear": lambda: a * y + b,
        "clip": lambda: torch.clamp(y, a, b),
        "pow": lambda: a * torch.pow(y, b),
    }[kind]()


def run_extern(step, storages):
    """Calls the step's aten op on views of its operands; copies the result into `out`, or
    applies the epilogue's post-ops and copies the last value into the epilogue's `out`."""
    import torch
    operands = [None if o["buffer"] == -1 else view_of(storages[o["buffer"]], o) for o in step["operands"]]
    args, kwargs = extern_args(step, operands)
    result = getattr(torch.ops.aten, step["op"]).default(*args, **kwargs)
    target = step["out"]
    if "epilogue" in step:
        target = step["epilogue"]["out"]
        y = result.float()
        for op in step["epilogue"]["ops"]:
            y = apply_post_op(op, y, storages)
        result = y
    out = view_of(storages[target["buffer"]], target)
    if result.shape != out.shape:
        raise ValueError(f"aten.{step['op']} returned shape {list(result.shape)}, but 'out' is {list(out.shape)}")
    out.copy_(result)


def kernel_line(error, path, shown):
    """' (SHOWN line N)' for the innermost frame of `error` (or its causes) in the kernel file `path`."""
    path, found, seen = os.path.abspath(path), "", set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for frame in traceback.extract_tb(error.__traceback__):
            if os.path.abspath(frame.filename) == path:
                found = f" ({shown} line {frame.lineno})"
        error = error.__cause__ or error.__context__
    return found


def describe(error):
    """The exception as one line: its type and message, the message's lines joined."""
    text = " / ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def run_steps(plan, storages, plan_dir, device):
    """Runs every step in order; raises StepError naming the step that failed."""
    import torch
    modules = {}
    for i, step in enumerate(plan["steps"]):
        try:
            if step["kind"] == "launch":
                run_launch(step, storages, plan_dir, device, modules)
            else:
                run_extern(step, storages)
            if device == "cuda":  # a fault belongs to the step that made it
                torch.cuda.synchronize()
        except Exception as e:  # every failure is reported as its step's
            where = ""
            if step["kind"] == "launch":
                where = kernel_line(e, os.path.join(plan_dir, step["file"]), step["file"])
            raise StepError(f"step {i} ({step['kernel']}){where}: {describe(e)}") from e


def prepare(device):
    """Imports torch and Triton for `device` (cpu: Triton's interpreter)."""
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # read when triton.jit wraps the kernels
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as e:
        raise PlanError(f"{sys.executable} cannot run plans: {e}")
    if device == "cpu":
        fix_interpreter_bf16()
        fix_interpreter_scalar_index()
        run_libdevice_in_interpreter()
        # numpy's notes on what kernels do on purpose (NaN to int casts, wrapping integers).
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"triton\.")
    if device == "cuda" and not torch.cuda.is_available():
        raise PlanError("--device cuda, but torch sees no CUDA device")


def run_one(plan_path, inputs, save, device, poison):
    """Runs one plan on the inputs file `inputs` (or None) and writes its outputs to `save`."""
    plan = load_plan(plan_path)
    if inputs is None and plan.get("inputs"):
        raise PlanError(f"the plan has {len(plan['inputs'])} inputs, and no --inputs file was given")
    try:
        tensors = read_safetensors(inputs) if inputs else {}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PlanError(f"cannot read the inputs: {e}")
    plan = check_plan(at_sizes(plan, symbol_values(plan, tensors)), plan_path)
    storages = allocate(plan, device, poison)
    write_inputs(plan, storages, tensors)
    run_steps(plan, storages, os.path.dirname(os.path.abspath(plan_path)), device)
    outputs = {value["name"]: view_of(storages[value["buffer"]], value) for value in plan["outputs"]}
    try:
        write_safetensors(save, outputs)
    except (OSError, ValueError) as e:
        raise StepError(f"cannot write the outputs: {e}")


def run(args):
    """Runs the plan of `args`; returns the exit status."""
    plan = load_plan(args.plan)
    if not plan.get("symbols"):  # before importing torch: a bad plan fails fast
        check_plan(at_sizes(plan, {}), args.plan)
    prepare(args.device)
    run_one(args.plan, args.inputs, args.save, args.device, args.poison)
    return 0


def run_batch(args):
    """Runs every plan of the batch file, one after another in this process (torch and
    Triton imported once); a plan that fails leaves SAVE.error with the message instead of
    SAVE. Returns 0 when every plan ran, 1 otherwise."""
    with open(args.batch) as f:
        runs = json.load(f)
    prepare(args.device)
    status = 0
    for r in runs:
        try:
            run_one(r["plan"], r.get("inputs"), r["save"], args.device, args.poison)
        except (PlanError, StepError) as e:
            with open(r["save"] + ".error", "w") as f:
                f.write(f"{PROG}: {r['plan']}: {e}\n")
            status = 1
    return status


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description="Runs a coil launch plan with torch tensors.")
    parser.add_argument("plan", metavar="PLAN.json", nargs="?")
    parser.add_argument("--inputs", metavar="IN.safetensors", help="the graph inputs, by name")
    parser.add_argument("--save", metavar="OUT.safetensors", help="where the outputs go")
    parser.add_argument("--batch", metavar="RUNS.json",
                        help='instead of PLAN.json: a list of {"plan", "inputs", "save"} to run in one process')
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--poison", action="store_true", help="fill the arena with 0xFF bytes instead of zeros")
    args = parser.parse_args(argv)  # exits with status 2 on bad arguments
    if (args.plan is None) == (args.batch is None) or (args.plan is not None and args.save is None):
        parser.error("give PLAN.json with --save OUT.safetensors, or --batch RUNS.json")
    return args


def main(argv):
    args = parse_args(argv[1:])
    try:
        return run_batch(args) if args.batch else run(args)
    except PlanError as e:
        print(f"{PROG}: {args.plan or args.batch}: {e}", file=sys.stderr)
        return 2
    except StepError as e:
        print(f"{PROG}: {args.plan}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
