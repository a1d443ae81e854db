// The Arrow table codec (src/dataframe/arrow_codec.cpp): what a host partition costs when it is
// sent to a peer or spilled. A slice of a large table (a shuffle's shard) carries its own rows,
// not the buffers of the whole table it shares, and comes back equal.
#include <gtest/gtest.h>

#include <arrow/api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataframe/arrow_util.hpp"
#include "dataframe/frame_node.hpp"
#include "tessera/core/native.hpp"

namespace tessera::dataframe::detail {
namespace {

std::shared_ptr<arrow::Table> numbers_and_names(std::int64_t rows) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  arrow::DoubleBuilder xs;
  for (std::int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(ids.Append(r).ok());
    EXPECT_TRUE(r % 7 == 0 ? names.AppendNull().ok() : names.Append("name-" + std::to_string(r)).ok());
    EXPECT_TRUE(xs.Append(0.5 * static_cast<double>(r)).ok());
  }
  auto schema = arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
                               arrow::field("x", arrow::float64())});
  return arrow::Table::Make(schema, {*ids.Finish(), *names.Finish(), *xs.Finish()});
}

std::size_t frame_bytes(const NativeParts& parts) {
  std::size_t bytes = 0;
  for (const auto& f : parts.frames) bytes += f->size();
  return bytes;
}

std::shared_ptr<arrow::Table> round_trip(const std::shared_ptr<arrow::Table>& t, std::size_t* bytes) {
  const auto& codec = native_codec(kArrowTableType);
  auto parts = codec.encode(table_value(t).native());
  *bytes = frame_bytes(parts);
  auto back = codec.decode(parts.header, parts.frames);
  return std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(back.object));
}

TEST(ArrowCodec, ASliceTravelsWithItsOwnRowsNotTheWholeTablesBuffers) {
  auto whole = numbers_and_names(200'000);
  std::size_t whole_bytes = 0;
  auto back_whole = round_trip(whole, &whole_bytes);
  EXPECT_TRUE(back_whole->Equals(*whole));
  // A 1/100 slice in the middle (odd offset: bitmaps are rebased, not byte-aligned).
  auto slice = whole->Slice(123'457, 2'000);
  std::size_t slice_bytes = 0;
  auto back = round_trip(slice, &slice_bytes);
  EXPECT_TRUE(back->Equals(*slice));
  EXPECT_EQ(back->num_rows(), 2'000);
  EXPECT_LT(slice_bytes, whole_bytes / 50) << "a 1% slice sent " << slice_bytes << " of the whole's " << whole_bytes;
  // A slice that is most of its table is sent as it is (no copy for a few bytes).
  auto most = whole->Slice(10, 199'000);
  std::size_t most_bytes = 0;
  EXPECT_TRUE(round_trip(most, &most_bytes)->Equals(*most));
  EXPECT_EQ(most_bytes, whole_bytes);
  // An empty slice.
  std::size_t empty_bytes = 0;
  auto empty = round_trip(whole->Slice(5, 0), &empty_bytes);
  EXPECT_EQ(empty->num_rows(), 0);
  EXPECT_TRUE(empty->schema()->Equals(*whole->schema()));
  EXPECT_LT(empty_bytes, 4096u);
}

std::shared_ptr<arrow::Table> table_of_native(const Native& n) {
  return std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(n.object));
}

TEST(ArrowCodec, TablesAreCutIntoViewsAndJoinedCompactAgainInOrder) {
  const auto& codec = native_codec(kArrowTableType);
  ASSERT_TRUE(codec.rows && codec.split && codec.concat);
  auto whole = numbers_and_names(10'000);
  const auto native = table_value(whole).native();
  EXPECT_EQ(codec.rows(native), 10'000);
  // Cut into uneven pieces, empty ones among them; each is a view (same buffers).
  const std::vector<std::int64_t> rows{0, 3, 4'000, 0, 5'997, 0};
  auto pieces = codec.split(native, rows);
  ASSERT_EQ(pieces.size(), rows.size());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto piece = table_of_native(pieces[i]);
    EXPECT_EQ(piece->num_rows(), rows[i]);
    EXPECT_TRUE(piece->Equals(*whole->Slice(at, rows[i])));
    at += rows[i];
  }
  // Joined again: equal to the whole, one compact chunk per column; a single small view is
  // copied compact too (it no longer holds the whole's buffers).
  auto joined = table_of_native(codec.concat(pieces));
  EXPECT_TRUE(joined->Equals(*whole));
  for (const auto& column : joined->columns()) EXPECT_EQ(column->num_chunks(), 1);
  auto small = codec.concat({pieces[1]});
  EXPECT_TRUE(table_of_native(small)->Equals(*whole->Slice(0, 3)));
  EXPECT_LT(small.nbytes, 4096u);
  // Pieces that do not add up, and tables of other columns, are errors.
  EXPECT_THROW(codec.split(native, {5, 6}), Error);
  EXPECT_THROW(codec.split(native, {-1, 10'001}), Error);
  auto other = arrow::Table::Make(arrow::schema({arrow::field("id", arrow::int32())}), {*arrow::Int32Builder().Finish()});
  EXPECT_THROW(codec.concat({native, table_value(other).native()}), Error);
}

}  // namespace
}  // namespace tessera::dataframe::detail
