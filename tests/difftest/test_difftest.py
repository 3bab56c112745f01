"""Tests of the differential tester's own judgement: when a mismatch with eager counts as one of
coil's documented precision choices, and which programs have no reference.

    .venv/bin/python tests/difftest/test_difftest.py [--coil build/coil]

The rules themselves are difftest.precision's; these tests hold them to what they say on real
programs run by coil's reference interpreter (milliseconds each), and on outputs built to sit on
either side of the 3x rule.
"""

import argparse
import sys
import tempfile
import unittest
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import difftest  # noqa: E402
import programs  # noqa: E402

COIL = Path(difftest.REPO / "build" / "coil")


def program(nodes: list[dict], inputs: list[dict]) -> dict:
    return {"seed": 0, "inputs": inputs, "nodes": nodes, "outputs": [nodes[-1]["id"]], "decompositions": "empty"}


class Precision(unittest.TestCase):
    def judge(self, prog: dict, tensors: list[torch.Tensor]) -> tuple[difftest.Outcome, str | None]:
        """coil's reference interpreter on the program with `tensors` for inputs, and what
        precision() makes of a mismatch."""
        folder = Path(self.work.name) / "p"
        self.assertIsNone(difftest.write_program(prog, folder, tensors))
        outcome = difftest.run_coil(COIL, folder, "ref", 60)
        return outcome, difftest.precision(COIL, folder, "ref", 60) if outcome.kind == "mismatch" else None

    def setUp(self):
        self.work = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.work.cleanup()

    def test_more_exact_than_eager(self):
        # CPU eager's vectorized gelu gives NaN for +inf (its one-element path and float64 give
        # +inf, as coil does): a mismatch with eager that matches eager in float64.
        prog = program([{"id": "v0", "op": "gelu", "args": ["a0"], "p": {}}],
                       [{"shape": [64], "dtype": "f32", "fill": "normal", "seed": 0}])
        x = torch.randn(64)
        x[::3] = float("inf")
        eager = torch.nn.functional.gelu(x)
        if not eager.isnan().any():
            self.skipTest("this PyTorch's gelu(+inf) is +inf: no mismatch to judge")
        outcome, why = self.judge(prog, [x])
        self.assertEqual(outcome.kind, "mismatch", outcome.detail)
        self.assertEqual(why, "matches eager in float64")

    def test_a_wrong_result_is_not_precision(self):
        # A real error stays a failure: coil's result against a reference that eager's float64
        # run contradicts too (expected.safetensors altered by hand after the write).
        prog = program([{"id": "v0", "op": "exp", "args": ["a0"], "p": {}}],
                       [{"shape": [16], "dtype": "f32", "fill": "normal", "seed": 0}])
        x = torch.randn(16)
        folder = Path(self.work.name) / "p"
        self.assertIsNone(difftest.write_program(prog, folder, [x]))
        wrong = torch.exp(x) * 1.01
        difftest.cf.write_tensors(folder / "expected.safetensors", {"out0": wrong})
        difftest.cf.write_tensors(folder / "expected_f64.safetensors", {"out0": wrong})
        outcome = difftest.run_coil(COIL, folder, "ref", 60)
        self.assertEqual(outcome.kind, "mismatch")
        self.assertIsNone(difftest.precision(COIL, folder, "ref", 60))


class WithinEagerError(unittest.TestCase):
    def test_three_times_eager_error(self):
        wide = torch.linspace(1, 2, 100)
        eager = wide + 1e-3
        self.assertTrue(difftest.within_eager_error({"o": wide + 2.9e-3}, {"o": eager}, {"o": wide}))
        self.assertFalse(difftest.within_eager_error({"o": wide + 3.2e-3}, {"o": eager}, {"o": wide}))

    def test_non_finite_values_must_agree(self):
        wide = torch.tensor([1.0, float("inf"), float("nan")])
        self.assertTrue(difftest.within_eager_error({"o": wide.clone()}, {"o": wide.clone()}, {"o": wide}))
        # inf where float64 and eager are finite, NaN where float64 says inf and eager too.
        self.assertFalse(difftest.within_eager_error({"o": torch.tensor([float("inf"), float("inf"), float("nan")])},
                                                     {"o": wide.clone()}, {"o": wide}))
        self.assertFalse(difftest.within_eager_error({"o": torch.tensor([1.0, float("nan"), float("nan")])},
                                                     {"o": wide.clone()}, {"o": wide}))

    def test_integers_must_equal_eager(self):
        i = torch.arange(5)
        self.assertTrue(difftest.within_eager_error({"o": i.clone()}, {"o": i}, {"o": i}))
        self.assertFalse(difftest.within_eager_error({"o": i + 1}, {"o": i}, {"o": i}))


class Programs(unittest.TestCase):
    def test_nodes_pytorch_disagrees_on_are_not_drawn(self):
        # An empty i64 matrix times a bool vector: eager gives bool, its meta function (and so the
        # traced graph) i64. There is no reference for it.
        env = {"a0": torch.zeros(3, 0, dtype=torch.int64), "a1": torch.zeros(0, dtype=torch.bool)}
        node = {"id": "v0", "op": "matmul", "args": ["a0", "a1"], "p": {}}
        self.assertIsNone(programs.fits(node, env))
        env["a1"] = torch.zeros(0, dtype=torch.int64)
        self.assertIsNotNone(programs.fits(node, env))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--coil", default=str(COIL))
    args, rest = ap.parse_known_args()
    COIL = Path(args.coil)
    unittest.main(argv=[sys.argv[0], *rest])
