"""Training through the real torch.compile(model, backend="coil"): AOTAutograd's forward
and backward graphs both compiled by coil, on the CPU at tiny sizes (and on CUDA in bf16
autocast where a GPU is present: the class CudaTraining, run by the GPU check).

Each model of bench/model_zoo.py's TRAINING (the suite's model with its task's head and
loss inside, dropout off) is checked three ways:
- the first step: the loss and every parameter's gradient against the same weights run in
  float64 on the CPU, coil's error at most 3x eager's (tests/python/model_tolerance.py);
- 20 steps of SGD with momentum on new batches: every parameter against eager's 20 steps
  and float64's, by the same rule;
- 50 steps of AdamW on one batch lose at least half of the loss, so that a model whose
  parameters never change cannot pass.
Every graph is compiled by coil (COIL_FALLBACK=error), none of their ops left to eager.
GPT-2 again in bf16 autocast on the CPU. Besides: optimizer.step() compiled through coil (SGD with momentum, AdamW, a tensor learning
rate; clip_grad_norm_, zero_grad and a frozen parameter around it) against eager's and
float64's steps; dropout in training by its statistics; activation checkpointing; GPT-2 with
dynamic=True at three sequence lengths (the backward graph takes sizes as SymInt inputs).

    python tests/python/test_training.py        (the Python of .venv, coil installed in it)
"""
import contextlib
import copy
import os
import sys
import time
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from model_tolerance import assert_model_close  # noqa: E402
from model_zoo import build_training  # noqa: E402
from test_backend import no_fallback  # noqa: E402

# GPT-2 (causal attention through the fused op and its backward, embeddings, layer norm),
# ResNet-18 (convolutions, batch norm in training with its running statistics, max pooling),
# a ViT (non-causal attention, GELU, the class token), LLaMA (grouped key/value heads,
# RMSNorm, rotary embeddings, SiLU).
SUITE = ["gpt2", "resnet18", "vit", "llama"]


@contextlib.contextmanager
def recorded_graphs():
    """What coil did with each graph compiled in the block (coil.explain's records)."""
    from coil import backend

    graphs: list[dict] = []
    backend._listeners.append(graphs)
    try:
        yield graphs
    finally:
        backend._listeners.remove(graphs)


@contextlib.contextmanager
def backward_inputs():
    """The (shape, dtype) of each input of the backward graphs coil compiles meanwhile: the
    tensors their forwards saved, and the gradients of the outputs."""
    from coil import backend

    saved, original = [], backend.compile_graph

    def spy(gm, inputs, options, guarded=True):
        if not guarded:  # a backward graph
            saved.extend((tuple(t.shape), t.dtype) for t in inputs)
        return original(gm, inputs, options, guarded=guarded)

    backend.compile_graph = spy
    try:
        yield saved
    finally:
        backend.compile_graph = original


def _double(args):
    return [a.double() if a.is_floating_point() else a for a in args]


def _new_batch(args, step):
    """A batch like `args`, drawn anew for `step` (the same for every copy of the model)."""
    g = torch.Generator().manual_seed(1000 + step)
    out = []
    for a in args:
        if a.is_floating_point():
            x = torch.randn(a.shape, generator=g).to(a.device, a.dtype)
            channels_last = a.dim() == 4 and not a.is_contiguous()
            out.append(x.contiguous(memory_format=torch.channels_last) if channels_last else x)
        else:
            out.append(torch.randint(0, int(a.max()) + 1, a.shape, generator=g, dtype=a.dtype).to(a.device))
    return out


def _grads(model):
    return [p.grad for p in model.parameters() if p.requires_grad]


def _start_from(model, optimizer, reference, reference_optimizer):
    """`model` and its SGD momenta set to `reference`'s (in its own dtype and device)."""
    with torch.no_grad():
        for t, r in zip([*model.parameters(), *model.buffers()], [*reference.parameters(), *reference.buffers()]):
            t.copy_(r)
        for p, r in zip(model.parameters(), reference.parameters()):
            momentum = reference_optimizer.state.get(r, {}).get("momentum_buffer")
            if momentum is not None:
                optimizer.state[p]["momentum_buffer"] = momentum.to(p.device, p.dtype).clone()


def check_training(test, name, device="cpu", autocast=None):
    """The first step, 20 steps of SGD and 50 steps of AdamW on one batch of model `name`.

    Each SGD step starts coil's and eager's copies from the float64 reference's weights,
    buffers and momenta, so that what is compared is one step's error, not a trajectory's:
    a model whose ReLUs and max pools flip on rounding (ResNet-18 at batch 4) drifts by the
    chaos of its loss surface alone, 1e-7 growing to 1e-3 in 20 steps. Compared as
    trajectories, coil's weights failed the 3x rule at another seed with the kernels of
    f24daae and passed with others, eager's own error moving 1000-fold from seed to seed."""
    torch.manual_seed(0)
    model, args = build_training(name, device, torch.float32, tiny=True)
    ours, reference = copy.deepcopy(model), copy.deepcopy(model).cpu().double()
    start = time.perf_counter()
    torch._dynamo.reset()
    compiled = torch.compile(ours, backend="coil")
    cast = (lambda: torch.autocast(device, dtype=autocast)) if autocast else contextlib.nullcontext

    def step(m, batch, optimizer=None):
        with cast() if m is not reference else contextlib.nullcontext():
            loss = m(*batch)
        loss.backward()
        if optimizer:
            optimizer.step()
            optimizer.zero_grad()
        return loss

    with no_fallback(), recorded_graphs() as graphs:
        # The first step: the loss and the gradients.
        losses = [step(compiled, args), step(model, args), step(reference, _double([a.cpu() for a in args]))]
        assert_model_close([losses[0], *_grads(ours)], [losses[1], *_grads(model)], [losses[2], *_grads(reference)])
        # 20 steps of SGD with momentum, a new batch each, each from the reference's state.
        optimizers = [torch.optim.SGD(m.parameters(), lr=0.003, momentum=0.9) for m in (ours, model, reference)]
        for opt in optimizers:
            opt.zero_grad()
        for i in range(20):
            batch = _new_batch(args, i)
            _start_from(ours, optimizers[0], reference, optimizers[2])
            _start_from(model, optimizers[1], reference, optimizers[2])
            for m, opt in zip((compiled, model, reference), optimizers):
                step(m, batch if m is not reference else _double([a.cpu() for a in batch]), opt)
            state = [[*m.parameters(), *m.buffers()] for m in (ours, model, reference)]
            assert_model_close(*state)
        # One batch, 50 steps of AdamW: the loss falls to half or less.
        adamw = torch.optim.AdamW(ours.parameters(), lr=3e-3)
        first = float(step(compiled, args, adamw))
        for _ in range(49):
            last = float(step(compiled, args, adamw))
    print(f"{name} ({device}{', ' + str(autocast) if autocast else ''}): {len(graphs)} graph(s), loss {first:.3f} -> "
          f"{last:.3f} in 50 steps, {time.perf_counter() - start:.1f} s", file=sys.stderr)
    test.assertLessEqual(last, first / 2, f"{name}: 50 steps on one batch took the loss from {first} to {last}")
    test.assertGreaterEqual(len(graphs), 2, f"{name}: coil compiled no backward graph")
    eager_parts = [p["name"] + ": " + p["why"] for g in graphs for p in g["parts"] if not p["compiled"]]
    test.assertEqual(eager_parts, [], f"{name}: parts left to eager PyTorch")
    test.assertEqual([op for g in graphs for op in g["eager_ops"]], [], f"{name}: ops left to eager PyTorch")


def check_optimizer_steps(test, kind: str, device: str = "cpu"):
    """optimizer.step() with clip_grad_norm_ and zero_grad compiled through coil, 4 steps: the
    parameters against eager's steps and float64's (a frozen parameter stays as it was). The
    foreach kinds step all parameters by _foreach_ ops, as PyTorch does by default on CUDA."""
    from coil import backend

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)).to(device)
    model[0].bias.requires_grad_(False)
    models = [copy.deepcopy(model), copy.deepcopy(model), copy.deepcopy(model).double()]
    lr = torch.tensor(1e-2) if kind == "adamw, tensor lr" else 1e-2
    foreach = "foreach" in kind or None

    def optimizer(m):
        params = [p for p in m.parameters() if p.requires_grad]
        if kind.startswith("sgd"):
            return torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=foreach)
        return torch.optim.AdamW(params, lr=lr.double() if isinstance(lr, torch.Tensor) and m is models[2] else lr,
                                 foreach=foreach)

    optimizers = [optimizer(m) for m in models]

    def update(opt, m):
        torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5, foreach=foreach)
        opt.step()
        opt.zero_grad()

    torch._dynamo.reset()
    before = backend.counters.copy()
    compiled = torch.compile(update, backend="coil")
    with no_fallback():
        for i in range(4):
            x = torch.randn(8, 32, device=device)
            for m in models:
                m(x.double() if m is models[2] else x).square().mean().backward()
            compiled(optimizers[0], models[0])
            update(optimizers[1], models[1])
            update(optimizers[2], models[2])
    counted = backend.counters - before
    test.assertGreaterEqual(counted["graphs_compiled"], 1, counted)
    test.assertEqual(counted["graphs"], counted["graphs_compiled"], counted)
    print(f"{kind}: {counted['inputs_updated_in_place']} of {counted['inputs_updated']} input updates in place",
          file=sys.stderr)
    test.assertEqual(counted["ops_eager"], 0, counted)
    # The parameters and the optimizer's state are written in place (the parameters' own
    # memory passed for their new values), not copied after the call.
    test.assertGreater(counted["inputs_updated"], 0, counted)
    test.assertEqual(counted["inputs_updated_in_place"], counted["inputs_updated"], counted)
    assert_model_close(list(models[0].parameters()), list(models[1].parameters()), list(models[2].parameters()))
    test.assertTrue(torch.equal(models[0][0].bias, model[0].bias), "the frozen bias changed")
    test.assertFalse(torch.equal(models[0][0].weight, model[0].weight), "the weight never changed")


class Training(unittest.TestCase):
    """On the CPU, in f32."""

    def test_suite(self):
        for name in SUITE:
            with self.subTest(name):
                check_training(self, name)

    def test_bf16_autocast(self):
        # bf16 autocast on the CPU: attention and its backward in bf16 (coil's kernels round
        # the probabilities and score gradients to bf16 before they multiply), by the same
        # float64 rule as the f32 suite.
        check_training(self, "gpt2", "cpu", torch.bfloat16)

    def test_attention_gradients_in_bf16_on_both_dialects(self):
        # Attention's fused op with its logsumexp and its backward op in bf16, as a training
        # graph on the CPU holds them (causal, 70 rows: blocks with tails; heads of 24: a
        # padded head; two heads), run by coil's CPU kernels and by its Triton kernels under Triton's
        # interpreter: the output and the three gradients against float64, coil's error at
        # most 3x eager's.
        import shutil
        import subprocess
        import tempfile
        from pathlib import Path

        sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "coil_triton"))
        import attention_bench
        import run_plan

        torch.manual_seed(0)
        q, k, v, dy = (torch.randn(1, 2, 70, 24, dtype=torch.bfloat16) for _ in range(4))
        module = attention_bench.AttentionTraining(True)
        folder = Path(tempfile.mkdtemp(prefix="coil_attention_"))
        self.addCleanup(shutil.rmtree, folder, True)
        attention_bench.export(module, (q, k, v, dy), folder)
        def autograd(dtype):  # PyTorch's math attention and its autograd in `dtype`
            from torch.nn.attention import SDPBackend, sdpa_kernel

            qa, ka, va = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
            with sdpa_kernel([SDPBackend.MATH]):
                out = torch.nn.functional.scaled_dot_product_attention(qa, ka, va, is_causal=True)
            out.backward(dy.to(dtype))
            return [out.detach(), qa.grad, ka.grad, va.grad]

        eager, reference = autograd(torch.bfloat16), autograd(torch.float64)
        coil = os.environ.get("COIL_BIN", os.path.join(HERE, "..", "..", "build", "coil"))
        # On the CPU twice: two heads for two threads each take whole heads; three threads
        # take blocks of rows instead (runtime/include/coil/attention.h, gradients()).
        runs = {"cpu": ["cpu"], "cpu, blocks of rows": ["cpu", "--set", "num_threads=3"],
                "cuda": ["cuda", "--interpret"]}
        for name, device in runs.items():
            saved = folder / f"{name}.safetensors"
            r = subprocess.run([coil, "run", str(folder / "graph.py"), "--inputs", str(folder / "inputs.safetensors"),
                                "--device", *device, "--save", str(saved)], capture_output=True, text=True,
                               env={**os.environ, "COIL_TRITON_PYTHON": sys.executable})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            got = run_plan.read_safetensors(str(saved))
            with self.subTest(name):
                assert_model_close([got[f"out{i}"] for i in range(4)], list(eager), list(reference))

    def test_optimizer_steps(self):
        for kind in ("sgd", "adamw", "adamw, tensor lr", "sgd, foreach", "adamw, foreach"):
            with self.subTest(kind):
                check_optimizer_steps(self, kind)

    def test_dropout_in_training(self):
        # Dropout draws from coil's generator, seeded from PyTorch's: never compared with
        # eager's numbers, but with what dropout must do. p=0.5 over ones: every value 0 or 2,
        # a keep rate within 4 sigma of a half, the gradient the forward's mask (forward and
        # backward agree), new numbers on the next call, the same after torch.manual_seed.
        def dropped(x):
            return torch.nn.functional.dropout(x, 0.5, training=True) * 1.0

        x = torch.ones(256, 256, requires_grad=True)
        torch._dynamo.reset()
        with no_fallback(), recorded_graphs() as graphs:
            compiled = torch.compile(dropped, backend="coil")
            torch.manual_seed(3)
            y = compiled(x)
            y.sum().backward()
            again = compiled(x)
            torch.manual_seed(3)
            replayed = compiled(x)
        self.assertEqual(sorted(torch.unique(y.detach()).tolist()), [0.0, 2.0])
        kept = float((y != 0).double().mean())
        self.assertLess(abs(kept - 0.5), 4 * (0.25 / y.numel()) ** 0.5, kept)
        self.assertTrue(torch.equal(x.grad, y.detach()), "the gradient is not the forward's mask times 2")
        self.assertFalse(torch.equal(y, again), "the next call drew the same numbers")
        self.assertTrue(torch.equal(y, replayed), "torch.manual_seed did not reproduce the call")
        self.assertTrue(all(p["compiled"] for g in graphs for p in g["parts"]) and len(graphs) >= 2, graphs)

    def test_dropout_masks_are_recomputed_in_the_backward(self):
        # The forward saves a seed of 16 bytes for each dropout, not its mask: the backward
        # computes the mask again from the seed (coil.dropout_keep), and it is the forward's.
        from coil import backend

        def dropped(x, w):
            return torch.nn.functional.dropout(x @ w, 0.3, training=True)

        x, w = torch.randn(64, 48), torch.randn(48, 40, requires_grad=True)
        torch._dynamo.reset()
        before = backend.counters["dropout_masks_recomputed"]
        with no_fallback(), backward_inputs() as saved:
            y = torch.compile(dropped, backend="coil")(x, w)
            y.backward(torch.ones_like(y))
        self.assertEqual(backend.counters["dropout_masks_recomputed"] - before, 1)
        self.assertNotIn(torch.bool, [dtype for _, dtype in saved], saved)
        self.assertIn(((2,), torch.int64), saved)
        keep = (y != 0).float()
        torch.testing.assert_close(w.grad, x.t() @ (keep / 0.7))

    def test_dropout_keep_is_its_eager_form(self):
        check_dropout_keep(self, "cpu")

    def test_max_pools_save_int8_offsets(self):
        # A max pooling whose indices only its backward reads saves int8 offsets within each
        # window, not int64 indices, and not its input for the backward (coil.max_pool2d_with_offsets);
        # the gradients are eager's, checked against float64 (padded 3x3 at stride 2, as
        # ResNet's stem, and a ceil-mode 2x2 after it).
        from coil import backend

        def pooled(x, w):
            y = torch.nn.functional.max_pool2d(torch.conv2d(x, w).relu(), 3, 2, 1)
            return torch.nn.functional.max_pool2d(y * 2, 2, 2, ceil_mode=True).square().sum()

        torch.manual_seed(0)
        x, w = torch.randn(2, 3, 17, 15), torch.randn(8, 3, 3, 3, requires_grad=True)
        torch._dynamo.reset()
        before = backend.counters["max_pool_offsets"]
        with no_fallback(), backward_inputs() as saved:
            torch.compile(pooled, backend="coil")(x, w).backward()
        self.assertEqual(backend.counters["max_pool_offsets"] - before, 2)
        self.assertIn(((2, 8, 8, 7), torch.int8), saved)
        self.assertIn(((2, 8, 4, 4), torch.int8), saved)
        self.assertNotIn(torch.int64, [dtype for _, dtype in saved], saved)
        got, w.grad = w.grad, None
        pooled(x, w).backward()
        eager, w.grad = w.grad, None
        wd = w.detach().double().requires_grad_()
        pooled(x.double(), wd).backward()
        assert_model_close([got], [eager], [wd.grad])

    def test_activation_checkpointing(self):
        # torch.utils.checkpoint: the block's activations are recomputed in the backward, which
        # coil compiles with the rest; the gradients match eager's.
        torch.manual_seed(0)
        block = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32))

        def forward(m, x):
            return torch.utils.checkpoint.checkpoint(m, x, use_reentrant=False).square().mean()

        ours, reference = copy.deepcopy(block), copy.deepcopy(block).double()
        x = torch.randn(4, 32)
        torch._dynamo.reset()
        with no_fallback(), recorded_graphs() as graphs:
            torch.compile(forward, backend="coil")(ours, x).backward()
        forward(block, x).backward()
        forward(reference, x.double()).backward()
        assert_model_close(_grads(ours), _grads(block), _grads(reference))
        parts = [p for g in graphs for p in g["parts"]]
        self.assertGreaterEqual(len(parts), 2, graphs)
        self.assertTrue(all(p["compiled"] for p in parts), graphs)

    def test_dynamic_sequence_lengths(self):
        # dynamic=True: the forward and backward graphs of symbolic sizes (the backward takes
        # sizes as SymInt inputs) are compiled by coil at each sequence length, none left to
        # eager, and each step's gradients match eager's and float64's.
        from coil import backend

        torch.manual_seed(0)
        ours, (ids,) = build_training("gpt2", "cpu", torch.float32, tiny=True)
        eager, reference = copy.deepcopy(ours), copy.deepcopy(ours).double()
        torch._dynamo.reset()
        compiled = torch.compile(ours, backend="coil", dynamic=True)
        before = backend.counters.copy()
        lengths = (ids.shape[1], ids.shape[1] // 2 + 1, ids.shape[1] - 3)
        with no_fallback(), recorded_graphs() as graphs:
            for seq in lengths:
                batch = ids[:, :seq].contiguous()
                for m in (ours, eager, reference):
                    m.zero_grad()
                compiled(batch).backward()
                eager(batch).backward()
                reference(batch).backward()
                with self.subTest(seq=seq):
                    assert_model_close(_grads(ours), _grads(eager), _grads(reference))
        parts = [p for g in graphs for p in g["parts"]]
        self.assertGreaterEqual(len(parts), 2, graphs)  # a forward and a backward at least
        self.assertTrue(all(p["compiled"] for p in parts), graphs)
        counted = backend.counters - before
        self.assertEqual(counted["sizes_eager"], 0, counted)
        self.assertGreaterEqual(counted["sizes_compiled"], 2 * len(lengths), counted)


def check_dropout_keep(test, device):
    """coil.dropout_keep compiled by coil is, bit for bit, its eager form (coil/ops.py), the
    same Philox rounds in Python: a graph left to eager agrees with a compiled one."""
    from coil import ops  # noqa: F401  (registers coil::dropout_keep)

    def keep(seed):
        return (torch.ops.coil.dropout_keep(seed, [37, 129], 0.3), torch.ops.coil.dropout_keep(seed, [5], 1.0),
                torch.ops.coil.dropout_keep(seed, [3, 0], 0.5))

    seed = torch.tensor([-8_123_456_789_012, 2**40 + 7], dtype=torch.int64, device=device)
    torch._dynamo.reset()
    with no_fallback():
        got = torch.compile(keep, backend="coil")(seed)
    for g, want in zip(got, keep(seed)):
        test.assertTrue(torch.equal(g, want))
    rate = float(got[0].double().mean())
    test.assertLess(abs(rate - 0.7), 4 * (0.21 / got[0].numel()) ** 0.5, rate)


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
class CudaTraining(unittest.TestCase):
    """On CUDA, f32 master weights under bf16 autocast (the GPU check runs these)."""

    def test_suite(self):
        for name in SUITE:
            with self.subTest(name):
                check_training(self, name, "cuda", torch.bfloat16)

    def test_dropout_keep_is_its_eager_form(self):
        check_dropout_keep(self, "cuda")

    def test_optimizer_steps(self):
        # PyTorch's default on CUDA: the foreach steps.
        for kind in ("sgd", "adamw"):
            with self.subTest(kind):
                check_optimizer_steps(self, kind, "cuda")


if __name__ == "__main__":
    unittest.main()
