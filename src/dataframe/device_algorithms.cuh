#pragma once
/**
 * @file Private: the dataframe partition algorithms (filter, element-wise binary operations,
 * groupby partial / combine / finalize), written once with Thrust and templated on the system
 * they run on. Two instantiations exist:
 *  - device_algorithms_host.cpp: g++ with THRUST_DEVICE_SYSTEM_CPP, host memory (tests, CI);
 *  - cuda/frame_ops.cu: nvcc for the CUDA system, memory from the device pool, work on the op's
 *    stream.
 *
 * A system `Sys` provides: policy() (a Thrust execution policy whose raw pointers are the
 * system's memory), allocator() (detail::Allocator) and upload(dst, host, bytes) (the host bytes
 * may be dropped once it returns).
 *
 * C++17 only, and no project header that is not C++17 clean (nvcc builds .cu files as C++17).
 * Device code is plain functors (__host__ __device__ under nvcc), no extended lambdas.
 * docs/dataframe-gpu.md describes the algorithms and the partial-state layout.
 */
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/gather.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <math.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "array/element_semantics.hpp"
#include "dataframe/device_algorithms_types.hpp"
#include "dataframe/groupby_spec.hpp"
#include "tessera/core/dtype.hpp"
#include "tessera/core/error.hpp"

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__
#else
#define TESSERA_HD
#endif

namespace tessera::dataframe::detail::algo {

using Index = std::int64_t;

// ---- memory and dispatch ------------------------------------------------------------------------

/** A typed array of the system's memory. */
template <class T>
struct Buf {
  Memory mem;
  T* ptr = nullptr;
  Index n = 0;
};

template <class T, class Sys>
Buf<T> alloc(Sys& sys, Index n, bool result) {
  // Never 0 bytes: a pool may hand out no buffer for them, and a Block needs one.
  const std::size_t bytes = std::max<std::size_t>(sizeof(T) * static_cast<std::size_t>(std::max<Index>(n, 0)), 8);
  Memory m = sys.allocator().allocate(bytes, result);
  T* p = static_cast<T*>(m.data);
  return Buf<T>{std::move(m), p, n};
}

template <class T>
const T* typed(const Memory& m) {
  return static_cast<const T*>(m.data);
}

template <class T>
TESSERA_HD bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

/** A frame's column names, for the message about a missing column. */
inline std::string column_list(const RawFrame& f) {
  std::string s;
  for (const auto& c : f.columns) s += (s.empty() ? "" : ", ") + c.name;
  return "[" + s + "]";
}

inline const RawColumn& require_column(const RawFrame& f, const std::string& name, const char* what) {
  const RawColumn* c = f.find(name);
  if (!c) throw Error(std::string(what) + ": no column '" + name + "' in a frame with columns " + column_list(f));
  return *c;
}

// ---- functors (device code) ---------------------------------------------------------------------

struct NonZero {
  template <class T>
  TESSERA_HD bool operator()(T x) const {
    return x != T(0);
  }
};

/** Row r passes a filter mask: true and not null. */
struct MaskTrue {
  const bool* mask;
  const bool* valid;
  TESSERA_HD bool operator()(Index r) const { return mask[r] && (!valid || valid[r]); }
};

/** keep[r] && key r is present (not null, not NaN): pandas drops such rows (dropna=True). */
template <class T>
struct KeyPresent {
  const T* v;
  const bool* valid;
  TESSERA_HD std::uint8_t operator()(Index r, std::uint8_t keep) const {
    return keep && (!valid || valid[r]) && !is_nan(v[r]) ? 1 : 0;
  }
};

/** Marks the first sorted position of each group: position 0, or a key that differs from the previous one. */
template <class T>
struct KeyChanged {
  const T* v;
  const Index* idx;
  TESSERA_HD Index operator()(Index p, Index changed) const {
    return (p == 0 || changed || v[idx[p]] != v[idx[p - 1]]) ? 1 : 0;
  }
};

struct MinusOne {
  TESSERA_HD Index operator()(Index x) const { return x - 1; }
};

/** Integer addition that wraps (as NumPy's and pandas' int64 sums do) without signed overflow. */
struct WrapAdd {
  TESSERA_HD Index operator()(Index a, Index b) const {
    return static_cast<Index>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  }
};

/**
 * A float sum with its rounding error carried along (Knuth's two-sum), so a group's sum does not
 * depend on the order Thrust adds in beyond the last bit: pandas sums with Kahan compensation.
 */
struct Compensated {
  double s, c;
};
struct CompensatedAdd {
  TESSERA_HD Compensated operator()(const Compensated& a, const Compensated& b) const {
    const double s = a.s + b.s;
    const double bp = s - a.s;
    const double err = (a.s - (s - bp)) + (b.s - bp);
    return Compensated{s, a.c + b.c + err};
  }
};
struct CompensatedValue {
  // An infinite (or NaN) sum leaves a NaN error term: the sum is then the answer, as in pandas.
  TESSERA_HD double operator()(const Compensated& x) const { return x.s - x.s == 0 ? x.s + x.c : x.s; }
};
template <class F>
struct ToCompensated {
  F f;
  TESSERA_HD Compensated operator()(Index p) const { return Compensated{static_cast<double>(f(p)), 0.0}; }
};

// Row-level inputs of a partial: position p of the sorted rows is row idx[p] of the partition.

/** 1 when row idx[p] has a value (not null, not NaN), else 0. */
template <class T>
struct RowPresent {
  const T* v;
  const bool* valid;
  const Index* idx;
  TESSERA_HD Index operator()(Index p) const {
    const Index r = idx[p];
    return (!valid || valid[r]) && !is_nan(v[r]) ? 1 : 0;
  }
};

/** The value of row idx[p] as Out, or `fill` when it has none. */
template <class T, class Out>
struct RowValue {
  const T* v;
  const bool* valid;
  const Index* idx;
  Out fill;
  TESSERA_HD Out operator()(Index p) const {
    const Index r = idx[p];
    return (!valid || valid[r]) && !is_nan(v[r]) ? static_cast<Out>(v[r]) : fill;
  }
};

/** (x - mean of its group)^2 for a row with a value, else 0: the second pass of the variance. */
template <class T>
struct RowSquaredDeviation {
  const T* v;
  const bool* valid;
  const Index* idx;
  const Index* gid;
  const double* group_mean;
  TESSERA_HD double operator()(Index p) const {
    const Index r = idx[p];
    if ((valid && !valid[r]) || is_nan(v[r])) return 0.0;
    const double d = static_cast<double>(v[r]) - group_mean[gid[p]];
    return d * d;
  }
};

// State-level inputs of a combine: position p is row idx[p] of the concatenated partial states.

template <class T>
struct StateAt {
  const T* v;
  const Index* idx;
  TESSERA_HD T operator()(Index p) const { return v[idx[p]]; }
};

/** A min/max state where its partial saw values, else `fill` (the identity of the reduction). */
template <class T>
struct StateIfSeen {
  const Index* n;
  const T* v;
  const Index* idx;
  T fill;
  TESSERA_HD T operator()(Index p) const { return n[idx[p]] > 0 ? v[idx[p]] : fill; }
};

/** n_i * mean_i: the sum of the values behind a partial mean. */
struct StateWeightedMean {
  const Index* n;
  const double* mean;
  const Index* idx;
  TESSERA_HD double operator()(Index p) const {
    const Index r = idx[p];
    return n[r] > 0 ? static_cast<double>(n[r]) * mean[r] : 0.0;
  }
};

/** Chan et al.'s merge of (n_i, mean_i, M2_i) into a group of mean `group_mean`: M2_i + n_i (mean_i - mean)^2. */
struct StateChanM2 {
  const Index* n;
  const double* mean;
  const double* m2;
  const Index* idx;
  const Index* gid;
  const double* group_mean;
  TESSERA_HD double operator()(Index p) const {
    const Index r = idx[p];
    if (n[r] <= 0) return 0.0;
    const double d = mean[r] - group_mean[gid[p]];
    return m2[r] + static_cast<double>(n[r]) * d * d;
  }
};

struct MeanOf {
  TESSERA_HD double operator()(Index n, double s) const { return n > 0 ? s / static_cast<double>(n) : 0.0; }
};

struct AtLeast {
  Index k;
  TESSERA_HD bool operator()(Index n) const { return n >= k; }
};

struct VarianceOf {
  bool sqrt_of;
  TESSERA_HD double operator()(Index n, double m2) const {
    if (n < 2) return 0.0;
    const double v = m2 / static_cast<double>(n - 1);
    return sqrt_of ? ::sqrt(v) : v;
  }
};

struct AndValid {
  TESSERA_HD bool operator()(bool a, bool b) const { return a && b; }
};

// ---- element-wise binary operations -------------------------------------------------------------

/** Element i of an operand as the computation type C (a column of any dtype, or a scalar). */
template <class C>
struct Operand {
  const void* p;  // null: the scalar
  DType t;
  C scalar;
  TESSERA_HD C operator()(Index i) const {
    if (!p) return scalar;
    switch (t) {
      case DType::Bool: return static_cast<C>(static_cast<const bool*>(p)[i]);
      case DType::Int32: return static_cast<C>(static_cast<const std::int32_t*>(p)[i]);
      case DType::Int64: return static_cast<C>(static_cast<const std::int64_t*>(p)[i]);
      case DType::Float32: return static_cast<C>(static_cast<const float*>(p)[i]);
      default: break;
    }
    return static_cast<C>(static_cast<const double*>(p)[i]);
  }
};

/** One arithmetic element in C, with NumPy's rules (element_semantics.hpp, shared with the array kernels). */
template <class C>
TESSERA_HD C arithmetic(BinaryOp op, C x, C y) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    switch (op) {
      case BinaryOp::Add: return static_cast<C>(static_cast<U>(x) + static_cast<U>(y));
      case BinaryOp::Sub: return static_cast<C>(static_cast<U>(x) - static_cast<U>(y));
      case BinaryOp::Mul: return static_cast<C>(static_cast<U>(x) * static_cast<U>(y));
      case BinaryOp::FloorDiv:
        return static_cast<C>(tessera::detail::elem::wrap_int(
            tessera::detail::elem::floor_divide(static_cast<std::int64_t>(x), static_cast<std::int64_t>(y)),
            dtype_of_v<C>));
      case BinaryOp::Mod:
        return static_cast<C>(tessera::detail::elem::mod(static_cast<std::int64_t>(x), static_cast<std::int64_t>(y)));
      default: return C(0);
    }
  } else {
    switch (op) {
      case BinaryOp::Add: return x + y;
      case BinaryOp::Sub: return x - y;
      case BinaryOp::Mul: return x * y;
      case BinaryOp::FloorDiv: return tessera::detail::elem::floor_divide_f<C>(x, y);
      case BinaryOp::Mod: return tessera::detail::elem::mod_f<C>(x, y);
      default: return C(0);
    }
  }
}

template <class C>
TESSERA_HD bool compare(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    default: return x >= y;
  }
}

/** out[i] = a[i] op b[i], computed in C and stored as R (C, bool for comparisons, a float for truediv). */
template <class C, class R>
struct BinaryElement {
  Operand<C> a, b;
  BinaryOp op;
  BinaryElement(const Operand<C>& a_, const Operand<C>& b_, BinaryOp op_) : a(a_), b(b_), op(op_) {}
  TESSERA_HD R operator()(Index i) const {
    const C x = a(i), y = b(i);
    if constexpr (std::is_same_v<R, bool>) {
      return compare<C>(op, x, y);
    } else if constexpr (!std::is_same_v<R, C>) {
      return static_cast<R>(x) / static_cast<R>(y);  // truediv of integers
    } else {
      if (op == BinaryOp::TrueDiv) return x / y;
      return arithmetic<C>(op, x, y);
    }
  }
};

/** C++ type of a dtype in a template context (Bool is bool). */
template <class F>
decltype(auto) with_type(DType t, F&& f) {
  // Columns hold the five dtypes Arrow columns convert to (frame_from_table widens the rest).
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::Int32: return f(std::int32_t{});
    case DType::Int64: return f(std::int64_t{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default: break;
  }
  throw DTypeError(std::string("dataframe column of dtype ") + std::string(dtype_name(t)) +
                   " (columns are bool, int32, int64, float32 or float64)");
}

/** The dtype a scalar takes beside a column of `col` (NEP 50); an int that does not fit widens to int64. */
inline DType scalar_dtype(const ScalarOperand& s, DType col) {
  using tessera::detail::elem::ScalarKind;
  const ScalarKind k = s.kind == ScalarOperand::Kind::Bool  ? ScalarKind::Bool
                       : s.kind == ScalarOperand::Kind::Int ? ScalarKind::Int
                                                            : ScalarKind::Float;
  DType t = tessera::detail::elem::weak_scalar_dtype(k, col);
  if (s.kind != ScalarOperand::Kind::Float && !is_floating(t) && !tessera::detail::elem::int_fits(s.i, t))
    t = DType::Int64;
  return t;
}

inline const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "truediv", "floordiv", "mod", "eq", "ne", "lt", "le", "gt", "ge"};
  return names[static_cast<int>(op)];
}

/**
 * a op b over `rows` rows; either side may be a scalar (column pointer null, scalar given).
 * The result's validity is the AND of the columns' (a null compares as null, as in Arrow).
 */
template <class Sys>
RawColumn binary(Sys& sys, Index rows, const RawColumn* a, const ScalarOperand* sa, const RawColumn* b,
                 const ScalarOperand* sb, BinaryOp op) {
  if ((!a && !sa) || (!b && !sb)) throw Error("binary: an operand is missing");
  if (!a && !b) throw Error("binary: two scalars (one operand must be a column)");
  for (const RawColumn* c : {a, b})
    if (c && c->dictionary)
      throw DTypeError(std::string("binary ") + binary_op_name(op) + ": column '" + c->name +
                       "' holds strings (dictionary codes); only comparisons of numbers are supported");
  const DType ta = a ? a->dtype : scalar_dtype(*sa, b->dtype);
  const DType tb = b ? b->dtype : scalar_dtype(*sb, a->dtype);
  const DType compute = promote_types(ta, tb);
  DType out_type = compute;
  if (is_comparison(op)) {
    out_type = DType::Bool;
  } else if (op == BinaryOp::TrueDiv) {
    out_type = is_floating(compute) ? compute : DType::Float64;
  } else if (compute == DType::Bool) {
    throw DTypeError(std::string("binary ") + binary_op_name(op) +
                     ": arithmetic between two bool operands is not supported (cast one to int64)");
  }

  RawColumn out;
  out.name = a ? a->name : b->name;
  out.dtype = out_type;
  auto policy = sys.policy();
  with_type(compute, [&](auto ctag) {
    using C = std::decay_t<decltype(ctag)>;
    auto operand = [&](const RawColumn* c, const ScalarOperand* s) {
      if (c) return Operand<C>{c->values.data, c->dtype, C{}};
      return Operand<C>{nullptr, DType::Float64,
                        s->kind == ScalarOperand::Kind::Float ? static_cast<C>(s->f) : static_cast<C>(s->i)};
    };
    const Operand<C> oa = operand(a, sa), ob = operand(b, sb);
    with_type(out_type, [&](auto rtag) {
      using R = std::decay_t<decltype(rtag)>;
      if constexpr (std::is_same_v<R, bool> || std::is_same_v<R, C> ||
                    (std::is_floating_point_v<R> && std::is_integral_v<C>)) {
        Buf<R> buf = alloc<R>(sys, rows, true);
        thrust::transform(policy, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(rows), buf.ptr,
                          BinaryElement<C, R>(oa, ob, op));
        out.values = std::move(buf.mem);
      } else {
        throw Error("binary: unexpected result type");  // unreachable: out_type follows compute
      }
    });
  });

  const bool* va = a ? typed<bool>(a->valid) : nullptr;
  const bool* vb = b ? typed<bool>(b->valid) : nullptr;
  if (va || vb) {
    Buf<bool> valid = alloc<bool>(sys, rows, true);
    if (va && vb)
      thrust::transform(policy, va, va + rows, vb, valid.ptr, AndValid{});
    else
      thrust::copy(policy, va ? va : vb, (va ? va : vb) + rows, valid.ptr);
    out.valid = std::move(valid.mem);
  }
  return out;
}

// ---- filter ---------------------------------------------------------------------------------------

/** The column's rows at positions idx[0..m) (values and validity; the dictionary is shared). */
template <class Sys>
RawColumn gather_column(Sys& sys, const RawColumn& c, const Index* idx, Index m) {
  RawColumn out;
  out.name = c.name;
  out.dtype = c.dtype;
  out.dictionary = c.dictionary;
  out.logical_type = c.logical_type;
  auto policy = sys.policy();
  with_type(c.dtype, [&](auto tag) {
    using T = std::decay_t<decltype(tag)>;
    Buf<T> v = alloc<T>(sys, m, true);
    thrust::gather(policy, idx, idx + m, typed<T>(c.values), v.ptr);
    out.values = std::move(v.mem);
  });
  if (c.valid.data) {
    Buf<bool> v = alloc<bool>(sys, m, true);
    thrust::gather(policy, idx, idx + m, typed<bool>(c.valid), v.ptr);
    out.valid = std::move(v.mem);
  }
  return out;
}

/** The rows where `mask` is true (a null counts as false): stream compaction of every column. */
template <class Sys>
RawFrame filter(Sys& sys, const RawFrame& frame, const RawColumn& mask) {
  if (mask.dtype != DType::Bool)
    throw DTypeError("filter: the mask '" + mask.name + "' must be bool, not " + std::string(dtype_name(mask.dtype)));
  const Index n = frame.rows;
  auto policy = sys.policy();
  Buf<Index> idx = alloc<Index>(sys, n, false);
  Index* end = thrust::copy_if(policy, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(n), idx.ptr,
                               MaskTrue{typed<bool>(mask.values), typed<bool>(mask.valid)});
  const Index m = static_cast<Index>(end - idx.ptr);
  RawFrame out;
  out.rows = m;
  for (const auto& c : frame.columns) out.columns.push_back(gather_column(sys, c, idx.ptr, m));
  return out;
}

// ---- groupby: grouping rows by keys -------------------------------------------------------------

/** Rows with all keys present, sorted by the keys, and where each group starts. */
struct Grouping {
  Buf<Index> idx;     // sorted position -> row
  Buf<Index> gid;     // sorted position -> group (0-based, ascending)
  Buf<Index> first;   // group -> its first row (a row index, for the key values)
  Index rows = 0;     // sorted positions (rows kept)
  Index groups = 0;
};

/** The sort key of a key column's type: bool sorts as a byte (radix sort on every system). */
template <class T>
using SortKey = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

/**
 * A key as its sort key. -0.0 becomes +0.0: radix sorts (Thrust's on both systems) order the two
 * zeros apart, which would split a group of equal keys around the next key's order.
 */
template <class T>
struct ToSortKey {
  template <class U>
  TESSERA_HD T operator()(U x) const {
    if constexpr (std::is_floating_point_v<U>) {
      if (x == U(0)) return T(0);
    }
    return static_cast<T>(x);
  }
};

/**
 * Sort-based grouping: drop rows with a null (or NaN) key, sort the rest by the keys (a stable
 * sort per key, last key first, so the order is lexicographic), mark where the keys change.
 */
template <class Sys>
Grouping group_rows(Sys& sys, Index n, const std::vector<const RawColumn*>& keys) {
  auto policy = sys.policy();
  const thrust::counting_iterator<Index> iota(0);
  Buf<std::uint8_t> keep = alloc<std::uint8_t>(sys, n, false);
  thrust::fill(policy, keep.ptr, keep.ptr + n, std::uint8_t(1));
  for (const RawColumn* k : keys)
    with_type(k->dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      thrust::transform(policy, iota, iota + n, keep.ptr, keep.ptr, KeyPresent<T>{typed<T>(k->values), typed<bool>(k->valid)});
    });
  Grouping g;
  g.idx = alloc<Index>(sys, n, false);
  Index* end = thrust::copy_if(policy, iota, iota + n, keep.ptr, g.idx.ptr, NonZero{});
  const Index r = static_cast<Index>(end - g.idx.ptr);
  g.rows = r;
  keep = Buf<std::uint8_t>{};

  for (auto it = keys.rbegin(); it != keys.rend(); ++it)
    with_type((*it)->dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      using K = SortKey<T>;
      Buf<K> tmp = alloc<K>(sys, r, false);
      auto src = thrust::make_transform_iterator(typed<T>((*it)->values), ToSortKey<K>{});
      thrust::gather(policy, g.idx.ptr, g.idx.ptr + r, src, tmp.ptr);
      thrust::stable_sort_by_key(policy, tmp.ptr, tmp.ptr + r, g.idx.ptr);
    });

  Buf<Index> changed = alloc<Index>(sys, r, false);
  thrust::fill(policy, changed.ptr, changed.ptr + r, Index(0));
  for (const RawColumn* k : keys)
    with_type(k->dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      thrust::transform(policy, iota, iota + r, changed.ptr, changed.ptr, KeyChanged<T>{typed<T>(k->values), g.idx.ptr});
    });
  g.gid = alloc<Index>(sys, r, false);
  thrust::inclusive_scan(policy, changed.ptr, changed.ptr + r, g.gid.ptr);
  thrust::transform(policy, g.gid.ptr, g.gid.ptr + r, g.gid.ptr, MinusOne{});
  Buf<Index> starts = alloc<Index>(sys, r, false);
  Index* send = thrust::copy_if(policy, iota, iota + r, changed.ptr, starts.ptr, NonZero{});
  g.groups = static_cast<Index>(send - starts.ptr);
  g.first = alloc<Index>(sys, g.groups, false);
  thrust::gather(policy, starts.ptr, starts.ptr + g.groups, g.idx.ptr, g.first.ptr);
  return g;
}

/** One value per group: reduce_by_key of `values` (indexed by sorted position) over the groups. */
template <class Out, class Sys, class It, class Op>
Buf<Out> reduce_groups(Sys& sys, const Grouping& g, It values, Op op, bool result) {
  Buf<Out> out = alloc<Out>(sys, g.groups, result);
  thrust::reduce_by_key(sys.policy(), g.gid.ptr, g.gid.ptr + g.rows, values, thrust::make_discard_iterator(), out.ptr,
                        thrust::equal_to<Index>(), op);
  return out;
}

template <class Sys, class F>
Buf<Index> count_groups(Sys& sys, const Grouping& g, F present, bool result) {
  return reduce_groups<Index>(sys, g, thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), present),
                              WrapAdd{}, result);
}

/** A compensated float sum per group of f(p). */
template <class Sys, class F>
Buf<double> sum_groups(Sys& sys, const Grouping& g, F f, bool result) {
  Buf<Compensated> acc = reduce_groups<Compensated>(
      sys, g, thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), ToCompensated<F>{f}), CompensatedAdd{},
      false);
  Buf<double> out = alloc<double>(sys, g.groups, result);
  thrust::transform(sys.policy(), acc.ptr, acc.ptr + g.groups, out.ptr, CompensatedValue{});
  return out;
}

template <class T, bool Min>
T min_max_identity() {
  if constexpr (std::is_floating_point_v<T>) {
    return Min ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  } else {
    return Min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  }
}

// ---- groupby: partial states ---------------------------------------------------------------------

// A partial frame holds the key columns (named as spec.by), "__size" (rows per group), then per
// AggSpec i the states its aggregation needs, named "__a<i>.<state>":
//   count: n            sum: s (int64 for integer and bool columns, else float64)
//   mean: n, s (float64)          min, max: n, m (the column's type; m is meaningless where n == 0)
//   var, std: n, mean, m2 (float64: count, mean and sum of squared deviations of the values)
//   size: nothing beyond __size.

inline constexpr const char* kSizeColumn = "__size";

inline std::string state_name(std::size_t i, const char* state) { return "__a" + std::to_string(i) + "." + state; }

inline bool sums_as_int(DType t) { return !is_floating(t); }

template <class T>
RawColumn state_column(std::string name, Buf<T>&& buf, std::string logical_type = {}) {
  RawColumn c;
  c.name = std::move(name);
  c.dtype = dtype_of_v<T>;
  c.values = std::move(buf.mem);
  c.logical_type = std::move(logical_type);
  return c;
}

inline void check_spec(const GroupbySpec& spec, const char* what) {
  if (spec.by.empty()) throw Error(std::string(what) + ": no key columns (spec.by is empty)");
}

/** The value column an AggSpec reads in a partition, checked against what its aggregation accepts. */
inline const RawColumn* agg_input(const RawFrame& f, const AggSpec& a, const char* what) {
  if (a.how == Agg::Size) return nullptr;
  const RawColumn& c = require_column(f, a.column, what);
  if (c.dictionary && a.how != Agg::Count)
    throw DTypeError(std::string(what) + ": column '" + a.column +
                     "' holds strings; only count and size aggregate them here (output '" + a.output + "')");
  return &c;
}

/** Key values of each group (at its first row), with the column's dictionary and logical type. */
template <class Sys>
RawColumn group_keys(Sys& sys, const Grouping& g, const RawColumn& key) {
  // Kept rows have no null keys, so the result drops the validity mask.
  return gather_column(sys, RawColumn{key.name, key.dtype, key.values, Memory{}, key.dictionary, key.logical_type},
                       g.first.ptr, g.groups);
}

/** The states of one AggSpec over the rows of a partition. */
template <class Sys>
void partial_states(Sys& sys, const Grouping& g, const RawColumn* col, const AggSpec& a, std::size_t i,
                    std::vector<RawColumn>& out) {
  if (a.how == Agg::Size) return;
  auto policy = sys.policy();
  with_type(col->dtype, [&](auto tag) {
    using T = std::decay_t<decltype(tag)>;
    const T* v = typed<T>(col->values);
    const bool* valid = typed<bool>(col->valid);
    const Index* idx = g.idx.ptr;
    const auto present = RowPresent<T>{v, valid, idx};
    switch (a.how) {
      case Agg::Count: out.push_back(state_column(state_name(i, "n"), count_groups(sys, g, present, true))); break;
      case Agg::Sum:
        if (sums_as_int(col->dtype)) {
          out.push_back(state_column(
              state_name(i, "s"),
              reduce_groups<Index>(sys, g,
                                   thrust::make_transform_iterator(thrust::counting_iterator<Index>(0),
                                                                   RowValue<T, Index>{v, valid, idx, 0}),
                                   WrapAdd{}, true)));
        } else {
          out.push_back(state_column(state_name(i, "s"), sum_groups(sys, g, RowValue<T, double>{v, valid, idx, 0.0}, true)));
        }
        break;
      case Agg::Mean:
        out.push_back(state_column(state_name(i, "n"), count_groups(sys, g, present, true)));
        out.push_back(state_column(state_name(i, "s"), sum_groups(sys, g, RowValue<T, double>{v, valid, idx, 0.0}, true)));
        break;
      case Agg::Min:
      case Agg::Max: {
        out.push_back(state_column(state_name(i, "n"), count_groups(sys, g, present, true)));
        const bool is_min = a.how == Agg::Min;
        const T fill = is_min ? min_max_identity<T, true>() : min_max_identity<T, false>();
        auto it = thrust::make_transform_iterator(thrust::counting_iterator<Index>(0), RowValue<T, T>{v, valid, idx, fill});
        Buf<T> m = is_min ? reduce_groups<T>(sys, g, it, thrust::minimum<T>(), true)
                          : reduce_groups<T>(sys, g, it, thrust::maximum<T>(), true);
        out.push_back(state_column(state_name(i, "m"), std::move(m), col->logical_type));
        break;
      }
      case Agg::Var:
      case Agg::Std: {
        // Two passes per partition (the mean, then squared deviations from it): no cancellation
        // as in sum(x^2) - n mean^2; partitions are merged with Chan's formula in combine.
        Buf<Index> n = count_groups(sys, g, present, true);
        Buf<double> s = sum_groups(sys, g, RowValue<T, double>{v, valid, idx, 0.0}, false);
        Buf<double> mean = alloc<double>(sys, g.groups, true);
        thrust::transform(policy, n.ptr, n.ptr + g.groups, s.ptr, mean.ptr, MeanOf{});
        Buf<double> m2 = sum_groups(sys, g, RowSquaredDeviation<T>{v, valid, idx, g.gid.ptr, mean.ptr}, true);
        out.push_back(state_column(state_name(i, "n"), std::move(n)));
        out.push_back(state_column(state_name(i, "mean"), std::move(mean)));
        out.push_back(state_column(state_name(i, "m2"), std::move(m2)));
        break;
      }
      case Agg::Size: break;
    }
  });
}

/** groupby_partial: one partition's rows -> per-group partial states (layout above). */
template <class Sys>
RawFrame groupby_partial(Sys& sys, const RawFrame& frame, const GroupbySpec& spec) {
  constexpr const char* what = "groupby_partial";
  check_spec(spec, what);
  std::vector<const RawColumn*> keys;
  for (const auto& k : spec.by) keys.push_back(&require_column(frame, k, what));
  std::vector<const RawColumn*> inputs;
  for (const auto& a : spec.aggs) inputs.push_back(agg_input(frame, a, what));

  const Grouping g = group_rows(sys, frame.rows, keys);
  RawFrame out;
  out.rows = g.groups;
  for (const RawColumn* k : keys) out.columns.push_back(group_keys(sys, g, *k));
  out.columns.push_back(state_column(kSizeColumn, reduce_groups<Index>(sys, g, thrust::constant_iterator<Index>(1), WrapAdd{}, true)));
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) partial_states(sys, g, inputs[i], spec.aggs[i], i, out.columns);
  return out;
}

// ---- groupby: combine and finalize ---------------------------------------------------------------

/** The names of the state columns of AggSpec i (in the order partial_states writes them). */
inline std::vector<std::string> state_columns(const AggSpec& a, std::size_t i) {
  switch (a.how) {
    case Agg::Count: return {state_name(i, "n")};
    case Agg::Sum: return {state_name(i, "s")};
    case Agg::Mean: return {state_name(i, "n"), state_name(i, "s")};
    case Agg::Min:
    case Agg::Max: return {state_name(i, "n"), state_name(i, "m")};
    case Agg::Var:
    case Agg::Std: return {state_name(i, "n"), state_name(i, "mean"), state_name(i, "m2")};
    case Agg::Size: break;
  }
  return {};
}

/**
 * String keys: each partition's codes index its own dictionary. The merged dictionary is the
 * sorted union of all of them (on the host: dictionaries are small next to the data), and each
 * partition's codes are remapped into it on the system, so codes compare as the strings do and
 * the result comes out sorted by string.
 */
struct MergedDictionary {
  std::shared_ptr<const std::vector<std::string>> strings;
  std::vector<std::vector<std::int32_t>> remap;  // per partial: old code -> merged code
};

inline MergedDictionary merge_dictionaries(const std::vector<const RawColumn*>& cols) {
  std::vector<std::string> all;
  for (const RawColumn* c : cols)
    if (c->dictionary) all.insert(all.end(), c->dictionary->begin(), c->dictionary->end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  MergedDictionary m;
  for (const RawColumn* c : cols) {
    std::vector<std::int32_t> table;
    if (c->dictionary)
      for (const auto& s : *c->dictionary)
        table.push_back(static_cast<std::int32_t>(std::lower_bound(all.begin(), all.end(), s) - all.begin()));
    m.remap.push_back(std::move(table));
  }
  m.strings = std::make_shared<const std::vector<std::string>>(std::move(all));
  return m;
}

/** The column `name` of every partial, one after the other (string codes remapped when `dict`). */
template <class Sys>
RawColumn concatenate(Sys& sys, const std::vector<RawFrame>& parts, const std::string& name, Index total,
                      const MergedDictionary* dict) {
  auto policy = sys.policy();
  const RawColumn& first = require_column(parts[0], name, "groupby_combine");
  RawColumn out;
  out.name = name;
  out.dtype = first.dtype;
  out.logical_type = first.logical_type;
  if (dict) out.dictionary = dict->strings;
  with_type(first.dtype, [&](auto tag) {
    using T = std::decay_t<decltype(tag)>;
    Buf<T> buf = alloc<T>(sys, total, false);
    Index offset = 0;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const RawColumn& c = require_column(parts[p], name, "groupby_combine");
      if (c.dtype != first.dtype)
        throw DTypeError("groupby_combine: column '" + name + "' is " + std::string(dtype_name(c.dtype)) +
                         " in one partial and " + std::string(dtype_name(first.dtype)) + " in another");
      if (c.valid.data) throw Error("groupby_combine: column '" + name + "' of a partial has nulls (not a partial state)");
      const Index rows = parts[p].rows;
      if constexpr (std::is_same_v<T, std::int32_t>) {
        if (dict) {
          const auto& table = dict->remap[p];
          if (rows > 0 && table.empty())
            throw DTypeError("groupby_combine: key '" + name + "' holds strings in one partial and not in another");
          Buf<std::int32_t> dev = alloc<std::int32_t>(sys, static_cast<Index>(table.size()), false);
          if (!table.empty()) sys.upload(dev.ptr, table.data(), table.size() * sizeof(std::int32_t));
          thrust::gather(policy, typed<std::int32_t>(c.values), typed<std::int32_t>(c.values) + rows, dev.ptr,
                         buf.ptr + offset);
          offset += rows;
          continue;
        }
      }
      thrust::copy(policy, typed<T>(c.values), typed<T>(c.values) + rows, buf.ptr + offset);
      offset += rows;
    }
    out.values = std::move(buf.mem);
  });
  return out;
}

/** The states of AggSpec i merged over the concatenated partial states `cat`. */
template <class Sys>
void combine_states(Sys& sys, const Grouping& g, const RawFrame& cat, const AggSpec& a, std::size_t i,
                    std::vector<RawColumn>& out) {
  if (a.how == Agg::Size) return;
  const auto names = state_columns(a, i);
  std::vector<const RawColumn*> s;
  for (const auto& n : names) s.push_back(&require_column(cat, n, "groupby_combine"));
  const Index* idx = g.idx.ptr;
  const thrust::counting_iterator<Index> iota(0);
  auto n_of = [&](const RawColumn* c) {
    if (c->dtype != DType::Int64) throw DTypeError("groupby_combine: state '" + c->name + "' is not int64");
    return reduce_groups<Index>(sys, g, thrust::make_transform_iterator(iota, StateAt<Index>{typed<Index>(c->values), idx}),
                                WrapAdd{}, true);
  };
  auto double_state = [&](const RawColumn* c) {
    if (c->dtype != DType::Float64) throw DTypeError("groupby_combine: state '" + c->name + "' is not float64");
    return typed<double>(c->values);
  };
  switch (a.how) {
    case Agg::Count: out.push_back(state_column(names[0], n_of(s[0]))); break;
    case Agg::Sum:
    case Agg::Mean: {
      if (a.how == Agg::Mean) out.push_back(state_column(names[0], n_of(s[0])));
      const RawColumn* sum = s.back();
      if (sum->dtype == DType::Int64)
        out.push_back(state_column(
            sum->name,
            reduce_groups<Index>(sys, g, thrust::make_transform_iterator(iota, StateAt<Index>{typed<Index>(sum->values), idx}),
                                 WrapAdd{}, true)));
      else
        out.push_back(state_column(sum->name, sum_groups(sys, g, StateAt<double>{double_state(sum), idx}, true)));
      break;
    }
    case Agg::Min:
    case Agg::Max: {
      const Index* n = typed<Index>(s[0]->values);
      out.push_back(state_column(names[0], n_of(s[0])));
      with_type(s[1]->dtype, [&](auto tag) {
        using T = std::decay_t<decltype(tag)>;
        const bool is_min = a.how == Agg::Min;
        const T fill = is_min ? min_max_identity<T, true>() : min_max_identity<T, false>();
        auto it = thrust::make_transform_iterator(iota, StateIfSeen<T>{n, typed<T>(s[1]->values), idx, fill});
        Buf<T> m = is_min ? reduce_groups<T>(sys, g, it, thrust::minimum<T>(), true)
                          : reduce_groups<T>(sys, g, it, thrust::maximum<T>(), true);
        out.push_back(state_column(names[1], std::move(m), s[1]->logical_type));
      });
      break;
    }
    case Agg::Var:
    case Agg::Std: {
      const Index* n = typed<Index>(s[0]->values);
      const double* mean = double_state(s[1]);
      const double* m2 = double_state(s[2]);
      Buf<Index> gn = n_of(s[0]);
      Buf<double> gs = sum_groups(sys, g, StateWeightedMean{n, mean, idx}, false);
      Buf<double> gmean = alloc<double>(sys, g.groups, true);
      thrust::transform(sys.policy(), gn.ptr, gn.ptr + g.groups, gs.ptr, gmean.ptr, MeanOf{});
      Buf<double> gm2 = sum_groups(sys, g, StateChanM2{n, mean, m2, idx, g.gid.ptr, gmean.ptr}, true);
      out.push_back(state_column(names[0], std::move(gn)));
      out.push_back(state_column(names[1], std::move(gmean)));
      out.push_back(state_column(names[2], std::move(gm2)));
      break;
    }
    case Agg::Size: break;
  }
}

/** A validity column `n >= k` per group, or none when every group passes. */
template <class Sys>
Memory validity_at_least(Sys& sys, const Index* n, Index groups, Index k) {
  auto policy = sys.policy();
  const Index passing = thrust::count_if(policy, n, n + groups, AtLeast{k});
  if (passing == groups) return Memory{};
  Buf<bool> v = alloc<bool>(sys, groups, true);
  thrust::transform(policy, n, n + groups, v.ptr, AtLeast{k});
  return std::move(v.mem);
}

/** The result column of AggSpec i from its merged states (groupby_spec.hpp's types and null rules). */
template <class Sys>
RawColumn finalize_agg(Sys& sys, const RawFrame& states, const AggSpec& a, std::size_t i) {
  const Index G = states.rows;
  auto policy = sys.policy();
  RawColumn out;
  out.name = a.output;
  auto st = [&](const char* s) -> const RawColumn& { return require_column(states, state_name(i, s), "groupby_combine"); };
  auto take = [&](const RawColumn& c) {
    out.dtype = c.dtype;
    out.values = c.values;
    out.logical_type = c.logical_type;
  };
  switch (a.how) {
    case Agg::Size: take(require_column(states, kSizeColumn, "groupby_combine")); break;
    case Agg::Count: take(st("n")); break;
    case Agg::Sum: take(st("s")); break;
    case Agg::Min:
    case Agg::Max:
      take(st("m"));
      out.valid = validity_at_least(sys, typed<Index>(st("n").values), G, 1);
      break;
    case Agg::Mean: {
      const Index* n = typed<Index>(st("n").values);
      Buf<double> v = alloc<double>(sys, G, true);
      thrust::transform(policy, n, n + G, typed<double>(st("s").values), v.ptr, MeanOf{});
      out.dtype = DType::Float64;
      out.values = std::move(v.mem);
      out.valid = validity_at_least(sys, n, G, 1);
      break;
    }
    case Agg::Var:
    case Agg::Std: {
      const Index* n = typed<Index>(st("n").values);
      Buf<double> v = alloc<double>(sys, G, true);
      thrust::transform(policy, n, n + G, typed<double>(st("m2").values), v.ptr, VarianceOf{a.how == Agg::Std});
      out.dtype = DType::Float64;
      out.values = std::move(v.mem);
      out.valid = validity_at_least(sys, n, G, 2);
      break;
    }
  }
  return out;
}

/**
 * groupby_combine: partial states of several partitions -> merged partial states (same layout),
 * or, with spec.finalize, the result: the keys sorted ascending (named as spec.by), then one
 * column per AggSpec named spec.aggs[i].output.
 */
template <class Sys>
RawFrame groupby_combine(Sys& sys, const std::vector<RawFrame>& parts, const GroupbySpec& spec) {
  constexpr const char* what = "groupby_combine";
  check_spec(spec, what);
  if (parts.empty()) throw Error("groupby_combine: no partial states to combine");
  Index total = 0;
  for (const auto& p : parts) total += p.rows;

  RawFrame cat;
  cat.rows = total;
  for (const auto& k : spec.by) {
    std::vector<const RawColumn*> cols;
    bool strings = false;
    for (const auto& p : parts) {
      cols.push_back(&require_column(p, k, what));
      strings = strings || cols.back()->dictionary != nullptr;
    }
    if (strings) {
      const MergedDictionary dict = merge_dictionaries(cols);
      cat.columns.push_back(concatenate(sys, parts, k, total, &dict));
    } else {
      cat.columns.push_back(concatenate(sys, parts, k, total, nullptr));
    }
  }
  cat.columns.push_back(concatenate(sys, parts, kSizeColumn, total, nullptr));
  for (std::size_t i = 0; i < spec.aggs.size(); ++i)
    for (const auto& n : state_columns(spec.aggs[i], i)) {
      if (cat.find(n)) continue;
      cat.columns.push_back(concatenate(sys, parts, n, total, nullptr));
    }

  std::vector<const RawColumn*> keys;
  for (const auto& k : spec.by) keys.push_back(cat.find(k));
  const Grouping g = group_rows(sys, total, keys);

  RawFrame merged;
  merged.rows = g.groups;
  for (const RawColumn* k : keys) merged.columns.push_back(group_keys(sys, g, *k));
  const RawColumn& size = *cat.find(kSizeColumn);
  merged.columns.push_back(state_column(
      kSizeColumn,
      reduce_groups<Index>(sys, g,
                           thrust::make_transform_iterator(thrust::counting_iterator<Index>(0),
                                                           StateAt<Index>{typed<Index>(size.values), g.idx.ptr}),
                           WrapAdd{}, true)));
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) combine_states(sys, g, cat, spec.aggs[i], i, merged.columns);
  if (!spec.finalize) return merged;

  RawFrame result;
  result.rows = merged.rows;
  for (std::size_t k = 0; k < spec.by.size(); ++k) result.columns.push_back(merged.columns[k]);
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) result.columns.push_back(finalize_agg(sys, merged, spec.aggs[i], i));
  return result;
}

}  // namespace tessera::dataframe::detail::algo

#undef TESSERA_HD
