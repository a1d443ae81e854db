// Conformance cases of numpy_names.hpp (aliases and compositions), and of existing operations
// under their NumPy names.
#include "conformance.hpp"
#include <algorithm>

#include "tessera/ops/function.hpp"

namespace {

using namespace tessera;

// A map_blocks op: 2 * x + 1 per chunk.
Block twice_plus_one(Block x) {
  Block out(DType::Float64, x.shape());
  const auto in = x.astype(DType::Float64);
  for (std::int64_t i = 0; i < x.size(); ++i) out.data<double>()[i] = 2 * in.data<double>()[i] + 1;
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("conformance.twice_plus_one", twice_plus_one);

// apply_along_axis ops on a 1-d block: (sum, max - min, first) and the sum of squares (a scalar).
Block row_summary(Block x) {
  const auto v = x.to_doubles();
  double sum = 0, lo = v.empty() ? 0 : v[0], hi = lo;
  for (double e : v) {
    sum += e;
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  return Block::from_values<double>({sum, hi - lo, v.empty() ? 0.0 : v[0]}, {3});
}
TESSERA_REGISTER_FUNCTION_AS("conformance.row_summary", row_summary);
Block row_sumsq(Block x) {
  double s = 0;
  for (double e : x.to_doubles()) s += e * e;
  return Block::scalar(s);
}
TESSERA_REGISTER_FUNCTION_AS("conformance.row_sumsq", row_sumsq);

// reduction() ops: fold the given axes of a block (keepdims or not), squaring first or not.
Block fold_sum(const Block& b, const std::vector<int>& axes, bool keepdims, bool square) {
  const Shape& s = b.shape();
  Shape kept = s;
  for (int a : axes) kept[static_cast<std::size_t>(a)] = 1;
  std::vector<double> out(static_cast<std::size_t>(shape_size(kept)), 0.0);
  const auto in = b.to_doubles();
  std::vector<std::int64_t> idx(s.size(), 0);
  for (std::size_t g = 0; g < in.size(); ++g) {
    std::int64_t o = 0;
    for (std::size_t k = 0; k < s.size(); ++k) o = o * kept[k] + (kept[k] == 1 ? 0 : idx[k]);
    out[static_cast<std::size_t>(o)] += square ? in[g] * in[g] : in[g];
    for (std::size_t k = s.size(); k-- > 0;) {
      if (++idx[k] < s[k]) break;
      idx[k] = 0;
    }
  }
  Shape shape;
  for (std::size_t k = 0; k < s.size(); ++k)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(k)) == axes.end()) shape.push_back(s[k]);
    else if (keepdims) shape.push_back(1);
  return Block::from_values(out, shape);
}
Block sum_of_squares(Block b, std::vector<int> axes, bool keepdims) { return fold_sum(b, axes, keepdims, true); }
Block sum_axes(Block b, std::vector<int> axes, bool keepdims) { return fold_sum(b, axes, keepdims, false); }
TESSERA_REGISTER_FUNCTION_AS("conformance.sum_of_squares", sum_of_squares);
TESSERA_REGISTER_FUNCTION_AS("conformance.sum_axes", sum_axes);

CoarsenKind coarsen_kind(const std::string& k) {
  if (k == "sum") return CoarsenKind::Sum;
  if (k == "mean") return CoarsenKind::Mean;
  if (k == "min") return CoarsenKind::Min;
  if (k == "max") return CoarsenKind::Max;
  return CoarsenKind::Prod;
}

}  // namespace

TESSERA_CONFORMANCE_CASE(names_binary) {
  const std::string& op = p.s("op");
  const Array &a = in[0], &b = in[1];
  if (op == "true_divide") return {true_divide(a, b)};
  if (op == "remainder") return {remainder(a, b)};
  if (op == "divmod") {
    auto [q, r] = divmod(a, b);
    return {q, r};
  }
  if (op == "ldexp") return {ldexp(a, b)};
  if (op == "nextafter") return {nextafter(a, b)};
  if (op == "logical_and") return {a && b};
  if (op == "logical_or") return {a || b};
  if (op == "greater") return {a > b};
  if (op == "greater_equal") return {a >= b};
  if (op == "less_equal") return {a <= b};
  if (op == "not_equal") return {a != b};
  throw std::invalid_argument("names_binary: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(names_unary) {
  const std::string& op = p.s("op");
  const Array& x = in[0];
  if (op == "fabs") return {fabs(x)};
  if (op == "fix") return {fix(x)};
  if (op == "isnull") return {isnull(x)};
  if (op == "notnull") return {notnull(x)};
  if (op == "isfinite") return {isfinite(x)};
  if (op == "logical_not") return {!x};
  if (op == "iscomplex") return {iscomplex(x)};
  if (op == "isreal") return {isreal(x)};
  if (op == "shape") return {from_vector(std::vector<std::int64_t>(x.shape().begin(), x.shape().end()), {x.ndim()}, {-1})};
  if (op == "ndim") return {scalar(static_cast<std::int64_t>(ndim(x)))};
  if (op == "modf") {
    auto [f, w] = modf(x);
    return {f, w};
  }
  if (op == "frexp") {
    auto [m, e] = frexp(x);
    return {m, e};
  }
  if (op == "spacing") return {spacing(x)};
  if (op == "i0") return {i0(x)};
  throw std::invalid_argument("names_unary: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(select_case) {
  // inputs: x; conditions x < lo, x > hi; choices -x, 2x.
  const Array& x = in[0];
  return {select({x < p.d("lo"), x > p.d("hi")}, {-x, x * 2.0}, p.d("default", 0))};
}

TESSERA_CONFORMANCE_CASE(choose_case) {
  return {choose(in[0], {in[1], in[2], in[3]}, p.s("mode", "clip"))};
}

TESSERA_CONFORMANCE_CASE(piecewise_case) {
  const Array& x = in[0];
  std::vector<std::function<Array(const Array&)>> funcs = {[](const Array& v) { return -v; },
                                                           [](const Array& v) { return v * v; }};
  if (p.b("with_default")) funcs.push_back([](const Array& v) { return v + 100.0; });
  return {piecewise(x, {x < 0.0, x > 1.0}, funcs)};
}

TESSERA_CONFORMANCE_CASE(ravel_multi_index_case) {
  return {ravel_multi_index({in[0], in[1]}, p.ints("dims"), p.s("mode", "clip"))};
}

TESSERA_CONFORMANCE_CASE(unravel_index_case) { return unravel_index(in[0], p.ints("dims")); }

TESSERA_CONFORMANCE_CASE(triangle_indices) {
  const bool lower = p.s("which") == "tril";
  auto [r, c] = lower ? tril_indices(p.i("n"), p.i("k", 0), p.i("m", -1), p.i("chunk", -1))
                      : triu_indices(p.i("n"), p.i("k", 0), p.i("m", -1), p.i("chunk", -1));
  return {r, c};
}

TESSERA_CONFORMANCE_CASE(triangle_indices_from) {
  auto [r, c] = p.s("which") == "tril" ? tril_indices_from(in[0], p.i("k", 0)) : triu_indices_from(in[0], p.i("k", 0));
  return {r, c};
}

TESSERA_CONFORMANCE_CASE(moment_case) {
  return {moment(in[0], static_cast<int>(p.i("order")), p.has("axis") ? p.axes("axis") : std::vector<int>{},
                 static_cast<int>(p.i("ddof", 0)))};
}

TESSERA_CONFORMANCE_CASE(apply_over_axes_case) {
  return {apply_over_axes([](const Array& a, int axis) { return a.sum({.axes = {axis}}); }, in[0], p.axes("axes"))};
}

TESSERA_CONFORMANCE_CASE(coarsen_case) {
  std::map<int, std::int64_t> factors;
  const auto f = p.ints("factors");
  for (std::size_t a = 0; a < f.size(); ++a) factors[static_cast<int>(a)] = f[a];
  return {coarsen(coarsen_kind(p.s("kind")), in[0], factors, p.b("trim"))};
}

TESSERA_CONFORMANCE_CASE(map_blocks_case) {
  return {map_blocks("conformance.twice_plus_one", {in[0]}, DType::Float64)};
}

TESSERA_CONFORMANCE_CASE(apply_along_axis_case) {
  const bool summary = p.b("summary");
  return {apply_along_axis(summary ? "conformance.row_summary" : "conformance.row_sumsq", static_cast<int>(p.i("axis")),
                           in[0], DType::Float64, summary ? Shape{3} : Shape{})};
}

// in[0] computed to a host block, then wrapped again in in[0]'s chunks by p.s("fn").
TESSERA_CONFORMANCE_CASE(from_array_case) {
  const Block b = in[0].compute();
  ChunkSpec spec;
  for (const auto& axis : in[0].chunks()) spec.push_back(axis.empty() ? -1 : axis[0]);
  const std::string& fn = p.s("fn");
  Array x;
  if (fn == "from_array") x = from_array(b, spec);
  else if (fn == "asarray") x = asarray(b, spec);
  else if (fn == "asanyarray") x = asanyarray(b, spec);
  else if (fn == "array") x = tessera::array(b, spec);
  else throw std::invalid_argument("from_array_case: unknown function " + fn);
  if (x.chunks() != in[0].chunks()) throw std::runtime_error("from_array_case: the chunks changed");
  return {in[0].target() == Target::Device ? x.to_device() : x};
}

TESSERA_CONFORMANCE_CASE(result_type_case) {
  // The promoted dtype, as a 0-d array of that dtype holding 0.
  return {scalar(0, result_type(in))};
}

TESSERA_CONFORMANCE_CASE(dot_case) { return {dot(in[0], in[1])}; }
TESSERA_CONFORMANCE_CASE(broadcast_to_case) { return {in[0].broadcast_to(p.ints("shape"))}; }

TESSERA_CONFORMANCE_CASE(insert_case) {
  const int axis = static_cast<int>(p.i("axis"));
  if (in.size() > 1) return {insert(in[0], p.ints("indices"), in[1], axis)};
  return {insert(in[0], p.ints("indices"), p.d("value"), axis)};
}
TESSERA_CONFORMANCE_CASE(delete_case) { return {delete_(in[0], p.ints("indices"), static_cast<int>(p.i("axis")))}; }
TESSERA_CONFORMANCE_CASE(append_case) { return {append(in[0], in[1], static_cast<int>(p.i("axis")))}; }
TESSERA_CONFORMANCE_CASE(gradient_case) {
  std::vector<double> spacing;
  if (p.has("h")) spacing.push_back(p.d("h"));
  return gradient(in[0], p.has("axes") ? p.axes("axes") : std::vector<int>{}, spacing);
}

TESSERA_CONFORMANCE_CASE(creation_case) {
  // Creation from parameters alone; the input only gives the chunking to use.
  const std::string& f = p.s("f");
  const Shape shape = p.ints("shape");
  const ChunkSpec chunks = std::vector<std::int64_t>(in[0].chunks().size() ? std::vector<std::int64_t>{in[0].chunks()[0][0]}
                                                                         : std::vector<std::int64_t>{-1});
  const DType dtype = dtype_from_name(p.s("dtype", "float64"));
  if (f == "zeros") return {zeros(shape, chunks, dtype)};
  if (f == "ones") return {ones(shape, chunks, dtype)};
  if (f == "full") return {full(shape, p.d("value"), chunks, dtype)};
  if (f == "arange") return {arange(p.d("start"), p.d("stop"), p.d("step"), chunks.sizes().at(0))};
  throw std::invalid_argument("creation_case: unknown function " + f);
}

TESSERA_CONFORMANCE_CASE(empty_case) {
  const ChunkSpec chunks = std::vector<std::int64_t>{in[0].chunks()[0][0]};
  return {empty(p.ints("shape"), chunks, dtype_from_name(p.s("dtype", "float64")))};
}

TESSERA_CONFORMANCE_CASE(reduction_case) {
  ReductionOptions o;
  if (p.has("axis")) o.axes = p.axes("axis");
  o.keepdims = p.b("keepdims");
  o.split_every = static_cast<int>(p.i("split_every", 0));
  return {reduction(in[0], "conformance.sum_of_squares", "conformance.sum_axes", o)};
}

TESSERA_CONFORMANCE_CASE(union1d_case) { return {union1d(in[0], in[1])}; }

TESSERA_CONFORMANCE_CASE(fromfunction_case) {
  const std::vector<std::int64_t> dims = p.ints("shape");
  return {fromfunction([](const std::vector<Array>& ix) { return ix[0] * 10.0 + ix[1] * ix[1]; },
                       Shape(dims.begin(), dims.end()), ChunkSpec(p.i("chunk")))};
}

TESSERA_CONFORMANCE_CASE(unify_chunks_case) {
  const std::vector<Array> u = unify_chunks({in[0], in[1]});
  if (u[0].chunks() != u[1].chunks()) throw std::runtime_error("unify_chunks: the chunks differ afterwards");
  return {u[0], u[1], u[0] + u[1]};
}
