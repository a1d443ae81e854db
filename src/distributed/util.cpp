#include "util.hpp"

#include <spawn.h>
#include <openssl/rand.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "data_store_limits.hpp"
#include "tessera/core/error.hpp"

extern char** environ;

namespace tessera::distributed {

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// From the OS random source (OpenSSL's RAND_bytes, seeded by getrandom and reseeded after a
// fork): tokens and ids must be neither guessable nor shared by a forked child and its parent.
std::string random_hex(int n) {
  static const char* digits = "0123456789abcdef";
  std::string bytes(static_cast<std::size_t>(n + 1) / 2, '\0');
  if (!bytes.empty() && RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(bytes.size())) != 1)
    throw Error("the OS random source failed (OpenSSL RAND_bytes)");
  std::string s(static_cast<std::size_t>(n), '0');
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i] = digits[(static_cast<unsigned char>(bytes[i / 2]) >> (i % 2 ? 0 : 4)) & 15];
  return s;
}

std::string token_or_env(std::string token) {
  if (token.empty())
    if (const char* t = std::getenv("TESSERA_TOKEN")) token = t;
  return token;
}

pid_t spawn_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  if (argv.empty()) throw Error("spawn_process: empty command line");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string s(*e);
    auto eq = s.find('=');
    if (eq != std::string::npos && env.count(s.substr(0, eq))) continue;
    env_strings.push_back(std::move(s));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (int rc = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data()); rc != 0)
    throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

std::string gpu_worker_resources(const std::string& extra) {
  std::map<std::string, double> res{{"GPU", 1.0}};
  for (const auto& [k, v] : parse_resources(extra)) res[k] = v;
  std::string out;
  for (const auto& [k, v] : res) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out += (out.empty() ? "" : ",") + k + "=" + buf;
  }
  return out;
}

void check_device_memory_limit(const std::string& text) {
  try {
    parse_device_memory_limit(text, 0);  // the one parser; total 0: nothing is capped, nothing logged
  } catch (const Error& e) {
    throw Error(std::string("--device-memory-limit: ") + e.what());
  }
}

std::shared_ptr<comm::Comm> connect_to_scheduler(const std::string& address, const comm::CommOptions& options,
                                                 std::chrono::duration<double> timeout, const std::string& who) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  // Missing or wrong TLS files will not get better by retrying: told at once.
  if (address.rfind("tls://", 0) == 0) comm::check_security(options.security, /*for_listener=*/false);
  std::string last_error;
  while (true) {
    try {
      return comm::connect(address, options);
    } catch (const comm::HandshakeError&) {
      throw;
    } catch (const comm::CommError& e) {
      last_error = e.what();
    }
    if (Clock::now() >= deadline) {
      std::ostringstream seconds;  // "5", "0.5": not to_string's "5.000000"
      seconds << timeout.count();
      throw comm::CommError(who + ": cannot reach the scheduler at " + address + " within " + seconds.str() +
                            " s: " + last_error);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace tessera::distributed
