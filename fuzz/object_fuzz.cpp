// The object decoder: Values as they travel inside messages (load(Value) and load(Object) of
// src/ops/task_serialize.hpp, through the bounded archive as decode_header reads them) and an
// Object's bytes decoded by from_object<T> (a task's parameters, a message field's value) for the
// kinds of T the runtime decodes: strings, lists of keys, maps, numbers. The first byte picks.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ops/task_serialize.hpp"
#include "tessera/ops/bounded_archive.hpp"
#include "tessera/ops/serialize.hpp"

using namespace tessera;

namespace {

template <typename T>
void decode_as(const Object& object) {
  try {
    const T value = from_object<T>(object);
    // What decoded encodes to bytes that decode to the same value (compared as bytes: NaN).
    const Object once = to_object(value);
    if (*to_object(from_object<T>(once)).bytes != *once.bytes) __builtin_trap();
  } catch (const SerializationError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t pick = data[0];
  ++data;
  --size;
  if (pick % 8 == 0) {
    Value v;
    try {
      detail::BoundedInputArchive ar(data, size);
      ar(v);
      (void)v.describe();
    } catch (const cereal::Exception&) {
    } catch (const Error&) {
    }
    return 0;
  }
  const Object object{"fuzz", std::make_shared<const std::string>(reinterpret_cast<const char*>(data), size)};
  switch (pick % 8) {
    case 1: decode_as<std::string>(object); break;
    case 2: decode_as<std::vector<std::string>>(object); break;
    case 3: decode_as<std::map<std::string, double>>(object); break;
    case 4: decode_as<std::vector<std::int64_t>>(object); break;
    case 5: decode_as<std::vector<std::pair<std::string, std::int64_t>>>(object); break;
    case 6: decode_as<std::map<std::string, std::vector<std::string>>>(object); break;
    default: decode_as<std::vector<bool>>(object); break;
  }
  return 0;
}
