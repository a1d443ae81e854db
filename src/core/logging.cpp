// The library's logger. It is its own spdlog logger, not spdlog's default one, and it is not
// put in spdlog's registry: a host application's spdlog::set_level, set_pattern or drop_all do
// not reach it, and nothing here touches the host's. TESSERA_LOG_LEVEL sets its level; the
// tessera-scheduler and tessera-worker command lines set it with --log-level.
#include "logging.hpp"

#include <cstdlib>
#include <memory>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace tessera {

const std::shared_ptr<spdlog::logger>& library_logger() {
  // Function-local: safe to use from static initialisers (registrations) of any translation unit.
  // Never destroyed: the comm I/O thread runs until the process ends and may log after the static
  // destructors at exit (ThreadSanitizer saw one of its log lines read the logger as exit freed it).
  static const std::shared_ptr<spdlog::logger>& logger = *new std::shared_ptr<spdlog::logger>([] {
    auto l = std::make_shared<spdlog::logger>("tessera", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [%P] %v");
    std::string level = "warning";
    if (const char* e = std::getenv("TESSERA_LOG_LEVEL"); e && *e) level = e;
    l->set_level(spdlog::level::from_str(level == "warn" ? "warning" : level));
    return l;
  }());
  return logger;
}

void set_library_log_level(spdlog::level::level_enum level) { library_logger()->set_level(level); }

}  // namespace tessera
