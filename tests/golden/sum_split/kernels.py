# reduction over [] reducing [67108864]: sum_1
# grid: 1x1024x1
# layout: split: 1024 programs per row each reduce a chunk of 65536 in steps of RBLOCK; kernel0 combines the partials
# num_warps: 8
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def kernel0_partials(in_ptr0, partial_ptr0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
  xoffset = tl.program_id(0) * XBLOCK
  xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
  split = tl.program_id(1)
  rbase = tl.arange(0, RBLOCK)[None, :]
  acc0 = tl.full([XBLOCK, RBLOCK], 0.0, tl.float32)
  for roffset in range(0, 65536, RBLOCK):
    rindex = split * 65536 + roffset + rbase
    r0 = rindex
    tmp0 = tl.load(in_ptr0 + (r0))
    acc0 = acc0 + tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
  tmp1 = tl.sum(acc0, 1)[:, None]
  tl.store(partial_ptr0 + split + xindex, tmp1)


# reduction over [] reducing [67108864]: sum_1
# grid: 1x1x1
# layout: combines 1024 partials per row, then the row's members
# num_warps: 4
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def kernel0(out_ptr0, partial_ptr0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
  xoffset = tl.program_id(0) * XBLOCK
  xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
  rindex = tl.arange(0, RBLOCK)[None, :]
  tmp0 = tl.load(partial_ptr0 + rindex + xindex)
  tmp1 = (tl.sum(tmp0, 1))[:, None]
  tl.store(out_ptr0 + tl.full([XBLOCK, 1], 0, tl.int32), tmp1)


