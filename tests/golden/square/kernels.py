# pointwise over [1000]: pow_1
# grid: 1x1x1
# layout: blocks of XBLOCK elements, masked
# num_warps: 4
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def kernel0(in_ptr0, out_ptr0, XBLOCK: tl.constexpr):
  xoffset = tl.program_id(0) * XBLOCK
  xindex = xoffset + tl.arange(0, XBLOCK)
  xmask = xindex < 1000
  x0 = xindex
  tmp0 = tl.load(in_ptr0 + (x0), xmask)
  tmp1 = tmp0 * tmp0
  tl.store(out_ptr0 + (x0), tmp1, xmask)


