#pragma once
/**
 * @file
 * The argument and result types of a registered function, recorded when it registers, so
 * that a call with the wrong arguments fails where it is made (a client's submit, or the worker
 * when the client does not know the function) with the function, the argument, the expected and
 * the given type in words.
 *
 * A type is named by its tag: the `Object::type` a value of it carries (`typeid(T).name()`,
 * stable across the processes of one build, as clusters are), `kBlockType` for a Block and
 * `kAnyType` for a parameter of type Value, which takes anything.
 */
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/value.hpp"

namespace tessera {

/** @brief Arguments that do not fit a registered function: wrong count or type. */
class SignatureError : public Error {
 public:
  using Error::Error;
};

/** @brief The tag of a Block argument or result. */
inline constexpr const char* kBlockType = "tessera::Block";
/** @brief The tag of a Value parameter: any argument fits. */
inline constexpr const char* kAnyType = "tessera::Value";
/** @brief The result tag of a function that returns nothing. */
inline constexpr const char* kVoidType = "void";

/** @brief A registered function's parameter types and result type, as tags. */
struct OpSignature {
  std::vector<std::string> args;
  std::string result;
  bool operator==(const OpSignature&) const = default;
};

/** @brief The tag of values of type T (what a Value made from a T carries). */
template <typename T>
std::string type_tag() {
  if constexpr (std::is_same_v<T, Block>) return kBlockType;
  else if constexpr (std::is_same_v<T, Value>) return kAnyType;
  else if constexpr (std::is_void_v<T>) return kVoidType;
  else return typeid(T).name();
}

/** @brief The tag of a value at hand: kBlockType, its Object's type, or "" when empty. */
std::string type_tag_of(const Value& value);

/** @brief A tag in words: "int", "std::string", "std::vector<double>", "tessera::Block". */
std::string type_name(const std::string& tag);

/**
 * @brief Checks given argument tags against a signature; an empty given tag (a future whose type
 * is not known here) fits any parameter.
 * @throw SignatureError "function F: argument I expects T, given U" or "function F takes N
 *        arguments (T...), given M (U...)".
 */
void check_arguments(const std::string& function, const OpSignature& signature, std::span<const std::string> given);

/**
 * @brief Checks that a value holds a T before it is decoded as one.
 * @throw SerializationError "<what> holds U, read as T".
 */
void check_value_type(const Value& value, const std::string& expected_tag, const std::string& what);

}  // namespace tessera
