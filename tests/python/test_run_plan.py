"""Tests python/coil_triton/run_plan.py on a hand-written launch plan, under Triton's interpreter.

    python tests/python/test_run_plan.py        (the Python of .venv: torch and triton)

The plan has what coil's Triton backend emits: masked pointwise kernels on flat storages,
an input read through transposed strides, buffers in the arena (one of them bf16), extern
mm and addmm steps, a bool output, and an output that is an input written in place. Each
run is a subprocess, as coil runs it; its outputs are compared with torch eager. Other
tests check that a wrong kernel is caught by the comparison, that --poison exposes reads
of unwritten arena memory, and how failures are reported.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_PLAN = os.path.join(ROOT, "python", "coil_triton", "run_plan.py")
sys.path.insert(0, os.path.dirname(RUN_PLAN))
import run_plan  # noqa: E402  (for its safetensors reader and writer)

PRELUDE = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"

# buf3 = a + b, with b stored transposed (b[i, j] at element i + 10 * j).
KERNEL0 = PRELUDE + """def kernel0(in_ptr0, in_ptr1, out_ptr0, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    xmask = xindex < 1000
    x0 = xindex % 100
    x1 = xindex // 100
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tmp1 = tl.load(in_ptr1 + (x1 + 10 * x0), xmask)
    tl.store(out_ptr0 + (xindex), tmp0 + tmp1, xmask)
"""

# buf5 = (buf3 * 0.5) as bf16, buf12 = buf3 > 0.
KERNEL1 = PRELUDE + """def kernel1(in_ptr0, out_ptr0, out_ptr1, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < 1000
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tl.store(out_ptr0 + (xindex), (tmp0 * 0.5).to(tl.bfloat16), xmask)
    tl.store(out_ptr1 + (xindex), tmp0 > 0.0, xmask)
"""

# a += buf5 as f32, in place in the input's storage.
KERNEL2 = PRELUDE + """def kernel2(in_out_ptr0, in_ptr0, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < 1000
    tmp0 = tl.load(in_out_ptr0 + (xindex), xmask)
    tmp1 = tl.load(in_ptr0 + (xindex), xmask).to(tl.float32)
    tl.store(in_out_ptr0 + (xindex), tmp0 + tmp1, xmask)
"""


def view(buffer, sizes, strides, offset=0):
    return {"buffer": buffer, "sizes": sizes, "strides": strides, "offset": offset}


def launch(name, grid, args):
    return {"kind": "launch", "kernel": name, "file": f"kernels/{name}.py", "grid": grid, "args": args,
            "constexprs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1}


def make_plan():
    """The plan: 5 steps on 3 inputs, 4 outputs and 2 arena buffers (one bf16)."""
    buffers = [
        {"id": 0, "name": "a", "dtype": "f32", "elements": 1000, "place": "input", "index": 0},
        {"id": 1, "name": "b", "dtype": "f32", "elements": 1000, "place": "input", "index": 1},
        {"id": 2, "name": "w", "dtype": "f32", "elements": 500, "place": "input", "index": 2},
        {"id": 7, "name": "c", "dtype": "f32", "elements": 5, "place": "input", "index": 3},
        {"id": 3, "name": "buf3", "dtype": "f32", "elements": 1000, "place": "arena", "offset": 0},
        {"id": 5, "name": "buf5", "dtype": "bf16", "elements": 1000, "place": "arena", "offset": 4032},
        {"id": 10, "name": "buf10", "dtype": "f32", "elements": 50, "place": "output", "index": 0},
        {"id": 11, "name": "buf11", "dtype": "f32", "elements": 50, "place": "output", "index": 2},
        {"id": 12, "name": "buf12", "dtype": "bool", "elements": 1000, "place": "output", "index": 3},
    ]
    inputs = [
        dict(name="a", dtype="f32", **view(0, [10, 100], [100, 1])),
        dict(name="b", dtype="f32", **view(1, [10, 100], [1, 10])),
        dict(name="w", dtype="f32", **view(2, [100, 5], [5, 1])),
        dict(name="c", dtype="f32", **view(7, [5], [1])),
    ]
    outputs = [
        dict(name="out0", dtype="f32", alias="none", **view(10, [10, 5], [5, 1])),
        dict(name="out1", dtype="f32", alias="input", **view(0, [10, 100], [100, 1])),
        dict(name="out2", dtype="f32", alias="none", **view(11, [10, 5], [5, 1])),
        dict(name="out3", dtype="bool", alias="none", **view(12, [10, 100], [100, 1])),
    ]
    s3 = view(3, [10, 100], [100, 1])
    w = view(2, [100, 5], [5, 1])
    steps = [
        launch("kernel0", [4, 1, 1], [0, 1, 3]),
        {"kind": "extern", "kernel": "extern_mm", "op": "mm", "operands": [s3, w],
         "out": view(10, [10, 5], [5, 1]), "attrs": {"reduction_size": [100]}, "scalars": {}},
        {"kind": "extern", "kernel": "extern_addmm", "op": "addmm", "operands": [view(7, [5], [1]), s3, w],
         "out": view(11, [10, 5], [5, 1]), "attrs": {"reduction_size": [100]},
         "scalars": {"alpha": 2.0, "beta": 0.5}},
        launch("kernel1", [4, 1, 1], [3, 5, 12]),
        launch("kernel2", [4, 1, 1], [0, 5]),
    ]
    return {"format": "coil-launch-plan", "version": 1, "arena_bytes": 6080, "buffers": buffers,
            "inputs": inputs, "outputs": outputs, "steps": steps}


def make_inputs():
    g = torch.Generator().manual_seed(0)
    return {"a": torch.randn(10, 100, generator=g), "b": torch.randn(10, 100, generator=g),
            "w": torch.randn(100, 5, generator=g), "c": torch.randn(5, generator=g)}


def eager(inputs):
    """What the plan computes, in torch eager."""
    s = inputs["a"] + inputs["b"]
    half = (s * 0.5).to(torch.bfloat16)
    return {"out0": s @ inputs["w"], "out1": inputs["a"] + half.float(),
            "out2": torch.addmm(inputs["c"], s, inputs["w"], beta=0.5, alpha=2.0), "out3": s > 0}


def assert_matches(test, got, want):
    test.assertEqual(sorted(got), sorted(want))
    for name in want:
        test.assertEqual(got[name].dtype, want[name].dtype, name)
        torch.testing.assert_close(got[name], want[name], msg=lambda m, name=name: f"{name}: {m}")


class PlanCase(unittest.TestCase):
    """A folder of its own for a plan, its kernels and inputs, and run_plan.py run on it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="coil-run-plan-test-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, plan=None, kernels=None, inputs=None):
        """Writes the plan, kernel files and inputs file of the test's folder."""
        if plan is not None:
            with open(os.path.join(self.dir, "launch_plan.json"), "w") as f:
                json.dump(plan, f, indent=1)
        for name, source in (kernels or {}).items():
            os.makedirs(os.path.join(self.dir, "kernels"), exist_ok=True)
            with open(os.path.join(self.dir, "kernels", name + ".py"), "w") as f:
                f.write(source)
        if inputs is not None:
            run_plan.write_safetensors(os.path.join(self.dir, "in.safetensors"), inputs)

    def run_plan(self, *extra):
        """(exit status, stderr, outputs or None) of run_plan.py on the test's folder."""
        out = os.path.join(self.dir, "out.safetensors")
        if os.path.exists(out):
            os.remove(out)
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)  # run_plan.py must set it itself
        proc = subprocess.run([sys.executable, RUN_PLAN, os.path.join(self.dir, "launch_plan.json"),
                               "--inputs", os.path.join(self.dir, "in.safetensors"), "--save", out, *extra],
                              capture_output=True, text=True, env=env, timeout=600)
        outputs = run_plan.read_safetensors(out) if proc.returncode == 0 else None
        return proc.returncode, proc.stderr, outputs


class RunPlanTest(PlanCase):
    def setUp(self):
        super().setUp()
        self.inputs = make_inputs()
        self.write(make_plan(), {"kernel0": KERNEL0, "kernel1": KERNEL1, "kernel2": KERNEL2}, self.inputs)

    def test_matches_eager(self):
        status, stderr, outputs = self.run_plan()
        self.assertEqual(status, 0, stderr)
        assert_matches(self, outputs, eager(self.inputs))
        self.assertTrue(outputs["out3"].any() and not outputs["out3"].all())

    def test_writes_tensors_of_any_strides(self):
        # One element whose stride is not 1 (a column of a one-row tensor), a transposed view,
        # and an empty tensor: each is written with standard strides and read back equal.
        tensors = {"column": torch.arange(8, dtype=torch.int32).reshape(1, 8)[:, 3],
                   "step": torch.tensor([2.5])[::3],
                   "t": torch.arange(6.0).reshape(2, 3).t(),
                   "empty": torch.zeros(0, 4)}
        path = os.path.join(self.dir, "strides.safetensors")
        run_plan.write_safetensors(path, tensors)
        back = run_plan.read_safetensors(path)
        for name, t in tensors.items():
            self.assertTrue(torch.equal(back[name], t), name)

    def test_poison_changes_nothing_when_every_read_is_written(self):
        status, stderr, outputs = self.run_plan("--poison")
        self.assertEqual(status, 0, stderr)
        assert_matches(self, outputs, eager(self.inputs))

    def test_wrong_kernel_is_caught(self):
        self.write(kernels={"kernel0": KERNEL0.replace("tmp0 + tmp1", "tmp0 - tmp1")})
        status, stderr, outputs = self.run_plan()
        self.assertEqual(status, 0, stderr)
        with self.assertRaises(AssertionError):
            assert_matches(self, outputs, eager(self.inputs))

    def test_poison_exposes_unwritten_arena(self):
        plan = make_plan()
        del plan["steps"][0]  # nothing writes buf3 now
        self.write(plan)
        status, stderr, outputs = self.run_plan("--poison")
        self.assertEqual(status, 0, stderr)
        self.assertTrue(outputs["out0"].isnan().all())

    def test_kernel_failure_names_the_step(self):
        self.write(kernels={"kernel1": KERNEL1.replace("tmp0 > 0.0", "undefined_name")})
        status, stderr, _ = self.run_plan()
        self.assertEqual(status, 1, stderr)
        self.assertNotIn("Traceback", stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertIn("launch_plan.json: step 3 (kernel1)", stderr)
        self.assertIn("kernel1.py line 11", stderr)
        self.assertIn("undefined_name", stderr)

    def test_bad_plan(self):
        plan = make_plan()
        plan["buffers"][4]["dtype"] = "f31"
        self.write(plan)
        status, stderr, _ = self.run_plan()
        self.assertEqual(status, 2, stderr)
        self.assertIn("buffers[4]: unknown dtype 'f31'", stderr)

    def test_inputs_that_do_not_match(self):
        inputs = dict(self.inputs)
        del inputs["w"]
        self.write(inputs=inputs)
        status, stderr, _ = self.run_plan()
        self.assertEqual(status, 2, stderr)
        self.assertIn("input 2 'w' is not in the inputs file", stderr)
        inputs = dict(self.inputs, c=self.inputs["c"].double())
        self.write(inputs=inputs)
        status, stderr, _ = self.run_plan()
        self.assertEqual(status, 2, stderr)
        self.assertIn("input 3 'c' is float64[5] in the inputs file, but the plan wants float32[5]", stderr)


# out = 2 * x over n elements: n (the kernel's size argument) from the inputs' shape, and two
# variants, in blocks of 16 while n <= 16, of 64 up to 4096, of 1024 above.
KERNEL_SIZED = PRELUDE + """def kernel0(in_ptr0, out_ptr0, s0, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < s0
    tl.store(out_ptr0 + (xindex), tl.load(in_ptr0 + (xindex), xmask) * 2.0, xmask)
"""


def symbolic_plan():
    sized = lambda block, when: {"kind": "launch", "kernel": "kernel0", "file": "kernels/kernel0.py",
                                 "grid": [f"(s0 + {block - 1}) // {block}", 1, 1], "args": [0, 1], "sizes": ["s0"],
                                 "when": when, "constexprs": {"XBLOCK": block}}
    return {"format": "coil-launch-plan", "version": 2,
            "symbols": [{"name": "s0", "input": 0, "dim": 0}],
            "checks": [{"check": "s0 >= 2", "why": "the range of s0"}],
            "arena_bytes": 0,
            "buffers": [{"id": 0, "name": "x", "dtype": "f32", "elements": "s0", "place": "input", "index": 0},
                        {"id": 1, "name": "buf1", "dtype": "f32", "elements": "s0", "place": "output", "index": 0}],
            "inputs": [view(0, ["s0"], [1]) | {"name": "x", "dtype": "f32"}],
            "outputs": [view(1, ["s0"], [1]) | {"name": "out0", "dtype": "f32"}],
            "steps": [sized(16, ["s0 <= 16"]), sized(64, ["s0 > 16", "s0 <= 4096"]), sized(1024, ["4096 - s0 < 0"])]}


class SymbolicPlanTest(PlanCase):
    """A plan of symbolic sizes runs at the sizes its inputs give, and refuses those its
    checks do not pass."""

    def setUp(self):
        super().setUp()
        self.write(symbolic_plan(), {"kernel0": KERNEL_SIZED})

    def test_runs_at_every_size(self):
        for n in (2, 13, 16, 17, 300, 4096, 5000):
            x = torch.randn(n, generator=torch.Generator().manual_seed(n))
            self.write(inputs={"x": x})
            status, stderr, outputs = self.run_plan()
            self.assertEqual(status, 0, stderr)
            torch.testing.assert_close(outputs["out0"], 2 * x)

    def test_sizes_that_fail_a_check_are_refused(self):
        self.write(inputs={"x": torch.ones(1)})
        status, stderr, _ = self.run_plan()
        self.assertEqual(status, 2, stderr)
        self.assertIn("the compiled graph does not serve the sizes s0 = 1: it needs s0 >= 2 (the range of s0)", stderr)

    def assert_refused(self, change, message):
        """The plan after `change(plan)` is refused (status 2) with `message`."""
        plan = symbolic_plan()
        change(plan)
        self.write(plan, inputs={"x": torch.ones(4)})
        status, stderr, _ = self.run_plan()
        self.assertEqual(status, 2, stderr)
        self.assertIn(message, stderr)

    def test_a_condition_not_in_a_list_is_refused(self):
        self.assert_refused(lambda plan: plan["steps"][0].update(when="s0 <= 16"),
                            "'when' is \"s0 <= 16\", expected a list of strings")

    def test_a_bad_expression_is_refused(self):
        self.assert_refused(lambda plan: plan["buffers"][0].update(elements="s0 ** 2"),
                            "'s0 ** 2' is not a size expression")


class SafetensorsTest(unittest.TestCase):
    def tensors(self):
        g = torch.Generator().manual_seed(1)
        out = {t: (torch.randn(3, 4, generator=g) * 50).to(getattr(torch, t))
               for _, t, _ in run_plan.DTYPES.values() if t not in ("bool", "uint8")}
        out.update(uint8=torch.randint(0, 256, (7,), dtype=torch.uint8, generator=g),
                   bool=torch.randn(2, 3, generator=g) > 0, scalar=torch.tensor(2.5), empty=torch.zeros(0, 3),
                   strided=torch.arange(12.0).reshape(3, 4).t())
        return out

    def test_round_trip(self):
        tensors = self.tensors()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.safetensors")
            run_plan.write_safetensors(path, tensors)
            back = run_plan.read_safetensors(path)
        self.assertEqual(sorted(back), sorted(tensors))
        for name, t in tensors.items():
            self.assertEqual(back[name].dtype, t.dtype, name)
            self.assertTrue(torch.equal(back[name], t), name)

    def test_agrees_with_the_safetensors_package(self):
        try:
            from safetensors.torch import load_file, save_file
        except ImportError:
            self.skipTest("no safetensors package")
        tensors = {k: v.contiguous() for k, v in self.tensors().items()}
        with tempfile.TemporaryDirectory() as d:
            mine, theirs = os.path.join(d, "mine.safetensors"), os.path.join(d, "theirs.safetensors")
            run_plan.write_safetensors(mine, tensors)
            save_file(tensors, theirs, metadata={"note": "ignored"})
            for got in (load_file(mine), run_plan.read_safetensors(theirs)):
                for name, t in tensors.items():
                    self.assertTrue(torch.equal(got[name], t), name)


if __name__ == "__main__":
    unittest.main()
