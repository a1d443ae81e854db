// The scheduler server: start, stop and the public Scheduler; the rest of Scheduler::Impl is
// in the files scheduler_impl.hpp lists.
#include "scheduler_impl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "../core/logging.hpp"
#include "dashboard.hpp"
#include "util.hpp"
#include "tessera/comm/comm.hpp"
#include "options_check.hpp"
#include "wire.hpp"

namespace tessera::distributed {
namespace {

// As Dask's: "services" lists the dashboard's port, so a script finds it next to the address.
// With `token` (tessera-scheduler --token auto) the file holds the cluster's secret: it is created
// readable by its owner only, before anything is written in it.
void write_scheduler_file(const std::string& path, const std::string& address, const std::string& id,
                          int dashboard_port, const std::string& token) {
  namespace fs = std::filesystem;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  std::ostringstream out;
  out << "{\n  \"type\": \"Scheduler\",\n  \"id\": \"" << id << "\",\n  \"address\": \"" << address
      << "\",\n  \"pid\": " << ::getpid();
  if (dashboard_port > 0) out << ",\n  \"services\": {\"dashboard\": " << dashboard_port << "}";
  if (!token.empty()) out << ",\n  \"token\": \"" << token << "\"";  // hex digits: nothing to escape
  out << "\n}\n";
  const std::string text = out.str();
  ::unlink(tmp.c_str());  // a stale one keeps its mode; O_EXCL makes sure this one is ours
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, token.empty() ? 0644 : 0600);
  if (fd < 0) throw Error("cannot write scheduler file " + path + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) throw Error("cannot write scheduler file " + path);
  fs::rename(tmp, p);  // atomic: readers never see half a file
}

}  // namespace

void Scheduler::Impl::stop(bool close_workers) {
  std::vector<std::shared_ptr<Conn>> to_close;
  {
    std::lock_guard lock(mu);
    if (stopping) return;
    stopping = true;
    to_close.assign(conns.begin(), conns.end());
    conns.clear();
    workers.clear();
    clients.clear();
    nannies.clear();
  }
  cv.notify_all();
  if (dashboard) dashboard->stop();  // outside mu: a request in progress may be taking a snapshot
  if (listener) listener->stop();
  for (auto& l : other_listeners) l->stop();
  std::vector<std::future<void>> sent;
  if (close_workers)
    for (auto& c : to_close)
      if (c->role == Conn::Role::Worker) sent.push_back(c->comm->send(comm::Message(wire::kCloseWorker)));
  for (auto& f : sent) f.wait_for(std::chrono::seconds(2));
  for (auto& c : to_close) c->comm->close();
  if (ticker.joinable() && ticker.get_id() != std::this_thread::get_id()) ticker.join();
  {
    std::lock_guard lock(mu);
    stopped = true;
  }
  cv.notify_all();
  if (!opt.scheduler_file.empty()) {
    std::error_code ec;
    std::filesystem::remove(opt.scheduler_file, ec);
  }
}

Scheduler::Scheduler(SchedulerOptions options)
    : impl_(std::make_shared<Impl>(checked_options(std::move(options)))) {
  comm::CommOptions co;
  co.token = impl_->opt.token;
  co.security = impl_->opt.security;
  co.name = "scheduler";
  co.max_header_bytes = kClusterMaxHeaderBytes;
  // Clients and workers register at once: a connection that says nothing is closed.
  co.first_message_timeout = co.handshake_timeout;
  std::weak_ptr<Impl> weak = impl_;
  auto on_comm = [weak](std::shared_ptr<comm::Comm> c) {
    if (auto self = weak.lock()) self->on_accept(std::move(c));
  };
  auto on_error = [](const std::string& peer, std::exception_ptr reason) {
    // comm already logs refusals, at a bounded rate (a peer may cause them at will).
    logging::debug("scheduler: refused connection from {}: {}", peer, describe_exception(reason));
  };
  impl_->listener = comm::listen(impl_->opt.address, on_comm, co, on_error);
  for (const auto& a : impl_->opt.also_listen) impl_->other_listeners.push_back(comm::listen(a, on_comm, co, on_error));
  {
    // Under mu: the listener already accepts, and its handlers read the address (info(), on the
    // I/O thread, under mu); ThreadSanitizer saw a registering client's reply read it unordered.
    std::lock_guard lock(impl_->mu);
    impl_->address = impl_->listener->address();
  }
  if (!impl_->opt.dashboard_address.empty()) {
    DashboardOptions d;
    d.http.address = impl_->opt.dashboard_address;
    d.http.default_host = dashboard_host_of(impl_->address);
    d.http.name = "scheduler dashboard";
    // The Impl outlives its dashboard: stop() (run by ~Scheduler at the latest) stops it first.
    impl_->dashboard = std::make_unique<SchedulerDashboard>(
        d, [self = impl_.get()] { return self->snapshot(); },
        [self = impl_.get()](std::uint64_t since, std::size_t limit) { return self->task_stream_page(since, limit); });
    logging::info("scheduler: dashboard at {}", impl_->dashboard->url());
  }
  if (!impl_->opt.scheduler_file.empty())
    write_scheduler_file(impl_->opt.scheduler_file, impl_->address, impl_->id,
                         impl_->dashboard ? impl_->dashboard->port() : 0,
                         impl_->opt.token_in_scheduler_file ? impl_->opt.token : std::string());
  impl_->ticker = std::thread([self = impl_.get()] { self->tick_loop(); });
  logging::info("scheduler: listening at {}", impl_->address);
}

Scheduler::~Scheduler() { impl_->stop(true); }

const std::string& Scheduler::address() const { return impl_->address; }

std::string Scheduler::dashboard_url() const { return impl_->dashboard ? impl_->dashboard->url() : std::string(); }

std::vector<std::string> Scheduler::other_addresses() const {
  std::vector<std::string> out;
  for (const auto& l : impl_->other_listeners) out.push_back(l->address());
  return out;
}

void Scheduler::wait() {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped; });
}

void Scheduler::stop(bool close_workers) { impl_->stop(close_workers); }

bool Scheduler::stopped() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stopped;
}

std::vector<WorkerSummary> Scheduler::workers() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state.workers();
}

std::size_t Scheduler::task_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state.task_count();
}

std::size_t Scheduler::client_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state.client_count();
}

std::size_t Scheduler::task_stream_offset_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->clock_offsets.size();
}

std::size_t Scheduler::worker_record_count() const {
  std::lock_guard lock(impl_->mu);
  // The connections' map is keyed by address and erased on close: the state's slots are what
  // could grow with every worker ever seen.
  return std::max(impl_->state.worker_slot_count(), impl_->workers.size());
}

}  // namespace tessera::distributed
