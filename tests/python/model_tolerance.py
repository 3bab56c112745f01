"""How whole-model outputs are compared, in one place for the Python tests (the per-op
tolerances are the C++ io/compare.h's): as PyTorch's model tests do, against the same
weights run in float64 on the CPU; coil's error may be at most 3x eager's own error in the
same dtype, plus a floor of the dtype's resolution for outputs that eager computes exactly.
The error of an output is its root-mean-square difference from the float64 result, the
measure of PyTorch's own accuracy check (torch._dynamo.utils.same with fp64_ref): a largest
difference would judge a whole model by its one unluckiest element."""
import torch

MULTIPLIER = 3.0
FLOOR = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2, torch.float64: 1e-12}


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat(o)]
    if isinstance(out, dict):
        return [t for k in sorted(out) for t in _flat(out[k])]
    return []


def model_errors(coil_out, eager_out, reference_out):
    """[(coil's error, eager's error, dtype)] per output tensor, errors as the root mean square of
    x - reference."""
    rows = []
    for c, e, r in zip(_flat(coil_out), _flat(eager_out), _flat(reference_out), strict=True):
        assert c.shape == e.shape == r.shape and c.dtype == e.dtype, (c.shape, e.shape, r.shape, c.dtype, e.dtype)
        if not c.is_floating_point():
            rows.append((float((c.cpu() != e.cpu()).sum()), 0.0, c.dtype))
            continue
        ref = r.detach().cpu().double()

        def rmse(x):
            return float((x.detach().cpu().double() - ref).square().mean().sqrt()) if ref.numel() else 0.0
        rows.append((rmse(c), rmse(e), c.dtype))
    return rows


def assert_model_close(coil_out, eager_out, reference_out):
    for i, (ours, eager, dtype) in enumerate(model_errors(coil_out, eager_out, reference_out)):
        allowed = MULTIPLIER * eager + FLOOR.get(dtype, 0.0)
        assert ours <= allowed, f"output {i}: coil's error {ours:.3g} > {MULTIPLIER} x eager's {eager:.3g} + floor"
