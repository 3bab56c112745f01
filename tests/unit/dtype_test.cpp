// dtypes and type promotion against PyTorch's rules (torch.promote_types, torch.result_type).
#include <gtest/gtest.h>

#include "graph/dtype.h"
#include "graph/type_promotion.h"

namespace coil {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : kAllDTypes) {
    EXPECT_EQ(dtype_from_short_name(short_name(t)), t);
    EXPECT_EQ(dtype_from_torch_name(torch_name(t).substr(6)), t);
    EXPECT_EQ(dtype_from_safetensors_name(safetensors_name(t)), t);
  }
  EXPECT_EQ(short_name(DType::Bool), "b8");
  EXPECT_EQ(dtype_from_torch_name("half"), DType::F16);
  EXPECT_EQ(dtype_from_torch_name("long"), DType::I64);
  EXPECT_EQ(dtype_from_torch_name("float"), DType::F32);
  EXPECT_FALSE(dtype_from_short_name("f8"));
}

TEST(DType, PromoteTypesFollowsPyTorch) {
  EXPECT_EQ(promote_types(DType::U8, DType::I8), DType::I16);
  EXPECT_EQ(promote_types(DType::U8, DType::I32), DType::I32);
  EXPECT_EQ(promote_types(DType::Bool, DType::U8), DType::U8);
  EXPECT_EQ(promote_types(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promote_types(DType::BF16, DType::F32), DType::F32);
  EXPECT_EQ(promote_types(DType::I64, DType::F16), DType::F16);
  EXPECT_EQ(promote_types(DType::I32, DType::I16), DType::I32);
  EXPECT_EQ(promote_types(DType::F64, DType::F32), DType::F64);
  for (DType a : kAllDTypes)
    for (DType b : kAllDTypes) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
}

PromotionOperand tensor(DType t, int64_t rank = 1) { return {t, rank, false}; }
PromotionOperand number(DType t) { return {t, 0, true}; }

TEST(TypePromotion, PythonNumbersOnlyChangeTheCategory) {
  // torch.ones(2, dtype=torch.int32) + 2.5 -> float32 (the default dtype)
  std::vector<PromotionOperand> a = {tensor(DType::I32), number(DType::F64)};
  EXPECT_EQ(result_type(a), DType::F32);
  // f16 tensor + 2.5 stays f16; i32 tensor + 2 stays i32
  std::vector<PromotionOperand> b = {tensor(DType::F16), number(DType::F64)};
  EXPECT_EQ(result_type(b), DType::F16);
  std::vector<PromotionOperand> c = {tensor(DType::I32), number(DType::I64)};
  EXPECT_EQ(result_type(c), DType::I32);
  // bool tensor + True stays bool; bool tensor + 1 -> i64
  std::vector<PromotionOperand> d = {tensor(DType::Bool), number(DType::Bool)};
  EXPECT_EQ(result_type(d), DType::Bool);
  std::vector<PromotionOperand> e = {tensor(DType::Bool), number(DType::I64)};
  EXPECT_EQ(result_type(e), DType::I64);
}

TEST(TypePromotion, ZeroDimTensorsRankBelowDimensionedOnes) {
  // f32[4] + f64[] -> f32;  i32[4] + f64[] -> f64;  f64[] + 1 -> f64
  std::vector<PromotionOperand> a = {tensor(DType::F32), tensor(DType::F64, 0)};
  EXPECT_EQ(result_type(a), DType::F32);
  std::vector<PromotionOperand> b = {tensor(DType::I32), tensor(DType::F64, 0)};
  EXPECT_EQ(result_type(b), DType::F64);
  std::vector<PromotionOperand> c = {tensor(DType::F64, 0), number(DType::I64)};
  EXPECT_EQ(result_type(c), DType::F64);
  // i64[] + 2.5 -> f32: a 0-dim int tensor with a Python float
  std::vector<PromotionOperand> d = {tensor(DType::I64, 0), number(DType::F64)};
  EXPECT_EQ(result_type(d), DType::F32);
}

TEST(TypePromotion, ElementwiseKinds) {
  std::vector<PromotionOperand> ints = {tensor(DType::I64), tensor(DType::I32)};
  EXPECT_EQ(elementwise_result_dtype(ints, Promote::Default), DType::I64);
  EXPECT_EQ(elementwise_result_dtype(ints, Promote::IntToFloat), DType::F32);
  EXPECT_EQ(elementwise_result_dtype(ints, Promote::AlwaysBool), DType::Bool);
  std::vector<PromotionOperand> bools = {tensor(DType::Bool)};
  EXPECT_EQ(elementwise_result_dtype(bools, Promote::BoolToLong), DType::I64);
  EXPECT_EQ(opmath_dtype(DType::BF16), DType::F32);
  EXPECT_EQ(opmath_dtype(DType::F64), DType::F64);
}

}  // namespace
}  // namespace coil
