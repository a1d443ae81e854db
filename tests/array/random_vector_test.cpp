// multinomial and multivariate_hypergeometric (src/array/random_vector.cpp): every row adds up,
// each column has its exact marginal (binomial, hypergeometric: chi-square at p about 1e-4 and
// the mean), the rows are the same for any chunking and executor, and bad parameters throw.
// On the device (to_device()) the chunks' tasks run the device variant: its host half
// (random_rows_on_device) with a stand-in kernel, a host loop over the rows calling the same
// draw_row as the CUDA kernel (cuda/random_rows.cu), gives the host's rows bit for bit under the
// fake device runtime; tests/cuda/random_rows_device_test.cpp runs the real kernel on a GPU.
// First: random_semantics.hpp's unqualified log, sqrt, ... must be declared before tessera's.
#include "array/random_vector.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "../support/fake_device.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/tessera.hpp"

namespace {

using namespace tessera;

constexpr std::int64_t kRows = 20000;

std::vector<std::int64_t> values(const Array& a, const char* executor = "threads") {
  const Block b = a.compute(local_executor(executor));
  EXPECT_EQ(b.dtype(), DType::Int64);
  const auto* p = b.data<std::int64_t>();
  return {p, p + b.size()};
}

double log_choose(double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); }

/** Chi-square of column j of rows of k counts against pmf, bins of expected count >= 20 (tails lumped). */
void expect_column(const std::vector<std::int64_t>& x, int k, int j, const std::function<double(std::int64_t)>& pmf,
                   std::int64_t top) {
  const auto rows = static_cast<double>(x.size() / static_cast<std::size_t>(k));
  std::map<std::int64_t, double> count;
  double mean = 0;
  for (std::size_t r = 0; r < x.size(); r += static_cast<std::size_t>(k)) {
    count[x[r + static_cast<std::size_t>(j)]] += 1;
    mean += static_cast<double>(x[r + static_cast<std::size_t>(j)]);
  }
  mean /= rows;
  // Bins: consecutive values merged until each expects at least 20.
  double chi2 = 0, expected = 0, observed = 0, want_mean = 0, want_var = 0;
  int bins = 0;
  for (std::int64_t v = 0; v <= top; ++v) {
    const double p = pmf(v);
    want_mean += p * static_cast<double>(v);
    want_var += p * static_cast<double>(v) * static_cast<double>(v);
    expected += p * rows;
    observed += count.count(v) ? count[v] : 0;
    if (expected >= 20 || v == top) {
      if (expected > 0) chi2 += (observed - expected) * (observed - expected) / expected;
      ++bins;
      expected = observed = 0;
    }
  }
  want_var -= want_mean * want_mean;
  // chi-square's 1 - 1e-4 quantile is below dof + 4 sqrt(2 dof) + 16 for these bin counts.
  const double dof = bins - 1;
  EXPECT_LT(chi2, dof + 4 * std::sqrt(2 * dof) + 16) << "column " << j << ": chi-square " << chi2 << " over " << bins << " bins";
  EXPECT_NEAR(mean, want_mean, 5 * std::sqrt(want_var / rows)) << "column " << j;
}

TEST(RandomVector, MultinomialRowsAddUpAndColumnsAreBinomial) {
  const std::vector<double> pvals{0.05, 0.15, 0.6, 0.2};
  for (std::int64_t n : {20, 500}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const Array m = random::Generator(3).multinomial(n, pvals, {kRows / 100, 100}, {64, 30});
    EXPECT_EQ(m.shape(), (Shape{kRows / 100, 100, 4}));
    EXPECT_EQ(m.chunks().back(), (std::vector<std::int64_t>{4}));
    const auto x = values(m);
    for (std::size_t r = 0; r < x.size(); r += 4) {
      ASSERT_EQ(x[r] + x[r + 1] + x[r + 2] + x[r + 3], n) << "row " << r / 4;
      for (int j = 0; j < 4; ++j) ASSERT_GE(x[r + static_cast<std::size_t>(j)], 0);
    }
    for (int j = 0; j < 4; ++j) {
      const double p = pvals[static_cast<std::size_t>(j)];
      expect_column(x, 4, j, [&](std::int64_t v) {
        return std::exp(log_choose(static_cast<double>(n), static_cast<double>(v)) + static_cast<double>(v) * std::log(p) +
                        static_cast<double>(n - v) * std::log1p(-p));
      }, n);
    }
  }
  // The last outcome takes what the others leave, as NumPy's.
  for (auto v : values(random::Generator(4).multinomial(9, {1.0, 0.7}, {5}, {-1}))) EXPECT_TRUE(v == 9 || v == 0);
}

TEST(RandomVector, MultivariateHypergeometricBothMethods) {
  const std::vector<std::int64_t> colors{300, 120, 500, 80};
  const std::int64_t total = 1000;
  for (const char* method : {"marginals", "count"}) {
    SCOPED_TRACE(method);
    for (std::int64_t nsample : {8, 400}) {
      SCOPED_TRACE("nsample " + std::to_string(nsample));
      const auto x = values(random::Generator(5).multivariate_hypergeometric(colors, nsample, {kRows}, {3000}, method));
      ASSERT_EQ(x.size(), static_cast<std::size_t>(kRows * 4));
      for (std::size_t r = 0; r < x.size(); r += 4) {
        ASSERT_EQ(x[r] + x[r + 1] + x[r + 2] + x[r + 3], nsample) << "row " << r / 4;
        for (std::size_t j = 0; j < 4; ++j) ASSERT_TRUE(x[r + j] >= 0 && x[r + j] <= colors[j]);
      }
      for (int j = 0; j < 4; ++j) {
        const double good = static_cast<double>(colors[static_cast<std::size_t>(j)]), bad = static_cast<double>(total) - good;
        expect_column(x, 4, j, [&](std::int64_t v) {
          const double k = static_cast<double>(v), n = static_cast<double>(nsample);
          if (k > good || n - k > bad) return 0.0;
          return std::exp(log_choose(good, k) + log_choose(bad, n - k) - log_choose(static_cast<double>(total), n));
        }, nsample);
      }
    }
  }
  // All of them: each colour whole.
  const auto all = values(random::Generator(6).multivariate_hypergeometric({4, 0, 7}, 11, {3}, {-1}));
  EXPECT_EQ(all, (std::vector<std::int64_t>{4, 0, 7, 4, 0, 7, 4, 0, 7}));
}

TEST(RandomVector, SameRowsForAnyChunkingAndExecutor) {
  auto multinomial = [](const ChunkSpec& c) { return random::Generator(9).multinomial(50, {0.3, 0.3, 0.4}, {37, 23}, c); };
  auto hyper = [](const ChunkSpec& c) {
    return random::Generator(9).multivariate_hypergeometric({30, 40, 50}, 60, {37, 23}, c);
  };
  for (auto make : {std::function<Array(const ChunkSpec&)>(multinomial), std::function<Array(const ChunkSpec&)>(hyper)}) {
    const auto want = values(make(ChunkSpec{-1}), "sync");
    for (const ChunkSpec& c : {ChunkSpec{5}, ChunkSpec{37, 1}, ChunkSpec{1, 23}, ChunkSpec{10, 7}})
      EXPECT_EQ(values(make(c), "threads"), want) << "chunks " << c[0];
    // A slice reads the same rows.
    const auto part = values(make(ChunkSpec{10, 7})[{slice(3, 9)}], "threads");
    EXPECT_EQ(part, std::vector<std::int64_t>(want.begin() + 3 * 23 * 3, want.begin() + 9 * 23 * 3));
  }
  // Another Generator call draws other rows.
  random::Generator g(9);
  const auto first = values(g.multinomial(50, {0.3, 0.3, 0.4}, {37, 23}, {-1}));
  EXPECT_NE(values(g.multinomial(50, {0.3, 0.3, 0.4}, {37, 23}, {-1})), first);
}

TEST(RandomVector, BadParametersThrowWhenBuilt) {
  random::Generator g(1);
  EXPECT_THROW(g.multinomial(-1, {0.5, 0.5}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {0.9, 0.9, 0.1}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {-0.1, 1.1}, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {std::nan(""), 1.0}, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, 3}, 6, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, -3}, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, 3}, -1, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({}, 0, {4}, {-1}), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({2, 3}, 1, {4}, {-1}, "fast"), Error);
  EXPECT_THROW(g.multivariate_hypergeometric({600000000, 500000000}, 1, {4}, {-1}), Error);
  EXPECT_THROW(g.multinomial(5, {0.5, 0.5}, {-4}, {-1}), ShapeError);
}


// ---- the device variant, under the stand-in device runtime ----------------------------------

std::atomic<int> stand_in_launches{0};

/** rng::RowsKernel on the fake device, whose memory is host memory: a thread per row, in turn. */
void stand_in_kernel(const detail::rng::RowsArgs& a, std::int64_t n, std::int64_t* out, int device, StreamView stream) {
  ++stand_in_launches;
  EXPECT_EQ(device, 0);
  EXPECT_FALSE(stream.is_default());
  for (std::int64_t r = 0; r < n; ++r) detail::rng::draw_row(a, r, out + r * a.k);
}

using MakeRows = std::function<Array(const ChunkSpec&)>;

/** Both samplers and both methods, over rows of shape {23, 7}. */
std::vector<std::pair<std::string, MakeRows>> row_makers() {
  return {
      {"multinomial", [](const ChunkSpec& c) { return random::Generator(4).multinomial(40, {0.1, 0.5, 0.0, 0.4}, {23, 7}, c); }},
      {"marginals", [](const ChunkSpec& c) {
         return random::Generator(4).multivariate_hypergeometric({12, 0, 30, 5}, 25, {23, 7}, c, "marginals");
       }},
      {"count", [](const ChunkSpec& c) {
         return random::Generator(4).multivariate_hypergeometric({12, 0, 30, 5}, 25, {23, 7}, c, "count");
       }},
  };
}

const std::vector<ChunkSpec> kRowChunkings{ChunkSpec{-1}, ChunkSpec{5, 3}, ChunkSpec{1, 7}, ChunkSpec{23, 1}, ChunkSpec{8}};

TEST(RandomVector, ToDeviceMakesTheRowsThereAsAGenerator) {
  const Array host = random::Generator(2).multinomial(10, {0.5, 0.5}, {12, 3}, {4, 3});
  const Array dev = host.to_device();
  EXPECT_EQ(dev.target(), Target::Device);
  std::vector<Key> keys;
  const Graph g = dev.to_graph(&keys);
  std::size_t rows = 0;
  for (const auto& [k, t] : g.tasks()) {
    EXPECT_EQ(t.annotations.target, Target::Device) << k;  // no host task and no move: made there
    rows += t.op == detail::kRandomRowsOp;
  }
  EXPECT_EQ(rows, 3u);
  // Back on the host it is drawn on the host again, and element-wise work on top follows it.
  const Graph back = dev.to_host().to_graph(&keys);
  for (const auto& [k, t] : back.tasks()) EXPECT_EQ(t.annotations.target, Target::Host) << k;
  const Graph tree = (host * 2 + 1).to_device().to_graph(&keys);
  for (const auto& [k, t] : tree.tasks()) EXPECT_EQ(t.annotations.target, Target::Device) << k;
}

TEST(RandomVector, DeviceVariantGivesTheHostRowsOnTheStandInDevice) {
  // The device half of the variant on every chunk task of the lowered graph, beside the host op
  // on the same arguments: device blocks with the same counts. Needs no registration, so it runs
  // whether or not the CUDA back end is loaded.
  tessera_test::ScopedFakeDevice gpu;
  const OpFn& host_op = OpRegistry::global().get(detail::kRandomRowsOp).host;
  for (const auto& [what, make] : row_makers()) {
    for (const ChunkSpec& c : kRowChunkings) {
      SCOPED_TRACE(what + " chunks " + std::to_string(c[0]));
      const Array dev = make(c).to_device();
      std::vector<Key> keys;
      const Graph g = dev.to_graph(&keys);
      const int launches = stand_in_launches;
      std::size_t tasks = 0;
      for (const auto& [k, t] : g.tasks()) {
        ASSERT_EQ(t.op, detail::kRandomRowsOp);
        ASSERT_EQ(t.annotations.target, Target::Device);
        ASSERT_EQ(t.args.size(), 1u);
        const Value args[] = {std::get<Value>(t.args[0])};
        const Block want = host_op(OpContext{&k, Target::Host, -1}, args).block();
        const Block got =
            detail::random_rows_on_device(OpContext{&k, Target::Device, 0, gpu->thread_stream(0)}, args, stand_in_kernel).block();
        ASSERT_EQ(got.memory_kind(), MemoryKind::Device);
        ASSERT_EQ(got.shape(), want.shape());
        const Block back = to_host(got);
        EXPECT_EQ(std::memcmp(back.raw(), want.raw(), static_cast<std::size_t>(want.size()) * 8), 0) << k;
        ++tasks;
      }
      EXPECT_EQ(static_cast<std::int64_t>(tasks), dev.num_chunks());
      EXPECT_EQ(stand_in_launches - launches, static_cast<int>(tasks));
    }
  }
}

TEST(RandomVector, DeviceTasksRunTheDeviceVariant) {
  // Through the executors: the device tasks must run the registered device variant (counted),
  // and give the host's rows for any chunking.
  if (OpRegistry::global().get("tessera.array.blockwise").device)
    GTEST_SKIP() << "the CUDA back end is loaded: its kernel would run on fake memory; "
                    "tests/cuda/random_rows_device_test.cpp checks it on a GPU";
  // The stand-in kernel behind the real host half (the back end, when it loads, registers its
  // own over it).
  register_device_op(detail::kRandomRowsOp, [](const OpContext& ctx, std::span<const Value> args) {
    return detail::random_rows_on_device(ctx, args, stand_in_kernel);
  });
  tessera_test::ScopedFakeDevice gpu;
  for (const auto& [what, make] : row_makers()) {
    const auto want = values(make(ChunkSpec{-1}), "sync");
    for (const ChunkSpec& c : kRowChunkings) {
      for (const char* executor : {"sync", "threads"}) {
        SCOPED_TRACE(what + " chunks " + std::to_string(c[0]) + " on " + executor);
        const Array dev = make(c).to_device();
        const int launches = stand_in_launches;
        EXPECT_EQ(values(dev, executor), want);
        EXPECT_EQ(stand_in_launches - launches, dev.num_chunks());
        // Kept on the device, the result is device memory.
        const Block on_gpu = dev.compute(local_executor(executor), Target::Device);
        EXPECT_EQ(on_gpu.memory_kind(), MemoryKind::Device);
        EXPECT_EQ(to_host(on_gpu).to_doubles(), make(c).compute().to_doubles());
      }
    }
  }
  // No rows, and one row (a 0-d size: no axes to place it by).
  const Array none = random::Generator(5).multinomial(3, {0.5, 0.5}, {0, 4}, {-1}).to_device();
  EXPECT_EQ(none.compute().shape(), (Shape{0, 4, 2}));
  const Array one = random::Generator(5).multivariate_hypergeometric({3, 4}, 5, {}, {}, "count");
  EXPECT_EQ(values(one.to_device()), values(one));
  // Element-wise work on device rows reads them from the device tasks.
  const Array rows = random::Generator(3).multinomial(9, {0.25, 0.75}, {30}, {7});
  const int launches = stand_in_launches;
  EXPECT_EQ((rows.to_device() * 2).sum().compute().item(), (rows * 2).sum().compute().item());
  EXPECT_EQ(stand_in_launches - launches, 5);
}

}  // namespace
