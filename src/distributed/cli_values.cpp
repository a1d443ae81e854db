// Durations on the command lines. Dask's flags take "10s" or "5 minutes" as well as bare
// seconds; a value that cannot be meant (negative, zero where it would spin) is refused before
// anything starts instead of being acted on.
#include "cli_values.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "tessera/core/error.hpp"

namespace tessera::distributed {

namespace {

std::string prefix(const std::string& flag) { return flag.empty() ? std::string() : flag + ": "; }

std::optional<double> seconds_per(const std::string& unit) {
  // Dask's parse_timedelta units, and the plural spellings it accepts.
  static const std::map<std::string, double> units = {
      {"", 1.0},           {"s", 1.0},          {"sec", 1.0},        {"secs", 1.0},       {"second", 1.0},
      {"seconds", 1.0},    {"ms", 1e-3},        {"millisecond", 1e-3}, {"milliseconds", 1e-3},
      {"us", 1e-6},        {"microsecond", 1e-6}, {"microseconds", 1e-6},
      {"ns", 1e-9},        {"nanosecond", 1e-9}, {"nanoseconds", 1e-9},
      {"m", 60.0},         {"min", 60.0},       {"mins", 60.0},      {"minute", 60.0},    {"minutes", 60.0},
      {"h", 3600.0},       {"hr", 3600.0},      {"hour", 3600.0},    {"hours", 3600.0},
      {"d", 86400.0},      {"day", 86400.0},    {"days", 86400.0},   {"w", 604800.0},     {"week", 604800.0},
      {"weeks", 604800.0},
  };
  auto it = units.find(unit);
  if (it == units.end()) return std::nullopt;
  return it->second;
}

}  // namespace

double parse_duration(const std::string& text, const std::string& flag) {
  auto fail = [&](const std::string& why) {
    return Error(prefix(flag) + "invalid duration \"" + text + "\": " + why +
                 " (expected seconds such as 10, 0.5, or a number with a unit: 500ms, 10s, 5 minutes, 2h)");
  };
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.empty()) throw fail("empty");
  std::size_t u = s.size();
  while (u > 0 && std::isalpha(static_cast<unsigned char>(s[u - 1]))) --u;
  const std::string number = s.substr(0, u), unit = s.substr(u);
  if (number.empty()) throw fail("no number");
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value, std::chars_format::general);
  if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value))
    throw fail("'" + number + "' is not a number");
  if (value < 0) throw fail("negative");
  auto per = seconds_per(unit);
  if (!per) throw fail("unknown unit '" + unit + "'");
  const double seconds = value * *per;
  if (!std::isfinite(seconds)) throw fail("too large");
  return seconds;
}

double parse_positive_duration(const std::string& text, const std::string& flag) {
  const double s = parse_duration(text, flag);
  if (!(s > 0)) throw Error(prefix(flag) + "must be more than zero, got \"" + text + "\"");
  return s;
}

}  // namespace tessera::distributed
