// Device frames over ucx:// on a real GPU (issue 5): a frame in the worker's device pool sent
// between two comms of this process. With Debian's UCX (no CUDA) the comm stages it through
// pinned host chunks and it arrives as host memory; with a CUDA-enabled UCX (the libucx-cu13
// libraries the GPU suite loads, scripts/gpu_suite.sh) it goes directly and arrives in device
// memory. Either way the bytes must be the same. Skips without a GPU or without UCX.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu_test_util.hpp"
#include "tessera/comm/comm.hpp"
#include "tessera/core/block.hpp"
#include "tessera/core/device.hpp"

namespace {

using namespace tessera;
using namespace std::chrono_literals;

std::vector<std::uint8_t> pattern(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 29 + 3);
  return v;
}

/** A device buffer holding `bytes`. */
std::shared_ptr<Buffer> on_device(const std::vector<std::uint8_t>& bytes) {
  auto& rt = tessera_cuda_test::cuda_runtime();
  rt.set_device(0);
  const StreamView stream = rt.thread_stream(0);
  auto buf = rt.allocate(bytes.size(), 0, stream);
  rt.copy_async(buf->data(), bytes.data(), bytes.size(), stream);
  rt.synchronize(stream);
  return buf;
}

/** The bytes of a frame wherever it lives. */
std::vector<std::uint8_t> read_back(const std::shared_ptr<Buffer>& f) {
  std::vector<std::uint8_t> out(f->size());
  if (f->kind() == MemoryKind::Device) {
    auto& rt = tessera_cuda_test::cuda_runtime();
    const StreamView stream = rt.thread_stream(f->device());
    rt.copy_async(out.data(), f->data(), f->size(), stream);
    rt.synchronize(stream);
  } else {
    std::memcpy(out.data(), f->data(), f->size());
  }
  return out;
}

TEST(CudaUcx, DeviceFramesCrossUcxStagedOrDirect) {
  TESSERA_SKIP_WITHOUT_GPU();
  const auto ucx = comm::ucx_status();
  if (!ucx.available) GTEST_SKIP() << "UCX is not available here: " << ucx.reason;

  std::shared_ptr<comm::Comm> served;
  auto listener = comm::listen("ucx://127.0.0.1:0", [&](std::shared_ptr<comm::Comm> c) { served = std::move(c); });
  auto client = comm::connect(listener->address());
  ASSERT_EQ(client->transport().rfind("ucx", 0), 0u) << client->transport();
  ASSERT_TRUE(client->sends_device_frames());

  // 20 MiB + 5 bytes: three staging chunks when staged, the last one short; and a small frame.
  const auto big = pattern((std::size_t{20} << 20) + 5);
  const auto small = pattern(3000);
  comm::Message m("device");
  m.add_frame(on_device(big));
  m.add_frame(on_device(small));
  auto sent = client->send(m);
  ASSERT_EQ(sent.wait_for(30s), std::future_status::ready) << "the device frames were not sent within 30 s";
  sent.get();

  for (int i = 0; i < 500 && !served; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(served) << "the listener never handed over the comm";
  auto got = served->recv(10000ms);
  ASSERT_EQ(got.frames.size(), 2u);
  const MemoryKind expected = ucx.cuda ? MemoryKind::Device : MemoryKind::Host;
  EXPECT_EQ(got.frames[0]->kind(), expected)
      << (ucx.cuda ? "UCX with CUDA: device frames should arrive in device memory"
                   : "staged frames arrive in host memory");
  EXPECT_EQ(read_back(got.frames[0]), big);
  EXPECT_EQ(read_back(got.frames[1]), small);
  std::printf("[ INFO     ] UCX %s, cuda %s, %s\n", ucx.version.c_str(), ucx.cuda ? "yes" : "no",
              client->transport().c_str());
  client->close();
  served->close();
}

}  // namespace
