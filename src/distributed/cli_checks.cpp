// The checks of the command lines' values: CLI11 checks that run the value parsers
// (cli_values.cpp's durations, data_store_limits.cpp's byte sizes and resources) while the flags
// are parsed, and the checks that need more than one flag or the files they name. A bad value
// exits 105 with the parser's reason (docs/security.md), before anything starts.
#include <charconv>
#include <exception>
#include <functional>

#include "cli_internal.hpp"
#include "cli_values.hpp"
#include "data_store_limits.hpp"
#include "options_check.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed::cli {

namespace {

// A CLI11 check that runs one of the value parsers: a bad value stops the program with the
// parser's message (CLI11 puts the flag's name before it) before anything starts.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, std::string description) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& value) {
        try {
          parse(value);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      std::move(description));
}

// Thread and process counts: CLI11 has read the integer already, so only its range is left.
long long whole_number(const std::string& v) {
  long long n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size()) throw Error("'" + v + "' is not a whole number");
  return n;
}

}  // namespace

CLI::Validator duration_check() {
  return parsed_by([](const std::string& v) { distributed::parse_duration(v, ""); }, "DURATION");
}
CLI::Validator positive_duration_check() {
  return parsed_by([](const std::string& v) { distributed::parse_positive_duration(v, ""); }, "DURATION>0");
}
CLI::Validator at_least_one() {
  return parsed_by(
      [](const std::string& v) {
        if (whole_number(v) < 1) throw Error("must be at least 1, got " + v);
      },
      "INT>=1");
}
// --nthreads: 1 to kMaxWorkerThreads (options_check.hpp says why that bound).
CLI::Validator thread_count_check() {
  return parsed_by(
      [](const std::string& v) {
        const long long n = whole_number(v);
        if (n < 1) throw Error("must be at least 1, got " + v);
        if (n > distributed::kMaxWorkerThreads)
          throw Error("at most " + std::to_string(distributed::kMaxWorkerThreads) + " threads per worker, got " + v +
                      " (use --nworkers for more processes)");
      },
      "1-" + std::to_string(distributed::kMaxWorkerThreads));
}
// Total memory 0 here: only the form is checked (the cap to the machine's memory comes later).
CLI::Validator memory_limit_check() {
  return parsed_by([](const std::string& v) { distributed::parse_memory_limit(v, 0); }, "BYTES");
}
// After parsing, when the number of workers sharing --memory-limit is known: each one's share
// must be 0 (none) or at least kMinWorkerMemoryLimit. A ValidationError: exit 105, as a bad form.
void check_memory_limit_share(const std::string& text, int nworkers) {
  try {
    distributed::check_worker_memory_limit(distributed::parse_memory_limit(text, distributed::system_memory(), nworkers),
                                           text, nworkers);
  } catch (const Error& e) {
    throw CLI::ValidationError("--memory-limit", e.what());
  }
}
CLI::Validator device_memory_limit_check() {
  return parsed_by([](const std::string& v) { distributed::parse_device_memory_limit(v, 0); }, "BYTES");
}
CLI::Validator resources_check() {
  return parsed_by([](const std::string& v) { distributed::parse_resources(v); }, "\"NAME=NUMBER ...\"");
}

// The TLS files with their variables' defaults; when `uses_tls`, checked now (exist, readable,
// parse, key matches certificate), so a mistake stops the program at start with the reason.
comm::Security check_tls_flags(const comm::Security& flags, bool uses_tls) {
  auto s = flags.with_env_defaults();
  if (!uses_tls) return s;  // a worker may learn tls:// later, from the scheduler file
  try {
    comm::check_security(s, /*for_listener=*/true);
  } catch (const comm::CommError& e) {
    throw Error(e.what());
  }
  return s;
}

}  // namespace tessera::distributed::cli
