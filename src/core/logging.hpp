#pragma once
/**
 * @file The library's own logger, private to libtessera: every message goes to the spdlog
 * logger named "tessera", never to spdlog's default logger, so a host application's logging
 * (its default logger, its global level) is left as it set it.
 *
 *     logging::warn("client: unexpected message '{}'", op);
 */
#include <memory>
#include <utility>

#include <spdlog/spdlog.h>

namespace tessera {

/**
 * @brief The "tessera" logger: stderr (programs print results, and benchmarks JSON, on stdout),
 * at TESSERA_LOG_LEVEL ("warning" by default). Made on first use.
 */
const std::shared_ptr<spdlog::logger>& library_logger();

/** @brief Sets the level of the library's logger only (the binaries' --log-level). */
void set_library_log_level(spdlog::level::level_enum level);

namespace logging {

template <typename... A>
void trace(spdlog::format_string_t<A...> fmt, A&&... args) {
  library_logger()->trace(fmt, std::forward<A>(args)...);
}
template <typename... A>
void debug(spdlog::format_string_t<A...> fmt, A&&... args) {
  library_logger()->debug(fmt, std::forward<A>(args)...);
}
template <typename... A>
void info(spdlog::format_string_t<A...> fmt, A&&... args) {
  library_logger()->info(fmt, std::forward<A>(args)...);
}
template <typename... A>
void warn(spdlog::format_string_t<A...> fmt, A&&... args) {
  library_logger()->warn(fmt, std::forward<A>(args)...);
}
template <typename... A>
void error(spdlog::format_string_t<A...> fmt, A&&... args) {
  library_logger()->error(fmt, std::forward<A>(args)...);
}
template <typename... A>
void critical(spdlog::format_string_t<A...> fmt, A&&... args) {
  library_logger()->critical(fmt, std::forward<A>(args)...);
}

}  // namespace logging
}  // namespace tessera
