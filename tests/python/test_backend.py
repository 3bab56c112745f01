"""torch.compile(model, backend="coil") end to end, on the CPU, with the real torch.compile.

    python tests/python/test_backend.py        (the Python of .venv, coil installed in it)

Models are compared as tests/python/model_tolerance.py says (float64 reference, coil's
error at most 3x eager's). The backend is found by its entry point, without importing coil;
options are coil's and checked; what coil cannot compile runs in eager PyTorch with a
warning, or raises with COIL_FALLBACK=error.
"""
import copy
import logging
import os
import subprocess
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_tolerance import assert_model_close, model_errors  # noqa: E402


class Block(torch.nn.Module):
    """A transformer-like block: linear, layer norm, gelu, softmax, a residual."""

    def __init__(self, d=32):
        super().__init__()
        self.up = torch.nn.Linear(d, 2 * d)
        self.down = torch.nn.Linear(2 * d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(self.norm(x)))
        return x + self.down(h).softmax(-1) * 2.0


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.head(y.mean((2, 3)))


def compare_with_eager(test, model, *inputs, **compile_kwargs):
    model = model.eval()
    reference = copy.deepcopy(model).double()
    with torch.no_grad():
        eager = model(*inputs)
        want = reference(*[x.double() if x.is_floating_point() else x for x in inputs])
        torch._dynamo.reset()
        got = torch.compile(model, backend="coil", **compile_kwargs)(*inputs)
    assert_model_close(got, eager, want)
    return got


class Backend(unittest.TestCase):
    def test_models_match_eager(self):
        torch.manual_seed(0)
        compare_with_eager(self, Block(), torch.randn(4, 16, 32))
        compare_with_eager(self, SmallCnn(), torch.randn(2, 3, 16, 16))

    def test_the_comparison_catches_a_wrong_result(self):
        x = torch.randn(8, 8, dtype=torch.float64)
        errors = model_errors(x.float() + 1e-3, x.float(), x)
        self.assertGreater(errors[0][0], 3 * errors[0][1] + 1e-5)
        with self.assertRaises(AssertionError):
            assert_model_close(x.float() + 1e-3, x.float(), x)

    def test_coil_compiles_and_runs_the_graph(self):
        from coil import backend

        compiled = []
        original = backend.compile_graph

        def spy(gm, inputs, options):
            fn = original(gm, inputs, options)
            compiled.append(getattr(fn, "coil_graph", None))
            return fn

        backend.compile_graph = spy
        try:
            compare_with_eager(self, Block(), torch.randn(2, 8, 32))
        finally:
            backend.compile_graph = original
        self.assertEqual(len(compiled), 1)
        self.assertIsNotNone(compiled[0], "the graph fell back to eager")
        self.assertEqual(compiled[0].target, "cpu")
        self.assertIn("kernel0", compiled[0].plans)

    def test_registered_without_importing_coil(self):
        code = ("import sys, torch\n"
                "assert 'coil' not in sys.modules\n"
                "f = torch.compile(lambda x: (x * 2).relu().sum(-1), backend='coil')\n"
                "x = torch.randn(4, 8)\n"
                "torch.testing.assert_close(f(x), (x * 2).relu().sum(-1))\n"
                "assert 'coil' in sys.modules\n")
        subprocess.run([sys.executable, "-c", code], check=True)

    def test_options_are_coils_and_checked(self):
        from coil import CoilError

        with tempfile.TemporaryDirectory() as trace:
            compare_with_eager(self, Block(), torch.randn(2, 8, 32), options={"trace": trace, "cpp.vector_lanes": 4})
            graphs = os.listdir(trace)
            self.assertEqual(len(graphs), 1, graphs)
            for dump in ("graph.txt", "ir_post_fusion.txt", "kernel_plans.txt"):
                self.assertTrue(os.path.isfile(os.path.join(trace, graphs[0], dump)), dump)
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, "unknown option 'cpp.no_such'"):
            torch.compile(Block(), backend="coil", options={"cpp.no_such": 1})(torch.randn(2, 8, 32))
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, "unknown mode"):
            torch.compile(Block(), backend="coil", mode="fastest")(torch.randn(2, 8, 32))
        self.assertTrue(issubclass(CoilError, RuntimeError))

    def test_what_coil_cannot_compile_runs_in_eager(self):
        @torch.library.custom_op("coil_test::twice", mutates_args=())
        def twice(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @twice.register_fake
        def _(x):
            return torch.empty_like(x)

        def f(x):
            return twice(x.relu()) + 1

        x = torch.randn(4, 8)
        torch._dynamo.reset()
        with self.assertLogs("coil", level=logging.WARNING) as logs:
            got = torch.compile(f, backend="coil")(x)
        torch.testing.assert_close(got, f(x))
        self.assertTrue(any("coil_test.twice" in line or "coil_test::twice" in line for line in logs.output),
                        logs.output)
        torch._dynamo.reset()
        os.environ["COIL_FALLBACK"] = "error"
        try:
            with self.assertRaisesRegex(Exception, "cannot compile graph"):
                torch.compile(f, backend="coil")(x)
        finally:
            del os.environ["COIL_FALLBACK"]


if __name__ == "__main__":
    unittest.main()
