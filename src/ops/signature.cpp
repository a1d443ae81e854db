#include "tessera/ops/signature.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace tessera {

std::string type_tag_of(const Value& value) {
  if (value.is_block()) return kBlockType;
  if (value.is_object()) return value.object().type;
  if (value.is_native()) return value.native().type;
  return "";
}

std::string type_name(const std::string& tag) {
  if (tag.empty()) return "nothing";
  if (tag == kBlockType || tag == kAnyType || tag == kVoidType) return tag;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(tag.c_str(), nullptr, nullptr, &status),
                                                   std::free);
  // Not a mangled name: an Object tagged by hand ("Shape", "Program") reads as it is.
  if (status != 0 || !demangled) return tag;
  std::string out = demangled.get();
  // libstdc++ spells std::string out in full; users wrote std::string.
  static const std::string long_string =
      "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";
  for (auto at = out.find(long_string); at != std::string::npos; at = out.find(long_string, at))
    out.replace(at, long_string.size(), "std::string");
  return out;
}

namespace {

std::string list_types(const std::vector<std::string>& tags) {
  std::string out;
  for (const auto& t : tags) out += (out.empty() ? "" : ", ") + (t.empty() ? std::string("?") : type_name(t));
  return out;
}

std::string in_parentheses(const std::string& list) { return list.empty() ? "" : " (" + list + ")"; }

std::string arguments(std::size_t n) { return std::to_string(n) + (n == 1 ? " argument" : " arguments"); }

}  // namespace

void check_arguments(const std::string& function, const OpSignature& signature, std::span<const std::string> given) {
  if (given.size() != signature.args.size())
    throw SignatureError("function " + function + " takes " + arguments(signature.args.size()) +
                         in_parentheses(list_types(signature.args)) + ", given " + std::to_string(given.size()) +
                         in_parentheses(list_types({given.begin(), given.end()})));
  for (std::size_t i = 0; i < given.size(); ++i) {
    const std::string& want = signature.args[i];
    if (given[i].empty() || want == kAnyType || given[i] == want) continue;
    throw SignatureError("function " + function + ": argument " + std::to_string(i + 1) + " expects " +
                         type_name(want) + ", given " + type_name(given[i]));
  }
}

void check_value_type(const Value& value, const std::string& expected_tag, const std::string& what) {
  if (expected_tag == kAnyType) return;
  // Compared in place: the common case (the type matches) copies no tag.
  const bool holds = value.is_block()    ? expected_tag == kBlockType
                     : value.is_native() ? value.native().type == expected_tag
                                         : value.is_object() && value.object().type == expected_tag;
  if (!holds)
    throw SerializationError(what + " holds " +
                             (value.empty() ? std::string("no value") : type_name(type_tag_of(value))) + ", read as " +
                             type_name(expected_tag));
}

}  // namespace tessera
