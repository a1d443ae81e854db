// The UCX engine behind ucx:// (built only with UCX; see ucx.cpp for the negotiation and
// docs/ucx.md for the design and the measurements).
//
// One UCP context and one worker per process, in UCS_THREAD_MODE_SINGLE, created on and only
// ever touched by the comm I/O thread (Boost.Asio). Other threads hand sends over by posting
// to that thread. Progress: after any activity the I/O thread keeps calling
// ucp_worker_progress for a short spin window (TESSERA_UCX_SPIN_US, default 100 us), in short
// bursts posted through Asio so sockets are still served, yielding the core after an empty
// burst; then it arms the worker and waits on its event fd with Asio, costing nothing idle.
//
// Endpoints are made from worker addresses exchanged over the TCP control connection, with
// UCP_ERR_HANDLING_MODE_NONE, which lets UCX use shared memory (sysv/posix) and cma on one host
// (PEER mode would restrict it to tcp). Peer failure is detected by the control connection
// (a dead process's socket closes at once), by UCX's endpoint error callback where it reports
// one, and by the scheduler's heartbeats for a peer that hangs.
//
// A message is active messages on the endpoint: a head (preamble, then the cereal header and
// small frames inline) and one part per remaining item (a large header, each large frame), or
// several parts for a device frame staged through pinned host chunks. Every active message
// carries a 48-byte header naming the receiver's connection, the message's sequence number and,
// for parts, the item, offset and item size, so parts may arrive in any order and straight into
// a receive buffer from the frame pool (rendezvous: ucp_am_recv_data_nbx, no copy). Between two
// processes of one host, large host frames go through a shared ring instead once the peer took
// one (ucx_engine_ring.cpp).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "../core/logging.hpp"
#include "wire.hpp"
#include "tessera/core/device.hpp"
#include "ucx_engine_internal.hpp"

namespace tessera::comm::detail::ucx {

std::string status_text(ucs_status_t st) { return ucs_status_string(st); }

bool env_off(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "0" || s == "off" || s == "no" || s == "false" || s == "n";
}

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 ? x : fallback;
}

bool use_device_context(int device) {
  try {
    auto* rt = device_runtime();
    if (!rt) return false;
    rt->set_device(device);
    return true;
  } catch (const std::exception& e) {
    logging::warn("comm: cannot use device {} for UCX: {}", device, e.what());
    return false;
  }
}

Engine* g_engine = nullptr;

// ---- the engine ---------------------------------------------------------------------------------

void Engine::start_worker() {
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // only the I/O thread touches it
  auto st = ucp_worker_create(ctx, &wp, &worker);
  if (st != UCS_OK) throw std::runtime_error("ucp_worker_create: " + status_text(st));
  int fd = -1;
  st = ucp_worker_get_efd(worker, &fd);
  if (st != UCS_OK) throw std::runtime_error("ucp_worker_get_efd: " + status_text(st));
  efd_.assign(fd);
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG |
                  UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = kAmId;
  hp.cb = &Engine::on_am;
  hp.arg = this;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  st = ucp_worker_set_am_recv_handler(worker, &hp);
  if (st != UCS_OK) throw std::runtime_error("ucp_worker_set_am_recv_handler: " + status_text(st));
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  if (ucp_worker_query(worker, &attr) == UCS_OK && attr.max_am_header < sizeof(AmHeader))
    throw std::runtime_error("UCX allows active-message headers of " + std::to_string(attr.max_am_header) +
                             " bytes only");
  ucp_address_t* a = nullptr;
  std::size_t n = 0;
  st = ucp_worker_get_address(worker, &a, &n);
  if (st != UCS_OK) throw std::runtime_error("ucp_worker_get_address: " + status_text(st));
  address.assign(reinterpret_cast<const char*>(a), n);
  ucp_worker_release_address(worker, a);
  spin_window_ = std::chrono::microseconds(env_long("TESSERA_UCX_SPIN_US", 100));
  ignore_pings = env_long("TESSERA_UCX_TEST_IGNORE_PINGS", 0) != 0;
  rings = !env_off("TESSERA_UCX_RING");
  ring_bad_nonce = env_long("TESSERA_UCX_TEST_RING_BAD_NONCE", 0) != 0;
  alive = true;
  sleep();
}

void Engine::poll() {
  poll_posted_ = false;
  if (!alive) return;
  // About 5 us of polling, then back to Asio (sockets, timers, posted sends), then more while
  // the spin window lasts. Every microsecond without news the core is offered to any other
  // thread that wants it (sched_yield): when cores are oversubscribed the peer we wait for may
  // be queued behind us on this very core. Measured one way, 8 B, both I/O threads on one core:
  // no yield 114 us (a whole spin window), a yield every 5 us 12.7 us, every 1 us 2.6 us; on two
  // cores 1.5-2 us either way. docs/ucx.md.
  const auto start = Clock::now();
  bool active = false;
  for (;;) {
    bool news = false;
    const auto burst = Clock::now();
    do {
      if (ucp_worker_progress(worker)) news = true;
      if (!ring_links.empty() && progress_rings()) news = true;
      if (!deferred_.empty()) {
        news = true;
        run_deferred();
      }
    } while (Clock::now() - burst < std::chrono::microseconds(1) && alive);
    active = active || news;
    if (!alive || poll_posted_ || Clock::now() - start >= std::chrono::microseconds(5)) break;
    if (!news) ::sched_yield();
  }
  if (!alive) return;
  const auto now = Clock::now();
  if (active) last_activity_ = now;
  if (poll_posted_) return;  // a deferred action kicked
  if (now - last_activity_ < spin_window_) {
    if (!active) ::sched_yield();
    poll_posted_ = true;
    asio::post(*io_, [this] { poll(); });
    return;
  }
  sleep();
}

void Engine::sleep() {
  for (;;) {
    while (ucp_worker_progress(worker)) {
    }
    run_deferred();
    if (poll_posted_ || !alive) return;
    if (!ring_links.empty() && !rings_may_sleep()) {  // a ring has slots to move: keep polling
      kick();
      return;
    }
    const auto st = ucp_worker_arm(worker);
    if (st == UCS_ERR_BUSY) continue;  // events came in meanwhile: drain them first
    if (st != UCS_OK) {
      static std::once_flag once;
      std::call_once(once, [&] { logging::warn("comm: ucp_worker_arm: {}; UCX progress polls", status_text(st)); });
      kick();
      return;
    }
    break;
  }
  if (wait_pending_) return;
  wait_pending_ = true;
  efd_.async_wait(asio::posix::stream_descriptor::wait_read, [this](error_code ec) {
    wait_pending_ = false;
    if (ec || !alive) return;
    kick();  // while a poll is already posted this only extends the spin window
  });
}

void Engine::shutdown() {
  if (!alive) return;
  // Endpoints first (flushed, briefly), then the worker, then the context (docs/ucx.md).
  std::vector<std::shared_ptr<Link>> all;
  for (auto& [id, link] : links) all.push_back(link);
  for (auto& link : all) {
    link->release_parked();
    link->close_ep();
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(500);
  while (closing_eps > 0 && Clock::now() < deadline) {
    ucp_worker_progress(worker);
    run_deferred();
  }
  alive = false;
  links.clear();
  ring_links.clear();
  deferred_.clear();
  stage_queue.clear();
  stage_free.clear();
  error_code ignored;
  efd_.cancel(ignored);
  efd_.release();  // UCX owns the fd
  ucp_worker_destroy(worker);
  worker = nullptr;
  ucp_cleanup(ctx);
  ctx = nullptr;
}

namespace {

struct Holder {
  std::mutex mu;
  bool tried = false;
  UcxStatus status;
  std::unique_ptr<Engine> engine;
  std::atomic<bool> running{false};
  // At exit: UCX is closed in order on the I/O thread. The Engine object itself is left behind
  // (a few bytes): comms the program still holds refer to it and then see it is no longer alive.
  ~Holder() {
    if (!engine) return;
    running = false;
    try {
      run_on_io_thread([this] { engine->shutdown(); });
    } catch (...) {
    }
    g_engine = nullptr;
    (void)engine.release();
  }
};

Holder& holder() {
  // The comm runtime is made first, so it is destroyed after the engine (at exit the engine
  // closes on the I/O thread).
  CommRuntime::instance();
  static Holder h;
  return h;
}

/** The Comm of a ucx:// connection over UCX. */
class UcxComm final : public UcxCommBase {
 public:
  UcxComm(Engine& e, const CommOptions& options, std::string local, std::string peer, PeerInfo info)
      : UcxCommBase(std::move(local), std::move(peer), std::move(info)), e_(e), options_(options) {
    link_ = std::make_shared<Link>(e, ++e.next_id, options, inbox(), peer_address());
    e.links[link_->id()] = link_;
  }
  ~UcxComm() override { close(); }

  Offer offer() const override {
    Offer o;
    o.worker_address = e_.address;
    o.conn = link_->id();
    o.cuda = e_.cuda && device_runtime() && device_runtime()->device_count() > 0;
    return o;
  }
  void connect_peer(const Offer& theirs) override { link_->connect(theirs); }
  void ping(std::chrono::milliseconds timeout, std::function<void(std::exception_ptr)> done) override {
    link_->ping(timeout, std::move(done));
  }
  void start(std::shared_ptr<Comm> ctl) override {
    transport_ = link_->describe_lanes();
    link_->note_lanes(transport_);
    link_->start(std::move(ctl));
  }
  void abandon() override {
    abandoned_ = true;
    link_->abandon();
  }
  std::string transport() const override {
    return link_->ring_in_use() ? transport_ + " + shared ring" : transport_;
  }
  bool sends_device_frames() const override { return true; }

  void close() override {
    if (closed_locally_.exchange(true)) return;
    inbox()->push_close(
        std::make_exception_ptr(CommClosedError("comm to " + peer_address() + " was closed locally")));
    if (abandoned_) return;
    auto& rt = CommRuntime::instance();
    auto link = link_;
    if (rt.on_io_thread()) link->close_local();
    else rt.post([link] { link->close_local(); });
  }

 protected:
  void do_send(Message msg, SendCallback done) override {
    if (is_closed()) return call_done(done, closed_error(peer_address(), close_reason()));
    auto op = std::make_shared<SendOp>();
    std::vector<std::uint64_t> lens;
    const char* device_refusal = e_.cuda || device_runtime() ? nullptr : "this process has no device runtime";
    if (auto error = prepare_send(msg, options_, peer_address(), device_refusal, op->header, lens))
      return call_done(done, std::move(error));
    // The head: preamble, which items are inline, then those items.
    op->head = wire::encode_preamble(op->header.size(), lens);
    const std::size_t nitems = msg.frames.size() + 1;
    const std::size_t map_at = op->head.size();
    op->head.resize(map_at + nitems, 0);
    op->inlined.assign(nitems, false);
    std::size_t budget = kHeadBudget > op->head.size() ? kHeadBudget - op->head.size() : 0;
    auto take = [&](std::size_t item, const void* p, std::size_t n) {
      op->inlined[item] = true;
      op->head[map_at + item] = 1;
      const auto* b = static_cast<const std::uint8_t*>(p);
      if (n) op->head.insert(op->head.end(), b, b + n);  // b is null for an empty frame
      budget -= std::min(budget, n);
    };
    if (op->header.size() <= budget) {
      take(0, op->header.data(), op->header.size());
      op->header.clear();
      op->header.shrink_to_fit();
    }
    for (std::size_t i = 0; i < msg.frames.size(); ++i) {
      const auto& f = msg.frames[i];
      if (f->size() == 0) take(i + 1, nullptr, 0);
      else if (f->kind() != MemoryKind::Device && f->size() <= kInlineItem && f->size() <= budget)
        take(i + 1, f->data(), f->size());
    }
    op->frames = std::move(msg.frames);
    op->done = std::move(done);
    auto& rt = CommRuntime::instance();
    auto link = link_;
    if (rt.on_io_thread()) link->issue(std::move(op));
    else rt.post([link, op = std::move(op)]() mutable { link->issue(std::move(op)); });
  }

 private:
  Engine& e_;
  CommOptions options_;
  std::shared_ptr<Link> link_;
  std::string transport_ = "ucx";
  std::atomic<bool> closed_locally_{false};
  bool abandoned_ = false;
};

UcxStatus start_engine(Holder& h) {
  UcxStatus s;
  s.built = true;
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  s.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  if (env_off("TESSERA_UCX")) {
    s.reason = "disabled by TESSERA_UCX=" + std::string(std::getenv("TESSERA_UCX"));
    return s;
  }
  ucp_config_t* config = nullptr;
  auto st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    s.reason = "ucp_config_read: " + status_text(st);
    return s;
  }
  // Tessera's defaults, each only where the user has not set the variable (docs/ucx.md).
  const std::pair<const char*, const char*> defaults[] = {
      // Adaptive progress stops polling interfaces it thinks idle and wakes them only through
      // ucp_worker_arm: a spinning loop then sees a message a whole spin window late (measured:
      // 8 B one way 32 us instead of 1.5 us with a 20 us window). docs/ucx.md.
      {"ADAPTIVE_PROGRESS", "n"},
      {"MEMTYPE_CACHE", "n"},  // misdetects device memory as host (UCX FAQ); as UCXX and dask-cuda
  };
  for (const auto& [name, value] : defaults) {
    if (std::getenv(("UCX_" + std::string(name)).c_str())) continue;
    if (ucp_config_modify(config, name, value) != UCS_OK)
      logging::debug("comm: UCX has no setting {} to default to {}", name, value);
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "tessera";
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) {
    s.reason = "ucp_init: " + status_text(st);
    return s;
  }
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(ctx, &attr) == UCS_OK)
    s.cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  auto engine = std::make_unique<Engine>(CommRuntime::instance().io());
  engine->ctx = ctx;
  engine->cuda = s.cuda;
  std::string error;
  run_on_io_thread([&] {
    try {
      engine->start_worker();
      g_engine = engine.get();
    } catch (const std::exception& e) {
      error = e.what();
      if (engine->worker) ucp_worker_destroy(engine->worker);
      engine->worker = nullptr;
    }
  });
  if (!error.empty()) {
    ucp_cleanup(ctx);
    s.reason = error;
    return s;
  }
  h.engine = std::move(engine);
  s.available = true;
  logging::debug("comm: UCX {} started{}", s.version, s.cuda ? " (with CUDA memory support)" : "");
  return s;
}

}  // namespace

UcxStatus engine_status() {
  auto& h = holder();
  std::lock_guard lk(h.mu);
  if (!h.tried) {
    h.tried = true;
    try {
      h.status = start_engine(h);
    } catch (const std::exception& e) {
      h.status.built = true;
      h.status.reason = e.what();
    }
    h.running = h.status.available;
  }
  return h.status;
}

bool engine_running() noexcept { return holder().running.load(); }

std::shared_ptr<UcxCommBase> make_comm(const CommOptions& options, std::string local, std::string peer,
                                       PeerInfo info) {
  if (!engine_running() || !g_engine || !g_engine->alive) return nullptr;
  return std::make_shared<UcxComm>(*g_engine, options, std::move(local), std::move(peer), std::move(info));
}

}  // namespace tessera::comm::detail::ucx
