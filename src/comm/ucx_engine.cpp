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
// a receive buffer from the frame pool (rendezvous: ucp_am_recv_data_nbx, no copy).
#include <sched.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "frame_pool.hpp"
#include "inbox.hpp"
#include "transports.hpp"
#include "ucx_engine.hpp"
#include "tessera/comm/wire.hpp"
#include "tessera/core/device.hpp"

namespace tessera::comm::detail::ucx {

namespace {

using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr unsigned kAmId = 21;
constexpr const char* kBye = "tessera.ucx-bye";

enum Kind : std::uint32_t { kPing = 1, kPong = 2, kHead = 3, kPart = 4 };
constexpr std::uint32_t kFlagDevice = 1;  // part: device memory on the sender, sent directly

/** The user header of every active message. */
struct AmHeader {
  std::uint64_t conn = 0;       // the receiver's connection id
  std::uint64_t seq = 0;        // message number on this connection, from 0
  std::uint64_t offset = 0;     // part: where its bytes go in the item
  std::uint64_t item_size = 0;  // part: the whole item's size
  std::uint32_t kind = 0;
  std::uint32_t item = 0;       // part: 0 the cereal header, 1 + i frame i
  std::uint32_t flags = 0;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(AmHeader) == 48);

// A head stays within UCX's eager (bcopy) size on shared memory (8256 bytes): items are inlined
// while it does; larger items go as parts (rendezvous, received in place).
constexpr std::size_t kHeadBudget = 8000;
constexpr std::size_t kInlineItem = 4096;
// Device frames without CUDA in UCX go through pinned host chunks, copy and send overlapped.
constexpr std::size_t kStageChunk = std::size_t{8} << 20;
constexpr std::size_t kStageBuffers = 4;
// Parts may run ahead of delivery by at most this many messages (a bound on bookkeeping).
constexpr std::uint64_t kMaxAhead = 1u << 20;
// While receive back-pressure holds rendezvous data back, how often to look whether the owner
// took messages (the inbox has no hook for it; tcp:// polls the same way).
constexpr auto kResumePoll = std::chrono::milliseconds(1);

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

class Link;
struct SendOp;

/** The process's UCP context and worker. */
class Engine {
 public:
  ucp_context_h ctx = nullptr;
  ucp_worker_h worker = nullptr;
  std::string address;  // our worker address
  bool cuda = false;    // UCX handles CUDA memory
  bool alive = false;
  bool ignore_pings = false;  // TESSERA_UCX_TEST_IGNORE_PINGS=1: tests of the handshake's fallback

  std::unordered_map<std::uint64_t, std::shared_ptr<Link>> links;
  std::uint64_t next_id = 0;

  // Device frames waiting for a staging buffer, and the staging buffers.
  struct StageJob {
    std::weak_ptr<Link> link;
    std::shared_ptr<SendOp> op;
    std::uint64_t seq;
    std::uint32_t item;
    const char* src;
    std::size_t size;
    std::size_t offset;
    int device;
  };
  std::deque<StageJob> stage_queue;
  std::vector<Frame> stage_free;
  std::size_t stage_allocated = 0;

  std::size_t closing_eps = 0;

  explicit Engine(std::shared_ptr<asio::io_context> io) : io_(std::move(io)), efd_(*io_) {}

  /** On the I/O thread: worker, event fd, active-message handler. Throws std::runtime_error. */
  void start_worker();
  /** On the I/O thread: closes everything, destroys the worker, then the context. */
  void shutdown();

  /** Makes sure progress runs soon (I/O thread). */
  void kick() {
    last_activity_ = Clock::now();
    if (!poll_posted_) {
      poll_posted_ = true;
      asio::post(*io_, [this] { poll(); });
    }
  }
  /** Runs f after the current ucp_worker_progress returns (never inside a UCX callback). */
  void defer(std::function<void()> f) { deferred_.push_back(std::move(f)); }

  void pump_staging();
  void return_stage_buffer(Frame f) {
    stage_free.push_back(std::move(f));
    defer([this] { pump_staging(); });
  }

  static ucs_status_t on_am(void* arg, const void* header, size_t header_length, void* data, size_t length,
                            const ucp_am_recv_param_t* param);

 private:
  void run_deferred() {
    while (!deferred_.empty()) {
      auto batch = std::move(deferred_);
      deferred_.clear();
      for (auto& f : batch) {
        try {
          f();
        } catch (const std::exception& e) {
          spdlog::error("comm: ucx: {}", e.what());
        }
      }
    }
  }

  void poll();
  void sleep();

  std::shared_ptr<asio::io_context> io_;
  asio::posix::stream_descriptor efd_;
  std::vector<std::function<void()>> deferred_;
  bool poll_posted_ = false;
  bool wait_pending_ = false;
  Clock::time_point last_activity_{};
  std::chrono::microseconds spin_window_{100};
};

Engine* g_engine = nullptr;  // set while running (I/O thread reads it)

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

// ---- messages on the way out --------------------------------------------------------------------

/** One message being sent: its head, the items sent as parts, and who to tell. */
struct SendOp {
  std::vector<std::uint8_t> head;
  std::string header;         // when sent as a part
  std::vector<Frame> frames;  // kept until every part completed
  std::vector<bool> inlined;  // per item (0 header, 1 + i frames)
  Comm::SendCallback done;
  std::size_t remaining = 0;  // UCX operations not yet completed
  std::exception_ptr error;
  bool finished = false;
};

/** One active message in flight: its header must outlive the send (UCX 1.13 does not copy it). */
struct PartCtx {
  std::weak_ptr<Link> link;
  std::shared_ptr<SendOp> op;  // null for ping and pong
  AmHeader hdr;
  Frame stage;  // a staging buffer, given back on completion
};

/** One rendezvous receive in flight: keeps its buffer alive whatever happens to the link. */
struct RecvCtx {
  std::weak_ptr<Link> link;
  std::uint64_t seq;
  std::uint32_t item;  // kHeadItem for a head received by rendezvous
  std::size_t length;
  Frame buffer;
};
constexpr std::uint32_t kHeadItem = 0xffffffffu;
constexpr int kHostMemory = -1;  // send_am's device for host memory

/**
 * Makes device's primary context current on this thread (the I/O thread) before UCX touches
 * device memory: UCX's CUDA transports work in the context current where they are driven, as
 * ucx-py makes one current before it starts UCX. Done on first use, so a process that never
 * sends or receives device frames creates no context.
 */
bool use_device_context(int device) {
  try {
    auto* rt = device_runtime();
    if (!rt) return false;
    rt->set_device(device);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("comm: cannot use device {} for UCX: {}", device, e.what());
    return false;
  }
}

// ---- one connection -------------------------------------------------------------------------------

/** A message being received. */
struct Incoming {
  bool head = false;  // parsed
  Message msg;        // op and fields once the header is decoded
  bool header_decoded = false;
  std::uint64_t header_bytes = 0;
  std::vector<std::uint64_t> lens;
  std::vector<Frame> frames;        // inline frames, filled by the head
  std::map<std::uint32_t, Frame> parts;  // items sent as parts, allocated on their first part
  std::uint64_t expected = 0;       // bytes of items sent as parts (known from the head)
  std::uint64_t got = 0;            // of those, received
  bool head_seen = false;
  std::size_t rndv_bytes = 0;       // received by rendezvous (counted in Link::arriving_* until delivery)
};

class Link : public std::enable_shared_from_this<Link> {
 public:
  Link(Engine& e, std::uint64_t id, const CommOptions& options, std::shared_ptr<Inbox> inbox, std::string peer)
      : e_(e), id_(id), options_(options), inbox_(std::move(inbox)), peer_(std::move(peer)),
        ping_timer_(*CommRuntime::instance().io()), close_timer_(*CommRuntime::instance().io()) {}

  std::uint64_t id() const noexcept { return id_; }
  bool usable() const noexcept { return e_.alive && ep_ && !failed_ && !closed_ && !closing_; }
  bool receiving() const noexcept { return e_.alive && !failed_ && !closed_ && !abandoned_; }

  // ---- setup ----
  void connect(const Offer& theirs) {
    peer_id_ = theirs.conn;
    peer_cuda_ = theirs.cuda;
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.address = reinterpret_cast<const ucp_address_t*>(theirs.worker_address.data());
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // shared memory and cma; see docs/ucx.md
    p.err_handler.cb = &Link::on_ep_error;
    p.err_handler.arg = reinterpret_cast<void*>(static_cast<std::uintptr_t>(id_));
    const auto st = ucp_ep_create(e_.worker, &p, &ep_);
    if (st != UCS_OK) {
      ep_ = nullptr;
      throw CommError("ucp_ep_create to " + peer_ + ": " + status_text(st));
    }
    e_.kick();
  }

  void ping(std::chrono::milliseconds timeout, std::function<void(std::exception_ptr)> done) {
    ping_done_ = std::move(done);
    send_control(kPing);
    std::weak_ptr<Link> weak = shared_from_this();
    ping_timer_.expires_after(timeout);
    ping_timer_.async_wait([weak, timeout](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || !self->ping_done_) return;
      auto done = std::move(self->ping_done_);
      self->ping_done_ = nullptr;
      done(std::make_exception_ptr(CommError("no UCX pong from " + self->peer_ + " within " +
                                             std::to_string(timeout.count()) + " ms")));
    });
    e_.kick();
  }

  void start(std::shared_ptr<Comm> ctl) {
    ctl_ = std::move(ctl);
    std::weak_ptr<Link> weak = shared_from_this();
    ctl_->set_handlers(
        [weak](Message m) {
          if (auto self = weak.lock()) self->on_ctl_message(m);
        },
        [weak](std::exception_ptr reason) {
          if (auto self = weak.lock()) self->on_ctl_close(reason);
        });
  }

  void abandon() {
    auto self = shared_from_this();
    abandoned_ = true;
    ping_done_ = nullptr;
    ping_timer_.cancel();
    drop_incoming();
    close_ep();
    unregister();
  }

  std::string describe_lanes() const {
    if (!ep_) return "ucx";
    char* buf = nullptr;
    std::size_t n = 0;
    FILE* f = ::open_memstream(&buf, &n);
    if (!f) return "ucx";
    ucp_ep_print_info(ep_, f);
    std::fclose(f);
    std::string text(buf, n);
    std::free(buf);
    // Lines like "lane[0]:  3:sysv/memory.0 md[2]  -> md[2]/sysv/sysdev[255] am am_bw#0".
    std::vector<std::string> tls;
    std::size_t pos = 0;
    while ((pos = text.find("lane[", pos)) != std::string::npos) {
      auto colon = text.find(':', pos);
      if (colon == std::string::npos) break;
      auto start = text.find_first_not_of(' ', colon + 1);
      auto idx_end = start == std::string::npos ? start : text.find(':', start);
      auto eol = text.find('\n', pos);
      pos = colon + 1;
      if (idx_end == std::string::npos || (eol != std::string::npos && idx_end > eol)) continue;
      auto tok_end = text.find_first_of(" \n", idx_end + 1);
      std::string tl = text.substr(idx_end + 1, tok_end - idx_end - 1);
      if (auto dot = tl.rfind('.'); dot != std::string::npos && dot > tl.find('/')) tl.resize(dot);
      if (std::find(tls.begin(), tls.end(), tl) == tls.end()) tls.push_back(tl);
    }
    std::string out = "ucx";
    for (std::size_t i = 0; i < tls.size(); ++i) out += (i ? ", " : " (") + tls[i];
    if (!tls.empty()) out += ")";
    return out;
  }

  // ---- sending ----
  void issue(std::shared_ptr<SendOp> op) {
    auto self = shared_from_this();
    if (!usable()) {
      op->finished = true;
      const std::string why = !e_.alive ? "UCX has shut down" : close_text_.empty() ? "closed" : close_text_;
      auto done = std::move(op->done);
      e_.defer([done, why, peer = peer_] { call_done(done, closed_error(peer, why)); });
      e_.kick();
      return;
    }
    const std::uint64_t seq = next_seq_++;
    ops_.insert(op);
    // Count every operation first, so an early completion cannot finish the message.
    op->remaining = 1;
    const auto& items_inline = op->inlined;
    auto item_size = [&](std::uint32_t item) -> std::size_t {
      return item == 0 ? op->header.size() : op->frames[item - 1]->size();
    };
    auto is_device = [&](std::uint32_t item) { return item > 0 && op->frames[item - 1]->kind() == MemoryKind::Device; };
    const bool direct = e_.cuda && peer_cuda_;
    for (std::uint32_t item = 0; item < items_inline.size(); ++item) {
      if (items_inline[item]) continue;
      if (is_device(item) && !direct) op->remaining += (item_size(item) + kStageChunk - 1) / kStageChunk;
      else op->remaining += 1;
    }
    AmHeader h;
    h.conn = peer_id_;
    h.seq = seq;
    h.kind = kHead;
    send_am(h, op->head.data(), op->head.size(), op, kHostMemory, {});
    for (std::uint32_t item = 0; item < items_inline.size(); ++item) {
      if (items_inline[item]) continue;
      AmHeader p = h;
      p.kind = kPart;
      p.item = item;
      p.item_size = item_size(item);
      if (item == 0) {
        send_am(p, op->header.data(), op->header.size(), op, kHostMemory, {});
      } else if (!is_device(item)) {
        send_am(p, op->frames[item - 1]->data(), op->frames[item - 1]->size(), op, kHostMemory, {});
      } else if (direct) {
        p.flags = kFlagDevice;
        send_am(p, op->frames[item - 1]->data(), op->frames[item - 1]->size(), op, op->frames[item - 1]->device(), {});
      } else {
        const auto& f = op->frames[item - 1];
        e_.stage_queue.push_back({weak_from_this(), op, seq, item, static_cast<const char*>(f->data()), f->size(), 0,
                                  f->device()});
      }
    }
    e_.pump_staging();
    e_.kick();
  }

  /** Sends one active message from host memory or device `device`; op (may be null) counts its completion. */
  void send_am(const AmHeader& h, const void* data, std::size_t size, const std::shared_ptr<SendOp>& op,
               int device, Frame stage) {
    auto* ctx = new PartCtx{weak_from_this(), op, h, std::move(stage)};
    if (!ep_) return part_done(ctx, UCS_ERR_NOT_CONNECTED);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = 0;
    p.cb.send = &Link::on_sent;
    p.user_data = ctx;
    // No memory-type hint for device data: the worker's pool memory (cudaMallocFromPoolAsync)
    // has no legacy CUDA IPC handle, so forcing UCS_MEMORY_TYPE_CUDA could make UCX try cuda_ipc
    // and fail; recent UCX detects such memory itself and pipelines it (docs/ucx.md).
    if (device != kHostMemory && !use_device_context(device)) return part_done(ctx, UCS_ERR_NO_DEVICE);
    auto r = ucp_am_send_nbx(ep_, kAmId, &ctx->hdr, sizeof(AmHeader), data, size, &p);
    if (r == nullptr) return part_done(ctx, UCS_OK);
    if (UCS_PTR_IS_ERR(r)) return part_done(ctx, UCS_PTR_STATUS(r));
  }

  /** One chunk of a device frame, copied into the pinned buffer `stage` (given back when sent). */
  void send_staged(std::uint64_t seq, std::uint32_t item, std::size_t offset, std::size_t item_size, Frame stage,
                   std::size_t n, const std::shared_ptr<SendOp>& op) {
    AmHeader p;
    p.conn = peer_id_;
    p.seq = seq;
    p.kind = kPart;
    p.item = item;
    p.offset = offset;
    p.item_size = item_size;
    const void* data = stage->data();
    send_am(p, data, n, op, kHostMemory, std::move(stage));
  }

  void send_control(std::uint32_t kind) {
    AmHeader h;
    h.conn = peer_id_;
    h.kind = kind;
    send_am(h, nullptr, 0, nullptr, kHostMemory, {});
  }

  static void on_sent(void* request, ucs_status_t status, void* user_data) {
    ucp_request_free(request);
    auto* ctx = static_cast<PartCtx*>(user_data);
    if (auto link = ctx->link.lock()) return link->part_done(ctx, status);
    if (g_engine && ctx->stage) g_engine->return_stage_buffer(std::move(ctx->stage));
    delete ctx;
  }

  void part_done(PartCtx* ctx, ucs_status_t status) {
    auto op = std::move(ctx->op);
    if (ctx->stage) e_.return_stage_buffer(std::move(ctx->stage));
    delete ctx;
    if (status != UCS_OK) {
      const std::string why = "UCX send failed: " + status_text(status);
      if (op && !op->error) op->error = std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": " + why));
      fail_later(std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": " + why)));
    }
    if (op && --op->remaining == 0) {
      std::weak_ptr<Link> weak = weak_from_this();
      e_.defer([weak, op] {
        if (auto self = weak.lock()) return self->finish_op(op);  // clears the frames
        if (!op->finished) {
          op->finished = true;
          if (op->done) op->done(op->error);
        }
        op->frames.clear();
      });
    }
  }

  void finish_op(const std::shared_ptr<SendOp>& op) {
    auto self = shared_from_this();
    if (!op->finished) {
      op->finished = true;
      ops_.erase(op);
      auto done = std::move(op->done);
      op->done = nullptr;
      call_done(done, op->error);
    }
    op->frames.clear();
    if (closing_ && ops_.empty()) finish_close();
  }

  // ---- receiving (inside ucp_worker_progress) ----
  ucs_status_t on_am(const AmHeader& h, void* data, std::size_t length, bool rndv) {
    switch (h.kind) {
      case kPing:
        if (e_.ignore_pings) return UCS_OK;  // tests: a UCX path that does not work
        e_.defer([self = shared_from_this()] {
          if (self->receiving()) self->send_control(kPong);
        });
        return UCS_OK;
      case kPong:
        e_.defer([self = shared_from_this()] { self->on_pong(); });
        return UCS_OK;
      case kHead:
      case kPart:
        break;
      default:
        protocol_error("unknown active message kind " + std::to_string(h.kind));
        return UCS_OK;
    }
    if (rndv && (!parked_.empty() || backlog_.over(*inbox_, arriving_messages_, arriving_bytes_)) && !must_take(h)) {
      parked_.push_back({h, data, length});
      resume_later();
      return UCS_INPROGRESS;  // the descriptor stays valid until received or released
    }
    return accept_am(h, data, length, rndv);
  }

  // ---- receive back-pressure ----
  // While the owner has not taken enough of what arrived (Backlog, inbox.hpp), rendezvous data
  // is left with the sender: its descriptor is parked and received later, in arrival order, so
  // the sender's send stays incomplete and its memory, not ours, holds the bytes. Eager data
  // (under 8 KB a message) is taken as it comes; it waits for delivery like any other.
  struct Parked {
    AmHeader h;
    void* desc;
    std::size_t length;
  };

  void resume_later() {
    if (resume_pending_) return;
    resume_pending_ = true;
    resume_timer_.expires_after(kResumePoll);
    resume_timer_.async_wait([weak = weak_from_this()](error_code ec) {
      auto self = weak.lock();
      if (!self) return;
      self->resume_pending_ = false;
      if (!ec) self->resume_parked();
    });
  }

  void resume_parked() {
    auto self = shared_from_this();
    while (receiving() && !parked_.empty()) {
      auto it = std::find_if(parked_.begin(), parked_.end(), [&](const Parked& p) { return must_take(p.h); });
      if (it == parked_.end()) {
        if (backlog_.over(*inbox_, arriving_messages_, arriving_bytes_)) break;
        it = parked_.begin();
      }
      const Parked p = *it;
      parked_.erase(it);
      rndv_taken_ = false;
      accept_am(p.h, p.desc, p.length, true);
      if (!rndv_taken_ && e_.alive) ucp_am_data_release(e_.worker, p.desc);  // refused: drop it
    }
    if (!parked_.empty() && receiving()) resume_later();
    e_.kick();
  }

  /**
   * Data that is taken in whatever the backlog: the rest of a message whose data started coming
   * (a message is never split), and the next message to deliver when the owner has nothing left
   * to take (else a message over the limit, or one behind a started later one, would never come).
   */
  bool must_take(const AmHeader& h) const {
    if (auto it = incoming_.find(h.seq); it != incoming_.end() && it->second.rndv_bytes > 0) return true;
    return h.seq == next_deliver_ && inbox_->queued() == 0;
  }

  /** The link stops receiving: partial messages go, parked data goes back to UCX. */
  void drop_incoming() {
    incoming_.clear();
    arriving_messages_ = arriving_bytes_ = 0;
    release_parked();
  }

  /** Gives parked descriptors back to UCX (the link stops receiving, or the worker goes). */
  void release_parked() {
    if (e_.alive)
      for (const auto& p : parked_) ucp_am_data_release(e_.worker, p.desc);
    parked_.clear();
    resume_timer_.cancel();
  }

  // Takes in a head or part: parsed or copied now, or (rendezvous) received into its buffer.
  ucs_status_t accept_am(const AmHeader& h, void* data, std::size_t length, bool rndv) {
    if (h.seq < next_deliver_ || h.seq - next_deliver_ > kMaxAhead) {
      protocol_error("message number " + std::to_string(h.seq) + " out of order (expected " +
                     std::to_string(next_deliver_) + " or a little later)");
      return UCS_OK;
    }
    Incoming& in = incoming_[h.seq];
    if (h.kind == kHead) {
      if (in.head_seen) {
        protocol_error("two heads for message " + std::to_string(h.seq));
        return UCS_OK;
      }
      in.head_seen = true;
      if (!rndv) {
        parse_head(in, static_cast<const std::uint8_t*>(data), length);
      } else {
        const std::size_t max_head = wire::kPreambleFixedBytes + 9 * (std::size_t{options_.max_frames} + 1) +
                                     options_.max_header_bytes + kHeadBudget;
        if (length > max_head) {
          protocol_error("message head of " + std::to_string(length) + " bytes exceeds the limits");
          return UCS_OK;
        }
        recv_into(in, h.seq, kHeadItem, allocate_frame(length), 0, data, length);
      }
      return UCS_OK;
    }
    // A part: item 0 is the cereal header, 1 + i frame i.
    const std::uint64_t limit = h.item == 0 ? options_.max_header_bytes : options_.max_frame_bytes;
    if (h.item_size > limit || h.offset > h.item_size || length > h.item_size - h.offset ||
        (in.head && (h.item > in.lens.size() ||
                     h.item_size != (h.item == 0 ? in.header_bytes : in.lens[h.item - 1])))) {
      protocol_error("bad part (item " + std::to_string(h.item) + ", offset " + std::to_string(h.offset) + ", " +
                     std::to_string(length) + " of " + std::to_string(h.item_size) + " bytes)");
      return UCS_OK;
    }
    Frame& slot = in.parts[h.item];
    const bool device = (h.flags & kFlagDevice) && device_runtime() && device_runtime()->device_count() > 0;
    if (!slot) {
      try {
        if (device) {
          // The pool may hand out a block freed on another stream whose work is still queued; it
          // orders that only before later work on this thread's stream, and UCX writes outside
          // any stream of ours: wait for the stream before UCX may write.
          auto* rt = device_runtime();
          slot = rt->allocate(h.item_size, 0);
          rt->synchronize(rt->thread_stream(0));
        } else {
          slot = allocate_frame(h.item_size);
        }
      } catch (const std::exception& e) {
        protocol_error("cannot allocate " + std::to_string(h.item_size) + " bytes: " + e.what());
        return UCS_OK;
      }
    } else if (slot->size() != h.item_size) {
      protocol_error("parts of item " + std::to_string(h.item) + " disagree on its size");
      return UCS_OK;
    }
    if (!rndv) {
      char* dst = static_cast<char*>(slot->data()) + h.offset;
      if (slot->kind() == MemoryKind::Device) {
        auto* rt = device_runtime();
        void* stream = rt->thread_stream(slot->device());
        rt->copy_async(dst, data, length, stream);
        rt->synchronize(stream);
      } else {
        std::memcpy(dst, data, length);
      }
      in.got += length;
      schedule_delivery();
      return UCS_OK;
    }
    recv_into(in, h.seq, h.item, slot, h.offset, data, length);
    return UCS_OK;
  }

  /** Receives rendezvous data of message `in` (number seq) into buffer at offset. */
  void recv_into(Incoming& in, std::uint64_t seq, std::uint32_t item, Frame buffer, std::size_t offset, void* desc,
                 std::size_t length) {
    void* dst = static_cast<char*>(buffer->data()) + offset;
    const int device = buffer->kind() == MemoryKind::Device ? buffer->device() : kHostMemory;
    rndv_taken_ = true;
    if (in.rndv_bytes == 0) ++arriving_messages_;
    in.rndv_bytes += length;
    arriving_bytes_ += length;
    auto* ctx = new RecvCtx{weak_from_this(), seq, item, length, std::move(buffer)};
    // No memory-type hint, as in send_am.
    if (device != kHostMemory && !use_device_context(device)) return received(ctx, UCS_ERR_NO_DEVICE);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.recv_am = &Link::on_received;
    p.user_data = ctx;
    auto r = ucp_am_recv_data_nbx(e_.worker, desc, dst, length, &p);
    if (r == nullptr) return received(ctx, UCS_OK);
    if (UCS_PTR_IS_ERR(r)) return received(ctx, UCS_PTR_STATUS(r));
  }

  static void on_received(void* request, ucs_status_t status, size_t, void* user_data) {
    ucp_request_free(request);
    auto* ctx = static_cast<RecvCtx*>(user_data);
    if (auto link = ctx->link.lock()) return link->received(ctx, status);
    delete ctx;
  }

  void received(RecvCtx* ctx, ucs_status_t status) {
    std::unique_ptr<RecvCtx> own(ctx);
    if (!receiving()) return;
    if (status != UCS_OK)
      return fail_later(std::make_exception_ptr(CommClosedError(
          "comm to " + peer_ + ": receiving from the peer failed: " + status_text(status))));
    auto it = incoming_.find(ctx->seq);
    if (it == incoming_.end()) return;
    if (ctx->item == kHeadItem) {
      parse_head(it->second, static_cast<const std::uint8_t*>(ctx->buffer->data()), ctx->length);
    } else {
      it->second.got += ctx->length;
      schedule_delivery();
    }
  }

  void parse_head(Incoming& in, const std::uint8_t* p, std::size_t n) {
    if (n < wire::kPreambleFixedBytes) return protocol_error("message head of " + std::to_string(n) + " bytes");
    const auto pre = wire::decode_preamble_fixed(p);
    if (auto error = check_preamble(pre, options_); !error.empty()) return protocol_error(error);
    const std::size_t nitems = std::size_t{pre.nframes} + 1;
    std::size_t off = wire::kPreambleFixedBytes + 8 * std::size_t{pre.nframes};
    if (n < off + nitems) return protocol_error("truncated message head");
    std::uint64_t total = 0;
    if (auto error = read_frame_sizes(p, pre, options_, in.lens, total); !error.empty()) return protocol_error(error);
    const std::uint8_t* map = p + off;
    off += nitems;
    for (const auto& [item, f] : in.parts)  // parts that came before the head
      if (item >= nitems || map[item] || f->size() != (item == 0 ? pre.header_bytes : in.lens[item - 1]))
        return protocol_error("a part of item " + std::to_string(item) + " disagrees with the message head");
    in.header_bytes = pre.header_bytes;
    in.frames.assign(pre.nframes, nullptr);
    std::uint64_t expected = 0;
    try {
      for (std::size_t item = 0; item < nitems; ++item) {
        const std::uint64_t len = item == 0 ? pre.header_bytes : in.lens[item - 1];
        if (!map[item]) {
          expected += len;
          continue;
        }
        if (n - off < len) return protocol_error("truncated message head (inline items)");
        if (item == 0) {
          decode_header(p + off, len, in.msg);
          in.header_decoded = true;
        } else {
          auto f = allocate_frame(len);
          if (len) std::memcpy(f->data(), p + off, len);
          in.frames[item - 1] = std::move(f);
        }
        off += len;
      }
    } catch (const ProtocolError& e) {
      return protocol_error(e.what());
    } catch (const std::bad_alloc&) {
      return protocol_error("cannot allocate a message of " + std::to_string(total) + " bytes");
    }
    if (off != n) return protocol_error(std::to_string(n - off) + " bytes left over in a message head");
    in.expected = expected;
    in.head = true;
    schedule_delivery();
  }

  void schedule_delivery() {
    if (delivery_scheduled_) return;
    delivery_scheduled_ = true;
    e_.defer([self = shared_from_this()] {
      self->delivery_scheduled_ = false;
      self->deliver();
    });
  }

  // Hands complete messages to the inbox, in order (outside UCX callbacks).
  void deliver() {
    auto self = shared_from_this();
    while (receiving()) {
      auto it = incoming_.find(next_deliver_);
      if (it == incoming_.end()) break;
      Incoming& in = it->second;
      if (!in.head || in.got < in.expected) break;
      Message msg;
      try {
        if (!in.header_decoded) {
          auto h = in.parts.find(0);
          if (h == in.parts.end()) throw ProtocolError("message header missing");
          decode_header(h->second->data(), h->second->size(), in.msg);
        }
        msg = std::move(in.msg);
        msg.frames = std::move(in.frames);
        for (auto& [item, f] : in.parts)
          if (item > 0) msg.frames[item - 1] = std::move(f);
      } catch (const ProtocolError& e) {
        return protocol_error(e.what());
      }
      if (in.rndv_bytes) --arriving_messages_;
      arriving_bytes_ -= in.rndv_bytes;
      std::size_t bytes = in.header_bytes;  // header and frames, as tcp:// counts them
      incoming_.erase(it);
      ++next_deliver_;
      for (const auto& f : msg.frames) bytes += f ? f->size() : 0;
      backlog_.pushed(bytes, *inbox_);  // trims too: eager-only traffic never asks over()
      inbox_->push(std::move(msg));
    }
    if (peer_sent_ && next_deliver_ >= *peer_sent_) peer_closed();
  }

  void on_pong() {
    if (!ping_done_) return;
    ping_timer_.cancel();
    auto done = std::move(ping_done_);
    ping_done_ = nullptr;
    done(nullptr);
  }

  // ---- closing and failures ----
  void on_ctl_message(const Message& m) {
    if (m.op != kBye) {
      spdlog::warn("comm: {}: unexpected '{}' on the UCX control connection", peer_, m.op);
      return;
    }
    try {
      peer_sent_ = m.get<std::uint64_t>("sent");
    } catch (const CommError& e) {
      return fail(std::make_exception_ptr(ProtocolError("comm to " + peer_ + ": " + e.what())));
    }
    if (next_deliver_ >= *peer_sent_) return peer_closed();
    // Messages sent before the goodbye may still be on their way over UCX: give them time.
    std::weak_ptr<Link> weak = shared_from_this();
    close_timer_.expires_after(options_.close_timeout);
    close_timer_.async_wait([weak](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || !self->receiving()) return;
      spdlog::warn("comm: {}: the peer closed; {} of its messages did not arrive within {} ms", self->peer_,
                   *self->peer_sent_ - self->next_deliver_, self->options_.close_timeout.count());
      self->peer_closed();
    });
  }

  void on_ctl_close(std::exception_ptr reason) {
    if (failed_ || closed_ || abandoned_) return;
    if (peer_sent_) return;  // a goodbye came first: delivery (or its timer) closes
    std::string why = "peer closed the connection";
    try {
      if (reason) std::rethrow_exception(reason);
    } catch (const std::exception& e) {
      why += std::string(" (its control connection closed without a goodbye: ") + e.what() + ")";
    }
    fail(std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": " + why)));
  }

  void peer_closed() {
    if (failed_ || closed_) return;
    fail(std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": peer closed the connection")), false);
  }

  /** close() of the comm: what was sent gets close_timeout to complete, then goodbye. */
  void close_local() {
    auto self = shared_from_this();
    if (failed_ || closed_ || abandoned_) {
      if (ctl_) ctl_->close();
      return;
    }
    if (closing_) return;
    closing_ = true;
    close_text_ = "closed locally";
    if (ops_.empty()) return finish_close();
    std::weak_ptr<Link> weak = self;
    close_timer_.expires_after(options_.close_timeout);
    close_timer_.async_wait([weak](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_ || self->failed_) return;
      const std::string why = "closed locally; the peer did not take the queued messages within " +
                              std::to_string(self->options_.close_timeout.count()) + " ms";
      spdlog::warn("comm: {}: {}", self->peer_, why);
      self->fail_ops(why);
      self->finish_close();
    });
  }

  void finish_close() {
    auto self = shared_from_this();
    if (closed_ || failed_) return;
    closed_ = true;
    close_timer_.cancel();
    if (ctl_) {
      Message bye(kBye);
      bye.set("sent", next_seq_);
      ctl_->send(std::move(bye), nullptr);
      ctl_->close();  // TCP writes the goodbye first
    }
    drop_incoming();
    close_ep();
    unregister();
  }

  void fail_later(std::exception_ptr reason) {
    e_.defer([self = shared_from_this(), reason] { self->fail(reason); });
  }

  void protocol_error(const std::string& why) {
    spdlog::warn("comm: closing {}: protocol error: {}", peer_, why);
    fail_later(std::make_exception_ptr(ProtocolError("protocol error from " + peer_ + ": " + why)));
  }

  void fail(std::exception_ptr reason, bool log = true) {
    auto self = shared_from_this();
    if (failed_ || closed_ || abandoned_) return;
    failed_ = true;
    close_text_ = describe_exception(reason);
    if (log) spdlog::debug("comm: {}: {}", peer_, close_text_);
    close_timer_.cancel();
    inbox_->push_close(reason);
    fail_ops(close_text_);
    drop_incoming();
    if (ping_done_) {
      auto done = std::move(ping_done_);
      ping_done_ = nullptr;
      ping_timer_.cancel();
      done(reason);
    }
    close_ep();
    if (ctl_) ctl_->close();
    unregister();
  }

  void fail_ops(const std::string& why) {
    auto ops = std::move(ops_);
    ops_.clear();
    for (const auto& op : ops) {
      if (op->finished) continue;
      op->finished = true;
      auto done = std::move(op->done);
      op->done = nullptr;
      call_done(done, closed_error(peer_, why));
    }
  }

  static void on_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
    if (!g_engine) return;
    const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(arg));
    auto it = g_engine->links.find(id);
    if (it == g_engine->links.end()) return;
    auto link = it->second;
    link->fail_later(std::make_exception_ptr(
        CommClosedError("comm to " + link->peer_ + ": UCX reports the connection broken: " + status_text(status))));
  }

  static void on_ep_closed(void* request, ucs_status_t, void*) {
    ucp_request_free(request);
    if (g_engine && g_engine->closing_eps > 0) --g_engine->closing_eps;
  }

  void close_ep() {
    if (!ep_) return;
    auto ep = ep_;
    ep_ = nullptr;
    if (!e_.alive) return;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    p.cb.send = &Link::on_ep_closed;
    auto r = ucp_ep_close_nbx(ep, &p);  // flush: mode NONE has no FORCE
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) ++e_.closing_eps;
    e_.kick();
  }

  void unregister() { e_.links.erase(id_); }

 private:
  Engine& e_;
  std::uint64_t id_;
  CommOptions options_;
  std::shared_ptr<Inbox> inbox_;
  std::string peer_;
  ucp_ep_h ep_ = nullptr;
  std::uint64_t peer_id_ = 0;
  bool peer_cuda_ = false;
  std::shared_ptr<Comm> ctl_;
  bool failed_ = false, closed_ = false, closing_ = false, abandoned_ = false;
  std::string close_text_;
  // sending
  std::uint64_t next_seq_ = 0;
  std::unordered_set<std::shared_ptr<SendOp>> ops_;
  // receiving
  std::map<std::uint64_t, Incoming> incoming_;
  std::uint64_t next_deliver_ = 0;
  bool delivery_scheduled_ = false;
  std::optional<std::uint64_t> peer_sent_;
  Backlog backlog_{options_};
  // Messages with rendezvous data taken in and not yet delivered, and those bytes.
  std::size_t arriving_messages_ = 0, arriving_bytes_ = 0;
  std::deque<Parked> parked_;
  boost::asio::steady_timer resume_timer_{*CommRuntime::instance().io()};
  bool resume_pending_ = false;
  bool rndv_taken_ = false;  // set by recv_into: accept_am received the rendezvous data
  // handshake
  std::function<void(std::exception_ptr)> ping_done_;
  boost::asio::steady_timer ping_timer_, close_timer_;
};

// ---- the engine ---------------------------------------------------------------------------------

ucs_status_t Engine::on_am(void* arg, const void* header, size_t header_length, void* data, size_t length,
                           const ucp_am_recv_param_t* param) {
  auto* e = static_cast<Engine*>(arg);
  if (header_length != sizeof(AmHeader)) return UCS_OK;  // not ours: dropped
  AmHeader h;
  std::memcpy(&h, header, sizeof h);
  auto it = e->links.find(h.conn);
  if (it == e->links.end() || !it->second->receiving()) return UCS_OK;  // a closed comm: dropped
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  auto link = it->second;
  return link->on_am(h, data, length, rndv);
}

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
    const auto st = ucp_worker_arm(worker);
    if (st == UCS_ERR_BUSY) continue;  // events came in meanwhile: drain them first
    if (st != UCS_OK) {
      static std::once_flag once;
      std::call_once(once, [&] { spdlog::warn("comm: ucp_worker_arm: {}; UCX progress polls", status_text(st)); });
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

void Engine::pump_staging() {
  auto* rt = device_runtime();
  while (!stage_queue.empty()) {
    auto& job = stage_queue.front();
    auto link = job.link.lock();
    if (!link || !link->usable() || job.op->finished || !rt) {
      stage_queue.pop_front();
      continue;
    }
    Frame buf;
    if (!stage_free.empty()) {
      buf = std::move(stage_free.back());
      stage_free.pop_back();
    } else if (stage_allocated < kStageBuffers) {
      try {
        buf = rt->allocate_pinned(kStageChunk);
        ++stage_allocated;
      } catch (const std::exception& e) {
        link->fail_later(std::make_exception_ptr(CommError(std::string("cannot stage a device frame: ") + e.what())));
        stage_queue.pop_front();
        continue;
      }
    } else {
      return;  // every staging buffer is in flight; a completion calls us again
    }
    const std::size_t n = std::min(kStageChunk, job.size - job.offset);
    try {
      rt->set_device(job.device);
      void* stream = rt->thread_stream(job.device);
      rt->copy_async(buf->data(), job.src + job.offset, n, stream);
      rt->synchronize(stream);
    } catch (const std::exception& e) {
      stage_free.push_back(std::move(buf));
      link->fail_later(std::make_exception_ptr(CommError(std::string("cannot stage a device frame: ") + e.what())));
      stage_queue.pop_front();
      continue;
    }
    auto op = job.op;
    const std::uint64_t seq = job.seq;
    const std::uint32_t item = job.item;
    const std::size_t offset = job.offset, size = job.size;
    job.offset += n;
    if (job.offset >= job.size) stage_queue.pop_front();
    link->send_staged(seq, item, offset, size, buf, n, op);
  }
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
    link_->start(std::move(ctl));
  }
  void abandon() override {
    abandoned_ = true;
    link_->abandon();
  }
  std::string transport() const override { return transport_; }
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
      op->head.insert(op->head.end(), b, b + n);
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
      spdlog::debug("comm: UCX has no setting {} to default to {}", name, value);
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
  spdlog::debug("comm: UCX {} started{}", s.version, s.cuda ? " (with CUDA memory support)" : "");
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
