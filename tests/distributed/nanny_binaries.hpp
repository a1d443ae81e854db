#pragma once
// Helpers for tests that start tessera-scheduler and tessera-worker under a nanny, with the
// task plugin tests/plugins/nanny_tasks.cpp (nanny_test.cpp, restart_test.cpp).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_fixture.hpp"

namespace tessera_test {

/** @brief The binaries and the plugin, next to the tests; `found` false when one is missing. */
struct NannyBinaries {
  std::string scheduler, worker, plugin;
  bool found = false;
  NannyBinaries() {
    auto bin = build_bin_dir();
    scheduler = (bin / "tessera-scheduler").string();
    worker = (bin / "tessera-worker").string();
    plugin = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libtessera_nanny_tasks.so").string();
    found = std::filesystem::exists(scheduler) && std::filesystem::exists(worker) && std::filesystem::exists(plugin);
  }
};
#define NEED_BINARIES(b) \
  if (!(b).found) GTEST_SKIP() << "tessera-scheduler, tessera-worker or the nanny plugin not built next to the tests"

/** @brief The parent pid of a process (0 when it is gone). */
inline int parent_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return 0;
  auto rp = line.rfind(')');
  if (rp == std::string::npos) return 0;
  std::istringstream rest(line.substr(rp + 2));
  char state = 0;
  int ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

/** @brief Starts `argv` with its stderr in `log`. */
inline pid_t spawn_logged(Children& kids, std::vector<std::string> argv, const std::filesystem::path& log) {
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log.string() + "'"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  return kids.spawn(cmd, child_env());
}

/** @brief A tessera-worker command for the scheduler in `sfile`, with the plugin preloaded. */
inline std::vector<std::string> worker_argv(const NannyBinaries& bins, const std::string& sfile,
                                            const std::string& token, std::vector<std::string> extra) {
  std::vector<std::string> a{bins.worker, "--scheduler-file", sfile, "--nthreads", "1", "--token", token,
                             "--preload", bins.plugin, "--heartbeat-interval", "0.2", "--log-level", "info"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

/** @brief The pid of the cluster's one worker (0 unless there is exactly one). */
inline int only_worker_pid(tessera::distributed::Client& client) {
  auto info = client.scheduler_info();
  return info.workers.size() == 1 ? info.workers[0].pid : 0;
}

}  // namespace tessera_test
