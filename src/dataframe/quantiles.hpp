#pragma once
/** @file Private: approximate quantiles (quantiles.cpp). */
#include <string>
#include <vector>

#include "tessera/core/value.hpp"
#include "tessera/dataframe/dataframe.hpp"

namespace tessera::dataframe::detail {

/** @brief A one-partition frame: "quantile", then each column's approximate quantiles. */
DataFrame quantiles(const DataFrame& df, const std::vector<std::string>& columns, const std::vector<double>& q);
Object quantile_params(const std::vector<std::string>& columns, const std::vector<double>& q);

}  // namespace tessera::dataframe::detail
