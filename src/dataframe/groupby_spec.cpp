#include "dataframe/groupby_spec.hpp"

#include <stdexcept>

namespace tessera::dataframe {
namespace {

constexpr Agg kAggs[] = {Agg::Sum, Agg::Mean, Agg::Count, Agg::Min, Agg::Max, Agg::Std, Agg::Var, Agg::Size};

}  // namespace

const char* agg_name(Agg agg) {
  switch (agg) {
    case Agg::Sum: return "sum";
    case Agg::Mean: return "mean";
    case Agg::Count: return "count";
    case Agg::Min: return "min";
    case Agg::Max: return "max";
    case Agg::Std: return "std";
    case Agg::Var: return "var";
    case Agg::Size: return "size";
  }
  return "unknown";
}

Agg agg_from_name(const std::string& name) {
  for (Agg a : kAggs)
    if (name == agg_name(a)) return a;
  std::string valid;
  for (Agg a : kAggs) valid += std::string(valid.empty() ? "" : ", ") + agg_name(a);
  throw std::invalid_argument("unknown aggregation '" + name + "' (valid: " + valid + ")");
}

}  // namespace tessera::dataframe
