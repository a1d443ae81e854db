#pragma once
// Test helper: a reference for any reduction over some axes, from a function of the values of
// one slice (in row-major order), for the NaN-aware reductions, quantiles and the like.
#include <algorithm>
#include <functional>
#include <vector>

#include "array_test_util.hpp"

namespace tessera_test {

/** f applied to every slice of a over `axes` (empty: all), NumPy's output layout. */
inline Ref slice_ref(const Ref& a, std::vector<int> axes, bool keepdims, DType out_dtype,
                     const std::function<double(const std::vector<double>&)>& f) {
  const int nd = static_cast<int>(a.shape.size());
  if (axes.empty())
    for (int k = 0; k < nd; ++k) axes.push_back(k);
  for (int& k : axes)
    if (k < 0) k += nd;
  std::vector<bool> red(static_cast<std::size_t>(nd), false);
  for (int k : axes) red[static_cast<std::size_t>(k)] = true;
  Shape out, kept;
  for (int k = 0; k < nd; ++k) {
    if (!red[static_cast<std::size_t>(k)]) {
      out.push_back(a.shape[static_cast<std::size_t>(k)]);
      kept.push_back(a.shape[static_cast<std::size_t>(k)]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  Ref want{out_dtype, out, {}};
  for (std::int64_t f_out = 0; f_out < shape_size(kept); ++f_out) {
    const auto o = unravel(f_out, kept);
    std::vector<double> xs;
    for (std::int64_t g = 0; g < a.size(); ++g) {
      const auto i = unravel(g, a.shape);
      bool match = true;
      for (int k = 0, q = 0; k < nd; ++k)
        if (!red[static_cast<std::size_t>(k)]) match &= i[static_cast<std::size_t>(k)] == o[static_cast<std::size_t>(q++)];
      if (match) xs.push_back(a.v[static_cast<std::size_t>(g)]);
    }
    double v = f(xs);
    if (out_dtype == DType::Float32) v = static_cast<float>(v);
    want.v.push_back(v);
  }
  return want;
}

/** The values without NaN. */
inline std::vector<double> without_nan(const std::vector<double>& xs) {
  std::vector<double> r;
  for (double x : xs)
    if (x == x) r.push_back(x);
  return r;
}

}  // namespace tessera_test
