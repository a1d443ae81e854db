// Device frames: an Arrow table to device columns and back (numbers, bools, timestamps, strings
// dictionary-encoded on the host, nulls), through the stand-in device runtime; a DataFrame's
// to_device() partitions computed back to the host; the device frame codec over the wire.
#include <gtest/gtest.h>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <cmath>
#include <sstream>

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
  auto on_gpu = detail::frame_to_device(frame, 0, StreamView{});
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
  auto frame = detail::frame_to_device(detail::frame_from_table(*mixed_table()), 0, StreamView{});
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

// A frame of float keys with missing ones, string keys, ints and floats with nulls and NaN.
DataFrame trips_frame(testing::TempDir& dir) {
  std::ostringstream os;
  os << "k,s,i,v\n";
  for (int r = 0; r < 3000; ++r) {
    os << (r % 41 == 0 ? "" : std::to_string(r % 7)) << ",name" << (r * 7919) % 13 << ","
       << (r % 37 == 0 ? "" : std::to_string((r * 31) % 1000 - 500)) << "," << (r % 53 == 0 ? "nan" : std::to_string(r * 0.37 - 300))
       << "\n";
  }
  dir.write("a.csv", os.str());
  ReadCsvOptions o;
  o.assume_missing = true;
  o.blocksize = 9000;  // several partitions: string dictionaries differ between them
  return read_csv(dir.file("a.csv"), o);
}

void expect_same(const std::shared_ptr<arrow::Table>& host, const std::shared_ptr<arrow::Table>& dev,
                 const std::string& key, const std::vector<std::string>& columns) {
  ASSERT_EQ(host->num_rows(), dev->num_rows()) << host->ToString() << dev->ToString();
  for (std::int64_t r = 0; r < host->num_rows(); ++r) {
    EXPECT_EQ(testing::text(host, key, r), testing::text(dev, key, r)) << "row " << r;
    for (const auto& c : columns) {
      const double a = testing::number(host, c, r), b = testing::number(dev, c, r);
      if (std::isnan(a)) EXPECT_TRUE(std::isnan(b)) << c << " row " << r;
      else EXPECT_NEAR(b, a, 1e-9 * std::max(1.0, std::abs(a))) << c << " row " << r;
    }
  }
}

TEST(DeviceFrame, GroupbyOnTheDeviceEqualsTheHost) {
  ScopedFakeDevice gpu;
  testing::TempDir dir;
  auto df = trips_frame(dir);
  ASSERT_GT(df.npartitions(), 2);
  const std::map<std::string, std::vector<std::string>> how{
      {"v", {"sum", "mean", "count", "min", "max", "std", "var"}}, {"i", {"sum", "mean", "min", "max", "size"}}};
  std::vector<std::string> outputs;
  for (const auto& [c, hs] : how)
    for (const auto& h : hs) outputs.push_back(c + "_" + h);
  for (const char* key : {"k", "s"}) {
    auto host = df.groupby({key}).agg(how, {.split_every = 2}).compute();
    auto dev = df.to_device().groupby({key}).agg(how, {.split_every = 2}).compute();
    expect_same(host, dev, key, outputs);
  }
}

TEST(DeviceFrame, FilterAndArithmeticOnTheDeviceEqualTheHost) {
  ScopedFakeDevice gpu;
  testing::TempDir dir;
  auto df = trips_frame(dir);
  auto dev = df.to_device();
  auto on_host = df[df["v"] > 10.0];
  on_host = on_host.assign("w", on_host["v"] * 2 + on_host["i"]);
  on_host = on_host.assign("r", on_host["i"] / 4);
  auto on_dev = dev[dev["v"] > 10.0];
  on_dev = on_dev.assign("w", on_dev["v"] * 2 + on_dev["i"]);
  on_dev = on_dev.assign("r", on_dev["i"] / 4);
  auto a = on_host.groupby({"s"}).agg(std::map<std::string, std::vector<std::string>>{{"w", {"sum", "count"}}, {"r", {"mean"}}})
               .compute();
  auto b = on_dev.groupby({"s"}).agg(std::map<std::string, std::vector<std::string>>{{"w", {"sum", "count"}}, {"r", {"mean"}}})
               .compute();
  expect_same(a, b, "s", {"w_sum", "w_count", "r"});
  EXPECT_EQ(on_dev.len(), on_host.len());
  // What the device cannot compute is refused when the expression is built.
  EXPECT_THROW(dev[dev["s"] == Literal(std::string("name1"))], Error);
  EXPECT_THROW(dev.groupby({"s"}).agg("sum", {.split_out = 2}), Error);
}

}  // namespace
}  // namespace tessera::dataframe
