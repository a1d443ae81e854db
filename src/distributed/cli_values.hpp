#pragma once
/**
 * @file The command lines' durations and their checks (--worker-ttl, --heartbeat-interval,
 * --death-timeout, --idle-timeout), in Dask's forms. Private to the library (src/); tests
 * include it directly. Byte sizes are data_store_limits.hpp's.
 */
#include <string>

namespace tessera::distributed {

/**
 * @brief Seconds in a duration written as Dask's parse_timedelta reads it: a number with an
 * optional unit, spaces ignored, case-insensitive: "10s", "500ms", "1.5 minutes", "2h", "1d",
 * "250us"; a bare number is seconds ("0.5"). Throws tessera::Error quoting `flag` (when not empty) and the input
 * on anything else (garbage, unknown unit, negative, not finite).
 */
double parse_duration(const std::string& text, const std::string& flag);

/**
 * @brief parse_duration, and more than zero: a TTL or interval of 0 would remove every worker at
 * once or spin. Throws tessera::Error naming the flag otherwise.
 */
double parse_positive_duration(const std::string& text, const std::string& flag);

}  // namespace tessera::distributed
