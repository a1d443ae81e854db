// Structural operations: matmul/dot, rechunk, concatenate, stack, reshape, map_blocks.
#include "array_test_util.hpp"
#include "tessera/ops/function.hpp"

using namespace tessera_test;

namespace {

Ref matmul_ref(const Ref& a, const Ref& b, DType t) {
  const bool av = a.shape.size() == 1, bv = b.shape.size() == 1;
  const std::int64_t m = av ? 1 : a.shape[0], k = av ? a.shape[0] : a.shape[1];
  const std::int64_t n = bv ? 1 : b.shape[1];
  Shape s;
  if (!av) s.push_back(m);
  if (!bv) s.push_back(n);
  Ref r{t, s, {}};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p) acc += (av ? a.v[p] : a.v[i * k + p]) * (bv ? b.v[p] : b.v[p * n + j]);
      r.v.push_back(t == DType::Float32 ? static_cast<float>(acc) : acc);
    }
  return r;
}

TEST(ArrayStructural, MatmulMatrixMatrixWithMismatchedChunkings) {
  const Ref a = sample(DType::Float64, {5, 7}, 1);
  const Ref b = sample(DType::Float64, {7, 4}, 2);
  // check_expr chunks a and b differently in every configuration, so the contracted axis needs
  // rechunking on one side.
  check_expr({a, b}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(a, b, DType::Float64));
  check_expr({a, b}, [](auto& x) { return dot(x[0], x[1]); }, matmul_ref(a, b, DType::Float64));
  // Explicit per-axis chunkings that do not line up.
  Array A = to_array(a, {2, 3}), B = to_array(b, {4, 3});
  Array C = matmul(A, B);
  EXPECT_EQ(C.shape(), (Shape{5, 4}));
  EXPECT_EQ(C.chunks(), (Chunks{{2, 2, 1}, {3, 1}}));
  for (const auto& e : executors()) EXPECT_TRUE(block_matches(C.compute(*e.ex), matmul_ref(a, b, DType::Float64)));
  // Transposed operands and a fused input expression.
  const Ref at = make_ref(DType::Float64, {7, 5}, [&](auto& i) { return a.at({i[1], i[0]}); });
  check_expr({at, b}, [](auto& x) { return matmul((x[0] * 1.0).T(), x[1]); }, matmul_ref(a, b, DType::Float64));
}

TEST(ArrayStructural, MatmulVectors) {
  const Ref m = sample(DType::Float64, {4, 6}, 1);
  const Ref v = sample(DType::Float64, {6}, 2);
  const Ref w = sample(DType::Float64, {4}, 3);
  check_expr({m, v}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(m, v, DType::Float64));
  check_expr({w, m}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(w, m, DType::Float64));
  const Ref want = matmul_ref(v, v, DType::Float64);
  ASSERT_EQ(want.shape, Shape{});
  check_expr({v, v}, [](auto& x) { return dot(x[0], x[1]); }, want);
  for (const auto& e : executors())
    EXPECT_NEAR(dot(to_array(v, {4}), to_array(v, {5})).compute(*e.ex).item(), want.v[0], 1e-12);
}

TEST(ArrayStructural, MatmulDTypes) {
  const Ref a32 = sample(DType::Float32, {3, 5}, 1), b32 = sample(DType::Float32, {5, 4}, 2);
  check_expr({a32, b32}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(a32, b32, DType::Float32), {1e-5, 1e-5});
  const Ref ai = sample(DType::Int64, {3, 5}, 1), bi = sample(DType::Int64, {5, 4}, 2);
  check_expr({ai, bi}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(ai, bi, DType::Int64));
  const Ref a3 = sample(DType::Int32, {3, 5}, 3);
  check_expr({a3, bi}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(a3, bi, DType::Int64));
  // Mixed int/float promotes to float64.
  const Ref bf = sample(DType::Float64, {5, 4}, 4);
  check_expr({ai, bf}, [](auto& x) { return matmul(x[0], x[1]); }, matmul_ref(ai, bf, DType::Float64));
  // bool with int64 is int64; bool with bool is bool: any(a_ik && b_kj) (numpy 2.4.6).
  const Ref ab = sample(DType::Bool, {2, 2});
  EXPECT_EQ(matmul(to_array(ab, {1}), to_array(ai, {1})[{slice(0, 2), slice(0, 2)}]).dtype(), DType::Int64);
  const Ref p = ref_of(DType::Bool, {2, 3}, {1, 0, 0, 0, 0, 1});
  const Ref q = ref_of(DType::Bool, {3, 2}, {1, 0, 1, 0, 1, 1});
  // numpy: [[T, F], [T, T]] @ ... = [[1, 0], [1, 1]] as bool
  check_expr({p, q}, [](auto& x) { return matmul(x[0], x[1]); }, ref_of(DType::Bool, {2, 2}, {1, 0, 1, 1}));
}

TEST(ArrayStructural, MatmulBatchedBroadcastsTheBatchAxes) {
  // numpy 2.4.6: np.arange(24).reshape(2, 3, 4) @ np.arange(20).reshape(4, 5)
  const Ref a = make_ref(DType::Int64, {2, 3, 4}, [](auto& i) { return static_cast<double>(i[0] * 12 + i[1] * 4 + i[2]); });
  const Ref b = make_ref(DType::Int64, {4, 5}, [](auto& i) { return static_cast<double>(i[0] * 5 + i[1]); });
  const Ref want = ref_of(DType::Int64, {2, 3, 5},
                          {70, 76, 82, 88, 94, 190, 212, 234, 256, 278, 310, 348, 386, 424, 462,
                           430, 484, 538, 592, 646, 550, 620, 690, 760, 830, 670, 756, 842, 928, 1014});
  check_expr({a, b}, [](auto& x) { return matmul(x[0], x[1]); }, want);
  // Batch axes (2, 1) and (3,) broadcast to (2, 3); each product checked against the 2-d one.
  const Ref c = sample(DType::Float64, {2, 1, 3, 4}, 1), d = sample(DType::Float64, {3, 4, 2}, 2);
  const Ref cd = make_ref(DType::Float64, {2, 3, 3, 2}, [&](auto& i) {
    double acc = 0;
    for (std::int64_t k = 0; k < 4; ++k) acc += c.at({i[0], 0, i[2], k}) * d.at({i[1], k, i[3]});
    return acc;
  });
  check_expr({c, d}, [](auto& x) { return matmul(x[0], x[1]); }, cd);
  // 1-d operands: a vector on the left of a stack, and on the right.
  const Ref v = sample(DType::Float64, {3}, 3), w = sample(DType::Float64, {4}, 4);
  const Ref vd = make_ref(DType::Float64, {2, 1, 4}, [&](auto& i) {
    double acc = 0;
    for (std::int64_t k = 0; k < 3; ++k) acc += v.v[k] * c.at({i[0], 0, k, i[2]});
    return acc;
  });
  check_expr({v, c}, [](auto& x) { return matmul(x[0], x[1]); }, vd);
  const Ref cw = make_ref(DType::Float64, {2, 1, 3}, [&](auto& i) {
    double acc = 0;
    for (std::int64_t k = 0; k < 4; ++k) acc += c.at({i[0], 0, i[2], k}) * w.v[k];
    return acc;
  });
  check_expr({c, w}, [](auto& x) { return matmul(x[0], x[1]); }, cw);
  EXPECT_EQ(matmul(ones({0, 3, 4}, {2}), ones({4, 5}, {2})).shape(), (Shape{0, 3, 5}));
}

TEST(ArrayStructural, Rechunk) {
  const Ref a = sample(DType::Float64, {7, 9});
  for (const ChunkSpec& target : {ChunkSpec{-1}, ChunkSpec{2}, ChunkSpec{4, 1}, ChunkSpec{1, 5}, ChunkSpec{7, 9}}) {
    SCOPED_TRACE(shape_to_string(target));
    check_expr({a}, [&](auto& x) { return x[0].rechunk(target); }, a, {0, 0});
    Array r = to_array(a, {3}).rechunk(target);
    ChunkSpec full = target.size() == 1 ? ChunkSpec{target[0], target[0]} : target;
    EXPECT_EQ(r.chunks(), regular_chunks({7, 9}, full));
  }
  // Rechunk of a computed expression, then more work.
  check_expr({a}, [](auto& x) { return (x[0] + 1.0).rechunk({5, 2})[{step(2)}] * 2.0; },
             make_ref(DType::Float64, {4, 9}, [&](auto& i) { return (a.at({i[0] * 2, i[1]}) + 1) * 2; }));
  // Rechunk of random keeps the values.
  const Ref r = ref_from_block(compute_sync(random::normal(3, 0, 1, {8, 8}, {-1})));
  check_chunked([](const ChunkSpec& c) { return random::normal(3, 0, 1, {8, 8}, c).rechunk({3, 5}); }, r, kRandomTol);
  // A persisted array rechunked across its chunk borders.
  Array p = to_array(a, {2}).persist(local_executor("sync"));
  EXPECT_TRUE(block_matches(compute_sync(p.rechunk({3, 4})), a, 0, 0));
  EXPECT_TRUE(block_matches(compute_sync(p.rechunk({3, 4})[{step(-1), slice(2, 8, 3)}]),
                            make_ref(DType::Float64, {7, 2}, [&](auto& i) { return a.at({6 - i[0], 2 + 3 * i[1]}); }), 0, 0));
}

TEST(ArrayStructural, ReductionOfARechunkedExpressionReadsNoRechunkedPieces) {
  // sum(axis=1) of a random array rechunked to taller, narrower chunks: each partial evaluates
  // the generator over its own chunk, so the graph holds partials and combines, no rechunk tasks.
  const Array x = random::uniform(9, 0.0, 1.0, {40, 40}, {10, 10});
  const Array r = (x * 2.0).rechunk({20, 5});
  const Array s = r.sum({.axes = {1}});
  std::vector<Key> keys;
  const Graph g = s.to_graph(&keys);
  std::size_t rechunk_tasks = 0;
  for (const auto& [key, task] : g.tasks())
    if (key.find("rechunk") != std::string::npos) ++rechunk_tasks;
  EXPECT_EQ(rechunk_tasks, 0u);
  const auto w = x.compute().to_doubles();
  const auto got = s.compute(local_executor("threads")).to_doubles();
  ASSERT_EQ(got.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    double want = 0;
    for (int j = 0; j < 40; ++j) want += 2 * w[i * 40 + j];
    EXPECT_NEAR(got[i], want, 1e-12 * want) << i;
  }
  // A rechunk of something not blockwise (a persisted array) is still read piece by piece.
  const Array p = x.persist(local_executor("sync"));
  EXPECT_NEAR(p.rechunk({20, 5}).sum().compute().item(), x.sum().compute().item(), 1e-9);
}

TEST(ArrayStructural, ConcatenateAlongEachAxis) {
  const Ref a = sample(DType::Float64, {3, 4, 5}, 1);
  const Ref b = sample(DType::Float64, {3, 4, 5}, 2);
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE(axis);
    Shape s = a.shape;
    s[axis] *= 2;
    const Ref want = make_ref(DType::Float64, s, [&](auto& i) {
      if (i[axis] < a.shape[axis]) return a.at(i);
      auto j = i;
      j[axis] -= a.shape[axis];
      return b.at(j);
    });
    check_expr({a, b}, [&](auto& x) { return concatenate({x[0], x[1]}, axis); }, want, {0, 0});
    check_expr({a, b}, [&](auto& x) { return concatenate({x[0], x[1]}, axis - 3); }, want, {0, 0});
  }
  // Different lengths on the axis, three inputs, dtype promotion.
  const Ref p = sample(DType::Int32, {2, 3}, 1), q = sample(DType::Float64, {4, 3}, 2), r = sample(DType::Int64, {1, 3}, 3);
  check_expr({p, q, r}, [](auto& x) { return concatenate({x[0], x[1], x[2]}); },
             make_ref(DType::Float64, {7, 3}, [&](auto& i) {
               if (i[0] < 2) return p.at(i);
               if (i[0] < 6) return q.at({i[0] - 2, i[1]});
               return r.at({0, i[1]});
             }),
             {0, 0});
  // Concatenated then reduced across the seam.
  check_expr({p, r}, [](auto& x) { return concatenate({x[0], x[1]}).sum({.axes = {0}}); },
             make_ref(DType::Int64, {3}, [&](auto& i) { return p.at({0, i[0]}) + p.at({1, i[0]}) + r.at({0, i[0]}); }));
  EXPECT_THROW(concatenate({to_array(p, {1}), to_array(sample(DType::Int32, {2, 4}), {1})}), ShapeError);
  EXPECT_THROW(concatenate({to_array(p, {1}), to_array(sample(DType::Int32, {6}), {1})}), ShapeError);
  EXPECT_THROW(concatenate({to_array(p, {1})}, 2), ShapeError);
}

TEST(ArrayStructural, StackAlongEachAxis) {
  const Ref a = sample(DType::Float64, {3, 4}, 1), b = sample(DType::Float64, {3, 4}, 2), c = sample(DType::Float64, {3, 4}, 3);
  const Ref* in[] = {&a, &b, &c};
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE(axis);
    Shape s = a.shape;
    s.insert(s.begin() + axis, 3);
    const Ref want = make_ref(DType::Float64, s, [&](auto& i) {
      std::vector<std::int64_t> j = i;
      const auto which = j[axis];
      j.erase(j.begin() + axis);
      return in[which]->at(j);
    });
    check_expr({a, b, c}, [&](auto& x) { return stack({x[0], x[1], x[2]}, axis); }, want, {0, 0});
  }
  check_expr({a, b}, [](auto& x) { return stack({x[0], x[1]}, -1); },
             make_ref(DType::Float64, {3, 4, 2}, [&](auto& i) { return (i[2] ? b : a).at({i[0], i[1]}); }), {0, 0});
  // 1-d stacked into rows.
  const Ref v = sample(DType::Int64, {5}, 1), w = sample(DType::Int64, {5}, 2);
  check_expr({v, w}, [](auto& x) { return stack({x[0], x[1]}); },
             make_ref(DType::Int64, {2, 5}, [&](auto& i) { return (i[0] ? w : v).at({i[1]}); }));
  EXPECT_THROW(stack({to_array(a, {1}), to_array(v, {1})}), ShapeError);
}

TEST(ArrayStructural, Reshape) {
  // arange(24).reshape({2, 3, 4}) and back.
  const Ref r24 = make_ref(DType::Int64, {2, 3, 4}, [](auto& i) { return double(i[0] * 12 + i[1] * 4 + i[2]); });
  check_chunked([](const ChunkSpec& c) { return arange(24, c[0]).reshape({2, 3, 4}); }, r24);
  check_chunked([](const ChunkSpec& c) { return arange(24, c[0]).reshape({2, 3, 4}).reshape({24}); },
                make_ref(DType::Int64, {24}, [](auto& i) { return double(i[0]); }));
  check_chunked([](const ChunkSpec& c) { return arange(24, c[0]).reshape({-1, 6}); },
                make_ref(DType::Int64, {4, 6}, [](auto& i) { return double(i[0] * 6 + i[1]); }));
  // Reshape of chunked input data in every chunking, 2-d <-> 3-d and to 1-d.
  const Ref a = sample(DType::Float64, {6, 4});
  auto reshaped = [&](Shape s) { return Ref{a.dtype, s, a.v}; };
  check_expr({a}, [](auto& x) { return x[0].reshape({24}); }, reshaped({24}), {0, 0});
  check_expr({a}, [](auto& x) { return x[0].reshape({6, 2, 2}); }, reshaped({6, 2, 2}), {0, 0});
  check_expr({a}, [](auto& x) { return x[0].reshape({2, 3, 4}); }, reshaped({2, 3, 4}), {0, 0});
  check_expr({a}, [](auto& x) { return x[0].reshape({3, 8}); }, reshaped({3, 8}), {0, 0});
  check_expr({a}, [](auto& x) { return x[0].reshape({1, 24, 1}); }, reshaped({1, 24, 1}), {0, 0});
  // Reshape of an expression (transpose first: not contiguous in the input).
  const Ref at = make_ref(DType::Float64, {4, 6}, [&](auto& i) { return a.at({i[1], i[0]}); });
  check_expr({a}, [](auto& x) { return x[0].T().reshape({24}); }, Ref{DType::Float64, {24}, at.v}, {0, 0});
  // Reshape then element-wise and reductions.
  check_expr({a}, [](auto& x) { return (x[0].reshape({2, 12}) * 2.0).sum({.axes = {1}}); },
             make_ref(DType::Float64, {2}, [&](auto& i) {
               double s = 0;
               for (int k = 0; k < 12; ++k) s += 2 * a.v[i[0] * 12 + k];
               return s;
             }));
  // Same shape: the same array. 1-element to 0-d.
  Array x = to_array(a, {2});
  EXPECT_EQ(x.reshape({6, 4}).name(), x.name());
  const Ref one = ref_of(DType::Float64, {1, 1}, {3.5});
  check_expr({one}, [](auto& y) { return y[0].reshape({}); }, ref_of(DType::Float64, {}, {3.5}), {0, 0});
}

// map_blocks functions, registered by name.
Block tessera_test_affine(Block b) {
  Block out(DType::Float64, b.shape());
  const auto v = b.to_doubles();
  for (std::size_t i = 0; i < v.size(); ++i) out.data<double>()[i] = 2.0 * v[i] + 1.0;
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.array.affine", tessera_test_affine);

Block tessera_test_hypot(Block a, Block b) {
  Block out(DType::Float64, a.shape());
  const auto x = a.to_doubles(), y = b.to_doubles();
  for (std::size_t i = 0; i < x.size(); ++i) out.data<double>()[i] = std::sqrt(x[i] * x[i] + y[i] * y[i]);
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.array.hypot", tessera_test_hypot);

// One value per chunk: its row sums (shape (rows, 1)).
Block tessera_test_row_sums(Block a) {
  Block out(DType::Float64, {a.shape()[0], 1});
  const auto x = a.to_doubles();
  const auto cols = a.shape()[1];
  for (std::int64_t r = 0; r < a.shape()[0]; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
    out.data<double>()[r] = s;
  }
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.array.row_sums", tessera_test_row_sums);

TEST(ArrayStructural, MapBlocksElementwiseFunction) {
  const Ref a = sample(DType::Int32, {6, 7});
  check_expr({a}, [](auto& x) { return map_blocks("tessera_test.array.affine", {x[0]}, DType::Float64); },
             make_ref(DType::Float64, {6, 7}, [&](auto& i) { return 2 * a.at(i) + 1; }));
  // On a fused expression, then further ops on the result.
  check_expr({a}, [](auto& x) {
    return map_blocks("tessera_test.array.affine", {x[0][{step(-1)}] * 0.5}, DType::Float64).sum({.axes = {0}});
  },
             make_ref(DType::Float64, {7}, [&](auto& i) {
               double s = 0;
               for (int r = 0; r < 6; ++r) s += 2 * (a.at({r, i[0]}) * 0.5) + 1;
               return s;
             }));
  // Two inputs with different chunkings are rechunked to the first one's.
  const Ref b = sample(DType::Float64, {6, 7}, 2);
  check_expr({a, b}, [](auto& x) { return map_blocks("tessera_test.array.hypot", {x[0], x[1]}, DType::Float64); },
             make_ref(DType::Float64, {6, 7}, [&](auto& i) { return std::hypot(a.at(i), b.at(i)); }));
}

TEST(ArrayStructural, MapBlocksWithOutputChunks) {
  const Ref a = sample(DType::Float64, {6, 8});
  for (const ChunkSpec& c : {ChunkSpec{2, 4}, ChunkSpec{3, 8}, ChunkSpec{1, 3}}) {
    Array x = to_array(a, c);
    Chunks out = x.chunks();
    out[1].assign(out[1].size(), 1);
    Array s = map_blocks("tessera_test.array.row_sums", {x}, DType::Float64, out);
    const std::int64_t ncol = static_cast<std::int64_t>(out[1].size());
    EXPECT_EQ(s.shape(), (Shape{6, ncol}));
    const auto offs = chunk_offsets(x.chunks()[1]);
    const Ref want = make_ref(DType::Float64, {6, ncol}, [&](auto& i) {
      double t = 0;
      for (auto col = offs[i[1]]; col < offs[i[1] + 1]; ++col) t += a.at({i[0], col});
      return t;
    });
    for (const auto& e : executors()) EXPECT_TRUE(block_matches(s.compute(*e.ex), want));
    // Summing the per-chunk sums gives the row sums.
    EXPECT_TRUE(block_matches(compute_sync(s.sum({.axes = {1}})), make_ref(DType::Float64, {6}, [&](auto& i) {
                                double t = 0;
                                for (int col = 0; col < 8; ++col) t += a.at({i[0], col});
                                return t;
                              })));
  }
}

}  // namespace

TEST(ArrayStructural, ConcatenatedGeneratorsFuseIntoTheirReaders) {
  // Each chunk of a concatenation is a chunk of one input: a program over it reads that input
  // shifted, so generators are drawn inside the reading task, not made into blocks first.
  const Array x = random::uniform(1, 0.0, 1.0, {6, 8}, {3, 4});
  const Array y = random::uniform(2, 0.0, 1.0, {4, 8}, {2, 4});
  const Array c = concatenate({x, y}, 0);
  const Block xb = compute_sync(x), yb = compute_sync(y);
  const Ref want_c = make_ref(DType::Float64, {10, 8}, [&](auto& i) {
    return i[0] < 6 ? xb.to_doubles()[static_cast<std::size_t>(i[0] * 8 + i[1])]
                    : yb.to_doubles()[static_cast<std::size_t>((i[0] - 6) * 8 + i[1])];
  });
  const Array total = (c * 2.0).sum({.axes = {1}});
  {
    const Graph g = total.to_graph(nullptr);
    int blockwise = 0;
    for (const auto& [key, t] : g.tasks()) blockwise += t.op == "tessera.array.blockwise";
    EXPECT_EQ(blockwise, 8);  // one fused task per chunk of the concatenation (4 x 2), no generation tasks
  }
  const Ref want_total = make_ref(DType::Float64, {10}, [&](auto& i) {
    double s = 0;
    for (std::int64_t j = 0; j < 8; ++j) s += 2.0 * want_c.at({i[0], j});
    return s;
  });
  for (const auto& e : executors()) {
    EXPECT_TRUE(block_matches(total.compute(*e.ex), want_total)) << e.name;
    EXPECT_TRUE(block_matches(c.compute(*e.ex), want_c)) << e.name;
    // Transposed, and a slice whose chunks cross from x into y (read from the assembled chunks).
    EXPECT_TRUE(block_matches((c.T() + 1.0).compute(*e.ex),
                              make_ref(DType::Float64, {8, 10}, [&](auto& i) { return want_c.at({i[1], i[0]}) + 1.0; })))
        << e.name;
    EXPECT_TRUE(block_matches((c[{slice(4, 9)}].rechunk({5, 8}) * 3.0).compute(*e.ex),
                              make_ref(DType::Float64, {5, 8}, [&](auto& i) { return 3.0 * want_c.at({i[0] + 4, i[1]}); })))
        << e.name;
  }
  // Along the last axis, with a reversed read.
  const Array z = random::uniform(3, 0.0, 1.0, {6, 5}, {3, 5});
  const Array cz = concatenate({x, z}, 1);
  const Block zb = compute_sync(z);
  const Ref want_cz = make_ref(DType::Float64, {6, 13}, [&](auto& i) {
    return i[1] < 8 ? xb.to_doubles()[static_cast<std::size_t>(i[0] * 8 + i[1])]
                    : zb.to_doubles()[static_cast<std::size_t>(i[0] * 5 + i[1] - 8)];
  });
  EXPECT_TRUE(block_matches(compute_sync(cz[{all(), step(-1)}] - 0.5),
                            make_ref(DType::Float64, {6, 13}, [&](auto& i) { return want_cz.at({i[0], 12 - i[1]}) - 0.5; })));
}
