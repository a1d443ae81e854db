#pragma once
/**
 * @file Private: the relational partition algorithms of device frames (a shuffle's split by hash
 * or by range, a sort by several columns, a merge, a concatenation), written once with Thrust and
 * templated on the system as device_algorithms.cuh is (its header comment says what a system
 * provides; these also need download(host, src, bytes), which waits for the bytes). Instantiated
 * by device_algorithms_host.cpp (Thrust's host system: tests, CI) and cuda/frame_ops.cu (a GPU).
 * docs/dataframe-gpu.md ("Shuffle, sort and merge") describes them.
 *
 * The semantics are the host's, from the same definitions: rows go to the partition of
 * partition_index.hpp (so a device and a host partition of equal keys agree), a range split uses
 * partition_index::range_of, a merge follows join_host.hpp's rules (keys compared as their common
 * type, missing keys matching each other, the host's result columns), and a sort is pandas'
 * (stable, each column ascending or not, missing values last or first).
 *
 * C++17 only: nvcc builds the CUDA instantiation.
 */
#include <thrust/binary_search.h>
#include <thrust/for_each.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>

#include "dataframe/device_algorithms.cuh"
#include "dataframe/partition_index.hpp"

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__
#else
#define TESSERA_HD
#endif

namespace tessera::dataframe::detail::algo {

// ---- host <-> system ------------------------------------------------------------------------------

/** n elements of the system's memory as a host vector (waits for them). */
template <class T, class Sys>
std::vector<T> download_vector(Sys& sys, const T* src, Index n) {
  std::vector<T> v(static_cast<std::size_t>(std::max<Index>(n, 0)));
  if (n > 0) sys.download(v.data(), src, v.size() * sizeof(T));
  return v;
}

/** A host vector in the system's memory. */
template <class T, class Sys>
Buf<T> upload_vector(Sys& sys, const std::vector<T>& v, bool result) {
  Buf<T> b = alloc<T>(sys, static_cast<Index>(v.size()), result);
  if (!v.empty()) sys.upload(b.ptr, v.data(), v.size() * sizeof(T));
  return b;
}

// ---- functors (device code) -----------------------------------------------------------------------

/** Folds a number column into the row hashes (partition_index.hpp: by value, missing as one constant). */
template <class T>
struct HashNumbers {
  const T* v;
  const bool* valid;
  std::uint64_t* h;
  TESSERA_HD void operator()(Index r) const {
    namespace pi = partition_index;
    std::uint64_t x;
    if (valid && !valid[r]) {
      x = pi::kMissing;
    } else if constexpr (std::is_floating_point_v<T>) {
      x = pi::hash_double(static_cast<double>(v[r]));
    } else {
      x = pi::hash_int(static_cast<std::int64_t>(v[r]));
    }
    h[r] = pi::combine(h[r], x);
  }
};

/** Folds a string column into the row hashes: each code's string hashed once on the host. */
struct HashCodes {
  const std::int32_t* codes;
  const bool* valid;
  const std::uint64_t* table;
  Index entries;
  std::uint64_t* h;
  TESSERA_HD void operator()(Index r) const {
    namespace pi = partition_index;
    const std::int32_t c = codes[r];
    const bool missing = (valid && !valid[r]) || c < 0 || c >= entries;
    h[r] = pi::combine(h[r], missing ? pi::kMissing : table[c]);
  }
};

struct PartitionOfHash {
  const std::uint64_t* h;
  std::uint32_t parts;
  TESSERA_HD std::uint32_t operator()(Index r) const { return partition_index::partition_of(h[r], parts); }
};

template <class T>
struct RangeOfValue {
  const T* v;
  const bool* valid;
  const double* bounds;
  std::uint32_t count, last;
  bool ascending, nulls_first;
  TESSERA_HD std::uint32_t operator()(Index r) const {
    return partition_index::range_of(static_cast<double>(v[r]), valid && !valid[r], bounds, count, last, ascending,
                                     nulls_first);
  }
};

/** A code remapped through a table (a merged dictionary); a null or out-of-range code becomes 0. */
struct RemapCode {
  const std::int32_t* codes;
  const bool* valid;
  const std::int32_t* table;
  Index entries;
  TESSERA_HD std::int32_t operator()(Index r) const {
    const std::int32_t c = codes[r];
    return (valid && !valid[r]) || c < 0 || c >= entries ? 0 : table[c];
  }
};

/**
 * Row idx[p]'s value as K, the sort key of a column: -0.0 as +0.0 and NaN as 0 (a missing value is
 * ordered by its own flag, sorted after the values), strings through `rank` (the code's place
 * among the dictionary's strings in order).
 */
template <class T, class K>
struct SortValueAt {
  const T* v;
  const Index* idx;
  const std::int32_t* rank;  // strings only
  Index entries;
  TESSERA_HD K operator()(Index p) const {
    const T x = v[idx[p]];
    if constexpr (std::is_floating_point_v<T>) {
      if (x != x || x == T(0)) return K(0);
    }
    if constexpr (std::is_same_v<T, std::int32_t>) {
      if (rank) return x >= 0 && x < entries ? static_cast<K>(rank[x]) : K(0);
    }
    return static_cast<K>(x);
  }
};

/** 1 where row idx[p] is missing (null or NaN), else 0; inverted for missing values first. */
template <class T>
struct MissingFlagAt {
  const T* v;
  const bool* valid;
  const Index* idx;
  bool first;
  TESSERA_HD std::uint8_t operator()(Index p) const {
    const Index r = idx[p];
    const bool missing = (valid && !valid[r]) || is_nan(v[r]);
    return static_cast<std::uint8_t>(missing != first ? 1 : 0);
  }
};

/**
 * Row r of a key column cast to the join's common key type, NaN as 0 (KeyValid makes it missing:
 * missing keys match each other whether they are null or NaN, as in the host join) and -0.0 as
 * +0.0 (they are equal keys, as in pandas; the host join does the same).
 */
template <class T, class Out>
struct CastKey {
  const T* v;
  TESSERA_HD Out operator()(Index r) const {
    const T x = v[r];
    if constexpr (std::is_floating_point_v<T>) {
      if (x != x || x == T(0)) return Out(0);
    }
    return static_cast<Out>(x);
  }
};
template <class T>
struct KeyValid {
  const T* v;
  const bool* valid;
  TESSERA_HD bool operator()(Index r) const { return (!valid || valid[r]) && !is_nan(v[r]); }
};

/** Position p of the concatenated sides (left rows, then right rows) as the value of one key. */
template <class C>
struct BothSidesAt {
  const C* left;
  const C* right;
  Index nl;
  TESSERA_HD C operator()(Index p) const { return p < nl ? left[p] : right[p - nl]; }
};

/** The id comparison of sorted positions: 1 where any key (value or missing flag) changes. */
template <class C>
struct PositionChanged {
  BothSidesAt<C> value;
  BothSidesAt<bool> present;
  const Index* idx;
  TESSERA_HD Index operator()(Index p, Index changed) const {
    if (p == 0 || changed) return 1;
    const Index a = idx[p - 1], b = idx[p];
    const bool pa = present(a), pb = present(b);
    if (pa != pb) return 1;
    return pa && value(a) != value(b) ? 1 : 0;
  }
};

/** Sorted position p's key as its sort key (0 where missing: the missing flag orders those). */
template <class T, class K>
struct KeyAtPosition {
  BothSidesAt<T> value;
  BothSidesAt<bool> present;
  const Index* idx;
  TESSERA_HD K operator()(Index p) const { return present(idx[p]) ? ToSortKey<K>{}(value(idx[p])) : K(0); }
};
struct AbsentFlag {
  BothSidesAt<bool> present;
  const Index* idx;
  TESSERA_HD std::uint8_t operator()(Index p) const { return present(idx[p]) ? 0 : 1; }
};

struct InRange {
  Index lo, hi;
  TESSERA_HD bool operator()(Index x) const { return x >= lo && x < hi; }
};
struct Shift {
  Index by;
  TESSERA_HD Index operator()(Index x) const { return x + by; }
};
struct Difference {
  TESSERA_HD Index operator()(Index hi, Index lo) const { return hi - lo; }
};
struct AtLeastOne {
  TESSERA_HD Index operator()(Index n) const { return n > 0 ? n : 1; }
};
struct IsZero {
  TESSERA_HD bool operator()(Index n) const { return n == 0; }
};
struct IsFalse {
  TESSERA_HD bool operator()(bool b) const { return !b; }
};

/** Output position q of an expanded join: its probe row's match j, or -1 where the row has none. */
struct MatchOf {
  const Index* row;      // q -> probe row
  const Index* start;    // probe row -> its first output position
  const Index* count;    // probe row -> matches
  const Index* lower;    // probe row -> first match among the sorted build rows
  const Index* build;    // sorted build position -> build row
  TESSERA_HD Index operator()(Index q) const {
    const Index r = row[q];
    return count[r] > 0 ? build[lower[r] + (q - start[r])] : Index(-1);
  }
};

/** Row idx[q] of a column, or a null where idx[q] < 0 (a row without a match). */
template <class T>
struct GatherOrZero {
  const T* v;
  const Index* idx;
  TESSERA_HD T operator()(Index q) const { return idx[q] >= 0 ? v[idx[q]] : T{}; }
};
struct GatherValid {
  const bool* valid;
  const Index* idx;
  TESSERA_HD bool operator()(Index q) const { return idx[q] >= 0 && (!valid || valid[idx[q]]); }
};
/** The merged key: the left row's where it has one, else the right row's. */
template <class T>
struct Coalesce {
  const T* l;
  const bool* lvalid;
  const Index* li;
  const T* r;
  const bool* rvalid;
  const Index* ri;
  TESSERA_HD T operator()(Index q) const {
    if (li[q] >= 0 && (!lvalid || lvalid[li[q]])) return l[li[q]];
    return ri[q] >= 0 ? r[ri[q]] : T{};
  }
};
struct CoalesceValid {
  const bool* lvalid;
  const Index* li;
  const bool* rvalid;
  const Index* ri;
  TESSERA_HD bool operator()(Index q) const {
    return (li[q] >= 0 && (!lvalid || lvalid[li[q]])) || (ri[q] >= 0 && (!rvalid || rvalid[ri[q]]));
  }
};

// ---- splitting by output partition ------------------------------------------------------------------

/** The frame's rows ordered by `part` (a stable sort) and, in `offsets`, where each part begins. */
template <class Sys>
RawFrame order_by_part(Sys& sys, const RawFrame& frame, Buf<std::uint32_t>& part, std::uint32_t parts,
                       std::vector<Index>& offsets) {
  auto policy = sys.policy();
  const Index n = frame.rows;
  Buf<Index> idx = alloc<Index>(sys, n, false);
  thrust::sequence(policy, idx.ptr, idx.ptr + n);
  thrust::stable_sort_by_key(policy, part.ptr, part.ptr + n, idx.ptr);
  Buf<Index> starts = alloc<Index>(sys, static_cast<Index>(parts) + 1, false);
  thrust::lower_bound(policy, part.ptr, part.ptr + n, thrust::counting_iterator<std::uint32_t>(0),
                      thrust::counting_iterator<std::uint32_t>(parts + 1), starts.ptr);
  offsets = download_vector(sys, starts.ptr, static_cast<Index>(parts) + 1);
  RawFrame out;
  out.rows = n;
  for (const auto& c : frame.columns) out.columns.push_back(gather_column(sys, c, idx.ptr, n));
  return out;
}

inline void check_parts(std::int64_t parts, const char* what) {
  if (parts < 1 || parts > (std::int64_t{1} << 31))
    throw Error(std::string(what) + ": " + std::to_string(parts) + " output partitions (1 to 2^31)");
}

/**
 * A hash shuffle's split: the rows ordered by output partition (partition_index.hpp of the `on`
 * columns) and where each partition's rows begin (parts + 1 offsets).
 */
template <class Sys>
RawFrame hash_split(Sys& sys, const RawFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                    std::vector<Index>& offsets) {
  check_parts(parts, "shuffle");
  if (on.empty()) throw Error("shuffle: no key columns given");
  auto policy = sys.policy();
  const Index n = frame.rows;
  const thrust::counting_iterator<Index> iota(0);
  Buf<std::uint64_t> h = alloc<std::uint64_t>(sys, n, false);
  thrust::fill(policy, h.ptr, h.ptr + n, partition_index::kSeed);
  for (const auto& name : on) {
    const RawColumn& c = require_column(frame, name, "shuffle");
    if (c.dictionary) {
      std::vector<std::uint64_t> table;
      table.reserve(c.dictionary->size());
      for (const auto& s : *c.dictionary)
        table.push_back(partition_index::hash_bytes(s.data(), static_cast<std::int64_t>(s.size())));
      Buf<std::uint64_t> t = upload_vector(sys, table, false);
      thrust::for_each(policy, iota, iota + n,
                       HashCodes{typed<std::int32_t>(c.values), typed<bool>(c.valid), t.ptr,
                                 static_cast<Index>(table.size()), h.ptr});
      continue;
    }
    with_type(c.dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      thrust::for_each(policy, iota, iota + n, HashNumbers<T>{typed<T>(c.values), typed<bool>(c.valid), h.ptr});
    });
  }
  Buf<std::uint32_t> part = alloc<std::uint32_t>(sys, n, false);
  thrust::transform(policy, iota, iota + n, part.ptr, PartitionOfHash{h.ptr, static_cast<std::uint32_t>(parts)});
  h = Buf<std::uint64_t>{};
  return order_by_part(sys, frame, part, static_cast<std::uint32_t>(parts), offsets);
}

/**
 * A sort's split: the rows ordered by their range of `column` among `parts` (bounds ascending, at
 * most parts - 1, no missing values: the host's range_bounds) and where each range begins.
 */
template <class Sys>
RawFrame range_split(Sys& sys, const RawFrame& frame, const std::string& column, const std::vector<double>& bounds,
                     std::int64_t parts, bool ascending, bool nulls_first, std::vector<Index>& offsets) {
  check_parts(parts, "sort_values");
  if (bounds.size() > static_cast<std::size_t>(parts - 1))
    throw Error("sort_values: " + std::to_string(bounds.size()) + " range bounds for " + std::to_string(parts) +
                " partitions");
  const RawColumn& c = require_column(frame, column, "sort_values");
  if (c.dictionary)
    throw DTypeError("sort_values: column '" + column + "' holds strings, which have no numeric range bounds");
  auto policy = sys.policy();
  const Index n = frame.rows;
  Buf<double> b = upload_vector(sys, bounds, false);
  Buf<std::uint32_t> part = alloc<std::uint32_t>(sys, n, false);
  with_type(c.dtype, [&](auto tag) {
    using T = std::decay_t<decltype(tag)>;
    thrust::transform(policy, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(n), part.ptr,
                      RangeOfValue<T>{typed<T>(c.values), typed<bool>(c.valid), b.ptr,
                                      static_cast<std::uint32_t>(bounds.size()), static_cast<std::uint32_t>(parts - 1),
                                      ascending, nulls_first});
  });
  return order_by_part(sys, frame, part, static_cast<std::uint32_t>(parts), offsets);
}

// ---- sorting ----------------------------------------------------------------------------------------

/** Each dictionary entry's place among the dictionary's strings in order (ties share a place). */
inline std::vector<std::int32_t> dictionary_ranks(const std::vector<std::string>& dict) {
  std::vector<std::int32_t> order(dict.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return dict[a] < dict[b]; });
  std::vector<std::int32_t> rank(dict.size());
  std::int32_t place = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && dict[order[i]] != dict[order[i - 1]]) ++place;
    rank[order[i]] = place;
  }
  return rank;
}

/**
 * The frame sorted by `keys` (lexicographically, first key first), stably, each key ascending or
 * descending, missing values (null, NaN) after the others or, with nulls_first, before them: one
 * stable sort per key and one per key's missing flag, last key first.
 */
template <class Sys>
RawFrame sort_frame(Sys& sys, const RawFrame& frame, const std::vector<SortKeySpec>& keys, bool nulls_first) {
  if (keys.empty()) throw Error("sort_values: no columns to sort by");
  auto policy = sys.policy();
  const Index n = frame.rows;
  Buf<Index> idx = alloc<Index>(sys, n, false);
  thrust::sequence(policy, idx.ptr, idx.ptr + n);
  const thrust::counting_iterator<Index> iota(0);
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    const RawColumn& c = require_column(frame, it->column, "sort_values");
    Buf<std::int32_t> rank;
    Index entries = 0;
    if (c.dictionary) {
      rank = upload_vector(sys, dictionary_ranks(*c.dictionary), false);
      entries = static_cast<Index>(c.dictionary->size());
    }
    with_type(c.dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      using K = SortKey<T>;
      Buf<K> key = alloc<K>(sys, n, false);
      thrust::transform(policy, iota, iota + n, key.ptr, SortValueAt<T, K>{typed<T>(c.values), idx.ptr, rank.ptr, entries});
      if (it->ascending)
        thrust::stable_sort_by_key(policy, key.ptr, key.ptr + n, idx.ptr);
      else
        thrust::stable_sort_by_key(policy, key.ptr, key.ptr + n, idx.ptr, thrust::greater<K>());
      if (c.valid.data || std::is_floating_point_v<T>) {
        Buf<std::uint8_t> flag = alloc<std::uint8_t>(sys, n, false);
        thrust::transform(policy, iota, iota + n, flag.ptr,
                          MissingFlagAt<T>{typed<T>(c.values), typed<bool>(c.valid), idx.ptr, nulls_first});
        thrust::stable_sort_by_key(policy, flag.ptr, flag.ptr + n, idx.ptr);
      }
    });
  }
  RawFrame out;
  out.rows = n;
  for (const auto& c : frame.columns) out.columns.push_back(gather_column(sys, c, idx.ptr, n));
  return out;
}

// ---- concatenating ------------------------------------------------------------------------------------

/**
 * The frames' rows one after the other (a shuffle's output partition from its shards). The frames
 * share a layout (names, dtypes); string columns get one dictionary merged from theirs, and a
 * validity mask when any frame has one.
 */
template <class Sys>
RawFrame concat_frames(Sys& sys, const std::vector<RawFrame>& frames) {
  if (frames.empty()) throw Error("concat: no frames");
  auto policy = sys.policy();
  const RawFrame& first = frames.front();
  Index total = 0;
  for (const auto& f : frames) {
    if (f.columns.size() != first.columns.size())
      throw Error("concat: frames of " + std::to_string(first.columns.size()) + " and " +
                  std::to_string(f.columns.size()) + " columns");
    total += f.rows;
  }
  RawFrame out;
  out.rows = total;
  for (std::size_t c = 0; c < first.columns.size(); ++c) {
    const RawColumn& head = first.columns[c];
    std::vector<const RawColumn*> cols;
    bool any_valid = false;
    for (const auto& f : frames) {
      const RawColumn& x = f.columns[c];
      if (x.name != head.name || x.dtype != head.dtype || (x.dictionary != nullptr) != (head.dictionary != nullptr))
        throw DTypeError("concat: column " + std::to_string(c) + " is '" + head.name + "' (" +
                         std::string(dtype_name(head.dtype)) + ") in one frame and '" + x.name + "' (" +
                         std::string(dtype_name(x.dtype)) + ") in another");
      cols.push_back(&x);
      any_valid = any_valid || x.valid.data != nullptr;
    }
    RawColumn o;
    o.name = head.name;
    o.dtype = head.dtype;
    o.logical_type = head.logical_type;
    MergedDictionary dict;
    if (head.dictionary) {
      dict = merge_dictionaries(cols);
      o.dictionary = dict.strings;
    }
    with_type(head.dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      Buf<T> values = alloc<T>(sys, total, true);
      Index at = 0;
      for (std::size_t f = 0; f < frames.size(); ++f) {
        const RawColumn& x = *cols[f];
        const Index rows = frames[f].rows;
        if constexpr (std::is_same_v<T, std::int32_t>) {
          if (head.dictionary) {
            Buf<std::int32_t> table = upload_vector(sys, dict.remap[f], false);
            thrust::transform(policy, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(rows),
                              values.ptr + at,
                              RemapCode{typed<std::int32_t>(x.values), typed<bool>(x.valid), table.ptr,
                                        static_cast<Index>(dict.remap[f].size())});
            at += rows;
            continue;
          }
        }
        thrust::copy(policy, typed<T>(x.values), typed<T>(x.values) + rows, values.ptr + at);
        at += rows;
      }
      o.values = std::move(values.mem);
    });
    if (any_valid) {
      Buf<bool> valid = alloc<bool>(sys, total, true);
      Index at = 0;
      for (std::size_t f = 0; f < frames.size(); ++f) {
        const Index rows = frames[f].rows;
        if (cols[f]->valid.data)
          thrust::copy(policy, typed<bool>(cols[f]->valid), typed<bool>(cols[f]->valid) + rows, valid.ptr + at);
        else
          thrust::fill(policy, valid.ptr + at, valid.ptr + at + rows, true);
        at += rows;
      }
      o.valid = std::move(valid.mem);
    }
    out.columns.push_back(std::move(o));
  }
  return out;
}

// ---- merging --------------------------------------------------------------------------------------------

/** A side's key column cast to the common key type, NaN made null; string codes into `remap`'s dictionary. */
template <class Sys>
RawColumn prepared_key(Sys& sys, const RawColumn& c, Index rows, const JoinKeyPlan& k, const std::vector<std::int32_t>* remap,
                       const std::shared_ptr<const std::vector<std::string>>& dictionary) {
  auto policy = sys.policy();
  const thrust::counting_iterator<Index> iota(0);
  RawColumn o;
  o.name = c.name;
  o.dtype = k.dtype;
  o.logical_type = k.logical_type;
  if (k.strings) {
    if (!c.dictionary || c.dtype != DType::Int32)
      throw DTypeError("merge: key '" + c.name + "' does not hold strings in this partition");
    Buf<std::int32_t> table = upload_vector(sys, *remap, false);
    Buf<std::int32_t> codes = alloc<std::int32_t>(sys, rows, true);
    thrust::transform(policy, iota, iota + rows, codes.ptr,
                      RemapCode{typed<std::int32_t>(c.values), typed<bool>(c.valid), table.ptr,
                                static_cast<Index>(remap->size())});
    o.values = std::move(codes.mem);
    o.dictionary = dictionary;
    if (c.valid.data) o.valid = c.valid;
    return o;
  }
  if (c.dictionary)
    throw DTypeError("merge: key '" + c.name + "' holds strings, compared with a key of type " + k.logical_type);
  with_type(c.dtype, [&](auto tag) {
    using T = std::decay_t<decltype(tag)>;
    with_type(k.dtype, [&](auto otag) {
      using O = std::decay_t<decltype(otag)>;
      Buf<O> values = alloc<O>(sys, rows, true);
      thrust::transform(policy, iota, iota + rows, values.ptr, CastKey<T, O>{typed<T>(c.values)});
      o.values = std::move(values.mem);
    });
    if (c.valid.data || std::is_floating_point_v<T>) {
      Buf<bool> valid = alloc<bool>(sys, rows, true);
      thrust::transform(policy, iota, iota + rows, valid.ptr, KeyValid<T>{typed<T>(c.values), typed<bool>(c.valid)});
      o.valid = std::move(valid.mem);
    }
  });
  return o;
}

/** A column's rows at idx (a null where idx < 0); with `nullable` false no row may be -1. */
template <class Sys>
RawColumn gather_nullable(Sys& sys, const RawColumn& c, const Index* idx, Index m, bool nullable) {
  if (!nullable) return gather_column(sys, c, idx, m);
  auto policy = sys.policy();
  const thrust::counting_iterator<Index> iota(0);
  RawColumn o;
  o.name = c.name;
  o.dtype = c.dtype;
  o.dictionary = c.dictionary;
  o.logical_type = c.logical_type;
  with_type(c.dtype, [&](auto tag) {
    using T = std::decay_t<decltype(tag)>;
    Buf<T> v = alloc<T>(sys, m, true);
    thrust::transform(policy, iota, iota + m, v.ptr, GatherOrZero<T>{typed<T>(c.values), idx});
    o.values = std::move(v.mem);
  });
  Buf<bool> valid = alloc<bool>(sys, m, true);
  thrust::transform(policy, iota, iota + m, valid.ptr, GatherValid{typed<bool>(c.valid), idx});
  o.valid = std::move(valid.mem);
  return o;
}

/**
 * Every row of both sides numbered by its key (equal keys, and equally missing ones, share a
 * number): the positions 0..nl+nr (left rows, then right rows) sorted by the keys, one stable
 * sort per key value and per missing flag, last key first. Returns the sorted positions; `id`
 * gets each position's number.
 */
template <class Sys>
Buf<Index> number_keys(Sys& sys, const std::vector<RawColumn>& lk, const std::vector<RawColumn>& rk, Index nl, Index nr,
                       Buf<Index>& id) {
  auto policy = sys.policy();
  const Index n = nl + nr;
  const thrust::counting_iterator<Index> iota(0);
  Buf<Index> idx = alloc<Index>(sys, n, false);
  thrust::sequence(policy, idx.ptr, idx.ptr + n);
  // Missing rows read their validity through `present`; a column without a mask has none missing.
  Buf<bool> ones = alloc<bool>(sys, std::max(nl, nr), false);
  thrust::fill(policy, ones.ptr, ones.ptr + std::max(nl, nr), true);
  auto present_of = [&](std::size_t k) {
    return BothSidesAt<bool>{lk[k].valid.data ? typed<bool>(lk[k].valid) : ones.ptr,
                             rk[k].valid.data ? typed<bool>(rk[k].valid) : ones.ptr, nl};
  };
  for (std::size_t k = lk.size(); k-- > 0;) {
    with_type(lk[k].dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      using K = SortKey<T>;
      const BothSidesAt<T> value{typed<T>(lk[k].values), typed<T>(rk[k].values), nl};
      Buf<K> key = alloc<K>(sys, n, false);
      thrust::transform(policy, iota, iota + n, key.ptr, KeyAtPosition<T, K>{value, present_of(k), idx.ptr});
      thrust::stable_sort_by_key(policy, key.ptr, key.ptr + n, idx.ptr);
      Buf<std::uint8_t> flag = alloc<std::uint8_t>(sys, n, false);
      thrust::transform(policy, iota, iota + n, flag.ptr, AbsentFlag{present_of(k), idx.ptr});
      thrust::stable_sort_by_key(policy, flag.ptr, flag.ptr + n, idx.ptr);
    });
  }
  Buf<Index> changed = alloc<Index>(sys, n, false);
  thrust::fill(policy, changed.ptr, changed.ptr + n, Index(0));
  for (std::size_t k = 0; k < lk.size(); ++k)
    with_type(lk[k].dtype, [&](auto tag) {
      using T = std::decay_t<decltype(tag)>;
      const BothSidesAt<T> value{typed<T>(lk[k].values), typed<T>(rk[k].values), nl};
      thrust::transform(policy, iota, iota + n, changed.ptr, changed.ptr,
                        PositionChanged<T>{value, present_of(k), idx.ptr});
    });
  Buf<Index> gid = alloc<Index>(sys, n, false);
  thrust::inclusive_scan(policy, changed.ptr, changed.ptr + n, gid.ptr);
  id = alloc<Index>(sys, n, false);
  thrust::scatter(policy, gid.ptr, gid.ptr + n, idx.ptr, id.ptr);
  return idx;
}

/**
 * The rows of one side (positions [lo, hi) of the concatenated sides) in key order, as rows of
 * that side, and their key numbers.
 */
template <class Sys>
void side_in_key_order(Sys& sys, const Buf<Index>& sorted, Index n, Index lo, Index hi, const Buf<Index>& id,
                       Buf<Index>& rows, Buf<Index>& ids) {
  auto policy = sys.policy();
  const Index m = hi - lo;
  Buf<Index> positions = alloc<Index>(sys, m, false);
  thrust::copy_if(policy, sorted.ptr, sorted.ptr + n, positions.ptr, InRange{lo, hi});
  ids = alloc<Index>(sys, m, false);
  thrust::gather(policy, positions.ptr, positions.ptr + m, id.ptr, ids.ptr);
  rows = alloc<Index>(sys, m, false);
  thrust::transform(policy, positions.ptr, positions.ptr + m, rows.ptr, Shift{-lo});
}

/**
 * Two frames merged by the plan (host-planned, join_host.cpp's rules). Row order: inner and left
 * keep the left rows' order, each row's matches in the right's order (pandas' order); right the
 * right rows' order; outer the left join's rows, then the right rows that match nothing; leftsemi
 * and leftanti the left rows' order.
 */
template <class Sys>
RawFrame join_frames(Sys& sys, const RawFrame& left, const RawFrame& right, const JoinPlan& plan) {
  if (plan.keys.empty()) throw Error("merge: no key columns");
  auto policy = sys.policy();
  const thrust::counting_iterator<Index> iota(0);
  const Index nl = left.rows, nr = right.rows, n = nl + nr;

  // The keys of both sides as the common type, string codes into one dictionary.
  std::vector<RawColumn> lk, rk;
  for (const auto& k : plan.keys) {
    const RawColumn& l = require_column(left, k.left, "merge (left)");
    const RawColumn& r = require_column(right, k.right, "merge (right)");
    MergedDictionary dict;
    if (k.strings) {
      if (!l.dictionary || !r.dictionary)
        throw DTypeError("merge: keys '" + k.left + "' and '" + k.right + "' do not both hold strings");
      dict = merge_dictionaries({&l, &r});
    }
    lk.push_back(prepared_key(sys, l, nl, k, k.strings ? &dict.remap[0] : nullptr, dict.strings));
    rk.push_back(prepared_key(sys, r, nr, k, k.strings ? &dict.remap[1] : nullptr, dict.strings));
  }

  Buf<Index> id;
  const Buf<Index> sorted = number_keys(sys, lk, rk, nl, nr, id);
  const bool right_probes = plan.how == JoinHow::Right;
  // The probe side's rows are visited in their order; the build side's are found by key number.
  const Index np = right_probes ? nr : nl, nb = right_probes ? nl : nr;
  const Index probe_from = right_probes ? nl : 0, build_from = right_probes ? 0 : nl;
  Buf<Index> build_rows, build_ids;
  side_in_key_order(sys, sorted, n, build_from, build_from + nb, id, build_rows, build_ids);
  const Index* probe_ids = id.ptr + probe_from;
  Buf<Index> lower = alloc<Index>(sys, np, false), upper = alloc<Index>(sys, np, false);
  thrust::lower_bound(policy, build_ids.ptr, build_ids.ptr + nb, probe_ids, probe_ids + np, lower.ptr);
  thrust::upper_bound(policy, build_ids.ptr, build_ids.ptr + nb, probe_ids, probe_ids + np, upper.ptr);
  Buf<Index> count = alloc<Index>(sys, np, false);
  thrust::transform(policy, upper.ptr, upper.ptr + np, lower.ptr, count.ptr, Difference{});
  upper = Buf<Index>{};

  Buf<Index> li, ri;  // the result's rows: a left row and a right row each, -1 for none
  Index m = 0;
  if (plan.how == JoinHow::LeftSemi || plan.how == JoinHow::LeftAnti) {
    li = alloc<Index>(sys, np, false);
    Index* end = plan.how == JoinHow::LeftSemi
                     ? thrust::copy_if(policy, iota, iota + np, count.ptr, li.ptr, NonZero{})
                     : thrust::copy_if(policy, iota, iota + np, count.ptr, li.ptr, IsZero{});
    m = static_cast<Index>(end - li.ptr);
  } else {
    Buf<Index> out_count = alloc<Index>(sys, np, false);
    if (plan.how == JoinHow::Inner)
      thrust::copy(policy, count.ptr, count.ptr + np, out_count.ptr);
    else
      thrust::transform(policy, count.ptr, count.ptr + np, out_count.ptr, AtLeastOne{});
    Buf<Index> start = alloc<Index>(sys, np, false);
    thrust::exclusive_scan(policy, out_count.ptr, out_count.ptr + np, start.ptr);
    const Index expanded = thrust::reduce(policy, out_count.ptr, out_count.ptr + np, Index(0));
    // Right rows no left row matches (outer): found by key number among the left rows.
    Buf<Index> unmatched;
    Index extra = 0;
    if (plan.how == JoinHow::Outer) {
      Buf<Index> left_rows, left_ids;
      side_in_key_order(sys, sorted, n, 0, nl, id, left_rows, left_ids);
      Buf<bool> found = alloc<bool>(sys, nr, false);
      thrust::binary_search(policy, left_ids.ptr, left_ids.ptr + nl, id.ptr + nl, id.ptr + n, found.ptr);
      unmatched = alloc<Index>(sys, nr, false);
      Index* end = thrust::copy_if(policy, iota, iota + nr, found.ptr, unmatched.ptr, IsFalse{});
      extra = static_cast<Index>(end - unmatched.ptr);
    }
    m = expanded + extra;
    Buf<Index> probe = alloc<Index>(sys, m, false), build = alloc<Index>(sys, m, false);
    // Output q belongs to the last probe row starting at or before it.
    Buf<Index> row = alloc<Index>(sys, expanded, false);
    thrust::upper_bound(policy, start.ptr, start.ptr + np, iota, iota + expanded, row.ptr);
    thrust::transform(policy, row.ptr, row.ptr + expanded, row.ptr, Shift{-1});
    thrust::copy(policy, row.ptr, row.ptr + expanded, probe.ptr);
    thrust::transform(policy, iota, iota + expanded, build.ptr,
                      MatchOf{row.ptr, start.ptr, count.ptr, lower.ptr, build_rows.ptr});
    if (extra > 0) {
      thrust::fill(policy, probe.ptr + expanded, probe.ptr + m, Index(-1));
      thrust::copy(policy, unmatched.ptr, unmatched.ptr + extra, build.ptr + expanded);
    }
    li = right_probes ? std::move(build) : std::move(probe);
    ri = right_probes ? std::move(probe) : std::move(build);
  }

  const bool left_nullable = plan.how == JoinHow::Right || plan.how == JoinHow::Outer;
  const bool right_nullable = plan.how == JoinHow::Left || plan.how == JoinHow::Outer;
  auto side_column = [&](const RawFrame& side, const std::vector<RawColumn>& keys, bool is_left,
                         const std::string& name) -> const RawColumn& {
    for (std::size_t k = 0; k < plan.keys.size(); ++k)
      if ((is_left ? plan.keys[k].left : plan.keys[k].right) == name) return keys[k];
    return require_column(side, name, is_left ? "merge (left)" : "merge (right)");
  };
  RawFrame out;
  out.rows = m;
  for (const auto& o : plan.outputs) {
    RawColumn c;
    if (o.from == JoinOutPlan::From::Left) {
      c = gather_nullable(sys, side_column(left, lk, true, o.column), li.ptr, m, left_nullable);
    } else if (o.from == JoinOutPlan::From::Right) {
      c = gather_nullable(sys, side_column(right, rk, false, o.column), ri.ptr, m, right_nullable);
    } else {
      if (o.key >= plan.keys.size()) throw Error("merge: the plan names key pair " + std::to_string(o.key));
      const RawColumn& l = lk[o.key];
      const RawColumn& r = rk[o.key];
      if (!left_nullable) {
        c = gather_column(sys, l, li.ptr, m);
      } else {
        c.dtype = l.dtype;
        c.dictionary = l.dictionary;
        c.logical_type = l.logical_type;
        with_type(l.dtype, [&](auto tag) {
          using T = std::decay_t<decltype(tag)>;
          Buf<T> v = alloc<T>(sys, m, true);
          thrust::transform(policy, iota, iota + m, v.ptr,
                            Coalesce<T>{typed<T>(l.values), typed<bool>(l.valid), li.ptr, typed<T>(r.values),
                                        typed<bool>(r.valid), ri.ptr});
          c.values = std::move(v.mem);
        });
        Buf<bool> valid = alloc<bool>(sys, m, true);
        thrust::transform(policy, iota, iota + m, valid.ptr,
                          CoalesceValid{typed<bool>(l.valid), li.ptr, typed<bool>(r.valid), ri.ptr});
        c.valid = std::move(valid.mem);
      }
    }
    c.name = o.name;
    out.columns.push_back(std::move(c));
  }
  return out;
}

}  // namespace tessera::dataframe::detail::algo

#undef TESSERA_HD
