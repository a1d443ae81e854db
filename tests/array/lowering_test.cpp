// Lowering: blockwise chains fuse into one task per chunk, the first reduction step fuses into
// it, and the seed expression never materialises its random input.
#include <algorithm>
#include <cmath>
#include <map>

#include "array/program.hpp"
#include "array_test_util.hpp"
#include "tessera/ops/serialize.hpp"

using namespace tessera_test;

namespace {

constexpr const char* kBlockwise = "tessera.array.blockwise";
constexpr const char* kCombine = "tessera.array.reduce_combine";

std::map<std::string, std::size_t> count_ops(const Graph& g) {
  std::map<std::string, std::size_t> n;
  for (const auto& [k, t] : g.tasks()) ++n[t.op];
  return n;
}

std::size_t expected_combines(std::size_t partials, std::size_t split) {
  std::size_t total = 0;
  while (partials > split) {
    partials = (partials + split - 1) / split;
    total += partials;
  }
  return total + 1;  // the final combine
}

TEST(ArrayLowering, SeedExpressionIsOneTaskPerChunkPlusCombines) {
  for (const auto& [shape, chunk] : {std::pair{Shape{20, 20}, ChunkSpec{5, 5}}, std::pair{Shape{40, 30}, ChunkSpec{8, 7}},
                                     std::pair{Shape{12, 12}, ChunkSpec{12, 12}}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Array x = random::normal(0, 10.0, 1.0, shape, chunk);
    Array y = (x + 1)[{step(2), step(2)}].sum();
    std::vector<Key> keys;
    Graph g = y.to_graph(&keys);
    ASSERT_EQ(keys.size(), 1u);
    const auto ops = count_ops(g);
    const std::size_t nchunks = static_cast<std::size_t>(x.num_chunks());
    EXPECT_EQ(ops.count(kBlockwise) ? ops.at(kBlockwise) : 0, nchunks);
    EXPECT_EQ(ops.count(kCombine) ? ops.at(kCombine) : 0, expected_combines(nchunks, 8));
    // Nothing else: no task materialises x or x + 1 or the slice.
    EXPECT_EQ(g.size(), nchunks + expected_combines(nchunks, 8));
    for (const auto& [k, t] : g.tasks()) {
      EXPECT_TRUE(t.op == kBlockwise || t.op == kCombine) << t.op;
      // The fused blockwise tasks read no other task: each draws its own elements.
      if (t.op == kBlockwise) { EXPECT_TRUE(t.dependencies().empty()) << k; }
    }
    // And the value is right.
    const Ref xs = ref_from_block(compute_sync(x));
    double want = 0;
    for (std::int64_t i = 0; i < shape[0]; i += 2)
      for (std::int64_t j = 0; j < shape[1]; j += 2) want += xs.at({i, j}) + 1;
    for (const auto& e : executors()) EXPECT_NEAR(y.compute(*e.ex).item(), want, 1e-10 * std::fabs(want));
  }
}

TEST(ArrayLowering, SplitEveryShapesTheCombineTree) {
  Array x = random::uniform(1, 0, 1, {16, 16}, {2, 2});  // 64 chunks
  for (int split : {2, 4, 8, 64}) {
    Graph g = x.sum({.split_every = split}).to_graph(nullptr);
    const auto ops = count_ops(g);
    EXPECT_EQ(ops.at(kBlockwise), 64u);
    EXPECT_EQ(ops.at(kCombine), expected_combines(64, split)) << split;
    EXPECT_EQ(g.size(), 64u + expected_combines(64, split));
  }
  // Reducing one axis: one tree per output chunk.
  Graph g = x.sum({.axes = {0}}).to_graph(nullptr);
  EXPECT_EQ(count_ops(g).at(kCombine), 8u);
}

TEST(ArrayLowering, ElementwiseChainsFuseIntoOneTaskPerChunk) {
  Array a = random::normal(1, 0, 1, {9, 10}, {3, 4});
  Array b = random::uniform(2, 0, 1, {9, 10}, {3, 4});
  Array y = sqrt(abs(a * b + 1.0)).T()[{step(-1)}] - b.T();
  std::vector<Key> keys;
  Graph g = y.to_graph(&keys);
  EXPECT_EQ(keys.size(), static_cast<std::size_t>(y.num_chunks()));
  EXPECT_EQ(g.size(), keys.size());
  for (const auto& [k, t] : g.tasks()) EXPECT_EQ(t.op, kBlockwise);
  // Data inputs: one identity task per source chunk plus one blockwise task per output chunk.
  const Ref d = sample(DType::Float64, {6, 6});
  Array z = (to_array(d, {3}) * 2.0 + 1.0)[{slice(1, 5)}];
  Graph gz = z.to_graph(&keys);
  const auto ops = count_ops(gz);
  EXPECT_EQ(ops.at(kBlockwise), static_cast<std::size_t>(z.num_chunks()));
  EXPECT_EQ(ops.at("tessera.identity"), 4u);
  EXPECT_EQ(gz.size(), 4u + static_cast<std::size_t>(z.num_chunks()));
}

TEST(ArrayLowering, SharedSubexpressionsLowerOnce) {
  const Ref d = sample(DType::Float64, {8});
  Array x = to_array(d, {4});
  Array s = x.sum();
  Array y = (x - s) / s;  // s used twice
  Graph g = y.to_graph(nullptr);
  const auto ops = count_ops(g);
  EXPECT_EQ(ops.at(kCombine), 1u);
  EXPECT_EQ(ops.at("tessera.identity"), 2u);
  double tot = 0;
  for (double v : d.v) tot += v;
  EXPECT_TRUE(block_matches(compute_sync(y), make_ref(DType::Float64, {8}, [&](auto& i) { return (d.at(i) - tot) / tot; })));
}

TEST(ArrayLowering, ANodeUsedSeveralTimesInAChunkIsComputedOnce) {
  // exp(-x*x) / (1 + abs(x)): x is drawn once per chunk program, not three times; x and its
  // transpose are read through different maps and stay two draws.
  Array x = random::uniform(3, -1, 1, {8, 8}, {4, 4});
  Array y = exp(-(x * x)) / (abs(x) + 1.0);
  auto generators = [](const Array& a) {
    std::vector<Key> keys;
    Graph g = a.to_graph(&keys);
    const auto p = from_value<tessera::detail::Program>(std::get<Value>(g.at(keys.at(0)).args.at(0)));
    int n = 0;
    for (const auto& in : p.instrs) n += in.code == tessera::detail::InstrCode::Generator;
    return n;
  };
  EXPECT_EQ(generators(y), 1);
  EXPECT_EQ(generators(x + x.T()), 2);
  // Same values as with the draw repeated: elementwise against the materialised x (within the
  // ulps between the kernels' vectorised exp, SLEEF's, and libm's).
  const Block xb = x.compute(local_executor("sync"));
  const Block yb = y.compute(local_executor("sync"));
  const auto xv = xb.to_doubles(), yv = yb.to_doubles();
  for (std::size_t i = 0; i < xv.size(); ++i)
    EXPECT_DOUBLE_EQ(yv[i], std::exp(-(xv[i] * xv[i])) / (std::abs(xv[i]) + 1.0));
}

TEST(ArrayLowering, AnExpensiveNodeReadThroughSeveralMapsIsComputedOnce) {
  // The cost model (shared_nodes.cpp): exp(u) read as itself and transposed is cheaper computed
  // once and read twice than evaluated twice per element; a plain uniform is cheaper drawn
  // twice; maps that read different elements (two halves) recompute nothing.
  Array u = random::uniform(5, -1, 1, {8, 8}, {4, 4});
  Array e = exp(u);
  auto program_inputs = [](const Array& a) {
    std::vector<Key> keys;
    Graph g = a.to_graph(&keys);
    const auto p = from_value<tessera::detail::Program>(std::get<Value>(g.at(keys.at(0)).args.at(0)));
    int inputs = 0, generators = 0;
    for (const auto& in : p.instrs) {
      inputs += in.code == tessera::detail::InstrCode::Input;
      generators += in.code == tessera::detail::InstrCode::Generator;
    }
    return std::pair{inputs, generators};
  };
  EXPECT_EQ(program_inputs(e + e.T()), (std::pair{2, 0}));  // e's chunks (0,0) as itself and transposed
  EXPECT_EQ(program_inputs(u + u.T()), (std::pair{0, 2}));
  Array halves = e[{all(), slice(0, 4)}] + e[{all(), slice(4, 8)}];
  EXPECT_EQ(program_inputs(halves), (std::pair{0, 2}));
  // The shared form gives the values of the fused one, also with a reduction fused on top.
  const Block eb = e.compute(local_executor("sync"));
  const auto ev = eb.to_doubles();
  const auto got = (e + e.T()).compute(local_executor("threads")).to_doubles();
  double total = 0;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(got[i * 8 + j], ev[i * 8 + j] + ev[j * 8 + i]);
      total += ev[i * 8 + j] + ev[j * 8 + i];
    }
  EXPECT_NEAR((e + e.T()).sum().compute().item(), total, 1e-12 * std::abs(total));
}

TEST(ArrayLowering, PowerOfTwoIsASquare) {
  // x ** 2 (a float or an integer 2) runs as x * x: no pow per element, the same values.
  auto ops_of = [](const Array& a) {
    std::vector<Key> keys;
    Graph g = a.to_graph(&keys);
    const auto p = from_value<tessera::detail::Program>(std::get<Value>(g.at(keys.at(0)).args.at(0)));
    std::vector<tessera::detail::EwOp> ops;
    for (const auto& in : p.instrs)
      if (in.code == tessera::detail::InstrCode::Op) ops.push_back(static_cast<tessera::detail::EwOp>(in.sub));
    return ops;
  };
  const std::vector<double> edge = {0.0, -0.0, 1.5, -3.25, 1e200, -1e-200, INFINITY, -INFINITY, NAN, 7.0};
  Array x = from_block(Block::from_values(edge, {10}), {5});
  for (const Array& y : {power(x, 2.0), power(x, 2)}) {
    const auto ops = ops_of(y);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), tessera::detail::EwOp::Pow), 0);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), tessera::detail::EwOp::Square), 1);
    const auto got = y.compute(local_executor("sync")).to_doubles();
    for (std::size_t i = 0; i < edge.size(); ++i) {
      const double want = std::pow(edge[i], 2.0);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i]));
      else EXPECT_EQ(got[i], want) << edge[i];
    }
  }
  // An integer base keeps its dtype and wraps as NumPy's power does; 3 stays a pow.
  Array i = from_block(Block::from_values(std::vector<std::int32_t>{-3, 46341, 7}, {3}), {3});
  const auto sq = power(i, 2).compute(local_executor("sync"));
  EXPECT_EQ(sq.dtype(), DType::Int32);
  EXPECT_EQ(sq.values<std::int32_t>()[0], 9);
  EXPECT_EQ(sq.values<std::int32_t>()[1], static_cast<std::int32_t>(46341u * 46341u));
  const auto cube = ops_of(power(x, 3.0));
  EXPECT_EQ(std::count(cube.begin(), cube.end(), tessera::detail::EwOp::Pow), 1);
}

}  // namespace
