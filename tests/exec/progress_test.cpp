// ProgressBar (like dask.diagnostics.ProgressBar) checked as a person sees it: this binary
// re-runs itself in a pseudo-terminal (forkpty) with one child test that computes under a bar,
// and the parent reads the terminal's output: redraws, the final 100% line, the bar's width.
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tessera/exec/executor.hpp"
#include "tessera/exec/progress.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera;

namespace {

const bool registered = [] {
  register_op("gtest.progress.nap", [](const OpContext&, std::span<const Value>) {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    return Value(Block::scalar(1.0));
  });
  return true;
}();

// 30 independent naps and a task reading them all: about 0.45 s on one thread, several redraws.
Graph naps(std::vector<Key>& outputs) {
  Graph g;
  std::vector<Arg> all;
  for (int i = 0; i < 30; ++i) {
    Task t;
    t.key = "nap-" + std::to_string(i);
    t.op = "gtest.progress.nap";
    g.add(t);
    all.push_back(KeyRef{t.key});
  }
  Task last;
  last.key = "all";
  last.op = "gtest.progress.nap";
  last.args = all;
  g.add(last);
  outputs = {"all"};
  return g;
}

TEST(ProgressBarLine, DrawsDasksLayout) {
  EXPECT_EQ(progress_bar_line(0, 0, 10), "[          ] |   0% Completed |  0.0s");
  EXPECT_EQ(progress_bar_line(0.5, 1.25, 10), "[#####     ] |  50% Completed |  1.2s");
  EXPECT_EQ(progress_bar_line(1, 12.0, 10), "[##########] | 100% Completed | 12.0s");
  EXPECT_EQ(progress_bar_line(2, 0, 4), "[####] | 100% Completed |  0.0s") << "clamped";
  EXPECT_EQ(progress_bar_line(0.999, 0, 40).substr(0, 42), "[" + std::string(39, '#') + " ]");
}

// Runs only as the child of the test below (in its terminal): a bar on stdout over two runs.
TEST(ProgressBarChild, ComputesUnderABar) {
  if (!std::getenv("TESSERA_PROGRESS_CHILD")) GTEST_SKIP() << "runs inside ProgressBar.DrawsOnATerminal";
  std::vector<Key> out;
  Graph g = naps(out);
  ProgressBarOptions o;
  o.fd = STDOUT_FILENO;
  o.dt = 0.05;
  {
    ProgressBar bar(o);
    SyncExecutor().get(g, out);
    ThreadPoolExecutor(2).get(g, out);
  }
  SyncExecutor().get(g, out);  // no bar once it is gone
}

TEST(ProgressBar, DrawsOnATerminal) {
  int master = -1;
  pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0) << "forkpty failed";
  if (pid == 0) {
    ::setenv("TESSERA_PROGRESS_CHILD", "1", 1);
    const char* argv[] = {"progress-child", "--gtest_filter=ProgressBarChild.ComputesUnderABar", "--gtest_brief=1",
                          nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  std::string screen;
  char buf[4096];
  for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) screen.append(buf, static_cast<std::size_t>(n));
  ::close(master);  // read() fails with EIO once the child has gone
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << screen;

  // A terminal turns "\n" into "\r\n"; split into the lines a person is left with, each the
  // last redraw after a carriage return.
  std::vector<std::string> finals;
  std::size_t redraws = 0;
  std::string line, before_cr;  // the text a "\r" returned over: what stays when "\n" follows
  for (char c : screen) {
    if (c == '\n') {
      const std::string& shown = line.empty() ? before_cr : line;
      if (shown.rfind("[", 0) == 0) finals.push_back(shown);
      line.clear();
      before_cr.clear();
    } else if (c == '\r') {
      if (!line.empty()) before_cr = line;
      if (line.rfind("[", 0) == 0) ++redraws;
      line.clear();
    } else {
      line += c;
    }
  }
  ASSERT_EQ(finals.size(), 2u) << "one line per run while the bar lived, none after:\n" << screen;
  for (const auto& f : finals) {
    EXPECT_EQ(f.rfind("[" + std::string(40, '#') + "] | 100% Completed | ", 0), 0u) << f;
    EXPECT_EQ(f.find(']'), 41u) << "40 characters between the brackets: " << f;
    EXPECT_EQ(f.back(), 's') << f;
  }
  EXPECT_GE(redraws, 4u) << "redrawn while running (every 0.05 s over about 0.5 s):\n" << screen;
  EXPECT_NE(screen.find("% Completed"), std::string::npos);
}

}  // namespace
