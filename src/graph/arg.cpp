#include "graph/arg.h"

namespace coil {
namespace {

constexpr std::pair<Layout, std::string_view> kLayouts[] = {
    {Layout::Strided, "strided"}, {Layout::SparseCoo, "sparse_coo"},
    {Layout::SparseCsr, "sparse_csr"}, {Layout::Mkldnn, "_mkldnn"}};
constexpr std::pair<MemoryFormat, std::string_view> kFormats[] = {
    {MemoryFormat::Contiguous, "contiguous_format"}, {MemoryFormat::Preserve, "preserve_format"},
    {MemoryFormat::ChannelsLast, "channels_last"}, {MemoryFormat::ChannelsLast3d, "channels_last_3d"}};

template <typename E, size_t N>
std::string_view lookup_name(const std::pair<E, std::string_view> (&table)[N], E e) {
  for (const auto &[k, name] : table)
    if (k == e) return name;
  return "?";
}

template <typename E, size_t N>
std::optional<E> lookup_value(const std::pair<E, std::string_view> (&table)[N], std::string_view s) {
  for (const auto &[k, name] : table)
    if (name == s) return k;
  return std::nullopt;
}

}  // namespace

std::string_view layout_name(Layout l) { return lookup_name(kLayouts, l); }
std::string_view memory_format_name(MemoryFormat m) { return lookup_name(kFormats, m); }
std::optional<Layout> layout_from_name(std::string_view s) { return lookup_value(kLayouts, s); }
std::optional<MemoryFormat> memory_format_from_name(std::string_view s) {
  return lookup_value(kFormats, s);
}

SymShape Arg::sym_ints() const {
  SymShape out;
  for (const Arg &a : as<ArgList>()) out.push_back(a.as<SymInt>());
  return out;
}

bool Arg::operator==(const Arg &o) const {
  if (v.index() != o.v.index()) return false;
  if (is<SymInt>()) return as<SymInt>().same(o.as<SymInt>());
  if (is<ArgList>()) return as<ArgList>() == o.as<ArgList>();
  return v == o.v;
}

std::string Arg::kind_name() const {
  struct Namer {
    std::string operator()(NoneArg) const { return "None"; }
    std::string operator()(bool) const { return "bool"; }
    std::string operator()(const SymInt &) const { return "int"; }
    std::string operator()(double) const { return "float"; }
    std::string operator()(const std::string &) const { return "str"; }
    std::string operator()(DType) const { return "dtype"; }
    std::string operator()(Device) const { return "device"; }
    std::string operator()(Layout) const { return "layout"; }
    std::string operator()(MemoryFormat) const { return "memory format"; }
    std::string operator()(ValueId) const { return "tensor"; }
    std::string operator()(const ArgList &) const { return "list"; }
  };
  return std::visit(Namer{}, v);
}

}  // namespace coil
