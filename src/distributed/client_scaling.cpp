// Client::retire_workers and adaptive_target: the scheduler's graceful retirement and its wish
// for more or fewer workers, over the `retire-workers` and `adaptive-target` requests
// (docs/protocol.md). What cluster managers (SLURMCluster::adapt) build on.
#include <chrono>
#include <cmath>

#include "client_impl.hpp"
#include "tessera/distributed/client.hpp"
#include "wire.hpp"

namespace tessera::distributed {
namespace {

std::vector<std::string> retire(detail::ClientImpl& impl, const std::vector<std::string>& addresses, std::size_t n,
                                std::chrono::duration<double> timeout) {
  impl.check_open();
  comm::Message req(wire::kRetireWorkers);
  req.set("addresses", addresses);
  req.set("n", static_cast<std::uint64_t>(n));
  req.set("timeout", timeout.count());
  // The scheduler answers at its deadline at the latest: wait a little longer than that.
  auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout.count() * 1000)) + 10000);
  comm::Message reply = impl.rpc.call(impl.scheduler, std::move(req), wait);
  return reply.get<std::vector<std::string>>("retired");
}

}  // namespace

std::vector<std::string> Client::retire_workers(const std::vector<std::string>& addresses,
                                                std::chrono::duration<double> timeout) {
  if (addresses.empty()) return {};
  return retire(*live(), addresses, 0, timeout);
}

std::vector<std::string> Client::retire_workers(std::size_t n, std::chrono::duration<double> timeout) {
  if (n == 0) return {};
  return retire(*live(), {}, n, timeout);
}

std::size_t Client::adaptive_target(double target_duration) {
  auto& impl = *live();
  impl.check_open();
  comm::Message req(wire::kAdaptiveTarget);
  req.set("target_duration", target_duration);
  comm::Message reply = impl.rpc.call(impl.scheduler, std::move(req));
  return static_cast<std::size_t>(reply.get<std::uint64_t>("target"));
}

}  // namespace tessera::distributed
