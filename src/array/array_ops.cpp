// Host implementations of the array operations, registered at load time.
#include "array_ops.hpp"

#include <cmath>
#include <cstring>

#include "wrapping.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::detail {

const char* ew_name(EwOp op) {
  static const char* names[] = {"negative", "absolute", "exp", "log", "log1p", "sqrt", "square", "sin", "cos",
                                "tan", "tanh", "floor", "ceil", "sign", "isnan", "isfinite", "logical_not",
                                "astype", "add", "subtract", "multiply", "divide", "floor_divide", "mod",
                                "power", "minimum", "maximum", "less", "less_equal", "greater",
                                "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "where",
                                "trunc", "rint", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
                                "sinh", "cosh", "log2", "log10", "exp2", "expm1", "cbrt", "invert", "arctan2",
                                "hypot", "logaddexp", "logaddexp2", "copysign", "fmin", "fmax", "fmod",
                                "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "i0", "spacing", "frexp_mantissa", "frexp_exponent",
                                "nextafter"};
  const auto i = static_cast<std::size_t>(op);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
}

int partial_components(std::uint8_t kind) {
  switch (static_cast<ReduceKind>(kind)) {
    case ReduceKind::Mean: case ReduceKind::NanMean: return 2;  // sum, count
    case ReduceKind::Var: case ReduceKind::Std: return 3;  // count, mean, M2
    case ReduceKind::ArgMin: case ReduceKind::ArgMax: return 2;  // value, index
    default: return 1;
  }
}

DType partial_dtype(std::uint8_t kind, DType input) {
  switch (static_cast<ReduceKind>(kind)) {
    case ReduceKind::Sum: case ReduceKind::Prod: case ReduceKind::Min: case ReduceKind::Max:
      return is_floating(input) ? DType::Float64 : DType::Int64;
    case ReduceKind::Any: case ReduceKind::All: return DType::Int64;
    default: return DType::Float64;
  }
}

void copy_box(const Block& src, const std::vector<std::int64_t>& src_start, Block& dst,
              const std::vector<std::int64_t>& dst_start, const std::vector<std::int64_t>& extent) {
  const int d = static_cast<int>(extent.size());
  if (src.dtype() != dst.dtype()) throw DTypeError("copy_box: dtype mismatch");
  for (auto e : extent)
    if (e <= 0) return;
  const std::size_t isz = itemsize(src.dtype());
  const auto ss = row_major_strides(src.shape());
  const auto ds = row_major_strides(dst.shape());
  const std::int64_t L = d ? extent[d - 1] : 1;
  std::vector<std::int64_t> c(std::max(d - 1, 0), 0);
  const char* sp = static_cast<const char*>(src.raw());
  char* dp = static_cast<char*>(dst.raw());
  while (true) {
    std::int64_t so = 0, dof = 0;
    for (int a = 0; a < d; ++a) {
      const std::int64_t x = a + 1 < d ? c[a] : 0;
      so += (src_start[a] + x) * ss[a];
      dof += (dst_start[a] + x) * ds[a];
    }
    std::memcpy(dp + dof * isz, sp + so * isz, L * isz);
    int a = d - 2;
    for (; a >= 0; --a) {
      if (++c[a] < extent[a]) break;
      c[a] = 0;
    }
    if (a < 0) break;
  }
}

namespace {

std::vector<const Block*> block_args(std::span<const Value> args, std::size_t first) {
  std::vector<const Block*> blocks;
  for (std::size_t i = first; i < args.size(); ++i) blocks.push_back(&args[i].block());
  return blocks;
}

Value blockwise(const OpContext&, std::span<const Value> args) {
  if (args.empty()) throw Error("blockwise: missing program");
  const auto prog = from_value<Program>(args[0]);
  return Value(run_program(prog, block_args(args, 1)));
}

Value assemble(const OpContext&, std::span<const Value> args) {
  const auto p = from_value<AssembleParams>(args[0]);
  Block out(p.dtype, p.shape);
  for (const auto& piece : p.pieces) {
    const std::size_t i = static_cast<std::size_t>(piece.arg) + 1;
    if (i >= args.size()) throw Error("assemble: piece reads a missing argument");
    copy_box(args[i].block(), piece.src_start, out, piece.dst_start, piece.extent);
  }
  return Value(std::move(out));
}

template <typename A>
void combine_into(ReduceKind kind, A* acc, const A* x, std::int64_t slots, int comps) {
  for (std::int64_t s = 0; s < slots; ++s) {
    A* a = acc + s * comps;
    const A* b = x + s * comps;
    switch (kind) {
      case ReduceKind::Sum: case ReduceKind::Any: a[0] = kind == ReduceKind::Any ? (a[0] || b[0]) : wrapping_add(a[0], b[0]); break;
      case ReduceKind::Prod: a[0] = wrapping_mul(a[0], b[0]); break;
      case ReduceKind::All: a[0] = a[0] && b[0]; break;
      case ReduceKind::Min: if (b[0] < a[0] || b[0] != b[0]) a[0] = b[0]; break;
      case ReduceKind::Max: if (b[0] > a[0] || b[0] != b[0]) a[0] = b[0]; break;
      case ReduceKind::Mean: case ReduceKind::NanMean: a[0] += b[0]; a[1] += b[1]; break;
      case ReduceKind::Var: case ReduceKind::Std: {
        const double na = static_cast<double>(a[0]), nb = static_cast<double>(b[0]);
        if (nb == 0) break;
        const double total = na + nb;
        const double delta = static_cast<double>(b[1]) - static_cast<double>(a[1]);
        a[1] = static_cast<A>(static_cast<double>(a[1]) + delta * nb / total);
        a[2] = static_cast<A>(static_cast<double>(a[2]) + static_cast<double>(b[2]) + delta * delta * na * nb / total);
        a[0] = static_cast<A>(total);
        break;
      }
      case ReduceKind::ArgMin: case ReduceKind::ArgMax: {
        // Partials arrive in chunk order, so on ties the earlier (lower index) one is kept.
        if (b[1] < 0) break;
        const double v = static_cast<double>(b[0]), cur = static_cast<double>(a[0]);
        bool take = a[1] < 0;
        if (!take && cur == cur) {
          if (v != v) take = true;
          else take = kind == ReduceKind::ArgMin ? v < cur : v > cur;
          if (!take && v == cur && b[1] < a[1]) take = true;
        }
        if (take) { a[0] = b[0]; a[1] = b[1]; }
        break;
      }
    }
  }
}

Value reduce_combine(const OpContext&, std::span<const Value> args) {
  const auto p = from_value<CombineParams>(args[0]);
  if (args.size() < 2) throw Error("reduce_combine: no partials");
  const auto kind = static_cast<ReduceKind>(p.kind);
  const int comps = partial_components(p.kind);
  const Block& first = args[1].block();
  Block acc(first.dtype(), first.shape());
  if (first.nbytes() != 0) std::memcpy(acc.raw(), first.raw(), first.nbytes());  // empty: no buffer
  const std::int64_t slots = first.size() / comps;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const Block& b = args[i].block();
    if (b.shape() != first.shape() || b.dtype() != first.dtype())
      throw ShapeError("reduce_combine: partials of different shapes " + shape_to_string(first.shape()) + " and " +
                       shape_to_string(b.shape()));
    if (acc.dtype() == DType::Float64) combine_into(kind, acc.data<double>(), b.data<double>(), slots, comps);
    else combine_into(kind, acc.data<std::int64_t>(), b.data<std::int64_t>(), slots, comps);
  }
  if (!p.finalize) return Value(std::move(acc));

  // Final shape: drop the components axis, and the reduced axes unless keepdims.
  Shape shape;
  for (std::size_t a = 0; a < p.reduced.size(); ++a)
    if (!p.reduced[a]) shape.push_back(acc.shape()[a]);
    else if (p.keepdims) shape.push_back(1);
  Block out(p.out_dtype, shape);
  std::vector<double> values(static_cast<std::size_t>(slots));
  std::vector<std::int64_t> ivalues(static_cast<std::size_t>(slots));
  const bool f64 = acc.dtype() == DType::Float64;
  for (std::int64_t s = 0; s < slots; ++s) {
    auto get = [&](int c) { return f64 ? acc.data<double>()[s * comps + c] : static_cast<double>(acc.data<std::int64_t>()[s * comps + c]); };
    double v = get(0);
    switch (kind) {
      case ReduceKind::Mean: case ReduceKind::NanMean: v = get(0) / get(1); break;
      case ReduceKind::Var: v = get(2) / (get(0) - p.ddof); break;
      case ReduceKind::Std: v = std::sqrt(get(2) / (get(0) - p.ddof)); break;
      case ReduceKind::ArgMin: case ReduceKind::ArgMax: v = get(1); break;
      default: break;
    }
    values[s] = v;
    ivalues[s] = f64 ? static_cast<std::int64_t>(v) : acc.data<std::int64_t>()[s * comps];
  }
  const bool exact_int = !f64 && kind != ReduceKind::Mean && kind != ReduceKind::NanMean && kind != ReduceKind::Var &&
                         kind != ReduceKind::Std;
  dispatch_dtype(p.out_dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw());
    for (std::int64_t s = 0; s < slots; ++s)
      o[s] = exact_int ? static_cast<T>(ivalues[s]) : static_cast<T>(values[s]);
  });
  return Value(std::move(out));
}

const bool array_ops_registered = [] {
  register_op(kBlockwiseOp, blockwise);
  register_op(kCombineOp, reduce_combine);
  register_op(kAssembleOp, assemble);
  return true;
}();

}  // namespace
}  // namespace tessera::detail
