// Products and norms: tensordot, einsum, outer, inner, vdot, kron, trace, norm, dot.
//
// Every product lowers to one contraction: operands transposed to (batch, free, contracted)
// and (batch, contracted, free), the contracted and batch axes chunked alike on both sides,
// then per output chunk one "contract" task per group of up to 8 contracted chunk pairs and a
// tree of "add" tasks over the groups (Dask's tensordot sums its partial products the same way).
#include "tessera/array/linalg.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "linalg_tasks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace detail {

Array rechunk_exact(const Array& a, const Chunks& chunks) {
  if (expr_of(a).chunks == chunks) return a;
  auto e = make_expr<RechunkExpr>(ExprKind::Rechunk, a.dtype(), a.shape(), chunks, "rechunk");
  e->input = a.expr();
  e->target = a.expr()->target;
  return Array(e);
}

namespace {

bool is_identity(const std::vector<int>& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int>(i)) return false;
  return true;
}

Array permuted(const Array& a, const std::vector<int>& perm) { return is_identity(perm) ? a : a.transpose(perm); }

// Calls f(coords) for every chunk coordinate tuple of the given per-axis chunk counts.
template <typename F>
void for_each_coords(const std::vector<std::int64_t>& counts, F&& f) {
  std::vector<std::int64_t> c(counts.size(), 0);
  for (auto n : counts)
    if (n == 0) return;
  while (true) {
    f(c);
    int k = static_cast<int>(counts.size()) - 1;
    for (; k >= 0; --k) {
      if (++c[k] < counts[k]) break;
      c[k] = 0;
    }
    if (k < 0) return;
  }
}

constexpr int kSplitEvery = 8;

}  // namespace

/**
 * a is (batch, free_a, contracted), b (batch, contracted, free_b): the batched product, of
 * shape (batch, free_a, free_b), in dtype t (a numeric dtype, not bool).
 */
Array contract(Array a, Array b, int nbatch, int nfa, int nc, int nfb, DType t) {
  if (a.dtype() != t) a = a.astype(t);
  if (b.dtype() != t) b = b.astype(t);
  for (int i = 0; i < nbatch + nc; ++i) {
    const int ia = i < nbatch ? i : nbatch + nfa + (i - nbatch), ib = i;
    if (a.shape()[ia] != b.shape()[ib])
      throw ShapeError("contraction: shape mismatch for a summed or batch axis (" + std::to_string(a.shape()[ia]) +
                       " != " + std::to_string(b.shape()[ib]) + ")");
  }
  Chunks ca = a.chunks(), cb = b.chunks();
  for (int i = 0; i < nbatch + nc; ++i) {
    const int ia = i < nbatch ? i : nbatch + nfa + (i - nbatch);
    const auto common = refine_axis_chunks({ca[ia], cb[i]});
    ca[ia] = common;
    cb[i] = common;
  }
  a = rechunk_exact(a, ca);
  b = rechunk_exact(b, cb);
  Shape shape;
  Chunks chunks;
  for (int i = 0; i < nbatch + nfa; ++i) {
    shape.push_back(a.shape()[i]);
    chunks.push_back(ca[i]);
  }
  for (int i = nbatch + nc; i < nbatch + nc + nfb; ++i) {
    shape.push_back(b.shape()[i]);
    chunks.push_back(cb[i]);
  }
  TasksBuilder tb(t, shape, chunks, "contract");
  tb.set_product({a.expr(), b.expr(), nbatch, nfa, nc, nfb});
  const int ia = tb.input(a), ib = tb.input(b);
  std::vector<std::int64_t> ccounts;
  for (int i = 0; i < nc; ++i) ccounts.push_back(static_cast<std::int64_t>(ca[nbatch + nfa + i].size()));
  ContractParams p;
  p.batch = nbatch;
  p.free_a = nfa;
  p.free_b = nfb;
  std::vector<std::int64_t> outputs;
  for_each_coords(chunk_counts(chunks), [&](const std::vector<std::int64_t>& oc) {
    std::vector<std::vector<std::int64_t>> combos;
    for_each_coords(ccounts, [&](const std::vector<std::int64_t>& kc) { combos.push_back(kc); });
    if (combos.empty()) {  // a contracted axis of length 0: the sum is zeros
      ZerosParams z{t, {}};
      for (std::size_t i = 0; i < oc.size(); ++i) z.shape.push_back(chunks[i][oc[i]]);
      outputs.push_back(tb.add(kZerosOp, Value(to_object(z, "ZerosParams")), {}));
      return;
    }
    std::vector<std::int64_t> parts;
    for (std::size_t g = 0; g < combos.size(); g += kSplitEvery) {
      const std::size_t end = std::min(combos.size(), g + kSplitEvery);
      std::vector<TaskArg> as, bs;
      for (std::size_t q = g; q < end; ++q) {
        std::vector<std::int64_t> ac(oc.begin(), oc.begin() + nbatch + nfa), bc(oc.begin(), oc.begin() + nbatch);
        ac.insert(ac.end(), combos[q].begin(), combos[q].end());
        bc.insert(bc.end(), combos[q].begin(), combos[q].end());
        bc.insert(bc.end(), oc.begin() + nbatch + nfa, oc.end());
        as.push_back(tb.chunk(ia, ac));
        bs.push_back(tb.chunk(ib, bc));
      }
      p.pairs = static_cast<std::int32_t>(as.size());
      as.insert(as.end(), bs.begin(), bs.end());
      parts.push_back(tb.add(kContractOp, Value(to_object(p, "ContractParams")), std::move(as)));
    }
    outputs.push_back(tb.tree_sum(std::move(parts), kSplitEvery));
  });
  return tb.finish(std::move(outputs));
}

/** contract for any dtypes: NumPy's promotion, bool products as matmul's (any a && b). */
Array contract_promoted(const Array& a, const Array& b, int nbatch, int nfa, int nc, int nfb) {
  const bool boolean = a.dtype() == DType::Bool && b.dtype() == DType::Bool;
  const DType t = boolean ? DType::Int64 : promote_types(a.dtype(), b.dtype());
  Array out = contract(a, b, nbatch, nfa, nc, nfb, t == DType::Bool ? DType::Int64 : t);
  return boolean ? out != 0 : out;
}

}  // namespace detail

Array tensordot(const Array& a, const Array& b, const std::vector<int>& axes_a_in, const std::vector<int>& axes_b_in) {
  if (axes_a_in.size() != axes_b_in.size()) throw ShapeError("tensordot: shape-mismatch for sum (axes of different lengths)");
  const int na = a.ndim(), nb = b.ndim();
  std::vector<int> axes_a, axes_b;
  for (int x : axes_a_in) axes_a.push_back(normalize_axis(x, na));
  for (int x : axes_b_in) axes_b.push_back(normalize_axis(x, nb));
  if (std::set<int>(axes_a.begin(), axes_a.end()).size() != axes_a.size() ||
      std::set<int>(axes_b.begin(), axes_b.end()).size() != axes_b.size())
    throw ShapeError("tensordot: repeated axis");
  for (std::size_t i = 0; i < axes_a.size(); ++i)
    if (a.shape()[axes_a[i]] != b.shape()[axes_b[i]]) throw ShapeError("tensordot: shape-mismatch for sum");
  std::vector<int> pa, pb = axes_b;
  for (int x = 0; x < na; ++x)
    if (std::find(axes_a.begin(), axes_a.end(), x) == axes_a.end()) pa.push_back(x);
  const int nfa = static_cast<int>(pa.size());
  pa.insert(pa.end(), axes_a.begin(), axes_a.end());
  for (int x = 0; x < nb; ++x)
    if (std::find(axes_b.begin(), axes_b.end(), x) == axes_b.end()) pb.push_back(x);
  const int nc = static_cast<int>(axes_a.size());
  return contract_promoted(permuted(a, pa), permuted(b, pb), 0, nfa, nc, nb - nc);
}

Array tensordot(const Array& a, const Array& b, int n) {
  if (n < 0 || n > a.ndim() || n > b.ndim()) throw ShapeError("tensordot: axes exceed the operands' dimensions");
  std::vector<int> axa, axb;
  for (int i = 0; i < n; ++i) {
    axa.push_back(a.ndim() - n + i);
    axb.push_back(i);
  }
  return tensordot(a, b, axa, axb);
}


Array trace(const Array& a, int offset, int axis1, int axis2) {
  ReduceOptions o;
  o.axes = {-1};
  return tessera::diagonal(a, offset, axis1, axis2).sum(o);
}

namespace {

}  // namespace

Array outer(const Array& a, const Array& b) {
  const Array x = ravel(a), y = ravel(b);
  return x[{all(), newaxis}] * y[{newaxis, all()}];
}

Array inner(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0) return a * b;
  return tensordot(a, b, {-1}, {-1});
}

Array vdot(const Array& a, const Array& b) {
  if (a.size() != b.size()) throw ShapeError("vdot: vectors have different lengths");
  return tensordot(ravel(a), ravel(b), {0}, {0});
}

Array kron(const Array& a, const Array& b) {
  if (a.ndim() != b.ndim()) throw ShapeError("kron: operands of different dimensions are not supported");
  const int nd = a.ndim();
  std::vector<Index> ia, ib;
  Shape out;
  for (int k = 0; k < nd; ++k) {
    ia.emplace_back(all());
    ia.emplace_back(newaxis);
    ib.emplace_back(newaxis);
    ib.emplace_back(all());
    out.push_back(a.shape()[k] * b.shape()[k]);
  }
  return (a[ia] * b[ib]).reshape(out);
}

Array dot(const Array& a, const Array& b) {
  // NumPy's dot: matmul's for vectors and matrices; beyond, the last axis of a with the
  // second-to-last of b (every pair of stacks, not broadcast).
  if (a.ndim() <= 2 && b.ndim() <= 2) return matmul(a, b);
  if (a.ndim() == 0 || b.ndim() == 0) return a * b;
  return tensordot(a, b, {-1}, {b.ndim() == 1 ? 0 : -2});
}

// ---- einsum ----------------------------------------------------------------------------------

namespace {

struct Term {
  Array a;
  std::string labels;
};

// Repeated labels become one diagonal axis; labels not in `keep` are summed away.
Term simplify(Term t, const std::set<char>& keep) {
  for (std::size_t i = 0; i < t.labels.size(); ++i)
    for (std::size_t j = i + 1; j < t.labels.size(); ++j)
      if (t.labels[i] == t.labels[j]) {
        if (t.a.shape()[i] != t.a.shape()[j]) throw ShapeError("einsum: repeated subscript with different extents");
        const char c = t.labels[i];
        t.a = tessera::diagonal(t.a, 0, static_cast<int>(i), static_cast<int>(j));
        std::string l;
        for (std::size_t k = 0; k < t.labels.size(); ++k)
          if (k != i && k != j) l.push_back(t.labels[k]);
        l.push_back(c);
        t.labels = l;
        return simplify(std::move(t), keep);
      }
  std::vector<int> axes;
  std::string l;
  for (std::size_t i = 0; i < t.labels.size(); ++i)
    if (keep.count(t.labels[i])) l.push_back(t.labels[i]);
    else axes.push_back(static_cast<int>(i));
  if (!axes.empty()) {
    ReduceOptions o;
    o.axes = axes;
    t.a = t.a.sum(o);
    t.labels = l;
  }
  return t;
}

Term pair(const Term& x, const Term& y, const std::set<char>& needed) {
  std::string batch, fa, fb, con;
  for (char c : x.labels) {
    const bool in_y = y.labels.find(c) != std::string::npos;
    if (in_y) (needed.count(c) ? batch : con).push_back(c);
    else fa.push_back(c);
  }
  for (char c : y.labels)
    if (x.labels.find(c) == std::string::npos) fb.push_back(c);
  auto order = [](const Term& t, const std::string& want) {
    std::vector<int> perm;
    for (char c : want) perm.push_back(static_cast<int>(t.labels.find(c)));
    return perm;
  };
  for (char c : batch + con)
    if (x.a.shape()[x.labels.find(c)] != y.a.shape()[y.labels.find(c)])
      throw ShapeError(std::string("einsum: operands disagree on the extent of subscript ") + c);
  Term out{Array(), batch + fa + fb};
  if (con.empty()) {
    // No sum: a broadcast product (outer products, element-wise products, scaled batches).
    Array xa = permuted(x.a, order(x, batch + fa)), ya = permuted(y.a, order(y, batch + fb));
    std::vector<Index> ix(batch.size() + fa.size(), Index(all())), iy(batch.size(), Index(all()));
    for (std::size_t i = 0; i < fb.size(); ++i) ix.emplace_back(newaxis);
    for (std::size_t i = 0; i < fa.size(); ++i) iy.emplace_back(newaxis);
    for (std::size_t i = 0; i < fb.size(); ++i) iy.emplace_back(all());
    out.a = xa[ix] * ya[iy];
    return out;
  }
  if (fa.empty() && fb.empty()) {
    // Only batch and summed labels ('ij,ij->i'): a product per batch element would be a 1 x 1
    // GEMM, so multiply element-wise and sum instead.
    ReduceOptions o;
    for (std::size_t i = 0; i < con.size(); ++i) o.axes.push_back(static_cast<int>(batch.size() + i));
    out.a = (permuted(x.a, order(x, batch + con)) * permuted(y.a, order(y, batch + con))).sum(o);
    return out;
  }
  out.a = contract_promoted(permuted(x.a, order(x, batch + fa + con)), permuted(y.a, order(y, batch + con + fb)),
                            static_cast<int>(batch.size()), static_cast<int>(fa.size()), static_cast<int>(con.size()),
                            static_cast<int>(fb.size()));
  return out;
}

}  // namespace

Array einsum(const std::string& subscripts_in, const std::vector<Array>& operands) {
  std::string subscripts;
  for (char c : subscripts_in)
    if (c != ' ') subscripts.push_back(c);
  if (subscripts.find('.') != std::string::npos) throw Error("einsum: ellipsis is not supported");
  const auto arrow = subscripts.find("->");
  const std::string lhs = subscripts.substr(0, arrow);
  std::vector<std::string> ins;
  std::size_t start = 0;
  while (true) {
    const auto comma = lhs.find(',', start);
    ins.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (ins.size() != operands.size())
    throw Error("einsum: " + std::to_string(ins.size()) + " subscripts for " + std::to_string(operands.size()) + " operands");
  std::map<char, int> count;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (static_cast<int>(ins[i].size()) != operands[i].ndim())
      throw ShapeError("einsum: subscripts '" + ins[i] + "' do not match an operand of " +
                       std::to_string(operands[i].ndim()) + " dimensions");
    for (char c : ins[i]) {
      if (!std::isalpha(static_cast<unsigned char>(c))) throw Error(std::string("einsum: invalid subscript '") + c + "'");
      ++count[c];
    }
  }
  std::string output;
  if (arrow == std::string::npos) {
    for (auto [c, n] : count)  // implicit: the labels seen once, in alphabetical order
      if (n == 1) output.push_back(c);
  } else {
    output = subscripts.substr(arrow + 2);
    for (char c : output)
      if (!count.count(c)) throw Error(std::string("einsum: output subscript '") + c + "' is not in any input");
    if (std::set<char>(output.begin(), output.end()).size() != output.size()) throw Error("einsum: repeated output subscript");
  }
  // Each operand first loses the labels nobody else needs, then the terms fold left to right.
  std::vector<Term> terms;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    std::set<char> keep(output.begin(), output.end());
    for (std::size_t j = 0; j < ins.size(); ++j)
      if (j != i) keep.insert(ins[j].begin(), ins[j].end());
    terms.push_back(simplify(Term{operands[i], ins[i]}, keep));
  }
  Term acc = terms[0];
  for (std::size_t i = 1; i < terms.size(); ++i) {
    std::set<char> needed(output.begin(), output.end());
    for (std::size_t j = i + 1; j < terms.size(); ++j) needed.insert(terms[j].labels.begin(), terms[j].labels.end());
    acc = pair(acc, terms[i], needed);
  }
  acc = simplify(std::move(acc), std::set<char>(output.begin(), output.end()));
  std::vector<int> perm;
  for (char c : output) perm.push_back(static_cast<int>(acc.labels.find(c)));
  return permuted(acc.a, perm);
}

// ---- norm ------------------------------------------------------------------------------------

NormOrd::NormOrd(const char* name) : name_(name ? name : "") {
  if (name_ != "fro" && name_ != "nuc") throw Error("norm: invalid norm order '" + name_ + "'");
}

namespace {

Array reduce_axes(const Array& x, const std::vector<int>& axes, bool keepdims, char kind) {
  ReduceOptions o;
  o.axes = axes;
  o.keepdims = keepdims;
  switch (kind) {
    case '+': return x.sum(o);
    case '<': return x.min(o);
    default: return x.max(o);
  }
}

// Drops the axes a keepdims reduction kept (they have length 1).
Array squeeze(const Array& x, std::vector<int> axes) {
  std::vector<Index> ix;
  for (int k = 0; k < x.ndim(); ++k)
    ix.emplace_back(std::find(axes.begin(), axes.end(), k) != axes.end() ? Index(0) : Index(all()));
  return x[ix];
}

}  // namespace

Array norm(const Array& x_in, std::optional<NormOrd> ord, std::vector<int> axes, bool keepdims) {
  Array x = is_floating(x_in.dtype()) ? x_in : x_in.astype(DType::Float64);
  const int nd = x.ndim();
  const DType t = x.dtype();
  if (axes.empty()) {
    if (!ord || (!ord->is_number() && ord->name() == "fro" && nd == 2)) {
      Array r = sqrt((x * x).sum(ReduceOptions{{}, keepdims, 0, 0}));
      return r.dtype() == t ? r : r.astype(t);
    }
    if (nd == 1) axes = {0};
    else if (nd == 2) axes = {0, 1};
    else throw ShapeError("norm: improper number of dimensions to norm");
  }
  for (auto& a : axes) a = normalize_axis(a, nd);
  if (axes.size() == 1) {
    const int ax = axes[0];
    if (ord && !ord->is_number()) throw Error("norm: invalid norm order '" + ord->name() + "' for vectors");
    const double p = ord ? ord->number() : 2.0;
    Array r;
    if (p == std::numeric_limits<double>::infinity()) r = reduce_axes(abs(x), {ax}, keepdims, '>');
    else if (p == -std::numeric_limits<double>::infinity()) r = reduce_axes(abs(x), {ax}, keepdims, '<');
    else if (p == 0) r = reduce_axes((x != 0).astype(t), {ax}, keepdims, '+');
    else if (p == 1) r = reduce_axes(abs(x), {ax}, keepdims, '+');
    else if (p == 2) r = sqrt(reduce_axes(x * x, {ax}, keepdims, '+'));
    else r = power(reduce_axes(power(abs(x), p), {ax}, keepdims, '+'), 1.0 / p);
    return r.dtype() == t ? r : r.astype(t);
  }
  if (axes.size() != 2) throw ShapeError("norm: improper number of dimensions to norm");
  const int row = axes[0], col = axes[1];
  if (row == col) throw ShapeError("norm: duplicate axes given");
  Array r;
  if (!ord || (!ord->is_number() && ord->name() == "fro")) {
    r = sqrt(reduce_axes(x * x, {row, col}, true, '+'));
  } else if (!ord->is_number() || std::fabs(ord->number()) == 2) {
    if (nd != 2) throw ShapeError("norm: 2, -2 and 'nuc' norms need a 2-d array here");
    Array m = row < col ? x : x.T();
    const Array s = linalg::svd(m).s;
    if (!ord->is_number()) r = s.sum();
    else r = ord->number() > 0 ? s.max() : s.min();
    r = r.reshape({1, 1});
  } else {
    const double p = ord->number();
    const double inf = std::numeric_limits<double>::infinity();
    if (p == 1 || p == -1) r = reduce_axes(reduce_axes(abs(x), {row}, true, '+'), {col}, true, p > 0 ? '>' : '<');
    else if (p == inf || p == -inf) r = reduce_axes(reduce_axes(abs(x), {col}, true, '+'), {row}, true, p > 0 ? '>' : '<');
    else throw Error("norm: invalid norm order for matrices");
  }
  if (!keepdims) r = squeeze(r, {row, col});
  return r.dtype() == t ? r : r.astype(t);
}

}  // namespace tessera
