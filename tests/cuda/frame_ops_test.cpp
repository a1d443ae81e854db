// The dataframe algorithms on a GPU (cuda/frame_ops.cu: device_algorithms.cuh for the CUDA
// system) against the same templates on Thrust's host system, on the random frames of
// tests/dataframe/: equal keys, nulls and integers; floats within 1e-10 (a GPU adds in another
// order). Skips without a GPU.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "../../cuda/frame_ops.hpp"
#include "../dataframe/test_device_frames.hpp"
#include "dataframe/device_algorithms.hpp"
#include "dataframe/device_convert.hpp"
#include "dataframe/join_host.hpp"
#include "gpu_test_util.hpp"
#include "tessera/core/device.hpp"

namespace {

using namespace tessera;
using namespace tessera::dataframe;
using namespace tessera_frame_test;

constexpr double kRel = 1e-10;

DeviceColumn column_on(const DeviceColumn& c, Target target) {
  DeviceColumn d = c;
  if (target == Target::Device) {
    d.values = to_device(c.values, 0);
    if (!c.valid.empty()) d.valid = to_device(c.valid, 0);
  } else {
    d.values = to_host(c.values);
    if (!c.valid.empty()) d.valid = to_host(c.valid);
  }
  return d;
}

DeviceFrame frame_on(const DeviceFrame& f, Target target) {
  DeviceFrame d;
  d.rows = f.rows;
  for (const auto& c : f.columns) d.columns.push_back(column_on(c, target));
  return d;
}

/** The device result is in device memory; brought back, it equals the host system's. */
void expect_device_frame(const DeviceFrame& device, const DeviceFrame& host, const std::string& what) {
  DeviceRuntime& rt = tessera_cuda_test::cuda_runtime();
  rt.synchronize(rt.thread_stream(0));  // the calls queued their work on this thread's stream
  for (const auto& c : device.columns)
    if (c.values.size() > 0) {
      ASSERT_EQ(c.values.memory_kind(), MemoryKind::Device) << what << ": " << c.name;
    }
  expect_same_frame(frame_on(device, Target::Host), host, what, kRel);
}

TEST(FrameOpsDevice, FilterAndBinaryMatchTheHostSystem) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(41);
  for (int round = 0; round < 10; ++round) {
    const std::int64_t rows = round < 2 ? round : 1 + static_cast<std::int64_t>(gen() % 5000);
    const DeviceFrame host = to_frame(random_table(rows, gen, "g" + std::to_string(round)), gen);
    const DeviceColumn mask = to_column(random_bool_column("mask", rows, gen, true), gen);
    const DeviceFrame dev = frame_on(host, Target::Device);
    const std::string what = "round " + std::to_string(round);
    expect_device_frame(thrust_cuda::filter(dev, column_on(mask, Target::Device), 0),
                        thrust_host::filter(host, mask), what + " filter");
    const char* names[] = {"v_f64", "v_f32", "v_i64", "v_i32", "v_b"};
    for (const char* x : names)
      for (const char* y : names)
        for (int op = 0; op <= static_cast<int>(BinaryOp::Ge); ++op) {
          const auto o = static_cast<BinaryOp>(op);
          const DeviceColumn *hx = host.find(x), *hy = host.find(y);
          if (hx->values.dtype() == DType::Bool && hy->values.dtype() == DType::Bool && !is_comparison(o) &&
              o != BinaryOp::TrueDiv)
            continue;
          DeviceFrame d, h;
          d.rows = h.rows = rows;
          d.columns = {thrust_cuda::binary(*dev.find(x), o, *dev.find(y), 0),
                       thrust_cuda::binary(*dev.find(x), o, ScalarOperand::of_int(3), 0),
                       thrust_cuda::binary(ScalarOperand::of_float(-1.5), o, *dev.find(y), 0)};
          h.columns = {thrust_host::binary(*hx, o, *hy), thrust_host::binary(*hx, o, ScalarOperand::of_int(3)),
                       thrust_host::binary(ScalarOperand::of_float(-1.5), o, *hy)};
          expect_device_frame(d, h, what + " " + x + " op " + std::to_string(op) + " " + y);
          if (::testing::Test::HasFatalFailure()) return;
        }
  }
}

TEST(FrameOpsDevice, GroupbyTreeMatchesTheHostSystem) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(42);
  const std::vector<std::vector<std::string>> key_sets = {{"k_str"}, {"k_int", "k_f"}, {"k_b", "k_f", "k_str"}};
  for (int round = 0; round < 9; ++round) {
    GroupbySpec spec = every_agg_spec(key_sets[static_cast<std::size_t>(round) % key_sets.size()]);
    std::vector<DeviceFrame> host_parts, dev_parts;
    for (int p = 0; p < 4; ++p) {
      const std::int64_t rows = p == 0 ? 0 : p == 1 ? 1 : static_cast<std::int64_t>(gen() % 20000);
      host_parts.push_back(to_frame(random_table(rows, gen, "q" + std::to_string(p), round % 2 ? 1000 : 6), gen));
      dev_parts.push_back(frame_on(host_parts.back(), Target::Device));
    }
    const std::string what = "round " + std::to_string(round);
    spec.finalize = false;
    std::vector<DeviceFrame> hp, dp;
    for (std::size_t p = 0; p < host_parts.size(); ++p) {
      hp.push_back(thrust_host::groupby_partial(host_parts[p], spec));
      dp.push_back(thrust_cuda::groupby_partial(dev_parts[p], spec, 0));
      expect_device_frame(dp.back(), hp.back(), what + " partial " + std::to_string(p));
    }
    const DeviceFrame hm = thrust_host::groupby_combine({hp[0], hp[1]}, spec);
    const DeviceFrame dm = thrust_cuda::groupby_combine({dp[0], dp[1]}, spec, 0);
    expect_device_frame(dm, hm, what + " combine");
    spec.finalize = true;
    expect_device_frame(thrust_cuda::groupby_combine({dm, dp[2], dp[3]}, spec, 0),
                        thrust_host::groupby_combine({hm, hp[2], hp[3]}, spec), what + " final");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(FrameOpsDevice, SplitsSortConcatAndJoinMatchTheHostSystem) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(43);
  for (int round = 0; round < 6; ++round) {
    const std::int64_t rows = round < 2 ? round : 1 + static_cast<std::int64_t>(gen() % 20000);
    const DeviceFrame host = to_frame(random_table(rows, gen, "r" + std::to_string(round)), gen);
    const DeviceFrame other = to_frame(random_table(1 + static_cast<std::int64_t>(gen() % 3000), gen, "o1"), gen);
    const DeviceFrame dev = frame_on(host, Target::Device), dev_other = frame_on(other, Target::Device);
    const std::string what = "round " + std::to_string(round);
    std::vector<std::int64_t> ho, dof;
    const auto hs = thrust_host::hash_split(host, {"k_int", "k_str", "k_f"}, 7, ho);
    expect_device_frame(thrust_cuda::hash_split(dev, {"k_int", "k_str", "k_f"}, 7, dof, 0), hs, what + " hash split");
    EXPECT_EQ(dof, ho) << what;
    const auto rs = thrust_host::range_split(host, "v_f64", {-1.0, 0.0, 2.5}, 4, false, true, ho);
    expect_device_frame(thrust_cuda::range_split(dev, "v_f64", {-1.0, 0.0, 2.5}, 4, false, true, dof, 0), rs,
                        what + " range split");
    EXPECT_EQ(dof, ho) << what;
    const std::vector<dataframe::detail::SortKeySpec> keys{{"k_str", true}, {"k_f", false}, {"v_i64", true}};
    for (const bool nulls_first : {false, true})
      expect_device_frame(thrust_cuda::sort(dev, keys, nulls_first, 0), thrust_host::sort(host, keys, nulls_first),
                          what + " sort");
    expect_device_frame(thrust_cuda::concat({dev, dev_other}, 0), thrust_host::concat({host, other}), what + " concat");
    using H = dataframe::detail::JoinHow;
    for (const H how : {H::Inner, H::Left, H::Right, H::Outer, H::LeftSemi, H::LeftAnti}) {
      dataframe::detail::JoinSpec spec;
      spec.how = how;
      spec.left_on = spec.right_on = {"k_int", "k_str"};
      const auto ls = dataframe::detail::schema_of(host), rs2 = dataframe::detail::schema_of(other);
      dataframe::detail::plan_join(*ls, *rs2, spec);
      const auto plan = dataframe::detail::device_join_plan(*ls, *rs2, spec);
      expect_device_frame(thrust_cuda::join(dev, dev_other, plan, 0), thrust_host::join(host, other, plan),
                          what + " join " + dataframe::detail::join_how_name(how));
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(FrameOpsDevice, AHostColumnIsRefusedWithItsName) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::mt19937_64 gen(43);
  const DeviceFrame host = to_frame(random_table(10, gen, "h"), gen);
  try {
    thrust_cuda::groupby_partial(host, every_agg_spec({"k_int"}), 0);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k_str"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not device 0 memory"), std::string::npos) << e.what();
  }
}

}  // namespace
