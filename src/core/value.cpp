#include "tessera/core/value.hpp"

namespace tessera {

const Block& Value::block() const {
  if (const auto* b = std::get_if<Block>(&v_)) return *b;
  throw Error("expected a block, got " + describe());
}

const Object& Value::object() const {
  if (const auto* o = std::get_if<Object>(&v_)) return *o;
  throw Error("expected a serialized object, got " + describe());
}

const Native& Value::native() const {
  if (const auto* n = std::get_if<Native>(&v_)) return *n;
  throw Error("expected a native object, got " + describe());
}

std::size_t Value::nbytes() const noexcept {
  if (const auto* b = std::get_if<Block>(&v_)) return b->nbytes();
  if (const auto* o = std::get_if<Object>(&v_)) return o->bytes ? o->bytes->size() : 0;
  if (const auto* n = std::get_if<Native>(&v_)) return n->nbytes;
  return 0;
}

std::string Value::describe() const {
  if (const auto* b = std::get_if<Block>(&v_))
    return "block " + std::string(dtype_name(b->dtype())) + " " + shape_to_string(b->shape());
  if (const auto* o = std::get_if<Object>(&v_)) return "object " + o->type;
  if (const auto* n = std::get_if<Native>(&v_)) return "native " + n->type;
  return "nothing";
}

}  // namespace tessera
