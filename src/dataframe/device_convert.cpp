// Arrow tables <-> device frames, the device frame's codec, and the to_device / to_host tasks.
#include "device_convert.hpp"

#include <arrow/compute/api.h>

#include <cstring>
#include <sstream>

#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "arrow_util.hpp"
#include "column_expr.hpp"
#include "frame_node.hpp"
#include "tessera/core/device.hpp"
#include "tessera/core/native.hpp"
#include "tessera/ops/registry.hpp"
#include "tessera/ops/serialize.hpp"

#ifdef TESSERA_HAS_FRAME_ALGORITHMS
#include "device_algorithms.hpp"
#endif

namespace tessera::dataframe::detail {

namespace cp = arrow::compute;

namespace {

// An Arrow buffer's bytes (from element `offset` of `width` bytes) copied into a new Block.
Block copy_values(const arrow::Array& a, DType dtype) {
  Block b(dtype, {a.length()});
  const auto width = static_cast<std::int64_t>(itemsize(dtype));
  if (a.length() > 0)
    std::memcpy(b.raw(), a.data()->buffers[1]->data() + a.offset() * width, static_cast<std::size_t>(a.length() * width));
  return b;
}

Block bools_of(const arrow::BooleanArray& a) {
  Block b(DType::Bool, {a.length()});
  auto* out = static_cast<std::uint8_t*>(b.raw());
  for (std::int64_t i = 0; i < a.length(); ++i) out[i] = a.Value(i) ? 1 : 0;
  return b;
}

Block validity_of(const arrow::Array& a) {
  if (a.null_count() == 0) return Block();
  Block b(DType::Bool, {a.length()});
  auto* out = static_cast<std::uint8_t*>(b.raw());
  for (std::int64_t i = 0; i < a.length(); ++i) out[i] = a.IsValid(i) ? 1 : 0;
  return b;
}

std::shared_ptr<arrow::Buffer> bitmap_of(const Block& bytes, std::int64_t n, std::int64_t* null_count) {
  auto bitmap = unwrap(arrow::AllocateEmptyBitmap(n), "device frame");
  const auto* in = static_cast<const std::uint8_t*>(bytes.raw());
  *null_count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (in[i]) arrow::bit_util::SetBit(bitmap->mutable_data(), i);
    else ++*null_count;
  }
  return bitmap;
}

// A host Block's bytes as an Arrow buffer (no copy: the buffer keeps the Block's storage alive).
class BlockBuffer final : public arrow::Buffer {
 public:
  explicit BlockBuffer(const Block& b)
      : arrow::Buffer(static_cast<const std::uint8_t*>(b.raw()), static_cast<std::int64_t>(b.nbytes())),
        keep_(b.buffer()) {}

 private:
  std::shared_ptr<tessera::Buffer> keep_;
};

// The Arrow type of a column the device algorithms computed (it carries no Arrow type).
std::shared_ptr<arrow::DataType> arrow_type_of(DType t) {
  switch (t) {
    case DType::Bool: return arrow::boolean();
    case DType::Int8: return arrow::int8();
    case DType::Int16: return arrow::int16();
    case DType::Int32: return arrow::int32();
    case DType::Int64: return arrow::int64();
    case DType::UInt8: return arrow::uint8();
    case DType::UInt16: return arrow::uint16();
    case DType::UInt32: return arrow::uint32();
    case DType::UInt64: return arrow::uint64();
    case DType::Float16: return arrow::float16();
    case DType::Float32: return arrow::float32();
    case DType::Float64: return arrow::float64();
    case DType::Complex64: case DType::Complex128: break;
  }
  throw DTypeError("to_host: a " + std::string(dtype_name(t)) + " column has no Arrow type");
}

}  // namespace

DeviceFrame frame_from_table(const arrow::Table& input) {
  ensure_arrow_compute();
  auto table = unwrap(input.CombineChunks(), "to_device");
  DeviceFrame f;
  f.rows = table->num_rows();
  for (int c = 0; c < table->num_columns(); ++c) {
    const auto& field = table->schema()->field(c);
    auto array = table->column(c)->num_chunks() > 0
                     ? table->column(c)->chunk(0)
                     : unwrap(arrow::MakeArrayOfNull(field->type(), 0), "to_device");
    DeviceColumn col;
    col.name = field->name();
    col.logical_type = field->type()->ToString();
    col.valid = validity_of(*array);
    switch (array->type_id()) {
      case arrow::Type::DOUBLE: col.values = copy_values(*array, DType::Float64); break;
      case arrow::Type::FLOAT: col.values = copy_values(*array, DType::Float32); break;
      case arrow::Type::INT64:
      case arrow::Type::TIMESTAMP:
      case arrow::Type::DATE64: col.values = copy_values(*array, DType::Int64); break;
      case arrow::Type::INT32:
      case arrow::Type::DATE32: col.values = copy_values(*array, DType::Int32); break;
      case arrow::Type::INT16:
      case arrow::Type::INT8:
      case arrow::Type::UINT8:
      case arrow::Type::UINT16: {
        auto wide = unwrap(cp::Cast(*array, arrow::int32()), "to_device");
        col.values = copy_values(*wide, DType::Int32);
        col.logical_type = "int32";
        break;
      }
      case arrow::Type::BOOL: col.values = bools_of(static_cast<const arrow::BooleanArray&>(*array)); break;
      case arrow::Type::STRING:
      case arrow::Type::LARGE_STRING:
      case arrow::Type::DICTIONARY: {
        // Strings go as int32 codes into a dictionary, encoded here on the host.
        auto encoded = array->type_id() == arrow::Type::DICTIONARY
                           ? array
                           : unwrap(cp::DictionaryEncode(array), "to_device: encoding " + col.name).make_array();
        const auto& dict = static_cast<const arrow::DictionaryArray&>(*encoded);
        auto codes = unwrap(cp::Cast(*dict.indices(), arrow::int32()), "to_device");
        col.values = copy_values(*codes, DType::Int32);
        auto strings = unwrap(cp::Cast(*dict.dictionary(), arrow::utf8()), "to_device");
        auto words = std::make_shared<std::vector<std::string>>();
        const auto& s = static_cast<const arrow::StringArray&>(*strings);
        for (std::int64_t i = 0; i < s.length(); ++i) words->emplace_back(s.GetView(i));
        col.dictionary = std::move(words);
        col.logical_type = "string";
        break;
      }
      default:
        throw Error("to_device: column '" + col.name + "' of type " + field->type()->ToString() +
                    " has no device form (numbers, bool, timestamps and strings do)");
    }
    f.columns.push_back(std::move(col));
  }
  return f;
}

DType device_dtype_of(const arrow::DataType& t, const std::string& what) {
  switch (t.id()) {
    case arrow::Type::DOUBLE: return DType::Float64;
    case arrow::Type::FLOAT: return DType::Float32;
    case arrow::Type::INT64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DATE64: return DType::Int64;
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
    case arrow::Type::INT16:
    case arrow::Type::INT8:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::DICTIONARY: return DType::Int32;
    case arrow::Type::BOOL: return DType::Bool;
    default: break;
  }
  throw Error(what + ": type " + t.ToString() + " has no device form (numbers, bool, timestamps and strings do)");
}

// The Arrow type table_from_frame gives a column.
std::shared_ptr<arrow::DataType> host_type_of(const DeviceColumn& c) {
  if (c.dictionary) return arrow::utf8();
  if (c.values.dtype() == DType::Bool) return arrow::boolean();
  return c.logical_type.empty() ? arrow_type_of(c.values.dtype()) : parse_type(c.logical_type);
}

std::shared_ptr<arrow::Schema> schema_of(const DeviceFrame& frame) {
  arrow::FieldVector fields;
  for (const auto& c : frame.columns) fields.push_back(arrow::field(c.name, host_type_of(c)));
  return arrow::schema(fields);
}

namespace {

// Elements [begin, begin + count) of a block, a view that keeps the whole buffer alive.
Block block_slice(const Block& b, std::int64_t begin, std::int64_t count) {
  if (b.empty()) return b;
  const std::size_t width = itemsize(b.dtype());
  const std::shared_ptr<tessera::Buffer> whole = b.buffer();
  auto* start = static_cast<char*>(const_cast<void*>(b.raw())) + static_cast<std::size_t>(begin) * width;
  const std::size_t bytes = std::max<std::size_t>(static_cast<std::size_t>(count) * width, 1);
  auto view = tessera::Buffer::adopt(start, bytes, whole->kind(), whole->device(), [whole](void*, std::size_t) {});
  return Block(b.dtype(), {count}, std::move(view));
}

}  // namespace

DeviceFrame frame_slice(const DeviceFrame& frame, std::int64_t begin, std::int64_t count) {
  if (begin < 0 || count < 0 || begin + count > frame.rows)
    throw Error("device frame: rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                ") of a frame of " + std::to_string(frame.rows));
  DeviceFrame out;
  out.rows = count;
  for (const auto& c : frame.columns) {
    DeviceColumn s = c;
    s.values = block_slice(c.values, begin, count);
    s.valid = block_slice(c.valid, begin, count);
    out.columns.push_back(std::move(s));
  }
  return out;
}

std::shared_ptr<arrow::Table> table_from_frame(const DeviceFrame& input) {
  ensure_arrow_compute();
  const DeviceFrame f = frame_to_host(input);
  arrow::FieldVector fields;
  arrow::ChunkedArrayVector columns;
  for (const auto& c : f.columns) {
    const std::int64_t n = c.values.size();
    std::int64_t nulls = 0;
    std::shared_ptr<arrow::Buffer> validity = c.valid.empty() ? nullptr : bitmap_of(c.valid, n, &nulls);
    // Columns the device algorithms computed carry no Arrow type: their dtype's.
    auto type = c.logical_type.empty() ? arrow_type_of(c.values.dtype()) : parse_type(c.logical_type);
    std::shared_ptr<arrow::Array> array;
    if (c.dictionary) {
      arrow::StringBuilder words;
      for (const auto& w : *c.dictionary) check_arrow(words.Append(w), "to_host");
      auto dict = words.Finish().ValueOrDie();
      auto codes = arrow::MakeArray(arrow::ArrayData::Make(arrow::int32(), n, {validity, std::make_shared<BlockBuffer>(c.values)}, nulls));
      auto taken = unwrap(cp::Take(dict, codes), "to_host: decoding " + c.name);
      array = taken.make_array();
    } else if (c.values.dtype() == DType::Bool) {
      std::int64_t unused = 0;
      auto bits = bitmap_of(c.values, n, &unused);
      array = arrow::MakeArray(arrow::ArrayData::Make(arrow::boolean(), n, {validity, bits}, nulls));
    } else {
      array = arrow::MakeArray(arrow::ArrayData::Make(type, n, {validity, std::make_shared<BlockBuffer>(c.values)}, nulls));
    }
    fields.push_back(arrow::field(c.name, array->type()));
    columns.push_back(std::make_shared<arrow::ChunkedArray>(array));
  }
  return arrow::Table::Make(arrow::schema(fields), columns, f.rows);
}

DeviceFrame frame_to_device(const DeviceFrame& frame, int device, StreamView stream) {
  DeviceFrame out = frame;
  for (auto& c : out.columns) {
    if (!c.values.empty()) c.values = to_device_async(c.values, device, stream);
    if (!c.valid.empty()) c.valid = to_device_async(c.valid, device, stream);
  }
  return out;
}

DeviceFrame frame_to_host(const DeviceFrame& frame) {
  DeviceFrame out = frame;
  for (auto& c : out.columns) {
    if (!c.values.empty()) c.values = tessera::to_host(c.values);
    if (!c.valid.empty()) c.valid = tessera::to_host(c.valid);
  }
  return out;
}

std::shared_ptr<arrow::Table> table_of(const Value& value, const std::string& what) {
  if (value.is_native() && value.native().type == kDeviceFrameType)
    return table_from_frame(*static_cast<const DeviceFrame*>(value.native().object.get()));
  return host_table_of(value, what);
}

Value frame_value(DeviceFrame f) {
  const auto bytes = frame_bytes(f);
  return Value(Native{kDeviceFrameType, std::make_shared<const DeviceFrame>(std::move(f)), bytes});
}

std::size_t frame_bytes(const DeviceFrame& frame) {
  std::size_t n = 0;
  for (const auto& c : frame.columns) n += c.values.nbytes() + c.valid.nbytes();
  return n;
}

namespace {

struct ColumnLayout {
  std::string name, logical_type;
  std::uint8_t dtype = 0;
  std::int64_t length = 0;
  bool has_valid = false, has_dictionary = false;
  std::vector<std::string> dictionary;
  template <class A>
  void serialize(A& ar) {
    ar(name, logical_type, dtype, length, has_valid, has_dictionary, dictionary);
  }
};

struct FrameLayout {
  std::int64_t rows = 0;
  std::vector<ColumnLayout> columns;
  template <class A>
  void serialize(A& ar) {
    ar(rows, columns);
  }
};

// A device frame crosses processes as its layout plus, per column, the values and validity
// buffers as frames (device buffers stay device frames where the transport takes them).
NativeParts encode_frame(const Native& n) {
  const auto& f = *static_cast<const DeviceFrame*>(n.object.get());
  FrameLayout layout;
  NativeParts parts;
  layout.rows = f.rows;
  for (const auto& c : f.columns) {
    ColumnLayout l{c.name, c.logical_type, static_cast<std::uint8_t>(c.values.dtype()), c.values.size(),
                   !c.valid.empty(), c.dictionary != nullptr, c.dictionary ? *c.dictionary : std::vector<std::string>{}};
    layout.columns.push_back(std::move(l));
    parts.frames.push_back(c.values.buffer());
    parts.frames.push_back(c.valid.empty() ? nullptr : c.valid.buffer());
  }
  std::ostringstream os;
  {
    cereal::BinaryOutputArchive ar(os);
    ar(layout);
  }
  parts.header = std::move(os).str();
  return parts;
}

Native decode_frame(const std::string& header, std::vector<std::shared_ptr<tessera::Buffer>> frames) {
  FrameLayout layout;
  try {
    std::istringstream is(header);
    cereal::BinaryInputArchive ar(is);
    ar(layout);
  } catch (const std::exception& e) {
    throw Error(std::string("device frame: corrupt header: ") + e.what());
  }
  if (frames.size() != 2 * layout.columns.size()) throw Error("device frame: frame count does not match its columns");
  auto f = std::make_shared<DeviceFrame>();
  f->rows = layout.rows;
  for (std::size_t i = 0; i < layout.columns.size(); ++i) {
    auto& l = layout.columns[i];
    if (!valid_dtype_code(l.dtype) || l.length != layout.rows)
      throw Error("device frame: corrupt column '" + l.name + "'");
    DeviceColumn c;
    c.name = l.name;
    c.logical_type = l.logical_type;
    const auto dtype = static_cast<DType>(l.dtype);
    auto check = [&](const std::shared_ptr<tessera::Buffer>& b, std::size_t bytes) {
      if (!b || b->size() < bytes) throw Error("device frame: column '" + l.name + "' is missing bytes");
      return b;
    };
    c.values = Block(dtype, {l.length}, check(frames[2 * i], static_cast<std::size_t>(l.length) * itemsize(dtype)));
    if (l.has_valid) c.valid = Block(DType::Bool, {l.length}, check(frames[2 * i + 1], static_cast<std::size_t>(l.length)));
    if (l.has_dictionary) c.dictionary = std::make_shared<const std::vector<std::string>>(std::move(l.dictionary));
    f->columns.push_back(std::move(c));
  }
  const auto bytes = frame_bytes(*f);
  return Native{kDeviceFrameType, std::shared_ptr<const void>(std::move(f)), bytes};
}

// A shuffle's receiving worker packs the shards of an output partition (NativeCodec's rows,
// concat, split). The shards arrive as host memory (or device memory over UCX); the packed frame
// is in host memory, and the unpack task that takes it moves it to its GPU.
std::int64_t codec_frame_rows(const Native& n) { return static_cast<const DeviceFrame*>(n.object.get())->rows; }

Native codec_concat_frames(const std::vector<Native>& parts) {
  std::vector<DeviceFrame> frames;
  for (const auto& n : parts) frames.push_back(frame_to_host(*static_cast<const DeviceFrame*>(n.object.get())));
  if (frames.empty()) throw Error("device frame: nothing to concatenate");
#ifdef TESSERA_HAS_FRAME_ALGORITHMS
  DeviceFrame joined = frames.size() == 1 ? frames.front() : thrust_host::concat(frames);
#else
  std::vector<std::shared_ptr<arrow::Table>> tables;
  for (const auto& f : frames) tables.push_back(table_from_frame(f));
  DeviceFrame joined = frame_from_table(*unwrap(arrow::ConcatenateTables(tables), "device frame: concatenating"));
#endif
  const auto bytes = frame_bytes(joined);
  return Native{kDeviceFrameType, std::make_shared<const DeviceFrame>(std::move(joined)), bytes};
}

std::vector<Native> codec_split_frame(const Native& n, const std::vector<std::int64_t>& rows) {
  const auto& f = *static_cast<const DeviceFrame*>(n.object.get());
  std::vector<Native> out;
  std::int64_t at = 0;
  for (const auto count : rows) {
    DeviceFrame piece = frame_slice(f, at, count);
    at += count;
    const auto bytes = frame_bytes(piece);
    out.push_back(Native{kDeviceFrameType, std::make_shared<const DeviceFrame>(std::move(piece)), bytes});
  }
  if (at != f.rows)
    throw Error("device frame: pieces of " + std::to_string(at) + " rows cut from a frame of " + std::to_string(f.rows));
  return out;
}

// to_device runs as a device task (annotated Target::Device, GPU=1): the worker's GPU is
// ctx.device; the copies are queued on ctx.stream, which run_op synchronises.
Value to_device_op(const OpContext& ctx, std::span<const Value> args) {
  const Value& v = arg(args, 1);
  if (v.is_native() && v.native().type == kDeviceFrameType) {
    const auto& f = *static_cast<const DeviceFrame*>(v.native().object.get());
    return frame_value(frame_to_device(f, ctx.device < 0 ? 0 : ctx.device, ctx.stream));
  }
  return frame_value(frame_to_device(frame_from_table(*host_table_of(v, "to_device")), ctx.device < 0 ? 0 : ctx.device,
                                     ctx.stream));
}

Value to_host_op(const OpContext&, std::span<const Value> args) {
  const Value& v = arg(args, 1);
  if (v.is_native() && v.native().type == kArrowTableType) return v;
  if (!v.is_native() || v.native().type != kDeviceFrameType)
    throw Error("to_host: expected a device frame, got " + v.describe());
  return table_value(table_from_frame(*static_cast<const DeviceFrame*>(v.native().object.get())));
}

const bool device_convert_registered = [] {
  register_native_codec(kDeviceFrameType, NativeCodec{encode_frame, decode_frame, codec_frame_rows, codec_concat_frames, codec_split_frame});
  register_device_op(kOpToDevice, to_device_op);
  register_op(kOpToHost, to_host_op);
  return true;
}();

}  // namespace
}  // namespace tessera::dataframe::detail
