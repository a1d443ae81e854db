// .npy reading and writing of one Block (tessera/array/io.hpp). NumPy's side of the format is
// checked by the conformance harness, whose inputs NumPy writes and whose outputs NumPy reads.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/array/io.hpp"

namespace {

using namespace tessera;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tessera-npy-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const std::string path = temp_path("rt.npy");
  for (const Block& b : {Block::from_values<double>({1.5, -2, 3, 4, 5, 6}, {2, 3}),
                         Block::from_values<float>({1.5f, 2.5f}, {2}),
                         Block::from_values<std::int32_t>({7, -8, 9}, {3, 1}),
                         Block::from_values<std::int64_t>({1}, {}),
                         Block::from_values<bool>({true, false, true, true}, {2, 2}),
                         Block(DType::Float64, {0, 4})}) {
    save_npy(path, b);
    const Block r = load_npy(path);
    EXPECT_EQ(r.dtype(), b.dtype());
    EXPECT_EQ(r.shape(), b.shape());
    EXPECT_EQ(r.to_doubles(), b.to_doubles());
  }
  std::remove(path.c_str());
}

TEST(Npy, HeaderIsPaddedTo64BytesAndEndsWithNewline) {
  const std::string path = temp_path("hdr.npy");
  save_npy(path, Block::from_values<double>({1, 2, 3}, {3}));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(bytes.size(), 10u);
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_NE(bytes.find("'shape': (3,)"), std::string::npos);
  EXPECT_EQ(bytes.size(), 10 + header_len + 3 * sizeof(double));
  std::remove(path.c_str());
}

void expect_io_error(const std::string& path, const std::string& needle) {
  try {
    load_npy(path);
    FAIL() << "loaded " << path;
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Npy, BadFilesGiveClearErrors) {
  expect_io_error(temp_path("missing.npy"), "cannot open");
  const std::string path = temp_path("bad.npy");
  { std::ofstream(path) << "hello, world"; }
  expect_io_error(path, "bad magic");
  save_npy(path, Block::from_values<double>({1, 2, 3, 4}, {4}));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  expect_io_error(path, "truncated data");
  auto rewrite_header = [&](const std::string& from, const std::string& to) {
    save_npy(path, Block::from_values<double>({1, 2}, {2}));
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    in.close();
    bytes.replace(bytes.find(from), from.size(), to);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  rewrite_header("'fortran_order': False", "'fortran_order': True ");
  expect_io_error(path, "Fortran-order");
  rewrite_header("'<f8'", "'>f8'");
  expect_io_error(path, "big-endian");
  rewrite_header("'<f8'", "'<m8'");
  expect_io_error(path, "unsupported .npy dtype");
  std::remove(path.c_str());
}

TEST(Npy, SaveReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::string path = temp_path("replace.npy");
  save_npy(path, Block::from_values<double>({1, 2, 3}, {3}));
  save_npy(path, Block::from_values<std::int32_t>({4}, {1}));
  EXPECT_EQ(load_npy(path).dtype(), DType::Int32);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_THROW(save_npy("/nonexistent-dir/x.npy", Block::from_values<double>({1}, {1})), IoError);
  std::remove(path.c_str());
}

}  // namespace
