#pragma once
/** @file
 * Reading and making DataFrames: CSV and Parquet files (local paths, globs, lists, s3://) and
 * Dask's timeseries() demo data. */
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe {

/** @brief Where s3:// paths are read from (Dask's storage_options). */
struct StorageOptions {
  /** No credentials (public buckets, Dask's {"anon": True}). */
  bool anonymous = false;
  /** An S3-compatible server, e.g. "http://127.0.0.1:9000" (MinIO, moto); empty: AWS. */
  std::string endpoint_override;
  std::string region;
  std::string access_key, secret_key;
};

/** @brief read_csv's options, as in pandas / Dask. */
struct ReadCsvOptions {
  /** Split each file into partitions of about this many bytes, on line boundaries; 0: one per file. */
  std::int64_t blocksize = 64 << 20;
  /** Read only these columns (empty: all), in the file's order. */
  std::vector<std::string> usecols;
  /** Arrow type names for columns ("float64", "int64", "string", "bool", "timestamp[s]"). */
  std::map<std::string, std::string> dtypes;
  /** Columns parsed as timestamps ("2019-01-01 00:46:40"). */
  std::vector<std::string> parse_dates;
  /** Integer columns are read as float64, so a missing value is NaN-like (null), as in Dask. */
  bool assume_missing = false;
  /** Bytes read from the first file to infer the column types (Dask's sample). */
  std::int64_t sample = 256 << 10;
  StorageOptions storage_options;
};

/**
 * @brief A frame over CSV files: `path` is a file, a glob ("data/2019-*.csv") or
 * "s3://bucket/key-or-glob"; several paths may be given. The header and types are read from the
 * first file when the frame is built (a missing file or an unknown column throws then); a
 * malformed row fails its partition's task with an error naming the file and the line.
 */
DataFrame read_csv(const std::string& path, const ReadCsvOptions& options = {});
DataFrame read_csv(const std::vector<std::string>& paths, const ReadCsvOptions& options = {});

/** @brief read_parquet's options. */
struct ReadParquetOptions {
  std::vector<std::string> columns;  ///< only these (empty: all)
  StorageOptions storage_options;
};

/** @brief A frame over Parquet files (a file, glob, directory of *.parquet, or s3:// path): one partition per file. */
DataFrame read_parquet(const std::string& path, const ReadParquetOptions& options = {});

/** @brief timeseries()'s options (Dask's dask.datasets.timeseries). */
struct TimeseriesOptions {
  std::string start = "2000-01-01";
  std::string end = "2000-01-31";
  /** Spacing of rows: "1s", "10ms", "1min", "1h", "1D". */
  std::string freq = "1s";
  /** Time span of each partition: "1D", "6h", ... */
  std::string partition_freq = "1D";
  std::uint64_t seed = 0;
};

/**
 * @brief Random demo data with columns timestamp, id (int64, Poisson-like around 1000), name
 * (string, one of 26 names), x and y (float64, uniform in [-1, 1)), one partition per
 * partition_freq span. Each value is a pure function of (seed, row), so partitions are
 * independent and any executor gives the same frame.
 */
DataFrame timeseries(const TimeseriesOptions& options = {});

}  // namespace tessera::dataframe
