#pragma once
/**
 * @file cereal serialization of Tessera's values, tasks and op parameters.
 *
 * Include this only where you serialize (it pulls in cereal). Objects use cereal's binary
 * archive: clusters are homogeneous (same architecture and build), as with Dask's pickle.
 */
#include <sstream>
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

namespace tessera {

/** @brief Serializes any cereal-serializable value into an Object tagged with type_name. */
template <typename T>
Object to_object(const T& value, std::string type_name = typeid(T).name()) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::BinaryOutputArchive ar(os);
    ar(value);
  }
  return Object{std::move(type_name), std::make_shared<const std::string>(std::move(os).str())};
}

/** @brief Decodes an Object made by to_object<T>; throws SerializationError on corrupt bytes. */
template <typename T>
T from_object(const Object& object) {
  if (!object.bytes) throw SerializationError("cannot decode an empty object");
  T value{};
  try {
    std::istringstream is(*object.bytes, std::ios::binary);
    cereal::BinaryInputArchive ar(is);
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
