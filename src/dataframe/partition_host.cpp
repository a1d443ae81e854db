// Row hashes of Arrow columns by partition_index.hpp's definition: the host side of the shuffle's
// row assignment.
#include "partition_host.hpp"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "arrow_util.hpp"
#include "partition_index.hpp"

namespace tessera::dataframe::detail {

namespace {

namespace pi = partition_index;

template <class ArrayT, class Hash>
void hash_values(const arrow::Array& chunk, std::uint64_t* h, Hash&& hash) {
  const auto& a = static_cast<const ArrayT&>(chunk);
  const std::int64_t n = a.length();
  if (a.null_count() == 0) {
    for (std::int64_t r = 0; r < n; ++r) h[r] = pi::combine(h[r], hash(a.Value(r)));
  } else {
    for (std::int64_t r = 0; r < n; ++r) h[r] = pi::combine(h[r], a.IsNull(r) ? pi::kMissing : hash(a.Value(r)));
  }
}

template <class ArrayT>
void hash_strings(const arrow::Array& chunk, std::uint64_t* h) {
  const auto& a = static_cast<const ArrayT&>(chunk);
  for (std::int64_t r = 0; r < a.length(); ++r) {
    if (a.IsNull(r)) {
      h[r] = pi::combine(h[r], pi::kMissing);
    } else {
      const auto v = a.GetView(r);
      h[r] = pi::combine(h[r], pi::hash_bytes(v.data(), static_cast<std::int64_t>(v.size())));
    }
  }
}

// Folds one chunk of a key column into the hashes of its rows.
void hash_chunk(const std::shared_ptr<arrow::Array>& chunk_in, const std::string& column, std::uint64_t* h) {
  std::shared_ptr<arrow::Array> chunk = chunk_in;
  if (chunk->type_id() == arrow::Type::DICTIONARY) {  // hash the values, not their codes
    const auto& dict = static_cast<const arrow::DictionaryType&>(*chunk->type());
    chunk = unwrap(arrow::compute::Cast(*chunk, dict.value_type()), "shuffle: decoding key '" + column + "'");
  }
  const auto as_int = [](auto v) { return pi::hash_int(static_cast<std::int64_t>(v)); };
  const auto as_double = [](auto v) { return pi::hash_double(static_cast<double>(v)); };
  switch (chunk->type_id()) {
    case arrow::Type::BOOL: return hash_values<arrow::BooleanArray>(*chunk, h, as_int);
    case arrow::Type::INT8: return hash_values<arrow::Int8Array>(*chunk, h, as_int);
    case arrow::Type::INT16: return hash_values<arrow::Int16Array>(*chunk, h, as_int);
    case arrow::Type::INT32: return hash_values<arrow::Int32Array>(*chunk, h, as_int);
    case arrow::Type::INT64: return hash_values<arrow::Int64Array>(*chunk, h, as_int);
    case arrow::Type::UINT8: return hash_values<arrow::UInt8Array>(*chunk, h, as_int);
    case arrow::Type::UINT16: return hash_values<arrow::UInt16Array>(*chunk, h, as_int);
    case arrow::Type::UINT32: return hash_values<arrow::UInt32Array>(*chunk, h, as_int);
    // Above 2^63 a uint64 hashes as the int64 of the same bits (no signed type holds it).
    case arrow::Type::UINT64: return hash_values<arrow::UInt64Array>(*chunk, h, as_int);
    case arrow::Type::DATE32: return hash_values<arrow::Date32Array>(*chunk, h, as_int);
    case arrow::Type::DATE64: return hash_values<arrow::Date64Array>(*chunk, h, as_int);
    case arrow::Type::TIMESTAMP: return hash_values<arrow::TimestampArray>(*chunk, h, as_int);
    case arrow::Type::DURATION: return hash_values<arrow::DurationArray>(*chunk, h, as_int);
    case arrow::Type::FLOAT: return hash_values<arrow::FloatArray>(*chunk, h, as_double);
    case arrow::Type::DOUBLE: return hash_values<arrow::DoubleArray>(*chunk, h, as_double);
    case arrow::Type::STRING: return hash_strings<arrow::StringArray>(*chunk, h);
    case arrow::Type::LARGE_STRING: return hash_strings<arrow::LargeStringArray>(*chunk, h);
    case arrow::Type::BINARY: return hash_strings<arrow::BinaryArray>(*chunk, h);
    case arrow::Type::LARGE_BINARY: return hash_strings<arrow::LargeBinaryArray>(*chunk, h);
    default:
      throw Error("shuffle: key column '" + column + "' has type " + chunk->type()->ToString() +
                  ", which cannot be hashed (numbers, booleans, strings, dates and timestamps can)");
  }
}

}  // namespace

std::vector<std::uint32_t> hash_partitions(const arrow::Table& table, const std::vector<std::string>& on,
                                           std::uint32_t parts) {
  if (parts == 0) throw Error("shuffle: the number of output partitions must be at least 1");
  const auto rows = static_cast<std::size_t>(table.num_rows());
  std::vector<std::uint64_t> h(rows, partition_index::kSeed);
  for (const auto& name : on) {
    auto column = table.GetColumnByName(name);
    if (!column) throw Error("shuffle: key column '" + name + "' is missing from a partition");
    std::int64_t row = 0;
    for (const auto& chunk : column->chunks()) {
      hash_chunk(chunk, name, h.data() + row);
      row += chunk->length();
    }
  }
  std::vector<std::uint32_t> out(rows);
  for (std::size_t r = 0; r < rows; ++r) out[r] = partition_index::partition_of(h[r], parts);
  return out;
}

}  // namespace tessera::dataframe::detail
