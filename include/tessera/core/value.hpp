#pragma once
/** @file
 * Value: what a task produces and consumes. */
#include <cstddef>
#include <memory>
#include <string>
#include <variant>

#include "tessera/core/block.hpp"
#include "tessera/core/native.hpp"

namespace tessera {

/** @brief A C++ object in serialized form (cereal binary), tagged with its type name. */
struct Object {
  std::string type;                          ///< registered or demangled type name
  std::shared_ptr<const std::string> bytes;  ///< cereal portable binary archive
};

/**
 * @brief The result of a task: an n-d Block, a serialized Object or a Native object. Cheap to
 * copy.
 *
 * Array tasks exchange Blocks (raw bytes travel without re-encoding); user functions may return
 * any cereal-serializable type, carried as an Object; dataframe tasks exchange Native tables.
 */
class Value {
 public:
  Value() = default;
  Value(Block block) : v_(std::move(block)) {}
  Value(Object object) : v_(std::move(object)) {}
  Value(Native native) : v_(std::move(native)) {}

  bool empty() const noexcept { return std::holds_alternative<std::monostate>(v_); }
  bool is_block() const noexcept { return std::holds_alternative<Block>(v_); }
  bool is_object() const noexcept { return std::holds_alternative<Object>(v_); }
  bool is_native() const noexcept { return std::holds_alternative<Native>(v_); }
  /** @brief Throws Error naming what the value holds when it is not a Block. */
  const Block& block() const;
  const Object& object() const;
  const Native& native() const;
  /** @brief Bytes held (block data or serialized object), for memory accounting. */
  std::size_t nbytes() const noexcept;
  /** @brief "block float64 (3, 4)", "object std::string" or "native arrow.table" for messages. */
  std::string describe() const;

 private:
  std::variant<std::monostate, Block, Object, Native> v_;
};

}  // namespace tessera
