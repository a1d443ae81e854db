#pragma once
// NumPy's results for every binary element-wise operation on edge values of every dtype pair
// (element_semantics_tables.inc, written by gen_element_semantics_tables.py with numpy 2.4.6),
// and how to build the operands and check a result against them. Used by
// element_semantics_test.cpp (host evaluator) and tests/cuda/blockwise_test.cpp (the device
// kernels and their host emulation).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/array.hpp"
#include "tessera/array/elementwise.hpp"

namespace tessera_test::elem_cases {

using namespace tessera;

struct Case {
  std::string op;          // Tessera's EwOp name (Add, FloorDiv, LogicalAnd, ...)
  DType a = DType::Bool, b = DType::Bool;
  std::string numpy_dtype;  // the result dtype numpy gives ("none": numpy raises for the pair)
  std::vector<std::string> results;  // for a in values(a), b in values(b), row-major; "E": numpy raises
};

inline std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Tables {
  std::map<DType, std::vector<std::string>> values;
  std::vector<Case> cases;
};

inline const Tables& tables() {
  static const Tables t = [] {
    Tables t;
#define TESSERA_ELEM_VALUES(dtype, vals) t.values[dtype_from_name(dtype)] = split(vals);
#define TESSERA_ELEM_CASE(op, a, b, r, res) \
  t.cases.push_back(Case{#op, dtype_from_name(a), dtype_from_name(b), r, split(res)});
#include "element_semantics_tables.inc"
#undef TESSERA_ELEM_VALUES
#undef TESSERA_ELEM_CASE
    return t;
  }();
  return t;
}

/** The same for the functions added later (element_semantics_more_tables.inc, MORE_OPS). */
inline const Tables& more_tables() {
  static const Tables t = [] {
    Tables t;
#define TESSERA_ELEM_VALUES(dtype, vals) t.values[dtype_from_name(dtype)] = split(vals);
#define TESSERA_ELEM_CASE(op, a, b, r, res) \
  t.cases.push_back(Case{#op, dtype_from_name(a), dtype_from_name(b), r, split(res)});
#include "element_semantics_more_tables.inc"
#undef TESSERA_ELEM_VALUES
#undef TESSERA_ELEM_CASE
    return t;
  }();
  return t;
}

/** A 1-d block of `t` holding the given values (decimal integers, or what strtod reads). */
inline Block block_of(DType t, const std::vector<std::string>& vals) {
  Block b(t, {static_cast<std::int64_t>(vals.size())});
  for (std::size_t i = 0; i < vals.size(); ++i) {
    const char* s = vals[i].c_str();
    switch (t) {
      case DType::Bool: b.data<bool>()[i] = std::strtoll(s, nullptr, 10) != 0; break;
      case DType::Int32: b.data<std::int32_t>()[i] = static_cast<std::int32_t>(std::strtoll(s, nullptr, 10)); break;
      case DType::Int64: b.data<std::int64_t>()[i] = std::strtoll(s, nullptr, 10); break;
      case DType::Float32: b.data<float>()[i] = static_cast<float>(std::strtod(s, nullptr)); break;
      case DType::Float64: b.data<double>()[i] = std::strtod(s, nullptr); break;
      default: throw Error("element semantics tables hold bool, int32, int64, float32 and float64 only");
    }
  }
  return b;
}

/** The operands of a case: a[i * nb + j] and b[i * nb + j] for the pairs `keep` lists. */
struct Operands {
  Block a, b;
  std::vector<std::size_t> index;  // position in Case::results of each element
};
inline Operands operands(const Case& c, bool errors) {
  const auto& va = tables().values.at(c.a);
  const auto& vb = tables().values.at(c.b);
  std::vector<std::string> xa, xb;
  Operands o;
  for (std::size_t i = 0; i < va.size(); ++i)
    for (std::size_t j = 0; j < vb.size(); ++j) {
      const std::size_t k = i * vb.size() + j;
      if ((c.results[k] == "E") != errors) continue;
      xa.push_back(va[i]);
      xb.push_back(vb[j]);
      o.index.push_back(k);
    }
  o.a = block_of(c.a, xa);
  o.b = block_of(c.b, xb);
  return o;
}

/** The case's operation through the public API. */
inline Array apply(const std::string& op, const Array& a, const Array& b) {
  static const std::map<std::string, std::function<Array(const Array&, const Array&)>> ops = {
      {"Add", [](auto& x, auto& y) { return x + y; }},
      {"Sub", [](auto& x, auto& y) { return x - y; }},
      {"Mul", [](auto& x, auto& y) { return x * y; }},
      {"Div", [](auto& x, auto& y) { return x / y; }},
      {"FloorDiv", [](auto& x, auto& y) { return floor_divide(x, y); }},
      {"Mod", [](auto& x, auto& y) { return mod(x, y); }},
      {"Pow", [](auto& x, auto& y) { return power(x, y); }},
      {"Minimum", [](auto& x, auto& y) { return minimum(x, y); }},
      {"Maximum", [](auto& x, auto& y) { return maximum(x, y); }},
      {"Lt", [](auto& x, auto& y) { return x < y; }},
      {"Le", [](auto& x, auto& y) { return x <= y; }},
      {"Gt", [](auto& x, auto& y) { return x > y; }},
      {"Ge", [](auto& x, auto& y) { return x >= y; }},
      {"Eq", [](auto& x, auto& y) { return x == y; }},
      {"Ne", [](auto& x, auto& y) { return x != y; }},
      {"LogicalAnd", [](auto& x, auto& y) { return x && y; }},
      {"LogicalOr", [](auto& x, auto& y) { return x || y; }},
      {"Arctan2", [](auto& x, auto& y) { return arctan2(x, y); }},
      {"Hypot", [](auto& x, auto& y) { return hypot(x, y); }},
      {"LogAddExp", [](auto& x, auto& y) { return logaddexp(x, y); }},
      {"LogAddExp2", [](auto& x, auto& y) { return logaddexp2(x, y); }},
      {"CopySign", [](auto& x, auto& y) { return copysign(x, y); }},
      {"FMin", [](auto& x, auto& y) { return fmin(x, y); }},
      {"FMax", [](auto& x, auto& y) { return fmax(x, y); }},
      {"FMod", [](auto& x, auto& y) { return fmod(x, y); }},
      {"BitAnd", [](auto& x, auto& y) { return bitwise_and(x, y); }},
      {"BitOr", [](auto& x, auto& y) { return bitwise_or(x, y); }},
      {"BitXor", [](auto& x, auto& y) { return bitwise_xor(x, y); }},
      {"LeftShift", [](auto& x, auto& y) { return left_shift(x, y); }},
      {"RightShift", [](auto& x, auto& y) { return right_shift(x, y); }},
      {"LogicalXor", [](auto& x, auto& y) { return logical_xor(x, y); }},
  };
  return ops.at(op)(a, b);
}

/** Tessera's result dtype for numpy's: Tessera has no int8, which numpy gives for bool // bool,
 *  bool % bool and bool ** bool; it gives int64 there (the values are the same). Nor float16
 *  (arctan2 of bools, ...): float64 there (the tables hold numpy's float64 results). */
inline DType expected_dtype(const std::string& numpy_dtype) {
  if (numpy_dtype == "float16") return DType::Float64;
  return numpy_dtype == "int8" ? DType::Int64 : dtype_from_name(numpy_dtype);
}

/** Ops whose float results may differ from numpy's by a few ulps (pow_ulps of matches_numpy):
 *  neither numpy's (SVML or libm) nor Tessera's (SLEEF, CUDA) are correctly rounded. */
inline bool ulps_op(const std::string& op) {
  return op == "Pow" || op == "Arctan2" || op == "Hypot" || op == "LogAddExp" || op == "LogAddExp2";
}

/** numpy's float power goes through SVML on AVX-512 CPUs (libm elsewhere), which is not
 *  correctly rounded: its powf(0.1f, -1.0f) is 9.999999f, glibc's 10.0f. Pow allows this many ulps. */
inline constexpr int kNumpyPowUlps = 2;

/** Ops whose sign of a zero result numpy leaves open: its fmin / fmax of -0.0 and 0.0 give the
 *  first operand in the scalar loop (the tables' one-element arrays) but +0.0 or the second one
 *  in its SIMD loops. */
inline bool zero_sign_open(const std::string& op) { return op == "FMin" || op == "FMax"; }

/**
 * Checks `got` (the result for operands(c, false)) against numpy: the dtype, integers exactly,
 * floats bit for bit (so -0.0 is not 0.0) except that any NaN matches any NaN (the sign and
 * payload of a NaN are not part of numpy's semantics, and CUDA makes other ones). `pow_ulps`
 * allows that many units in the last place for Pow (CUDA's pow is not glibc's) and the other
 * ulps_op functions.
 */
inline ::testing::AssertionResult matches_numpy(const Case& c, const Operands& o, const Block& got, int pow_ulps = 0) {
  const std::string what = c.op + "(" + std::string(dtype_name(c.a)) + ", " + std::string(dtype_name(c.b)) + ")";
  const DType want_t = expected_dtype(c.numpy_dtype);
  if (got.dtype() != want_t)
    return ::testing::AssertionFailure() << what << ": dtype " << dtype_name(got.dtype()) << ", numpy " << c.numpy_dtype;
  if (got.size() != static_cast<std::int64_t>(o.index.size()))
    return ::testing::AssertionFailure() << what << ": " << got.size() << " elements";
  const auto& va = tables().values.at(c.a);
  const auto& vb = tables().values.at(c.b);
  int bad = 0;
  std::ostringstream msg;
  for (std::size_t i = 0; i < o.index.size(); ++i) {
    const std::size_t k = o.index[i];
    const std::string& want = c.results[k];
    bool ok = true;
    std::string shown;
    switch (want_t) {
      case DType::Bool: ok = got.data<bool>()[i] == (want == "1"); shown = got.data<bool>()[i] ? "1" : "0"; break;
      case DType::Int32: ok = got.data<std::int32_t>()[i] == std::strtoll(want.c_str(), nullptr, 10); shown = std::to_string(got.data<std::int32_t>()[i]); break;
      case DType::Int64: ok = got.data<std::int64_t>()[i] == std::strtoll(want.c_str(), nullptr, 10); shown = std::to_string(got.data<std::int64_t>()[i]); break;
      case DType::Float32: {
        const float g = got.data<float>()[i];
        const auto wb = static_cast<std::uint32_t>(std::strtoull(want.c_str(), nullptr, 16));
        const float w = std::bit_cast<float>(wb);
        const auto gb = std::bit_cast<std::uint32_t>(g);
        ok = std::isnan(w) ? std::isnan(g) : gb == wb;
        if (!ok && zero_sign_open(c.op)) ok = g == 0 && w == 0;
        if (!ok && ulps_op(c.op) && pow_ulps > 0 && std::isfinite(w) && std::isfinite(g) && std::signbit(g) == std::signbit(w))
          ok = (gb > wb ? gb - wb : wb - gb) <= static_cast<std::uint32_t>(pow_ulps);
        std::ostringstream s;
        s << g;
        shown = s.str();
        break;
      }
      case DType::Float64: {
        const double g = got.data<double>()[i];
        const auto wb = static_cast<std::uint64_t>(std::strtoull(want.c_str(), nullptr, 16));
        const double w = std::bit_cast<double>(wb);
        const auto gb = std::bit_cast<std::uint64_t>(g);
        ok = std::isnan(w) ? std::isnan(g) : gb == wb;
        if (!ok && zero_sign_open(c.op)) ok = g == 0 && w == 0;
        if (!ok && ulps_op(c.op) && pow_ulps > 0 && std::isfinite(w) && std::isfinite(g) && std::signbit(g) == std::signbit(w))
          ok = (gb > wb ? gb - wb : wb - gb) <= static_cast<std::uint64_t>(pow_ulps);
        std::ostringstream s;
        s.precision(17);
        s << g;
        shown = s.str();
        break;
      }
      default: break;
    }
    if (ok) continue;
    if (++bad <= 8)
      msg << "\n  " << c.op << "(" << va[k / vb.size()] << ", " << vb[k % vb.size()] << ") = " << shown
          << ", numpy " << want;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << o.index.size() << " differ" << msg.str();
}

}  // namespace tessera_test::elem_cases
