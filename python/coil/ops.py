"""coil's own ops, registered with PyTorch (torch.library), so that the graphs the backend
rewrites can state them and run them in eager PyTorch too.

`coil::dropout_keep(seed, size, p)`: dropout's mask (True where an element is kept) as a
pure function of a seed tensor: element i is kept when the uniform number of coil's
generator (coil/philox.h: Philox4x32-10 under key seed[0] at counter seed[1] + i, its
first word's top 24 bits times 2^-24) is below 1 - p, in float32, as coil's
native_dropout keeps it. A training graph's dropout draws its seed in the forward (a
randint, 16 bytes saved) and its mask is computed again in the backward from that seed,
not saved (backend.py, regenerated_dropout). coil compiles the op (src/lowering/random.cpp);
this eager form is the same function bit for bit, so a graph coil leaves to eager PyTorch
agrees with a compiled one.

`coil::max_pool2d_with_offsets(x, kernel, stride, padding, dilation, ceil_mode)`: 2-d max
pooling's values and, in int8, where in its window each maximum lies (row-major over the
window: kh * kernel_w + kw), not its int64 index in the input plane: a training graph saves
these for the backward, an eighth of the bytes (ResNet-50 at batch 64: 12 MB, not 98).
`coil::max_pool2d_offsets_backward(grad, offsets, input_size, kernel, stride, padding,
dilation, ceil_mode)`: max_pool2d_with_indices_backward from those offsets, without the
input (its sizes given), so the backward does not keep it. A training graph's max pooling
whose indices only its backward reads takes them (backend.py, max_pool_offsets). Their
eager forms convert to and from PyTorch's indices.

Tests: tests/python/test_training.py.
"""
from __future__ import annotations

import torch

_WORD = 0xFFFFFFFF


def _product_words(a: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The high and low 32-bit words of a * m for 32-bit words a (int64 tensors) and m,
    computed in int64 without overflow: a split into 16-bit halves."""
    lo = (a & 0xFFFF) * m                 # < 2^48
    hi = (a >> 16) * m                    # < 2^48: the product is hi * 2^16 + lo
    mid = (hi & 0xFFFF) * 65536 + lo      # < 2^49
    return ((hi >> 16) + (mid >> 32)) & _WORD, mid & _WORD


def philox_first_word(seed: int, counters: torch.Tensor) -> torch.Tensor:
    """Word 0 of Philox4x32-10 at each of `counters` (int64) under key `seed`, as coil/philox.h."""
    c0, c1 = counters & _WORD, (counters >> 32) & _WORD
    c2 = c3 = torch.zeros_like(counters)
    k0, k1 = seed & _WORD, (seed >> 32) & _WORD
    for _ in range(10):
        hi0, lo0 = _product_words(c0, 0xD2511F53)
        hi2, lo2 = _product_words(c2, 0xCD9E8D57)
        c0, c1, c2, c3 = hi2 ^ c1 ^ k0, lo2, hi0 ^ c3 ^ k1, lo0
        k0, k1 = (k0 + 0x9E3779B9) & _WORD, (k1 + 0xBB67AE85) & _WORD
    return c0


@torch.library.custom_op("coil::dropout_keep", mutates_args=())
def dropout_keep(seed: torch.Tensor, size: list[int], p: float) -> torch.Tensor:
    key, offset = (int(v) for v in seed.cpu())
    count = 1
    for s in size:
        count *= s
    counters = torch.arange(count, dtype=torch.int64, device=seed.device) + offset
    uniform = (philox_first_word(key, counters) >> 8).to(torch.float32) * 2.0**-24
    return (uniform < torch.tensor(1 - p, dtype=torch.float32)).reshape(size)


@dropout_keep.register_fake
def _(seed, size, p):
    return torch.empty(size, dtype=torch.bool, device=seed.device)


def _window_origin(out_size, stride, padding, device):
    """Per output position (rows, columns): the input row and column of its window's first
    element."""
    oh = torch.arange(out_size[-2], device=device).view(-1, 1) * stride[0] - padding[0]
    ow = torch.arange(out_size[-1], device=device).view(1, -1) * stride[1] - padding[1]
    return oh, ow


def per_dim(v, default) -> list[int]:
    """A pooling argument as PyTorch takes it (one value, or one per spatial dim; empty or
    None: `default`) as one value per dim of 2."""
    v = [v] if isinstance(v, int) else list(v or ())
    v = v or list(default)
    return v * 2 if len(v) == 1 else v


@torch.library.custom_op("coil::max_pool2d_with_offsets", mutates_args=())
def max_pool2d_with_offsets(x: torch.Tensor, kernel_size: list[int], stride: list[int], padding: list[int],
                            dilation: list[int], ceil_mode: bool) -> tuple[torch.Tensor, torch.Tensor]:
    kernel, stride = per_dim(kernel_size, ()), per_dim(stride, kernel_size)
    padding, dilation = per_dim(padding, (0,)), per_dim(dilation, (1,))
    values, indices = torch.ops.aten.max_pool2d_with_indices.default(x, kernel, stride, padding, dilation, ceil_mode)
    oh, ow = _window_origin(values.shape, stride, padding, x.device)
    width = x.shape[-1]
    kh = (torch.div(indices, width, rounding_mode="floor") - oh) // dilation[0]
    kw = (indices % width - ow) // dilation[1]
    return values, (kh * kernel[1] + kw).to(torch.int8)


@max_pool2d_with_offsets.register_fake
def _(x, kernel_size, stride, padding, dilation, ceil_mode):
    values, indices = torch.ops.aten.max_pool2d_with_indices.default(x, kernel_size, stride, padding, dilation,
                                                                    ceil_mode)
    return values, torch.empty_like(indices, dtype=torch.int8)


@torch.library.custom_op("coil::max_pool2d_offsets_backward", mutates_args=())
def max_pool2d_offsets_backward(grad: torch.Tensor, offsets: torch.Tensor, input_size: list[int],
                                kernel_size: list[int], stride: list[int], padding: list[int], dilation: list[int],
                                ceil_mode: bool) -> torch.Tensor:
    kernel, stride = per_dim(kernel_size, ()), per_dim(stride, kernel_size)
    padding, dilation = per_dim(padding, (0,)), per_dim(dilation, (1,))
    oh, ow = _window_origin(grad.shape, stride, padding, grad.device)
    o = offsets.to(torch.int64)
    rows = oh + torch.div(o, kernel[1], rounding_mode="floor") * dilation[0]
    cols = ow + o % kernel[1] * dilation[1]
    indices = rows * input_size[-1] + cols
    x = _input_like(grad, input_size)
    return torch.ops.aten.max_pool2d_with_indices_backward.default(grad, x, kernel, stride, padding, dilation,
                                                                   ceil_mode, indices)


def _input_like(grad, input_size):
    """An uninitialized tensor of the input's sizes in grad's memory format: what the
    backward's result is laid out as."""
    from torch._prims_common import suggest_memory_format

    return torch.empty(input_size, dtype=grad.dtype, device=grad.device, memory_format=suggest_memory_format(grad))


@max_pool2d_offsets_backward.register_fake
def _(grad, offsets, input_size, kernel_size, stride, padding, dilation, ceil_mode):
    return _input_like(grad, input_size)
