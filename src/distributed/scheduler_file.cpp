// Reading the scheduler file the scheduler writes (scheduler.cpp, write_scheduler_file): workers
// and clients started with --scheduler-file find the address there, waiting for the file.
#include "scheduler_file.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tessera/core/error.hpp"
#include "tessera/distributed/scheduler.hpp"

namespace tessera::distributed {

std::string scheduler_address_from_text(const std::string& text, const std::string& path) {
  // As JSON (Dask's scheduler files are): a regular expression over the text, as before, recursed
  // once per character of the address in libstdc++ and overflowed the stack on a long one.
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) throw Error("scheduler file " + path + " is not JSON");
  if (json.is_object()) {
    auto it = json.find("address");
    if (it != json.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
      return it->get<std::string>();
  }
  throw Error("scheduler file " + path + " has no \"address\" entry");
}

std::string scheduler_token_from_text(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return {};
  auto it = json.find("token");
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string scheduler_file_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return scheduler_token_from_text(ss.str());
}

std::string read_scheduler_file(const std::string& path, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return scheduler_address_from_text(ss.str(), path);
    }
    if (Clock::now() >= deadline)
      throw Error("scheduler file " + path + " does not exist" +
                  (timeout_s > 0 ? " (waited " + std::to_string(timeout_s) + " s)" : std::string()));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace tessera::distributed
