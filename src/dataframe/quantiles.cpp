// Approximate quantiles, as Dask computes them: each partition's exact percentiles at 101
// evenly spaced points (weighted by its count of values), merged into weighted quantiles by one
// task. Used by Series::quantile and describe().
#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <cmath>

#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "frame_node.hpp"
#include "quantiles.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe::detail {
namespace {

constexpr int kPoints = 101;

struct QuantileParams {
  std::vector<std::string> columns;
  std::vector<double> q;
  template <class A>
  void serialize(A& ar) {
    ar(columns, q);
  }
};

// The valid (non-null, non-NaN) values of a column, as doubles.
std::vector<double> values_of(const arrow::ChunkedArray& column) {
  std::vector<double> out;
  for (const auto& chunk : column.chunks()) {
    auto d = unwrap(arrow::compute::Cast(*chunk, arrow::float64()), "quantile");
    const auto& a = static_cast<const arrow::DoubleArray&>(*d);
    for (std::int64_t i = 0; i < a.length(); ++i)
      if (a.IsValid(i) && !std::isnan(a.Value(i))) out.push_back(a.Value(i));
  }
  return out;
}

// NumPy's default (linear) quantile of sorted values.
double linear_quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// A partition -> rows (column index, value, weight): its percentiles, each weighing count/101.
Value partial_op(const OpContext&, std::span<const Value> args) {
  ensure_arrow_compute();
  const auto p = from_object<QuantileParams>(arg(args, 0).object());
  auto table = table_of(arg(args, 1), "quantile");
  arrow::Int32Builder which;
  arrow::DoubleBuilder value, weight;
  for (std::size_t c = 0; c < p.columns.size(); ++c) {
    auto column = table->GetColumnByName(p.columns[c]);
    if (!column) throw Error("quantile: no column '" + p.columns[c] + "' in a partition");
    auto v = values_of(*column);
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    for (int i = 0; i < kPoints; ++i) {
      check_arrow(which.Append(static_cast<std::int32_t>(c)), "quantile");
      check_arrow(value.Append(linear_quantile(v, i / static_cast<double>(kPoints - 1))), "quantile");
      check_arrow(weight.Append(static_cast<double>(v.size()) / kPoints), "quantile");
    }
  }
  auto schema = arrow::schema({arrow::field("column", arrow::int32()), arrow::field("value", arrow::float64()),
                               arrow::field("weight", arrow::float64())});
  return table_value(arrow::Table::Make(schema, {which.Finish().ValueOrDie(), value.Finish().ValueOrDie(),
                                                 weight.Finish().ValueOrDie()}));
}

// Every partition's percentiles -> the table: "quantile", then one column per input column.
Value combine_op(const OpContext&, std::span<const Value> args) {
  const auto p = from_object<QuantileParams>(arg(args, 0).object());
  std::vector<std::vector<std::pair<double, double>>> points(p.columns.size());  // (value, weight)
  for (std::size_t i = 1; i < args.size(); ++i) {
    auto t = unwrap(table_of(args[i], "quantile")->CombineChunks(), "quantile");
    if (t->num_rows() == 0) continue;
    const auto& which = static_cast<const arrow::Int32Array&>(*t->column(0)->chunk(0));
    const auto& value = static_cast<const arrow::DoubleArray&>(*t->column(1)->chunk(0));
    const auto& weight = static_cast<const arrow::DoubleArray&>(*t->column(2)->chunk(0));
    for (std::int64_t r = 0; r < t->num_rows(); ++r)
      points.at(static_cast<std::size_t>(which.Value(r))).emplace_back(value.Value(r), weight.Value(r));
  }
  arrow::DoubleBuilder qs;
  for (double q : p.q) check_arrow(qs.Append(q), "quantile");
  arrow::FieldVector fields{arrow::field("quantile", arrow::float64())};
  arrow::ArrayVector arrays{qs.Finish().ValueOrDie()};
  for (std::size_t c = 0; c < p.columns.size(); ++c) {
    auto& pts = points[c];
    std::sort(pts.begin(), pts.end());
    double total = 0;
    for (const auto& [v, w] : pts) total += w;
    arrow::DoubleBuilder out;
    for (double q : p.q) {
      if (pts.empty()) {
        check_arrow(out.AppendNull(), "quantile");
        continue;
      }
      // The value where the cumulative weight (each point at the middle of its weight) reaches q.
      const double target = q * total;
      double cum = 0, result = pts.back().first, prev_mid = 0, prev_value = pts.front().first;
      bool found = false;
      for (std::size_t i = 0; i < pts.size() && !found; ++i) {
        const double mid = cum + pts[i].second / 2;
        if (mid >= target) {
          result = i == 0 || mid == prev_mid
                       ? pts[i].first
                       : prev_value + (pts[i].first - prev_value) * (target - prev_mid) / (mid - prev_mid);
          found = true;
        }
        cum += pts[i].second;
        prev_mid = mid;
        prev_value = pts[i].first;
      }
      check_arrow(out.Append(result), "quantile");
    }
    fields.push_back(arrow::field(p.columns[c], arrow::float64()));
    arrays.push_back(out.Finish().ValueOrDie());
  }
  return table_value(arrow::Table::Make(arrow::schema(fields), arrays, static_cast<std::int64_t>(p.q.size())));
}

const bool quantiles_registered = [] {
  register_op(kOpQuantilePartial, partial_op);
  register_op(kOpQuantileCombine, combine_op);
  return true;
}();

}  // namespace

Object quantile_params(const std::vector<std::string>& columns, const std::vector<double>& q) {
  return to_object(QuantileParams{columns, q}, "tessera.frame.QuantileParams");
}

DataFrame quantiles(const DataFrame& df, const std::vector<std::string>& columns, const std::vector<double>& q) {
  const FrameNode& in = node_of(df);
  if (q.empty()) throw Error("quantile: no quantiles given");
  for (double x : q)
    if (!(x >= 0 && x <= 1)) throw Error("quantile: " + std::to_string(x) + " is not between 0 and 1");
  arrow::FieldVector fields{arrow::field("quantile", arrow::float64())};
  for (const auto& c : columns) {
    auto f = in.schema->GetFieldByName(c);
    if (!f) throw Error("quantile: column '" + c + "' does not exist");
    const auto id = f->type()->id();
    if (!(arrow::is_integer(id) || arrow::is_floating(id)))
      throw Error("quantile: column '" + c + "' is " + f->type()->ToString() + ", not a number");
    fields.push_back(arrow::field(c, arrow::float64()));
  }
  auto n = make_node(NodeKind::Quantiles, "quantile");
  n->input = in.device ? df.to_host().node() : df.node();
  n->quantile_columns = columns;
  n->quantiles = q;
  n->schema = arrow::schema(fields);
  n->npartitions = 1;
  return DataFrame(n);
}

}  // namespace tessera::dataframe::detail
