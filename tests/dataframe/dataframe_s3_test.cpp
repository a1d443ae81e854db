// read_csv and read_parquet over s3:// against a real S3-compatible server (moto, started on
// loopback by tests/support/s3_server), with an endpoint override; anonymous reads as in seed
// 000's storage_options={"anon": True}.
#include <gtest/gtest.h>

#include <sstream>

#include "../support/s3_server.hpp"
#include "dataframe_test_util.hpp"
#include "tessera/dataframe/dataframe.hpp"
#include "tessera/dataframe/io.hpp"

namespace tessera::dataframe {
namespace {

using testing::as_map;
using testing::TempDir;

std::string csv_text(int rows, int seed) {
  std::ostringstream os;
  os << "passenger_count,tip_amount\n";
  for (int r = 0; r < rows; ++r) {
    if (r % 11 == 0) os << "," << r * 0.25 << "\n";
    else os << (r + seed) % 4 << "," << r * 0.25 << "\n";
  }
  return os.str();
}

class DataFrameS3 : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = tessera::testing::S3Server::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "no S3 server here: " << why;
    server_ = std::make_unique<tessera::testing::S3Server>();
    server_->create_bucket("trips");
    for (int f = 0; f < 3; ++f) {
      const std::string name = "yellow_tripdata_2019-0" + std::to_string(f + 1) + ".csv";
      server_->upload("trips", "trip data/" + name, dir_.write(name, csv_text(400, f)));
    }
  }
  StorageOptions storage(bool anonymous) const {
    StorageOptions s;
    s.anonymous = anonymous;
    s.endpoint_override = server_->endpoint();
    if (!anonymous) s.access_key = s.secret_key = "testing";
    s.region = "us-east-1";
    return s;
  }
  TempDir dir_;
  std::unique_ptr<tessera::testing::S3Server> server_;
};

TEST_F(DataFrameS3, ReadCsvOverS3EqualsTheLocalFiles) {
  for (bool anonymous : {true, false}) {
    ReadCsvOptions o;
    o.assume_missing = true;
    o.blocksize = 2000;  // several partitions per object: ranged reads
    o.storage_options = storage(anonymous);
    auto remote = read_csv("s3://trips/trip data/yellow_tripdata_2019-*.csv", o);
    EXPECT_GT(remote.npartitions(), 3);
    ReadCsvOptions local_o;
    local_o.assume_missing = true;
    auto local = read_csv(dir_.file("yellow_tripdata_2019-*.csv"), local_o);
    EXPECT_EQ(as_map(remote.groupby({"passenger_count"})["tip_amount"].mean().compute(), "passenger_count", "tip_amount"),
              as_map(local.groupby({"passenger_count"})["tip_amount"].mean().compute(), "passenger_count", "tip_amount"))
        << (anonymous ? "anonymous" : "with keys");
    EXPECT_EQ(remote.len(), 1200);
  }
}

TEST_F(DataFrameS3, AMissingObjectOrBucketIsNamed) {
  ReadCsvOptions o;
  o.storage_options = storage(true);
  try {
    read_csv("s3://trips/trip data/nothing-*.csv", o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no files match s3://trips/trip data/nothing-*.csv"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_csv("s3://no-such-bucket/x.csv", o), Error);
}

}  // namespace
}  // namespace tessera::dataframe
