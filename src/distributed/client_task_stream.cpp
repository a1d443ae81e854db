// Client::get_task_stream and task_stream_position: the scheduler's task stream over the
// `task-stream` request (docs/protocol.md), fetched in pages so no one message grows unbounded.
#include "client_impl.hpp"
#include "tessera/distributed/client.hpp"
#include "wire.hpp"

namespace tessera::distributed {
namespace {

TaskStreamPage fetch_page(detail::ClientImpl& impl, std::uint64_t since, std::uint64_t limit) {
  impl.check_open();
  comm::Message req(wire::kTaskStream);
  req.set("since", since);
  req.set("limit", limit);
  comm::Message reply = impl.rpc.call(impl.scheduler, std::move(req));
  return reply.get<TaskStreamPage>("page");
}

}  // namespace

std::uint64_t Client::task_stream_position() { return fetch_page(*live(), 0, 0).newest; }

std::vector<TaskStreamEntry> Client::get_task_stream(std::uint64_t since) {
  std::vector<TaskStreamEntry> out;
  while (true) {
    TaskStreamPage page = fetch_page(*live(), since, wire::kMaxTaskStreamPage);
    if (page.entries.empty()) break;
    since = page.entries.back().id;
    for (auto& e : page.entries) out.push_back(std::move(e));
    if (since >= page.newest) break;
  }
  return out;
}

}  // namespace tessera::distributed
