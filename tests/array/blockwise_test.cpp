// blockwise: plain (map_blocks), transposed output letters, outer products, contractions with
// and without concatenation, new axes, and the checks made when it is built.
#include "array_test_util.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera_test;

namespace {

Block bw_twice(Block b) {
  Block out(DType::Float64, b.shape());
  const auto v = b.to_doubles();
  for (std::size_t i = 0; i < v.size(); ++i) out.data<double>()[i] = 2 * v[i];
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.blockwise.twice", bw_twice);

Block bw_transpose(Block b) {
  const auto n = b.shape()[0], m = b.shape()[1];
  Block out(DType::Float64, {m, n});
  const auto v = b.to_doubles();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) out.data<double>()[j * n + i] = v[i * m + j];
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.blockwise.transpose", bw_transpose);

Block bw_outer(Block u, Block v) {
  Block out(DType::Float64, {u.size(), v.size()});
  const auto a = u.to_doubles(), b = v.to_doubles();
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < b.size(); ++j) out.data<double>()[i * b.size() + j] = a[i] * b[j];
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.blockwise.outer", bw_outer);

Block bw_repeat3(Block u) {
  Block out(DType::Float64, {u.size(), 3});
  const auto a = u.to_doubles();
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int j = 0; j < 3; ++j) out.data<double>()[i * 3 + j] = a[i] + j;
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.blockwise.repeat3", bw_repeat3);

/** Sum over k of a_k @ b_k for the blocks given as a_0..a_{n-1}, b_0..b_{n-1}. */
Value bw_dot_blocks(const OpContext&, std::span<const Value> args) {
  const std::size_t n = args.size() / 2;
  const Block& a0 = args[0].block();
  const Block& b0 = args[n].block();
  Block out(DType::Float64, {a0.shape()[0], b0.shape()[1]});
  for (std::int64_t i = 0; i < out.size(); ++i) out.data<double>()[i] = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const Block& a = args[k].block();
    const Block& b = args[n + k].block();
    const auto av = a.to_doubles(), bv = b.to_doubles();
    const auto rows = a.shape()[0], inner = a.shape()[1], cols = b.shape()[1];
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t p = 0; p < inner; ++p)
        for (std::int64_t j = 0; j < cols; ++j) out.data<double>()[i * cols + j] += av[i * inner + p] * bv[p * cols + j];
  }
  return Value(std::move(out));
}
const bool blockwise_test_registered = [] {
  register_op("tessera_test.blockwise.dot_blocks", bw_dot_blocks);
  return true;
}();

Ref matmul_ref(const Ref& a, const Ref& b) {
  return make_ref(DType::Float64, {a.shape[0], b.shape[1]}, [&](const std::vector<std::int64_t>& i) {
    double s = 0;
    for (std::int64_t k = 0; k < a.shape[1]; ++k) s += a.at({i[0], k}) * b.at({k, i[1]});
    return s;
  });
}

TEST(Blockwise, SameIndexEverywhereIsMapBlocks) {
  const Ref x = sample(DType::Float64, {5, 4}, 1);
  check_expr({x}, [](auto& a) { return blockwise("tessera_test.blockwise.twice", "ij", {{a[0], "ij"}}, DType::Float64); },
             make_ref(DType::Float64, {5, 4}, [&](auto& i) { return 2 * x.at(i); }));
}

TEST(Blockwise, TransposedOutputLetters) {
  const Ref x = sample(DType::Float64, {5, 4}, 2);
  check_expr({x}, [](auto& a) { return blockwise("tessera_test.blockwise.transpose", "ji", {{a[0], "ij"}}, DType::Float64); },
             make_ref(DType::Float64, {4, 5}, [&](auto& i) { return x.at({i[1], i[0]}); }));
}

TEST(Blockwise, OuterProductReusesBlocksAlongMissingLetters) {
  const Ref u = sample(DType::Float64, {5}, 3), v = sample(DType::Float64, {4}, 4);
  check_expr({u, v}, [](auto& a) {
    return blockwise("tessera_test.blockwise.outer", "ij", {{a[0], "i"}, {a[1], "j"}}, DType::Float64);
  },
             make_ref(DType::Float64, {5, 4}, [&](auto& i) { return u.v[i[0]] * v.v[i[1]]; }));
}

TEST(Blockwise, ContractionConcatenatedOrAsSeparateBlocks) {
  const Ref a = sample(DType::Float64, {5, 6}, 5), b = sample(DType::Float64, {6, 3}, 6);
  const Ref want = matmul_ref(a, b);
  // concatenate: the contracted axis is one chunk, so a block product is the whole product.
  check_expr({a, b}, [](auto& x) {
    return blockwise("tessera_test.blockwise.dot_blocks", "ik", {{x[0], "ij"}, {x[1], "jk"}}, DType::Float64);
  },
             want, {1e-12, 1e-12});
  // Not concatenated: every block along j, a's then b's, chunked alike along j.
  check_expr({a, b}, [](auto& x) {
    return blockwise("tessera_test.blockwise.dot_blocks", "ik", {{x[0], "ij"}, {x[1], "jk"}}, DType::Float64, false);
  },
             want, {1e-12, 1e-12});
  Array split = blockwise("tessera_test.blockwise.dot_blocks", "ik", {{to_array(a, {2}), "ij"}, {to_array(b, {3}), "jk"}},
                          DType::Float64, false);
  std::vector<Key> keys;
  const Graph g = split.to_graph(&keys);
  // j refined to chunks 2,1,1,2 (a by 2, b by 3): four blocks of each input per call.
  EXPECT_EQ(g.at(keys[0]).args.size(), 8u);
}

TEST(Blockwise, NewAxes) {
  const Ref u = sample(DType::Float64, {5}, 7);
  check_expr({u}, [](auto& a) {
    return blockwise("tessera_test.blockwise.repeat3", "ij", {{a[0], "i"}}, DType::Float64, true, {{'j', 3}});
  },
             make_ref(DType::Float64, {5, 3}, [&](auto& i) { return u.v[i[0]] + static_cast<double>(i[1]); }));
}

TEST(Blockwise, ChecksWhenBuilt) {
  Array x = zeros({4, 3}, {2, 2});
  EXPECT_THROW(blockwise("tessera_test.blockwise.no_such_op", "ij", {{x, "ij"}}, DType::Float64), UnknownOperationError);
  EXPECT_THROW(blockwise("tessera_test.blockwise.twice", "ij", {{x, "i"}}, DType::Float64), ShapeError);
  EXPECT_THROW(blockwise("tessera_test.blockwise.twice", "ii", {{x, "ij"}}, DType::Float64), ShapeError);
  EXPECT_THROW(blockwise("tessera_test.blockwise.twice", "ik", {{x, "ij"}}, DType::Float64), ShapeError);
  EXPECT_THROW(blockwise("tessera_test.blockwise.outer", "ij", {{x, "ij"}, {x, "jk"}}, DType::Float64), ShapeError);
  EXPECT_THROW(blockwise("tessera_test.blockwise.twice", "ij", {{x[x > 0.0], "i"}}, DType::Float64), ShapeError);
}

}  // namespace
