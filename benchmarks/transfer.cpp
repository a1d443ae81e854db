// benchmarks/transfer: M MiB made on one worker and read by a task on another, so the bytes go
// worker to worker over the data plane (Dask anchor: about 2.7 GB/s; a plain TCP socket pair
// does 3.5 to 5 GB/s here). Reported beside memcpy of the same size, in the same run.
//
//   transfer --megabytes 256 [--repeat 5] [--protocol tcp|ucx] [--device host|gpu]
//            [--workers 2 --threads 1 | --scheduler ADDRESS]
//
// --device gpu: the payload is made in the first worker's GPU memory and read into the second
// worker's (two workers sharing one GPU on a one-GPU machine): device to device. Over tcp:// the
// serving worker copies it to host first; over ucx:// the comm stages it through pinned chunks
// overlapped with the send, or (UCX with CUDA) sends it directly ("device_path" in the output).
//
// With --sweep, one line per size, 8 B to --megabytes (x8 steps):
//   {"benchmark":"transfer_sweep","protocol":"ucx","bytes":...,"seconds":<best move>,
//    "median_us":<median move>,"gb_per_s":<bytes / (best - overhead)>,...}
// A move is a task on the receiving worker that reads the value: it includes scheduling (the
// 8-byte move, "overhead_seconds", is that alone), so gb_per_s subtracts it.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_cluster.hpp"
#include "tessera/comm/comm.hpp"

// A payload of n bytes, every page written (as a real result would be).
tessera::Block make_payload(std::int64_t nbytes) {
  tessera::Block b(tessera::DType::Float64, {nbytes / 8});
  double* p = b.data<double>();
  for (std::int64_t i = 0; i < nbytes / 8; ++i) p[i] = static_cast<double>(i);
  return b;
}
TESSERA_REGISTER_FUNCTION(make_payload);

std::int64_t payload_bytes(tessera::Block b) { return static_cast<std::int64_t>(b.nbytes()); }
TESSERA_REGISTER_FUNCTION(payload_bytes);

// Device variants (--device gpu): the payload lives in the worker's GPU; the reader gets it there.
tessera::Block make_payload_on_device(const tessera::OpContext& ctx, std::int64_t nbytes) {
  return tessera::to_device(make_payload(nbytes), ctx.device, ctx.stream);
}
TESSERA_REGISTER_DEVICE_FUNCTION_AS("make_payload", make_payload_on_device);
std::int64_t payload_bytes_on_device(const tessera::OpContext&, tessera::Block b) {
  if (b.memory_kind() != tessera::MemoryKind::Device) throw tessera::Error("payload_bytes: the payload is not on the GPU");
  return static_cast<std::int64_t>(b.nbytes());
}
TESSERA_REGISTER_DEVICE_FUNCTION_AS("payload_bytes", payload_bytes_on_device);

static int run(int argc, char** argv) {
  tessera::init(argc, argv);
  int megabytes = 256, repeat = 5;
  bool sweep = false;
  std::string device = "host";
  bench::ClusterArgs cluster;
  CLI::App app{"transfer: worker-to-worker bandwidth"};
  app.add_option("--megabytes", megabytes, "MiB to move");
  app.add_option("--repeat", repeat, "transfers; the best is reported");
  app.add_flag("--sweep", sweep, "one line per size from 8 B to --megabytes");
  app.add_option("--device", device, "host, or gpu: device memory to device memory")->check(CLI::IsMember({"host", "gpu"}));
  app.add_option("--scheduler", cluster.scheduler, "running scheduler (default: start a local cluster)");
  bench::add_cluster_options(app, cluster);
  CLI11_PARSE(app, argc, argv);

  using namespace tessera;
  using namespace tessera::distributed;
  auto client = bench::connect(cluster);
  auto info = client->scheduler_info();
  if (info.workers.size() < 2) {
    std::fprintf(stderr, "transfer: needs 2 workers, the cluster has %zu\n", info.workers.size());
    return 2;
  }
  if (device == "gpu" &&
      std::count_if(info.workers.begin(), info.workers.end(), [](const auto& w) { return !w.gpus.empty(); }) < 2) {
    std::fprintf(stderr, "transfer: --device gpu needs 2 workers with a GPU (they may share one)\n");
    return 2;
  }
  const std::string from = info.workers[0].address, to = info.workers[1].address;
  // What carries the workers' links (docs/ucx.md): "ucx (sysv/memory, cma/memory)" or "tcp".
  const auto comm_it = info.workers[1].extra.find("comm");
  const std::string transport = comm_it == info.workers[1].extra.end() ? "?" : comm_it->second;
  // The UCX library loaded here, which the local cluster's workers load too (same environment),
  // and so how device frames cross (docs/ucx.md): "direct" (UCX with CUDA), "staged" (pinned
  // chunks, overlapped), or "host-copy" (tcp://: the serving worker copies the block to host).
  const auto ucx = tessera::comm::ucx_status();
  const std::string ucx_text = ucx.available ? ucx.version + (ucx.cuda ? "+cuda" : "") : "none";
  const bool over_ucx = transport.rfind("ucx", 0) == 0;
  const std::string device_path = device != "gpu" ? "host" : !over_ucx ? "host-copy" : ucx.cuda ? "direct" : "staged";
  auto on = [&](const std::string& w) {
    SubmitOptions o;
    o.annotations = Annotations{};
    o.annotations->workers = {w};
    if (device == "gpu") o.annotations->target = Target::Device;
    return o;
  };
  const std::int64_t nbytes = static_cast<std::int64_t>(megabytes) << 20;

  // One transfer: the payload is made on `from`, then a task on `to` reads it.
  auto move = [&](std::int64_t size) {
    Future payload = client->submit_with(on(from), "make_payload", size);
    payload.wait();
    auto t0 = std::chrono::steady_clock::now();
    std::int64_t got = client->submit_with(on(to), "payload_bytes", payload).result_as<std::int64_t>();
    double s = bench::seconds_since(t0);
    if (got != size) throw Error("transfer: moved " + std::to_string(got) + " bytes, expected " + std::to_string(size));
    return s;
  };
  double overhead = 1e300, best = 1e300;
  for (int r = 0; r < 20; ++r) overhead = std::min(overhead, move(8));  // the same path with 8 bytes
  if (sweep) {
    std::vector<std::int64_t> sizes;
    for (std::int64_t n = 8; n < nbytes; n *= 8) sizes.push_back(n);
    sizes.push_back(nbytes);
    for (auto size : sizes) {
      std::vector<double> t;
      for (int r = 0; r < std::max(1, repeat) + 1; ++r) t.push_back(move(size));
      t.erase(t.begin());  // warm-up: the receiver's buffers come from a pool after the first
      std::sort(t.begin(), t.end());
      const double gb = static_cast<double>(size) / 1e9;
      // Net of the 8-byte move; null where the size is lost in the scheduling noise.
      char net[32] = "null";
      if (t.front() > 1.05 * overhead) std::snprintf(net, sizeof net, "%.3f", gb / (t.front() - overhead));
      std::printf("{\"benchmark\": \"transfer_sweep\", \"impl\": \"tessera\", \"bytes\": %lld, \"workers\": %d, "
                  "\"protocol\": \"%s\", \"device\": \"%s\", \"device_path\": \"%s\", \"ucx\": \"%s\", "
                  "\"transport\": \"%s\", \"repeat\": %d, \"seconds\": %.6f, "
                  "\"median_us\": %.1f, \"overhead_seconds\": %.6f, \"gb_per_s\": %s, "
                  "\"gb_per_s_with_overhead\": %.3f}\n",
                  static_cast<long long>(size), cluster.workers, cluster.protocol.c_str(), device.c_str(),
                  device_path.c_str(), ucx_text.c_str(), transport.c_str(), repeat,
                  t.front(),
                  t[t.size() / 2] * 1e6, overhead, net, gb / t.front());
      std::fflush(stdout);
    }
    return 0;
  }
  for (int r = 0; r < repeat; ++r) best = std::min(best, move(nbytes));

  std::vector<char> a(static_cast<std::size_t>(nbytes), 1), b(static_cast<std::size_t>(nbytes), 0);
  double memcpy_best = 1e300;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    memcpy_best = std::min(memcpy_best, bench::seconds_since(t0));
  }
  const double gb = static_cast<double>(nbytes) / 1e9;
  std::printf("{\"benchmark\": \"transfer\", \"impl\": \"tessera\", \"megabytes\": %d, \"workers\": %d, "
              "\"protocol\": \"%s\", \"device\": \"%s\", \"device_path\": \"%s\", \"ucx\": \"%s\", \"transport\": \"%s\", "
              "\"seconds\": %.6f, \"gb_per_s\": %.3f, \"overhead_seconds\": %.6f, "
              "\"gb_per_s_with_overhead\": %.3f, \"memcpy_gb_per_s\": %.3f}\n",
              megabytes, cluster.workers, cluster.protocol.c_str(), device.c_str(), device_path.c_str(), ucx_text.c_str(),
              transport.c_str(), best - overhead, gb / (best - overhead), overhead, gb / best, gb / memcpy_best);
  return 0;
}

int main(int argc, char** argv) { return bench::run_main("transfer", run, argc, argv); }
