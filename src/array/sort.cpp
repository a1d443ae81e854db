// Sorting and searching: sort/argsort along an axis held in one chunk, topk/argtopk as a tree of
// per-chunk top-k merges, unique (computed: its length depends on the data), isin, searchsorted
// and digitize. The host variants of their chunk ops are here; the device variants run the
// Thrust algorithms of device_algorithms.cuh (cuda/array_algorithm_ops.cpp).
#include "tessera/array/sort.hpp"
#include "tessera/array.hpp"  // the operations this one is built from

#include <algorithm>
#include <cstring>
#include <numeric>
#include <span>
#include <type_traits>

#include "algorithm_params.hpp"
#include "chunk_map.hpp"
#include "sort_semantics.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera {

using namespace detail;

namespace {

template <class P>
Value params_value(const P& p, const char* type) {
  return Value(to_object(p, type));
}

/** Rows of a block along its last axis: (number of rows, row length). */
std::pair<std::int64_t, std::int64_t> rows_of(const Block& b) {
  if (b.ndim() == 0) return {1, 1};
  const std::int64_t n = b.shape().back();
  return {n == 0 ? 0 : b.size() / n, n};
}

// ---- host ops -------------------------------------------------------------------------------------

Value sort_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 2) throw Error("sort: expected parameters and one block");
  const auto p = from_value<SortParams>(args[0]);
  const Block& x = args[1].block();
  Block out(p.arg ? DType::Int64 : x.dtype(), x.shape());
  const auto [rows, n] = rows_of(x);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.raw());
    if (!p.arg) {
      // Values alone: equal values are interchangeable (but -0.0 and 0.0, which NumPy orders
      // arbitrarily too), so an unstable sort of the values gives the stable result.
      T* o = static_cast<T*>(out.raw());
      std::copy(in, in + rows * n, o);
      for (std::int64_t r = 0; r < rows; ++r) {
        // NaNs moved to the end first, so the sort itself compares with a plain <.
        T* row = o + r * n;
        T* nan_start = std::is_floating_point_v<T> ? std::partition(row, row + n, [](T v) { return v == v; }) : row + n;
        std::sort(row, nan_start);
      }
      return;
    }
    // (value, position) pairs sorted by value, then position: the stable order, with the pairs
    // contiguous (faster than sorting positions through the values).
    using S = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
    std::vector<std::pair<S, std::int64_t>> pairs(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* row = in + r * n;
      for (std::int64_t j = 0; j < n; ++j) pairs[static_cast<std::size_t>(j)] = {static_cast<S>(row[j]), j};
      std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
        if (sorting::LessNanLast<S>{}(a.first, b.first)) return true;
        if (sorting::LessNanLast<S>{}(b.first, a.first)) return false;
        return a.second < b.second;
      });
      std::int64_t* o = out.data<std::int64_t>() + r * n;
      for (std::int64_t j = 0; j < n; ++j) o[j] = pairs[static_cast<std::size_t>(j)].second;
    }
  });
  return Value(std::move(out));
}

/**
 * Keeps in `best` (sorted best first, at most m) the best of row[0..len), whose indices pos, pos
 * + 1, ... come after those of every element `best` holds. Each new element has the highest
 * index so far, so among equal values it goes last: it moves forward only past elements it is
 * strictly `better` than. Once `best` is full, most elements fail the one comparison with the
 * worst kept, in a loop with nothing else in it; those that pass usually stop near the end.
 */
template <class T, class Better>
void keep_best_in_order(const T* row, std::int64_t len, std::int64_t pos, std::int64_t m, Better better,
                        std::vector<std::pair<T, std::int64_t>>& best) {
  auto sift_last = [&] {
    for (std::size_t i = best.size() - 1; i > 0 && better(best[i].first, best[i - 1].first); --i)
      std::swap(best[i], best[i - 1]);
  };
  std::int64_t j = 0;
  for (; j < len && static_cast<std::int64_t>(best.size()) < m; ++j) {
    best.emplace_back(row[j], pos + j);
    sift_last();
  }
  if (m == 0 || j == len) return;
  T worst = best.back().first;
  for (; j < len; ++j) {
    if (!better(row[j], worst)) continue;
    best.back() = {row[j], pos + j};
    sift_last();
    worst = best.back().first;
  }
}

template <class T>
Block topk_rows(const TopkParams& p, std::span<const Value> blocks, DType value_dtype) {
  const std::int64_t kk = p.k < 0 ? -p.k : p.k;
  const Block& first = blocks[0].block();
  const auto rows = first.ndim() == 0 ? 1 : shape_size(Shape(first.shape().begin(), first.shape().end() - 1));
  std::int64_t total = 0;
  for (const auto& v : blocks) {
    const std::int64_t len = v.block().ndim() ? v.block().shape().back() : 1;
    total += (p.arg && p.from_partials) ? len / 2 : len;
  }
  const std::int64_t m = std::min(kk, total);
  Shape shape = first.shape();
  const bool packed = p.arg && !p.final;
  shape.back() = packed ? 2 * m : m;
  Block out(p.final ? (p.arg ? DType::Int64 : value_dtype) : (p.arg ? DType::Float64 : value_dtype), shape);
  auto better = [&](const auto& a, const auto& b) {
    return p.k > 0 ? sorting::GreaterNanLast<T>{}(a.first, b.first) : sorting::LessNanLast<T>{}(a.first, b.first);
  };
  // A strict total order: by value (NaN last), ties to the lower index, as a stable sort of the
  // candidates in index order would give. The best m under it do not depend on arrival order.
  auto better_then_first = [&](const auto& a, const auto& b) {
    if (better(a, b)) return true;
    if (better(b, a)) return false;
    return a.second < b.second;
  };
  // Few kept (m <= kSmallTop): the best m so far, sorted, and each candidate compared with the
  // worst of them; most are rejected by that one comparison, with nothing copied. Many kept: all
  // candidates, then partial_sort.
  constexpr std::int64_t kSmallTop = 64;
  const bool small_top = m <= kSmallTop;
  std::vector<std::pair<T, std::int64_t>> cand;
  auto consider = [&](T value, std::int64_t index) {
    const std::pair<T, std::int64_t> c{value, index};
    if (!small_top) {
      cand.push_back(c);
      return;
    }
    if (static_cast<std::int64_t>(cand.size()) == m) {
      if (m == 0 || !better_then_first(c, cand.back())) return;
      cand.pop_back();
    }
    cand.insert(std::upper_bound(cand.begin(), cand.end(), c, better_then_first), c);
  };
  for (std::int64_t r = 0; r < rows; ++r) {
    cand.clear();
    std::int64_t pos = p.offset;
    for (const auto& v : blocks) {
      const Block& b = v.block();
      const std::int64_t len = b.ndim() ? b.shape().back() : 1;
      const T* row = static_cast<const T*>(b.raw()) + r * len;
      if (p.arg && p.from_partials) {
        const std::int64_t h = len / 2;
        for (std::int64_t j = 0; j < h; ++j) consider(row[j], static_cast<std::int64_t>(row[h + j]));
      } else {
        if (small_top && p.k > 0) keep_best_in_order(row, len, pos, m, sorting::GreaterNanLast<T>{}, cand);
        else if (small_top) keep_best_in_order(row, len, pos, m, sorting::LessNanLast<T>{}, cand);
        else
          for (std::int64_t j = 0; j < len; ++j) consider(row[j], pos + j);
        pos += len;
      }
    }
    if (!small_top) std::partial_sort(cand.begin(), cand.begin() + m, cand.end(), better_then_first);
    for (std::int64_t j = 0; j < m; ++j) {
      const auto& c = cand[static_cast<std::size_t>(j)];
      if (p.final && p.arg) out.data<std::int64_t>()[r * m + j] = c.second;
      else if (packed) {
        out.data<double>()[r * 2 * m + j] = static_cast<double>(c.first);
        out.data<double>()[r * 2 * m + m + j] = static_cast<double>(c.second);
      } else {
        dispatch_dtype(out.dtype(), [&](auto tag) {
          using O = decltype(tag);
          static_cast<O*>(out.raw())[r * m + j] = static_cast<O>(c.first);
        });
      }
    }
  }
  return out;
}

Value topk_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("topk: expected parameters and blocks");
  const auto p = from_value<TopkParams>(args[0]);
  const auto blocks = args.subspan(1);
  const DType in = blocks[0].block().dtype();
  if (p.arg && p.from_partials) return Value(topk_rows<double>(p, blocks, DType::Float64));
  return dispatch_dtype(in, [&](auto tag) { return Value(topk_rows<decltype(tag)>(p, blocks, in)); });
}

Value searchsorted_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 3) throw Error("searchsorted: expected parameters, a and v");
  const auto p = from_value<SearchParams>(args[0]);
  const Block& a = args[1].block();
  const Block& v = args[2].block();
  if (a.dtype() != v.dtype()) throw DTypeError("searchsorted: a and v of different dtypes");
  Block out(DType::Int64, v.shape());
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = static_cast<const T*>(a.raw());
    const T* x = static_cast<const T*>(v.raw());
    std::int64_t* o = out.data<std::int64_t>();
    const T* end = s + a.size();  // Block::size() multiplies the shape: not per element
    const std::int64_t n = v.size();
    for (std::int64_t i = 0; i < n; ++i) {
      const T* it = p.right ? std::upper_bound(s, end, x[i], sorting::LessNanLast<T>{})
                            : std::lower_bound(s, end, x[i], sorting::LessNanLast<T>{});
      o[i] = it - s;
    }
  });
  return Value(std::move(out));
}

Value isin_op(const OpContext&, std::span<const Value> args) {
  if (args.size() != 3) throw Error("isin: expected parameters, elements and test elements");
  const auto p = from_value<IsinParams>(args[0]);
  const Block& x = args[1].block();
  const Block& t = args[2].block();
  if (x.dtype() != t.dtype()) throw DTypeError("isin: elements and test elements of different dtypes");
  Block out(DType::Bool, x.shape());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = static_cast<const T*>(t.raw());
    const T* v = static_cast<const T*>(x.raw());
    bool* o = out.data<bool>();
    const T* end = s + t.size();
    const std::int64_t n = x.size();
    if constexpr (std::is_integral_v<T>) {
      // Integers over a modest range: a lookup table, one load per element instead of a
      // branchy binary search.
      if (t.size() > 0 && static_cast<double>(end[-1]) - static_cast<double>(s[0]) < double(1 << 22)) {
        const auto lo = static_cast<std::int64_t>(s[0]), span = static_cast<std::int64_t>(end[-1]) - lo + 1;
        std::vector<std::uint8_t> table(static_cast<std::size_t>(span), 0);
        for (const T* q = s; q != end; ++q) table[static_cast<std::size_t>(static_cast<std::int64_t>(*q) - lo)] = 1;
        for (std::int64_t i = 0; i < n; ++i) {
          const std::int64_t k = static_cast<std::int64_t>(v[i]) - lo;
          o[i] = (k >= 0 && k < span && table[static_cast<std::size_t>(k)]) != p.invert;
        }
        return;
      }
    }
    for (std::int64_t i = 0; i < n; ++i) {
      // NaN is never equal to anything (NumPy compares with ==).
      const bool found = v[i] == v[i] && std::binary_search(s, end, v[i], sorting::LessNanLast<T>{});
      o[i] = found != p.invert;
    }
  });
  return Value(std::move(out));
}

/** (value, count) runs of ascending values, NaNs collapsed. */
template <class W>
Block unique_partial(std::vector<std::pair<W, std::int64_t>>& vc, DType wide) {
  auto less = [](const auto& a, const auto& b) { return sorting::LessNanLast<W>{}(a.first, b.first); };
  if (!std::is_sorted(vc.begin(), vc.end(), less)) std::stable_sort(vc.begin(), vc.end(), less);
  std::vector<W> values;
  std::vector<std::int64_t> counts;
  for (const auto& [v, c] : vc) {
    if (!values.empty() && sorting::EqualNan<W>{}(values.back(), v)) counts.back() += c;
    else { values.push_back(v); counts.push_back(c); }
  }
  const auto m = static_cast<std::int64_t>(values.size());
  Block out(wide, {2, m});
  W* o = static_cast<W*>(out.raw());
  for (std::int64_t i = 0; i < m; ++i) {
    o[i] = values[static_cast<std::size_t>(i)];
    o[m + i] = static_cast<W>(counts[static_cast<std::size_t>(i)]);
  }
  return out;
}

Value unique_op(const OpContext&, std::span<const Value> args) {
  if (args.size() < 2) throw Error("unique: expected parameters and blocks");
  const auto p = from_value<UniqueParams>(args[0]);
  if (!p.from_partials) {
    const Block& x = args[1].block();
    const DType wide = unique_partial_dtype(x.dtype());
    return dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* v = static_cast<const T*>(x.raw());
      auto run = [&](auto wtag) {
        // A chunk: sort its values, then count the runs.
        using W = decltype(wtag);
        const std::int64_t n = x.size();
        std::vector<W> s(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) s[static_cast<std::size_t>(i)] = static_cast<W>(v[i]);
        std::sort(s.begin(), s.end(), sorting::LessNanLast<W>{});
        std::vector<std::pair<W, std::int64_t>> vc;
        for (const W& w : s)
          if (!vc.empty() && sorting::EqualNan<W>{}(vc.back().first, w)) ++vc.back().second;
          else vc.emplace_back(w, 1);
        return Value(unique_partial<W>(vc, wide));
      };
      if constexpr (std::is_floating_point_v<T>) return run(double{});
      else return run(std::int64_t{});
    });
  }
  const DType wide = args[1].block().dtype();
  auto merge = [&](auto wtag) {
    using W = decltype(wtag);
    std::vector<std::pair<W, std::int64_t>> vc;
    for (const auto& a : args.subspan(1)) {
      const Block& b = a.block();
      if (b.dtype() != wide || b.ndim() != 2 || b.shape()[0] != 2) throw ShapeError("unique: malformed partial");
      const std::int64_t m = b.shape()[1];
      const W* d = static_cast<const W*>(b.raw());
      for (std::int64_t i = 0; i < m; ++i) vc.emplace_back(d[i], static_cast<std::int64_t>(d[m + i]));
    }
    return Value(unique_partial<W>(vc, wide));
  };
  if (wide == DType::Float64) return merge(double{});
  return merge(std::int64_t{});
}

const bool sort_registered = [] {
  register_op(kSortOp, sort_op);
  register_op(kTopkOp, topk_op);
  register_op(kSearchsortedOp, searchsorted_op);
  register_op(kIsinOp, isin_op);
  register_op(kUniqueOp, unique_op);
  return true;
}();

/** sort or argsort of x along axis (moved last, made one chunk). */
Array sort_along(const Array& x, int axis, bool arg, const char* name) {
  if (x.ndim() == 0) throw ShapeError(std::string(name) + ": axis " + std::to_string(axis) + " is out of bounds for a 0-d array");
  axis = normalize_axis(axis, x.ndim());
  Array y = whole_axes(move_axes_last(x, {axis}), {x.ndim() - 1});
  SortParams p;
  p.arg = arg;
  const Array r = chunk_map(kSortOp, arg ? DType::Int64 : x.dtype(), y.chunks(), {y}, {params_value(p, "SortParams")},
                            same_grid_reads(y.chunks()), name);
  return move_last_axes_back(r, {axis});
}

Array topk_impl(const Array& x, std::int64_t k, int axis, int split_every, bool arg, const char* name) {
  if (x.ndim() == 0) throw ShapeError(std::string(name) + ": needs an array of at least one dimension");
  if (k == 0) throw Error(std::string(name) + ": k must not be 0");
  if (split_every != 0 && split_every < 2) throw Error(std::string(name) + ": split_every must be >= 2");
  const int every = split_every ? split_every : 8;
  axis = normalize_axis(axis, x.ndim());
  const std::int64_t kk = k < 0 ? -k : k;
  if (kk > x.shape()[static_cast<std::size_t>(axis)])
    throw ShapeError(std::string(name) + ": k = " + std::to_string(k) + " is larger than the axis (" +
                     std::to_string(x.shape()[static_cast<std::size_t>(axis)]) + ")");
  const Array y = move_axes_last(x, {axis});
  const int last = y.ndim() - 1;
  const DType final_dtype = arg ? DType::Int64 : x.dtype();
  const DType partial_dtype = arg ? DType::Float64 : x.dtype();

  // Level 0: a top-k of every chunk; then groups of `every` partials merged until one is left.
  Array cur = y;
  std::vector<std::int64_t> counts = y.chunks()[static_cast<std::size_t>(last)];  // values per chunk
  bool from_partials = false;
  std::vector<std::int64_t> offsets = chunk_offsets(counts);
  int level = 0;
  while (true) {
    const std::size_t m = counts.size();
    const std::size_t groups = from_partials ? (m + every - 1) / every : m;
    const bool final = groups == 1 && (from_partials || m == 1);
    Chunks out_chunks = cur.chunks();
    std::vector<std::int64_t> out_counts;
    std::vector<std::vector<std::size_t>> members(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      std::int64_t sum = 0;
      const std::size_t lo = from_partials ? g * every : g, hi = from_partials ? std::min(m, lo + every) : g + 1;
      for (std::size_t j = lo; j < hi; ++j) {
        members[g].push_back(j);
        sum += counts[j];
      }
      out_counts.push_back(std::min(kk, sum));
    }
    out_chunks[static_cast<std::size_t>(last)].clear();
    for (auto c : out_counts) out_chunks[static_cast<std::size_t>(last)].push_back(final || !arg ? c : 2 * c);
    const Chunks& in_chunks = cur.chunks();
    const std::int64_t n = shape_size(chunk_counts(out_chunks));
    std::vector<std::vector<ChunkRead>> reads(static_cast<std::size_t>(n));
    std::vector<Value> params(static_cast<std::size_t>(n));
    for (std::int64_t f = 0; f < n; ++f) {
      auto cc = chunk_coords(out_chunks, f);
      const auto g = static_cast<std::size_t>(cc[static_cast<std::size_t>(last)]);
      TopkParams p;
      p.k = k;
      p.arg = arg;
      p.from_partials = from_partials;
      p.final = final;
      p.offset = from_partials ? 0 : offsets[g];
      for (std::size_t j : members[g]) {
        cc[static_cast<std::size_t>(last)] = static_cast<std::int64_t>(j);
        reads[static_cast<std::size_t>(f)].push_back({0, chunk_flat(in_chunks, cc)});
      }
      params[static_cast<std::size_t>(f)] = params_value(p, "TopkParams");
    }
    cur = chunk_map(kTopkOp, final ? final_dtype : partial_dtype, out_chunks, {cur}, std::move(params), std::move(reads),
                    std::string(name) + (final ? "" : "-partial" + std::to_string(level)));
    if (final) break;
    counts = out_counts;
    from_partials = true;
    ++level;
  }
  return move_last_axes_back(cur, {axis});
}

/** a and v in their common dtype. */
std::pair<Array, Array> common(const Array& a, const Array& v) {
  const DType t = promote_types(a.dtype(), v.dtype());
  return {a.dtype() == t ? a : a.astype(t), v.dtype() == t ? v : v.astype(t)};
}

}  // namespace

Array sort(const Array& x, int axis) { return sort_along(x, axis, false, "sort"); }
Array argsort(const Array& x, int axis) { return sort_along(x, axis, true, "argsort"); }
Array topk(const Array& x, std::int64_t k, int axis, int split_every) { return topk_impl(x, k, axis, split_every, false, "topk"); }
Array argtopk(const Array& x, std::int64_t k, int axis, int split_every) {
  return topk_impl(x, k, axis, split_every, true, "argtopk");
}

Array searchsorted(const Array& a_in, const Array& v_in, const std::string& side) {
  if (side != "left" && side != "right") throw Error("searchsorted: side must be 'left' or 'right', got '" + side + "'");
  if (a_in.ndim() != 1) throw ShapeError("searchsorted: a must be 1-d");
  auto [a, v] = common(a_in, v_in);
  a = whole_axes(a, {0});
  SearchParams p;
  p.right = side == "right";
  std::vector<std::vector<ChunkRead>> reads = same_grid_reads(v.chunks());
  for (auto& r : reads) r = {{0, 0}, {1, r[0].second}};
  return chunk_map(kSearchsortedOp, DType::Int64, v.chunks(), {a, v}, {params_value(p, "SearchParams")}, std::move(reads),
                   "searchsorted");
}

Array isin(const Array& element, const Array& test_elements, bool invert) {
  auto [x, t] = common(element, test_elements);
  if (t.ndim() != 1) t = t.reshape({-1});
  const Array sorted = sort(t, 0);
  IsinParams p;
  p.invert = invert;
  std::vector<std::vector<ChunkRead>> reads = same_grid_reads(x.chunks());
  for (auto& r : reads) r = {{0, r[0].second}, {1, 0}};
  return chunk_map(kIsinOp, DType::Bool, x.chunks(), {x, sorted}, {params_value(p, "IsinParams")}, std::move(reads), "isin");
}

Array digitize(const Array& x, const std::vector<double>& bins, bool right) {
  if (bins.empty()) throw Error("digitize: bins must not be empty");
  bool increasing = true, decreasing = true;
  for (std::size_t i = 1; i < bins.size(); ++i) {
    increasing &= bins[i - 1] <= bins[i];
    decreasing &= bins[i - 1] >= bins[i];
  }
  if (!increasing && !decreasing) throw Error("digitize: bins must be monotonically increasing or decreasing");
  // NumPy: searchsorted on the side that puts a value equal to an edge into the right bin.
  const std::string side = right ? "left" : "right";
  Array xf = x.dtype() == DType::Float64 ? x : x.astype(DType::Float64);
  if (increasing) return searchsorted(from_vector(bins, {static_cast<std::int64_t>(bins.size())}, {-1}), xf, side);
  const std::vector<double> rev(bins.rbegin(), bins.rend());
  return static_cast<std::int64_t>(bins.size()) -
         searchsorted(from_vector(rev, {static_cast<std::int64_t>(rev.size())}, {-1}), xf, side);
}

UniqueResult unique(const Array& x, Executor& executor, int split_every) {
  if (split_every != 0 && split_every < 2) throw Error("unique: split_every must be >= 2");
  const std::size_t every = split_every ? static_cast<std::size_t>(split_every) : 8;
  Lowering low(&executor);
  std::vector<Key> layer = low.lower(x.expr());
  const std::string name = unique_name("unique");
  auto add = [&](std::vector<Key> ins, bool from_partials, const Key& key) {
    UniqueParams p;
    p.from_partials = from_partials;
    Task t;
    t.key = key;
    t.op = kUniqueOp;
    t.annotations.target = x.target();
    t.args.emplace_back(params_value(p, "UniqueParams"));
    for (auto& k : ins) t.args.emplace_back(KeyRef{std::move(k)});
    low.graph().set(std::move(t));
  };
  std::vector<Key> parts;
  for (std::size_t i = 0; i < layer.size(); ++i) {
    parts.push_back(chunk_key(name + "-partial", {static_cast<std::int64_t>(i)}));
    add({layer[i]}, false, parts.back());
  }
  int level = 0;
  do {
    std::vector<Key> next;
    for (std::size_t i = 0; i < parts.size(); i += every) {
      next.push_back(chunk_key(name, {level, static_cast<std::int64_t>(i / every)}));
      add(std::vector<Key>(parts.begin() + static_cast<std::ptrdiff_t>(i),
                           parts.begin() + static_cast<std::ptrdiff_t>(std::min(parts.size(), i + every))),
          true, next.back());
    }
    parts = std::move(next);
    ++level;
  } while (parts.size() > 1);
  const Block merged = to_host(executor.get(low.graph(), {parts[0]})[0].block());
  const std::int64_t m = merged.shape()[1];
  Block values(x.dtype(), {m});
  Block counts(DType::Int64, {m});
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* v = static_cast<T*>(values.raw());
    auto copy = [&](const auto* w) {
      for (std::int64_t i = 0; i < m; ++i) {
        v[i] = static_cast<T>(w[i]);
        counts.data<std::int64_t>()[i] = static_cast<std::int64_t>(w[m + i]);
      }
    };
    if (merged.dtype() == DType::Float64) copy(merged.data<double>());
    else copy(merged.data<std::int64_t>());
  });
  UniqueResult r{from_block(values, {-1}), from_block(counts, {-1})};
  if (x.target() == Target::Device) r = {r.values.to_device(), r.counts.to_device()};
  return r;
}

}  // namespace tessera
