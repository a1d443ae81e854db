// Random arrays: determinism across chunkings and executors, seeds and RandomState streams,
// ranges, and rough distribution checks.
#include <set>

#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

using Gen = std::function<Array(const ChunkSpec&)>;

struct NamedGen {
  const char* name;
  Gen gen;
  Tol tol;
};

std::vector<NamedGen> generators(std::uint64_t seed, const Shape& s) {
  return {
      {"normal", [=](const ChunkSpec& c) { return random::normal(seed, 1.5, 2.0, s, c); }, kRandomTol},
      {"uniform", [=](const ChunkSpec& c) { return random::uniform(seed, -3.0, 5.0, s, c); }, kRandomTol},
      {"integers", [=](const ChunkSpec& c) { return random::integers(seed, -50, 1000, s, c); }, {0, 0}},
      {"integers32", [=](const ChunkSpec& c) { return random::integers(seed, 0, 7, s, c, DType::Int32); }, {0, 0}},
  };
}

TEST(ArrayRandom, SameSeedSameValuesForAnyChunkingAndExecutor) {
  for (const Shape& s : {Shape{23}, Shape{7, 9}, Shape{3, 5, 4}}) {
    for (const auto& g : generators(1234, s)) {
      SCOPED_TRACE(std::string(g.name) + " " + shape_to_string(s));
      const Ref want = ref_from_block(compute_sync(g.gen({-1})));
      check_chunked(g.gen, want, g.tol);
      // Irregular per-axis chunks too.
      ChunkSpec odd(s.size());
      for (std::size_t a = 0; a < s.size(); ++a) odd[a] = static_cast<std::int64_t>(a) + 2;
      EXPECT_TRUE(block_matches(g.gen(odd).compute(local_executor("threads")), want, g.tol.rtol, g.tol.atol));
    }
  }
}

TEST(ArrayRandom, ElementDependsOnlyOnTheFlatIndex) {
  // The same seed and a different shape of the same size give the same flat sequence.
  const auto a = compute_sync(random::normal(5, 0, 1, {24}, {5})).to_doubles();
  const auto b = compute_sync(random::normal(5, 0, 1, {4, 6}, {3, 4})).to_doubles();
  const auto c = compute_sync(random::normal(5, 0, 1, {2, 3, 4}, {1, 2, 3})).to_doubles();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], kRandomTol.rtol * std::fabs(a[i]) + kRandomTol.atol) << i;
    EXPECT_NEAR(a[i], c[i], kRandomTol.rtol * std::fabs(a[i]) + kRandomTol.atol) << i;
  }
}

TEST(ArrayRandom, DifferentSeedsDiffer) {
  for (const auto& [g1, g2] : {std::pair{generators(1, {200}), generators(2, {200})}}) {
    for (std::size_t k = 0; k < g1.size(); ++k) {
      SCOPED_TRACE(g1[k].name);
      const auto a = compute_sync(g1[k].gen({50})).to_doubles();
      const auto b = compute_sync(g2[k].gen({50})).to_doubles();
      std::size_t same = 0;
      for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
      // integers in [0, 7) agree by chance about 1/7 of the time; continuous ones never.
      EXPECT_LT(same, a.size() / 3) << same << " equal elements";
    }
  }
  // Seeds that differ in high bits too.
  const auto a = compute_sync(random::uniform(0, 0, 1, {100}, {-1})).to_doubles();
  const auto b = compute_sync(random::uniform(std::uint64_t{1} << 40, 0, 1, {100}, {-1})).to_doubles();
  EXPECT_NE(a, b);
}

TEST(ArrayRandom, RandomStateSuccessiveCallsDiffer) {
  random::RandomState rs(99);
  Array x1 = rs.normal(0, 1, {64}, {16});
  Array x2 = rs.normal(0, 1, {64}, {16});
  Array u1 = rs.uniform(0, 1, {64}, {16});
  Array u2 = rs.uniform(0, 1, {64}, {16});
  Array i1 = rs.integers(0, 1000000, {64}, {16});
  Array i2 = rs.integers(0, 1000000, {64}, {16});
  EXPECT_NE(compute_sync(x1).to_doubles(), compute_sync(x2).to_doubles());
  EXPECT_NE(compute_sync(u1).to_doubles(), compute_sync(u2).to_doubles());
  EXPECT_NE(compute_sync(i1).to_doubles(), compute_sync(i2).to_doubles());
  // The same Array computes the same values every time.
  EXPECT_EQ(compute_sync(x1).to_doubles(), x1.compute(local_executor("threads")).to_doubles());
  // A second RandomState with the same seed replays the sequence, whatever the chunks.
  random::RandomState again(99);
  Array y1 = again.normal(0, 1, {64}, {7});
  Array y2 = again.normal(0, 1, {64}, {-1});
  EXPECT_TRUE(block_matches(compute_sync(y1), ref_from_block(compute_sync(x1)), kRandomTol.rtol, kRandomTol.atol));
  EXPECT_TRUE(block_matches(compute_sync(y2), ref_from_block(compute_sync(x2)), kRandomTol.rtol, kRandomTol.atol));
  // ... and a different seed does not.
  random::RandomState other(100);
  EXPECT_NE(compute_sync(other.normal(0, 1, {64}, {16})).to_doubles(), compute_sync(x1).to_doubles());
  // Two independent streams combined in one expression stay consistent across chunkings.
  const Ref want = ref_from_block(compute_sync(x1 - x2));
  random::RandomState r3(99);
  Array z1 = r3.normal(0, 1, {64}, {5});
  Array z2 = r3.normal(0, 1, {64}, {9});
  EXPECT_TRUE(block_matches(compute_sync(z1 - z2), want, kRandomTol.rtol, 2 * kRandomTol.atol));
}

TEST(ArrayRandom, UniformInHalfOpenRange) {
  for (auto [lo, hi] : {std::pair{0.0, 1.0}, std::pair{-2.5, 7.25}, std::pair{1e6, 1e6 + 1e-3}}) {
    const auto v = random::uniform(8, lo, hi, {4000}, {999}).compute().to_doubles();
    double mn = hi, mx = lo;
    for (double x : v) {
      ASSERT_GE(x, lo);
      ASSERT_LT(x, hi);
      mn = std::min(mn, x);
      mx = std::max(mx, x);
    }
    // The range is covered: min and max near the ends.
    EXPECT_LT(mn, lo + (hi - lo) * 0.01);
    EXPECT_GT(mx, hi - (hi - lo) * 0.01);
  }
}

TEST(ArrayRandom, IntegersInHalfOpenRange) {
  struct Case { std::int64_t lo, hi; DType t; };
  for (const Case& c : {Case{0, 2, DType::Int64}, Case{-5, 5, DType::Int64}, Case{-3, 4, DType::Int32},
                        Case{100, 101, DType::Int64}, Case{0, std::int64_t{1} << 40, DType::Int64},
                        Case{-(std::int64_t{1} << 31), std::int64_t{1} << 31, DType::Int32}}) {
    SCOPED_TRACE(::testing::Message() << c.lo << ".." << c.hi);
    Array a = random::integers(17, c.lo, c.hi, {50, 40}, {13, 11}, c.t);
    EXPECT_EQ(a.dtype(), c.t);
    Block b = a.compute();
    EXPECT_EQ(b.dtype(), c.t);
    std::set<double> seen;
    for (double x : b.to_doubles()) {
      ASSERT_GE(x, static_cast<double>(c.lo));
      ASSERT_LT(x, static_cast<double>(c.hi));
      ASSERT_EQ(x, std::floor(x));
      seen.insert(x);
    }
    // Small ranges: every value appears in 2000 draws.
    if (c.hi - c.lo <= 10) EXPECT_EQ(static_cast<std::int64_t>(seen.size()), c.hi - c.lo);
    else EXPECT_GT(seen.size(), 1900u);  // wide ranges: nearly all distinct
  }
  EXPECT_THROW(random::integers(1, 5, 5, {3}, {1}), Error);
  EXPECT_THROW(random::integers(1, 0, 5, {3}, {1}, DType::Float64), DTypeError);
}

TEST(ArrayRandom, NormalMeanAndStdOnAMillionSamples) {
  Array x = random::normal(2024, 3.0, 2.0, {1000, 1000}, {250, 250});
  const double mean = x.mean().compute().item();
  const double sd = x.std().compute().item();
  // Standard error of the mean: 2 / 1000 = 0.002; of the std: about 2 / sqrt(2e6) = 0.0014.
  EXPECT_NEAR(mean, 3.0, 0.01);
  EXPECT_NEAR(sd, 2.0, 0.01);
  // About 68.3% within one standard deviation, 95.4% within two.
  const double in1 = (abs(x - 3.0) < 2.0).mean().compute().item();
  const double in2 = (abs(x - 3.0) < 4.0).mean().compute().item();
  EXPECT_NEAR(in1, 0.6827, 0.003);
  EXPECT_NEAR(in2, 0.9545, 0.002);
  // Symmetric: as many above the mean as below.
  EXPECT_NEAR((x > 3.0).mean().compute().item(), 0.5, 0.003);
  // A zero standard deviation gives the mean exactly.
  EXPECT_TRUE(block_matches(compute_sync(random::normal(1, 4.5, 0.0, {10}, {3})),
                            make_ref(DType::Float64, {10}, [](auto&) { return 4.5; }), 0, 0));
  EXPECT_THROW(random::normal(1, 0, -1, {3}, {1}), Error);
}

TEST(ArrayRandom, UniformAndIntegerMoments) {
  Array u = random::uniform(77, 2.0, 6.0, {1000, 1000}, {500, 300});
  EXPECT_NEAR(u.mean().compute().item(), 4.0, 0.01);
  EXPECT_NEAR(u.var().compute().item(), 16.0 / 12.0, 0.01);
  Array k = random::integers(78, 0, 10, {1000000}, {250000});
  EXPECT_NEAR(k.mean().compute().item(), 4.5, 0.01);
  // Each value has frequency about 1/10.
  for (int v : {0, 9}) EXPECT_NEAR((k == double(v)).mean().compute().item(), 0.1, 0.003) << v;
}

}  // namespace
