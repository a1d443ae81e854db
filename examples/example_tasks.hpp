#pragma once
// The task functions of the examples (example_tasks.cpp, built into libtessera_example_tasks.so)
// and the types they take and return. The example programs link the library, so their
// LocalCluster workers (copies of the program, tessera::init) can run these tasks; the generic
// binaries get them with --preload:
//
//   tessera-worker ADDRESS --preload build/examples/libtessera_example_tasks.so
//   tessera-cuda-worker ADDRESS --preload build/examples/libtessera_example_tasks.so
//
// The functions are declared at the end, so that a program can submit the function itself
// (client.submit(tasks::add_one, 10)); their registered names, for submitting by name:
//   add_one(int) -> int, square(double) -> double                       (distributed_submit)
//   test_gpu(bool on_device) -> Block: arange(6).reshape(2, 3).astype(float32).sum()   (seed 000)
//   example.trial(TrialParams) -> TrialResult: one ridge-regression fit     (gpu_trials, seed 001)
//   example.foo(int) / example.bar(Stage) / example.baz(Stage) -> Stage    (mixed_pipeline, 001/002)
//   example.where() -> Where: the process a task ran in
#include <cstdint>
#include <string>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <tessera/core/block.hpp>

namespace tessera_examples {

/** @brief The process a task ran in: its pid (scheduler_info lists each worker's pid), host and GPU. */
struct Where {
  int pid = 0;
  std::string host;
  std::string device = "cpu";  ///< the GPU's name when the task computed on one, else "cpu"
  template <class Archive>
  void serialize(Archive& ar) {
    ar(pid, host, device);
  }
};

/** @brief One hyper-parameter trial: ridge regression by gradient descent on synthetic data. */
struct TrialParams {
  int trial = 0;
  double learning_rate = 0.1;
  double l2 = 0.0;            ///< ridge penalty
  int steps = 100;            ///< gradient-descent steps
  std::int64_t samples = 4096;
  std::int64_t features = 32;
  std::uint64_t seed = 7;     ///< the same data for every trial: only the hyper-parameters differ
  bool on_device = true;      ///< device arrays when the worker has a GPU (host arrays otherwise)
  template <class Archive>
  void serialize(Archive& ar) {
    ar(trial, learning_rate, l2, steps, samples, features, seed, on_device);
  }
};

struct TrialResult {
  int trial = 0;
  double learning_rate = 0, l2 = 0;
  double train_mse = 0;       ///< mean squared error on the training set
  double validation_mse = 0;  ///< on a held-out set drawn from the same model
  double seconds = 0;         ///< the fit, measured inside the task
  Where where;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(trial, learning_rate, l2, train_mse, validation_mse, seconds, where);
  }
};

/** @brief What one step of the foo -> bar -> baz pipeline hands on, and where it ran. */
struct Stage {
  std::string step;
  std::vector<double> data;
  double value = 0;  ///< baz: the reduction
  Where where;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(step, data, value, where);
  }
};

/** @brief foo's data: element i is i % 97 / 97 (so sums are easy to check). */
inline double foo_value(std::int64_t i) { return static_cast<double>(i % 97) / 97.0; }
/** @brief bar's element-wise map: 2 x + 1. */
inline double bar_value(double x) { return 2.0 * x + 1.0; }

/** The registered task functions (example_tasks.cpp). */
namespace tasks {
int add_one(int x);
double square(double x);
tessera::Block test_gpu(bool on_device);
TrialResult trial(TrialParams p);
Stage foo(int n);
Stage bar(Stage in);
Stage baz(Stage in);
Where where_am_i();
}  // namespace tasks

}  // namespace tessera_examples
