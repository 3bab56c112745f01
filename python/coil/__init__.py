"""coil: a tensor compiler for ATen graphs, as a torch.compile backend.

    import torch
    model = torch.compile(model, backend="coil")   # registered by entry point: no import needed
    model(x)

`coil.compile(text, target, options)` compiles a graph as PyTorch prints it, without torch
(coil._C over include/coil/coil.h). The backend is coil.backend; it imports torch only
when used.
"""
from coil._C import CoilError, CompiledGraph, check_options, compile, supported_ops  # noqa: F401

__all__ = ["CoilError", "CompiledGraph", "check_options", "compile", "supported_ops"]
