// read_csv: the files' header and column types are read from the first file's first bytes
// when the frame is built; each partition is a byte range of one file, moved to line boundaries
// and parsed by Arrow's CSV reader with those types, reading only the columns consumers need.
#include <arrow/api.h>
#include <arrow/csv/api.h>
#include <arrow/filesystem/api.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>

#include <algorithm>
#include <cstring>
#include <regex>

#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "column_expr.hpp"
#include "filesystem.hpp"
#include "frame_node.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe {
namespace detail {
namespace {

/** One partition: bytes [offset, offset + length) of a file, moved to line boundaries. */
struct CsvPiece {
  std::string uri;
  std::int64_t offset = 0, length = 0;
  bool header = true;               // the file starts with a header line
  std::vector<std::string> names;   // every column of the file, in order
  std::vector<std::string> types;   // their Arrow types
  Storage storage;
  template <class A>
  void serialize(A& ar) {
    ar(uri, offset, length, header, names, types, storage);
  }
};

std::shared_ptr<arrow::Buffer> read_range(arrow::io::RandomAccessFile& file, std::int64_t pos, std::int64_t n,
                                          const std::string& uri) {
  return unwrap(file.ReadAt(pos, n), "reading " + uri);
}

// Where the line containing byte `pos` of the file ends: the index just past its '\n' (or
// the file size). Reads forward in steps from `pos`.
std::int64_t line_end_at_or_after(arrow::io::RandomAccessFile& file, std::int64_t pos, std::int64_t size,
                                  const std::string& uri) {
  constexpr std::int64_t kStep = 1 << 16;
  while (pos < size) {
    auto chunk = read_range(file, pos, std::min(kStep, size - pos), uri);
    const auto* d = reinterpret_cast<const char*>(chunk->data());
    if (const void* nl = std::memchr(d, '\n', static_cast<std::size_t>(chunk->size())))
      return pos + (static_cast<const char*>(nl) - d) + 1;
    pos += chunk->size();
  }
  return size;
}

std::int64_t count_lines(arrow::io::RandomAccessFile& file, std::int64_t end, const std::string& uri) {
  std::int64_t lines = 0;
  constexpr std::int64_t kStep = 1 << 20;
  for (std::int64_t pos = 0; pos < end; pos += kStep) {
    auto chunk = read_range(file, pos, std::min(kStep, end - pos), uri);
    lines += std::count(chunk->data(), chunk->data() + chunk->size(), '\n');
  }
  return lines;
}

std::string first_line(const std::shared_ptr<arrow::Buffer>& b) {
  const auto* d = reinterpret_cast<const char*>(b->data());
  const auto n = static_cast<std::size_t>(b->size());
  const void* nl = std::memchr(d, '\n', n);
  std::string line(d, nl ? static_cast<const char*>(nl) - d : n);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// Arrow's messages name the row ("Row #12") within the bytes it parsed, or quote it; turn that
// into the file's line number.
std::string where_in_file(const std::string& message, const std::shared_ptr<arrow::Buffer>& bytes,
                          std::int64_t lines_before) {
  std::smatch m;
  if (std::regex_search(message, m, std::regex("Row #([0-9]+)")))
    return "line " + std::to_string(lines_before + std::stoll(m[1].str()));
  // "Expected 18 columns, got 16: <row text>": find the row in the bytes.
  const auto colon = message.rfind(": ");
  if (colon != std::string::npos && colon + 2 < message.size()) {
    const std::string row = message.substr(colon + 2);
    const std::string_view all(reinterpret_cast<const char*>(bytes->data()), static_cast<std::size_t>(bytes->size()));
    const auto at = all.find(row);
    if (at != std::string_view::npos)
      return "line " + std::to_string(lines_before + std::count(all.begin(), all.begin() + at, '\n') + 1);
  }
  return "lines after " + std::to_string(lines_before);
}

// Local files are memory-mapped: the parser reads the page cache in place, with no copy into
// freshly zeroed buffers (a quarter of the time of a read() into a new buffer, measured).
std::shared_ptr<arrow::io::RandomAccessFile> open_input(const std::string& uri, const Storage& storage) {
  std::string path;
  auto fs = filesystem_for(uri, storage, &path);
  if (uri.rfind("s3://", 0) != 0)
    return unwrap(arrow::io::MemoryMappedFile::Open(path, arrow::io::FileMode::READ), "cannot open " + uri);
  return unwrap(fs->OpenInputFile(path), "cannot open " + uri);
}

Value read_csv_piece(const OpContext&, std::span<const Value> args) {
  const auto piece = from_object<CsvPiece>(arg(args, 0).object());
  const auto include = from_object<std::vector<std::string>>(arg(args, 1).object());
  auto file = open_input(piece.uri, piece.storage);
  const std::int64_t size = unwrap(file->GetSize(), piece.uri);
  // Lines belong to the partition their first byte falls in.
  std::int64_t begin = piece.offset == 0 ? 0 : line_end_at_or_after(*file, piece.offset - 1, size, piece.uri);
  std::int64_t end = std::min(size, piece.offset + piece.length);
  if (end < size) end = line_end_at_or_after(*file, end - 1, size, piece.uri);
  if (begin > end) begin = end;
  auto bytes = read_range(*file, begin, end - begin, piece.uri);

  const bool skip_header = piece.header && piece.offset == 0;
  if (skip_header && bytes->size() > 0) {
    std::string expected;
    for (const auto& n : piece.names) expected += (expected.empty() ? "" : ",") + n;
    const std::string got = first_line(bytes);
    if (got != expected)
      throw Error("read_csv: " + piece.uri + " has the header '" + got + "', but the first file has '" + expected + "'");
  }

  auto read = arrow::csv::ReadOptions::Defaults();
  read.use_threads = false;  // partitions run in parallel already
  read.block_size = 1 << 22;
  read.column_names = piece.names;
  read.skip_rows = skip_header ? 1 : 0;
  auto parse = arrow::csv::ParseOptions::Defaults();
  // Without a quote character in the bytes, quoting cannot matter; the parser's unquoted path
  // is faster.
  if (!std::memchr(bytes->data(), parse.quote_char, static_cast<std::size_t>(bytes->size()))) parse.quoting = false;
  auto convert = arrow::csv::ConvertOptions::Defaults();
  convert.strings_can_be_null = true;  // an empty field is missing, as in pandas
  for (std::size_t i = 0; i < piece.names.size(); ++i) convert.column_types[piece.names[i]] = parse_type(piece.types[i]);
  convert.include_columns = include.empty() ? piece.names : include;

  auto input = std::make_shared<arrow::io::BufferReader>(bytes);
  auto result = arrow::csv::TableReader::Make(arrow::io::default_io_context(), input, read, parse, convert);
  arrow::Result<std::shared_ptr<arrow::Table>> table =
      result.ok() ? (*result)->Read() : arrow::Result<std::shared_ptr<arrow::Table>>(result.status());
  if (!table.ok()) {
    const std::string message = table.status().message();
    const std::int64_t lines_before = count_lines(*file, begin, piece.uri);
    throw Error("read_csv: " + piece.uri + ", " + where_in_file(message, bytes, lines_before) + ": " +
                message);
  }
  return table_value(*table);
}

const bool csv_registered = [] {
  register_op(kOpReadCsv, read_csv_piece);
  return true;
}();

// The header and types from the first `sample` bytes of the first file (up to its last full
// line), then the options' overrides.
std::shared_ptr<arrow::Schema> infer_schema(const std::string& uri, const ReadCsvOptions& o, const Storage& storage) {
  std::string path;
  auto fs = filesystem_for(uri, storage, &path);
  auto file = unwrap(fs->OpenInputFile(path), "read_csv: cannot open " + uri);
  const std::int64_t size = unwrap(file->GetSize(), uri);
  std::int64_t end = std::min(size, std::max<std::int64_t>(o.sample, 1));
  if (end < size) end = line_end_at_or_after(*file, end - 1, size, uri);
  auto bytes = read_range(*file, 0, end, uri);
  auto read = arrow::csv::ReadOptions::Defaults();
  read.use_threads = false;
  auto convert = arrow::csv::ConvertOptions::Defaults();
  convert.strings_can_be_null = true;
  auto reader = unwrap(arrow::csv::TableReader::Make(arrow::io::default_io_context(),
                                                     std::make_shared<arrow::io::BufferReader>(bytes), read,
                                                     arrow::csv::ParseOptions::Defaults(), convert),
                       "read_csv: " + uri);
  auto sampled = reader->Read();
  if (!sampled.ok()) {
    const std::string message = sampled.status().message();
    throw Error("read_csv: " + uri + ", " + where_in_file(message, bytes, 0) + ": " + message +
                " (while reading the first " + std::to_string(end) + " bytes to infer the column types)");
  }
  auto sample = *sampled;
  arrow::FieldVector fields;
  for (const auto& f : sample->schema()->fields()) {
    auto type = f->type();
    if (type->id() == arrow::Type::NA) type = arrow::float64();  // all missing in the sample
    if (o.assume_missing && arrow::is_integer(type->id())) type = arrow::float64();
    fields.push_back(arrow::field(f->name(), type));
  }
  auto index_of = [&](const std::string& name, const char* option) {
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (fields[i]->name() == name) return i;
    std::string have;
    for (const auto& f : fields) have += (have.empty() ? "" : ", ") + f->name();
    throw Error(std::string("read_csv: ") + option + " names column '" + name + "', which " + uri +
                " does not have (columns: " + have + ")");
  };
  for (const auto& [name, type] : o.dtypes) fields[index_of(name, "dtypes")] = arrow::field(name, parse_type(type));
  for (const auto& name : o.parse_dates)
    fields[index_of(name, "parse_dates")] = arrow::field(name, arrow::timestamp(arrow::TimeUnit::SECOND));
  for (const auto& name : o.usecols) index_of(name, "usecols");
  return arrow::schema(fields);
}

}  // namespace
}  // namespace detail

DataFrame read_csv(const std::string& path, const ReadCsvOptions& options) {
  return read_csv(std::vector<std::string>{path}, options);
}

DataFrame read_csv(const std::vector<std::string>& paths, const ReadCsvOptions& options) {
  using namespace detail;
  const Storage storage = storage_of(options.storage_options);
  const auto files = expand_paths(paths, storage);
  auto schema = infer_schema(files.front(), options, storage);
  CsvPiece proto;
  proto.storage = storage;
  for (const auto& f : schema->fields()) {
    proto.names.push_back(f->name());
    proto.types.push_back(f->type()->ToString());
  }
  auto node = make_node(NodeKind::Source, "read-csv");
  node->source_op = kOpReadCsv;
  for (const auto& uri : files) {
    const std::int64_t size = file_size(uri, storage);
    // Pieces of equal length, at most blocksize: a 91 MB file in two 45 MB pieces, not 64 + 27,
    // so the partitions are even work for the threads.
    const std::int64_t extent = std::max<std::int64_t>(size, 1);
    const std::int64_t pieces = options.blocksize > 0 ? (extent + options.blocksize - 1) / options.blocksize : 1;
    const std::int64_t block = (extent + pieces - 1) / pieces;
    for (std::int64_t offset = 0; offset < extent; offset += block) {
      CsvPiece p = proto;
      p.uri = uri;
      p.offset = offset;
      p.length = block;
      node->source_params.push_back(to_object(p, "tessera.frame.CsvPiece"));
    }
  }
  if (!options.usecols.empty()) {
    arrow::FieldVector kept;
    for (const auto& f : schema->fields())
      if (std::find(options.usecols.begin(), options.usecols.end(), f->name()) != options.usecols.end())
        kept.push_back(f);
    schema = arrow::schema(kept);
  }
  node->schema = schema;
  node->npartitions = static_cast<std::int64_t>(node->source_params.size());
  return DataFrame(node);
}

}  // namespace tessera::dataframe
