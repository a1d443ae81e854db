#pragma once
/**
 * @file Private: the plain (C++17, no Thrust, no Arrow) types the dataframe device algorithms
 * (device_algorithms.cuh) take and return. nvcc builds the CUDA instantiation as C++17 and
 * cannot include DeviceFrame (tessera/core/block.hpp is C++20), so the algorithms see a frame as
 * raw memory plus keep-alive handles; device_algorithms.hpp converts between the two.
 */
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataframe/join_how.hpp"
#include "tessera/core/dtype.hpp"

namespace tessera::dataframe {

/** @brief The element-wise operations between columns (and scalars). */
enum class BinaryOp : std::uint8_t { Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Eq, Ne, Lt, Le, Gt, Ge };

/** @brief Whether `op` is a comparison (its result is Bool). */
constexpr bool is_comparison(BinaryOp op) noexcept { return op >= BinaryOp::Eq; }

/**
 * @brief A Python-like scalar operand: it takes the column's kind where it can (NumPy 2's weak
 * scalars, element_semantics.hpp's weak_scalar_dtype): `x + 1` keeps an int32 column int32.
 */
struct ScalarOperand {
  enum class Kind : std::uint8_t { Bool, Int, Float };
  Kind kind = Kind::Float;
  std::int64_t i = 0;  ///< the value of a Bool or Int scalar
  double f = 0;        ///< the value of a Float scalar
  static ScalarOperand of_int(std::int64_t v) { return {Kind::Int, v, static_cast<double>(v)}; }
  static ScalarOperand of_float(double v) { return {Kind::Float, static_cast<std::int64_t>(0), v}; }
  static ScalarOperand of_bool(bool v) { return {Kind::Bool, v ? 1 : 0, v ? 1.0 : 0.0}; }
};

namespace detail {

/** Memory of the system an algorithm runs on; dropping `owner` frees it (in stream order). */
struct Memory {
  std::shared_ptr<void> owner;
  void* data = nullptr;
};

/** Where the algorithms' memory comes from: the host heap, or the device pool on the op's stream. */
class Allocator {
 public:
  virtual ~Allocator() = default;
  /**
   * `bytes` (> 0) of the system's memory. `result`: it becomes a column of the returned frame
   * (the caller turns `owner` back into a Buffer); otherwise scratch that dies within the call.
   */
  virtual Memory allocate(std::size_t bytes, bool result) = 0;
};

/** A DeviceColumn as raw memory of the system (valid.data null: no nulls). */
struct RawColumn {
  std::string name;
  DType dtype = DType::Float64;
  Memory values;
  Memory valid;
  std::shared_ptr<const std::vector<std::string>> dictionary;
  std::string logical_type;
};

/** A DeviceFrame as raw columns. */
struct RawFrame {
  std::int64_t rows = 0;
  std::vector<RawColumn> columns;
  const RawColumn* find(const std::string& name) const {
    for (const auto& c : columns)
      if (c.name == name) return &c;
    return nullptr;
  }
};

/** One sort key of a frame sort: pandas' sort_values (missing values first or last). */
struct SortKeySpec {
  std::string column;
  bool ascending = true;
};

/**
 * @brief How a device merge builds its result: the key pairs (compared as one type) and the
 * result's columns, planned on the host from the two schemas by the host join's own rules
 * (join_host.cpp), so that the device result has the host's columns, names and types.
 */
struct JoinKeyPlan {
  std::string left, right;  ///< the key column of each side
  DType dtype = DType::Int64;  ///< the common key type as stored (string keys: Int32 codes)
  bool strings = false;        ///< string keys: codes into one dictionary merged from both sides
  std::string logical_type;    ///< the common key type's Arrow name, for the way back to the host
};
struct JoinOutPlan {
  enum class From : std::uint8_t { Left, Right, Key } from = From::Left;
  std::string column;   ///< the side's column (Left, Right)
  std::size_t key = 0;  ///< the key pair (Key: the key of whichever side has the row)
  std::string name;     ///< the result column's name
};
struct JoinPlan {
  JoinHow how = JoinHow::Inner;
  std::vector<JoinKeyPlan> keys;
  std::vector<JoinOutPlan> outputs;
};

}  // namespace detail
}  // namespace tessera::dataframe
