"""The model suite (bench/model_zoo.py) at tiny sizes through the real
torch.compile(model, backend="coil") on the CPU: each model matches eager as
tests/python/model_tolerance.py says (float64 reference, coil's error at most 3x eager's),
and coil compiles its graphs: none falls back to eager whole, and the ops left to eager
between coil's parts are named and must be none.

    python tests/python/test_models.py        (the Python of .venv, coil installed in it)
"""
import os
import sys
import time
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from model_zoo import build  # noqa: E402
from test_backend import compare_with_eager, no_fallback  # noqa: E402

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


def check_second_batch(test, name):
    """A second batch size makes Dynamo trace the model again with symbolic sizes, which
    coil does not compile yet: that graph runs in eager PyTorch, and is counted so."""
    from coil import backend

    torch.manual_seed(0)
    model, args = build(name, "cpu", torch.float32, tiny=True)
    torch._dynamo.reset()
    before = backend.counters.copy()
    compiled = torch.compile(model, backend="coil")
    with torch.no_grad():
        for batch in (args, [torch.cat([a, a[:1]]) for a in args]):
            torch.testing.assert_close(compiled(*batch), model(*batch), rtol=1e-4, atol=1e-4)
    counted = backend.counters - before
    test.assertEqual((counted["graphs"], counted["graphs_compiled"], counted["graphs_eager"]), (2, 1, 1),
                     f"{name}: {counted}")


class Models(unittest.TestCase):
    """On the CPU, in f32."""

    def test_suite(self):
        for name in SUITE:
            with self.subTest(name):
                check(self, name)

    def test_a_second_batch_size_runs_in_eager_counted(self):
        for name in SUITE:
            with self.subTest(name):
                check_second_batch(self, name)


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
class CudaModels(unittest.TestCase):
    """On CUDA, in f32 and bf16 (the GPU check runs these)."""

    def test_suite(self):
        for dtype in (torch.float32, torch.bfloat16):
            for name in SUITE:
                with self.subTest(f"{name} {dtype}"):
                    check(self, name, "cuda", dtype)


if __name__ == "__main__":
    unittest.main()
