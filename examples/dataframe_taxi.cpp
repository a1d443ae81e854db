// Seed 000's dataframe workload: NYC taxi CSV files read into a partitioned DataFrame
// (parse_dates, assume_missing, anonymous S3), persisted on the workers, then the mean tip per
// passenger count, which comes back to this process (which needs no GPU) as an Arrow table.
//
//   dataframe_taxi [--csv 'GLOB or s3://bucket/glob'] [--endpoint http://127.0.0.1:9000] [--anon]
//                  [--scheduler threads|sync|distributed|ADDRESS] [--device host|gpu]
//
// Without --csv it writes a few small files of the same schema into a scratch folder first, and
// checks the result against a mean computed here row by row.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <arrow/api.h>
#include <CLI/CLI.hpp>
#include <tessera/dataframe/dataframe.hpp>
#include <tessera/dataframe/io.hpp>
#include <tessera/tessera.hpp>

#include "scheduler_flag.hpp"

namespace {

const char* kHeader =
    "VendorID,tpep_pickup_datetime,tpep_dropoff_datetime,passenger_count,trip_distance,RatecodeID,"
    "store_and_fwd_flag,PULocationID,DOLocationID,payment_type,fare_amount,extra,mta_tax,tip_amount,"
    "tolls_amount,improvement_surcharge,total_amount,congestion_surcharge";

// Writes `files` files; returns the expected mean tip per passenger count (rows with none skipped).
std::map<int, double> write_sample(const std::filesystem::path& dir, int files, int rows) {
  std::mt19937_64 rng(2019);
  std::map<int, std::pair<double, long>> acc;
  for (int f = 1; f <= files; ++f) {
    char name[64];
    std::snprintf(name, sizeof name, "yellow_tripdata_2019-%02d.csv", f);
    std::ofstream out(dir / name);
    out << kHeader << "\n";
    for (int r = 0; r < rows; ++r) {
      const int passengers = static_cast<int>(rng() % 7);
      const bool missing = rng() % 100 == 0;
      const double tip = static_cast<double>(rng() % 1000) / 100.0;
      const int minute = r % 60, hour = (r / 60) % 24;
      char row[512];
      std::snprintf(row, sizeof row,
                    "1,2019-%02d-01 %02d:%02d:00,2019-%02d-01 %02d:%02d:30,%s,1.5,1,N,151,239,1,7.0,0.5,0.5,%.2f,0,"
                    "0.3,9.95,2.5",
                    f, hour, minute, f, hour, minute, missing ? "" : std::to_string(passengers).c_str(), tip);
      out << row << "\n";
      if (!missing) {
        acc[passengers].first += std::round(tip * 100) / 100;
        acc[passengers].second += 1;
      }
    }
  }
  std::map<int, double> mean;
  for (const auto& [k, sc] : acc) mean[k] = sc.first / static_cast<double>(sc.second);
  return mean;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::init(argc, argv);
  std::string csv, endpoint, scheduler = "threads", device = "host";
  bool anon = false;
  CLI::App app{"Seed 000: mean tip per passenger count over NYC taxi CSV files"};
  app.add_option("--csv", csv, "files: a path, a glob, or s3://bucket/glob (default: small generated files)");
  app.add_option("--endpoint", endpoint, "an S3-compatible server for s3:// paths (e.g. http://127.0.0.1:9000)");
  app.add_flag("--anon", anon, "read s3:// anonymously (public buckets)");
  app.add_option("--scheduler", scheduler, "threads, sync, distributed (a local cluster) or a scheduler address");
  app.add_option("--device", device, "host or gpu (partitions persisted on GPU workers)")
      ->check(CLI::IsMember({"host", "gpu"}));
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  std::filesystem::path scratch;
  std::map<int, double> expected;
  if (csv.empty()) {
    scratch = std::filesystem::temp_directory_path() / ("tessera-taxi-" + std::to_string(::getpid()));
    std::filesystem::create_directories(scratch);
    expected = write_sample(scratch, 3, 20000);
    csv = (scratch / "yellow_tripdata_2019-*.csv").string();
  }

  auto run = tessera_examples::open_scheduler("dataframe_taxi", scheduler);
  if (!run.executor) return 2;
  Executor& executor = *run.executor;

  const auto t0 = std::chrono::steady_clock::now();
  dataframe::ReadCsvOptions options;
  options.parse_dates = {"tpep_pickup_datetime", "tpep_dropoff_datetime"};
  options.assume_missing = true;
  options.storage_options.anonymous = anon;
  options.storage_options.endpoint_override = endpoint;
  auto df = dataframe::read_csv(csv, options);
  if (device == "gpu") df = df.to_device();
  df = df.persist(executor);
  auto result = df.groupby({"passenger_count"})["tip_amount"].mean().compute(executor);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("%s: %lld partitions, columns %s ... (%s)\n", csv.c_str(), static_cast<long long>(df.npartitions()),
              df.dtype("tpep_pickup_datetime").c_str(), executor.name().c_str());
  std::printf("%s\n", result->ToString().c_str());
  std::printf("in %.3f s\n", seconds);

  int failures = 0;
  if (!expected.empty()) {
    auto keys = result->GetColumnByName("passenger_count");
    auto means = result->GetColumnByName("tip_amount");
    if (result->num_rows() != static_cast<std::int64_t>(expected.size())) ++failures;
    for (std::int64_t r = 0; r < result->num_rows() && !failures; ++r) {
      const double k = std::static_pointer_cast<arrow::DoubleScalar>(keys->GetScalar(r).ValueOrDie())->value;
      const double m = std::static_pointer_cast<arrow::DoubleScalar>(means->GetScalar(r).ValueOrDie())->value;
      const double want = expected[static_cast<int>(k)];
      if (std::abs(m - want) > 1e-9 * std::abs(want)) {
        std::fprintf(stderr, "passenger_count %g: mean %.17g, expected %.17g\n", k, m, want);
        ++failures;
      }
    }
    std::printf(failures ? "WRONG: the means differ from the rows' own\n" : "checked against the rows: equal\n");
    std::filesystem::remove_all(scratch);
  }
  return failures ? 1 : 0;
}
