// Arrays from and to files (tessera/array/io.hpp): raw binary files, HDF5 datasets and .npy stacks. Round
// trips over dtypes, shapes and chunkings (written in one chunking, read in another), files
// made outside Tessera, and bad input: a missing file, a wrong dtype, a truncated file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../distributed/cluster_fixture.hpp"
#include "tessera/tessera.hpp"

#if defined(TESSERA_TEST_HDF5)
#include <hdf5.h>
#endif

namespace {

using namespace tessera;
namespace fs = std::filesystem;

/** A fresh directory under the temporary folder, removed with everything in it. */
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tessera-io-" + std::to_string(::getpid()) + "-" + unique_name("t"));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<std::uint8_t> bytes_of(const Block& b) {
  const auto* p = static_cast<const std::uint8_t*>(b.raw());
  return {p, p + b.nbytes()};
}

/**
 * An array of each dtype, held as chunks (normals computed in another chunking may differ in
 * the last bit: the values written must be the values compared).
 */
Array sample(DType dtype, const Shape& shape, const ChunkSpec& chunks, std::uint64_t seed = 1) {
  Array x;
  if (dtype == DType::Bool) x = random::integers(seed, 0, 2, shape, chunks) == Scalar(std::int64_t{1});
  else if (dtype == DType::Float64 || dtype == DType::Float32) x = random::normal(seed, 0, 10, shape, chunks).astype(dtype);
  else x = random::integers(seed, -1000000, 1000000, shape, chunks, dtype);
  return from_block(x.compute(), chunks);
}

const std::vector<DType> kDtypes{DType::Float64, DType::Float32, DType::Int64, DType::Int32, DType::Bool};

struct Case {
  Shape shape;
  ChunkSpec write_chunks, read_chunks;
};
const std::vector<Case> kCases{
    {{}, {}, {}},
    {{0}, {5}, {3}},
    {{17}, {5}, {-1}},
    {{17}, {-1}, {4}},
    {{7, 9}, {3, 4}, {7, 2}},
    {{7, 9}, {7, 9}, {2, 9}},
    {{3, 5, 4}, {1, 2, 3}, {3, 5, 1}},
    {{3, 5, 4}, {2, 5, 4}, {1, 1, 4}},
};

// ---- raw -------------------------------------------------------------------------------------

TEST(ArrayIoRaw, RoundTripsEveryDtypeShapeAndChunking) {
  TempDir dir;
  for (DType dtype : kDtypes)
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_to_string(c.shape));
      const Array a = sample(dtype, c.shape, c.write_chunks);
      const Block want = a.compute();
      const std::string path = dir.file("a.raw");
      to_raw(a, path, local_executor("threads"));
      EXPECT_EQ(fs::file_size(path), want.nbytes());
      const Array b = from_raw(path, dtype, c.shape, c.read_chunks);
      EXPECT_EQ(b.dtype(), dtype);
      EXPECT_EQ(b.shape(), c.shape);
      const Block got = b.compute(local_executor("threads"));
      EXPECT_EQ(bytes_of(got), bytes_of(want));
      // The file is the array in C order, as numpy's tofile writes it.
      std::ifstream in(path, std::ios::binary);
      std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(file, bytes_of(want));
    }
}

TEST(ArrayIoRaw, ReadsAFileWrittenElsewhereAtAnOffset) {
  TempDir dir;
  const std::string path = dir.file("with_header.bin");
  std::vector<double> v(6 * 10);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * static_cast<double>(i);
  {
    std::ofstream out(path, std::ios::binary);
    out.write("HEADER--", 8);
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(double)));
    out.write("trailing", 8);  // more bytes than the array needs is fine
  }
  const Array a = from_raw(path, DType::Float64, {6, 10}, {4, 3}, 8);
  EXPECT_EQ(a.compute().to_doubles(), v);
  // Slices and reductions over it read what they need.
  const double kept = a[{slice(1, 3), step(2)}].sum().compute().item();
  EXPECT_DOUBLE_EQ(kept, 0.5 * (10 + 12 + 14 + 16 + 18 + 20 + 22 + 24 + 26 + 28));
}

TEST(ArrayIoRaw, BadInputGivesClearErrors) {
  TempDir dir;
  const std::string missing = dir.file("missing.raw");
  try {
    from_raw(missing, DType::Float64, {4}, {2});
    FAIL() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  // Too short for the shape and dtype (a truncated file, or the wrong dtype).
  const std::string path = dir.file("short.raw");
  to_raw(arange(0, 10, 1, 4), path);  // 10 int64: 80 bytes
  EXPECT_NO_THROW(from_raw(path, DType::Int64, {10}, {3}));
  EXPECT_NO_THROW(from_raw(path, DType::Int32, {20}, {3}));
  try {
    from_raw(path, DType::Int64, {11}, {3});
    FAIL() << "no error for a file too short";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 80 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(from_raw(path, DType::Int64, {10}, {3}, 8), Error);
  EXPECT_THROW(from_raw(path, DType::Int64, {10}, {3}, -1), Error);
  EXPECT_THROW(from_raw(path, DType::Int64, {-10}, {3}), ShapeError);
  EXPECT_THROW(from_raw(dir.path.string(), DType::Int64, {1}, {1}), Error);  // a directory
  // Truncated after the array was made: its tasks fail, naming the file.
  const Array a = from_raw(path, DType::Int64, {10}, {3});
  fs::resize_file(path, 40);
  try {
    a.compute(local_executor("sync"));
    FAIL() << "no error for a file truncated under the array";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ends before the array does"), std::string::npos) << e.what();
  }
  EXPECT_THROW(to_raw(arange(0, 4, 1, 2), dir.file("no/such/dir/x.raw")), Error);
}

// ---- HDF5 ------------------------------------------------------------------------------------

#define SKIP_WITHOUT_HDF5() \
  if (!hdf5_supported()) GTEST_SKIP() << "built without HDF5"

TEST(ArrayIoHdf5, RoundTripsEveryDtypeShapeAndChunking) {
  SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string path = dir.file("a.h5");
  int k = 0;
  for (DType dtype : kDtypes)
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_to_string(c.shape));
      const Array a = sample(dtype, c.shape, c.write_chunks, static_cast<std::uint64_t>(k));
      const std::string name = "group/x" + std::to_string(k++);  // many datasets in one file
      to_hdf5(a, path, name, local_executor("threads"));
      const Array b = from_hdf5(path, name, c.read_chunks);
      EXPECT_EQ(b.dtype(), dtype);
      EXPECT_EQ(b.shape(), c.shape);
      EXPECT_EQ(bytes_of(b.compute(local_executor("threads"))), bytes_of(a.compute()));
    }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}), 1) << "files beside a.h5";
}

TEST(ArrayIoHdf5, ManyChunkTasksWriteOneFile) {
  SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string path = dir.file("many.h5");
  const Array a = random::normal(3, 0, 1, {200, 150}, {10, 15});  // 200 chunk tasks, 4 threads
  to_hdf5(a, path, "x", local_executor("threads"));
  to_hdf5(a * 2.0, path, "y", local_executor("threads"));
  const Block x = from_hdf5(path, "x", {64, 64}).compute();
  EXPECT_EQ(bytes_of(x), bytes_of(a.compute()));
  const auto y = from_hdf5(path, "y", {-1}).compute().to_doubles();
  const auto xv = x.to_doubles();
  for (std::size_t i = 0; i < xv.size(); ++i) ASSERT_EQ(y[i], 2 * xv[i]);
}

// A whole to_hdf5 run inside a worker: four datasets of one file.
std::int64_t io_test_write_hdf5(std::string path, std::int64_t seed) {
  for (int k = 0; k < 4; ++k)
    to_hdf5(random::normal(static_cast<std::uint64_t>(seed), 0, 1, {200, 100}, {10, 50}), path,
            "d" + std::to_string(seed) + "_" + std::to_string(k), local_executor("sync"));
  return seed;
}
TESSERA_REGISTER_FUNCTION_AS("test_io.write_hdf5", io_test_write_hdf5);

TEST(ArrayIoHdf5, WriterProcessesTakeTurnsOnOneFile) {
  SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string path = dir.file("shared.h5");
  // Before the directory lock (a lock file beside the data, removed by each to_hdf5 when done),
  // writers in other processes could both go ahead, and HDF5's own lock failed one of them.
  distributed::LocalCluster cluster(tessera_test::processes_over_tcp());
  distributed::Client client(cluster, tessera_test::client_options(cluster.token(), 10));
  ASSERT_TRUE(client.wait_for_workers(2, std::chrono::seconds(10)));
  std::vector<distributed::TypedFuture<std::int64_t>> writes;
  for (std::int64_t seed = 1; seed <= 4; ++seed) writes.push_back(client.submit(io_test_write_hdf5, path, seed));
  for (std::int64_t seed = 1; seed <= 4; ++seed) EXPECT_EQ(writes[seed - 1].result(), seed);
  for (std::int64_t seed = 1; seed <= 4; ++seed)
    for (int k = 0; k < 4; ++k) {
      const Block got = from_hdf5(path, "d" + std::to_string(seed) + "_" + std::to_string(k), {64}).compute();
      EXPECT_EQ(bytes_of(got), bytes_of(random::normal(static_cast<std::uint64_t>(seed), 0, 1, {200, 100}, {10, 50}).compute()))
          << seed << " " << k;
    }
}

TEST(ArrayIoHdf5, BadInputGivesClearErrors) {
  SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string path = dir.file("b.h5");
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(message([&] { from_hdf5(dir.file("missing.h5"), "x", {2}); }).find("missing.h5"), std::string::npos);
  to_hdf5(arange(0, 10, 1, 4), path, "x");
  EXPECT_NE(message([&] { from_hdf5(path, "nope", {2}); }).find("no dataset nope"), std::string::npos);
  EXPECT_NE(message([&] { to_hdf5(arange(0, 3, 1, 2), path, "x"); }).find("already has a dataset x"), std::string::npos);
  // Not an HDF5 file, for reading or for adding to.
  const std::string raw = dir.file("plain.raw");
  to_raw(arange(0, 10, 1, 4), raw);
  EXPECT_NE(message([&] { from_hdf5(raw, "x", {2}); }).find("not an HDF5 file"), std::string::npos);
  EXPECT_NE(message([&] { to_hdf5(arange(0, 3, 1, 2), raw, "x"); }).find("not an HDF5 file"), std::string::npos);
#if defined(TESSERA_TEST_HDF5)
  // Element types Tessera has no dtype for.
  {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hsize_t dims[1] = {4};
    hid_t space = H5Screate_simple(1, dims, nullptr);
    hid_t ds = H5Dcreate2(file, "int16", H5T_STD_I16LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    ds = H5Dcreate2(file, "uint64", H5T_STD_U64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(file);
  }
  try {
    from_hdf5(path, "int16", {2});
    FAIL() << "no error for an int16 dataset";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("signed 16-bit integer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(from_hdf5(path, "uint64", {2}), DTypeError);
#endif
  // Removed after the array was made: its tasks fail, naming the file.
  const Array a = from_hdf5(path, "x", {3});
  fs::remove(path);
  EXPECT_NE(message([&] { a.compute(local_executor("sync")); }).find(path), std::string::npos);
}

// ---- .npy stacks -----------------------------------------------------------------------------

TEST(ArrayIoNpyStack, RoundTripsAlongEveryAxis) {
  TempDir dir;
  int k = 0;
  for (DType dtype : kDtypes)
    for (const Case& c : kCases) {
      if (c.shape.empty()) continue;
      for (int axis = 0; axis < static_cast<int>(c.shape.size()); ++axis) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_to_string(c.shape) + " axis " + std::to_string(axis));
        const Array a = sample(dtype, c.shape, c.write_chunks, static_cast<std::uint64_t>(k));
        const std::string d = dir.file("stack" + std::to_string(k++));
        to_npy_stack(d, a, axis, local_executor("threads"));
        const Array b = from_npy_stack(d);
        EXPECT_EQ(b.dtype(), dtype);
        EXPECT_EQ(b.shape(), c.shape);
        // One file per chunk along the axis, each whole on the other axes.
        for (int o = 0; o < static_cast<int>(c.shape.size()); ++o) {
          if (o != axis) {
            EXPECT_EQ(b.chunks()[o].size(), 1u);
          }
        }
        for (std::size_t i = 0; i < b.chunks()[axis].size(); ++i) {
          const Block part = load_npy(d + "/" + std::to_string(i) + ".npy");
          EXPECT_EQ(part.shape()[axis], b.chunks()[axis][i]);
        }
        EXPECT_EQ(bytes_of(b.compute(local_executor("threads"))), bytes_of(a.compute()));
      }
    }
}

TEST(ArrayIoNpyStack, KeepsIrregularChunksAndWritesInfoJson) {
  TempDir dir;
  const Array a = concatenate({arange(0, 5, 1, 5), arange(5, 12, 1, 7)}, 0);  // chunks (5, 7)
  ASSERT_EQ(a.chunks()[0], (std::vector<std::int64_t>{5, 7}));
  const std::string d = dir.file("s");
  to_npy_stack(d, a);
  std::ifstream in(d + "/info.json");
  const std::string info((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(info.find("\"format\": \"tessera-npy-stack\""), std::string::npos) << info;
  EXPECT_NE(info.find("\"dtype\": \"<i8\""), std::string::npos) << info;
  EXPECT_NE(info.find("\"chunks\": [5, 7]"), std::string::npos) << info;
  const Array b = from_npy_stack(d);
  EXPECT_EQ(b.chunks()[0], (std::vector<std::int64_t>{5, 7}));
  EXPECT_EQ(b.compute().to_doubles(), a.compute().to_doubles());
  // Negative axes count from the end; 0-d arrays and axes out of range are refused.
  to_npy_stack(dir.file("neg"), random::normal(1, 0, 1, {4, 6}, {2, 3}), -1);
  EXPECT_EQ(from_npy_stack(dir.file("neg")).chunks()[1], (std::vector<std::int64_t>{3, 3}));
  EXPECT_THROW(to_npy_stack(dir.file("x"), scalar(1.0)), ShapeError);
  EXPECT_THROW(to_npy_stack(dir.file("x"), arange(0, 4, 1, 2), 1), IndexError);
}

TEST(ArrayIoNpyStack, BadInputGivesClearErrors) {
  TempDir dir;
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(message([&] { from_npy_stack(dir.file("none")); }).find("info.json"), std::string::npos);
  const std::string d = dir.file("s");
  to_npy_stack(d, random::normal(2, 0, 1, {9, 2}, {3, 2}));
  // A missing chunk file.
  fs::rename(d + "/2.npy", d + "/moved.npy");
  EXPECT_NE(message([&] { from_npy_stack(d); }).find("2.npy is missing"), std::string::npos);
  // A chunk file of another dtype: the task reading it fails, naming it.
  save_npy(d + "/2.npy", Block::from_values(std::vector<std::int64_t>(6, 1), {3, 2}));
  const Array a = from_npy_stack(d);
  const std::string m = message([&] { a.compute(local_executor("sync")); });
  EXPECT_NE(m.find("2.npy holds int64"), std::string::npos) << m;
  // A truncated chunk file: load_npy's error.
  fs::resize_file(d + "/2.npy", 100);
  EXPECT_THROW(a.compute(local_executor("sync")), Error);
  // info.json that is not ours, or whose chunks do not add up.
  {
    std::ofstream(d + "/info.json") << "{\"format\": \"dask\", \"version\": 1}";
  }
  EXPECT_NE(message([&] { from_npy_stack(d); }).find("not a tessera-npy-stack"), std::string::npos);
  {
    std::ofstream(d + "/info.json") << "{\"format\": \"tessera-npy-stack\", \"version\": 1, \"dtype\": \"<f8\", "
                                       "\"shape\": [9, 2], \"axis\": 0, \"chunks\": [3, 3]}";
  }
  EXPECT_NE(message([&] { from_npy_stack(d); }).find("do not make the shape"), std::string::npos);
  {
    std::ofstream(d + "/info.json") << "{not json";
  }
  EXPECT_NE(message([&] { from_npy_stack(d); }).find("malformed"), std::string::npos);
}

}  // namespace
