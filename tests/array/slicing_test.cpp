// Views: slicing with steps (negative too) and clamping, integer indexing, newaxis, slices of
// slices, slices of computed/random expressions, transpose, broadcast_to.
#include "array_test_util.hpp"

using namespace tessera_test;

namespace {

using Opt = std::optional<std::int64_t>;

// CPython's slice.indices(): the kept positions of start:stop:step over n elements.
std::vector<std::int64_t> py_slice(std::int64_t n, Opt start, Opt stop, std::int64_t step) {
  const std::int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? n - 1 : n;
  auto adjust = [&](Opt v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const std::int64_t b = adjust(start, step < 0 ? upper : lower);
  const std::int64_t e = adjust(stop, step < 0 ? lower : upper);
  std::vector<std::int64_t> out;
  for (std::int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

// One item of a reference index: an integer, a slice or newaxis.
struct RIdx {
  enum Kind { Int, Sl, New } kind;
  std::int64_t i = 0;
  Opt start, stop;
  std::int64_t step = 1;
};
RIdx I(std::int64_t i) { return {RIdx::Int, i}; }
RIdx S(Opt a, Opt b, std::int64_t s = 1) { return {RIdx::Sl, 0, a, b, s}; }
RIdx N() { return {RIdx::New}; }

Index to_index(const RIdx& r) {
  switch (r.kind) {
    case RIdx::Int: return Index(r.i);
    case RIdx::Sl: return Index(slice(r.start, r.stop, r.step));
    case RIdx::New: return Index(newaxis);
  }
  return Index(0);
}
std::vector<Index> to_indices(const std::vector<RIdx>& ix) {
  std::vector<Index> out;
  for (const auto& r : ix) out.push_back(to_index(r));
  return out;
}

// Reference basic indexing by loops.
Ref index_ref(const Ref& a, const std::vector<RIdx>& ix) {
  // Per output axis: the input axis it reads (-1 for newaxis) and the positions.
  std::vector<int> in_axis;
  std::vector<std::vector<std::int64_t>> pos;
  std::vector<std::int64_t> fixed(a.shape.size(), 0);
  std::vector<int> free_axis(a.shape.size(), -1);
  std::size_t ax = 0;
  auto add_slice = [&](const RIdx& r) {
    free_axis[ax] = static_cast<int>(pos.size());
    pos.push_back(py_slice(a.shape[ax], r.start, r.stop, r.step));
    in_axis.push_back(static_cast<int>(ax));
    ++ax;
  };
  for (const auto& r : ix) {
    if (r.kind == RIdx::New) {
      pos.push_back({0});
      in_axis.push_back(-1);
    } else if (r.kind == RIdx::Int) {
      fixed[ax] = r.i < 0 ? r.i + a.shape[ax] : r.i;
      ++ax;
    } else {
      add_slice(r);
    }
  }
  while (ax < a.shape.size()) add_slice(S({}, {}));
  Shape s;
  for (auto& p : pos) s.push_back(static_cast<std::int64_t>(p.size()));
  return make_ref(a.dtype, s, [&](auto& o) {
    std::vector<std::int64_t> idx = fixed;
    for (std::size_t k = 0; k < o.size(); ++k)
      if (in_axis[k] >= 0) idx[in_axis[k]] = pos[k][o[k]];
    return a.at(idx);
  });
}

void check_index(const Ref& a, const std::vector<RIdx>& ix, std::source_location loc = std::source_location::current()) {
  check_expr({a}, [&](auto& x) { return x[0][to_indices(ix)]; }, index_ref(a, ix), {0, 0}, loc);
}

TEST(ArraySlicing, OneDimensionalSlicesMatchPython) {
  const Ref a = sample(DType::Float64, {10});
  const std::vector<Opt> bounds = {std::nullopt, 0, 1, 3, 9, 10, 15, -1, -3, -10, -15};
  for (std::int64_t st : {1, 2, 3, 4, 11, -1, -2, -3, -11}) {
    for (Opt b : bounds)
      for (Opt e : bounds) {
        SCOPED_TRACE(::testing::Message() << (b ? std::to_string(*b) : "") << ":" << (e ? std::to_string(*e) : "") << ":" << st);
        const Ref want = index_ref(a, {S(b, e, st)});
        // Only the two extreme chunkings here (the full matrix runs below); this loop is large.
        for (ChunkSpec c : {ChunkSpec{3}, ChunkSpec{1}}) {
          Array v = to_array(a, c)[{slice(b, e, st)}];
          ASSERT_EQ(v.shape(), want.shape);
          ASSERT_TRUE(chunks_consistent(v));
          ASSERT_TRUE(block_matches(compute_sync(v), want, 0, 0));
        }
      }
  }
  check_index(a, {S(1, 9, 2)});
  check_index(a, {S({}, {}, -1)});
  check_index(a, {S(8, 1, -3)});
  check_index(a, {S(-100, 100, 1)});
  check_index(a, {S(100, -100, -1)});
  check_index(a, {S(5, 2)});  // empty
}

TEST(ArraySlicing, EveryAxisOfA3dArray) {
  const Ref a = sample(DType::Int64, {5, 6, 7});
  check_index(a, {S(1, 4), S({}, {}, 2), S({}, {}, -1)});
  check_index(a, {S({}, {}, -2), S(5, 0, -2), S(2, {}, 3)});
  check_index(a, {S(-4, -1), S(-100, 3), S(3, 100)});
  check_index(a, {S({}, {}), S(4, 5), S(6, 0, -5)});
  check_index(a, {S(0, 0)});  // empty leading axis
}

TEST(ArraySlicing, IntegerIndexing) {
  const Ref a = sample(DType::Float64, {5, 6, 4});
  check_index(a, {I(0)});
  check_index(a, {I(4)});
  check_index(a, {I(-1)});
  check_index(a, {I(-5), I(2)});
  check_index(a, {S({}, {}), I(-2)});
  check_index(a, {S({}, {}, 2), I(3), S(1, 3)});
  check_index(a, {I(2), I(-1), I(0)});  // 0-d result
  // x[i] shorthand.
  check_expr({a}, [](auto& x) { return x[0][3]; }, index_ref(a, {I(3)}), {0, 0});
  check_expr({a}, [](auto& x) { return x[0][-2][1]; }, index_ref(index_ref(a, {I(-2)}), {I(1)}), {0, 0});
  Array z = to_array(a, {2})[{1, 2, 3}];
  EXPECT_EQ(z.ndim(), 0);
  EXPECT_EQ(compute_sync(z).item(), a.at({1, 2, 3}));
}

TEST(ArraySlicing, NewAxis) {
  const Ref a = sample(DType::Float64, {4, 5});
  check_index(a, {N()});
  check_index(a, {S({}, {}), N()});
  check_index(a, {S({}, {}), S({}, {}), N()});
  check_index(a, {N(), S({}, {}, 2), N(), I(1), N()});
  Array v = to_array(a, {2})[{newaxis, all(), newaxis}];
  EXPECT_EQ(v.shape(), (Shape{1, 4, 1, 5}));
  // newaxis then broadcasting: outer difference a[:, :, None] - a[:, None, :].
  check_expr({a}, [](auto& x) { return x[0][{all(), all(), newaxis}] - x[0][{all(), newaxis, all()}]; },
             make_ref(DType::Float64, {4, 5, 5}, [&](auto& i) { return a.at({i[0], i[1]}) - a.at({i[0], i[2]}); }));
}

TEST(ArraySlicing, SlicesOfSlices) {
  const Ref a = sample(DType::Float64, {12, 11});
  const std::vector<RIdx> first = {S(1, {}, 2), S({}, {}, -1)};
  const std::vector<RIdx> second = {S({}, {}, -2), S(2, 9, 3)};
  const Ref want = index_ref(index_ref(a, first), second);
  check_expr({a}, [&](auto& x) { return x[0][to_indices(first)][to_indices(second)]; }, want, {0, 0});
  // Three levels deep, with an integer in the middle.
  const Ref want3 = index_ref(index_ref(index_ref(a, {S(10, 0, -1)}), {S({}, {}, 3), I(4)}), {S(1, {})});
  check_expr({a}, [](auto& x) { return x[0][{slice(10, 0, -1)}][{step(3), 4}][{slice(1, std::nullopt)}]; }, want3, {0, 0});
}

TEST(ArraySlicing, SlicesOfElementwiseResults) {
  const Ref a = sample(DType::Float64, {9, 8}, 1);
  const Ref b = sample(DType::Float64, {9, 8}, 2);
  const Ref sum = make_ref(DType::Float64, {9, 8}, [&](auto& i) { return a.at(i) * 2 + b.at(i); });
  const std::vector<RIdx> ix = {S(7, {}, -2), S(1, 7, 2)};
  check_expr({a, b}, [&](auto& x) { return (x[0] * 2.0 + x[1])[to_indices(ix)]; }, index_ref(sum, ix));
  // Element-wise of slices of different inputs that end up aligned.
  check_expr({a, b}, [](auto& x) { return x[0][{slice(0, 4)}] + x[1][{slice(5, 9)}]; },
             make_ref(DType::Float64, {4, 8}, [&](auto& i) { return a.at(i) + b.at({i[0] + 5, i[1]}); }));
}

TEST(ArraySlicing, SlicesOfRandomEqualSlicingTheComputedArray) {
  const Shape s{13, 10};
  const auto full = [&](const ChunkSpec& c) { return random::normal(42, 1.0, 2.0, s, c) * 3.0 + 1.0; };
  const Ref whole = ref_from_block(compute_sync(full({-1})));
  const std::vector<std::vector<RIdx>> cases = {
      {S({}, {}, 2), S({}, {}, 2)}, {S(12, {}, -3), S(1, 9)}, {I(5)}, {S({}, {}), I(-1)},
      {S(3, 4), S({}, {}, -1)},     {N(), S(2, 11, 4), N(), S({}, {}, -4)}};
  for (const auto& ix : cases) {
    const Ref want = index_ref(whole, ix);
    check_chunked([&](const ChunkSpec& c) { return full(c)[to_indices(ix)]; }, want, kRandomTol);
  }
  // Slices of slices of random, and a transposed slice.
  check_chunked([&](const ChunkSpec& c) { return full(c)[{step(2)}][{slice(1, std::nullopt), step(-3)}]; },
                index_ref(index_ref(whole, {S({}, {}, 2)}), {S(1, {}), S({}, {}, -3)}), kRandomTol);
  const Ref sl = index_ref(whole, {S(1, 12, 2), S({}, {}, 3)});
  check_chunked([&](const ChunkSpec& c) { return full(c)[{slice(1, 12, 2), step(3)}].T(); },
                make_ref(DType::Float64, {sl.shape[1], sl.shape[0]}, [&](auto& i) { return sl.at({i[1], i[0]}); }), kRandomTol);
}

TEST(ArraySlicing, Transpose) {
  const Ref a = sample(DType::Float64, {4, 7});
  const Ref at = make_ref(DType::Float64, {7, 4}, [&](auto& i) { return a.at({i[1], i[0]}); });
  check_expr({a}, [](auto& x) { return x[0].T(); }, at, {0, 0});
  check_expr({a}, [](auto& x) { return x[0].transpose(); }, at, {0, 0});
  check_expr({a}, [](auto& x) { return x[0].T().T(); }, a, {0, 0});
  // A permutation of three axes, and negative axis numbers.
  const Ref c = sample(DType::Int32, {2, 3, 5});
  const Ref cp = make_ref(DType::Int32, {5, 2, 3}, [&](auto& i) { return c.at({i[1], i[2], i[0]}); });
  check_expr({c}, [](auto& x) { return x[0].transpose({2, 0, 1}); }, cp, {0, 0});
  check_expr({c}, [](auto& x) { return x[0].transpose({-1, 0, -2}); }, cp, {0, 0});
  // Transposed plus original (different chunk alignments), and slices of transposes.
  const Ref sq = sample(DType::Float64, {6, 6});
  check_expr({sq}, [](auto& x) { return x[0] + x[0].T(); },
             make_ref(DType::Float64, {6, 6}, [&](auto& i) { return sq.at(i) + sq.at({i[1], i[0]}); }));
  check_expr({sq}, [](auto& x) { return x[0].T()[{slice(1, 5), step(-2)}]; },
             index_ref(make_ref(DType::Float64, {6, 6}, [&](auto& i) { return sq.at({i[1], i[0]}); }), {S(1, 5), S({}, {}, -2)}),
             {0, 0});
  // Chunks follow the axes.
  Array x = to_array(a, {3}).rechunk({2, 3});
  EXPECT_EQ(x.T().chunks(), (Chunks{{3, 3, 1}, {2, 2}}));
}

TEST(ArraySlicing, TransposeOfRandom) {
  const Ref whole = ref_from_block(compute_sync(random::uniform(3, -1, 1, {7, 5}, {-1})));
  check_chunked([](const ChunkSpec& c) { return random::uniform(3, -1, 1, {7, 5}, c).T(); },
                make_ref(DType::Float64, {5, 7}, [&](auto& i) { return whole.at({i[1], i[0]}); }), kRandomTol);
  const Ref iw = ref_from_block(compute_sync(random::integers(9, 0, 100, {3, 4, 5}, {-1})));
  check_chunked([](const ChunkSpec& c) { return random::integers(9, 0, 100, {3, 4, 5}, c).transpose({1, 2, 0}); },
                make_ref(DType::Int64, {4, 5, 3}, [&](auto& i) { return iw.at({i[2], i[0], i[1]}); }));
}

TEST(ArraySlicing, BroadcastTo) {
  const Ref v = sample(DType::Float64, {5});
  check_expr({v}, [](auto& x) { return x[0].broadcast_to({3, 5}); },
             make_ref(DType::Float64, {3, 5}, [&](auto& i) { return v.at({i[1]}); }), {0, 0});
  const Ref col = sample(DType::Int64, {4, 1});
  check_expr({col}, [](auto& x) { return x[0].broadcast_to({2, 4, 6}); },
             make_ref(DType::Int64, {2, 4, 6}, [&](auto& i) { return col.at({i[1], 0}); }), {0, 0});
  const Ref s = ref_of(DType::Float64, {}, {1.5});
  check_expr({s}, [](auto& x) { return x[0].broadcast_to({3, 2}); }, make_ref(DType::Float64, {3, 2}, [](auto&) { return 1.5; }), {0, 0});
  // Same shape is a plain copy; a broadcast result can be sliced and reduced.
  check_expr({col}, [](auto& x) { return x[0].broadcast_to({4, 1}); }, col, {0, 0});
  check_expr({v}, [](auto& x) { return x[0].broadcast_to({6, 5})[{step(-2), slice(1, 4)}].sum({.axes = {0}}); },
             make_ref(DType::Float64, {3}, [&](auto& i) { return 3 * v.at({i[0] + 1}); }));
  EXPECT_THROW(to_array(v, {2}).broadcast_to({5, 4}), ShapeError);
  EXPECT_THROW(to_array(v, {2}).broadcast_to({}), ShapeError);
  EXPECT_THROW(to_array(col, {2}).broadcast_to({4, 3, 6}), ShapeError);
}

TEST(ArraySlicing, ChunksOfSlicesFollowTheInputChunks) {
  // As in Dask: each output chunk is the part of one input chunk the slice keeps.
  Array x = arange(10, 3);
  EXPECT_EQ(x[{step(2)}].chunks(), (Chunks{{2, 1, 2}}));
  EXPECT_EQ(x[{step(-1)}].chunks(), (Chunks{{1, 3, 3, 3}}));
  EXPECT_EQ(x[{slice(4, 5)}].chunks(), (Chunks{{1}}));
  EXPECT_EQ(x[{slice(5, 2)}].shape(), Shape{0});
}

}  // namespace
