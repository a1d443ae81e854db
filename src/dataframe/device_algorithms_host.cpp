// The dataframe device algorithms (device_algorithms.cuh) on Thrust's host system: the same
// templates the CUDA back end instantiates (cuda/frame_ops.cu), run sequentially on host
// memory, so machines without a GPU (CI) test the algorithms themselves.
#ifndef THRUST_DEVICE_SYSTEM
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP
#endif
#include <thrust/system/cpp/execution_policy.h>

#include <cstring>

#include "dataframe/device_algorithms.cuh"
#include "dataframe/device_algorithms.hpp"
#include "dataframe/device_relational.cuh"
#include "tessera/core/buffer.hpp"

namespace tessera::dataframe::thrust_host {
namespace {

using detail::Memory;

class HostAllocator final : public detail::Allocator {
 public:
  Memory allocate(std::size_t bytes, bool) override {
    std::shared_ptr<Buffer> b = Buffer::allocate_host(bytes);
    void* data = b->data();
    return Memory{std::move(b), data};
  }
};

/** The `Sys` of device_algorithms.cuh for host memory. */
struct HostSystem {
  HostAllocator alloc;
  auto policy() const { return thrust::cpp::par; }
  detail::Allocator& allocator() { return alloc; }
  void upload(void* dst, const void* host, std::size_t bytes) const { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) const { std::memcpy(host, src, bytes); }
};

bool in_host_memory(const Block& b, int) { return b.memory_kind() != MemoryKind::Device; }

detail::RawFrame raw(const DeviceFrame& f, const char* what) {
  return detail::to_raw(f, what, in_host_memory, -1, "host memory");
}
detail::RawColumn raw(const DeviceColumn& c, const char* what) {
  return detail::to_raw(c, c.values.size(), what, in_host_memory, -1, "host memory");
}

DeviceColumn binary_impl(const DeviceColumn* a, const ScalarOperand* sa, BinaryOp op, const DeviceColumn* b,
                         const ScalarOperand* sb) {
  if (a && b && a->values.size() != b->values.size())
    throw ShapeError("binary: columns '" + a->name + "' and '" + b->name + "' have " +
                     std::to_string(a->values.size()) + " and " + std::to_string(b->values.size()) + " rows");
  const std::int64_t rows = a ? a->values.size() : b->values.size();
  detail::RawColumn ra, rb;
  if (a) ra = raw(*a, "binary");
  if (b) rb = raw(*b, "binary");
  HostSystem sys;
  return detail::from_raw(detail::algo::binary(sys, rows, a ? &ra : nullptr, sa, b ? &rb : nullptr, sb, op), rows);
}

}  // namespace

DeviceFrame filter(const DeviceFrame& frame, const DeviceColumn& mask) {
  HostSystem sys;
  const detail::RawFrame f = raw(frame, "filter");
  const detail::RawColumn m = detail::to_raw(mask, frame.rows, "filter", in_host_memory, -1, "host memory");
  return detail::from_raw(detail::algo::filter(sys, f, m));
}

DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const DeviceColumn& b) {
  return binary_impl(&a, nullptr, op, &b, nullptr);
}
DeviceColumn binary(const DeviceColumn& a, BinaryOp op, const ScalarOperand& b) {
  return binary_impl(&a, nullptr, op, nullptr, &b);
}
DeviceColumn binary(const ScalarOperand& a, BinaryOp op, const DeviceColumn& b) {
  return binary_impl(nullptr, &a, op, &b, nullptr);
}

DeviceFrame groupby_partial(const DeviceFrame& frame, const GroupbySpec& spec) {
  HostSystem sys;
  return detail::from_raw(detail::algo::groupby_partial(sys, raw(frame, "groupby_partial"), spec));
}

DeviceFrame groupby_combine(const std::vector<DeviceFrame>& partials, const GroupbySpec& spec) {
  HostSystem sys;
  std::vector<detail::RawFrame> parts;
  parts.reserve(partials.size());
  for (const auto& p : partials) parts.push_back(raw(p, "groupby_combine"));
  return detail::from_raw(detail::algo::groupby_combine(sys, parts, spec));
}

DeviceFrame hash_split(const DeviceFrame& frame, const std::vector<std::string>& on, std::int64_t parts,
                       std::vector<std::int64_t>& offsets) {
  HostSystem sys;
  return detail::from_raw(detail::algo::hash_split(sys, raw(frame, "shuffle"), on, parts, offsets));
}

DeviceFrame range_split(const DeviceFrame& frame, const std::string& column, const std::vector<double>& bounds,
                        std::int64_t parts, bool ascending, bool nulls_first, std::vector<std::int64_t>& offsets) {
  HostSystem sys;
  return detail::from_raw(
      detail::algo::range_split(sys, raw(frame, "sort_values"), column, bounds, parts, ascending, nulls_first, offsets));
}

DeviceFrame sort(const DeviceFrame& frame, const std::vector<detail::SortKeySpec>& keys, bool nulls_first) {
  HostSystem sys;
  return detail::from_raw(detail::algo::sort_frame(sys, raw(frame, "sort_values"), keys, nulls_first));
}

DeviceFrame concat(const std::vector<DeviceFrame>& frames) {
  HostSystem sys;
  std::vector<detail::RawFrame> parts;
  parts.reserve(frames.size());
  for (const auto& f : frames) parts.push_back(raw(f, "concat"));
  return detail::from_raw(detail::algo::concat_frames(sys, parts));
}

DeviceFrame join(const DeviceFrame& left, const DeviceFrame& right, const detail::JoinPlan& plan) {
  HostSystem sys;
  return detail::from_raw(detail::algo::join_frames(sys, raw(left, "merge (left)"), raw(right, "merge (right)"), plan));
}

}  // namespace tessera::dataframe::thrust_host
