// timeseries(): Dask's demo dataset. Row r (counted from `start` in steps of `freq`) takes its
// values from Philox4x32-10 at counter (r, seed), so a partition depends only on its time range.
#include <Random123/philox.h>

#include <arrow/api.h>

#include <chrono>
#include <cmath>
#include <regex>

#include "arrow_util.hpp"
#include "frame_node.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe {
namespace detail {
namespace {

constexpr const char* kNames[] = {"Alice",   "Bob",   "Charlie", "Dan",    "Edith",    "Frank",  "George",
                                  "Hannah",  "Ingrid", "Jerry",  "Kevin",  "Laura",    "Michael", "Norbert",
                                  "Oliver",  "Patricia", "Quinn", "Ray",   "Sarah",    "Tim",    "Ursula",
                                  "Victor",  "Wendy", "Xavier",  "Yvonne", "Zelda"};

struct TimeseriesPiece {
  std::int64_t start_ns = 0;   // the dataset's start (row 0)
  std::int64_t freq_ns = 1;
  std::int64_t first_row = 0, rows = 0;
  std::uint64_t seed = 0;
  template <class A>
  void serialize(A& ar) {
    ar(start_ns, freq_ns, first_row, rows, seed);
  }
};

std::int64_t parse_duration_ns(const std::string& s, const char* what) {
  static const std::regex re("\\s*([0-9]*)\\s*(ns|us|ms|s|S|min|T|h|H|D|d|W)\\s*");
  std::smatch m;
  if (!std::regex_match(s, m, re))
    throw Error(std::string("timeseries: ") + what + " '" + s + "' is not a duration (e.g. 1s, 10ms, 1min, 6h, 1D)");
  const std::int64_t n = m[1].str().empty() ? 1 : std::stoll(m[1].str());
  const std::string u = m[2].str();
  const std::int64_t unit = u == "ns" ? 1 : u == "us" ? 1000 : u == "ms" ? 1000000 : (u == "s" || u == "S") ? 1000000000
                          : (u == "min" || u == "T") ? 60'000'000'000 : (u == "h" || u == "H") ? 3'600'000'000'000
                          : (u == "D" || u == "d") ? 86'400'000'000'000 : 7 * 86'400'000'000'000;
  if (n <= 0) throw Error(std::string("timeseries: ") + what + " must be positive, got '" + s + "'");
  return n * unit;
}

std::int64_t parse_time_ns(const std::string& s, const char* what) {
  static const std::regex re("\\s*(\\d{4})-(\\d{2})-(\\d{2})(?:[ T](\\d{2}):(\\d{2})(?::(\\d{2}))?)?\\s*");
  std::smatch m;
  if (!std::regex_match(s, m, re))
    throw Error(std::string("timeseries: ") + what + " '" + s + "' is not a date (YYYY-MM-DD[ HH:MM[:SS]])");
  using namespace std::chrono;
  const year_month_day ymd{year{std::stoi(m[1].str())}, month{static_cast<unsigned>(std::stoi(m[2].str()))},
                           day{static_cast<unsigned>(std::stoi(m[3].str()))}};
  if (!ymd.ok()) throw Error(std::string("timeseries: ") + what + " '" + s + "' is not a valid date");
  std::int64_t ns = duration_cast<nanoseconds>(sys_days{ymd}.time_since_epoch()).count();
  auto num = [&](int i) { return m[i].matched ? std::stoll(m[i].str()) : 0; };
  ns += ((num(4) * 60 + num(5)) * 60 + num(6)) * 1'000'000'000LL;
  return ns;
}

double uniform01(std::uint32_t bits) { return (bits >> 8) * (1.0 / 16777216.0); }

Value make_piece(const OpContext&, std::span<const Value> args) {
  const auto p = from_object<TimeseriesPiece>(arg(args, 0).object());
  const auto include = from_object<std::vector<std::string>>(arg(args, 1).object());
  auto wanted = [&](const char* c) { return include.empty() || std::find(include.begin(), include.end(), c) != include.end(); };
  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::NANO), arrow::default_memory_pool());
  arrow::Int64Builder id;
  arrow::StringBuilder name;
  arrow::DoubleBuilder x, y;
  check_arrow(ts.Reserve(p.rows), "timeseries");
  check_arrow(id.Reserve(p.rows), "timeseries");
  check_arrow(name.Reserve(p.rows), "timeseries");
  check_arrow(x.Reserve(p.rows), "timeseries");
  check_arrow(y.Reserve(p.rows), "timeseries");
  using Philox = r123::Philox4x32;
  const Philox::key_type key = {{static_cast<std::uint32_t>(p.seed), static_cast<std::uint32_t>(p.seed >> 32)}};
  Philox gen;
  for (std::int64_t i = 0; i < p.rows; ++i) {
    const auto r = static_cast<std::uint64_t>(p.first_row + i);
    const Philox::ctr_type ctr = {{static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r >> 32), 0x7e55e7a, 0}};
    const auto bits = gen(ctr, key);
    ts.UnsafeAppend(p.start_ns + static_cast<std::int64_t>(r) * p.freq_ns);
    // id: Poisson(1000), by its normal approximation (Box-Muller), rounded.
    const double u1 = uniform01(bits[0]) + 1.0 / 33554432.0, u2 = uniform01(bits[1]);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    id.UnsafeAppend(static_cast<std::int64_t>(std::llround(1000.0 + std::sqrt(1000.0) * z)));
    if (wanted("name")) check_arrow(name.Append(kNames[bits[2] % 26]), "timeseries");
    x.UnsafeAppend(uniform01(bits[3]) * 2.0 - 1.0);
    y.UnsafeAppend(uniform01(bits[2] ^ bits[3] ^ 0x9e3779b9u) * 2.0 - 1.0);
  }
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  auto add = [&](const char* c, arrow::ArrayBuilder& b, std::shared_ptr<arrow::DataType> type) {
    std::shared_ptr<arrow::Array> a;
    check_arrow(b.Finish(&a), "timeseries");
    if (!wanted(c)) return;
    fields.push_back(arrow::field(c, type));
    arrays.push_back(a);
  };
  add("timestamp", ts, arrow::timestamp(arrow::TimeUnit::NANO));
  add("id", id, arrow::int64());
  add("name", name, arrow::utf8());
  add("x", x, arrow::float64());
  add("y", y, arrow::float64());
  return table_value(arrow::Table::Make(arrow::schema(fields), arrays, p.rows));
}

const bool timeseries_registered = [] {
  register_op(kOpTimeseries, make_piece);
  return true;
}();

}  // namespace
}  // namespace detail

DataFrame timeseries(const TimeseriesOptions& o) {
  using namespace detail;
  const std::int64_t start = parse_time_ns(o.start, "start"), end = parse_time_ns(o.end, "end");
  const std::int64_t freq = parse_duration_ns(o.freq, "freq"), span = parse_duration_ns(o.partition_freq, "partition_freq");
  if (end <= start) throw Error("timeseries: end (" + o.end + ") must be after start (" + o.start + ")");
  auto node = make_node(NodeKind::Source, "timeseries");
  node->source_op = kOpTimeseries;
  // Rows are the times start + k*freq < end; partition j holds those in [start + j*span, start + (j+1)*span).
  const std::int64_t total = (end - start + freq - 1) / freq;
  for (std::int64_t t0 = start; t0 < end; t0 += span) {
    const std::int64_t t1 = std::min(end, t0 + span);
    const std::int64_t r0 = (t0 - start + freq - 1) / freq, r1 = std::min(total, (t1 - start + freq - 1) / freq);
    if (r1 <= r0) continue;
    node->source_params.push_back(to_object(TimeseriesPiece{start, freq, r0, r1 - r0, o.seed}, "tessera.frame.TimeseriesPiece"));
  }
  node->schema = arrow::schema({arrow::field("timestamp", arrow::timestamp(arrow::TimeUnit::NANO)),
                                arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
                                arrow::field("x", arrow::float64()), arrow::field("y", arrow::float64())});
  node->npartitions = static_cast<std::int64_t>(node->source_params.size());
  return DataFrame(node);
}

}  // namespace tessera::dataframe
