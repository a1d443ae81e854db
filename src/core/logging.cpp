// Library-wide logging defaults: spdlog writes to stderr (programs print results, and
// benchmarks print JSON, on stdout) at the level in TESSERA_LOG_LEVEL, "warning" by default.
// The tessera-scheduler and tessera-worker command lines set their own level (--log-level).
#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace tessera {
namespace {

const bool logging_configured = [] {
  auto logger = spdlog::stderr_color_mt("tessera");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [%P] %v");
  spdlog::set_default_logger(logger);
  std::string level = "warning";
  if (const char* e = std::getenv("TESSERA_LOG_LEVEL"); e && *e) level = e;
  spdlog::set_level(spdlog::level::from_str(level == "warn" ? "warning" : level));
  return true;
}();

}  // namespace
}  // namespace tessera
