// Device frames: an Arrow table to device columns and back (numbers, bools, timestamps, strings
// dictionary-encoded on the host, nulls), through the stand-in device runtime; a DataFrame's
// to_device() partitions computed back to the host; the device frame codec over the wire.
#include <gtest/gtest.h>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "../support/fake_device.hpp"
#include "dataframe/device_convert.hpp"
#include "dataframe_test_util.hpp"
#include "distributed/wire.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/dataframe/io.hpp"

namespace tessera::dataframe {
namespace {

using tessera_test::ScopedFakeDevice;

std::shared_ptr<arrow::Table> mixed_table() {
  arrow::DoubleBuilder d;
  arrow::Int64Builder i;
  arrow::StringBuilder s;
  arrow::BooleanBuilder b;
  arrow::TimestampBuilder t(arrow::timestamp(arrow::TimeUnit::SECOND), arrow::default_memory_pool());
  arrow::Int16Builder small;
  for (int r = 0; r < 10; ++r) {
    (void)(r == 3 ? d.AppendNull() : d.Append(r * 0.5));
    (void)(r == 4 ? i.AppendNull() : i.Append(r * 100));
    (void)(r == 5 ? s.AppendNull() : s.Append(r % 2 ? "odd" : "even"));
    (void)b.Append(r % 3 == 0);
    (void)t.Append(1546300800 + r);
    (void)small.Append(static_cast<std::int16_t>(r));
  }
  auto schema = arrow::schema({arrow::field("d", arrow::float64()), arrow::field("i", arrow::int64()),
                               arrow::field("s", arrow::utf8()), arrow::field("b", arrow::boolean()),
                               arrow::field("t", arrow::timestamp(arrow::TimeUnit::SECOND)),
                               arrow::field("small", arrow::int16())});
  return arrow::Table::Make(schema, {d.Finish().ValueOrDie(), i.Finish().ValueOrDie(), s.Finish().ValueOrDie(),
                                     b.Finish().ValueOrDie(), t.Finish().ValueOrDie(), small.Finish().ValueOrDie()});
}

TEST(DeviceFrame, TableToDeviceColumnsAndBackIsTheSameTable) {
  ScopedFakeDevice gpu;
  auto table = mixed_table();
  auto frame = detail::frame_from_table(*table);
  ASSERT_EQ(frame.columns.size(), 6u);
  EXPECT_EQ(frame.find("s")->values.dtype(), DType::Int32);  // codes
  ASSERT_TRUE(frame.find("s")->dictionary);
  EXPECT_EQ(frame.find("s")->dictionary->size(), 2u);
  EXPECT_TRUE(frame.find("b")->valid.empty());  // no nulls: no mask
  EXPECT_FALSE(frame.find("d")->valid.empty());
  auto on_gpu = detail::frame_to_device(frame, 0, nullptr);
  EXPECT_EQ(on_gpu.find("d")->values.memory_kind(), MemoryKind::Device);
  auto back = detail::table_from_frame(on_gpu);
  // int16 comes back as int32 (the device has no narrower integers); everything else as it was.
  auto expected = table->SetColumn(5, arrow::field("small", arrow::int32()),
                                   std::make_shared<arrow::ChunkedArray>(
                                       arrow::compute::Cast(*table->column(5)->chunk(0), arrow::int32()).ValueOrDie()))
                      .ValueOrDie();
  EXPECT_TRUE(back->Equals(*expected)) << back->ToString() << "\nexpected\n" << expected->ToString();
}

TEST(DeviceFrame, CrossesTheWireAndComesBackOnTheHost) {
  ScopedFakeDevice gpu;
  auto frame = detail::frame_to_device(detail::frame_from_table(*mixed_table()), 0, nullptr);
  const auto bytes = detail::frame_bytes(frame);
  Value v(Native{kDeviceFrameType, std::make_shared<const DeviceFrame>(frame), bytes});
  comm::Message m("test");
  distributed::wire::put_values(m, {v}, distributed::wire::DeviceBlocks::ToHost);
  for (const auto& f : m.frames) EXPECT_EQ(f->kind(), MemoryKind::Host);
  auto got = distributed::wire::get_values(m);
  const auto& back = *static_cast<const DeviceFrame*>(got.at(0).native().object.get());
  EXPECT_TRUE(detail::table_from_frame(back)->Equals(*detail::table_from_frame(frame)));
}

TEST(DeviceFrame, AColumnWithNoDeviceFormIsNamed) {
  auto list = arrow::ListBuilder(arrow::default_memory_pool(), std::make_shared<arrow::Int64Builder>());
  (void)list.AppendNull();
  auto t = arrow::Table::Make(arrow::schema({arrow::field("l", arrow::list(arrow::int64()))}), {list.Finish().ValueOrDie()});
  try {
    detail::frame_from_table(*t);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'l'"), std::string::npos) << e.what();
  }
}

TEST(DeviceFrame, ToDeviceAndBackThroughTasks) {
  ScopedFakeDevice gpu;
  auto df = from_tables({mixed_table(), mixed_table()});
  auto dev = df.to_device();
  EXPECT_TRUE(dev.on_device());
  auto back = dev.compute();
  EXPECT_EQ(back->num_rows(), 20);
  EXPECT_EQ(testing::number(back, "d", 1), 0.5);
  EXPECT_EQ(testing::text(back, "s", 0), "even");
}

}  // namespace
}  // namespace tessera::dataframe
