#pragma once
/**
 * @file
 * cereal serialization of Tessera's values, tasks and op parameters.
 *
 * Include this only where you serialize (it pulls in cereal). Objects use cereal's binary
 * archive: clusters are homogeneous (same architecture and build), as with Dask's pickle.
 */
#include <istream>
#include <sstream>
#include <streambuf>
#include <string>
#include <typeinfo>

#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/memory.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include "tessera/core/error.hpp"
#include "tessera/core/value.hpp"
#include "tessera/ops/bounded_archive.hpp"

namespace tessera {

namespace detail {
/**
 * @brief A per-thread stream reused by to_object: building a std::stream costs about 4,000
 * instructions (locale set-up), more than encoding a small object. A nested call (a serialize
 * function that itself calls to_object) gets a fresh stream. (from_object needs none.)
 */
struct StreamCache {
  std::ostringstream out{std::ios::binary};
  int depth = 0;
};
inline StreamCache& stream_cache() {
  static thread_local StreamCache cache;
  return cache;
}
}  // namespace detail

/** @brief Serializes any cereal-serializable value into an Object tagged with type_name. */
template <typename T>
Object to_object(const T& value, std::string type_name = typeid(T).name()) {
  auto& cache = detail::stream_cache();
  if (cache.depth > 0) {
    std::ostringstream os(std::ios::binary);
    {
      cereal::BinaryOutputArchive ar(os);
      ar(value);
    }
    return Object{std::move(type_name), std::make_shared<const std::string>(std::move(os).str())};
  }
  ++cache.depth;
  struct Leave {
    detail::StreamCache& c;
    ~Leave() { --c.depth; }
  } leave{cache};
  cache.out.str(std::string());
  cache.out.clear();
  {
    cereal::BinaryOutputArchive ar(cache.out);
    ar(value);
  }
  return Object{std::move(type_name), std::make_shared<const std::string>(std::move(cache.out).str())};
}

/**
 * @brief Decodes an Object made by to_object<T>; throws SerializationError on corrupt bytes.
 * Decoded with the bounded archive (bounded_archive.hpp): a length inside the bytes that claims
 * more than they hold is refused before anything is allocated for it, so an object costs no more
 * memory than its bytes (objects arrive from peers inside messages).
 */
template <typename T>
T from_object(const Object& object) {
  if (!object.bytes) throw SerializationError("cannot decode an empty object");
  T value{};
  try {
    detail::BoundedInputArchive ar(object.bytes->data(), object.bytes->size());
    ar(value);
  } catch (const cereal::Exception& e) {
    throw SerializationError("cannot decode object of type " + object.type + ": " + e.what());
  }
  return value;
}

/** @brief Decodes a Value that must hold an Object of T (a task's literal parameters). */
template <typename T>
T from_value(const Value& value) {
  if (!value.is_object())
    throw SerializationError("expected a serialized object, got " + value.describe());
  return from_object<T>(value.object());
}

}  // namespace tessera
