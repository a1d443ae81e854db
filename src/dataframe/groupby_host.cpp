// Groupby-aggregate on host partitions (the semantics are in groupby_spec.hpp). Arrow's Grouper
// maps each row's keys to a dense group id; the aggregations are plain loops over those ids.
//
// Partial states, per AggSpec i (columns named "__<i>_<state>"), after the key columns and
// "__size": sum: s; mean: n, s; count: n; min: lo; max: hi; var, std: n, mean, m2 (Welford
// within a partition, Chan's formula between partials). Integer, bool and timestamp inputs are
// accumulated as int64, floating-point ones as double (NaN skipped, as pandas does).
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/row/grouper.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "arrow_util.hpp"
#include "frame_node.hpp"
#include "groupby_host.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe::detail {

namespace cp = arrow::compute;

bool accumulates_as_double(const arrow::DataType& t) { return arrow::is_floating(t.id()); }

std::shared_ptr<arrow::DataType> aggregate_type(const AggSpec& a, const std::shared_ptr<arrow::DataType>& input) {
  switch (a.how) {
    case Agg::Size:
    case Agg::Count: return arrow::int64();
    case Agg::Mean:
    case Agg::Var:
    case Agg::Std: return arrow::float64();
    case Agg::Sum: return accumulates_as_double(*input) ? arrow::float64() : arrow::int64();
    case Agg::Min:
    case Agg::Max: return input;
  }
  return arrow::float64();
}

void check_aggregable(const AggSpec& a, const std::shared_ptr<arrow::DataType>& t) {
  if (a.how == Agg::Size || a.how == Agg::Count) return;
  const auto id = t->id();
  const bool numeric = arrow::is_integer(id) || arrow::is_floating(id) || id == arrow::Type::BOOL;
  const bool temporal = id == arrow::Type::TIMESTAMP || id == arrow::Type::DATE32 || id == arrow::Type::DATE64;
  if (numeric || (temporal && (a.how == Agg::Min || a.how == Agg::Max))) return;
  throw Error(std::string("cannot take the ") + agg_name(a.how) + " of column '" + a.column + "' of type " +
              t->ToString());
}

namespace {

std::string state(std::size_t i, const char* what) { return "__" + std::to_string(i) + "_" + what; }

// A column as int64 or double values (one contiguous array) and its validity.
struct Values {
  std::shared_ptr<arrow::Array> array;  // Int64Array or DoubleArray
  bool is_double = false;
  const double* d = nullptr;
  const std::int64_t* i = nullptr;
  bool valid(std::int64_t r) const { return array->IsValid(r) && (!is_double || !std::isnan(d[r])); }
};

Values values_of(const std::shared_ptr<arrow::Array>& a) {
  Values v;
  const bool dbl = accumulates_as_double(*a->type());
  std::shared_ptr<arrow::Array> arr = a;
  if (dbl && a->type_id() != arrow::Type::DOUBLE)
    arr = unwrap(cp::Cast(*a, arrow::float64()), "groupby: converting to float64");
  else if (!dbl && a->type_id() != arrow::Type::INT64) {
    if (a->type_id() == arrow::Type::TIMESTAMP || a->type_id() == arrow::Type::DATE64) {
      auto d = a->data()->Copy();
      d->type = arrow::int64();
      arr = arrow::MakeArray(d);
    } else {
      arr = unwrap(cp::Cast(*a, arrow::int64(), cp::CastOptions::Unsafe()), "groupby: converting to int64");
    }
  }
  v.array = arr;
  v.is_double = dbl;
  if (dbl) v.d = static_cast<const arrow::DoubleArray&>(*arr).raw_values();
  else v.i = static_cast<const arrow::Int64Array&>(*arr).raw_values();
  return v;
}

// Group ids of one numeric key column (float64, int64, int32, timestamp, date32): an
// open-addressing table on the value's bits. Arrow's Grouper is general (any types, several
// keys) but spent 30% of a 265-group query in its lookups; this is a multiply-shift hash and
// a linear probe, a few ns a row.
class NumericKeys {
 public:
  static bool handles(const arrow::DataType& t) {
    switch (t.id()) {
      case arrow::Type::DOUBLE:
      case arrow::Type::INT64:
      case arrow::Type::INT32:
      case arrow::Type::TIMESTAMP:
      case arrow::Type::DATE32: return true;
      default: return false;
    }
  }
  explicit NumericKeys(std::shared_ptr<arrow::DataType> type) : type_(std::move(type)) { rehash(64); }

  std::uint32_t groups() const { return static_cast<std::uint32_t>(bits_.size()); }

  /** Group ids of the rows of `a` (a column of this key's type) into `ids`. */
  void consume(const arrow::Array& a, std::vector<std::uint32_t>& ids) {
    const std::int64_t n = a.length();
    ids.resize(static_cast<std::size_t>(n));
    const auto id = type_->id();
    for (std::int64_t r = 0; r < n; ++r) {
      if (a.IsNull(r)) {
        if (null_group_ < 0) {
          null_group_ = static_cast<std::int64_t>(bits_.size());
          bits_.push_back(0);
        }
        ids[r] = static_cast<std::uint32_t>(null_group_);
        continue;
      }
      std::uint64_t key;
      if (id == arrow::Type::DOUBLE) {
        double v = static_cast<const arrow::DoubleArray&>(a).Value(r);
        if (v == 0) v = 0;                                          // -0.0 and 0.0: one group
        if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();  // one NaN group (dropped later)
        std::memcpy(&key, &v, 8);
      } else if (id == arrow::Type::INT32 || id == arrow::Type::DATE32) {
        key = static_cast<std::uint64_t>(static_cast<std::int64_t>(
            static_cast<const std::int32_t*>(static_cast<const void*>(a.data()->buffers[1]->data()))[a.offset() + r]));
      } else {
        key = static_cast<std::uint64_t>(
            static_cast<const std::int64_t*>(static_cast<const void*>(a.data()->buffers[1]->data()))[a.offset() + r]);
      }
      ids[r] = find_or_insert(key);
    }
  }

  /** The key of every group, in group-id order (null for the null group). */
  std::shared_ptr<arrow::Array> uniques() const {
    std::unique_ptr<arrow::ArrayBuilder> builder;
    check_arrow(arrow::MakeBuilder(arrow::default_memory_pool(), type_, &builder), "groupby");
    for (std::size_t g = 0; g < bits_.size(); ++g) {
      if (static_cast<std::int64_t>(g) == null_group_) {
        check_arrow(builder->AppendNull(), "groupby");
        continue;
      }
      const std::uint64_t k = bits_[g];
      switch (type_->id()) {
        case arrow::Type::DOUBLE: {
          double v;
          std::memcpy(&v, &k, 8);
          check_arrow(static_cast<arrow::DoubleBuilder&>(*builder).Append(v), "groupby");
          break;
        }
        case arrow::Type::INT64: check_arrow(static_cast<arrow::Int64Builder&>(*builder).Append(static_cast<std::int64_t>(k)), "groupby"); break;
        case arrow::Type::TIMESTAMP: check_arrow(static_cast<arrow::TimestampBuilder&>(*builder).Append(static_cast<std::int64_t>(k)), "groupby"); break;
        case arrow::Type::INT32: check_arrow(static_cast<arrow::Int32Builder&>(*builder).Append(static_cast<std::int32_t>(k)), "groupby"); break;
        default: check_arrow(static_cast<arrow::Date32Builder&>(*builder).Append(static_cast<std::int32_t>(k)), "groupby"); break;
      }
    }
    std::shared_ptr<arrow::Array> out;
    check_arrow(builder->Finish(&out), "groupby");
    return out;
  }

 private:
  static constexpr std::uint32_t kEmpty = ~std::uint32_t{0};
  std::size_t slot_of(std::uint64_t key) const { return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

  std::uint32_t find_or_insert(std::uint64_t key) {
    for (std::size_t s = slot_of(key);; s = (s + 1) & mask_) {
      const std::uint32_t g = slot_group_[s];
      if (g == kEmpty) {
        const auto id = static_cast<std::uint32_t>(bits_.size());
        bits_.push_back(key);
        slot_key_[s] = key;
        slot_group_[s] = id;
        if (bits_.size() * 2 > slot_group_.size()) rehash(slot_group_.size() * 2);
        return id;
      }
      if (slot_key_[s] == key) return g;
    }
  }

  void rehash(std::size_t capacity) {
    slot_key_.assign(capacity, 0);
    slot_group_.assign(capacity, kEmpty);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<int>(std::countr_zero(capacity));
    for (std::size_t g = 0; g < bits_.size(); ++g) {
      if (static_cast<std::int64_t>(g) == null_group_) continue;
      std::size_t s = slot_of(bits_[g]);
      while (slot_group_[s] != kEmpty) s = (s + 1) & mask_;
      slot_key_[s] = bits_[g];
      slot_group_[s] = static_cast<std::uint32_t>(g);
    }
  }

  std::shared_ptr<arrow::DataType> type_;
  std::vector<std::uint64_t> bits_;  // each group's key bits, by group id
  std::int64_t null_group_ = -1;
  std::vector<std::uint64_t> slot_key_;
  std::vector<std::uint32_t> slot_group_;
  std::size_t mask_ = 0;
  int shift_ = 58;
};

// Per-group accumulators of one AggSpec.
struct Acc {
  bool is_double = false;
  std::vector<std::int64_t> n;
  std::vector<double> sd, mean, m2;     // double sum, Welford mean and M2
  std::vector<std::int64_t> si;         // int64 sum
  std::vector<double> lod, hid;
  std::vector<std::int64_t> loi, hii;
  std::vector<std::uint8_t> has;        // min/max seen
  void resize(std::size_t g) {
    n.resize(g, 0);
    sd.resize(g, 0);
    mean.resize(g, 0);
    m2.resize(g, 0);
    si.resize(g, 0);
    lod.resize(g, 0);
    hid.resize(g, 0);
    loi.resize(g, 0);
    hii.resize(g, 0);
    has.resize(g, 0);
  }
};

struct Groups {
  std::unique_ptr<cp::Grouper> grouper;  // several or non-numeric keys
  std::unique_ptr<NumericKeys> numeric;  // one numeric key
  // Neither: no keys, every row is in group 0. The group ids of the batch being consumed.
  std::vector<std::uint32_t> ids;
  std::vector<std::int64_t> size;
  std::vector<Acc> accs;
};

Groups make_groups(const arrow::Schema& schema, const GroupbySpec& spec) {
  std::vector<arrow::TypeHolder> types;
  for (const auto& b : spec.by) types.emplace_back(schema.GetFieldByName(b)->type());
  Groups g;
  if (spec.by.size() == 1 && NumericKeys::handles(*types[0].GetSharedPtr()))
    g.numeric = std::make_unique<NumericKeys>(types[0].GetSharedPtr());
  else if (!spec.by.empty())
    g.grouper = unwrap(cp::Grouper::Make(types), "groupby");
  g.accs.resize(spec.aggs.size());
  return g;
}

// Group ids of a batch's key columns (uint32), growing the accumulators to the group count.
const std::uint32_t* group_ids(Groups& g, const arrow::RecordBatch& batch, const GroupbySpec& spec,
                               std::shared_ptr<arrow::Array>& keep) {
  if (g.numeric) {
    g.numeric->consume(*batch.GetColumnByName(spec.by[0]), g.ids);
    g.size.resize(g.numeric->groups(), 0);
    for (auto& a : g.accs) a.resize(g.numeric->groups());
    return g.ids.data();
  }
  if (!g.grouper) {
    g.ids.assign(static_cast<std::size_t>(batch.num_rows()), 0);
    g.size.resize(1, 0);
    for (auto& a : g.accs) a.resize(1);
    return g.ids.data();
  }
  std::vector<arrow::Datum> keys;
  for (const auto& b : spec.by) keys.emplace_back(batch.GetColumnByName(b));
  cp::ExecBatch eb(std::move(keys), batch.num_rows());
  auto ids = unwrap(g.grouper->Consume(cp::ExecSpan(eb)), "groupby");
  keep = ids.make_array();
  const auto groups = g.grouper->num_groups();
  g.size.resize(groups, 0);
  for (auto& a : g.accs) a.resize(groups);
  return static_cast<const arrow::UInt32Array&>(*keep).raw_values();
}

// One value type's rows into the accumulators: `sum`, `lo` and `hi` are the double or the
// int64 vectors of `a`, as T.
template <typename T>
void accumulate_typed(Acc& a, const T* xs, const Values& v, const std::uint32_t* ids, std::int64_t rows, bool welford,
                      bool minmax, std::vector<T>& sum, std::vector<T>& lo, std::vector<T>& hi) {
  for (std::int64_t r = 0; r < rows; ++r) {
    if (!v.valid(r)) continue;
    const auto g = ids[r];
    const T x = xs[r];
    ++a.n[g];
    sum[g] += x;
    if (welford) {
      const double xd = static_cast<double>(x), delta = xd - a.mean[g];
      a.mean[g] += delta / static_cast<double>(a.n[g]);
      a.m2[g] += delta * (xd - a.mean[g]);
    }
    if (minmax) {
      if (!a.has[g] || x < lo[g]) lo[g] = x;
      if (!a.has[g] || x > hi[g]) hi[g] = x;
      a.has[g] = 1;
    }
  }
}

void accumulate_rows(Acc& a, Agg how, const Values& v, const std::uint32_t* ids, std::int64_t rows) {
  a.is_double = v.is_double;
  const bool welford = how == Agg::Var || how == Agg::Std;
  const bool minmax = how == Agg::Min || how == Agg::Max;
  if (v.is_double) accumulate_typed(a, v.d, v, ids, rows, welford, minmax, a.sd, a.lod, a.hid);
  else accumulate_typed(a, v.i, v, ids, rows, welford, minmax, a.si, a.loi, a.hii);
}

// Merges partial states (a partial table's columns) into the accumulators.
void merge_states(Acc& a, Agg how, const arrow::RecordBatch& batch, std::size_t i, const std::uint32_t* ids) {
  const std::int64_t rows = batch.num_rows();
  auto col = [&](const char* what) { return batch.GetColumnByName(state(i, what)); };
  auto i64 = [&](const char* what) { return static_cast<const arrow::Int64Array&>(*col(what)).raw_values(); };
  auto f64 = [&](const char* what) { return static_cast<const arrow::DoubleArray&>(*col(what)).raw_values(); };
  switch (how) {
    case Agg::Size: return;
    case Agg::Count: {
      const auto* n = i64("n");
      for (std::int64_t r = 0; r < rows; ++r) a.n[ids[r]] += n[r];
      return;
    }
    case Agg::Sum:
    case Agg::Mean: {
      auto s = col("s");
      a.is_double = s->type_id() == arrow::Type::DOUBLE;
      if (how == Agg::Mean) {
        const auto* n = i64("n");
        for (std::int64_t r = 0; r < rows; ++r) a.n[ids[r]] += n[r];
      }
      if (a.is_double) {
        const auto* d = static_cast<const arrow::DoubleArray&>(*s).raw_values();
        for (std::int64_t r = 0; r < rows; ++r) a.sd[ids[r]] += d[r];
      } else {
        const auto* d = static_cast<const arrow::Int64Array&>(*s).raw_values();
        for (std::int64_t r = 0; r < rows; ++r) a.si[ids[r]] += d[r];
      }
      return;
    }
    case Agg::Var:
    case Agg::Std: {
      const auto* n = i64("n");
      const auto* mean = f64("mean");
      const auto* m2 = f64("m2");
      for (std::int64_t r = 0; r < rows; ++r) {
        if (n[r] == 0) continue;
        const auto g = ids[r];
        const double na = static_cast<double>(a.n[g]), nb = static_cast<double>(n[r]), nt = na + nb;
        const double delta = mean[r] - a.mean[g];
        a.mean[g] += delta * nb / nt;
        a.m2[g] += m2[r] + delta * delta * na * nb / nt;
        a.n[g] += n[r];
      }
      return;
    }
    case Agg::Min:
    case Agg::Max: {
      auto c = col(how == Agg::Min ? "lo" : "hi");
      a.is_double = c->type_id() == arrow::Type::DOUBLE;
      for (std::int64_t r = 0; r < rows; ++r) {
        if (c->IsNull(r)) continue;
        const auto g = ids[r];
        if (a.is_double) {
          const double x = static_cast<const arrow::DoubleArray&>(*c).Value(r);
          if (!a.has[g] || x < a.lod[g]) a.lod[g] = x;
          if (!a.has[g] || x > a.hid[g]) a.hid[g] = x;
        } else {
          const std::int64_t x = static_cast<const arrow::Int64Array&>(*c).Value(r);
          if (!a.has[g] || x < a.loi[g]) a.loi[g] = x;
          if (!a.has[g] || x > a.hii[g]) a.hii[g] = x;
        }
        a.has[g] = 1;
      }
      return;
    }
  }
}

template <typename Builder, typename T>
std::shared_ptr<arrow::Array> build(const std::vector<std::uint32_t>& rows, const std::function<bool(std::uint32_t)>& valid,
                                    const std::function<T(std::uint32_t)>& value) {
  Builder b;
  check_arrow(b.Reserve(static_cast<std::int64_t>(rows.size())), "groupby");
  for (auto g : rows) {
    if (valid(g)) b.UnsafeAppend(value(g));
    else b.UnsafeAppendNull();
  }
  std::shared_ptr<arrow::Array> out;
  check_arrow(b.Finish(&out), "groupby");
  return out;
}

using I64 = std::function<std::int64_t(std::uint32_t)>;
using F64 = std::function<double(std::uint32_t)>;
const std::function<bool(std::uint32_t)> kAlways = [](std::uint32_t) { return true; };

std::shared_ptr<arrow::Array> int_column(const std::vector<std::uint32_t>& rows, const std::vector<std::int64_t>& v) {
  return build<arrow::Int64Builder, std::int64_t>(rows, kAlways, I64([&](std::uint32_t g) { return v[g]; }));
}
std::shared_ptr<arrow::Array> double_column(const std::vector<std::uint32_t>& rows, const std::vector<double>& v,
                                            const std::function<bool(std::uint32_t)>& valid = kAlways) {
  return build<arrow::DoubleBuilder, double>(rows, valid, F64([&](std::uint32_t g) { return v[g]; }));
}

// The groups to output: those whose keys have no null (or NaN), in group-id order.
std::vector<std::uint32_t> kept_groups(const cp::ExecBatch& uniques) {
  std::vector<std::uint32_t> rows;
  const auto n = static_cast<std::uint32_t>(uniques.length);
  rows.reserve(n);
  std::vector<std::shared_ptr<arrow::Array>> keys;
  for (const auto& d : uniques.values) keys.push_back(d.make_array());
  for (std::uint32_t g = 0; g < n; ++g) {
    bool ok = true;
    for (const auto& k : keys) {
      if (k->IsNull(g)) ok = false;
      else if (k->type_id() == arrow::Type::DOUBLE && std::isnan(static_cast<const arrow::DoubleArray&>(*k).Value(g)))
        ok = false;
      else if (k->type_id() == arrow::Type::FLOAT && std::isnan(static_cast<const arrow::FloatArray&>(*k).Value(g)))
        ok = false;
    }
    if (ok) rows.push_back(g);
  }
  return rows;
}

std::shared_ptr<arrow::Array> take(const std::shared_ptr<arrow::Array>& a, const std::vector<std::uint32_t>& rows) {
  if (static_cast<std::int64_t>(rows.size()) == a->length()) {
    bool identity = true;
    for (std::size_t i = 0; i < rows.size() && identity; ++i) identity = rows[i] == i;
    if (identity) return a;
  }
  arrow::UInt32Builder b;
  check_arrow(b.AppendValues(rows), "groupby");
  std::shared_ptr<arrow::Array> idx;
  check_arrow(b.Finish(&idx), "groupby");
  return unwrap(cp::Take(*a, *idx), "groupby");
}

// The states (finalize=false) or results (true) of every group into a table.
std::shared_ptr<arrow::Table> emit(Groups& g, const GroupbySpec& spec, const arrow::Schema& in_schema,
                                   const std::vector<std::shared_ptr<arrow::DataType>>& input_types, bool finalize) {
  // Without keys there is one group, even over no rows (the sum of nothing is 0).
  if (!g.grouper && !g.numeric) {
    g.size.resize(1, 0);
    for (auto& a : g.accs) a.resize(1);
  }
  auto uniques = g.grouper   ? unwrap(g.grouper->GetUniques(), "groupby")
                 : g.numeric ? cp::ExecBatch({arrow::Datum(g.numeric->uniques())}, g.numeric->groups())
                             : cp::ExecBatch({}, 1);
  const auto rows = kept_groups(uniques);
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (std::size_t k = 0; k < spec.by.size(); ++k) {
    fields.push_back(in_schema.GetFieldByName(spec.by[k]));
    arrays.push_back(take(uniques.values[k].make_array(), rows));
  }
  auto add = [&](const std::string& name, std::shared_ptr<arrow::Array> a) {
    fields.push_back(arrow::field(name, a->type()));
    arrays.push_back(std::move(a));
  };
  if (!finalize) add("__size", int_column(rows, g.size));
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) {
    const AggSpec& s = spec.aggs[i];
    Acc& a = g.accs[i];
    a.resize(g.size.size());
    auto has = [&](std::uint32_t grp) { return a.has[grp] != 0; };
    auto minmax = [&](bool lo) {
      return a.is_double ? double_column(rows, lo ? a.lod : a.hid, has)
                         : build<arrow::Int64Builder, std::int64_t>(rows, has, I64([&](std::uint32_t grp) {
                             return lo ? a.loi[grp] : a.hii[grp];
                           }));
    };
    if (!finalize) {
      switch (s.how) {
        case Agg::Size: break;
        case Agg::Count: add(state(i, "n"), int_column(rows, a.n)); break;
        case Agg::Sum:
          add(state(i, "s"), a.is_double ? double_column(rows, a.sd) : int_column(rows, a.si));
          break;
        case Agg::Mean:
          add(state(i, "n"), int_column(rows, a.n));
          add(state(i, "s"), a.is_double ? double_column(rows, a.sd) : int_column(rows, a.si));
          break;
        case Agg::Var:
        case Agg::Std:
          add(state(i, "n"), int_column(rows, a.n));
          add(state(i, "mean"), double_column(rows, a.mean));
          add(state(i, "m2"), double_column(rows, a.m2));
          break;
        case Agg::Min: add(state(i, "lo"), minmax(true)); break;
        case Agg::Max: add(state(i, "hi"), minmax(false)); break;
      }
      continue;
    }
    std::shared_ptr<arrow::Array> out;
    switch (s.how) {
      case Agg::Size: out = int_column(rows, g.size); break;
      case Agg::Count: out = int_column(rows, a.n); break;
      case Agg::Sum: out = a.is_double ? double_column(rows, a.sd) : int_column(rows, a.si); break;
      case Agg::Mean:
        out = build<arrow::DoubleBuilder, double>(
            rows, [&](std::uint32_t grp) { return a.n[grp] > 0; },
            F64([&](std::uint32_t grp) {
              const double sum = a.is_double ? a.sd[grp] : static_cast<double>(a.si[grp]);
              return sum / static_cast<double>(a.n[grp]);
            }));
        break;
      case Agg::Var:
      case Agg::Std: {
        const bool sd = s.how == Agg::Std;
        out = build<arrow::DoubleBuilder, double>(
            rows, [&](std::uint32_t grp) { return a.n[grp] > 1; },
            F64([&](std::uint32_t grp) {
              const double v = a.m2[grp] / static_cast<double>(a.n[grp] - 1);
              return sd ? std::sqrt(v) : v;
            }));
        break;
      }
      case Agg::Min:
      case Agg::Max: {
        out = minmax(s.how == Agg::Min);
        const auto& want = input_types[i];
        if (!out->type()->Equals(*want)) {
          if (want->id() == arrow::Type::TIMESTAMP || want->id() == arrow::Type::DATE64) {
            auto d = out->data()->Copy();
            d->type = want;
            out = arrow::MakeArray(d);
          } else {
            out = unwrap(cp::Cast(*out, want), "groupby: result type");
          }
        }
        break;
      }
    }
    add(s.output, out);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays, static_cast<std::int64_t>(rows.size()));
}

std::shared_ptr<arrow::Table> sort_by_keys(const std::shared_ptr<arrow::Table>& t, const std::vector<std::string>& by) {
  if (by.empty() || t->num_rows() <= 1) return t;
  std::vector<cp::SortKey> keys;
  for (const auto& b : by) keys.emplace_back(b, cp::SortOrder::Ascending);
  auto idx = unwrap(cp::SortIndices(arrow::Datum(t), cp::SortOptions(keys)), "groupby: sorting");
  return unwrap(cp::Take(arrow::Datum(t), arrow::Datum(idx)), "groupby: sorting").table();
}

std::vector<std::shared_ptr<arrow::DataType>> input_types_of(const arrow::Schema& schema, const GroupbySpec& spec) {
  std::vector<std::shared_ptr<arrow::DataType>> types;
  for (const auto& s : spec.aggs) {
    auto f = s.how == Agg::Size ? nullptr : schema.GetFieldByName(s.column);
    types.push_back(f ? f->type() : arrow::int64());
  }
  return types;
}

}  // namespace

std::shared_ptr<arrow::Table> groupby_partial(const std::shared_ptr<arrow::Table>& table, const GroupbySpec& spec) {
  ensure_arrow_compute();
  Groups g = make_groups(*table->schema(), spec);
  for_each_batch(*table, "groupby", [&](const std::shared_ptr<arrow::RecordBatch>& batch) {
    std::shared_ptr<arrow::Array> keep;
    const std::uint32_t* ids = group_ids(g, *batch, spec, keep);
    for (std::int64_t r = 0; r < batch->num_rows(); ++r) ++g.size[ids[r]];
    for (std::size_t i = 0; i < spec.aggs.size(); ++i) {
      const AggSpec& s = spec.aggs[i];
      if (s.how == Agg::Size) continue;
      const auto& column = batch->GetColumnByName(s.column);
      if (s.how == Agg::Count && !arrow::is_floating(column->type_id())) {
        // Counting needs only validity (and NaN, for floats): other types are not converted.
        auto& n = g.accs[i].n;
        for (std::int64_t r = 0; r < batch->num_rows(); ++r) n[ids[r]] += column->IsValid(r);
        continue;
      }
      accumulate_rows(g.accs[i], s.how, values_of(column), ids, batch->num_rows());
    }
  });
  // Before any batch the accumulators know nothing of the column types.
  const auto types = input_types_of(*table->schema(), spec);
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) g.accs[i].is_double |= accumulates_as_double(*types[i]);
  return emit(g, spec, *table->schema(), types, false);
}

std::shared_ptr<arrow::Table> groupby_combine(const std::vector<std::shared_ptr<arrow::Table>>& partials,
                                              const GroupbySpec& spec,
                                              const std::vector<std::shared_ptr<arrow::DataType>>& input_types) {
  ensure_arrow_compute();
  auto table = unwrap(arrow::ConcatenateTables(partials), "groupby: combining partial results");
  Groups g = make_groups(*table->schema(), spec);
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) g.accs[i].is_double = accumulates_as_double(*input_types[i]);
  for_each_batch(*table, "groupby", [&](const std::shared_ptr<arrow::RecordBatch>& batch) {
    std::shared_ptr<arrow::Array> keep;
    const std::uint32_t* ids = group_ids(g, *batch, spec, keep);
    const auto* size = static_cast<const arrow::Int64Array&>(*batch->GetColumnByName("__size")).raw_values();
    for (std::int64_t r = 0; r < batch->num_rows(); ++r) g.size[ids[r]] += size[r];
    for (std::size_t i = 0; i < spec.aggs.size(); ++i) merge_states(g.accs[i], spec.aggs[i].how, *batch, i, ids);
  });
  auto out = emit(g, spec, *table->schema(), input_types, spec.finalize);
  return spec.finalize ? sort_by_keys(out, spec.by) : out;
}

}  // namespace tessera::dataframe::detail
