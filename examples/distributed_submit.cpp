// Seed 002 in C++: a local cluster, client.submit then result, client.map then gather, and an
// array reduction computed on the cluster.
//
//   distributed_submit                          # starts its own LocalCluster (2 workers)
//   distributed_submit --scheduler tcp://127.0.0.1:8786   # or uses a running scheduler
//
// The task functions (add_one, square) live in libtessera_example_tasks.so (example_tasks.cpp),
// which this program links: it submits the functions themselves (typed futures, arguments
// checked at submit), its LocalCluster workers are copies of this program (tessera::init), and
// tessera-worker processes load the library with --preload.
#include <cstdio>
#include <numeric>

#include <CLI/CLI.hpp>
#include <tessera/tessera.hpp>

#include "example_tasks.hpp"

int main(int argc, char** argv) {
  tessera::init(argc, argv);  // first: a worker copy of this program stops here
  std::string scheduler;
  int workers = 2, threads = 1;
  CLI::App app{"Tessera submit/map example (seed 002)"};
  app.add_option("--scheduler", scheduler, "scheduler address; default: start a LocalCluster");
  app.add_option("--workers", workers, "workers of the LocalCluster");
  app.add_option("--threads", threads, "threads per worker");
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  using namespace tessera::distributed;
  using tessera_examples::tasks::add_one;
  using tessera_examples::tasks::square;
  std::unique_ptr<Client> client;
  if (scheduler.empty()) {
    LocalClusterOptions o;
    o.n_workers = workers;
    o.threads_per_worker = threads;
    client = std::make_unique<Client>(std::make_shared<LocalCluster>(o));
  } else {
    client = std::make_unique<Client>(scheduler);
  }
  auto info = client->scheduler_info();
  std::printf("cluster at %s with %zu workers\n", info.address.c_str(), info.workers.size());
  for (const auto& w : info.workers)
    std::printf("  %s  %s  %d threads  pid %d\n", w.name.c_str(), w.address.c_str(), w.nthreads, w.pid);

  // f = client.submit(add_one, 10); f.result()
  TypedFuture<int> f = client->submit(add_one, 10);
  const int eleven = f.result();
  std::printf("submit(add_one, 10).result() = %d\n", eleven);
  // By its registered name (for a function this program does not link): an untyped Future.
  Future g = client->submit("add_one", 10);
  std::printf("submit(\"add_one\", 10).result() = %d\n", g.result_as<int>());

  // client.map then gather: typed values back
  std::vector<double> xs(100);
  std::iota(xs.begin(), xs.end(), 0.0);
  std::vector<double> squares = client->gather(client->map(square, xs));
  const double total = std::accumulate(squares.begin(), squares.end(), 0.0);
  std::printf("sum of map(square, 0..99) = %.0f (expected 328350)\n", total);

  // A wrong argument is refused at submit, naming the function, the argument and both types.
  try {
    client->submit("add_one", std::string("ten"));
    std::printf("submit(\"add_one\", \"ten\") was not refused\n");
    return 1;
  } catch (const SignatureError& e) {
    std::printf("submit(\"add_one\", \"ten\"): %s\n", e.what());
  }

  // arr = da.random.random((1000, 1000), chunks=(100, 100)); arr.mean().compute()
  auto arr = random::uniform(/*seed=*/42, 0.0, 1.0, {1000, 1000}, {100, 100});
  double mean = arr.mean().compute(*client).item();
  std::printf("random((1000, 1000), chunks=(100, 100)).mean() = %.4f (expected about 0.5)\n", mean);
  client->close();
  const bool ok = eleven == 11 && total == 328350.0 && mean > 0.45 && mean < 0.55;
  return ok ? 0 : 1;
}
