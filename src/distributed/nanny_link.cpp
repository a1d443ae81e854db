// The nanny's connection to the scheduler: see nanny_link.hpp and docs/nanny.md.
#include "nanny_link.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>

#include "../core/logging.hpp"
#include "scheduler_file.hpp"
#include "tessera/distributed/scheduler.hpp"
#include "util.hpp"
#include "wire.hpp"

namespace tessera::distributed {

struct NannyLink::Shared {
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool connected = false;
  std::uint64_t generation = 0;  // of the connection: a late close of an older one changes nothing
  std::shared_ptr<comm::Comm> comm;
  KillFn kill;
};

NannyLink::NannyLink(NannyLinkOptions options, KillFn kill) : opt_(std::move(options)), shared_(std::make_shared<Shared>()) {
  shared_->kill = std::move(kill);
  thread_ = std::thread([this] { run(); });
}

NannyLink::~NannyLink() {
  std::shared_ptr<comm::Comm> c;
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopping = true;
    c = shared_->comm;
  }
  shared_->cv.notify_all();
  if (c) c->close();
  thread_.join();
}

void NannyLink::report_given_up(const GivenUpWorker& worker) {
  std::shared_ptr<comm::Comm> c;
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->connected) c = shared_->comm;
  }
  if (!c) {
    logging::warn("nanny: not connected to the scheduler; it is not told that worker {} was given up", worker.name);
    return;
  }
  comm::Message m(wire::kWorkerGivenUp);
  m.set("name", worker.name);
  m.set("pid", static_cast<int>(worker.pid));
  m.set("reason", worker.reason);
  auto sent = c->send(std::move(m));
  if (sent.wait_for(std::chrono::seconds(2)) != std::future_status::ready) return;
  try {
    sent.get();
  } catch (const std::exception& e) {
    logging::warn("nanny: could not tell the scheduler that worker {} was given up: {}", worker.name, e.what());
  }
}

void NannyLink::run() {
  auto& s = *shared_;
  const auto retry = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(opt_.retry_interval));
  bool said_lost = false;
  while (true) {
    {
      std::lock_guard lock(s.mu);
      if (s.stopping) return;
    }
    std::shared_ptr<comm::Comm> c;
    try {
      std::string address = opt_.scheduler_address;
      if (address.empty()) address = read_scheduler_file(opt_.scheduler_file, 0);
      comm::CommOptions co;
      co.token = opt_.token;
      // No token given: a scheduler started with --token auto wrote it into its file.
      if (co.token.empty() && !opt_.scheduler_file.empty()) co.token = scheduler_file_token(opt_.scheduler_file);
      co.security = opt_.security;
      co.name = "nanny";
      co.max_header_bytes = kClusterMaxHeaderBytes;
      co.connect_timeout = std::chrono::milliseconds(2000);
      co.handshake_timeout = std::chrono::milliseconds(2000);
      c = comm::connect(address, co);
    } catch (const std::exception& e) {
      // The scheduler is not there yet, or went: the worker says so; this link only waits.
      logging::debug("nanny: cannot reach the scheduler: {}", e.what());
    }
    if (c) {
      std::uint64_t gen;
      {
        // Before the handlers: a connection that closes at once must be seen as closed.
        std::lock_guard lock(s.mu);
        gen = ++s.generation;
        s.comm = c;
        s.connected = true;
      }
      std::weak_ptr<Shared> weak = shared_;
      std::weak_ptr<comm::Comm> weak_comm = c;
      c->set_handlers(
          [weak, weak_comm](comm::Message m) {
            auto sh = weak.lock();
            auto cc = weak_comm.lock();
            if (!sh || !cc || m.op != wire::kKillWorker) return;
            const int pid = m.get<int>("pid");
            const bool killed = sh->kill(pid);
            comm::Message r(wire::kWorkerKilled);
            r.set("pid", pid);
            r.set("killed", killed);
            cc->send(std::move(r), nullptr);
          },
          [weak, gen](std::exception_ptr) {
            if (auto sh = weak.lock()) {
              std::lock_guard lock(sh->mu);
              if (sh->generation == gen) sh->connected = false;
              sh->cv.notify_all();
            }
          });
      comm::Message hello(wire::kRegisterNanny);
      hello.set("pid", static_cast<int>(::getpid()));
      hello.set("host", host_name());
      c->send(std::move(hello), nullptr);
      {
        std::unique_lock lock(s.mu);
        if (said_lost) logging::info("nanny: connected to the scheduler again");
        said_lost = false;
        s.cv.wait(lock, [&] { return s.stopping || !s.connected; });
        s.comm.reset();
        if (s.stopping) {
          lock.unlock();
          c->close();
          return;
        }
        said_lost = true;
      }
      c->close();
    }
    std::unique_lock lock(s.mu);
    s.cv.wait_for(lock, retry, [&] { return s.stopping; });
  }
}

}  // namespace tessera::distributed
