#pragma once
// Shared helpers for the Array tests: small reference arrays built with plain loops, and a
// property-style checker that runs one expression over several chunkings and both local
// executors and compares every result with the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/array.hpp"
#include "tessera/core/error.hpp"

namespace tessera_test {

using namespace tessera;

/** A reference n-d array: a dtype, a shape and row-major values held as doubles. */
struct Ref {
  DType dtype = DType::Float64;
  Shape shape;
  std::vector<double> v;

  std::int64_t size() const { return shape_size(shape); }
  double at(const std::vector<std::int64_t>& idx) const {
    std::int64_t f = 0;
    for (std::size_t a = 0; a < shape.size(); ++a) f = f * shape[a] + idx[a];
    return v[static_cast<std::size_t>(f)];
  }
};

inline std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& s) {
  std::vector<std::int64_t> idx(s.size());
  for (int a = static_cast<int>(s.size()) - 1; a >= 0; --a) {
    idx[a] = flat % s[a];
    flat /= s[a];
  }
  return idx;
}

/** Reference with value f(index) at every index. */
inline Ref make_ref(DType t, Shape s, const std::function<double(const std::vector<std::int64_t>&)>& f) {
  Ref r{t, s, {}};
  const auto n = shape_size(s);
  r.v.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) r.v[static_cast<std::size_t>(i)] = f(unravel(i, s));
  return r;
}

/** Reference from flat values. */
inline Ref ref_of(DType t, Shape s, std::vector<double> v) { return Ref{t, std::move(s), std::move(v)}; }

/** Element of r read with NumPy broadcasting at an index of a (larger) output shape. */
inline double bcast_at(const Ref& r, const std::vector<std::int64_t>& out_idx) {
  const std::size_t off = out_idx.size() - r.shape.size();
  std::vector<std::int64_t> idx(r.shape.size());
  for (std::size_t a = 0; a < r.shape.size(); ++a) idx[a] = r.shape[a] == 1 ? 0 : out_idx[off + a];
  return r.at(idx);
}

inline Block to_block(const Ref& r) {
  Block b(r.dtype, r.shape);
  dispatch_dtype(r.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(b.raw());
    for (std::size_t i = 0; i < r.v.size(); ++i) p[i] = static_cast<T>(r.v[i]);
  });
  return b;
}

/** Deterministic "interesting" test values (negative, fractional, repeated) for a dtype. */
inline Ref sample(DType t, Shape s, int salt = 0) {
  return make_ref(t, s, [&](const std::vector<std::int64_t>& idx) {
    std::int64_t h = salt * 7 + 3;
    for (auto i : idx) h = h * 31 + i * 17 + 5;
    h = ((h % 97) + 97) % 97;
    switch (t) {
      case DType::Bool: return static_cast<double>((h % 3) == 0);
      case DType::Int32:
      case DType::Int64: return static_cast<double>(h % 23 - 11);
      case DType::Float32: return static_cast<double>(static_cast<float>((h - 48) * 0.37));
      case DType::Float64: return (h - 48) * 0.37 + 0.001 * (h % 7);
      default: break;  // the other dtypes have their own tests (dtypes_test.cpp)
    }
    return 0.0;
  });
}

inline Array to_array(const Ref& r, const ChunkSpec& c) {
  return from_block(to_block(r), r.shape.empty() ? ChunkSpec{} : c);
}

struct Chunking {
  const char* name;
  ChunkSpec spec;  // one size, used for every axis
};
/** Whole array in one chunk, regular chunks of 2, ragged chunks of 3, chunks of 1. */
inline std::vector<Chunking> chunkings() {
  return {{"whole", {-1}}, {"by2", {2}}, {"by3", {3}}, {"by1", {1}}};
}

struct NamedExecutor {
  const char* name;
  Executor* ex;
};
inline std::vector<NamedExecutor> executors() {
  return {{"sync", &local_executor("sync")}, {"threads", &local_executor("threads")}};
}

inline bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

/** Compares dtype, shape and every element; rtol/atol apply to floating dtypes only. */
inline ::testing::AssertionResult block_matches(const Block& got, const Ref& want, double rtol = 1e-12,
                                                double atol = 1e-12) {
  if (got.dtype() != want.dtype)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << ", expected "
                                         << dtype_name(want.dtype);
  if (got.shape() != want.shape)
    return ::testing::AssertionFailure() << "shape " << shape_to_string(got.shape()) << ", expected "
                                         << shape_to_string(want.shape);
  const auto g = got.to_doubles();
  const bool exact = !is_floating(want.dtype);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool ok = exact ? g[i] == want.v[i] : close(g[i], want.v[i], rtol, atol);
    if (!ok) {
      std::ostringstream os;
      os.precision(17);
      os << "element " << i << " (index " << shape_to_string(unravel(static_cast<std::int64_t>(i), want.shape))
         << ") is " << g[i] << ", expected " << want.v[i];
      return ::testing::AssertionFailure() << os.str();
    }
  }
  return ::testing::AssertionSuccess();
}

/** The chunk sizes on every axis add up to the shape. */
inline ::testing::AssertionResult chunks_consistent(const Array& a) {
  if (a.chunks().size() != a.shape().size())
    return ::testing::AssertionFailure() << "chunks have " << a.chunks().size() << " axes for shape "
                                         << shape_to_string(a.shape());
  if (chunks_shape(a.chunks()) != a.shape())
    return ::testing::AssertionFailure() << "chunks " << chunks_to_string(a.chunks()) << " do not add up to "
                                         << shape_to_string(a.shape());
  return ::testing::AssertionSuccess();
}

struct Tol {
  double rtol = 1e-12;
  double atol = 1e-12;
};

/**
 * Builds the expression once per chunking (build receives the chunking index k; input i of
 * check_expr gets chunking (k + i) mod n so operands are chunked differently), checks its
 * static dtype/shape, computes it on both executors and compares with want.
 */
inline void check_configs(const std::function<Array(std::size_t k)>& build, const Ref& want, Tol tol = {},
                          std::source_location loc = std::source_location::current()) {
  ::testing::ScopedTrace where(loc.file_name(), static_cast<int>(loc.line()), "checked here");
  const auto cs = chunkings();
  int failures = 0;
  for (std::size_t k = 0; k < cs.size(); ++k) {
    SCOPED_TRACE(std::string("chunking #") + std::to_string(k) + " (" + cs[k].name + ")");
    Array a = build(k);
    ASSERT_EQ(a.dtype(), want.dtype) << dtype_name(a.dtype()) << " vs " << dtype_name(want.dtype);
    ASSERT_EQ(a.shape(), want.shape);
    ASSERT_TRUE(chunks_consistent(a));
    for (const auto& e : executors()) {
      SCOPED_TRACE(std::string("executor ") + e.name);
      Block b = a.compute(*e.ex);
      const auto r = block_matches(b, want, tol.rtol, tol.atol);
      EXPECT_TRUE(r);
      // One failing configuration says enough; stop before the log floods.
      if (!r && ++failures >= 2) return;
    }
  }
}

/** check_configs for an expression of generators only: build receives the chunk spec. */
inline void check_chunked(const std::function<Array(const ChunkSpec&)>& build, const Ref& want, Tol tol = {},
                          std::source_location loc = std::source_location::current()) {
  const auto cs = chunkings();
  check_configs([&](std::size_t k) { return build(cs[k].spec); }, want, tol, loc);
}

/** check_configs over host inputs, each wrapped with from_block under a chunking. */
inline void check_expr(const std::vector<Ref>& inputs, const std::function<Array(const std::vector<Array>&)>& build,
                       const Ref& want, Tol tol = {}, std::source_location loc = std::source_location::current()) {
  const auto cs = chunkings();
  check_configs(
      [&](std::size_t k) {
        std::vector<Array> arrays;
        for (std::size_t i = 0; i < inputs.size(); ++i) arrays.push_back(to_array(inputs[i], cs[(k + i) % cs.size()].spec));
        return build(arrays);
      },
      want, tol, loc);
}

/**
 * Tolerance for comparing random floats computed through different chunkings or slices:
 * 1e-13 relative, plus a 1e-14 absolute floor. The floor is needed because normal() is not
 * bit-identical across code paths (src/array/kernels/random.cpp, built with -ffast-math: the
 * vectorised libmvec cos and the scalar remainder/strided path differ by a few ulps, about
 * 1e-15 absolute), which for values near zero is more than 1e-13 relative.
 */
inline constexpr Tol kRandomTol{1e-13, 1e-14};

/** Computes with the sync executor. */
inline Block compute_sync(const Array& a) { return a.compute(local_executor("sync")); }

/** Reference from a computed block. */
inline Ref ref_from_block(const Block& b) { return Ref{b.dtype(), b.shape(), b.to_doubles()}; }

}  // namespace tessera_test
