#pragma once
/** @file
 * Message: a small cereal header plus raw data frames that are never copied into it. */
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/core/block.hpp"
#include "tessera/core/buffer.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/value.hpp"
#include "tessera/ops/serialize.hpp"

namespace tessera::comm {

/** @brief Owned bytes sent as-is (no copy into the header); treated as read-only once sent. */
using Frame = std::shared_ptr<Buffer>;

/**
 * @brief One message: an op name, metadata fields and raw frames.
 *
 * Fields are Values: Blocks travel in the header (small ones only; use add_block for data),
 * anything cereal can serialize travels as an Object (set / get encode and decode it).
 */
struct Message {
  std::string op;
  std::map<std::string, Value> fields;
  std::vector<Frame> frames;

  Message() = default;
  explicit Message(std::string op_name) : op(std::move(op_name)) {}

  bool has(const std::string& key) const { return fields.count(key) != 0; }

  /** @brief Stores value under key: a Value, Block or Object as is, anything else via cereal. */
  template <typename T>
  Message& set(const std::string& key, const T& value) {
    if constexpr (std::is_same_v<T, Value>) fields[key] = value;
    else if constexpr (std::is_same_v<T, Block> || std::is_same_v<T, Object>) fields[key] = Value(value);
    else fields[key] = Value(to_object(value));
    return *this;
  }

  /** @brief The field under key as T; throws ProtocolError when missing or of another type. */
  template <typename T>
  T get(const std::string& key) const {
    const Value& v = field(key);
    try {
      if constexpr (std::is_same_v<T, Value>) return v;
      else if constexpr (std::is_same_v<T, Block>) return v.block();
      else if constexpr (std::is_same_v<T, Object>) return v.object();
      else return from_value<T>(v);
    } catch (const Error& e) {
      throw_bad_field(key, e.what());
    }
  }

  /** @brief Appends a frame; returns its index. */
  std::size_t add_frame(Frame frame) {
    frames.push_back(std::move(frame));
    return frames.size() - 1;
  }

  /**
   * @brief Sends block's buffer as a frame and its dtype/shape under key (no copy).
   * An empty Block is stored as such.
   */
  Message& add_block(const std::string& key, const Block& block);
  /** @brief Rebuilds a Block stored by add_block over its received frame (no copy). */
  Block get_block(const std::string& key) const;

  /** @brief Total bytes in frames. */
  std::size_t frame_bytes() const noexcept;

 private:
  const Value& field(const std::string& key) const;
  [[noreturn]] void throw_bad_field(const std::string& key, const std::string& why) const;
};

/** @brief The header bytes of msg (op and fields as one cereal binary archive). */
std::string encode_header(const Message& msg);
/** @brief Fills msg.op and msg.fields from header bytes; throws ProtocolError when corrupt. */
void decode_header(const void* data, std::size_t size, Message& msg);

}  // namespace tessera::comm
