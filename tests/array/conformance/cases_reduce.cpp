// Conformance cases of reductions, scans, sorting and statistics: NaN-aware reductions,
// count_nonzero, ptp, cumsum/cumprod (and NaN variants), diff, ediff1d, sort, argsort, topk,
// argtopk, unique, isin, searchsorted, digitize, median, quantile, percentile, average, cov,
// corrcoef, histogram, bincount.
#include <optional>
#include <stdexcept>

#include "conformance.hpp"

namespace {

using namespace tessera;

ReduceOptions options_of(const tessera_conformance::Params& p) {
  ReduceOptions o;
  if (p.has("axis")) o.axes = p.axes("axis");
  o.keepdims = p.b("keepdims");
  o.ddof = static_cast<int>(p.i("ddof", 0));
  o.split_every = static_cast<int>(p.i("split_every", 0));
  return o;
}

std::optional<int> axis_of(const tessera_conformance::Params& p) {
  if (!p.has("axis")) return std::nullopt;
  return static_cast<int>(p.i("axis"));
}

std::vector<double> doubles(const std::vector<std::int64_t>& v, double scale = 1.0) {
  std::vector<double> out;
  for (auto x : v) out.push_back(static_cast<double>(x) * scale);
  return out;
}

}  // namespace

TESSERA_CONFORMANCE_CASE(nanreduce) {
  const std::string& op = p.s("op");
  const Array& x = in[0];
  const ReduceOptions o = options_of(p);
  if (op == "nansum") return {nansum(x, o)};
  if (op == "nanprod") return {nanprod(x, o)};
  if (op == "nanmin") return {nanmin(x, o)};
  if (op == "nanmax") return {nanmax(x, o)};
  if (op == "nanmean") return {nanmean(x, o)};
  if (op == "nanvar") return {nanvar(x, o)};
  if (op == "nanstd") return {nanstd(x, o)};
  if (op == "count_nonzero") return {count_nonzero(x, o)};
  if (op == "ptp") return {ptp(x, o)};
  if (op == "nanargmin") return {nanargmin(x, axis_of(p))};
  if (op == "nanargmax") return {nanargmax(x, axis_of(p))};
  throw std::invalid_argument("nanreduce: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(scan) {
  const std::string& op = p.s("op");
  const Array& x = in[0];
  if (op == "cumsum") return {cumsum(x, axis_of(p))};
  if (op == "cumprod") return {cumprod(x, axis_of(p))};
  if (op == "nancumsum") return {nancumsum(x, axis_of(p))};
  if (op == "nancumprod") return {nancumprod(x, axis_of(p))};
  throw std::invalid_argument("scan: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(push_case) {
  std::optional<std::int64_t> n;
  if (p.i("n", 0) > 0) n = p.i("n");
  return {push(in[0], n, static_cast<int>(p.i("axis", -1)))};
}

TESSERA_CONFORMANCE_CASE(diff) { return {diff(in[0], static_cast<int>(p.i("n", 1)), static_cast<int>(p.i("axis", -1)))}; }
TESSERA_CONFORMANCE_CASE(ediff1d) { return {ediff1d(in[0])}; }
TESSERA_CONFORMANCE_CASE(sort) { return {sort(in[0], static_cast<int>(p.i("axis", -1)))}; }
TESSERA_CONFORMANCE_CASE(argsort) { return {argsort(in[0], static_cast<int>(p.i("axis", -1)))}; }
TESSERA_CONFORMANCE_CASE(topk) {
  return {topk(in[0], p.i("k"), static_cast<int>(p.i("axis", -1)), static_cast<int>(p.i("split_every", 0)))};
}
TESSERA_CONFORMANCE_CASE(argtopk) {
  return {argtopk(in[0], p.i("k"), static_cast<int>(p.i("axis", -1)), static_cast<int>(p.i("split_every", 0)))};
}
TESSERA_CONFORMANCE_CASE(unique) {
  const UniqueResult u = unique(in[0]);
  return {u.values, u.counts};
}
TESSERA_CONFORMANCE_CASE(isin) { return {isin(in[0], in[1], p.b("invert"))}; }
TESSERA_CONFORMANCE_CASE(searchsorted) { return {searchsorted(in[0], in[1], p.s("side", "left"))}; }
TESSERA_CONFORMANCE_CASE(digitize) { return {digitize(in[0], doubles(p.ints("bins"), 0.5), p.b("right"))}; }

TESSERA_CONFORMANCE_CASE(median) {
  const std::vector<int> axes = p.has("axis") ? p.axes("axis") : std::vector<int>{};
  if (p.b("nan")) return {nanmedian(in[0], axes, p.b("keepdims"))};
  return {median(in[0], axes, p.b("keepdims"))};
}

TESSERA_CONFORMANCE_CASE(quantile) {
  QuantileOptions o;
  if (p.has("axis")) o.axes = p.axes("axis");
  o.keepdims = p.b("keepdims");
  o.method = p.s("method", "linear");
  const std::string& op = p.s("op");
  // q in percent (integers) from the driver.
  const std::vector<double> pct = doubles(p.ints("q"));
  std::vector<double> q;
  for (double v : pct) q.push_back(v / 100.0);
  if (op == "percentile") return {percentile(in[0], pct, o)};
  if (op == "nanpercentile") return {nanpercentile(in[0], pct, o)};
  if (op == "quantile") return {quantile(in[0], q, o)};
  if (op == "nanquantile") return {nanquantile(in[0], q, o)};
  throw std::invalid_argument("quantile: unknown op " + op);
}

TESSERA_CONFORMANCE_CASE(average) {
  if (in.size() > 1) {
    if (p.b("returned")) {
      auto [a, s] = average_returned(in[0], axis_of(p), in[1]);
      return {a, s};
    }
    return {average(in[0], axis_of(p), in[1])};
  }
  return {average(in[0], axis_of(p))};
}

TESSERA_CONFORMANCE_CASE(cov) {
  std::optional<Array> y;
  if (in.size() > 1) y = in[1];
  std::optional<int> ddof;
  if (p.has("ddof")) ddof = static_cast<int>(p.i("ddof"));
  return {cov(in[0], y, p.b("rowvar", true), p.b("bias"), ddof)};
}

TESSERA_CONFORMANCE_CASE(corrcoef) {
  std::optional<Array> y;
  if (in.size() > 1) y = in[1];
  return {corrcoef(in[0], y, p.b("rowvar", true))};
}

TESSERA_CONFORMANCE_CASE(histogram) {
  std::optional<Array> w;
  if (in.size() > 1) w = in[1];
  Histogram h = p.has("edges") ? histogram(in[0], doubles(p.ints("edges"), 0.25), w, p.b("density"))
                               : histogram(in[0], p.i("bins"), {p.d("lo"), p.d("hi")}, w, p.b("density"));
  return {h.counts, h.edges};
}

// in[0], in[1] (and in[2] when "dims" is 3) are the coordinates; the last input the weights
// when p.b("weighted").
TESSERA_CONFORMANCE_CASE(histogramdd) {
  const auto dims = static_cast<std::size_t>(p.i("dims", 2));
  std::vector<Array> sample(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(dims));
  std::optional<Array> w;
  if (p.b("weighted")) w = in[dims];
  const auto bins = p.ints("bins");
  const auto lo = p.ints("lo"), hi = p.ints("hi");
  std::vector<std::pair<double, double>> range;
  for (std::size_t k = 0; k < dims; ++k) range.emplace_back(0.25 * static_cast<double>(lo[k]), 0.25 * static_cast<double>(hi[k]));
  HistogramDD h = dims == 2 && p.b("as_2d")
                      ? histogram2d(sample[0], sample[1], {bins[0], bins[1]}, {range[0], range[1]}, w, p.b("density"))
                      : histogramdd(sample, std::vector<std::int64_t>(bins.begin(), bins.end()), range, w, p.b("density"));
  std::vector<Array> out{h.counts};
  for (const Array& e : h.edges) out.push_back(e);
  return out;
}

TESSERA_CONFORMANCE_CASE(bincount) {
  std::optional<Array> w;
  if (in.size() > 1) w = in[1];
  return {bincount(in[0], w, p.i("minlength", 0))};
}
