# reduction over [256] reducing [100000]: sum_1
# grid: 256x1x1
# layout: looped: a row per program in steps of RBLOCK
# num_warps: 8
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def kernel0(in_ptr0, out_ptr0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
  xoffset = tl.program_id(0) * XBLOCK
  xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
  x0 = xindex
  rbase = tl.arange(0, RBLOCK)[None, :]
  acc0 = tl.full([XBLOCK, RBLOCK], 0.0, tl.float32)
  for roffset in range(0, 100000, RBLOCK):
    rindex = roffset + rbase
    rmask = rindex < 100000
    r0 = rindex
    tmp0 = tl.load(in_ptr0 + (x0*100000 + r0), rmask)
    acc0 = tl.where(rmask, acc0 + tmp0, acc0)
  tmp1 = tl.sum(acc0, 1)[:, None]
  tl.store(out_ptr0 + (x0), tmp1)


