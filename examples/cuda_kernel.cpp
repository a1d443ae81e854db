// Seed 003 in C++: your own CUDA kernel as a Tessera task, then the seed's "vectorize" and CuPy
// examples as device-array expressions, each timed against the host.
//
//   1. @cuda.jit add_kernel(x, y, out) over x = arange(4096) int32, y = ones: the kernel lives in
//      cuda_kernel.cu (nvcc, C++17) and is registered here as the device function
//      "example.add_kernel"; map_blocks applies it to device arrays, launched on the task's
//      stream with the seed's grid (32 blocks of 128 threads, grid-stride). Prints
//      [   1    2    3 ... 4094 4095 4096] and checks every value.
//   2. @vectorize(target='cuda') cos(x)**2 + sin(x)**2 over arange(1e7) float32: the same
//      expression on host arrays and on device arrays (x.to_device()), best of --repeat runs.
//   3. cp.dot of two 1000 x 1000 random arrays: matmul of device arrays (cuBLAS) vs host
//      (OpenBLAS), best of --repeat runs, results compared.
//   --cluster: also submits add_kernel to a LocalCUDACluster worker (client.submit with
//      Target::Device), whose workers are copies of this program (tessera::init), so the kernel
//      is registered there too; the result comes back to this process as host data.
//
//   cuda_kernel [--n 4096] [--vector-n 10000000] [--dot-n 1000] [--repeat 3] [--cluster]
//
// Needs a GPU: without one it prints a line starting "SKIP:" and exits 0. Exit 1 on a wrong value.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <tessera/tessera.hpp>

// cuda_kernel.cu
void launch_add(const int* x, const int* y, int* out, long n, tessera::StreamView stream, int blocks_per_grid,
                int threads_per_block);

namespace {

using namespace tessera;

// The seed's launch configuration: "blocks per grid should be a multiple of 32, threads per block
// a multiple of 128".
constexpr int kBlocksPerGrid = 32;
constexpr int kThreadsPerBlock = 128;

// add_kernel[blocks_per_grid, threads_per_block](x, y, out) as a device function: x and y arrive
// in device memory of ctx.device; the output is allocated there; the launch is queued on the
// task's stream, which run_op synchronises before the result is used.
Block add(const OpContext& ctx, Block x, Block y) {
  if (x.dtype() != DType::Int32 || y.dtype() != DType::Int32 || x.shape() != y.shape())
    throw ShapeError("example.add_kernel: needs two int32 blocks of one shape, got " +
                     std::string(dtype_name(x.dtype())) + " " + shape_to_string(x.shape()) + " and " +
                     std::string(dtype_name(y.dtype())) + " " + shape_to_string(y.shape()));
  Block out = device_block(DType::Int32, x.shape(), ctx.device, ctx.stream);
  launch_add(x.data<std::int32_t>(), y.data<std::int32_t>(), out.data<std::int32_t>(), static_cast<long>(x.size()),
             ctx.stream, kBlocksPerGrid, kThreadsPerBlock);
  return out;
}

}  // namespace

TESSERA_REGISTER_DEVICE_FUNCTION_AS("example.add_kernel", add);

namespace {

/** NumPy's summarised print of a long 1-d int array: [   1    2    3 ... 4094 4095 4096]. */
std::string numpy_print(const Block& b) {
  const auto v = b.values<std::int32_t>();
  std::vector<std::size_t> shown;
  if (v.size() > 1000) shown = {0, 1, 2, v.size() - 3, v.size() - 2, v.size() - 1};
  else for (std::size_t i = 0; i < v.size(); ++i) shown.push_back(i);
  std::size_t width = 0;
  for (auto i : shown) width = std::max(width, std::to_string(v[i]).size());
  std::string s = "[";
  for (std::size_t k = 0; k < shown.size(); ++k) {
    if (k) s += v.size() > 1000 && k == 3 ? " ... " : " ";
    const auto t = std::to_string(v[shown[k]]);
    s += std::string(width - t.size(), ' ') + t;
  }
  return s + "]";
}

/** Best (smallest) wall time of `repeat` calls of fn, in seconds. */
template <typename F>
double best_of(int repeat, F&& fn) {
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

bool check_add(const Block& r, std::int64_t n) {
  if (r.dtype() != DType::Int32 || r.size() != n) return false;
  const auto v = r.values<std::int32_t>();
  for (std::int64_t i = 0; i < n; ++i)
    if (v[static_cast<std::size_t>(i)] != static_cast<std::int32_t>(i + 1)) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::init(argc, argv);  // first: a LocalCUDACluster worker copy of this program stops here
  std::int64_t n = 4096, vector_n = 10'000'000, dot_n = 1000;
  int repeat = 3;
  bool cluster = false;
  CLI::App app{"Tessera: a user's CUDA kernel as a task, device-array expressions vs host (seed 003)"};
  app.add_option("--n", n, "elements of x = arange(n) and y = ones(n) for add_kernel")->check(CLI::Range(1, 1 << 30));
  app.add_option("--vector-n", vector_n, "elements of the cos(x)**2 + sin(x)**2 example")->check(CLI::Range(1, 1 << 30));
  app.add_option("--dot-n", dot_n, "the dot example multiplies two n x n arrays")->check(CLI::Range(1, 50000));
  app.add_option("--repeat", repeat, "timed runs (the best is reported)")->check(CLI::Range(1, 1000));
  app.add_flag("--cluster", cluster, "also submit add_kernel to a LocalCUDACluster worker");
  CLI11_PARSE(app, argc, argv);

  if (visible_gpu_count() == 0) {
    std::printf("SKIP: cuda_kernel needs a GPU; this process sees none (%s)\n",
                device_runtime() ? "the CUDA back end is loaded but finds no device" : device_runtime_status().c_str());
    return 0;
  }
  const GpuInfo gpu = device_runtime()->info(0);
  std::printf("GPU 0: %s, compute capability %d.%d\n", gpu.name.c_str(), gpu.cc_major, gpu.cc_minor);
  int rc = 0;
  try {
    Executor& sync = local_executor("sync");
    Executor& threads = local_executor("threads");

    // ---- 1. add_kernel[32, 128](x_on_device, y_on_device, out_on_device) -------------------
    {
      Array x = arange(0, static_cast<double>(n), 1, n, DType::Int32);  // [0 ... n-1] on the host
      Array y = ones({n}, {n}, DType::Int32);                           // [1 ... 1]
      Array out = map_blocks("example.add_kernel", {x.to_device(), y.to_device()}, DType::Int32);
      const Block r = out.compute(sync);  // copy_to_host
      std::printf("add_kernel[%d, %d](x, y, out) with x = arange(%lld) int32, y = ones:\n%s\n", kBlocksPerGrid,
                  kThreadsPerBlock, static_cast<long long>(n), numpy_print(r).c_str());
      if (!check_add(r, n)) {
        std::fprintf(stderr, "cuda_kernel: add_kernel gave wrong values\n");
        rc = 1;
      }
    }

    // ---- 2. cos(x)**2 + sin(x)**2 over arange(vector_n) float32 -----------------------------
    {
      const std::int64_t chunk = std::max<std::int64_t>(1, (vector_n + 7) / 8);
      Array x = arange(0, static_cast<double>(vector_n), 1, chunk, DType::Float32).persist(threads);
      Array xd = x.to_device().persist(sync);  // inputs in place first, as the seed's x is
      auto f = [](const Array& a) { return square(cos(a)) + square(sin(a)); };
      Array host_result, device_result;
      const double host_s = best_of(repeat, [&] { host_result = f(x).persist(threads); });
      const double device_s = best_of(repeat, [&] { device_result = f(xd).persist(sync); });
      const Block h = host_result.compute(sync), d = device_result.compute(sync);
      double worst = 0;
      for (const Block* b : {&h, &d})
        for (float v : b->values<float>()) worst = std::max(worst, std::fabs(static_cast<double>(v) - 1.0));
      std::printf("cos(x)**2 + sin(x)**2 over arange(%lld) float32: host %.4f s (thread pool), GPU %.4f s "
                  "(%.1fx); max |value - 1| = %.2e\n",
                  static_cast<long long>(vector_n), host_s, device_s, host_s / device_s, worst);
      if (!(worst < 1e-5)) {
        std::fprintf(stderr, "cuda_kernel: cos**2 + sin**2 is not 1\n");
        rc = 1;
      }
    }

    // ---- 3. cp.dot of two random n x n arrays ----------------------------------------------
    {
      Array a = random::uniform(1, 0.0, 1.0, {dot_n, dot_n}, {dot_n, dot_n});
      Array b = random::uniform(2, 0.0, 1.0, {dot_n, dot_n}, {dot_n, dot_n});
      Array ah = a.persist(threads), bh = b.persist(threads);
      Array ad = a.to_device().persist(sync), bd = b.to_device().persist(sync);  // generated on the GPU
      Array zh, zd;
      const double host_s = best_of(repeat, [&] { zh = dot(ah, bh).persist(threads); });
      const double device_s = best_of(repeat, [&] { zd = dot(ad, bd).persist(sync); });
      const Block h = zh.compute(sync), d = zd.compute(sync);
      double worst = 0;
      const auto hv = h.values<double>(), dv = d.values<double>();
      for (std::size_t i = 0; i < hv.size(); ++i) worst = std::max(worst, std::fabs(hv[i] - dv[i]));
      std::printf("dot of two %lldx%lld random arrays: host %.4f s (OpenBLAS), GPU %.4f s (cuBLAS, %.1fx); "
                  "max |host - GPU| = %.2e\n",
                  static_cast<long long>(dot_n), static_cast<long long>(dot_n), host_s, device_s, host_s / device_s,
                  worst);
      if (!(worst < 1e-9 * static_cast<double>(dot_n))) {
        std::fprintf(stderr, "cuda_kernel: host and GPU dot differ\n");
        rc = 1;
      }
    }

    // ---- --cluster: the same kernel submitted to a GPU worker --------------------------------
    if (cluster) {
      using namespace tessera::distributed;
      std::vector<std::int32_t> xs(static_cast<std::size_t>(n)), ys(static_cast<std::size_t>(n), 1);
      for (std::int64_t i = 0; i < n; ++i) xs[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
      Client client(std::make_shared<LocalCUDACluster>());
      std::printf("LocalCUDACluster: %zu GPU worker(s)\n", client.scheduler_info().workers.size());
      Future f;
      {
        Annotate on_gpu({.resources = {{"GPU", 1}}, .target = Target::Device});
        f = client.submit("example.add_kernel", Block::from_values(xs, {n}), Block::from_values(ys, {n}));
      }
      const Block r = f.result_as<Block>();  // back as host data
      std::printf("client.submit(add_kernel, x, y).result() = %s\n", numpy_print(r).c_str());
      if (!check_add(r, n)) {
        std::fprintf(stderr, "cuda_kernel: add_kernel on the cluster gave wrong values\n");
        rc = 1;
      }
      client.close();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_kernel: %s\n", e.what());
    return 1;
  }
  if (rc == 0) std::printf("ok\n");
  return rc;
}
