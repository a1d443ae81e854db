#include "groupby_spec.hpp"

#include <stdexcept>

namespace tessera::dataframe {

namespace {
constexpr const char* kNames[] = {"sum", "mean", "count", "min", "max", "std", "var", "size"};
}

Agg agg_from_name(const std::string& name) {
  for (int i = 0; i < 8; ++i)
    if (name == kNames[i]) return static_cast<Agg>(i);
  throw std::invalid_argument("unknown aggregation '" + name + "' (known: sum, mean, count, min, max, std, var, size)");
}

const char* agg_name(Agg agg) {
  const auto i = static_cast<int>(agg);
  return i >= 0 && i < 8 ? kNames[i] : "?";
}

}  // namespace tessera::dataframe
