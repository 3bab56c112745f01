#include "graph/registry.h"

namespace coil {

const Arg &MetaArgs::arg(std::string_view name) const {
  int i = schema_.find_arg(name);
  COIL_ASSERT(i >= 0, schema_.target(), " has no argument '", name, "'");
  return args_[size_t(i)];
}

bool MetaArgs::is_none(std::string_view name) const { return arg(name).is_none(); }

const TensorType &MetaArgs::tensor(std::string_view name) const {
  const Arg &a = arg(name);
  // The binder lets numbers stand for tensors (PyTorch wraps them); ops that need a
  // real tensor say so here.
  if (!a.is<ValueId>()) throw UserError(str_cat("argument '", name, "' must be a tensor, got ", a.kind_name()), a.loc);
  return graph_.type(a.as<ValueId>());
}

ValueId MetaArgs::value(std::string_view name) const {
  tensor(name);  // the same error for a number where a tensor is needed
  return arg(name).as<ValueId>();
}

const TensorType *MetaArgs::optional_tensor(std::string_view name) const {
  return is_none(name) ? nullptr : &tensor(name);
}

std::vector<const TensorType *> MetaArgs::tensors(std::string_view name) const {
  std::vector<const TensorType *> out;
  for (const Arg &a : arg(name).as<ArgList>())
    out.push_back(a.is_none() ? nullptr : &graph_.type(a.as<ValueId>()));
  return out;
}

namespace {
// A Python number's type as PyTorch wraps it: bool, i64, or f64 marked as a wrapped
// number (promotion turns wrapped floats into the default float).
DType python_number_dtype(const Arg &a) {
  if (a.is<bool>()) return DType::Bool;
  if (a.is_int()) return DType::I64;
  return DType::F64;
}
}  // namespace

Operand MetaArgs::operand(std::string_view name) const {
  const Arg &a = arg(name);
  if (a.is<ValueId>()) return {graph_.type(a.as<ValueId>()), false};
  COIL_ASSERT(a.is_number(), "argument '", name, "' is neither a tensor nor a number");
  return {TensorType{python_number_dtype(a), {}, {}, Device{}}, true};
}

PromotionOperand MetaArgs::scalar(std::string_view name) const {
  return {python_number_dtype(arg(name)), 0, true};
}

int64_t MetaArgs::integer(std::string_view name) const { return arg(name).integer(); }

std::optional<int64_t> MetaArgs::optional_integer(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return integer(name);
}

std::vector<int64_t> MetaArgs::ints(std::string_view name) const {
  std::vector<int64_t> out;
  for (const Arg &a : arg(name).as<ArgList>()) out.push_back(a.integer());
  return out;
}

SymInt MetaArgs::sym_integer(std::string_view name) const { return arg(name).as<SymInt>(); }

std::optional<SymInt> MetaArgs::optional_sym_integer(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return sym_integer(name);
}

SymShape MetaArgs::sym_ints(std::string_view name) const { return arg(name).sym_ints(); }

std::optional<std::vector<int64_t>> MetaArgs::optional_ints(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return ints(name);
}

double MetaArgs::floating(std::string_view name) const {
  const Arg &a = arg(name);
  if (a.is_int()) return double(a.integer());
  if (a.is<bool>()) return a.as<bool>() ? 1.0 : 0.0;
  return a.as<double>();
}

bool MetaArgs::boolean(std::string_view name) const { return arg(name).as<bool>(); }

std::optional<bool> MetaArgs::optional_bool(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return boolean(name);
}

std::optional<std::string> MetaArgs::optional_str(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return arg(name).as<std::string>();
}

std::optional<DType> MetaArgs::optional_dtype(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return arg(name).as<DType>();
}

std::optional<Device> MetaArgs::optional_device(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return arg(name).as<Device>();
}

std::optional<Layout> MetaArgs::optional_layout(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return arg(name).as<Layout>();
}

std::optional<MemoryFormat> MetaArgs::optional_memory_format(std::string_view name) const {
  if (is_none(name)) return std::nullopt;
  return arg(name).as<MemoryFormat>();
}

const Registry &Registry::get() {
  static const Registry registry = [] {
    Registry r;
    register_pointwise_ops(r);
    register_reduction_ops(r);
    register_view_ops(r);
    register_norm_ops(r);
    register_convolution_ops(r);
    register_copy_ops(r);
    register_creation_ops(r);
    register_indexing_ops(r);
    register_matmul_ops(r);
    register_attention_ops(r);
    register_pooling_ops(r);
    return r;
  }();
  return registry;
}

OpDef &Registry::add(std::string_view schema_text, MetaFn meta) {
  Schema schema = parse_schema(schema_text);
  // Defaults in canonical form, so that printers can tell a default argument apart.
  for (SchemaArg &a : schema.args)
    if (a.default_value) a.default_value = canonical_arg(schema, a, *a.default_value);
  std::string target = schema.target();
  COIL_ASSERT(!ops_.count(target), "op registered twice: ", target);
  return ops_.emplace(target, OpDef{std::move(schema), std::move(meta), target}).first->second;
}

const OpDef *Registry::find(std::string_view target) const {
  auto it = ops_.find(target);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpDef *> Registry::ops() const {
  std::vector<const OpDef *> out;
  for (const auto &[name, op] : ops_) out.push_back(&op);
  return out;
}

std::vector<std::string> Registry::overloads_of(std::string_view ns, std::string_view name) const {
  std::vector<std::string> out;
  for (const auto &[target, op] : ops_)
    if (op.schema.ns == ns && op.schema.name == name) out.push_back(target);
  return out;
}

}  // namespace coil
