"""coil: a tensor compiler for ATen graphs, as a torch.compile backend.

    import torch
    model = torch.compile(model, backend="coil")   # registered by entry point: no import needed
    model(x)

`coil.compile(text, target, options)` compiles a graph as PyTorch prints it, without torch
(coil._C over include/coil/coil.h). The backend is coil.backend; it imports torch only
when used. `coil.explain(model, *inputs)` compiles a model and says what coil compiled and
what ran in eager PyTorch, and why.

The package holds what the compiler reads at run time (the kernels' headers and the Triton
helpers, under coil/runtime and coil/python): an installed coil needs no checkout.
"""
import os
import sys

# Triton's compiler runs in a Python of its own (coil's option triton.python): this one,
# where torch and triton are installed, unless COIL_TRITON_PYTHON says otherwise.
os.environ.setdefault("COIL_TRITON_PYTHON", sys.executable)

from coil._C import CoilError, CompiledGraph, check_options, compile, supported_ops  # noqa: F401


def explain(model, *inputs, **compile_kwargs):
    """What torch.compile(model, backend="coil") does with `model` on `inputs` (coil.backend.Explanation)."""
    from coil.backend import explain as explain_model

    return explain_model(model, *inputs, **compile_kwargs)


__all__ = ["CoilError", "CompiledGraph", "check_options", "compile", "explain", "supported_ops"]
