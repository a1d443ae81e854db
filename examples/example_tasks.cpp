// Task functions of the examples, in a shared library so that both ways of running them work:
// the example programs link it (and, with tessera::init, serve as their own workers), and the
// generic workers load it: tessera-worker ADDRESS --preload libtessera_example_tasks.so (or
// tessera-cuda-worker). See example_tasks.hpp for what each one takes and returns.
//
// The GPU tasks compute with device arrays inside the task, on the worker's own GPU, with the
// worker-local synchronous executor (a GPU worker sees its device as device 0): the task is one
// task of the cluster, the arrays it builds are small graphs run in place.
#include "example_tasks.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include <tessera/tessera.hpp>

// The tasks use the array API unqualified; square(Array) still finds tessera::square by its
// argument's namespace beside square(double) here.
namespace tessera_examples::tasks {

using namespace tessera;

int add_one(int x) { return x + 1; }
double square(double x) { return x * x; }

/** The process this runs in; device = the GPU's name when `on_gpu`. */
Where where(bool on_gpu) {
  Where w;
  w.pid = static_cast<int>(::getpid());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) w.host = host;
  if (on_gpu) w.device = device_runtime()->info(0).name;
  return w;
}

/** Whether this process can compute on a GPU (a GPU worker sees its own device as device 0). */
bool has_gpu() { return visible_gpu_count() > 0; }

Where where_am_i() { return where(has_gpu()); }

// Seed 000: cp.arange(6).reshape(2, 3).astype("f").sum() on the worker's GPU, returned to the
// client as a host block (cp.asnumpy). on_device = false computes the same on host memory.
Block test_gpu(bool on_device) {
  if (on_device && !has_gpu())
    throw DeviceError("test_gpu: this worker has no GPU (" + device_runtime_status() + ")");
  Array x = arange(6);
  if (on_device) x = x.to_device();  // generated in device memory, like cp.arange
  x = x.reshape({2, 3}).astype(DType::Float32);
  return x.sum().compute(local_executor("sync"));  // compute() copies the device result back
}

// Seed 001: one hyper-parameter trial. Synthetic data y = X w_true + noise from fixed seeds (the
// same for every trial), ridge regression fitted by gradient descent,
//   w <- w - lr * (X^T (X w - y) / n + l2 * w),
// then the mean squared error on the training set and on a held-out set. With on_device and a
// GPU every array is generated and computed in device memory.
TrialResult trial(TrialParams p) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool gpu = p.on_device && has_gpu();
  Executor& ex = local_executor("sync");
  auto place = [&](Array a) { return gpu ? a.to_device() : a; };
  const std::int64_t n = p.samples, d = p.features, rows = std::max<std::int64_t>(1, n / 4);
  Array w_true = place(random::uniform(p.seed, -1.0, 1.0, {d, 1}, {d, 1}));
  auto data = [&](std::uint64_t seed) {
    Array X = place(random::normal(seed, 0.0, 1.0, {n, d}, {rows, d})).persist(ex);
    Array y = (matmul(X, w_true) + place(random::normal(seed + 1, 0.0, 0.1, {n, 1}, {rows, 1}))).persist(ex);
    return std::pair{X, y};
  };
  auto [X, y] = data(p.seed + 1);
  auto [Xv, yv] = data(p.seed + 3);
  Array Xt = X.T().persist(ex);
  Array w = place(zeros({d, 1}, {d, 1}));
  for (int s = 0; s < p.steps; ++s) {
    Array grad = matmul(Xt, matmul(X, w) - y) / static_cast<double>(n) + p.l2 * w;
    w = (w - p.learning_rate * grad).persist(ex);
  }
  auto mse = [&](const Array& A, const Array& b) { return square(matmul(A, w) - b).mean().compute(ex).item(); };
  TrialResult r;
  r.trial = p.trial;
  r.learning_rate = p.learning_rate;
  r.l2 = p.l2;
  r.train_mse = mse(X, y);
  r.validation_mse = mse(Xv, yv);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.where = where(gpu);
  return r;
}

// Seeds 001/002: foo -> bar -> baz, where only bar needs a GPU.
Stage foo(int n) {
  Stage s;
  s.step = "foo";
  s.data.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) s.data[static_cast<std::size_t>(i)] = tessera_examples::foo_value(i);
  s.where = where(false);
  return s;
}

Stage bar(Stage in) {
  // On a GPU worker the map runs in device memory; a worker that only simulates GPU=1 (no
  // device) runs it on host memory.
  const bool gpu = has_gpu();
  const auto n = static_cast<std::int64_t>(in.data.size());
  Array x = from_vector(in.data, {n}, {std::max<std::int64_t>(1, n / 4)});
  if (gpu) x = x.to_device();
  const Block out = (2.0 * x + 1.0).compute(local_executor("sync"));
  Stage s;
  s.step = "bar";
  s.data.assign(out.values<double>().begin(), out.values<double>().end());
  s.where = where(gpu);
  return s;
}

Stage baz(Stage in) {
  Stage s;
  s.step = "baz";
  for (double v : in.data) s.value += v;
  s.where = where(false);
  return s;
}

}  // namespace tessera_examples::tasks

TESSERA_REGISTER_FUNCTION_AS("add_one", tessera_examples::tasks::add_one);
TESSERA_REGISTER_FUNCTION_AS("square", tessera_examples::tasks::square);
TESSERA_REGISTER_FUNCTION_AS("test_gpu", tessera_examples::tasks::test_gpu);
TESSERA_REGISTER_FUNCTION_AS("example.trial", tessera_examples::tasks::trial);
TESSERA_REGISTER_FUNCTION_AS("example.foo", tessera_examples::tasks::foo);
TESSERA_REGISTER_FUNCTION_AS("example.bar", tessera_examples::tasks::bar);
TESSERA_REGISTER_FUNCTION_AS("example.baz", tessera_examples::tasks::baz);
TESSERA_REGISTER_FUNCTION_AS("example.where", tessera_examples::tasks::where_am_i);
