# reduction over [32, 1] reducing [1000]: _softmax max, _softmax sum, _softmax
# grid: 32x1x1
# layout: persistent: a row in one program, RBLOCK the next power of two of 1000
# num_warps: 4
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def _max_nan(a, b):
    # NaN wins, as in torch.max
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def kernel0(in_ptr0, out_ptr0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
  xoffset = tl.program_id(0) * XBLOCK
  xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
  x0 = xindex
  rindex = tl.arange(0, RBLOCK)[None, :]
  rmask = rindex < 1000
  r0 = rindex
  tmp0 = tl.load(in_ptr0 + (x0*1000 + r0), rmask)
  tmp1 = tl.reduce(tl.where(rmask, tmp0, float('-inf')), 1, _max_nan)[:, None]
  tmp2 = tmp0 - tmp1
  tmp3 = tl.exp(tmp2)
  tmp4 = tl.sum(tl.where(rmask, tmp3, 0.0), 1)[:, None]
  tmp5 = tl.div_rn(tmp3, tmp4)
  tl.store(out_ptr0 + (x0*1000 + r0), tmp5, rmask)


