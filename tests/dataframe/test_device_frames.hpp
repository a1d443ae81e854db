#pragma once
// Shared by the dataframe algorithm tests (host: tests/dataframe/device_algorithms_test.cpp,
// GPU: tests/cuda/frame_ops_test.cpp): random tables held as plain C++ values, their
// DeviceFrames (host memory), a plain C++ groupby reference, and comparisons.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dataframe/device_frame.hpp"
#include "dataframe/groupby_spec.hpp"
#include "tessera/core/block.hpp"

namespace tessera_frame_test {

using namespace tessera;
using namespace tessera::dataframe;

/** A column as plain values: numbers (bool as 0/1) or strings; nullopt is null. */
struct LColumn {
  std::string name;
  DType dtype = DType::Float64;
  bool is_string = false;
  std::vector<std::optional<double>> num;       // non-string columns
  std::vector<std::optional<std::string>> str;  // string columns (dtype Int32: codes)
  std::int64_t rows() const { return static_cast<std::int64_t>(is_string ? str.size() : num.size()); }
};

struct Table {
  std::vector<LColumn> columns;
  std::int64_t rows() const { return columns.empty() ? 0 : columns[0].rows(); }
  const LColumn* find(const std::string& name) const {
    for (const auto& c : columns)
      if (c.name == name) return &c;
    return nullptr;
  }
};

inline double cast_to(DType t, double x) {
  switch (t) {
    case DType::Bool: return x != 0 ? 1.0 : 0.0;
    case DType::Int32: return static_cast<double>(static_cast<std::int32_t>(x));
    case DType::Int64: return static_cast<double>(static_cast<std::int64_t>(x));
    case DType::Float32: return static_cast<double>(static_cast<float>(x));
    default: break;
  }
  return x;
}

inline bool chance(std::mt19937_64& gen, double p) { return std::uniform_real_distribution<double>(0, 1)(gen) < p; }

/** Random values of a dtype: small integers, floats with NaN, signed zeros and the odd infinity. */
inline LColumn random_value_column(const std::string& name, DType t, std::int64_t rows, std::mt19937_64& gen,
                                   bool nulls) {
  LColumn c{name, t, false, {}, {}};
  std::normal_distribution<double> normal(0.0, 10.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (nulls && chance(gen, 0.12)) {
      c.num.push_back(std::nullopt);
      continue;
    }
    double v = 0;
    switch (t) {
      case DType::Bool: v = static_cast<double>(gen() % 2); break;
      case DType::Int32: v = static_cast<double>(static_cast<std::int64_t>(gen() % 101) - 50); break;
      case DType::Int64: v = static_cast<double>(static_cast<std::int64_t>(gen() % 2001) - 1000); break;
      case DType::Float32: v = static_cast<double>(static_cast<std::int64_t>(gen() % 161) - 80) / 4.0; break;
      case DType::Float64: v = normal(gen); break;
      default: break;  // frames hold the five dtypes above
    }
    if (is_floating(t)) {
      const auto u = gen() % 40;
      if (u == 0) v = std::numeric_limits<double>::quiet_NaN();
      if (u == 1) v = -0.0;
      if (u == 2) v = 0.0;
      if (u == 3 && t == DType::Float64 && chance(gen, 0.2)) v = std::numeric_limits<double>::infinity();
    }
    c.num.push_back(v);
  }
  return c;
}

inline LColumn random_bool_column(const std::string& name, std::int64_t rows, std::mt19937_64& gen, bool nulls) {
  return random_value_column(name, DType::Bool, rows, gen, nulls);
}

/**
 * Key columns k_str (strings), k_int (int64, `int_range` values), k_f (float64 with NaN and
 * signed zeros), k_b (bool), then value columns of every dtype; all with nulls.
 */
inline Table random_table(std::int64_t rows, std::mt19937_64& gen, const std::string& tag, int int_range = 6) {
  Table t;
  LColumn ks{"k_str", DType::Int32, true, {}, {}};
  LColumn ki{"k_int", DType::Int64, false, {}, {}};
  LColumn kf{"k_f", DType::Float64, false, {}, {}};
  LColumn kb{"k_b", DType::Bool, false, {}, {}};
  const double fkeys[] = {-1.5, -0.0, 0.0, 0.5, 2.0, std::numeric_limits<double>::quiet_NaN()};
  for (std::int64_t r = 0; r < rows; ++r) {
    ks.str.push_back(chance(gen, 0.1) ? std::nullopt
                                      : std::optional<std::string>("s" + std::to_string(gen() % (int_range > 6 ? 40 : 8))));
    ki.num.push_back(chance(gen, 0.1) ? std::nullopt : std::optional<double>(static_cast<double>(gen() % int_range)));
    kf.num.push_back(chance(gen, 0.1) ? std::nullopt
                     : int_range > 6  ? std::optional<double>(static_cast<double>(gen() % 50) / 4.0)
                                      : std::optional<double>(fkeys[gen() % 6]));
    kb.num.push_back(chance(gen, 0.1) ? std::nullopt : std::optional<double>(static_cast<double>(gen() % 2)));
  }
  t.columns = {ks, ki, kf, kb};
  t.columns.push_back(random_value_column("v_f64", DType::Float64, rows, gen, true));
  t.columns.push_back(random_value_column("v_f32", DType::Float32, rows, gen, true));
  t.columns.push_back(random_value_column("v_i64", DType::Int64, rows, gen, true));
  t.columns.push_back(random_value_column("v_i32", DType::Int32, rows, gen, !tag.empty() && tag.back() != '0'));
  t.columns.push_back(random_value_column("v_b", DType::Bool, rows, gen, true));
  return t;
}

inline Table concatenate_tables(const std::vector<Table>& parts) {
  Table all = parts.at(0);
  for (std::size_t p = 1; p < parts.size(); ++p)
    for (std::size_t k = 0; k < all.columns.size(); ++k) {
      auto& c = all.columns[k];
      const auto& src = parts[p].columns[k];
      c.num.insert(c.num.end(), src.num.begin(), src.num.end());
      c.str.insert(c.str.end(), src.str.begin(), src.str.end());
    }
  return all;
}

/**
 * A DeviceFrame column in host memory. Null slots hold junk values; a column without nulls
 * sometimes has an all-true validity mask anyway; a string column's dictionary lists its strings
 * in a random order, sometimes with one no row uses.
 */
inline DeviceColumn to_column(const LColumn& c, std::mt19937_64& gen) {
  const std::int64_t rows = c.rows();
  DeviceColumn d;
  d.name = c.name;
  d.values = Block(c.dtype, {rows});
  bool any_null = false;
  if (c.is_string) {
    std::vector<std::string> dict;
    for (const auto& s : c.str)
      if (s && std::find(dict.begin(), dict.end(), *s) == dict.end()) dict.push_back(*s);
    if (chance(gen, 0.3)) dict.push_back("unused-" + std::to_string(gen() % 1000));
    std::shuffle(dict.begin(), dict.end(), gen);
    auto* codes = d.values.data<std::int32_t>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto& s = c.str[static_cast<std::size_t>(r)];
      any_null = any_null || !s;
      codes[r] = s ? static_cast<std::int32_t>(std::find(dict.begin(), dict.end(), *s) - dict.begin())
                   : (dict.empty() ? 0 : static_cast<std::int32_t>(gen() % dict.size()));
    }
    d.dictionary = std::make_shared<const std::vector<std::string>>(std::move(dict));
    d.logical_type = "string";
  } else {
    dispatch_dtype(c.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = d.values.data<T>();
      for (std::int64_t r = 0; r < rows; ++r) {
        const auto& v = c.num[static_cast<std::size_t>(r)];
        any_null = any_null || !v;
        out[r] = v ? static_cast<T>(*v) : static_cast<T>(77);
      }
    });
    d.logical_type = std::string(dtype_name(c.dtype));
  }
  if (any_null || chance(gen, 0.3)) {
    d.valid = Block(DType::Bool, {rows});
    bool* v = d.valid.data<bool>();
    for (std::int64_t r = 0; r < rows; ++r)
      v[r] = c.is_string ? c.str[static_cast<std::size_t>(r)].has_value() : c.num[static_cast<std::size_t>(r)].has_value();
  }
  return d;
}

inline DeviceFrame to_frame(const Table& t, std::mt19937_64& gen) {
  DeviceFrame f;
  f.rows = t.rows();
  for (const auto& c : t.columns) f.columns.push_back(to_column(c, gen));
  return f;
}

// ---- reading results --------------------------------------------------------------------------------

inline bool cell_is_null(const DeviceColumn& c, std::int64_t r) { return !c.valid.empty() && !c.valid.data<bool>()[r]; }

inline double cell(const DeviceColumn& c, std::int64_t r) {
  return dispatch_dtype(c.values.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(c.values.data<T>()[r]);
  });
}

inline std::string cell_string(const DeviceColumn& c, std::int64_t r) {
  const std::int32_t code = c.values.data<std::int32_t>()[r];
  if (!c.dictionary || code < 0 || static_cast<std::size_t>(code) >= c.dictionary->size())
    return "<bad code " + std::to_string(code) + ">";
  return (*c.dictionary)[static_cast<std::size_t>(code)];
}

inline bool close_enough(double got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (rel == 0) return got == want;
  return std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want));
}

/** `frame` holds exactly the columns of `t` (names, dtypes, nulls, values; floats within `rel`). */
inline void expect_frame_holds(const DeviceFrame& frame, const Table& t, const std::string& what, double rel = 0) {
  ASSERT_EQ(frame.columns.size(), t.columns.size()) << what;
  ASSERT_EQ(frame.rows, t.rows()) << what;
  for (std::size_t k = 0; k < t.columns.size(); ++k) {
    const LColumn& e = t.columns[k];
    const DeviceColumn& g = frame.columns[k];
    const std::string col = what + ", column " + e.name;
    ASSERT_EQ(g.name, e.name) << what;
    ASSERT_EQ(g.values.dtype(), e.dtype) << col;
    ASSERT_EQ(g.values.size(), frame.rows) << col;
    if (e.is_string) {
      ASSERT_TRUE(g.dictionary) << col;
    }
    for (std::int64_t r = 0; r < frame.rows; ++r) {
      const std::string at = col + ", row " + std::to_string(r);
      if (e.is_string) {
        const auto& s = e.str[static_cast<std::size_t>(r)];
        ASSERT_EQ(cell_is_null(g, r), !s) << at;
        if (s) {
          ASSERT_EQ(cell_string(g, r), *s) << at;
        }
        continue;
      }
      const auto& v = e.num[static_cast<std::size_t>(r)];
      ASSERT_EQ(cell_is_null(g, r), !v) << at;
      if (v) {
        ASSERT_TRUE(close_enough(cell(g, r), *v, is_floating(e.dtype) ? rel : 0))
            << at << ": got " << cell(g, r) << ", expected " << *v;
      }
    }
  }
}

/** Two frames hold the same columns (floats within `rel`: device sums add in another order). */
inline void expect_same_frame(const DeviceFrame& got, const DeviceFrame& want, const std::string& what, double rel) {
  ASSERT_EQ(got.rows, want.rows) << what;
  ASSERT_EQ(got.columns.size(), want.columns.size()) << what;
  for (std::size_t k = 0; k < want.columns.size(); ++k) {
    const DeviceColumn& g = got.columns[k];
    const DeviceColumn& w = want.columns[k];
    const std::string col = what + ", column " + w.name;
    ASSERT_EQ(g.name, w.name) << what;
    ASSERT_EQ(g.values.dtype(), w.values.dtype()) << col;
    ASSERT_EQ(g.logical_type, w.logical_type) << col;
    ASSERT_EQ(g.dictionary != nullptr, w.dictionary != nullptr) << col;
    for (std::int64_t r = 0; r < want.rows; ++r) {
      const std::string at = col + ", row " + std::to_string(r);
      ASSERT_EQ(cell_is_null(g, r), cell_is_null(w, r)) << at;
      if (cell_is_null(w, r)) continue;
      if (w.dictionary) {
        ASSERT_EQ(cell_string(g, r), cell_string(w, r)) << at;
      } else {
        ASSERT_TRUE(close_enough(cell(g, r), cell(w, r), is_floating(w.values.dtype()) ? rel : 0))
            << at << ": got " << cell(g, r) << ", expected " << cell(w, r);
      }
    }
  }
}

// ---- the groupby reference ---------------------------------------------------------------------------

const char* const kValueColumns[] = {"v_f64", "v_f32", "v_i64", "v_i32", "v_b"};

/** Every aggregation of every value column, a count of the string column (unless a key), and size. */
inline GroupbySpec every_agg_spec(const std::vector<std::string>& by) {
  GroupbySpec spec;
  spec.by = by;
  for (const char* v : kValueColumns)
    for (Agg a : {Agg::Sum, Agg::Mean, Agg::Count, Agg::Min, Agg::Max, Agg::Std, Agg::Var})
      spec.aggs.push_back(AggSpec{v, a, std::string(v) + "_" + agg_name(a)});
  if (std::find(by.begin(), by.end(), "k_str") == by.end()) spec.aggs.push_back(AggSpec{"k_str", Agg::Count, "strings"});
  spec.aggs.push_back(AggSpec{"", Agg::Size, "size"});
  return spec;
}

/** groupby_spec.hpp's result dtype of `a` over a column of dtype `t`. */
inline DType agg_result_type(Agg a, DType t) {
  switch (a) {
    case Agg::Sum: return is_floating(t) ? DType::Float64 : DType::Int64;
    case Agg::Mean:
    case Agg::Std:
    case Agg::Var: return DType::Float64;
    case Agg::Count:
    case Agg::Size: return DType::Int64;
    case Agg::Min:
    case Agg::Max: return t;
  }
  return t;
}

/** pandas' df.groupby(by).agg(...) in plain C++ (long double sums, two-pass variance). */
inline Table reference_groupby(const Table& t, const GroupbySpec& spec) {
  using KeyCell = std::pair<double, std::string>;
  std::map<std::vector<KeyCell>, std::vector<std::int64_t>> groups;
  std::vector<const LColumn*> keys;
  for (const auto& k : spec.by) keys.push_back(t.find(k));
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    std::vector<KeyCell> key;
    bool dropped = false;
    for (const LColumn* k : keys) {
      if (k->is_string) {
        const auto& s = k->str[static_cast<std::size_t>(r)];
        if (!s) dropped = true;
        key.emplace_back(0.0, s.value_or(""));
      } else {
        const auto& v = k->num[static_cast<std::size_t>(r)];
        if (!v || std::isnan(*v)) dropped = true;
        key.emplace_back(v.value_or(0.0), "");
      }
    }
    if (!dropped) groups[key].push_back(r);
  }
  Table out;
  for (const LColumn* k : keys) out.columns.push_back(LColumn{k->name, k->dtype, k->is_string, {}, {}});
  for (const auto& a : spec.aggs) {
    const LColumn* c = a.how == Agg::Size ? nullptr : t.find(a.column);
    out.columns.push_back(LColumn{a.output, agg_result_type(a.how, c ? c->dtype : DType::Int64), false, {}, {}});
  }
  for (const auto& [key, rows] : groups) {
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (keys[k]->is_string)
        out.columns[k].str.push_back(key[k].second);
      else
        out.columns[k].num.push_back(key[k].first);
    }
    for (std::size_t i = 0; i < spec.aggs.size(); ++i) {
      const AggSpec& a = spec.aggs[i];
      auto& dst = out.columns[keys.size() + i].num;
      if (a.how == Agg::Size) {
        dst.push_back(static_cast<double>(rows.size()));
        continue;
      }
      const LColumn* c = t.find(a.column);
      std::vector<long double> vals;
      for (auto r : rows) {
        if (c->is_string) {
          if (c->str[static_cast<std::size_t>(r)]) vals.push_back(0);
          continue;
        }
        const auto& v = c->num[static_cast<std::size_t>(r)];
        if (v && !std::isnan(*v)) vals.push_back(cast_to(c->dtype, *v));
      }
      const auto n = static_cast<long double>(vals.size());
      long double sum = 0;
      for (auto v : vals) sum += v;
      switch (a.how) {
        case Agg::Count: dst.push_back(static_cast<double>(vals.size())); break;
        case Agg::Sum: dst.push_back(static_cast<double>(sum)); break;
        case Agg::Mean: dst.push_back(vals.empty() ? std::nullopt : std::optional<double>(static_cast<double>(sum / n))); break;
        case Agg::Min:
        case Agg::Max:
          if (vals.empty())
            dst.push_back(std::nullopt);
          else
            dst.push_back(static_cast<double>(a.how == Agg::Min ? *std::min_element(vals.begin(), vals.end())
                                                                : *std::max_element(vals.begin(), vals.end())));
          break;
        case Agg::Var:
        case Agg::Std: {
          if (vals.size() < 2) {
            dst.push_back(std::nullopt);
            break;
          }
          const long double mean = sum / n;
          long double m2 = 0;
          for (auto v : vals) m2 += (v - mean) * (v - mean);
          const long double var = m2 / (n - 1);
          dst.push_back(static_cast<double>(a.how == Agg::Std ? std::sqrt(var) : var));
          break;
        }
        case Agg::Size: break;
      }
    }
  }
  return out;
}

/** The keys keep their dictionary and logical type; min and max keep their column's logical type. */
inline void expect_result_types(const DeviceFrame& out, const Table& input, const GroupbySpec& spec,
                                const std::string& what) {
  ASSERT_EQ(out.columns.size(), spec.by.size() + spec.aggs.size()) << what;
  for (std::size_t k = 0; k < spec.by.size(); ++k) {
    const LColumn* in = input.find(spec.by[k]);
    EXPECT_EQ(out.columns[k].name, spec.by[k]) << what;
    EXPECT_EQ(out.columns[k].values.dtype(), in->dtype) << what;
    EXPECT_EQ(out.columns[k].dictionary != nullptr, in->is_string) << what;
    EXPECT_TRUE(out.columns[k].valid.empty()) << what << ": key " << spec.by[k] << " has a validity mask";
    EXPECT_EQ(out.columns[k].logical_type, in->is_string ? "string" : std::string(dtype_name(in->dtype))) << what;
  }
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) {
    const AggSpec& a = spec.aggs[i];
    const DeviceColumn& c = out.columns[spec.by.size() + i];
    EXPECT_EQ(c.name, a.output) << what;
    const LColumn* in = a.how == Agg::Size ? nullptr : input.find(a.column);
    EXPECT_EQ(c.values.dtype(), agg_result_type(a.how, in ? in->dtype : DType::Int64)) << what << ": " << a.output;
    if ((a.how == Agg::Min || a.how == Agg::Max) && in) {
      EXPECT_EQ(c.logical_type, std::string(dtype_name(in->dtype))) << what;
    }
  }
}

}  // namespace tessera_frame_test
