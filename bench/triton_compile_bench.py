"""Time of compiling N Triton kernels in one run of coil's helper, by number of workers.

    python bench/triton_compile_bench.py [--kernels N] [--workers 1,8]

Runs python/coil_triton/compile_kernels.py on a job of N distinct kernels (pointwise,
reductions and matrix products with different block sizes), once per worker count, with
the interpreter running this script. Needs triton; no GPU.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HELPER = os.path.join(os.path.dirname(__file__), "..", "python", "coil_triton", "compile_kernels.py")

SOURCES = {
    "add": ("(x_ptr, y_ptr, out_ptr, n, XBLOCK: tl.constexpr)", """
    offsets = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * SCALE + tl.load(y_ptr + offsets, mask=mask), mask)
""", {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "XBLOCK": "constexpr"}, "XBLOCK", 4),
    "rowsum": ("(in_ptr, out_ptr, xnumel, rnumel, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr)", """
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rindex = tl.arange(0, RBLOCK)[None, :]
    mask = (xindex < xnumel) & (rindex < rnumel)
    values = tl.load(in_ptr + rindex + rnumel * xindex, mask, other=0.0) * SCALE
    tl.store(out_ptr + xindex, tl.sum(values, 1)[:, None], xindex < xnumel)
""", {"in_ptr": "*fp32", "out_ptr": "*fp32", "xnumel": "i32", "rnumel": "i32", "XBLOCK": "constexpr",
      "RBLOCK": "constexpr"}, "RBLOCK", 8),
    "matmul": ("(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr)", """
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc * SCALE)
""", {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr",
      "BN": "constexpr", "BK": "constexpr"}, "BM", 8),
}


def kernel(folder, i):
    """The i-th kernel: a family in turn, a block size and a constant of its own (no two alike)."""
    family = list(SOURCES)[i % len(SOURCES)]
    params, body, signature, block, warps = SOURCES[family]
    name = f"{family}_{i}"
    constexprs = {"XBLOCK": 256 << (i % 4)} if family == "add" else \
        {"XBLOCK": 4, "RBLOCK": 128 << (i % 3)} if family == "rowsum" else {"BM": 64 << (i % 2), "BN": 128, "BK": 64}
    out_dir = os.path.join(folder, name)
    os.makedirs(out_dir)
    source = os.path.join(out_dir, name + ".py")
    with open(source, "w") as f:
        f.write(f"import triton\nimport triton.language as tl\n\nSCALE = tl.constexpr({i + 1}.0)\n\n\n"
                f"@triton.jit\ndef {name}{params}:{body}")
    return {"name": name, "source": source, "signature": signature, "constexprs": constexprs,
            "num_warps": warps, "out_dir": out_dir}


def run(kernels, workers):
    with tempfile.TemporaryDirectory() as folder:
        job = os.path.join(folder, "job.json")
        with open(job, "w") as f:
            json.dump({"workers": workers, "kernels": [kernel(folder, i) for i in range(kernels)]}, f)
        start = time.perf_counter()
        subprocess.run([sys.executable, HELPER, job], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=32)
    parser.add_argument("--workers", default="1,8")
    args = parser.parse_args()
    print(f"{'kernels':>8} {'workers':>8} {'seconds':>8} {'ms/kernel':>10}")
    for workers in [int(w) for w in args.workers.split(",")]:
        seconds = run(args.kernels, workers)
        print(f"{args.kernels:>8} {workers:>8} {seconds:>8.2f} {1000 * seconds / args.kernels:>10.0f}")


if __name__ == "__main__":
    main()
