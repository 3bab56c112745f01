#!/usr/bin/env python3
"""How coil's compile time and memory grow with the size of a graph.

Writes graphs of N nodes as FX text (no torch needed) and times `coil compile` on them:

  chain  N pointwise ops, each on the one before: relu(x * 2 + 1)... (fusion's longest path)
  cat    one aten.cat of N inputs (the widest node)
  deep   N/4 layers of x - x.sum(-1, keepdim=True), then x * 0.5 (reductions and broadcasts)

usage:
  growth_bench.py emit KIND N             print the graph
  growth_bench.py run [--coil PATH] [--kinds chain,cat,deep] [--sizes 1000,2000,...] [--args "..."]
                                          compile each and print seconds and peak memory;
                                          --args adds to `coil compile` (the stages up to the
                                          kernel sources alone: --args "--device cuda --set
                                          triton.python=none", no Triton, no C++ compiler)
Results and what they mean: bench/README.md ("Compile time by graph size").
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HEADER = "class GraphModule(torch.nn.Module):\n"
POINTWISE = [("mul.Tensor", "2"), ("add.Tensor", "1"), ("sub.Tensor", "0.5"), ("relu.default", None)]


def node(name, ty, op, args):
    return f'        {name}: "{ty}" = torch.ops.aten.{op}({args})\n'


def chain(n, size=1024):
    ty = f"f32[{size}][1]cpu"
    out = [HEADER, f'    def forward(self, x: "{ty}"):\n']
    prev = "x"
    for i in range(n):
        op, scalar = POINTWISE[i % len(POINTWISE)]
        out.append(node(f"v{i}", ty, op, prev if scalar is None else f"{prev}, {scalar}"))
        prev = f"v{i}"
    out.append(f"        return ({prev},)\n")
    return "".join(out)


def cat(n, size=16):
    ty = f"f32[{size}][1]cpu"
    params = ", ".join(f'x{i}: "{ty}"' for i in range(n))
    inputs = ", ".join(f"x{i}" for i in range(n))
    return "".join([HEADER, f"    def forward(self, {params}):\n",
                    node("out", f"f32[{size * n}][1]cpu", "cat.default", f"[{inputs}]"),
                    "        return (out,)\n"])


def deep(n, rows=64, cols=256):
    ty, row_ty = f"f32[{rows}, {cols}][{cols}, 1]cpu", f"f32[{rows}, 1][1, 1]cpu"
    out = [HEADER, f'    def forward(self, x: "{ty}"):\n']
    prev = "x"
    for i in range(max(n // 4, 1)):
        out.append(node(f"s{i}", row_ty, "sum.dim_IntList", f"{prev}, [-1], True"))
        out.append(node(f"d{i}", ty, "sub.Tensor", f"{prev}, s{i}"))
        out.append(node(f"m{i}", ty, "mul.Tensor", f"d{i}, 0.5"))
        out.append(node(f"r{i}", ty, "relu.default", f"m{i}"))
        prev = f"r{i}"
    out.append(f"        return ({prev},)\n")
    return "".join(out)


KINDS = {"chain": chain, "cat": cat, "deep": deep}


def compile_once(coil, text, workdir, extra):
    """Seconds, peak resident MiB and status of one `coil compile` of `text`."""
    path = os.path.join(workdir, "graph.py")
    with open(path, "w") as f:
        f.write(text)
    start = time.perf_counter()
    child = subprocess.Popen([coil, "compile", path, "--out", os.path.join(workdir, "out"), *extra],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest so far
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return seconds, usage.ru_maxrss / 1024, "ok" if code == 0 else f"exit {code}: {last[:120]}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    emit = sub.add_parser("emit")
    emit.add_argument("kind", choices=KINDS)
    emit.add_argument("n", type=int)
    run = sub.add_parser("run")
    run.add_argument("--coil", default="build/coil")
    run.add_argument("--kinds", default="chain,cat,deep")
    run.add_argument("--sizes", default="1000,2000,4000,8000,16000")
    run.add_argument("--args", default="", help="more arguments of coil compile")
    a = p.parse_args()
    if a.command == "emit":
        sys.stdout.write(KINDS[a.kind](a.n))
        return
    print(f"{'graph':<8} {'nodes':>7} {'seconds':>9} {'peak MiB':>9}  status")
    for kind in a.kinds.split(","):
        for n in (int(s) for s in a.sizes.split(",")):
            with tempfile.TemporaryDirectory() as workdir:
                seconds, peak, status = compile_once(a.coil, KINDS[kind](n), workdir, a.args.split())
            print(f"{kind:<8} {n:>7} {seconds:9.2f} {peak:9.0f}  {status}", flush=True)


if __name__ == "__main__":
    main()
