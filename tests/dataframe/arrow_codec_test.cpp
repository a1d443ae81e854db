// The Arrow table codec (src/dataframe/arrow_codec.cpp): what a host partition costs when it is
// sent to a peer or spilled. A slice of a large table (a shuffle's shard) carries its own rows,
// not the buffers of the whole table it shares, and comes back equal.
#include <gtest/gtest.h>

#include <arrow/api.h>

#include <cstdint>
#include <string>

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

}  // namespace
}  // namespace tessera::dataframe::detail
