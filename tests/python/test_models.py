"""The model suite (bench/model_zoo.py) at tiny sizes through the real
torch.compile(model, backend="coil") on the CPU: each model matches eager as
tests/python/model_tolerance.py says (float64 reference, coil's error at most 3x eager's),
and coil compiles its graphs: none falls back to eager whole, and the ops left to eager
between coil's parts are named and must be none.

    python tests/python/test_models.py        (the Python of .venv, coil installed in it)
"""
import copy
import os
import sys
import time
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from model_zoo import build, dynamic_sizes, resized  # noqa: E402
from test_backend import assert_model_close, compare_with_eager, no_fallback  # noqa: E402

# Every model of the suite once (the bench's gpt2_b8 is gpt2_b1 at another size).
SUITE = ["resnet50", "mobilenetv3", "convnext", "vit", "gpt2_b1", "bert", "llama"]


def check(test, name, device="cpu", dtype=torch.float32):
    from coil import backend

    torch.manual_seed(0)
    model, args = build(name, device, dtype, tiny=True)
    start = time.perf_counter()
    graphs = []  # what coil.explain reports, per graph compiled in the block
    backend._listeners.append(graphs)
    try:
        with no_fallback():
            compare_with_eager(test, model, *args)
    finally:
        backend._listeners.remove(graphs)
    print(f"{name} ({device}, {dtype}): {len(graphs)} graph(s) in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    test.assertTrue(graphs, f"{name}: coil compiled no graph")
    eager_parts = [p["name"] + ": " + p["why"] for g in graphs for p in g["parts"] if not p["compiled"]]
    test.assertEqual(eager_parts, [], f"{name}: parts left to eager PyTorch")
    test.assertEqual([op for g in graphs for op in g["eager_ops"]], [], f"{name}: ops left to eager PyTorch")


# The models whose graphs keep every size symbolic to the end on the CPU: no meta function,
# graph pass, lowering, fusion, memory plan or C++ code generation fixes a size to one value
# (a range guard, such as a slice's `s0 <= 64`, may remain). The CNNs' image sizes are fixed
# by the graph itself, whose convolutions PyTorch gives strides of the traced size.
SYMBOLIC_THROUGHOUT = {"vit", "gpt2_b1", "bert", "llama"}
# The models whose guards fix a symbol (ConvNeXt's views check `max(s53 // 4, 1)` against
# `s53 // 4`), so that coil compiles their graph for each size; every other model's graph
# is compiled once and serves every size.
COMPILED_PER_SIZE = {"convnext"}


def check_sizes(test, name, device="cpu"):
    """The model compiled with dynamic=True and run at several sizes: each matches eager, no
    size makes Dynamo trace again, and coil compiles each graph once for every size (once
    per size for COMPILED_PER_SIZE); for the models of SYMBOLIC_THROUGHOUT, no guard fixes a
    size."""
    import logging

    from coil import backend
    from torch._dynamo.utils import counters as dynamo_counters

    torch.manual_seed(0)
    model, args = build(name, device, torch.float32, tiny=True)
    sizes = dynamic_sizes(name, args)
    torch._dynamo.reset()
    dynamo_counters.clear()
    before = backend.counters.copy()
    reference = copy.deepcopy(model).cpu().double()  # the same weights in float64 on the CPU
    compiled = torch.compile(model, backend="coil", dynamic=True)
    start = time.perf_counter()
    with torch.no_grad(), no_fallback(), test.assertLogs("coil", level=logging.DEBUG) as logs:
        for k, (b, s) in enumerate(sizes):
            inputs = resized(args, b, s)
            want = reference(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])
            assert_model_close(compiled(*inputs), model(*inputs), want)
            if k == 0:
                graphs = dynamo_counters["stats"]["unique_graphs"]
    if name in SYMBOLIC_THROUGHOUT:
        reports = [line for line in logs.output if "what the graph of symbolic sizes relies on" in line]
        test.assertTrue(reports, f"{name}: no graph of symbolic sizes was reported")
        fixing = [line for r in reports for line in r.splitlines() if " == " in line and " # " in line]
        test.assertEqual(fixing, [], f"{name}: sizes fixed")
    counted = backend.counters - before
    print(f"{name}: {len(sizes)} sizes, {graphs} graph(s), {counted['sizes_compiled']} compiles in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    test.assertEqual(dynamo_counters["stats"]["unique_graphs"], graphs, f"{name}: Dynamo traced again at a new size")
    test.assertEqual((counted["graphs_compiled"], counted["graphs_eager"]), (graphs, 0), f"{name}: {counted}")
    compiles = graphs * (len(sizes) if name in COMPILED_PER_SIZE else 1)
    test.assertEqual((counted["sizes_compiled"], counted["sizes_eager"]), (compiles, 0), f"{name}: {counted}")


class Models(unittest.TestCase):
    """On the CPU, in f32."""

    def test_suite(self):
        for name in SUITE:
            with self.subTest(name):
                check(self, name)

    def test_dynamic_batch_sizes_and_sequence_lengths(self):
        for name in SUITE:
            with self.subTest(name):
                check_sizes(self, name)


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
class CudaModels(unittest.TestCase):
    """On CUDA, in f32 and bf16 (the GPU check runs these)."""

    def test_suite(self):
        for dtype in (torch.float32, torch.bfloat16):
            for name in SUITE:
                with self.subTest(f"{name} {dtype}"):
                    check(self, name, "cuda", dtype)

    def test_dynamic_batch_sizes_and_sequence_lengths(self):
        for name in SUITE:
            with self.subTest(name):
                check_sizes(self, name, "cuda")


if __name__ == "__main__":
    unittest.main()
