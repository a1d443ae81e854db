// ProgressBar (like dask.diagnostics.ProgressBar) checked as a person sees it: this binary
// re-runs itself in a pseudo-terminal (forkpty) with one child test that computes under a bar,
// and the parent reads the terminal's output: redraws, the final 100% line, the bar's width, and
// for runs where a task raised, the erred share drawn apart and no clean "100% Completed".
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

const bool progress_test_registered = [] {
  register_op("gtest.progress.nap", [](const OpContext&, std::span<const Value>) {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    return Value(Block::scalar(1.0));
  });
  register_op("gtest.progress.raise", [](const OpContext&, std::span<const Value>) -> Value {
    throw std::runtime_error("gtest.progress.raise raised, as it should");
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

// 20 naps and a task that raises once 10 of them are done (so any executor finishes some first),
// read by a last task: the run fails with the naps it got to done and one task erred.
Graph naps_and_a_failure(std::vector<Key>& outputs) {
  Graph g;
  std::vector<Arg> all, first;
  for (int i = 0; i < 20; ++i) {
    Task t;
    t.key = "nap-" + std::to_string(i);
    t.op = "gtest.progress.nap";
    g.add(t);
    all.push_back(KeyRef{t.key});
    if (i < 10) first.push_back(KeyRef{t.key});
  }
  Task bad;
  bad.key = "bad";
  bad.op = "gtest.progress.raise";
  bad.args = first;
  g.add(bad);
  all.push_back(KeyRef{"bad"});
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

TEST(ProgressBarLine, DrawsErredTasksApart) {
  EXPECT_EQ(progress_bar_line(7, 3, 10, 1.25, 10), "[#######XXX] |  70% Completed | 3 erred |  1.2s");
  EXPECT_EQ(progress_bar_line(2, 1, 10, 0, 10), "[##X       ] |  20% Completed | 1 erred |  0.0s");
  EXPECT_EQ(progress_bar_line(9999, 1, 10000, 0, 10), "[#########X] |  99% Completed | 1 erred |  0.0s")
      << "one failure in 10,000 still shows";
  EXPECT_EQ(progress_bar_line(0, 4, 4, 0, 4), "[XXXX] |   0% Completed | 4 erred |  0.0s");
  EXPECT_EQ(progress_bar_line(5, 0, 10, 0, 10), progress_bar_line(0.5, 0, 10)) << "no failure: the plain line";
}

// Runs only as the child of the test below (in its terminal): a bar on stdout over two runs.
TEST(ProgressBarChild, ComputesUnderABar) {
  if (!std::getenv("TESSERA_PROGRESS_CHILD")) GTEST_SKIP() << "runs inside ProgressBar.DrawsOnATerminal";
  std::vector<Key> out;
  Graph g = naps(out);
  ProgressBarOptions o;
  o.fd = STDOUT_FILENO;
  o.dt = 0.05;
  std::vector<Key> failing_out;
  Graph failing = naps_and_a_failure(failing_out);
  {
    ProgressBar bar(o);
    SyncExecutor().get(g, out);
    ThreadPoolExecutor(2).get(g, out);
    EXPECT_THROW(SyncExecutor().get(failing, failing_out), TaskError);
    EXPECT_THROW(ThreadPoolExecutor(2).get(failing, failing_out), TaskError);
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
  ASSERT_EQ(finals.size(), 4u) << "one line per run while the bar lived, none after:\n" << screen;
  // The two runs where "bad" raised: the naps done before it as '#', then 'X', the share of
  // finished tasks (10 to 20 of 22: 45% to 95%) and "1 erred", never a clean 100%.
  for (std::size_t i = 2; i < 4; ++i) {
    const std::string& f = finals[i];
    EXPECT_EQ(f.find("100% Completed"), std::string::npos) << f;
    EXPECT_NE(f.find("% Completed | 1 erred | "), std::string::npos) << f;
    EXPECT_EQ(f.find(']'), 41u) << f;
    const std::string cells = f.substr(1, 40);
    const auto hashes = cells.find_first_not_of('#');
    ASSERT_NE(hashes, std::string::npos) << f;
    EXPECT_GE(hashes, 18u) << "at least the 10 naps before the failure: " << f;
    EXPECT_EQ(cells[hashes], 'X') << f;
    EXPECT_EQ(cells.find_first_not_of('X', hashes), cells.find_first_not_of("#X")) << f;
  }
  finals.resize(2);
  for (const auto& f : finals) {
    EXPECT_EQ(f.rfind("[" + std::string(40, '#') + "] | 100% Completed | ", 0), 0u) << f;
    EXPECT_EQ(f.find(']'), 41u) << "40 characters between the brackets: " << f;
    EXPECT_EQ(f.back(), 's') << f;
  }
  EXPECT_GE(redraws, 4u) << "redrawn while running (every 0.05 s over about 0.5 s):\n" << screen;
  EXPECT_NE(screen.find("% Completed"), std::string::npos);
}

}  // namespace
