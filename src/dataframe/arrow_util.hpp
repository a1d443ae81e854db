#pragma once
/** @file Private: Arrow status and result checks, and partitions as Values. */
#include <memory>
#include <span>
#include <string>

#include <arrow/api.h>

#include "tessera/core/error.hpp"
#include "tessera/core/value.hpp"

namespace tessera::dataframe::detail {

/** @brief Throws Error("<context>: <Arrow's message>") when `status` is not OK. */
inline void check_arrow(const arrow::Status& status, const std::string& context) {
  if (!status.ok()) throw Error(context + ": " + status.message());
}

template <typename T>
T unwrap(arrow::Result<T> result, const std::string& context) {
  if (!result.ok()) throw Error(context + ": " + result.status().message());
  return std::move(result).ValueUnsafe();
}

/** @brief Calls fn(batch) for each record batch of `table` (zero-copy slices of its chunks). */
template <class Fn>
void for_each_batch(const arrow::Table& table, const std::string& what, Fn&& fn) {
  arrow::TableBatchReader reader(table);
  std::shared_ptr<arrow::RecordBatch> batch;
  while (true) {
    check_arrow(reader.ReadNext(&batch), what);
    if (!batch) return;
    fn(batch);
  }
}

/** @brief A host partition as a Value (a Native "arrow.table"). */
Value table_value(std::shared_ptr<arrow::Table> table);
/**
 * @brief The table a host partition holds; throws Error naming `what` and what it holds otherwise.
 * table_of (device_convert.hpp) also takes a device frame.
 */
std::shared_ptr<arrow::Table> host_table_of(const Value& value, const std::string& what);

/** @brief Task argument i; throws Error when the task has fewer. */
inline const Value& arg(std::span<const Value> args, std::size_t i) {
  if (i >= args.size())
    throw Error("dataframe task: missing argument " + std::to_string(i) + " (got " + std::to_string(args.size()) + ")");
  return args[i];
}

/** @brief Makes sure Arrow's compute functions are registered (once per process). */
void ensure_arrow_compute();

}  // namespace tessera::dataframe::detail
