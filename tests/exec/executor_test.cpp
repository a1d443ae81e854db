// Exec layer: SyncExecutor and ThreadPoolExecutor.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "tessera/core/error.hpp"
#include "tessera/exec/executor.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/ops/fuse.hpp"
#include "tessera/ops/registry.hpp"

using namespace tessera;

namespace {

std::atomic<int> g_runs{0};
std::mutex g_log_mu;
std::vector<Key> g_log;

Value scalar(double v) { return Value(Block::scalar(v)); }

const bool executor_test_registered = [] {
  // Scalars: a linear combination, so sync and threaded runs must agree bit for bit.
  register_op("gtest.exec.lin", [](const OpContext&, std::span<const Value> args) {
    double s = 0;
    for (std::size_t i = 0; i < args.size(); ++i) s = s * 0.5 + args[i].block().item() * static_cast<double>(i + 1);
    g_runs.fetch_add(1, std::memory_order_relaxed);
    return scalar(s);
  });
  register_op("gtest.exec.noop", [](const OpContext&, std::span<const Value>) { return Value(); });
  // A task that takes 1 ms: what a failure must stop depends on time, so the tasks it stops must
  // take some (a loaded machine can leave the failing thread off the CPU for a few ms).
  register_op("gtest.exec.slow", [](const OpContext&, std::span<const Value>) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    g_runs.fetch_add(1, std::memory_order_relaxed);
    return scalar(1);
  });
  register_op("gtest.exec.count", [](const OpContext&, std::span<const Value> args) {
    return scalar(static_cast<double>(args.size()));
  });
  register_op("gtest.exec.fail", [](const OpContext&, std::span<const Value>) -> Value {
    throw std::runtime_error("boom");
  });
  register_op("gtest.exec.log", [](const OpContext& ctx, std::span<const Value>) {
    std::lock_guard lk(g_log_mu);
    g_log.push_back(*ctx.key);
    return scalar(1);
  });
  // n doubles, all equal to the literal argument
  register_op("gtest.exec.fill", [](const OpContext&, std::span<const Value> args) {
    const auto n = static_cast<std::int64_t>(args[0].block().item());
    Block b(DType::Float64, {n});
    for (std::int64_t i = 0; i < n; ++i) b.data<double>()[i] = args[1].block().item();
    return Value(b);
  });
  register_op("gtest.exec.inc", [](const OpContext&, std::span<const Value> args) {
    const Block& in = args[0].block();
    Block b(DType::Float64, in.shape());
    for (std::int64_t i = 0; i < in.size(); ++i) b.data<double>()[i] = in.data<double>()[i] + 1;
    return Value(b);
  });
  register_op("gtest.exec.total", [](const OpContext&, std::span<const Value> args) {
    double s = 0;
    for (const auto& a : args)
      for (double v : a.block().to_doubles()) s += v;
    return scalar(s);
  });
  return true;
}();

Task make(Key key, std::string op, std::vector<Arg> args, int priority = 0) {
  Task t;
  t.key = std::move(key);
  t.op = std::move(op);
  t.args = std::move(args);
  t.annotations.priority = priority;
  return t;
}

/** A random DAG of n tasks: each reads up to 4 earlier tasks (sometimes twice) plus a literal. */
Graph random_dag(int n, unsigned seed, std::vector<Key>& outputs) {
  std::mt19937 rng(seed);
  Graph g;
  std::vector<int> dependents(n, 0);
  for (int i = 0; i < n; ++i) {
    std::vector<Arg> args{scalar(i % 7 - 3)};
    const int k = i == 0 ? 0 : static_cast<int>(rng() % 5);
    for (int j = 0; j < k; ++j) {
      const int d = static_cast<int>(rng() % i);
      args.emplace_back(KeyRef{"t-" + std::to_string(d)});
      ++dependents[d];
    }
    g.add(make("t-" + std::to_string(i), "gtest.exec.lin", std::move(args), static_cast<int>(rng() % 3)));
  }
  for (int i = 0; i < n; ++i)
    if (dependents[i] == 0 || i % 17 == 0) outputs.push_back("t-" + std::to_string(i));
  return g;
}

/** Recomputes a random DAG directly, for a reference. */
double reference(const Graph& g, const Key& k, std::unordered_map<Key, double>& memo) {
  if (auto it = memo.find(k); it != memo.end()) return it->second;
  const Task& t = g.at(k);
  double s = 0;
  for (std::size_t i = 0; i < t.args.size(); ++i) {
    double v = std::holds_alternative<Value>(t.args[i]) ? std::get<Value>(t.args[i]).block().item()
                                                        : reference(g, std::get<KeyRef>(t.args[i]).key, memo);
    s = s * 0.5 + v * static_cast<double>(i + 1);
  }
  return memo[k] = s;
}

/** K chains fill(chunk) -> inc -> inc -> total feeding a pairwise tree sum. */
Key wide_graph(Graph& g, int k, int chunk) {
  std::vector<Key> level;
  for (int i = 0; i < k; ++i) {
    const auto s = std::to_string(i);
    g.add(make("fill," + s, "gtest.exec.fill", {scalar(chunk), scalar(i)}));
    g.add(make("inc1," + s, "gtest.exec.inc", {KeyRef{"fill," + s}}));
    g.add(make("inc2," + s, "gtest.exec.inc", {KeyRef{"inc1," + s}}));
    g.add(make("part," + s, "gtest.exec.total", {KeyRef{"inc2," + s}}));
    level.push_back("part," + s);
  }
  for (int depth = 0; level.size() > 1; ++depth) {
    std::vector<Key> next;
    for (std::size_t i = 0; i < level.size(); i += 2) {
      std::vector<Arg> args{KeyRef{level[i]}};
      if (i + 1 < level.size()) args.emplace_back(KeyRef{level[i + 1]});
      Key key = "tree," + std::to_string(depth) + "," + std::to_string(i);
      g.add(make(key, "gtest.exec.total", std::move(args)));
      next.push_back(key);
    }
    level = std::move(next);
  }
  return level[0];
}

double wide_expected(int k, int chunk) {
  double s = 0;
  for (int i = 0; i < k; ++i) s += static_cast<double>(chunk) * (i + 2);
  return s;
}

}  // namespace

TEST(Executors, SyncAndThreadsAgreeOnRandomDags) {
  SyncExecutor sync;
  ThreadPoolExecutor threads(4);
  for (unsigned seed = 1; seed <= 5; ++seed) {
    std::vector<Key> outputs;
    Graph g = random_dag(300, seed, outputs);
    auto a = sync.get(g, outputs);
    EXPECT_EQ(last_execution_stats().tasks_run, 300u);
    auto b = threads.get(g, outputs);
    EXPECT_EQ(last_execution_stats().tasks_run, 300u);
    ASSERT_EQ(a.size(), outputs.size());
    ASSERT_EQ(b.size(), outputs.size());
    std::unordered_map<Key, double> memo;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(a[i].block().item(), b[i].block().item()) << outputs[i];
      EXPECT_EQ(a[i].block().item(), reference(g, outputs[i], memo)) << outputs[i];
    }
  }
}

TEST(Executors, OnlyWhatOutputsNeedRuns) {
  Graph g;
  g.add(make("a", "gtest.exec.lin", {scalar(1)}));
  g.add(make("b", "gtest.exec.lin", {KeyRef{"a"}, KeyRef{"a"}}));
  g.add(make("unrelated", "gtest.exec.fail", {}));
  for (Executor* ex : {static_cast<Executor*>(new SyncExecutor), static_cast<Executor*>(new ThreadPoolExecutor(2))}) {
    auto r = ex->get(g, {"b", "a", "b"});
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[1].block().item(), 1.0);
    EXPECT_EQ(r[0].block().item(), 1.0 * 0.5 + 2.0);  // lin(a, a): (1*1)*0.5 + 1*2
    EXPECT_EQ(r[2].block().item(), r[0].block().item());
    EXPECT_EQ(last_execution_stats().tasks_run, 2u);
    EXPECT_TRUE(ex->get(g, {}).empty());
    delete ex;
  }
}

TEST(Executors, TaskExceptionBecomesTaskErrorAndExecutorStaysUsable) {
  Graph bad;
  bad.add(make("ok", "gtest.exec.lin", {scalar(1)}));
  bad.add(make("bad-key,3", "gtest.exec.fail", {KeyRef{"ok"}}));
  bad.add(make("after", "gtest.exec.lin", {KeyRef{"bad-key,3"}}));
  Graph good;
  good.add(make("x", "gtest.exec.lin", {scalar(2)}));
  SyncExecutor sync;
  ThreadPoolExecutor threads(2);
  for (Executor* ex : std::vector<Executor*>{&sync, &threads}) {
    g_runs = 0;
    try {
      ex->get(bad, {"after"});
      FAIL() << "expected TaskError from " << ex->name();
    } catch (const TaskError& e) {
      EXPECT_EQ(e.key(), "bad-key,3");
      EXPECT_EQ(e.task_message(), "boom");
      EXPECT_NE(std::string(e.what()).find("bad-key,3"), std::string::npos);
    }
    EXPECT_EQ(g_runs.load(), 1) << "'after' must not run";
    EXPECT_EQ(ex->get(good, {"x"})[0].block().item(), 2.0);
  }
}

TEST(Executors, FailureStopsSchedulingNewTasks) {
  // One failing task ordered first, then 2000 independent tasks of 1 ms: most must never start
  // (all of them would take a second on the two threads).
  Graph g;
  std::vector<Key> outs{"fail"};
  g.add(make("fail", "gtest.exec.fail", {}, 10));
  for (int i = 0; i < 2000; ++i) {
    g.add(make("n" + std::to_string(i), "gtest.exec.slow", {scalar(i)}));
    outs.push_back("n" + std::to_string(i));
  }
  ThreadPoolExecutor threads(2);
  g_runs = 0;
  EXPECT_THROW(threads.get(g, outs), TaskError);
  EXPECT_LT(g_runs.load(), 1000);
  SyncExecutor sync;
  g_runs = 0;
  EXPECT_THROW(sync.get(g, outs), TaskError);
  EXPECT_EQ(g_runs.load(), 0);
}

TEST(Executors, UnknownOperationNamesTheTask) {
  Graph g;
  g.add(make("a", "gtest.exec.lin", {scalar(1)}));
  g.add(make("mystery,0", "gtest.no_such_op", {KeyRef{"a"}}));
  SyncExecutor sync;
  ThreadPoolExecutor threads(2);
  for (Executor* ex : std::vector<Executor*>{&sync, &threads}) {
    g_runs = 0;
    try {
      ex->get(g, {"mystery,0"});
      FAIL() << "expected UnknownOperationError";
    } catch (const UnknownOperationError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("mystery,0"), std::string::npos) << m;
      EXPECT_NE(m.find("gtest.no_such_op"), std::string::npos) << m;
    }
    EXPECT_EQ(g_runs.load(), 0) << "nothing runs when an op is unknown";
  }
}

TEST(Executors, MissingKeysAreListedBeforeAnythingRuns) {
  Graph g;
  g.add(make("a", "gtest.exec.lin", {scalar(1)}));
  g.add(make("b", "gtest.exec.lin", {KeyRef{"a"}, KeyRef{"ghost-1"}}));
  g.add(make("c", "gtest.exec.lin", {KeyRef{"b"}, KeyRef{"ghost-2"}}));
  SyncExecutor sync;
  ThreadPoolExecutor threads(2);
  for (Executor* ex : std::vector<Executor*>{&sync, &threads}) {
    g_runs = 0;
    try {
      ex->get(g, {"c", "not-an-output"});
      FAIL() << "expected Error";
    } catch (const TaskError&) {
      FAIL() << "missing keys are not a task failure";
    } catch (const Error& e) {
      const std::string m = e.what();
      for (const char* k : {"ghost-1", "ghost-2", "not-an-output"}) EXPECT_NE(m.find(k), std::string::npos) << m;
    }
    EXPECT_EQ(g_runs.load(), 0);
  }
}

TEST(Executors, SyncExecutorHonoursPriorities) {
  Graph g;
  g.add(make("low", "gtest.exec.log", {}, -1));
  g.add(make("mid", "gtest.exec.log", {}, 0));
  g.add(make("high", "gtest.exec.log", {}, 7));
  g.add(make("mid2", "gtest.exec.log", {}, 0));
  g_log.clear();
  SyncExecutor().get(g, {"low", "mid", "high", "mid2"});
  // Priority first, then order (outputs in the given order).
  EXPECT_EQ(g_log, (std::vector<Key>{"high", "mid", "mid2", "low"}));

  // A ready high-priority task overtakes the rest of the graph.
  Graph h;
  h.add(make("x1", "gtest.exec.log", {}));
  h.add(make("x2", "gtest.exec.log", {KeyRef{"x1"}}));
  h.add(make("urgent", "gtest.exec.log", {}, 3));
  g_log.clear();
  SyncExecutor().get(h, {"x2", "urgent"});
  EXPECT_EQ(g_log, (std::vector<Key>{"urgent", "x1", "x2"}));
}

TEST(Executors, IntermediatesAreReleasedSoPeakMemoryStaysLow) {
  const int k = 64, chunk = 1000;
  Graph g;
  const Key root = wide_graph(g, k, chunk);
  const std::size_t block = chunk * sizeof(double);
  const std::size_t all_intermediates = 3 * k * block;  // fill, inc1, inc2 of every chain
  SyncExecutor sync;
  EXPECT_EQ(sync.get(g, {root})[0].block().item(), wide_expected(k, chunk));
  const auto s = last_execution_stats();
  EXPECT_EQ(s.tasks_run, g.size());
  EXPECT_GE(s.peak_bytes, 2 * block);  // inc needs its input and output at once
  EXPECT_LE(s.peak_bytes, 3 * block);
  ThreadPoolExecutor threads(2);
  EXPECT_EQ(threads.get(g, {root})[0].block().item(), wide_expected(k, chunk));
  const auto t = last_execution_stats();
  EXPECT_LT(t.peak_bytes, all_intermediates / 8);
  std::printf("wide graph: all intermediates %zu bytes, peak sync %zu, threads(2) %zu\n", all_intermediates,
              s.peak_bytes, t.peak_bytes);
}

TEST(Executors, FusedGraphGivesTheSameResult) {
  Graph g;
  const Key root = wide_graph(g, 16, 100);
  Graph f = fuse_linear(g, {root});
  EXPECT_LT(f.size(), g.size());
  ThreadPoolExecutor threads(2);
  EXPECT_EQ(threads.get(f, {root})[0].block().item(), wide_expected(16, 100));
  EXPECT_EQ(last_execution_stats().tasks_run, f.size());
}

TEST(Executors, ConcurrentGetsOnOnePool) {
  ThreadPoolExecutor threads(2);
  std::vector<double> results(4, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      Graph g;
      const Key root = wide_graph(g, 8 + c, 50);
      results[c] = threads.get(g, {root})[0].block().item();
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(results[c], wide_expected(8 + c, 50));
}

TEST(Executors, LocalExecutorsAreSharedSingletons) {
  EXPECT_EQ(&local_executor("sync"), &local_executor("synchronous"));
  EXPECT_EQ(&local_executor("sync"), &local_executor("single-threaded"));
  EXPECT_EQ(&local_executor("threads"), &local_executor());
  EXPECT_NE(&local_executor("threads"), &local_executor("sync"));
  EXPECT_EQ(local_executor("sync").name(), "sync");
  EXPECT_EQ(local_executor("threads").name().rfind("threads(", 0), 0u);
  EXPECT_THROW(local_executor("processes-of-doom"), Error);
  EXPECT_EQ(ThreadPoolExecutor(3).threads(), 3u);
  EXPECT_GE(ThreadPoolExecutor().threads(), 1u);
}

TEST(Executors, HundredThousandNoOpTasks) {
  const int n = 100'000;
  Graph g;
  std::vector<Arg> all;
  all.reserve(n);
  for (int i = 0; i < n; ++i) {
    Key k = "noop," + std::to_string(i);
    g.add(make(k, "gtest.exec.noop", {}));
    all.emplace_back(KeyRef{std::move(k)});
  }
  g.add(make("count", "gtest.exec.count", std::move(all)));
  SyncExecutor sync;
  ThreadPoolExecutor threads(2);
  for (Executor* ex : std::vector<Executor*>{&sync, &threads}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = ex->get(g, {"count"});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r[0].block().item(), n);
    EXPECT_EQ(last_execution_stats().tasks_run, static_cast<std::size_t>(n + 1));
    std::printf("%s: %d no-op tasks in %.3f s = %.2f us/task\n", ex->name().c_str(), n + 1, s, s * 1e6 / (n + 1));
  }
}
