// The .npy format: a magic string, a version, a little-endian header length, a Python dict
// literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded with spaces to a multiple
// of 64 bytes and ended by '\n', then the raw elements.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "tessera/array/io.hpp"

namespace tessera {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

// (descr, tessera dtype name) pairs; a dtype Tessera lacks is simply not found by name.
constexpr std::pair<const char*, const char*> kDescrs[] = {
    {"|b1", "bool"},      {"|i1", "int8"},     {"<i2", "int16"},    {"<i4", "int32"},
    {"<i8", "int64"},     {"|u1", "uint8"},    {"<u2", "uint16"},   {"<u4", "uint32"},
    {"<u8", "uint64"},    {"<f2", "float16"},  {"<f4", "float32"},  {"<f8", "float64"},
    {"<c8", "complex64"}, {"<c16", "complex128"},
};

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw IoError("npy file '" + path + "': " + why);
}

// The value of key `key` in the header dict, as its literal text (up to the next ',' at
// depth 0 or the closing brace).
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::string pattern = "'" + key + "'";
  auto k = header.find(pattern);
  if (k == std::string::npos) fail(path, "header has no '" + key + "': " + header);
  auto colon = header.find(':', k + pattern.size());
  if (colon == std::string::npos) fail(path, "malformed header: " + header);
  std::size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  int depth = 0;
  std::size_t j = i;
  for (; j < header.size(); ++j) {
    char c = header[j];
    if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = header.substr(i, j - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

Shape parse_shape(const std::string& text, const std::string& path) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') fail(path, "malformed shape " + text);
  Shape shape;
  std::size_t i = 1;
  while (i + 1 < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i + 1 >= text.size()) break;
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(text.substr(i), &used);
    } catch (const std::exception&) {
      fail(path, "malformed shape " + text);
    }
    if (n < 0 || used == 0) fail(path, "malformed shape " + text);
    shape.push_back(n);
    i += used;
  }
  return shape;
}

}  // namespace

std::string npy_descr(DType dtype) {
  const std::string_view name = dtype_name(dtype);
  for (auto& [descr, n] : kDescrs)
    if (name == n) return descr;
  throw IoError("no .npy descriptor for dtype " + std::string(name));
}

DType dtype_from_npy_descr(const std::string& descr) {
  std::string d = descr;
  // One-byte types may be written with any byte-order character.
  if (d.size() == 3 && d[2] == '1' && (d[0] == '<' || d[0] == '=' || d[0] == '>')) d[0] = '|';
  if (!d.empty() && d[0] == '=') d[0] = '<';
  for (auto& [ds, n] : kDescrs) {
    if (d != ds) continue;
    try {
      return dtype_from_name(n);
    } catch (const DTypeError&) {
      break;
    }
  }
  if (!d.empty() && d[0] == '>') throw IoError("big-endian .npy data ('" + descr + "') is not supported");
  throw IoError("unsupported .npy dtype '" + descr + "'");
}

Block load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  char prefix[8];
  if (!in.read(prefix, 8) || std::memcmp(prefix, kMagic, kMagicLen) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported format version " + std::to_string(major));
  }
  if (header_len > (1u << 24)) fail(path, "header length " + std::to_string(header_len) + " is implausible");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");
  std::string descr = dict_value(header, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) fail(path, "malformed descr " + descr);
  descr = descr.substr(1, descr.size() - 2);
  if (dict_value(header, "fortran_order", path) != "False") fail(path, "Fortran-order data is not supported");
  const Shape shape = parse_shape(dict_value(header, "shape", path), path);
  DType dtype;
  try {
    dtype = dtype_from_npy_descr(descr);
  } catch (const IoError& e) {
    fail(path, e.what());
  }
  Block block(dtype, shape);
  if (block.nbytes() && !in.read(static_cast<char*>(block.raw()), static_cast<std::streamsize>(block.nbytes())))
    fail(path, "truncated data: expected " + std::to_string(block.nbytes()) + " bytes for shape " +
                   shape_to_string(shape));
  return block;
}

void save_npy(const std::string& path, const Block& block) {
  if (block.empty()) throw IoError("save_npy('" + path + "'): empty block");
  if (block.memory_kind() == MemoryKind::Device) throw IoError("save_npy('" + path + "'): the block is in device memory");
  std::string shape = "(";
  for (std::size_t i = 0; i < block.shape().size(); ++i) {
    shape += std::to_string(block.shape()[i]);
    if (block.shape().size() == 1 || i + 1 < block.shape().size()) shape += ",";
    if (i + 1 < block.shape().size()) shape += " ";
  }
  shape += ")";
  std::string header = "{'descr': '" + npy_descr(block.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 holds headers up to 65535 bytes; larger ones (many dimensions) need 2.0.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const std::size_t prelude = kMagicLen + 2 + (v2 ? 4 : 2);
  const std::size_t total = (prelude + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prelude - header.size() - 1, ' ');
  header += '\n';
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError("save_npy('" + path + "'): cannot create: " + std::strerror(errno));
    out.write(kMagic, kMagicLen);
    const char version[2] = {static_cast<char>(v2 ? 2 : 1), 0};
    out.write(version, 2);
    const std::uint32_t n = static_cast<std::uint32_t>(header.size());
    const char len[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                         static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
    out.write(len, v2 ? 4 : 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(static_cast<const char*>(block.raw()), static_cast<std::streamsize>(block.nbytes()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw IoError("save_npy('" + path + "'): write failed (disk full?)");
    }
  }
  // Written whole, then renamed: a reader never sees half a file.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw IoError("save_npy('" + path + "'): cannot rename into place: " + why);
  }
}

}  // namespace tessera
