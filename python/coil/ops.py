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
agrees with a compiled one. Tests: tests/python/test_training.py.
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
