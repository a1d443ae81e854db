// Core layer: dtypes, shapes and chunk grids, Buffer, Block, Value, keys.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "tessera/core/block.hpp"
#include "tessera/core/buffer.hpp"
#include "tessera/core/dtype.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/key.hpp"
#include "tessera/core/shape.hpp"
#include "tessera/core/value.hpp"

using namespace tessera;

TEST(DType, NamesAndItemsizes) {
  EXPECT_EQ(itemsize(DType::Bool), 1u);
  EXPECT_EQ(itemsize(DType::Int32), 4u);
  EXPECT_EQ(itemsize(DType::Int64), 8u);
  EXPECT_EQ(itemsize(DType::Float32), 4u);
  EXPECT_EQ(itemsize(DType::Float64), 8u);
  for (DType t : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_from_name("double"), DType::Float64);
  EXPECT_THROW(dtype_from_name("complex256"), DTypeError);
  EXPECT_TRUE(is_floating(DType::Float32));
  EXPECT_FALSE(is_floating(DType::Int64));
  EXPECT_TRUE(is_integer(DType::Int32));
}

TEST(DType, PromotionFollowsNumPy) {
  EXPECT_EQ(promote_types(DType::Float32, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::Bool, DType::Int32), DType::Int32);
  EXPECT_EQ(promote_types(DType::Float32, DType::Bool), DType::Float32);
  EXPECT_EQ(promote_types(DType::Int32, DType::Int64), DType::Int64);
  EXPECT_EQ(promote_types(DType::Float32, DType::Float64), DType::Float64);
  EXPECT_EQ(promote_types(DType::Int32, DType::Float32), DType::Float64);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float32), DType::Float64);
  EXPECT_EQ(promote_types(DType::Float64, DType::Int32), DType::Float64);
  // Symmetric for every pair.
  for (DType a : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64})
    for (DType b : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64})
      EXPECT_EQ(promote_types(a, b), promote_types(b, a));
}

TEST(DType, DispatchGivesTheMatchingType) {
  EXPECT_EQ(dispatch_dtype(DType::Int32, [](auto t) { return dtype_of_v<decltype(t)>; }), DType::Int32);
  EXPECT_EQ(dispatch_dtype(DType::Float32, [](auto t) { return sizeof(t); }), 4u);
}

TEST(Shape, Helpers) {
  EXPECT_EQ(shape_size({}), 1);
  EXPECT_EQ(shape_size({2, 3, 4}), 24);
  EXPECT_EQ(shape_size({5, 0}), 0);
  EXPECT_EQ(row_major_strides({2, 3, 4}), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(shape_to_string({3}), "(3,)");
  EXPECT_EQ(shape_to_string({2, 3}), "(2, 3)");
  EXPECT_EQ(shape_to_string({}), "()");
  EXPECT_EQ(normalize_axis(-1, 3), 2);
  EXPECT_EQ(normalize_axis(1, 3), 1);
  EXPECT_THROW(normalize_axis(3, 3), ShapeError);
  EXPECT_THROW(normalize_axis(-4, 3), ShapeError);
}

TEST(Shape, ChunkGrids) {
  const Chunks c = regular_chunks({10, 7}, {4, 7});
  EXPECT_EQ(c, (Chunks{{4, 4, 2}, {7}}));
  EXPECT_EQ(chunks_shape(c), (Shape{10, 7}));
  EXPECT_EQ(chunk_counts(c), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(chunk_offsets(c[0]), (std::vector<std::int64_t>{0, 4, 8, 10}));
  EXPECT_EQ(chunks_to_string(c), "((4, 4, 2), (7,))");
  EXPECT_EQ(regular_chunks({5}, {0}), (Chunks{{5}}));  // non-positive: one chunk
  EXPECT_EQ(regular_chunks({0}, {3}), (Chunks{{0}}));
  EXPECT_THROW(regular_chunks({10, 7}, {4}), ShapeError);
  EXPECT_THROW(regular_chunks({-1}, {4}), ShapeError);
}

TEST(Buffer, HostAllocationIsAlignedAndAdoptRunsDeleterOnce) {
  auto b = Buffer::allocate_host(100);
  EXPECT_EQ(b->size(), 100u);
  EXPECT_EQ(b->kind(), MemoryKind::Host);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % 64, 0u);
  int deleted = 0;
  static char storage[16];
  {
    auto a = Buffer::adopt(storage, sizeof storage, MemoryKind::PinnedHost, -1,
                           [&](void* p, std::size_t n) {
                             EXPECT_EQ(p, storage);
                             EXPECT_EQ(n, sizeof storage);
                             ++deleted;
                           });
    EXPECT_EQ(a->kind(), MemoryKind::PinnedHost);
    auto copy = a;
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
  EXPECT_STREQ(memory_kind_name(MemoryKind::Device), "device");
}

TEST(Block, FromValuesAndAccess) {
  Block b = Block::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(b.dtype(), DType::Float64);
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(b.ndim(), 2);
  EXPECT_EQ(b.size(), 6);
  EXPECT_EQ(b.nbytes(), 48u);
  EXPECT_EQ(b.data<double>()[4], 5.0);
  EXPECT_EQ(b.to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(Block::from_values<double>({1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(b.item(), ShapeError);
  EXPECT_EQ(Block::scalar<std::int32_t>(7).item(), 7.0);
  EXPECT_TRUE(Block().empty());
}

TEST(Block, ItemAsTypeIsExactAboveTwoToThe53) {
  // 2^53 + 1 has no double: item() (through double) gives 2^53, item<std::int64_t>() the value.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const Block b = Block::scalar<std::int64_t>(big);
  EXPECT_EQ(b.item<std::int64_t>(), big);
  EXPECT_EQ(Block::scalar<std::int64_t>(-big).item<std::int64_t>(), -big);
  EXPECT_EQ(b.item(), 9007199254740992.0);
  // Other dtypes convert straight to T; a one-element block of any shape has an item.
  EXPECT_EQ(Block::scalar<double>(2.75).item<int>(), 2);
  EXPECT_EQ(Block::scalar<float>(1.5f).item<double>(), 1.5);
  EXPECT_EQ(Block::scalar<bool>(true).item<std::int64_t>(), 1);
  EXPECT_EQ(Block::from_values<std::int32_t>({-7}, {1, 1}).item<std::int64_t>(), -7);
  EXPECT_THROW(Block::from_values<std::int64_t>({1, 2}, {2}).item<std::int64_t>(), ShapeError);
  EXPECT_THROW(Block().item<std::int64_t>(), Error);
}

TEST(Block, WrongTypeAccessThrows) {
  Block b = Block::from_values<float>({1.5f, 2.5f}, {2});
  EXPECT_THROW(b.data<double>(), DTypeError);
  EXPECT_THROW(b.values<std::int32_t>(), DTypeError);
  const Block& cb = b;
  EXPECT_THROW(cb.data<std::int64_t>(), DTypeError);
  EXPECT_NO_THROW(b.data<float>());
}

TEST(Block, AstypeConvertsAndCopies) {
  Block b = Block::from_values<double>({1.75, -2.5, 0.0}, {3});
  Block i = b.astype(DType::Int32);
  EXPECT_EQ(i.dtype(), DType::Int32);
  EXPECT_EQ(i.values<std::int32_t>()[0], 1);
  EXPECT_EQ(i.values<std::int32_t>()[1], -2);
  Block f = b.astype(DType::Bool);
  EXPECT_EQ(f.to_doubles(), (std::vector<double>{1, 1, 0}));
  EXPECT_NE(i.buffer(), b.buffer());
}

TEST(Block, ReshapedSharesTheBuffer) {
  Block b = Block::from_values<std::int64_t>({1, 2, 3, 4, 5, 6}, {6});
  Block r = b.reshaped({3, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.buffer(), b.buffer());
  EXPECT_EQ(r.values<std::int64_t>()[5], 6);
  EXPECT_THROW(b.reshaped({4, 2}), ShapeError);
}

TEST(Block, BufferTooSmallIsRejected) {
  EXPECT_THROW(Block(DType::Float64, {4}, Buffer::allocate_host(16)), ShapeError);
  EXPECT_THROW(Block(DType::Float64, {4}, nullptr), Error);
  EXPECT_NO_THROW(Block(DType::Float64, {4}, Buffer::allocate_host(32)));
}

TEST(Value, HoldsBlocksAndObjects) {
  Value empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.nbytes(), 0u);
  EXPECT_THROW(empty.block(), Error);

  Value vb(Block::from_values<float>({1, 2, 3}, {3}));
  EXPECT_TRUE(vb.is_block());
  EXPECT_EQ(vb.nbytes(), 12u);
  EXPECT_EQ(vb.describe(), "block float32 (3,)");
  EXPECT_THROW(vb.object(), Error);

  Value vo(Object{"thing", std::make_shared<const std::string>("abcde")});
  EXPECT_TRUE(vo.is_object());
  EXPECT_EQ(vo.nbytes(), 5u);
  EXPECT_EQ(vo.describe(), "object thing");
  EXPECT_THROW(vo.block(), Error);
}

TEST(Key, ChunkKeysAndUniqueNames) {
  EXPECT_EQ(chunk_key("x", {1, 2}), "x,1,2");
  EXPECT_EQ(chunk_key("x", {}), "x");
  std::set<std::string> names;
  for (int i = 0; i < 100; ++i) {
    auto n = unique_name("normal");
    EXPECT_EQ(n.rfind("normal-", 0), 0u);
    names.insert(n);
  }
  EXPECT_EQ(names.size(), 100u);
}

TEST(Errors, TaskErrorCarriesKeyAndMessage) {
  TaskError e("k,1", "boom");
  EXPECT_EQ(e.key(), "k,1");
  EXPECT_EQ(e.task_message(), "boom");
  EXPECT_NE(std::string(e.what()).find("k,1"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos);
}
