#pragma once
// The C++ side of the NumPy conformance harness (README.md beside this file).
//
// A case is a named function from input Arrays (made from the driver's .npy inputs with the
// driver's chunking, on the host or the device) and string parameters to output Arrays. The
// Python side (cases_*.py) says which inputs, parameters and chunkings to run it with, and
// what NumPy gives for them.
//
//     TESSERA_CONFORMANCE_CASE(sum_axis) {
//       return {in[0].sum({.axes = p.ints("axis")})};
//     }
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tessera/array.hpp"

namespace tessera_conformance {

/** Parameters of one run: key=value pairs given by the Python case. */
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::string& s(const std::string& key) const;
  std::string s(const std::string& key, const std::string& fallback) const;
  std::int64_t i(const std::string& key) const;
  std::int64_t i(const std::string& key, std::int64_t fallback) const;
  double d(const std::string& key) const;
  double d(const std::string& key, double fallback) const;
  bool b(const std::string& key, bool fallback = false) const;
  /** A comma-separated list of integers ("" is the empty list). */
  std::vector<std::int64_t> ints(const std::string& key) const;
  std::vector<int> axes(const std::string& key) const;

 private:
  std::map<std::string, std::string> values_;
};

using Inputs = std::vector<tessera::Array>;
using Outputs = std::vector<tessera::Array>;
using CaseFn = std::function<Outputs(const Inputs& in, const Params& p)>;

/** Registers a case; returns true so that it can initialise a static. */
bool register_case(const std::string& name, CaseFn fn);
const std::map<std::string, CaseFn>& cases();

}  // namespace tessera_conformance

#define TESSERA_CONFORMANCE_CONCAT2(a, b) a##b
#define TESSERA_CONFORMANCE_CONCAT(a, b) TESSERA_CONFORMANCE_CONCAT2(a, b)
/** Defines and registers a case named `name`; the body sees `in` (Inputs) and `p` (Params). */
#define TESSERA_CONFORMANCE_CASE(name)                                                           \
  static ::tessera_conformance::Outputs tessera_conformance_case_##name(                         \
      const ::tessera_conformance::Inputs& in, const ::tessera_conformance::Params& p);          \
  [[maybe_unused]] static const bool TESSERA_CONFORMANCE_CONCAT(tessera_conformance_reg_, name) = \
      ::tessera_conformance::register_case(#name, tessera_conformance_case_##name);              \
  static ::tessera_conformance::Outputs tessera_conformance_case_##name(                         \
      [[maybe_unused]] const ::tessera_conformance::Inputs& in,                                  \
      [[maybe_unused]] const ::tessera_conformance::Params& p)
