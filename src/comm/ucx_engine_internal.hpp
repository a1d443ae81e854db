#pragma once
// Private to the UCX engine (ucx_engine*.cpp, built only with UCX): the process's Engine, one
// connection's Link and what a message in flight needs. ucx_engine.cpp holds the engine and the
// Comm, ucx_engine_link.cpp a link's setup and closing, ucx_engine_send.cpp and
// ucx_engine_receive.cpp the two directions of a message, ucx_engine_ring.cpp the shared ring
// that carries large host frames between two processes of one host.
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include "../core/logging.hpp"
#include "frame_pool.hpp"
#include "inbox.hpp"
#include "shm_ring.hpp"
#include "transports.hpp"
#include "ucx_engine.hpp"

namespace tessera::comm::detail::ucx {

using Clock = std::chrono::steady_clock;
using boost::system::error_code;

inline constexpr unsigned kAmId = 21;
inline constexpr const char* kBye = "tessera.ucx-bye";

enum Kind : std::uint32_t {
  kPing = 1,
  kPong = 2,
  kHead = 3,
  kPart = 4,
  // The shared ring (ucx_engine_ring.cpp): the writer offers it (a RingOffer as data), the
  // reader takes or refuses it, and either side wakes the other when it went to sleep.
  kRingOffer = 5,
  kRingAccept = 6,
  kRingDecline = 7,
  kRingWake = 8,   // to the reader: slots were written while it slept
  kRingSpace = 9,  // to the writer: slots were freed while it slept
};
inline constexpr std::uint32_t kFlagDevice = 1;  // part: device memory on the sender, sent directly

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
inline constexpr std::size_t kHeadBudget = 8000;
inline constexpr std::size_t kInlineItem = 4096;
// Device frames without CUDA in UCX go through pinned host chunks, copy and send overlapped.
inline constexpr std::size_t kStageChunk = std::size_t{8} << 20;
inline constexpr std::size_t kStageBuffers = 4;
// The shared ring: 8 slots of 256 KiB (2 MiB, which stays in the last-level cache while both
// sides copy: docs/ucx.md), for host frames of at least 64 KiB; smaller ones cost less as
// active messages than a slot each.
inline constexpr std::uint32_t kRingSlots = 8;
inline constexpr std::size_t kRingSlotBytes = std::size_t{256} << 10;
inline constexpr std::size_t kRingMinItem = std::size_t{64} << 10;
// Parts may run ahead of delivery by at most this many messages (a bound on bookkeeping).
inline constexpr std::uint64_t kMaxAhead = 1u << 20;
// While receive back-pressure holds rendezvous data back, how often to look whether the owner
// took messages (the inbox has no hook for it; tcp:// polls the same way).
inline constexpr auto kResumePoll = std::chrono::milliseconds(1);

std::string status_text(ucs_status_t st);
/** True when the variable is set to 0, off, no, false or n (any case). */
bool env_off(const char* name);
/** The variable as a non-negative integer; `fallback` when unset or not one. */
long env_long(const char* name, long fallback);

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
  bool rings = true;          // TESSERA_UCX_RING=0: no shared rings, offered or taken
  bool ring_bad_nonce = false;  // TESSERA_UCX_TEST_RING_BAD_NONCE=1: offers the peer must refuse

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

  // Links with a shared ring in use (either way), polled with the worker (ucx_engine_ring.cpp).
  std::unordered_set<std::uint64_t> ring_links;
  /** Moves slots through every ring; true when any moved. */
  bool progress_rings();
  /** True when no ring has work left that needs the loop to keep spinning (each side armed). */
  bool rings_may_sleep();

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
          logging::error("comm: ucx: {}", e.what());
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

/** The running engine, null when UCX is not running (read on the I/O thread). */
extern Engine* g_engine;

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
  std::vector<std::uint8_t> payload;  // a control message's data (a ring offer), kept until sent
};

/** One rendezvous receive in flight: keeps its buffer alive whatever happens to the link. */
struct RecvCtx {
  std::weak_ptr<Link> link;
  std::uint64_t seq;
  std::uint32_t item;  // kHeadItem for a head received by rendezvous
  std::size_t length;
  Frame buffer;
};
inline constexpr std::uint32_t kHeadItem = 0xffffffffu;
inline constexpr int kHostMemory = -1;  // send_am's device for host memory

/**
 * Makes device's primary context current on this thread (the I/O thread) before UCX touches
 * device memory: UCX's CUDA transports work in the context current where they are driven, as
 * ucx-py makes one current before it starts UCX. Done on first use, so a process that never
 * sends or receives device frames creates no context.
 */
bool use_device_context(int device);

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
  /** What was issued may still go out (also while closing, unlike usable()). */
  bool sending() const noexcept { return e_.alive && ep_ && !failed_ && !closed_ && !abandoned_; }

  // ---- setup ----
  void connect(const Offer& theirs);
  void ping(std::chrono::milliseconds timeout, std::function<void(std::exception_ptr)> done);
  void start(std::shared_ptr<Comm> ctl);
  void abandon();
  std::string describe_lanes() const;

  // ---- sending ----
  void issue(std::shared_ptr<SendOp> op);
  /** Sends one active message from host memory or device `device`; op (may be null) counts its completion. */
  void send_am(const AmHeader& h, const void* data, std::size_t size, const std::shared_ptr<SendOp>& op,
               int device, Frame stage);
  /** One chunk of a device frame, copied into the pinned buffer `stage` (given back when sent). */
  void send_staged(std::uint64_t seq, std::uint32_t item, std::size_t offset, std::size_t item_size, Frame stage,
                   std::size_t n, const std::shared_ptr<SendOp>& op);
  /** A control message (no sequence number), with a few bytes of data kept until sent. */
  void send_control(std::uint32_t kind, std::vector<std::uint8_t> payload = {});
  static void on_sent(void* request, ucs_status_t status, void* user_data);
  void part_done(PartCtx* ctx, ucs_status_t status);
  /** One operation of `op` (may be null) completed with `status`. */
  void operation_done(const std::shared_ptr<SendOp>& op, ucs_status_t status);
  void finish_op(const std::shared_ptr<SendOp>& op);

  // ---- receiving (inside ucp_worker_progress) ----
  ucs_status_t on_am(const AmHeader& h, void* data, std::size_t length, bool rndv);

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
  void resume_later();
  void resume_parked();
  /**
   * Data that is taken in whatever the backlog: the rest of a message whose data started coming
   * (a message is never split), and the next message to deliver when the owner has nothing left
   * to take (else a message over the limit, or one behind a started later one, would never come).
   */
  bool must_take(const AmHeader& h) const;
  /** The link stops receiving: partial messages go, parked data goes back to UCX. */
  void drop_incoming();
  /** Gives parked descriptors back to UCX (the link stops receiving, or the worker goes). */
  void release_parked();
  // Takes in a head or part: parsed or copied now, or (rendezvous) received into its buffer.
  ucs_status_t accept_am(const AmHeader& h, void* data, std::size_t length, bool rndv);
  /** Receives rendezvous data of message `in` (number seq) into buffer at offset. */
  void recv_into(Incoming& in, std::uint64_t seq, std::uint32_t item, Frame buffer, std::size_t offset, void* desc,
                 std::size_t length);
  static void on_received(void* request, ucs_status_t status, size_t, void* user_data);
  void received(RecvCtx* ctx, ucs_status_t status);
  void parse_head(Incoming& in, const std::uint8_t* p, std::size_t n);
  void schedule_delivery();
  // Hands complete messages to the inbox, in order (outside UCX callbacks).
  void deliver();
  void on_pong();

  // ---- the shared ring (ucx_engine_ring.cpp) ----
  // A ring per direction, made by its writer when the link first sends a large host frame and
  // offered in-band; until the peer took it, and for good when it refused, frames go as parts.
  /** Whether the item of `size` bytes (a host frame) goes through the ring; offers one first time. */
  bool ring_takes(std::size_t size);
  /** Queues one item of `op` for the ring (its header says seq, item and item size). */
  void ring_send(const std::shared_ptr<SendOp>& op, const AmHeader& part, const void* data, std::size_t size);
  /** The ring's control messages (inside ucp_worker_progress). */
  void on_ring_message(const AmHeader& h, const void* data, std::size_t length, bool rndv);
  /** Writes queued slots and drains arrived ones; true when any moved. */
  bool progress_ring();
  /** Both ring sides armed for sleep (or nothing to do). */
  bool ring_may_sleep();
  /** Backlog let go: the reader side looks at its ring again. */
  void ring_resume();
  /** The link ends: the rings go (a reader keeps its own mapping of the peer's). */
  void drop_rings();
  /**
   * Whether UCX chose shared memory for this link (sysv, posix, cma, xpmem or knem lanes): the
   * ring replaces that path only, so it is never offered across hosts, nor where UCX_TLS leaves
   * shared memory out; in one process (UCX's self lane) only for tests
   * (TESSERA_UCX_TEST_RING_SELF=1), since there two copies on one thread cost more than one.
   */
  void note_lanes(const std::string& lanes);
  /** True once a ring carries data either way (Comm::transport says so); any thread. */
  bool ring_in_use() const noexcept { return ring_in_use_.load(std::memory_order_relaxed); }

  // ---- closing and failures ----
  void on_ctl_message(const Message& m);
  void on_ctl_close(std::exception_ptr reason);
  void peer_closed();
  /** close() of the comm: what was sent gets close_timeout to complete, then goodbye. */
  void close_local();
  void finish_close();
  void fail_later(std::exception_ptr reason);
  void protocol_error(const std::string& why);
  void fail(std::exception_ptr reason, bool log = true);
  void fail_ops(const std::string& why);
  static void on_ep_error(void* arg, ucp_ep_h, ucs_status_t status);
  static void on_ep_closed(void* request, ucs_status_t, void*);
  void close_ep();
  void unregister() {
    e_.links.erase(id_);
    e_.ring_links.erase(id_);
  }

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
  // the shared ring
  enum class RingState { kUnused, kOffered, kInUse, kRefused };
  struct RingJob {
    std::shared_ptr<SendOp> op;
    AmHeader part;
    const char* data;
    std::size_t size;
    std::size_t written;
  };
  void offer_ring();
  void accept_ring_offer(const RingOffer& offer);
  bool pump_ring();
  bool drain_ring();
  RingState tx_state_ = RingState::kUnused;
  std::unique_ptr<ShmRing> tx_ring_, rx_ring_;
  std::deque<RingJob> ring_jobs_;
  bool rx_held_ = false;  // the reader left a slot in the ring for back-pressure
  bool shared_memory_lanes_ = false;  // UCX itself would move data through shared memory (start())
  std::atomic<bool> ring_in_use_{false};
  // handshake
  std::function<void(std::exception_ptr)> ping_done_;
  boost::asio::steady_timer ping_timer_, close_timer_;
};

}  // namespace tessera::comm::detail::ucx
