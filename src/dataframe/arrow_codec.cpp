// Host partitions (Arrow tables) as Native values, and their codec: a table crosses processes
// as its schema (Arrow IPC) plus each array's layout in a small cereal header, with every Arrow
// buffer as its own frame, so neither side copies column data.
#include <mutex>
#include <sstream>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/util/byte_size.h>
#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "frame_node.hpp"
#include "tessera/core/native.hpp"

namespace tessera::dataframe::detail {
namespace {

// An Arrow buffer over a tessera Buffer (a received frame), keeping it alive.
class FrameBuffer final : public arrow::Buffer {
 public:
  explicit FrameBuffer(std::shared_ptr<tessera::Buffer> frame)
      : arrow::Buffer(static_cast<const std::uint8_t*>(frame->data()), static_cast<std::int64_t>(frame->size())),
        frame_(std::move(frame)) {}

 private:
  std::shared_ptr<tessera::Buffer> frame_;
};

// One ArrayData's layout; buffers are frame indices (-1: absent, as a validity bitmap with no nulls).
struct ArrayLayout {
  std::int64_t length = 0, null_count = 0, offset = 0;
  std::vector<std::int64_t> buffers;
  std::vector<ArrayLayout> children;
  std::vector<ArrayLayout> dictionary;  // zero or one
  template <class A>
  void serialize(A& ar) {
    ar(length, null_count, offset, buffers, children, dictionary);
  }
};

struct TableLayout {
  std::string schema;  // Arrow IPC schema message
  std::int64_t rows = 0;
  std::vector<std::vector<ArrayLayout>> columns;  // per column, per chunk
  template <class A>
  void serialize(A& ar) {
    ar(schema, rows, columns);
  }
};

ArrayLayout describe(const arrow::ArrayData& d, std::vector<std::shared_ptr<tessera::Buffer>>& frames) {
  ArrayLayout l;
  l.length = d.length;
  l.null_count = d.null_count.load();
  l.offset = d.offset;
  for (const auto& b : d.buffers) {
    if (!b) {
      l.buffers.push_back(-1);
      continue;
    }
    l.buffers.push_back(static_cast<std::int64_t>(frames.size()));
    frames.push_back(tessera::Buffer::adopt(const_cast<std::uint8_t*>(b->data()), static_cast<std::size_t>(b->size()),
                                            MemoryKind::Host, -1, [keep = b](void*, std::size_t) {}));
  }
  for (const auto& c : d.child_data) l.children.push_back(describe(*c, frames));
  if (d.dictionary) l.dictionary.push_back(describe(*d.dictionary, frames));
  return l;
}

std::shared_ptr<arrow::ArrayData> rebuild(const ArrayLayout& l, const std::shared_ptr<arrow::DataType>& type,
                                          const std::vector<std::shared_ptr<tessera::Buffer>>& frames) {
  std::vector<std::shared_ptr<arrow::Buffer>> buffers;
  for (std::int64_t f : l.buffers) {
    if (f < 0) {
      buffers.emplace_back();
      continue;
    }
    if (static_cast<std::size_t>(f) >= frames.size() || !frames[f]) throw Error("arrow table: missing frame");
    buffers.push_back(std::make_shared<FrameBuffer>(frames[f]));
  }
  std::vector<std::shared_ptr<arrow::ArrayData>> children;
  if (static_cast<int>(l.children.size()) != type->num_fields()) throw Error("arrow table: child count mismatch");
  for (std::size_t i = 0; i < l.children.size(); ++i) children.push_back(rebuild(l.children[i], type->field(i)->type(), frames));
  auto d = arrow::ArrayData::Make(type, l.length, std::move(buffers), std::move(children), l.null_count, l.offset);
  if (!l.dictionary.empty()) {
    if (type->id() != arrow::Type::DICTIONARY) throw Error("arrow table: dictionary on a non-dictionary type");
    d->dictionary = rebuild(l.dictionary[0], static_cast<const arrow::DictionaryType&>(*type).value_type(), frames);
  }
  return d;
}

// A chunk as it is sent or spilled. A slice (a shuffle's shard, a head) shares the buffers of
// the whole array it came from, and a buffer becomes one frame whole: a shard of a partition
// split M ways would carry the whole partition, M times over, across the network and to disk.
// A chunk whose buffers hold much more than it refers to is copied compact first (one copy of
// the rows it has; arrow::Concatenate of one array rebases offsets and bitmaps).
std::shared_ptr<arrow::ArrayData> compact_for_sending(const std::shared_ptr<arrow::Array>& chunk) {
  const auto total = arrow::util::TotalBufferSize(*chunk->data());
  const auto referenced = arrow::util::ReferencedBufferSize(*chunk->data());
  constexpr std::int64_t kSlack = 64 * 1024;
  if (!referenced.ok() || total <= 2 * *referenced + kSlack) return chunk->data();
  auto compact = arrow::Concatenate({chunk});
  if (!compact.ok()) return chunk->data();  // sent whole, as before: correct, only larger
  return (*compact)->data();
}

NativeParts encode_table(const Native& n) {
  const auto& table = *static_cast<const arrow::Table*>(n.object.get());
  NativeParts parts;
  TableLayout layout;
  auto schema_buffer = unwrap(arrow::ipc::SerializeSchema(*table.schema()), "arrow table: schema");
  layout.schema = schema_buffer->ToString();
  layout.rows = table.num_rows();
  for (const auto& column : table.columns()) {
    auto& chunks = layout.columns.emplace_back();
    for (const auto& chunk : column->chunks()) chunks.push_back(describe(*compact_for_sending(chunk), parts.frames));
  }
  std::ostringstream os;
  {
    cereal::BinaryOutputArchive ar(os);
    ar(layout);
  }
  parts.header = std::move(os).str();
  return parts;
}

Native decode_table(const std::string& header, std::vector<std::shared_ptr<tessera::Buffer>> frames) {
  TableLayout layout;
  try {
    std::istringstream is(header);
    cereal::BinaryInputArchive ar(is);
    ar(layout);
  } catch (const std::exception& e) {
    throw Error(std::string("arrow table: corrupt header: ") + e.what());
  }
  arrow::io::BufferReader reader(std::make_shared<arrow::Buffer>(layout.schema));
  auto schema = unwrap(arrow::ipc::ReadSchema(&reader, nullptr), "arrow table: schema");
  if (static_cast<int>(layout.columns.size()) != schema->num_fields()) throw Error("arrow table: column count mismatch");
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns;
  for (int c = 0; c < schema->num_fields(); ++c) {
    arrow::ArrayVector chunks;
    for (const auto& l : layout.columns[c]) {
      auto d = rebuild(l, schema->field(c)->type(), frames);
      chunks.push_back(arrow::MakeArray(d));
    }
    columns.push_back(std::make_shared<arrow::ChunkedArray>(std::move(chunks), schema->field(c)->type()));
  }
  auto table = arrow::Table::Make(schema, std::move(columns), layout.rows);
  check_arrow(table->Validate(), "arrow table: received table is invalid");
  return table_value(std::move(table)).native();
}

const arrow::Table& table_in(const Native& n) { return *static_cast<const arrow::Table*>(n.object.get()); }

std::int64_t table_rows(const Native& n) { return table_in(n).num_rows(); }

// The parts' rows one after another, compact: one array per column, copied (arrow::Concatenate
// copies even a single array, rebasing a slice's offsets and bitmaps), so that the result holds
// only its own rows however many slices of larger buffers went in.
Native concat_tables(const std::vector<Native>& parts) {
  if (parts.empty()) throw Error("arrow table: nothing to concatenate");
  const auto& schema = table_in(parts.front()).schema();
  std::int64_t rows = 0;
  for (const auto& p : parts) {
    if (!table_in(p).schema()->Equals(*schema, /*check_metadata=*/false))
      throw Error("arrow table: cannot concatenate tables of different schemas (" + schema->ToString() + " and " +
                  table_in(p).schema()->ToString() + ")");
    rows += table_in(p).num_rows();
  }
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (int c = 0; c < schema->num_fields(); ++c) {
    arrow::ArrayVector chunks;
    for (const auto& p : parts)
      for (const auto& chunk : table_in(p).column(c)->chunks()) chunks.push_back(chunk);
    if (chunks.empty()) chunks.push_back(unwrap(arrow::MakeEmptyArray(schema->field(c)->type()), "arrow table"));
    columns.push_back(unwrap(arrow::Concatenate(chunks), "arrow table: concatenating column " + schema->field(c)->name()));
  }
  return table_value(arrow::Table::Make(schema, std::move(columns), rows)).native();
}

std::vector<Native> split_table(const Native& n, const std::vector<std::int64_t>& rows) {
  const auto& table = table_in(n);
  std::int64_t at = 0;
  std::vector<Native> pieces;
  pieces.reserve(rows.size());
  for (auto r : rows) {
    if (r < 0 || at + r > table.num_rows())
      throw Error("arrow table: cannot cut " + std::to_string(table.num_rows()) + " rows into the pieces asked for");
    pieces.push_back(table_value(table.Slice(at, r)).native());
    at += r;
  }
  if (at != table.num_rows())
    throw Error("arrow table: pieces of " + std::to_string(at) + " rows cut from " + std::to_string(table.num_rows()));
  return pieces;
}

const bool arrow_codec_registered = [] {
  register_native_codec(kArrowTableType, NativeCodec{encode_table, decode_table, table_rows, concat_tables, split_table});
  return true;
}();

}  // namespace

Value table_value(std::shared_ptr<arrow::Table> table) {
  const auto bytes = static_cast<std::size_t>(arrow::util::TotalBufferSize(*table));
  return Value(Native{kArrowTableType, std::shared_ptr<const void>(std::move(table)), bytes});
}

std::shared_ptr<arrow::Table> host_table_of(const Value& value, const std::string& what) {
  if (!value.is_native() || value.native().type != kArrowTableType)
    throw Error(what + ": expected a host partition (arrow.table), got " + value.describe());
  return std::const_pointer_cast<arrow::Table>(std::static_pointer_cast<const arrow::Table>(value.native().object));
}

void ensure_arrow_compute() {
  static std::once_flag once;
  std::call_once(once, [] { check_arrow(arrow::compute::Initialize(), "initialising Arrow compute"); });
}

}  // namespace tessera::dataframe::detail
