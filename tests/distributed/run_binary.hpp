#pragma once
// Runs one of the bundled binaries with stderr to a file and waits for it to exit: the flag
// tests of tests/distributed/ (limits_test.cpp, worker_flags_test.cpp) check exit codes and
// messages with it.
#include <string>
#include <vector>

#include "cluster_fixture.hpp"

namespace tessera_test {

struct BinaryExit {
  int status = -1;  // the wait status; -1: still running after the timeout (then killed)
  std::string log;  // stderr
  double seconds = 0;
};

/** Runs `binary args...` and waits up to timeout_s for it to exit (it is killed after that). */
inline BinaryExit run_binary(const std::string& binary, const std::vector<std::string>& args, double timeout_s = 10) {
  TempDir dir;
  const std::string log = (dir.path() / "stderr").string();
  Children kids;  // kills it if it is still running
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>'" + log + "'", binary};
  cmd.insert(cmd.end(), args.begin(), args.end());
  const auto start = Clock::now();
  pid_t pid = kids.spawn(cmd, child_env());
  BinaryExit e;
  if (auto st = kids.wait_exit(pid, timeout_s)) e.status = *st;
  e.seconds = seconds_since(start);
  e.log = read_text(log);
  return e;
}

}  // namespace tessera_test
