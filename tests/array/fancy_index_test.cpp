// Fancy indexing (take, integer and boolean array indices, compress, nonzero, argwhere,
// flatnonzero, where, extract) and chunks of unknown size (what still works on them, what is
// refused, compute_chunk_sizes), against looped references over several chunkings.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "array_test_util.hpp"
#include "../support/fake_device.hpp"
#include "tessera/core/device.hpp"
#include "array/gather.hpp"
#include "tessera/ops/function.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

using namespace tessera_test;

namespace {

/** Reference take along one axis. */
Ref take_ref(const Ref& x, const std::vector<std::int64_t>& idx, int axis) {
  Shape s = x.shape;
  s[axis] = static_cast<std::int64_t>(idx.size());
  return make_ref(x.dtype, s, [&](const std::vector<std::int64_t>& o) {
    auto i = o;
    const std::int64_t k = idx[o[axis]];
    i[axis] = k < 0 ? k + x.shape[axis] : k;
    return x.at(i);
  });
}

/** Reference of the elements (row-major) whose mask value is nonzero. */
Ref select_ref(const Ref& x, const Ref& mask) {
  Ref r{x.dtype, {0}, {}};
  for (std::size_t i = 0; i < x.v.size(); ++i)
    if (mask.v[i] != 0) r.v.push_back(x.v[i]);
  r.shape[0] = static_cast<std::int64_t>(r.v.size());
  return r;
}

/** Computes an array of unknown chunk sizes on both executors and compares with want. */
void check_unknown(const Array& a, const Ref& want, std::source_location loc = std::source_location::current()) {
  ::testing::ScopedTrace where(loc.file_name(), static_cast<int>(loc.line()), "checked here");
  ASSERT_EQ(a.dtype(), want.dtype);
  ASSERT_EQ(a.ndim(), static_cast<int>(want.shape.size()));
  for (const auto& e : executors()) {
    SCOPED_TRACE(std::string("executor ") + e.name);
    EXPECT_TRUE(block_matches(a.compute(*e.ex), want));
  }
}

TEST(FancyIndex, TakeAlongEachAxisWithNegativeRepeatedAndUnsortedIndices) {
  const Ref x = sample(DType::Float64, {7, 5}, 1);
  const std::vector<std::vector<std::int64_t>> lists = {
      {0, 1, 2}, {6, 0, 3, 3, -1}, {4, 4, 4, 4, 4, 4, 4, 4, 4}, {}, {-7, 6, 2, 5, 1, 0}};
  for (const auto& idx : lists) {
    SCOPED_TRACE("indices of length " + std::to_string(idx.size()));
    check_expr({x}, [&](auto& a) { return take(a[0], idx, 0); }, take_ref(x, idx, 0));
    std::vector<std::int64_t> cols;
    for (auto i : idx) cols.push_back(((i % 5) + 5) % 5 - (i < 0 ? 5 : 0));
    check_expr({x}, [&](auto& a) { return take(a[0], cols, 1); }, take_ref(x, cols, 1));
    check_expr({x}, [&](auto& a) { return take(a[0], cols, -1); }, take_ref(x, cols, 1));
  }
}

TEST(FancyIndex, TakeKeepsEveryDtypeAndFusesWithWhatFollows) {
  for (DType t : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    const Ref x = sample(t, {4, 3, 6}, 2);
    const std::vector<std::int64_t> idx{5, 0, 0, 2};
    check_expr({x}, [&](auto& a) { return take(a[0], idx, 2); }, take_ref(x, idx, 2));
  }
  const Ref x = sample(DType::Float64, {9}, 3);
  Ref want = take_ref(x, {8, 1, 1}, 0);
  for (auto& v : want.v) v = v * 2 + 1;
  check_expr({x}, [&](auto& a) { return take(a[0], {8, 1, 1}, 0) * 2 + 1; }, want);
}

TEST(FancyIndex, SortedIndicesGiveOneOutputChunkPerInputChunkRead) {
  // Data, not a generator (a generated array draws the rows instead of gathering them).
  std::vector<std::int64_t> values(20);
  std::iota(values.begin(), values.end(), 0);
  Array x = from_vector(values, {20}, {5});
  Array t = take(x, {0, 1, 2, 7, 8, 19}, 0);
  EXPECT_EQ(t.chunks(), (Chunks{{3, 2, 1}}));
  std::vector<Key> keys;
  const Graph g = t.to_graph(&keys);
  // Three gathers, each reading only the chunk its indices fall in (plus the input's chunks).
  std::size_t gathers = 0;
  for (const auto& [k, task] : g.tasks())
    if (task.op == "tessera.array.gather") {
      ++gathers;
      EXPECT_EQ(task.args.size(), 2u) << k;  // parameters and one block
    }
  EXPECT_EQ(gathers, 3u);
  EXPECT_EQ(t.compute().to_doubles(), (std::vector<double>{0, 1, 2, 7, 8, 19}));
}

TEST(FancyIndex, UnsortedIndicesOverManyChunksReadEachInputChunkOnce) {
  // A random row selection of a generated array: each input chunk must be read by one small
  // gather (its rows, in order), not held whole by every output piece that has a row from it.
  Array x = arange(0, 100, 1, 10, DType::Int64).reshape({20, 5}).rechunk({{4, 4, 4, 4, 4}, {5}});
  const std::vector<std::int64_t> idx{17, 2, 9, 2, 0, 13, 18, 5};
  Array t = take(x, idx, 0);
  std::vector<Key> keys;
  const Graph g = t.to_graph(&keys);
  std::set<Key> x_chunks;
  for (const auto& [k, task] : g.tasks())
    if (task.op != "tessera.array.gather") x_chunks.insert(k);
  std::size_t readers = 0;
  for (const auto& [k, task] : g.tasks()) {
    if (task.op != "tessera.array.gather") continue;
    std::size_t reads = 0;
    for (const auto& d : task.dependencies())
      if (x_chunks.count(d)) ++reads;
    if (reads > 0) {
      ++readers;
      EXPECT_EQ(reads, 1u) << k << " reads several chunks of x";
    }
  }
  EXPECT_EQ(readers, 5u);  // one per input chunk holding a selected row (every one here)
  std::vector<double> want;
  for (auto i : idx)
    for (int j = 0; j < 5; ++j) want.push_back(static_cast<double>(i * 5 + j));
  EXPECT_EQ(t.compute().to_doubles(), want);
  EXPECT_EQ(t.chunks()[0], (std::vector<std::int64_t>{8}));  // as long as an auto-sized chunk allows
}

TEST(FancyIndex, RowsOfAGeneratedArrayAreDrawnNotGathered) {
  // Only the rows asked for are made, in the asked order, by generate_rows tasks that read
  // nothing; the values are those of the whole array's.
  const std::vector<std::int64_t> idx{17, 2, 9, 2, 0, 13, 18, 5, 19};
  const std::vector<Array> arrays{random::uniform(3, -1.0, 2.0, {20, 7}, {4, 3}),
                                  random::normal(4, 10.0, 2.0, {20, 7}, {6, 7}),
                                  random::integers(5, -50, 50, {20, 7}, {5, 2}),
                                  random::Generator(6).poisson(3.5, {20, 7}, {4, 4}),
                                  random::Generator(7).hypergeometric(30, 40, 20, {20, 7}, {4, 4})};
  for (const Array& x : arrays) {
    SCOPED_TRACE(dtype_name(x.dtype()));
    const Block whole = x.compute(local_executor("sync"));
    const Array t = take(x, idx, 0);
    std::size_t drawn = 0, programs = 0;
    const Graph g = t.to_graph(nullptr);
    for (const auto& [k, task] : g.tasks()) {
      drawn += task.op == "tessera.array.generate_rows";
      programs += task.op == "tessera.array.blockwise";
    }
    // One task per output chunk (pieces of at most the input's chunk length along the axis), and
    // nothing else: x's chunks are never made.
    const auto counts = chunk_counts(t.chunks());
    EXPECT_EQ(drawn, static_cast<std::size_t>(counts[0] * counts[1]));
    EXPECT_EQ(g.size(), drawn);
    EXPECT_EQ(programs, 0u);
    EXPECT_LE(t.chunks()[0][0], x.chunks()[0][0]);
    const auto w = whole.to_doubles();
    std::vector<double> want;
    for (auto i : idx)
      for (int j = 0; j < 7; ++j) want.push_back(w[static_cast<std::size_t>(i * 7 + j)]);
    for (const char* ex : {"sync", "threads"}) EXPECT_EQ(t.compute(local_executor(ex)).to_doubles(), want) << ex;
  }
  // Along a middle axis of a 3-d array.
  const Array y = random::uniform(8, 0.0, 1.0, {3, 10, 4}, {2, 3, 3});
  const auto w = y.compute().to_doubles();
  const std::vector<std::int64_t> mid{7, 1, 4, 1};
  std::vector<double> want;
  for (int a = 0; a < 3; ++a)
    for (auto i : mid)
      for (int c = 0; c < 4; ++c) want.push_back(w[static_cast<std::size_t>((a * 10 + i) * 4 + c)]);
  EXPECT_EQ(take(y, mid, 1).compute(local_executor("threads")).to_doubles(), want);
}

TEST(FancyIndex, TakeRefusesOutOfBoundsIndicesWhenBuilt) {
  Array x = zeros({4, 3}, {2, 2});
  EXPECT_THROW(take(x, {4}, 0), IndexError);
  EXPECT_THROW(take(x, {-5}, 0), IndexError);
  EXPECT_THROW(take(x, {0}, 2), Error);
  EXPECT_THROW(take(full({}, 1.0, {}), {0}, 0), IndexError);
}

TEST(FancyIndex, IntegerArrayIndexIsReadWhenTheGraphRuns) {
  const Ref x = sample(DType::Float64, {6, 4}, 4);
  const std::vector<std::int64_t> idx{5, -1, 0, 2, 2, -6, 3};
  Ref iref{DType::Int64, {7}, {}};
  for (auto i : idx) iref.v.push_back(static_cast<double>(i));
  check_expr({x, iref}, [&](auto& a) { return a[0][a[1]]; }, take_ref(x, idx, 0));
  // NumPy's % of a negative integer by 4 is in [0, 4).
  std::vector<std::int64_t> cols;
  for (auto i : idx) cols.push_back(((i % 4) + 4) % 4);
  check_expr({x, iref}, [&](auto& a) { return take(a[0], mod(a[1], 4), 1); }, take_ref(x, cols, 1));
  // Out of bounds: found when the gather runs.
  Array bad = to_array(x, {2})[from_block(Block::from_values<std::int64_t>({0, 6}, {2}), {1})];
  EXPECT_THROW(bad.compute(), TaskError);
  EXPECT_THROW(to_array(x, {2})[to_array(sample(DType::Float64, {3}), {1})], IndexError);
}

TEST(FancyIndex, ListCompressIsTake) {
  const Ref x = sample(DType::Int64, {5, 4}, 5);
  const std::vector<bool> cond{true, false, true, true};
  check_expr({x}, [&](auto& a) { return compress(cond, a[0], 1); }, take_ref(x, {0, 2, 3}, 1));
  check_expr({x}, [&](auto& a) { return compress({false, true}, a[0], 0); }, take_ref(x, {1}, 0));
  // No axis: the raveled array.
  Ref flat{x.dtype, {20}, x.v};
  check_expr({x}, [&](auto& a) { return compress({true, false, false, true}, a[0]); }, take_ref(flat, {0, 3}, 0));
  EXPECT_THROW(compress({false, false, false, false, false, true}, to_array(x, {2}), 0), IndexError);
}

TEST(FancyIndex, BooleanMaskOfTheSameShapeSelectsRowMajor) {
  for (DType t : {DType::Float64, DType::Int32, DType::Bool}) {
    SCOPED_TRACE(dtype_name(t));
    const Ref x = sample(t, {5, 7}, 6);
    const Ref m = sample(DType::Bool, {5, 7}, 7);
    for (const auto& c : chunkings()) {
      SCOPED_TRACE(c.name);
      Array a = to_array(x, c.spec)[to_array(m, c.spec)];
      EXPECT_FALSE(a.known_chunks());
      EXPECT_EQ(a.shape(), (Shape{unknown_size}));
      check_unknown(a, select_ref(x, m));
    }
  }
}

TEST(FancyIndex, OneDimensionalMaskSelectsSlicesAlongTheFirstAxis) {
  const Ref x = sample(DType::Float64, {6, 3}, 8);
  const Ref m = ref_of(DType::Bool, {6}, {1, 0, 0, 1, 1, 0});
  for (const auto& c : chunkings()) {
    SCOPED_TRACE(c.name);
    Array a = to_array(x, c.spec)[to_array(m, {4})];
    EXPECT_EQ(a.shape()[0], unknown_size);
    EXPECT_EQ(a.shape()[1], 3);
    check_unknown(a, take_ref(x, {0, 3, 4}, 0));
    // compress along the second axis, with a shorter condition (false past its end).
    Array b = compress(to_array(ref_of(DType::Bool, {2}, {0, 1}), {1}), to_array(x, c.spec), 1);
    check_unknown(b, take_ref(x, {1}, 1));
  }
  EXPECT_THROW(to_array(x, {2})[to_array(ref_of(DType::Bool, {3}, {1, 0, 1}), {2})], IndexError);
  EXPECT_THROW(compress(to_array(ref_of(DType::Bool, {7}, {1, 0, 1, 0, 0, 0, 0}), {2}), to_array(x, {2}), 0), IndexError);
}

TEST(FancyIndex, ArgwhereNonzeroFlatnonzeroWhereExtract) {
  const Ref x = sample(DType::Int64, {4, 5}, 9);  // values -11..11, some zero
  Ref aw{DType::Int64, {0, 2}, {}}, flat{DType::Int64, {0}, {}};
  Ref rows{DType::Int64, {0}, {}}, cols{DType::Int64, {0}, {}};
  for (std::int64_t i = 0; i < 20; ++i) {
    if (x.v[i] == 0) continue;
    aw.v.push_back(static_cast<double>(i / 5));
    aw.v.push_back(static_cast<double>(i % 5));
    rows.v.push_back(static_cast<double>(i / 5));
    cols.v.push_back(static_cast<double>(i % 5));
    flat.v.push_back(static_cast<double>(i));
  }
  aw.shape[0] = rows.shape[0] = cols.shape[0] = flat.shape[0] = static_cast<std::int64_t>(flat.v.size());
  ASSERT_LT(flat.v.size(), 20u);  // the sample has zeros
  for (const auto& c : chunkings()) {
    SCOPED_TRACE(c.name);
    Array a = to_array(x, c.spec);
    check_unknown(argwhere(a), aw);
    const auto nz = nonzero(a);
    ASSERT_EQ(nz.size(), 2u);
    check_unknown(nz[0], rows);
    check_unknown(nz[1], cols);
    const auto w = where(a > 0);
    ASSERT_EQ(w.size(), 2u);
    check_unknown(flatnonzero(a), flat);
    check_unknown(extract(a > 3, a), select_ref(x, make_ref(DType::Bool, {4, 5}, [&](const auto& i) {
                                                    return x.at(i) > 3 ? 1.0 : 0.0;
                                                  })));
  }
  EXPECT_THROW(nonzero(full({}, 1.0, {})), ShapeError);
}

TEST(UnknownChunks, ElementwiseReductionsAndComputeWork) {
  const Ref x = sample(DType::Float64, {6, 4}, 10);
  const Ref m = sample(DType::Bool, {6, 4}, 11);
  const Ref sel = select_ref(x, m);
  double total = 0, maxv = -1e300;
  for (auto v : sel.v) total += v, maxv = std::max(maxv, v);
  for (const auto& c : chunkings()) {
    SCOPED_TRACE(c.name);
    Array xa = to_array(x, c.spec);
    Array s = xa[to_array(m, c.spec)];
    Ref want = sel;
    for (auto& v : want.v) v = v * v + 1;
    check_unknown(s * s + 1, want);
    check_unknown(s + s.astype(DType::Float32).astype(DType::Float64) * 0, sel);
    EXPECT_NEAR(s.sum().compute().item(), total, 1e-9);
    EXPECT_NEAR(s.max().compute().item(), maxv, 0);
    EXPECT_NEAR(s.mean().compute().item(), total / static_cast<double>(sel.v.size()), 1e-12);
    // 2-d with an unknown first axis: reduce the known axis, or both; broadcast a known row.
    Array rows = xa[to_array(ref_of(DType::Bool, {6}, {0, 1, 1, 0, 1, 1}), {4})];
    const Ref r = take_ref(x, {1, 2, 4, 5}, 0);
    Ref row_sums{DType::Float64, {4}, {}};
    for (int i = 0; i < 4; ++i) {
      double t = 0;
      for (int j = 0; j < 4; ++j) t += r.at({i, j});
      row_sums.v.push_back(t);
    }
    check_unknown(rows.sum({.axes = {1}}), row_sums);
    const Ref bias = ref_of(DType::Float64, {4}, {1, 2, 3, 4});
    check_unknown(rows + to_array(bias, {2}), make_ref(DType::Float64, {4, 4}, [&](const auto& i) {
                    return r.at(i) + bias.v[i[1]];
                  }));
    check_unknown(rows.T(), make_ref(DType::Float64, {4, 4}, [&](const auto& i) { return r.at({i[1], i[0]}); }));
    check_unknown(rows[{all(), 2}], make_ref(DType::Float64, {4}, [&](const auto& i) { return r.at({i[0], 2}); }));
  }
}

Block twice_block(Block b) {
  Block out(DType::Float64, b.shape());
  const auto v = b.to_doubles();
  for (std::size_t i = 0; i < v.size(); ++i) out.data<double>()[i] = 2 * v[i];
  return out;
}
TESSERA_REGISTER_FUNCTION_AS("tessera_test.fancy_index.twice", twice_block);

TEST(UnknownChunks, ConcatenateAlongTheUnknownAxisAndMapBlocks) {
  Array x = arange(0, 10, 1, 4, DType::Float64);
  Array s = x[x > 2.5];
  Array c = concatenate({s, x}, 0);
  EXPECT_EQ(c.shape(), (Shape{unknown_size}));
  EXPECT_EQ(c.compute().to_doubles(), (std::vector<double>{3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  Array m = map_blocks("tessera_test.fancy_index.twice", {s}, DType::Float64);
  EXPECT_FALSE(m.known_chunks());
  EXPECT_EQ(m.compute().to_doubles(), (std::vector<double>{6, 8, 10, 12, 14, 16, 18}));
}

TEST(UnknownChunks, OperationsThatNeedSizesRefuseWithAClearMessage) {
  Array s = arange(0, 10, 1, 3, DType::Float64);
  s = s[s > 4.0];
  auto expect_message = [](auto f, const char* what) {
    try {
      f();
      ADD_FAILURE() << what << " did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown size"), std::string::npos) << what << ": " << e.what();
    }
  };
  expect_message([&] { s.rechunk({2}); }, "rechunk");
  expect_message([&] { s.reshape({-1, 1}); }, "reshape");
  expect_message([&] { (void)s[{slice(0, 2)}]; }, "slice");
  expect_message([&] { (void)s[1]; }, "integer index");
  expect_message([&] { take(s, {0}, 0); }, "take");
  expect_message([&] { s.argmax(); }, "argmax");
  expect_message([&] { matmul(s, s); }, "matmul");
  expect_message([&] { s.broadcast_to({2, unknown_size}); }, "broadcast_to");
  // Two unknown arrays chunked differently cannot be combined; the same chunks can.
  Array t = arange(0, 10, 1, 5, DType::Float64);
  t = t[t > 4.0];
  expect_message([&] { (void)(s + t); }, "elementwise");
  EXPECT_THROW((void)(s + arange(0, 5, 1, 5, DType::Float64)), ShapeError);
  // Same chunk count but different sizes at run time: the task fails with NumPy's message.
  Array u = arange(0, 9, 1, 3, DType::Float64);
  Array v = u[u > 3.0] + u[u < 5.0];
  EXPECT_THROW(v.compute(), TaskError);
}

TEST(UnknownChunks, ComputeChunkSizesGivesKnownChunksAndTheSameValues) {
  Array x = arange(0, 10, 1, 4, DType::Int64);
  Array s = x[mod(x, 3) != 0];
  EXPECT_EQ(s.chunks(), (Chunks{{unknown_size, unknown_size, unknown_size}}));
  Array k = s.compute_chunk_sizes();
  EXPECT_TRUE(k.known_chunks());
  EXPECT_EQ(k.chunks(), (Chunks{{2, 3, 1}}));  // 1 2 | 4 5 7 | 8
  EXPECT_EQ(k.shape(), (Shape{6}));
  EXPECT_EQ(k.compute().to_doubles(), (std::vector<double>{1, 2, 4, 5, 7, 8}));
  EXPECT_EQ(k[{slice(1, 4)}].compute().to_doubles(), (std::vector<double>{2, 4, 5}));
  EXPECT_EQ(k.rechunk({6}).chunks(), (Chunks{{6}}));
  EXPECT_EQ(x.compute_chunk_sizes().name(), x.name());  // already known: the same array
  // persist with a local executor knows the sizes too.
  Array p = s.persist();
  EXPECT_EQ(p.chunks(), (Chunks{{2, 3, 1}}));
}

TEST(FancyIndex, DevicePathWithAFakeDevice) {
  if (OpRegistry::global().get("tessera.array.blockwise").device)
    GTEST_SKIP() << "the CUDA back end is loaded; tests/cuda/ check device values on a GPU";
  ScopedFakeDevice gpu;
  const Ref x = sample(DType::Float64, {6, 5}, 12);
  const Ref m = sample(DType::Bool, {6, 5}, 13);
  Array xd = to_array(x, {4}).to_device();
  const std::vector<std::int64_t> idx{4, 0, -1, 2};
  EXPECT_TRUE(block_matches(take(xd, idx, 1).compute(), take_ref(x, idx, 1)));
  Array sel = xd[to_array(m, {3}).to_device()];
  EXPECT_EQ(sel.target(), Target::Device);
  EXPECT_TRUE(block_matches(sel.compute(), select_ref(x, m)));
  EXPECT_TRUE(block_matches((sel * 2).compute(), [&] {
    Ref r = select_ref(x, m);
    for (auto& v : r.v) v *= 2;
    return r;
  }()));
  Array idx_arr = from_block(Block::from_values<std::int64_t>({5, -6, 1}, {3}), {2}).to_device();
  EXPECT_TRUE(block_matches(xd[idx_arr].compute(), take_ref(x, {5, 0, 1}, 0)));
  EXPECT_EQ(flatnonzero(xd > 0.0).compute().to_doubles(), flatnonzero(to_array(x, {4}) > 0.0).compute().to_doubles());
  const Block on_gpu = sel.compute(local_executor(), Target::Device);
  EXPECT_EQ(on_gpu.memory_kind(), MemoryKind::Device);
}

// The contract of the CUDA back end's element gather (cuda/gather_op.cpp), kept by a host loop
// on fake device memory: the plans of many short runs reach it expanded per element.
int fake_element_gathers = 0;
Value fake_gather_elements(const OpContext& ctx, std::span<const Value> args) {
  ++fake_element_gathers;
  const auto p = from_value<detail::GatherElementsParams>(args[0]);
  const Block& block_of = args[1].block();
  const Block& offset = args[2].block();
  EXPECT_NE(block_of.memory_kind(), MemoryKind::Device);
  const std::size_t isz = itemsize(p.dtype);
  Block out = device_block(p.dtype, p.shape, ctx.device, ctx.stream);
  for (std::int64_t i = 0; i < out.size(); ++i) {
    const std::int32_t b = block_of.data<std::int32_t>()[i];
    const auto* src = b < 0 ? p.fill.data()
                            : static_cast<const unsigned char*>(args[3 + b].block().raw()) + offset.data<std::int64_t>()[i] * isz;
    std::memcpy(static_cast<unsigned char*>(out.raw()) + i * isz, src, isz);
  }
  return Value(std::move(out));
}

TEST(FancyIndex, ManyShortRunsGoToTheElementGatherKernel) {
  if (OpRegistry::global().get("tessera.array.blockwise").device)
    GTEST_SKIP() << "the CUDA back end is loaded: tests/cuda/gather_device_test.cpp checks its kernel";
  // A stand-in for the kernel (the back end, when it loads, registers the real one over it).
  register_device_op(detail::kGatherElementsOp, fake_gather_elements);
  ScopedFakeDevice gpu;
  const Ref x = sample(DType::Float32, {40, 30}, 14);
  Array xd = to_array(x, {16}).to_device();
  std::vector<std::int64_t> cols;
  for (int i = 0; i < 30; ++i) cols.push_back((i * 7) % 30 - (i % 2 ? 30 : 0));
  const int before = fake_element_gathers;
  EXPECT_TRUE(block_matches(take(xd, cols, 1).compute(), take_ref(x, cols, 1)));
  EXPECT_GT(fake_element_gathers, before);
  // Constant halos: fills reach the kernel as block -1.
  const Array host = overlap(to_array(x, {16}), {2}, {Boundary(-1.5)});
  EXPECT_EQ(overlap(xd, {2}, {Boundary(-1.5)}).compute().to_doubles(), host.compute().to_doubles());
  const Ref m = sample(DType::Bool, {40, 30}, 15);
  EXPECT_TRUE(block_matches(xd[to_array(m, {16}).to_device()].compute(), select_ref(x, m)));
  // Few runs (whole rows) stay copies.
  const int kernel_calls = fake_element_gathers;
  EXPECT_TRUE(block_matches(take(xd, {3, 1}, 0).compute(), take_ref(x, {3, 1}, 0)));
  EXPECT_EQ(fake_element_gathers, kernel_calls);
}

}  // namespace
