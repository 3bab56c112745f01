#include "codegen/gpu/gpu_epilogue.h"

#include "codegen/triton/triton_kernel_plan.h"
#include "support/error.h"
#include "support/int_math.h"

namespace coil::codegen {

using sched::PostOpKind;

std::string cublaslt_epilogue_problem(const ir::Program &p, const ir::Node &call, const sched::Epilogue &e) {
  if (e.ops.empty()) return "no post-op";
  return cublaslt_problem(p, call, e);
}

std::string cublaslt_problem(const ir::Program &p, const ir::Node &call, const sched::Epilogue &e) {
  using ir::ExternOp;
  ExternOp op = call.extern_op;
  if (op != ExternOp::Mm && op != ExternOp::Bmm && op != ExternOp::Addmm && op != ExternOp::Baddbmm)
    return str_cat("cuBLASLt runs epilogues of matrix-matrix products, not of ", ir::extern_op_name(op));
  const TensorType &out = p.buffer(call.outputs[0]).type;
  if (out.dtype != DType::F32 && out.dtype != DType::F16 && out.dtype != DType::BF16)
    return str_cat("cuBLASLt's epilogues here take f32, f16 and bf16, not ", short_name(out.dtype));
  for (const ir::View &v : call.operands)
    if (v.buffer >= 0 && p.buffer(v.buffer).type.dtype != out.dtype) return "the product mixes dtypes";
  if (out.sizes.size() < 2 || out.strides.back() != 1) return "the product's output is not contiguous along its last dim";
  if (e.out.sizes != out.sizes || e.out.strides != out.strides)
    return "the epilogue stores at another layout than the product's output";
  bool own_bias = op == ExternOp::Addmm || op == ExternOp::Baddbmm;
  size_t i = 0;
  if (i < e.ops.size() && e.ops[i].kind == PostOpKind::Add) {
    if (own_bias) return "the product has a bias of its own, and cuBLASLt adds one bias";
    const ir::View &b = e.ops[i].operand;
    if (p.buffer(b.buffer).type.dtype != out.dtype) return "the bias's dtype differs from the product's";
    for (size_t d = 0; d + 1 < b.strides.size(); ++d)
      if (b.strides[d] != 0 && b.sizes[d] != 1) return "the added tensor is not a vector along the last dim";
    if (b.strides.back() != 1 && b.sizes.back() != 1) return "the bias vector is not contiguous";
    ++i;
  }
  if (i < e.ops.size()) {
    const sched::PostOp &act = e.ops[i];
    if (act.kind == PostOpKind::Relu && act.alpha != 0) return "cuBLASLt's relu has no negative slope";
    if (act.kind != PostOpKind::Relu && act.kind != PostOpKind::GeluTanh)
      return str_cat("cuBLASLt has no ", sched::post_op_name(act.kind), " epilogue (relu and gelu_tanh only)");
    ++i;
  }
  if (i < e.ops.size()) return str_cat("cuBLASLt runs one bias and one activation; ", sched::post_op_name(e.ops[i].kind), " follows them");
  return "";
}

sched::ScheduleOptions gpu_schedule_options(sched::ScheduleOptions base) {
  base.extern_epilogues = true;
  base.epilogue_check = cublaslt_epilogue_problem;
  // A row walked again after its reduction runs as a kernel of its own where the Triton
  // plan's programs would be too few to fill the GPU, fewer than about one per
  // multiprocessor of an H100 or H200 (132) (fusion.cpp, ScheduleOptions::
  // min_programs_for_second_pass).
  base.min_programs_for_second_pass = 128;
  base.reduction_programs = [](int64_t rows, int64_t rn, bool side_by_side) {
    return ceil_div(rows, default_rows_per_program(rows, rn, side_by_side));
  };
  return base;
}

}  // namespace coil::codegen
