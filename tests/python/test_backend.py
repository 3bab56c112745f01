"""torch.compile(model, backend="coil") end to end, with the real torch.compile: on the CPU,
and on CUDA where a GPU is present (the class Cuda, skipped without one).

    python tests/python/test_backend.py        (the Python of .venv, coil installed in it)

Models are compared as tests/python/model_tolerance.py says (float64 reference, coil's
error at most 3x eager's). The backend is found by its entry point, without importing coil;
options are coil's and checked; ops coil does not compile (a higher-order op such as
torch.cond among them) run in eager PyTorch between coil's parts (coil.explain says which
and why); an installed package needs no checkout; a graph coil fails on runs in eager with a
warning, or raises with COIL_FALLBACK=error; a graph of symbolic sizes (dynamic=True,
mark_dynamic, a second batch size) is compiled once and serves every size (DynamicShapes);
a backward graph is compiled by coil (tests/python/test_training.py
trains the model suite). On CUDA: tensors in and out without host
copies or host synchronisation (torch.cuda.set_sync_debug_mode("error") around the calls),
on the current stream, outputs the caller keeps across later calls, CUDA graphs.
"""
import contextlib
import copy
import json
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


class BrokenBlocks(torch.nn.Module):
    """Two blocks with a graph break between them (a branch on a tensor's value, which Dynamo
    cannot trace): Dynamo hands the backend the part before the break and, for the branch
    taken, the part after it."""

    def __init__(self):
        super().__init__()
        self.first, self.second = Block(), Block()

    def forward(self, x):
        h = self.first(x)
        if h.mean() > 0:
            return self.second(h) * 2
        return self.second(-h)


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.head(y.mean((2, 3)))


def compare_fn_with_eager(fn, *inputs, **compile_kwargs):
    """fn compiled by coil against eager and a float64 reference, as models are compared."""
    with torch.no_grad():
        eager = fn(*inputs)
        want = fn(*[x.double() if x.is_floating_point() else x for x in inputs])
        torch._dynamo.reset()
        got = torch.compile(fn, backend="coil", **compile_kwargs)(*inputs)
    assert_model_close(got, eager, want)
    return got


def check_random_ops(test, device):
    """dropout in training mode, rand_like and randn through coil on `device`: the numbers
    have their distributions, every call draws new ones, and torch.manual_seed reproduces
    a run (coil draws its state from PyTorch's generator)."""
    def fn(x):
        return torch.nn.functional.dropout(x, 0.5, training=True), torch.rand_like(x), torch.randn(64, 64, device=x.device)

    x = torch.ones(64, 64, device=device)
    with no_fallback(), compiled_graphs() as compiled, torch.no_grad():
        torch._dynamo.reset()
        f = torch.compile(fn, backend="coil")
        torch.manual_seed(5)
        first = f(x)
        second = f(x)
        torch.manual_seed(5)
        again = f(x)
    test.assertEqual(len(compiled), 1)
    test.assertIsNotNone(compiled[0], "the graph fell back to eager")
    for a, b in zip(first, again):
        test.assertTrue(torch.equal(a, b), "torch.manual_seed reproduces the numbers")
    for a, b in zip(first, second):
        test.assertFalse(torch.equal(a, b), "each call draws new numbers")
    dropped, uniform, normal = (t.double().cpu() for t in first)
    n = dropped.numel()
    test.assertTrue(torch.all((dropped == 0) | (dropped == 2)))  # kept elements scaled by 1 / (1 - p)
    test.assertLess(abs((dropped == 2).double().mean().item() - 0.5), 5 * (0.25 / n) ** 0.5)
    test.assertTrue(torch.all((uniform >= 0) & (uniform < 1)))
    test.assertLess(abs(uniform.mean().item() - 0.5), 5 * (1 / 12 / n) ** 0.5)
    test.assertLess(abs(normal.mean().item()), 5 / n ** 0.5)
    test.assertLess(abs(normal.var().item() - 1), 5 * (2 / n) ** 0.5)


class no_fallback:
    """COIL_FALLBACK=error for the block: a graph coil does not compile fails the test."""

    def __enter__(self):
        os.environ["COIL_FALLBACK"] = "error"

    def __exit__(self, *exc):
        del os.environ["COIL_FALLBACK"]


@contextlib.contextmanager
def compiled_graphs():
    """The list of what coil.backend.compile_graph made in the block: each graph's
    coil._C.CompiledGraph, or None for a graph that did not go through coil whole."""
    from coil import backend

    compiled, original = [], backend.compile_graph

    def spy(gm, inputs, options, **kwargs):
        fn = original(gm, inputs, options, **kwargs)
        compiled.append(getattr(fn, "coil_graph", None))
        return fn

    backend.compile_graph = spy
    try:
        yield compiled
    finally:
        backend.compile_graph = original


def compare_with_eager(test, model, *inputs, **compile_kwargs):
    model = model.eval()
    # The same weights in float64 on the CPU.
    reference = copy.deepcopy(model).cpu().double()
    with torch.no_grad():
        eager = model(*inputs)
        want = reference(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])
        torch._dynamo.reset()
        got = torch.compile(model, backend="coil", **compile_kwargs)(*inputs)
    assert_model_close(got, eager, want)
    return got


def check_input_updates(test, device, **compile_kwargs):
    """An inference graph's input mutations (AOTAutograd keeps them as copy_ at the graph's
    end) are written over the input's own memory where the kernel writing the new value
    reads the old one only at the element it writes and nothing reads it after (m and p),
    and copied after the call otherwise (x: its new value reads another element of the
    old). Three calls, each against eager's; the tensors stay where they were."""
    from coil import backend

    def update(p, m, g, x):
        m.mul_(0.9).add_(g, alpha=0.1)
        p.sub_(m * 0.5)
        x.add_(x.flip(0))
        return p.sum()

    tensors = [torch.randn(33, 17, generator=torch.Generator().manual_seed(i)).to(device) for i in range(4)]
    ours, eager = [t.clone() for t in tensors], [t.clone() for t in tensors]
    addresses = [t.data_ptr() for t in ours]
    torch._dynamo.reset()
    before = backend.counters.copy()
    compiled = torch.compile(update, backend="coil", **compile_kwargs)
    with no_fallback(), torch.no_grad():
        for call in range(3):
            torch.testing.assert_close(compiled(*ours), update(*eager), rtol=1e-5, atol=1e-5)
            for name, o, e in zip("pmgx", ours, eager):
                torch.testing.assert_close(o, e, rtol=1e-6, atol=1e-6, msg=f"call {call}: {name}")
    counted = backend.counters - before
    test.assertEqual(counted["inputs_updated"], 3, counted)
    test.assertEqual(counted["inputs_updated_in_place"], 2, counted)
    test.assertEqual([t.data_ptr() for t in ours], addresses)
    return compiled


class KvCache(torch.nn.Module):
    """A decoder's key cache: each call writes one position's rows (index_copy_, as a static
    cache does) and reads them back."""

    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(2, 3, 16, 8))

    def forward(self, new, pos):
        self.k.index_copy_(2, pos, new)
        return self.k.index_select(2, pos) * 2


def _qkv(x, w):
    """Attention's query, key and value as a model makes them: three views of one product."""
    b, s, _ = x.shape
    q, k, v = (x @ w).view(b, s, 3, 4, 8).unbind(2)
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def check_views_of_one_buffer(test, device):
    """Outputs that are views of one tensor of the graph are views of one allocation, as
    eager's are (coil writes it once; a training forward saves it once), on every call."""
    x, w = torch.randn(2, 16, 32, device=device), torch.randn(32, 96, device=device)
    with no_fallback(), torch.no_grad():
        f = torch.compile(_qkv, backend="coil")
        for call in range(3):
            got, want = f(x * call, w), _qkv(x * call, w)
            for g, e in zip(got, want):
                torch.testing.assert_close(g, e, msg=f"call {call}")
                test.assertEqual((g.stride(), g.storage_offset()), (e.stride(), e.storage_offset()))
            test.assertEqual(len({g.untyped_storage().data_ptr() for g in got}), 1, f"call {call}: separate allocations")


def check_cache_rows_in_place(test, device):
    """The cache's update is written over the buffer itself (its scatter copies nothing when
    handed the buffer's own memory), five positions, each call and the whole cache against
    eager's."""
    from coil import backend

    ours, eager = KvCache().to(device), KvCache().to(device)
    address = ours.k.data_ptr()
    torch._dynamo.reset()
    before = backend.counters.copy()
    compiled = torch.compile(ours, backend="coil")
    with no_fallback(), torch.no_grad():
        for t in range(5):
            new = torch.randn(2, 3, 1, 8, device=device)
            pos = torch.tensor([t], device=device)
            torch.testing.assert_close(compiled(new, pos), eager(new, pos), rtol=0, atol=0)
            torch.testing.assert_close(ours.k, eager.k, rtol=0, atol=0, msg=f"position {t}")
    counted = backend.counters - before
    test.assertEqual((counted["graphs"], counted["inputs_updated"], counted["inputs_updated_in_place"]), (1, 1, 1),
                     counted)
    test.assertEqual(ours.k.data_ptr(), address)


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
        with compiled_graphs() as compiled:
            compare_with_eager(self, Block(), torch.randn(2, 8, 32))
        self.assertEqual(len(compiled), 1)
        self.assertIsNotNone(compiled[0], "the graph fell back to eager")
        self.assertEqual(compiled[0].target, "cpu")
        self.assertIn("kernel0", compiled[0].plans)

    def test_graph_breaks_give_graphs_coil_compiles_each(self):
        # Both branches taken in turn: every graph Dynamo makes around the break is coil's,
        # forward alone and with its backward, against eager and float64.
        torch.manual_seed(0)
        model = BrokenBlocks()
        with compiled_graphs() as compiled, no_fallback():
            for sign in (1.0, -1.0):
                compare_with_eager(self, model, torch.randn(2, 8, 32) * 0.1 + sign)
        self.assertGreaterEqual(len(compiled), 4)  # per call: the part before the break, a branch
        self.assertTrue(all(g is not None for g in compiled), compiled)
        x = torch.randn(2, 8, 32) + 1.0
        ours, eager = copy.deepcopy(model), copy.deepcopy(model)
        torch._dynamo.reset()
        with compiled_graphs() as trained, no_fallback():
            torch.compile(ours, backend="coil")(x).square().sum().backward()
        eager(x).square().sum().backward()
        self.assertTrue(trained and all(g is not None for g in trained), trained)
        for (name, a), b in zip(ours.named_parameters(), eager.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=name)

    def test_powers_eager_special_cases_are_computed_as_eager_computes_them(self):
        # Eager's pow kernel computes these exponents by products, roots and reciprocals, not
        # by pow: so does coil, to the bit on the CPU where they are products and quotients
        # (GPT-2's gelu raises to the power 3). Roots are within tolerance: coil's are
        # correctly rounded, eager's not always.
        exponents = (2, 3.0, -1, -2.0, 0.5, -0.5, 1.7)

        def powers(x):
            return [x.pow(e) for e in exponents]

        x = (torch.randn(64, 33) * 3).abs()
        with no_fallback():
            torch._dynamo.reset()
            got = torch.compile(powers, backend="coil")(x)
        for e, g, w in zip(exponents, got, powers(x)):
            if e in (2, 3.0, -1, -2.0):
                self.assertTrue(torch.equal(g, w), f"pow(x, {e})")
            else:
                torch.testing.assert_close(g, w, msg=f"pow(x, {e})")

    def test_random_ops_draw_from_pytorchs_generator(self):
        check_random_ops(self, "cpu")

    def test_the_core_aten_list_is_the_installed_torchs(self):
        script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "core_aten_ops.py")
        result = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_tensors_the_traced_code_makes_are_passed_as_constants(self):
        def fn(x):
            return x * torch.tensor(3.0) + torch.tensor([1.0, 2.0, 3.0, 4.0])

        with no_fallback(), compiled_graphs() as compiled:
            compare_fn_with_eager(fn, torch.randn(3, 4))
        self.assertEqual(len(compiled), 1)
        self.assertIsNotNone(compiled[0], "the graph fell back to eager")
        self.assertEqual(len(compiled[0].inputs), 3)  # x and the two constants

    def test_registered_without_importing_coil(self):
        code = ("import sys, torch\n"
                "assert 'coil' not in sys.modules\n"
                "f = torch.compile(lambda x: (x * 2).relu().sum(-1), backend='coil')\n"
                "x = torch.randn(4, 8)\n"
                "torch.testing.assert_close(f(x), (x * 2).relu().sum(-1))\n"
                "assert 'coil' in sys.modules\n")
        subprocess.run([sys.executable, "-c", code], check=True)

    def test_the_installed_package_needs_no_checkout(self):
        """A copy of the installed package elsewhere compiles with the kernels' headers it holds
        (the C++ cache's record of the compile names them) and runs Triton's helpers from its
        own folder, in the Python that imported it."""
        import coil
        package = os.path.dirname(coil.__file__)
        for part in ("runtime/include/coil/artifact.h", "python/coil_triton/compile_kernels.py",
                     "python/coil_triton/run_plan.py"):
            self.assertTrue(os.path.isfile(os.path.join(package, part)), f"the package has no {part}")
        with tempfile.TemporaryDirectory() as elsewhere:
            subprocess.run(["cp", "-r", package, elsewhere], check=True)
            cache = os.path.join(elsewhere, "cache")
            env = {k: v for k, v in os.environ.items() if k not in ("COIL_SOURCE_DIR", "COIL_TRITON_PYTHON")}
            env.update(COIL_CACHE_DIR=cache, PYTHONPATH=elsewhere)
            code = ("import os, sys, torch, coil\n"
                    f"assert coil.__file__.startswith({elsewhere!r}), coil.__file__\n"
                    "assert os.environ['COIL_TRITON_PYTHON'] == sys.executable\n"
                    "f = torch.compile(lambda x: (x * 2).relu().sum(-1), backend='coil')\n"
                    "x = torch.randn(4, 8)\n"
                    "torch.testing.assert_close(f(x), (x * 2).relu().sum(-1))\n")
            subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=elsewhere)
            flags = []
            for root, _, files in os.walk(os.path.join(cache, "cpp")):
                if "meta.json" in files:
                    with open(os.path.join(root, "meta.json")) as f:
                        flags += json.load(f)["flags"]
            includes = [flags[i + 1] for i, flag in enumerate(flags) if flag == "-I"]
            self.assertTrue(includes, "no C++ compile recorded in the cache")
            for include in includes:
                self.assertEqual(include, os.path.join(elsewhere, "coil", "runtime", "include"))

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

    def test_ops_coil_does_not_compile_run_in_eager_between_its_parts(self):
        import coil
        from coil import backend

        @torch.library.custom_op("coil_test::twice", mutates_args=())
        def twice(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @twice.register_fake
        def _(x):
            return torch.empty_like(x)

        def f(x):
            y = twice(x.relu() * 3)
            return y.sum(-1) + 1, y.exp()

        x = torch.randn(4, 8)
        torch._dynamo.reset()
        before = backend.counters.copy()
        with no_fallback(), self.assertLogs("coil", level=logging.WARNING) as logs:
            got = torch.compile(f, backend="coil")(x)
        for ours, theirs in zip(got, f(x)):
            torch.testing.assert_close(ours, theirs)
        self.assertTrue(any("twice (coil_test.twice.default): coil does not compile" in line for line in logs.output),
                        logs.output)
        counted = backend.counters - before
        self.assertEqual((counted["graphs_partitioned"], counted["parts_compiled"], counted["ops_eager"]), (1, 2, 1),
                         counted)

        report = coil.explain(f, x)
        self.assertEqual(report.compiled_parts, 2, str(report))
        self.assertEqual(len(report.eager_ops), 1, str(report))
        text = str(report)
        self.assertIn("1 graph(s), 2 part(s) compiled by coil, 1 op(s) in eager PyTorch", text)
        self.assertIn("ops compiled by coil for cpu", text)
        self.assertIn("eager PyTorch: twice (coil_test.twice.default)", text)

    def test_higher_order_ops_run_in_eager_between_coils_parts(self):
        """torch.cond stays a higher-order op in AOTAutograd's graph, with its branches as
        subgraphs: it runs in eager PyTorch between coil's parts, which compile the rest, and
        either branch gives eager's result."""
        import coil

        class Branching(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x):
                y = self.lin(x).relu()
                z = torch.cond(y.sum() > 1, lambda t: t * 2 + 1, lambda t: t.sin(), (y,))
                return z.softmax(-1)

        torch.manual_seed(0)
        model = Branching().eval()
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="coil")
        with torch.no_grad():
            for x in (torch.randn(4, 8) + 1, torch.randn(4, 8) - 4):  # each branch
                torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
        report = coil.explain(model, torch.randn(4, 8))
        self.assertGreaterEqual(report.compiled_parts, 2, str(report))
        self.assertTrue(any(op.startswith("cond ") for op in report.eager_ops), str(report))

    def test_sorts_of_long_rows_run_in_eager_and_short_ones_in_coil(self):
        from coil import _C, backend

        def f(x, long):
            values, indices = torch.sort(x * 2, descending=True)
            top, where = torch.topk(long + 1, 3)
            return values + 1, indices, top * 2, where

        x = torch.randn(4, 50)
        long = torch.randn(2, _C.MAX_SORT_LENGTH + 1)
        torch._dynamo.reset()
        before = backend.counters.copy()
        with no_fallback(), self.assertLogs("coil", level=logging.WARNING) as logs:
            got = torch.compile(f, backend="coil")(x, long)
        for ours, theirs in zip(got, f(x, long)):
            torch.testing.assert_close(ours, theirs)
        self.assertTrue(any(f"a row of {_C.MAX_SORT_LENGTH + 1} elements" in line for line in logs.output), logs.output)
        counted = backend.counters - before
        # Eager: the topk and its two getitems; coil: the sort with `long + 1`, then `top * 2`.
        self.assertEqual((counted["graphs_partitioned"], counted["parts_compiled"], counted["ops_eager"]), (1, 2, 3),
                         counted)
        # The command line refuses the same row, naming the node.
        class TopTwo(torch.nn.Module):
            def forward(self, a):
                return torch.topk(a, 2)

        text = torch.export.export(TopTwo(), (long,)).graph_module.print_readable(
            print_output=False, include_stride=True, include_device=True)
        with self.assertRaisesRegex(_C.CoilError, f"topk.*coil sorts rows of at most {_C.MAX_SORT_LENGTH}"):
            _C.compile(text, "cpu", [], "", "graph.py")

    def test_forward_and_backward_are_compiled_when_parameters_require_grad(self):
        # Parameters that require grad: AOTAutograd builds a joint graph, partitions it, and
        # coil compiles both halves; the gradients match eager's.
        from coil import backend

        torch.manual_seed(0)
        model = Block().eval()
        x = torch.randn(2, 8, 32)
        torch._dynamo.reset()
        before = backend.counters.copy()
        with no_fallback():
            out = torch.compile(model, backend="coil")(x)
            out.sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for ours, theirs in zip(got, [p.grad for p in model.parameters()]):
            torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)
        counted = backend.counters - before
        self.assertEqual((counted["graphs"], counted["graphs_compiled"]), (2, 2), counted)

    def test_mutated_buffers_aliases_views_and_odd_outputs(self):
        # What AOTAutograd's wrappers keep around coil's graph: buffers updated in place (a
        # count, batch norm's running statistics in training), an output that is an input,
        # one that is a view of another output, a 0-dim one and a None. Three calls, each
        # with every output and buffer as eager's; no fallback.
        class Odd(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = torch.nn.BatchNorm1d(8)
                self.register_buffer("count", torch.zeros(8))

            def forward(self, x):
                self.count.add_(x.sum(0))
                y = self.bn(x).relu()
                return y, y.t(), x, y.sum(), None, y.view(-1)[3:9]

        torch.manual_seed(0)
        eager, ours = Odd().train(), Odd().train()
        ours.load_state_dict(eager.state_dict())
        compiled = torch.compile(ours, backend="coil")
        torch._dynamo.reset()
        with no_fallback(), torch.no_grad(), compiled_graphs() as graphs:
            for seed in range(3):
                x = torch.randn(16, 8, generator=torch.Generator().manual_seed(seed))
                want, got = eager(x), compiled(x)
                for i, (w, g) in enumerate(zip(want, got)):
                    if w is None:
                        self.assertIsNone(g)
                        continue
                    torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=f"call {seed}, output {i}")
                    self.assertEqual(g.stride(), w.stride(), f"call {seed}, output {i}")
                for name, buffer in eager.named_buffers():
                    torch.testing.assert_close(ours.get_buffer(name), buffer, rtol=1e-5, atol=1e-6, msg=name)
        self.assertTrue(graphs and all(g is not None for g in graphs), graphs)

    def test_input_updates_are_written_in_place_only_where_safe(self):
        check_input_updates(self, "cpu")

    def test_cache_rows_are_written_in_place(self):
        check_cache_rows_in_place(self, "cpu")

    def test_outputs_viewing_one_tensor_share_its_allocation(self):
        check_views_of_one_buffer(self, "cpu")

    def test_a_graph_coil_fails_on_runs_in_eager_or_raises(self):
        def f(x):
            return (x * 2).relu().sum(-1)

        x = torch.randn(4, 8)
        broken = {"cpp.compiler": "no-such-compiler-of-coil"}
        torch._dynamo.reset()
        with self.assertLogs("coil", level=logging.WARNING) as logs:
            got = torch.compile(f, backend="coil", options=broken)(x)
        torch.testing.assert_close(got, f(x))
        self.assertTrue(any("graph runs in eager PyTorch" in line and "no-such-compiler-of-coil" in line
                            for line in logs.output), logs.output)
        torch._dynamo.reset()
        with no_fallback(), self.assertRaisesRegex(Exception, "cannot compile graph"):
            torch.compile(f, backend="coil", options=broken)(x)


class SeqAttention(torch.nn.Module):
    """Attention over a sequence of any length, written as products and a softmax."""

    def __init__(self, d=32):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, -1)
        scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        return x + scores.softmax(-1) @ v


def run_sizes(model, shapes, device, **compile_kwargs):
    """Runs `model` compiled at each input shape on `device`, each compared with eager as
    models are (the float64 reference on the CPU); returns what coil counted and how many
    graphs Dynamo made."""
    from coil import backend
    from torch._dynamo.utils import counters as dynamo_counters

    model = model.to(device).eval()
    reference = copy.deepcopy(model).cpu().double()
    torch._dynamo.reset()
    dynamo_counters.clear()
    before = backend.counters.copy()
    compiled = torch.compile(model, backend="coil", **compile_kwargs)
    with torch.no_grad():
        for shape in shapes:
            x = torch.randn(*shape, device=device)
            assert_model_close(compiled(x), model(x), reference(x.cpu().double()))
    return backend.counters - before, dynamo_counters["stats"]["unique_graphs"]


class DynamicShapes(unittest.TestCase):
    """Graphs of symbolic sizes (dynamic=True, mark_dynamic, Dynamo's automatic dynamic
    shapes): coil compiles one Dynamo graph once and serves every size with it (on the GPU
    too: Cuda.test_dynamic_shapes); Dynamo never recompiles."""

    def test_one_graph_serves_every_batch_size_and_sequence_length(self):
        shapes = [(2, 8, 32), (7, 8, 32), (16, 5, 32), (61, 3, 32), (7, 8, 32)]
        with no_fallback(), self.assertLogs("coil", level=logging.DEBUG) as logs:
            counted, graphs = run_sizes(SeqAttention(), shapes, "cpu", dynamic=True)
        self.assertEqual(graphs, 1)
        self.assertEqual((counted["graphs_compiled"], counted["sizes_compiled"], counted["sizes_eager"]), (1, 1, 0), counted)
        self.assertTrue(any("graph of symbolic sizes" in line and "compiled once for every size" in line
                            for line in logs.output), logs.output)
        # The log says which symbols the compiled graph keeps and what a call's sizes must
        # satisfy: no size is specialized (every stage, C++ code generation too, keeps them).
        report = [line for line in logs.output if "what the graph of symbolic sizes relies on" in line]
        symbols = [line for line in report[0].splitlines() if line.startswith("s")] if report else []
        self.assertTrue(symbols and all(line.endswith("  symbolic") for line in symbols), logs.output)
        guards = [line for line in report[0].splitlines() if " # " in line and " == " in line]
        self.assertEqual(guards, [], report[0])

    def test_a_second_batch_size_compiles_symbolic_sizes(self):
        # Without dynamic=True Dynamo compiles the first size statically, and after a second
        # size the graph of symbolic sizes (automatic dynamic shapes), which coil compiles too.
        with no_fallback():
            counted, graphs = run_sizes(Block(), [(2, 8, 32), (3, 8, 32), (5, 8, 32), (3, 8, 32)], "cpu")
        self.assertEqual(graphs, 2)
        self.assertEqual((counted["graphs_compiled"], counted["graphs_eager"], counted["sizes_compiled"]), (2, 0, 1),
                         counted)

    def test_mark_dynamic(self):
        from coil import backend

        model = Block().eval()
        torch._dynamo.reset()
        before = backend.counters.copy()
        compiled = torch.compile(model, backend="coil")
        with no_fallback(), torch.no_grad():
            for batch in (4, 9):
                x = torch.randn(batch, 6, 32)
                torch._dynamo.mark_dynamic(x, 0)
                torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        counted = backend.counters - before
        self.assertEqual((counted["graphs"], counted["sizes_compiled"]), (1, 1), counted)

    def test_training_steps_at_several_batch_sizes(self):
        # The forward returns sizes its backward takes (symbolic in both graphs).
        from coil import backend

        torch.manual_seed(0)
        model = Block()
        twin = copy.deepcopy(model)
        torch._dynamo.reset()
        before = backend.counters.copy()
        compiled = torch.compile(model, backend="coil", dynamic=True)
        with no_fallback():
            for batch in (2, 5, 11):
                x = torch.randn(batch, 4, 32)
                compiled(x).square().sum().backward()
                twin(x).square().sum().backward()
                for p, q in zip(model.parameters(), twin.parameters()):
                    torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
        counted = backend.counters - before
        self.assertEqual((counted["graphs_compiled"], counted["graphs_eager"], counted["sizes_compiled"]), (2, 0, 2),
                         counted)


def _mixed(x, w):
    """An extern call with an epilogue, a reduction, a transposed read."""
    return (x @ w).relu(), x.exp().sum(-1), x.t() + 1


@unittest.skipUnless(torch.cuda.is_available(), "needs a CUDA GPU")
class Cuda(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.device = torch.device("cuda", 0)

    def randn(self, *sizes):
        return torch.randn(*sizes, device=self.device)

    def test_dynamic_shapes(self):
        # One compile serves every size: the kernels take the sizes as arguments, and a
        # program (grids, arena, extern plans) is set up per size called at.
        shapes = [(2, 8, 32), (7, 8, 32), (16, 5, 32), (61, 3, 32), (7, 8, 32)]
        with no_fallback(), self.assertLogs("coil", level=logging.INFO) as logs:
            counted, graphs = run_sizes(SeqAttention(), shapes, self.device, dynamic=True)
        self.assertEqual(graphs, 1)
        self.assertEqual((counted["graphs_compiled"], counted["sizes_compiled"], counted["sizes_eager"]), (1, 1, 0), counted)
        self.assertTrue(any("compiled once for every size" in line for line in logs.output), logs.output)

    def test_sizes_beyond_those_kept_are_set_up_again(self):
        # With two sizes kept set up, the third drops the first, which is set up again
        # (no compile) when it comes back; from CUDA graphs too.
        shapes = [(2, 4, 32), (3, 4, 32), (4, 4, 32), (2, 4, 32), (3, 4, 32)]
        with no_fallback():
            counted, graphs = run_sizes(Block(), shapes, self.device, dynamic=True,
                                        options={"triton.sizes_kept": 2, "triton.cudagraphs": True})
        self.assertEqual(graphs, 1)
        self.assertEqual((counted["sizes_compiled"], counted["sizes_eager"]), (1, 0), counted)

    def test_input_updates_are_written_in_place_only_where_safe(self):
        check_input_updates(self, "cuda")
        # From a CUDA graph too: the call that captures it applies each update once.
        check_input_updates(self, "cuda", mode="reduce-overhead")

    def test_cache_rows_are_written_in_place(self):
        check_cache_rows_in_place(self, "cuda")

    def test_outputs_viewing_one_tensor_share_its_allocation(self):
        check_views_of_one_buffer(self, self.device)

    def test_models_match_eager(self):
        with compiled_graphs() as compiled, no_fallback():
            got = compare_with_eager(self, Block().to(self.device), self.randn(4, 16, 32))
            compare_with_eager(self, SmallCnn().to(self.device), self.randn(2, 3, 16, 16))
        self.assertEqual(got.device, self.device)
        self.assertEqual([g.target for g in compiled], ["cuda", "cuda"])

    def test_on_the_current_stream_without_host_copies(self):
        x, w = self.randn(64, 96), self.randn(96, 48)
        with no_fallback(), torch.no_grad():
            f = torch.compile(_mixed, backend="coil")
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                f(x, w)  # compiles
                torch.cuda.set_sync_debug_mode("error")  # a copy to the host or a sync raises
                try:
                    got = f(x, w)
                finally:
                    torch.cuda.set_sync_debug_mode("default")
            stream.synchronize()
        for g in got:
            self.assertEqual(g.device, self.device)
        assert_model_close(got, _mixed(x, w), _mixed(x.double(), w.double()))

    def test_outputs_held_by_the_caller_stay(self):
        inputs = [(self.randn(64, 96), self.randn(96, 48)) for _ in range(3)]
        with no_fallback(), torch.no_grad():
            f = torch.compile(_mixed, backend="coil")
            results = [f(x, w) for x, w in inputs]
        for (x, w), got in zip(inputs, results):
            assert_model_close(got, _mixed(x, w), _mixed(x.double(), w.double()))

    def test_other_strides_and_dtypes(self):
        x = self.randn(96, 64).t()  # a transposed input
        with no_fallback():
            compare_fn_with_eager(lambda a: (a * 2).softmax(-1), x)
            compare_fn_with_eager(lambda a: a.to(torch.bfloat16).relu() * 3, self.randn(32, 48))

    def test_random_ops_draw_from_pytorchs_generator(self):
        check_random_ops(self, self.device)

    def test_cuda_graphs(self):
        inputs = [(self.randn(64, 96), self.randn(96, 48)) for _ in range(3)]
        with no_fallback(), torch.no_grad():
            torch._dynamo.reset()
            f = torch.compile(_mixed, backend="coil", mode="reduce-overhead")
            results = [f(x, w) for x, w in inputs]
        for (x, w), got in zip(inputs, results):
            assert_model_close(got, _mixed(x, w), _mixed(x.double(), w.double()))


if __name__ == "__main__":
    unittest.main()
