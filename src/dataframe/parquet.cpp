// read_parquet (one partition per file, reading only the columns consumers need) and
// to_parquet (one file per partition).
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/filesystem/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>

#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "device_convert.hpp"
#include "filesystem.hpp"
#include "frame_node.hpp"
#include "tessera/dataframe/io.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::dataframe {
namespace detail {
namespace {

struct ParquetPiece {
  std::string uri;
  Storage storage;
  template <class A>
  void serialize(A& ar) {
    ar(uri, storage);
  }
};

struct ParquetTarget {
  std::string directory;
  std::int64_t index = 0;
  template <class A>
  void serialize(A& ar) {
    ar(directory, index);
  }
};

std::unique_ptr<parquet::arrow::FileReader> open_parquet(const std::string& uri, const Storage& storage) {
  std::string path;
  auto fs = filesystem_for(uri, storage, &path);
  auto file = unwrap(fs->OpenInputFile(path), "read_parquet: cannot open " + uri);
  return unwrap(parquet::arrow::OpenFile(file, arrow::default_memory_pool()), "read_parquet: " + uri);
}

// Arrow's view types (string_view, binary_view: what tpchgen-cli and Polars write) have few
// compute kernels yet (no comparison with a string, no take): columns of them are read as string
// and binary, which every kernel takes.
std::shared_ptr<arrow::DataType> readable_type(const std::shared_ptr<arrow::DataType>& t) {
  if (t->id() == arrow::Type::STRING_VIEW) return arrow::utf8();
  if (t->id() == arrow::Type::BINARY_VIEW) return arrow::binary();
  return t;
}

std::shared_ptr<arrow::Schema> readable_schema(const std::shared_ptr<arrow::Schema>& schema) {
  arrow::FieldVector fields;
  for (const auto& f : schema->fields()) fields.push_back(f->WithType(readable_type(f->type())));
  return arrow::schema(fields, schema->metadata());
}

std::shared_ptr<arrow::Table> readable_table(std::shared_ptr<arrow::Table> table, const std::string& uri) {
  for (int i = 0; i < table->num_columns(); ++i) {
    const auto& f = table->field(i);
    auto want = readable_type(f->type());
    if (want == f->type()) continue;
    ensure_arrow_compute();
    auto cast = unwrap(arrow::compute::Cast(arrow::Datum(table->column(i)), want), "read_parquet: " + uri);
    table = unwrap(table->SetColumn(i, f->WithType(want), cast.chunked_array()), "read_parquet: " + uri);
  }
  return table;
}

Value read_parquet_piece(const OpContext&, std::span<const Value> args) {
  const auto piece = from_object<ParquetPiece>(arg(args, 0).object());
  const auto include = from_object<std::vector<std::string>>(arg(args, 1).object());
  auto reader = open_parquet(piece.uri, piece.storage);
  std::shared_ptr<arrow::Schema> schema;
  check_arrow(reader->GetSchema(&schema), "read_parquet: " + piece.uri);
  std::vector<int> indices;
  for (const auto& c : include) {
    const int i = schema->GetFieldIndex(c);
    if (i < 0) throw Error("read_parquet: " + piece.uri + " has no column '" + c + "'");
    indices.push_back(i);
  }
  return table_value(readable_table(unwrap(reader->ReadTable(indices), "read_parquet: " + piece.uri), piece.uri));
}

Value write_piece(const OpContext&, std::span<const Value> args) {
  const auto target = from_object<ParquetTarget>(arg(args, 0).object());
  auto table = table_of(arg(args, 1), "to_parquet");
  const std::string uri = target.directory + "/part." + std::to_string(target.index) + ".parquet";
  std::string path;
  auto fs = filesystem_for(uri, Storage{}, &path);
  check_arrow(fs->CreateDir(target.directory, true), "to_parquet: cannot create " + target.directory);
  auto out = unwrap(fs->OpenOutputStream(path), "to_parquet: cannot create " + uri);
  check_arrow(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, 1 << 20), "to_parquet: " + uri);
  check_arrow(out->Close(), "to_parquet: " + uri);
  return Value(Block::scalar<std::int64_t>(table->num_rows()));
}

const bool parquet_registered = [] {
  register_op(kOpReadParquet, read_parquet_piece);
  register_op(kOpWriteParquet, write_piece);
  return true;
}();

}  // namespace
}  // namespace detail

DataFrame read_parquet(const std::string& path, const ReadParquetOptions& options) {
  using namespace detail;
  const Storage storage = storage_of(options.storage_options);
  const auto files = expand_paths({path}, storage, ".parquet");
  std::shared_ptr<arrow::Schema> schema;
  check_arrow(open_parquet(files.front(), storage)->GetSchema(&schema), "read_parquet: " + files.front());
  schema = readable_schema(schema);
  if (!options.columns.empty()) {
    arrow::FieldVector kept;
    for (const auto& c : options.columns) {
      auto f = schema->GetFieldByName(c);
      if (!f) throw Error("read_parquet: " + files.front() + " has no column '" + c + "' (columns: " + schema->ToString() + ")");
      kept.push_back(f);
    }
    schema = arrow::schema(kept);
  }
  auto node = make_node(NodeKind::Source, "read-parquet");
  node->source_op = kOpReadParquet;
  for (const auto& f : files) node->source_params.push_back(to_object(ParquetPiece{f, storage}, "tessera.frame.ParquetPiece"));
  node->schema = schema;
  node->npartitions = static_cast<std::int64_t>(files.size());
  return DataFrame(node);
}

void DataFrame::to_parquet(const std::string& directory, Executor& executor) const {
  using namespace detail;
  DataFrame host = to_host();
  FrameLowering low(&executor);
  auto keys = low.lower(host.node());
  std::vector<Key> outs;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    Task t;
    t.key = unique_name("to-parquet") + "-" + std::to_string(i);
    t.op = kOpWriteParquet;
    t.args = {Value(to_object(ParquetTarget{directory, static_cast<std::int64_t>(i)}, "tessera.frame.ParquetTarget")),
              KeyRef{keys[i]}};
    outs.push_back(t.key);
    low.graph().add(std::move(t));
  }
  executor.get(low.graph(), outs);
}

}  // namespace tessera::dataframe
