#include "ir/interpreter.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "coil/combines.h"
#include "ir/kernel.h"
#include "ir/scalar_math.h"

namespace coil::ir {
namespace {

/// When and where in a kernel an element of an internal buffer was computed.
struct Stamp {
  int64_t row = -1;    // the kernel's outer point, counted from 0
  int step = -1;       // the pass over the row
  int64_t inner = -1;  // the point of the pass, or -1 for a value computed once per row
};

/// A buffer's elements, by element offset, each already rounded to the buffer's dtype.
/// A buffer a kernel keeps internal also records where each element was computed, so
/// that reading one the fused loop would not have at hand is caught (a fusion bug).
struct Storage {
  DType dtype = DType::F32;
  std::vector<Scalar> elems;
  std::vector<Stamp> stamps;
};

Scalar read_host(const HostTensor &t, int64_t i) {
  switch (t.dtype) {
    case DType::F64: return {t.ptr<double>()[i], 0};
    case DType::F32: return {double(t.ptr<float>()[i]), 0};
    case DType::F16: return {double(half_to_float(t.ptr<uint16_t>()[i])), 0};
    case DType::BF16: return {double(bf16_to_float(t.ptr<uint16_t>()[i])), 0};
    case DType::I64: return {0, t.ptr<int64_t>()[i]};
    case DType::I32: return {0, t.ptr<int32_t>()[i]};
    case DType::I16: return {0, t.ptr<int16_t>()[i]};
    case DType::I8: return {0, t.ptr<int8_t>()[i]};
    case DType::U8: return {0, t.ptr<uint8_t>()[i]};
    case DType::Bool: return {0, t.ptr<uint8_t>()[i] != 0};
  }
  return {};
}

void write_host(HostTensor &t, int64_t i, Scalar v) {
  switch (t.dtype) {
    case DType::F64: t.ptr<double>()[i] = v.f; return;
    case DType::F32: t.ptr<float>()[i] = float(v.f); return;
    case DType::F16: t.ptr<uint16_t>()[i] = float_to_half(float(v.f)); return;
    case DType::BF16: t.ptr<uint16_t>()[i] = float_to_bf16(float(v.f)); return;
    case DType::I64: t.ptr<int64_t>()[i] = v.i; return;
    case DType::I32: t.ptr<int32_t>()[i] = int32_t(v.i); return;
    case DType::I16: t.ptr<int16_t>()[i] = int16_t(v.i); return;
    case DType::I8: t.ptr<int8_t>()[i] = int8_t(v.i); return;
    case DType::U8: t.ptr<uint8_t>()[i] = uint8_t(v.i); return;
    case DType::Bool: t.ptr<uint8_t>()[i] = v.i != 0; return;
  }
}

/// Visits every point of `sizes` in row-major order.
template <typename F>
void for_each_point(const Shape &sizes, std::vector<int64_t> &point, size_t first, F &&f) {
  for (int64_t s : sizes)
    if (s == 0) return;
  size_t n = sizes.size();
  std::vector<int64_t> idx(n, 0);
  while (true) {
    for (size_t d = 0; d < n; ++d) point[first + d] = idx[d];
    f();
    size_t d = n;
    while (d > 0) {
      if (++idx[d - 1] < sizes[d - 1]) break;
      idx[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

struct Accumulator;

class Interpreter {
 public:
  explicit Interpreter(const Program &p) : p_(p), storage_(p.buffers.size()) {}

  std::vector<HostTensor> run(const TensorList &inputs) {
    for (BufferId b : p_.inputs) bind_input(b, inputs);
    for (const Node &n : p_.nodes) run_node(n);
    return outputs();
  }

  std::vector<HostTensor> run(const ScheduledProgram &s, const TensorList &inputs) {
    for (BufferId b : p_.inputs) bind_input(b, inputs);
    for (const Kernel &k : s.kernels) {
      if (k.is_loop_nest()) {
        run_kernel(k);
        continue;
      }
      for (int n : k.nodes) run_node(p_.nodes[size_t(n)]);
    }
    return outputs();
  }

 private:
  void bind_input(BufferId b, const TensorList &inputs) {
    const Buffer &buf = p_.buffer(b);
    const HostTensor *t = find_tensor(inputs, buf.name);
    COIL_USER_CHECK(t, "missing input tensor '", buf.name, "'");
    COIL_USER_CHECK(t->dtype == buf.type.dtype && t->sizes == buf.type.sizes, "input '", buf.name, "' is ",
                    t->describe(), " but the graph expects ", short_name(buf.type.dtype), shape_str(buf.type.sizes));
    Storage &s = allocate(b);
    // Host tensors are dense row-major; place each element at its strided offset.
    Shape contiguous = contiguous_strides(buf.type.sizes);
    std::vector<int64_t> point(buf.type.sizes.size());
    for_each_point(buf.type.sizes, point, 0, [&] {
      int64_t src = 0, dst = 0;
      for (size_t d = 0; d < point.size(); ++d) {
        src += point[d] * contiguous[d];
        dst += point[d] * buf.type.strides[d];
      }
      s.elems[size_t(dst)] = read_host(*t, src);
    });
  }

  Storage &allocate(BufferId b) {
    const Buffer &buf = p_.buffer(b);
    Storage &s = storage_[size_t(b)];
    s.dtype = buf.type.dtype;
    s.elems.assign(size_t(storage_extent(buf.type)), Scalar{});
    return s;
  }

  std::vector<HostTensor> outputs() const {
    std::vector<HostTensor> out;
    for (size_t i = 0; i < p_.outputs.size(); ++i) {
      const Buffer &buf = p_.buffer(p_.outputs[i]);
      View whole{p_.outputs[i], buf.type.sizes, buf.type.strides, 0};
      out.push_back(to_host(i < p_.output_views.size() ? p_.output_views[i] : whole));
    }
    return out;
  }

  HostTensor to_host(const View &v) const {
    BufferId b = v.buffer;
    const Buffer &buf = p_.buffer(b);
    HostTensor t = HostTensor::zeros(buf.type.dtype, v.sizes);
    std::vector<int64_t> point(v.sizes.size());
    int64_t flat = 0;
    for_each_point(v.sizes, point, 0, [&] {
      int64_t src = v.offset;
      for (size_t d = 0; d < point.size(); ++d) src += point[d] * v.strides[d];
      write_host(t, flat++, storage_[size_t(b)].elems[size_t(src)]);
    });
    return t;
  }

  // Evaluates every value of `body` at `point`.
  std::vector<Scalar> eval(const Body &body, const std::vector<int64_t> &point) const {
    std::vector<Scalar> v(body.instrs.size());
    for (size_t k = 0; k < body.instrs.size(); ++k) v[k] = eval_instr(body, v, k, point);
    return v;
  }

  Scalar eval_instr(const Body &body, const std::vector<Scalar> &v, size_t k, const std::vector<int64_t> &point) const {
    const Instr &i = body.instrs[k];
    switch (i.op) {
      case Op::Constant: return Scalar::of(i.value, i.dtype);
      case Op::Index: return Scalar::of(double(ir::eval(i.index, point)), i.dtype);
      case Op::Load: return load(i, v, point);
      default: break;
    }
    auto arg = [&](int n) { return i.args[size_t(n)] >= 0 ? v[size_t(i.args[size_t(n)])] : Scalar{}; };
    if (is_logical(i.op)) {  // each operand's truth by its own dtype
      auto truth = [&](int n) { return Scalar::of(arg(n).truthy(body.at(i.args[size_t(n)]).dtype), DType::Bool); };
      return apply_op(i.op, DType::Bool, i.dtype, truth(0), truth(1));
    }
    DType in = i.op == Op::Where ? i.dtype : body.at(i.args[0]).dtype;
    return apply_op(i.op, in, i.dtype, arg(0), arg(1), arg(2));
  }

  Scalar load(const Instr &i, const std::vector<Scalar> &v, const std::vector<int64_t> &point) const {
    if (i.args[0] >= 0 && v[size_t(i.args[0])].i == 0) return Scalar::of(i.value, i.dtype);
    const Storage &s = storage_[size_t(i.buffer)];
    if (!i.indirect.empty()) return indirect_load(i, v, point);
    int64_t at = ir::eval(i.index, point);
    COIL_ASSERT(at >= 0 && at < int64_t(s.elems.size()), "load of ", p_.buffer(i.buffer).name, "[", at,
                "] out of its ", s.elems.size(), " elements");
    if (!s.stamps.empty()) check_at_hand(i.buffer, at);
    return s.elems[size_t(at)];
  }

  // An index read from the data may be out of range: that is the user's error, as in
  // PyTorch, not coil's.
  Scalar indirect_load(const Instr &i, const std::vector<Scalar> &v, const std::vector<int64_t> &point) const {
    std::vector<int64_t> extended = point;
    extended.resize(size_t(kIndirectBase) + i.indirect.size(), 0);
    for (size_t k = 0; k < i.indirect.size(); ++k) extended[size_t(kIndirectBase) + k] = v[size_t(i.indirect[k])].i;
    const Storage &s = storage_[size_t(i.buffer)];
    int64_t at = ir::eval(i.index, extended);
    COIL_USER_CHECK(at >= 0 && at < int64_t(s.elems.size()), "an index read from the data is out of range for ",
                    p_.buffer(i.buffer).name);
    return s.elems[size_t(at)];
  }

  void store(BufferId b, const Node &n, const std::vector<int64_t> &point, Scalar value) {
    store_at(b, ir::eval(store_index(n, p_.buffer(b)), point), value);
  }
  void store_at(BufferId b, int64_t at, Scalar value) {
    Storage &s = storage_[size_t(b)];
    s.elems[size_t(at)] = round_to(value, s.dtype);
    if (!s.stamps.empty()) s.stamps[size_t(at)] = now_;
  }

  // A kernel reads an internal buffer only where its loop has the value at hand: in the
  // same row, and at the same point of the same pass unless it was computed once per row.
  void check_at_hand(BufferId b, int64_t at) const {
    const Stamp &s = storage_[size_t(b)].stamps[size_t(at)];
    bool ok = s.row == now_.row && (s.inner < 0 || (s.step == now_.step && s.inner == now_.inner));
    COIL_ASSERT(ok, "a fused kernel reads ", p_.buffer(b).name, "[", at, "], which its loop has not computed at this point");
  }

  void run_node(const Node &n) {
    for (BufferId b : n.outputs) allocate(b);
    switch (n.kind) {
      case NodeKind::Pointwise: return run_pointwise(n);
      case NodeKind::Reduction: return run_reduction(n);
      case NodeKind::Scan: return run_scan(n);
      case NodeKind::Extern: return run_extern(n);
      case NodeKind::Scatter: return run_scatter(n);
    }
  }

  void run_pointwise(const Node &n) {
    std::vector<int64_t> point(size_t(n.num_vars()), 0);
    Shape space = n.ranges;
    space.insert(space.end(), n.reduction_ranges.begin(), n.reduction_ranges.end());
    for_each_point(space, point, 0, [&] { run_pointwise_at(n, point); });
  }

  void run_pointwise_at(const Node &n, const std::vector<int64_t> &point) {
    auto v = eval(n.body, point);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Instr &r = n.body.at(n.body.results[k]);
      store(n.outputs[k], n, point, cast(v[size_t(n.body.results[k])], r.dtype, p_.buffer(n.outputs[k]).type.dtype));
    }
  }

  void run_kernel(const Kernel &k);
  void run_reduction(const Node &n);
  void finish_reduction(const Node &n, const Accumulator &acc, const std::vector<int64_t> &point);
  void run_scan(const Node &n);
  void run_extern(const Node &n);
  void run_product(const Node &n);
  void run_scatter(const Node &n);
  void run_convolution(const Node &n);
  void run_convolution_weight_grad(const Node &n);
  void run_attention(const Node &n);
  double read(const View &v, const std::vector<int64_t> &index) const;

  const Program &p_;
  std::vector<Storage> storage_;
  Stamp now_;
};

// Accumulators in double (floats) or int64 (integers): the reference is at least as
// accurate as eager, and the tolerances of the testing tiers allow for the difference.
struct Accumulator {
  ReduceOp op;
  DType dtype;
  double f = 0;
  int64_t i = 0;
  int64_t count = 0, arg = -1;
  double mean = 0, m2 = 0;

  void init() {
    bool fl = is_floating(dtype);
    switch (op) {
      case ReduceOp::Sum: case ReduceOp::Any: case ReduceOp::Welford: break;
      case ReduceOp::Prod: case ReduceOp::All: f = 1; i = 1; break;
      case ReduceOp::Max: case ReduceOp::ArgMax:
        f = -INFINITY; i = std::numeric_limits<int64_t>::min(); break;
      case ReduceOp::Min: case ReduceOp::ArgMin:
        f = INFINITY; i = std::numeric_limits<int64_t>::max(); break;
    }
    (void)fl;
  }

  void add(Scalar x, int64_t position) {
    bool fl = is_floating(dtype);
    double xf = x.as_double(dtype);
    switch (op) {
      case ReduceOp::Sum: fl ? void(f += x.f) : void(i = int64_t(uint64_t(i) + uint64_t(x.i))); break;
      case ReduceOp::Prod: fl ? void(f *= x.f) : void(i = int64_t(uint64_t(i) * uint64_t(x.i))); break;
      case ReduceOp::Max: fl ? void(f = std::isnan(f) || std::isnan(x.f) ? NAN : std::max(f, x.f)) : void(i = std::max(i, x.i)); break;
      case ReduceOp::Min: fl ? void(f = std::isnan(f) || std::isnan(x.f) ? NAN : std::min(f, x.f)) : void(i = std::min(i, x.i)); break;
      case ReduceOp::Any: i = i || x.truthy(dtype); break;
      case ReduceOp::All: i = i && x.truthy(dtype); break;
      case ReduceOp::ArgMax: case ReduceOp::ArgMin: take_arg(x, position); break;
      case ReduceOp::Welford: {
        ++count;
        double delta = xf - mean;
        mean += delta / double(count);
        m2 += delta * (xf - mean);
        break;
      }
    }
  }

  // PyTorch's tie rule: the first extreme wins, and NaN counts as the extreme.
  void take_arg(Scalar x, int64_t position) {
    bool fl = is_floating(dtype);
    if (arg < 0) {
      arg = position;
      f = x.f;
      i = x.i;
      return;
    }
    if (fl && std::isnan(f)) return;
    bool better = fl ? (std::isnan(x.f) || (op == ReduceOp::ArgMax ? x.f > f : x.f < f))
                     : (op == ReduceOp::ArgMax ? x.i > i : x.i < i);
    if (!better) return;
    arg = position;
    f = x.f;
    i = x.i;
  }
};

void Interpreter::run_reduction(const Node &n) {
  std::vector<int64_t> point(size_t(n.num_vars()), 0);
  DType in = n.body.at(n.body.results[0]).dtype;
  for_each_point(n.ranges, point, 0, [&] {
    Accumulator acc{n.reduce_op, in};
    acc.init();
    int64_t position = 0;
    for_each_point(n.reduction_ranges, point, n.ranges.size(), [&] {
      acc.add(eval(n.body, point)[size_t(n.body.results[0])], position++);
    });
    finish_reduction(n, acc, point);
  });
}

void Interpreter::finish_reduction(const Node &n, const Accumulator &acc, const std::vector<int64_t> &point) {
  auto out_dtype = [&](size_t k) { return p_.buffer(n.outputs[k]).type.dtype; };
  switch (n.reduce_op) {
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: store(n.outputs[0], n, point, Scalar::of(double(acc.arg), out_dtype(0))); return;
    case ReduceOp::Welford:
      store(n.outputs[0], n, point, Scalar::of(acc.count ? acc.mean : NAN, out_dtype(0)));
      store(n.outputs[1], n, point, Scalar::of(acc.m2, out_dtype(1)));
      store(n.outputs[2], n, point, Scalar::of(double(acc.count), out_dtype(2)));
      return;
    case ReduceOp::Any:
    case ReduceOp::All: store(n.outputs[0], n, point, cast(Scalar{0, acc.i}, DType::Bool, out_dtype(0))); return;
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::Max:
    case ReduceOp::Min: store(n.outputs[0], n, point, cast(Scalar{acc.f, acc.i}, acc.dtype, out_dtype(0))); return;
  }
}

// A fused kernel, row by row: each pass over the reduction ranges runs its members at
// every point (reductions accumulate, pointwise members store), each once-per-row step
// runs its members at the row's point. Internal buffers are stamped to catch a read
// of a value the loop would not have at hand.
void Interpreter::run_kernel(const Kernel &k) {
  for (int n : k.nodes) {
    for (BufferId b : p_.nodes[size_t(n)].outputs)
      if (b >= 0) allocate(b);
  }
  for (BufferId b : k.internal) storage_[size_t(b)].stamps.assign(storage_[size_t(b)].elems.size(), Stamp{});
  std::vector<int64_t> point(k.ranges.size() + k.reduction_ranges.size(), 0);
  now_ = Stamp{};
  for_each_point(k.ranges, point, 0, [&] {
    ++now_.row;
    for (size_t s = 0; s < k.steps.size(); ++s) {
      const Step &step = k.steps[s];
      now_.step = int(s);
      now_.inner = -1;
      std::fill(point.begin() + long(k.ranges.size()), point.end(), 0);
      if (!step.inner) {
        for (int n : step.nodes) run_pointwise_at(p_.nodes[size_t(n)], point);
        continue;
      }
      std::vector<Accumulator> accs;
      for (int n : step.nodes) {
        const Node &node = p_.nodes[size_t(n)];
        DType in = node.kind == NodeKind::Reduction ? node.body.at(node.body.results[0]).dtype : DType::F32;
        accs.push_back(Accumulator{node.reduce_op, in});
        accs.back().init();
      }
      for_each_point(k.reduction_ranges, point, k.ranges.size(), [&] {
        ++now_.inner;
        for (size_t m = 0; m < step.nodes.size(); ++m) {
          const Node &node = p_.nodes[size_t(step.nodes[m])];
          if (node.kind == NodeKind::Reduction) {
            accs[m].add(eval(node.body, point)[size_t(node.body.results[0])], now_.inner);
          } else {
            run_pointwise_at(node, point);
          }
        }
      });
      now_.inner = -1;
      for (size_t m = 0; m < step.nodes.size(); ++m) {
        const Node &node = p_.nodes[size_t(step.nodes[m])];
        if (node.kind == NodeKind::Reduction) finish_reduction(node, accs[m], point);
      }
    }
  });
  for (BufferId b : k.internal) storage_[size_t(b)].stamps.clear();
}

// An inclusive prefix sum, product, maximum, minimum or log-sum-exp along scan_dim,
// accumulated in double or int64 (integers wrap; a NaN stays once seen).
void Interpreter::run_scan(const Node &n) {
  Shape outer = n.ranges;
  int64_t len = outer[size_t(n.scan_dim)];
  outer[size_t(n.scan_dim)] = 1;
  std::vector<int64_t> point(size_t(n.num_vars()), 0);
  DType in = n.body.at(n.body.results[0]).dtype;
  ScanOp op = n.scan_op;
  COIL_ASSERT(op != ScanOp::LogAddExp || is_floating(in), "logaddexp scans floats");
  bool prod = op == ScanOp::Prod, max = op == ScanOp::Max;
  for_each_point(outer, point, 0, [&] {
    Scalar acc{};
    acc.f = prod ? 1 : 0;
    acc.i = prod ? 1 : 0;
    if (op == ScanOp::LogAddExp) acc.f = -std::numeric_limits<double>::infinity();
    if (op == ScanOp::Max || op == ScanOp::Min) {
      acc.f = max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      acc.i = max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    }
    for (int64_t k = 0; k < len; ++k) {
      point[size_t(n.scan_dim)] = k;
      Scalar x = eval(n.body, point)[size_t(n.body.results[0])];
      if (op == ScanOp::LogAddExp) {
        acc.f = coil_rt::log_add_exp(acc.f, x.f);
      } else if (op == ScanOp::Max || op == ScanOp::Min) {
        if (is_floating(in)) {
          acc.f = max ? coil_rt::max_nan(acc.f, x.f) : coil_rt::min_nan(acc.f, x.f);
        } else {
          acc.i = max ? std::max(acc.i, x.i) : std::min(acc.i, x.i);
        }
      } else if (is_floating(in)) {
        acc.f = prod ? acc.f * x.f : acc.f + x.f;
      } else {
        acc.i = int64_t(prod ? uint64_t(acc.i) * uint64_t(x.i) : uint64_t(acc.i) + uint64_t(x.i));
      }
      store(n.outputs[0], n, point, cast(acc, in, p_.buffer(n.outputs[0]).type.dtype));
    }
    point[size_t(n.scan_dim)] = 0;
  });
}

// The element of operand `v` at `index`, as a double.
double Interpreter::read(const View &v, const std::vector<int64_t> &index) const {
  int64_t at = v.offset;
  for (size_t d = 0; d < index.size(); ++d) at += index[d] * v.strides[d];
  const Storage &s = storage_[size_t(v.buffer)];
  return s.elems.at(size_t(at)).as_double(s.dtype);
}

// out[b, i, j] = beta * bias[b, i, j] + alpha * sum_k A[b, i, k] * B[b, k, j], every
// product of the family seen as batched (mm: one batch; mv: B has one column).
void Interpreter::run_product(const Node &n) {
  bool has_bias = n.operands.size() == 3;
  const View &a = n.operands[has_bias ? 1 : 0];
  const View &b = n.operands[has_bias ? 2 : 1];
  bool batched = a.sizes.size() == 3, vector = b.sizes.size() == 1;
  int64_t batches = batched ? int64_t(a.sizes[0]) : 1, rows = a.sizes[batched ? 1 : 0], inner = a.sizes.back();
  int64_t cols = vector ? 1 : int64_t(b.sizes.back());
  double alpha = n.scalars.count("alpha") ? n.scalars.at("alpha") : 1;
  double beta = n.scalars.count("beta") ? n.scalars.at("beta") : 1;
  const Buffer &out = p_.buffer(n.outputs[0]);
  auto at = [&](std::vector<int64_t> full, size_t rank) {  // the last `rank` indices
    return std::vector<int64_t>(full.end() - long(rank), full.end());
  };
  std::vector<int64_t> point(n.ranges.size());
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < inner; ++k)
          acc += read(a, at({bt, i, k}, a.sizes.size())) * read(b, vector ? std::vector<int64_t>{k} : at({bt, k, j}, b.sizes.size()));
        double v = alpha * acc;
        // mv's result has no column dim.
        std::vector<int64_t> o = vector ? std::vector<int64_t>{i} : at({bt, i, j}, out.type.sizes.size());
        if (has_bias) {
          // The bias broadcasts to the result: size-1 and missing leading dims read 0.
          const View &bias = n.operands[0];
          std::vector<int64_t> bi = at(o, bias.sizes.size());
          for (size_t d = 0; d < bi.size(); ++d)
            if (bias.sizes[d] == 1) bi[d] = 0;
          if (beta != 0) v += beta * read(bias, bi);
        }
        for (size_t d = 0; d < o.size(); ++d) point[d] = o[d];
        store(n.outputs[0], n, point, Scalar::of(v, out.type.dtype));
      }
}

// A direct convolution: groups, stride, padding and dilation, any number of spatial
// dims. Transposed, output o gathers input i wherever o = i*stride - padding + k*dilation;
// its weight is [in, out / groups, window...]. With attr weight_grad, the operands are x
// and dy and the output the weight's gradient (run_convolution_weight_grad).
void Interpreter::run_convolution(const Node &n) {
  if (n.attrs.count("weight_grad") && n.attrs.at("weight_grad")[0]) return run_convolution_weight_grad(n);
  const View &x = n.operands[0], &w = n.operands[1], &bias = n.operands[2];
  const Buffer &out = p_.buffer(n.outputs[0]);
  const auto &stride = n.attrs.at("stride"), &padding = n.attrs.at("padding"), &dilation = n.attrs.at("dilation");
  int64_t groups = n.attrs.at("groups")[0];
  bool transposed = n.attrs.count("transposed") && n.attrs.at("transposed")[0];
  int64_t cin_g = transposed ? int64_t(w.sizes[0]) / groups : int64_t(w.sizes[1]);
  int64_t cout_g = transposed ? int64_t(w.sizes[1]) : int64_t(w.sizes[0]) / groups;
  Shape window(w.sizes.begin() + 2, w.sizes.end());
  size_t spatial = window.size();
  std::vector<int64_t> point(n.ranges.size(), 0);
  for_each_point(out.type.sizes, point, 0, [&] {
    int64_t batch = point[0], co = point[1], g = co / cout_g;
    double acc = bias.buffer >= 0 ? read(bias, {co}) : 0;
    std::vector<int64_t> kpos(spatial, 0);
    for (int64_t ci = 0; ci < cin_g; ++ci) {
      for_each_point(window, kpos, 0, [&] {
        std::vector<int64_t> xi = {batch, g * cin_g + ci};
        for (size_t d = 0; d < spatial; ++d) {
          int64_t pos = point[2 + d] * stride[d] - padding[d] + kpos[d] * dilation[d];
          if (transposed) {
            int64_t shifted = point[2 + d] + padding[d] - kpos[d] * dilation[d];
            if (shifted < 0 || shifted % stride[d] != 0) return;
            pos = shifted / stride[d];
          }
          if (pos < 0 || pos >= x.sizes[2 + d]) return;
          xi.push_back(pos);
        }
        std::vector<int64_t> wi;
        wi.reserve(2 + spatial);
        wi.push_back(transposed ? g * cin_g + ci : co);
        wi.push_back(transposed ? co % cout_g : ci);
        for (int64_t k : kpos) wi.push_back(k);
        acc += read(x, xi) * read(w, wi);
      });
    }
    store(n.outputs[0], n, point, Scalar::of(acc, out.type.dtype));
  });
}

// dw[co, ci, k...] = sum over the batch and output positions o of dy[b, co, o] *
// x[b, g * cin_g + ci, o * stride - padding + k * dilation], where that lies inside x.
void Interpreter::run_convolution_weight_grad(const Node &n) {
  const View &x = n.operands[0], &dy = n.operands[1];
  const Buffer &out = p_.buffer(n.outputs[0]);
  const auto &stride = n.attrs.at("stride"), &padding = n.attrs.at("padding"), &dilation = n.attrs.at("dilation");
  int64_t cin_g = out.type.sizes[1], cout_g = out.type.sizes[0] / n.attrs.at("groups")[0];
  size_t spatial = out.type.sizes.size() - 2;
  Shape positions = {dy.sizes[0]};
  positions.insert(positions.end(), dy.sizes.begin() + 2, dy.sizes.end());
  std::vector<int64_t> point(out.type.sizes.size(), 0), at(positions.size(), 0);
  for_each_point(out.type.sizes, point, 0, [&] {
    int64_t co = point[0], channel = co / cout_g * cin_g + point[1];
    double acc = 0;
    for_each_point(positions, at, 0, [&] {
      std::vector<int64_t> xi = {at[0], channel}, dyi = {at[0], co};
      for (size_t d = 0; d < spatial; ++d) {
        int64_t pos = at[d + 1] * stride[d] - padding[d] + point[d + 2] * dilation[d];
        if (pos < 0 || pos >= x.sizes[d + 2]) return;
        xi.push_back(pos);
        dyi.push_back(at[d + 1]);
      }
      acc += read(dy, dyi) * read(x, xi);
    });
    store(n.outputs[0], n, point, Scalar::of(acc, out.type.dtype));
  });
}

// Copy the initial tensor, then write each body value at its data-dependent offset in
// iteration order (the last write to an element wins, as on PyTorch's CPU).
void Interpreter::run_scatter(const Node &n) {
  const View &init = n.operands[0];
  const Buffer &out = p_.buffer(n.outputs[0]);
  Storage &s = storage_[size_t(n.outputs[0])];
  std::vector<int64_t> point(out.type.sizes.size(), 0);
  for_each_point(out.type.sizes, point, 0, [&] {
    int64_t from = init.offset, to = 0;
    for (size_t d = 0; d < point.size(); ++d) {
      from += point[d] * init.strides[d];
      to += point[d] * out.type.strides[d];
    }
    s.elems[size_t(to)] = round_to(storage_[size_t(init.buffer)].elems.at(size_t(from)), s.dtype);
  });
  std::vector<int64_t> at(size_t(kIndirectBase) + n.body.results.size(), 0);
  for_each_point(n.ranges, at, 0, [&] {
    auto v = eval(n.body, at);
    for (size_t k = 1; k < n.body.results.size(); ++k) at[size_t(kIndirectBase) + k - 1] = v[size_t(n.body.results[k])].i;
    int64_t offset = ir::eval(n.scatter_index, at);
    COIL_USER_CHECK(offset >= 0 && offset < int64_t(s.elems.size()), "a scatter index is out of range for ", out.name);
    Scalar value = cast(v[size_t(n.body.results[0])], n.body.at(n.body.results[0]).dtype, s.dtype);
    Scalar &dst = s.elems[size_t(offset)];
    dst = n.accumulate ? round_to(apply_op(n.combine, s.dtype, s.dtype, dst, value), s.dtype) : value;
  });
}

// The parts of attention (ir::AttentionPart) in double, over the scores
// S_ij = scale * q[b, h, i] . k[b, h / kv_group, j] + mask: keys past i dropped when causal,
// and where a boolean mask is false. The output is softmax(S) v, 0 for a row with every key
// dropped (PyTorch's math backend); the logsumexp of such a row is -inf. The gradients
// recompute P = exp(S - lse) from the logsumexp operand.
void Interpreter::run_attention(const Node &n) {
  ir::AttentionCall c = ir::attention_call(n);
  const View &q = *c.q, &k = *c.k, &v = *c.v;
  bool bool_mask = c.mask && p_.buffer(c.mask->buffer).type.dtype == DType::Bool;
  int64_t e = q.sizes[3], s = k.sizes[2], ev = v.sizes[3], rows = q.sizes[2], group = c.group;
  DType q_dtype = p_.buffer(q.buffer).type.dtype;
  // A weight as the fused kernels multiply it: rounded to the inputs' dtype (bf16, f16).
  auto operand = [&](double x) { return round_to(Scalar::of(x, q_dtype), q_dtype).as_double(q_dtype); };
  // Output `i` of the call (a whole buffer) at index `at`.
  auto put = [&](size_t i, const std::vector<int64_t> &at, double x) {
    const TensorType &t = p_.buffer(n.outputs[i]).type;
    int64_t offset = 0;
    for (size_t d = 0; d < at.size(); ++d) offset += at[d] * t.strides[d];
    store_at(n.outputs[i], offset, Scalar::of(x, t.dtype));
  };
  // Row i of the scores into `score`; returns its max (NaN if any is NaN).
  std::vector<double> score(static_cast<size_t>(s));
  auto scores = [&](int64_t b, int64_t h, int64_t i) {
    double top = -INFINITY;
    for (int64_t j = 0; j < s; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < e; ++d) dot += read(q, {b, h, i, d}) * read(k, {b, h / group, j, d});
      dot *= c.scale;
      if (c.mask) {
        double m = read(*c.mask, {b, h, i, j});
        dot = bool_mask ? (m != 0 ? dot : -INFINITY) : dot + m;
      }
      if (c.causal && j > i) dot = -INFINITY;
      score[size_t(j)] = dot;
      top = std::isnan(dot) || std::isnan(top) ? NAN : std::max(top, dot);
    }
    return top;
  };
  for (int64_t b = 0; b < q.sizes[0]; ++b)
    for (int64_t h = 0; h < q.sizes[1]; ++h) {
      if (!c.gradient()) {
        for (int64_t i = 0; i < rows; ++i) {
          double top = scores(b, h, i), sum = 0;
          // The weights sum unrounded and multiply the values rounded.
          for (double &x : score) {
            sum += x = top == -INFINITY ? 0 : std::exp(x - top);
            x = operand(x);
          }
          if (c.writes_logsumexp) put(1, {b, h, i}, top == -INFINITY ? -INFINITY : top + std::log(sum));
          for (int64_t d = 0; d < ev; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < s; ++j) acc += score[size_t(j)] * read(v, {b, h / group, j, d});
            put(0, {b, h, i, d}, top == -INFINITY ? 0 : acc / sum);
          }
        }
        continue;
      }
      // The gradients: P and dS of this head, [rows, s] each.
      std::vector<double> prob(size_t(rows * s)), grad_score(size_t(rows * s));
      for (int64_t i = 0; i < rows; ++i) {
        scores(b, h, i);
        double lse = read(*c.lse, {b, h, i}), shift = lse == -INFINITY ? 0 : lse, delta = read(*c.delta, {b, h, i});
        for (int64_t j = 0; j < s; ++j) {
          double pij = std::exp(score[size_t(j)] - shift), dp = 0;
          for (int64_t d = 0; d < ev; ++d) dp += read(*c.grad_out, {b, h, i, d}) * read(v, {b, h / group, j, d});
          prob[size_t(i * s + j)] = operand(pij);
          grad_score[size_t(i * s + j)] = operand(pij * (dp - delta) * c.scale);
        }
      }
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t d = 0; d < e; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j) acc += grad_score[size_t(i * s + j)] * read(k, {b, h / group, j, d});
          put(0, {b, h, i, d}, acc);
        }
      for (int64_t j = 0; j < s; ++j) {
        for (int64_t d = 0; d < e; ++d) {
          double acc = 0;
          for (int64_t i = 0; i < rows; ++i) acc += grad_score[size_t(i * s + j)] * read(q, {b, h, i, d});
          put(1, {b, h, j, d}, acc);
        }
        for (int64_t d = 0; d < ev; ++d) {
          double acc = 0;
          for (int64_t i = 0; i < rows; ++i) acc += prob[size_t(i * s + j)] * read(*c.grad_out, {b, h, i, d});
          put(2, {b, h, j, d}, acc);
        }
      }
    }
}

void Interpreter::run_extern(const Node &n) {
  switch (n.extern_op) {
    case ExternOp::Mm:
    case ExternOp::Bmm:
    case ExternOp::Addmm:
    case ExternOp::Baddbmm:
    case ExternOp::Mv:
    case ExternOp::Addmv: return run_product(n);
    case ExternOp::Convolution: return run_convolution(n);
    case ExternOp::Attention: return run_attention(n);
  }
}

}  // namespace

std::vector<HostTensor> interpret(const Program &p, const TensorList &inputs) {
  return Interpreter(p).run(inputs);
}

std::vector<HostTensor> interpret(const ScheduledProgram &s, const TensorList &inputs) {
  return Interpreter(s.program).run(s, inputs);
}

}  // namespace coil::ir
