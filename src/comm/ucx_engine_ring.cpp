// The shared ring of a ucx:// link between two processes of one host (docs/ucx.md, "The shared
// ring"; the ring itself is shm_ring.hpp).
//
// UCX moves a large host frame between two processes with the kernel's cross-process copy
// (cma), whose speed on a VM varies from day to day (0.6x to 0.9x memcpy here). Two copies
// through a small ring in shared memory run at memcpy speed whatever the kernel does: the ring
// stays in the last-level cache and the writer's and the reader's copies overlap on two cores.
//
// Setting up: the first time a link sends a host frame of at least kRingMinItem, its writer side
// makes a ring and offers it (kRingOffer: pid, descriptor, nonce); that frame and those after it
// go as parts until the peer answers. The peer opens the ring through /proc and answers
// kRingAccept, or kRingDecline when it is not the ring offered (another host, another pid
// namespace, TESSERA_UCX_RING=0): then the link keeps to parts for good.
//
// Moving: an item that goes through the ring is written slot by slot, each slot carrying the
// part's AmHeader (sequence number, item, offset, item size), so the reader treats a slot as a
// part that came as an active message; heads still come as active messages, in any order with
// the slots. Both I/O threads move slots while they poll (Engine::progress_rings). A side with
// nothing to do arms the ring before the engine sleeps, and the other side wakes it with a small
// active message (kRingWake, kRingSpace). Back-pressure: a reader whose owner has not taken
// enough leaves slots in the ring (the writer waits, its frames stay with it) under the same
// rule as parked rendezvous data (must_take).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "../core/logging.hpp"
#include "ucx_engine_internal.hpp"

namespace tessera::comm::detail::ucx {

namespace {
std::atomic<std::uint64_t> g_ring_written{0}, g_ring_read{0};
}  // namespace

RingTraffic ring_traffic() noexcept { return {g_ring_written.load(), g_ring_read.load()}; }

void Link::note_lanes(const std::string& lanes) {
  // UCX's self lane: the peer is this very process (one worker each).
  if (lanes.find("self") != std::string::npos) {
    shared_memory_lanes_ = env_long("TESSERA_UCX_TEST_RING_SELF", 0) != 0;
    return;
  }
  shared_memory_lanes_ = false;
  for (const char* tl : {"sysv", "posix", "cma", "xpmem", "knem"})
    if (lanes.find(tl) != std::string::npos) shared_memory_lanes_ = true;
}

bool Link::ring_takes(std::size_t size) {
  if (size < kRingMinItem || !e_.rings || !shared_memory_lanes_) return false;
  if (tx_state_ == RingState::kUnused) offer_ring();
  return tx_state_ == RingState::kInUse;
}

void Link::offer_ring() {
  try {
    tx_ring_ = ShmRing::create(kRingSlots, kRingSlotBytes);
  } catch (const std::exception& e) {
    logging::debug("comm: {}: no shared ring: {}", peer_, e.what());
    tx_state_ = RingState::kRefused;
    return;
  }
  RingOffer offer = tx_ring_->offer();
  if (e_.ring_bad_nonce) offer.nonce ^= 1;
  std::vector<std::uint8_t> bytes(sizeof offer);
  std::memcpy(bytes.data(), &offer, sizeof offer);
  tx_state_ = RingState::kOffered;
  send_control(kRingOffer, std::move(bytes));
}

void Link::ring_send(const std::shared_ptr<SendOp>& op, const AmHeader& part, const void* data, std::size_t size) {
  ring_jobs_.push_back({op, part, static_cast<const char*>(data), size, 0});
  pump_ring();
}

void Link::on_ring_message(const AmHeader& h, const void* data, std::size_t length, bool rndv) {
  switch (h.kind) {
    case kRingOffer: {
      RingOffer offer;
      if (rndv || length != sizeof offer) return protocol_error("a ring offer of " + std::to_string(length) + " bytes");
      std::memcpy(&offer, data, sizeof offer);
      e_.defer([self = shared_from_this(), offer] {
        if (self->receiving()) self->accept_ring_offer(offer);
      });
      return;
    }
    case kRingAccept:
    case kRingDecline:
      if (tx_state_ != RingState::kOffered) return protocol_error("an answer to a ring offer never made");
      if (h.kind == kRingDecline) {
        logging::debug("comm: {}: the peer refused the shared ring; large frames go through UCX", peer_);
        tx_state_ = RingState::kRefused;
        tx_ring_.reset();
        return;
      }
      tx_state_ = RingState::kInUse;
      tx_ring_->close_descriptor();
      ring_in_use_ = true;
      e_.ring_links.insert(id_);
      return;
    case kRingWake:
    case kRingSpace:
      return;  // it woke the worker; the poll that runs it moves the slots
    default:
      return;
  }
}

void Link::accept_ring_offer(const RingOffer& offer) {
  if (rx_ring_) return protocol_error("a second shared ring offered");
  // Taken only where this side also sees shared-memory lanes, and only of the geometry this side
  // would make: a peer cannot have us open descriptors elsewhere, nor map more than 2 MiB.
  std::string why;
  if (!e_.rings) why = "TESSERA_UCX_RING=0";
  else if (!shared_memory_lanes_) why = "UCX does not use shared memory to this peer";
  else if (offer.slots != kRingSlots || offer.slot_bytes != kRingSlotBytes)
    why = "a ring of " + std::to_string(offer.slots) + " slots of " + std::to_string(offer.slot_bytes) + " bytes";
  else rx_ring_ = ShmRing::open(offer, why);
  if (!rx_ring_) {
    logging::debug("comm: {}: shared ring refused: {}", peer_, why);
    return send_control(kRingDecline);
  }
  ring_in_use_ = true;
  e_.ring_links.insert(id_);
  send_control(kRingAccept);
}

bool Link::pump_ring() {
  if (tx_state_ != RingState::kInUse || !sending()) return false;
  bool moved = false;
  // A few slots (about 20 us each) at a time, so other links and sockets are served between.
  for (int budget = 4; budget > 0 && !ring_jobs_.empty();) {
    RingJob& job = ring_jobs_.front();
    if (job.op->finished) {  // failed meanwhile
      ring_jobs_.pop_front();
      continue;
    }
    AmHeader h = job.part;
    h.offset = job.written;
    const std::size_t n = std::min(tx_ring_->payload_capacity(), job.size - job.written);
    if (!tx_ring_->write(&h, sizeof h, job.data + job.written, n)) break;  // full
    moved = true;
    --budget;
    job.written += n;
    g_ring_written.fetch_add(n, std::memory_order_relaxed);
    if (tx_ring_->take_reader_wake()) send_control(kRingWake);
    if (job.written == job.size) {
      auto op = std::move(job.op);
      ring_jobs_.pop_front();
      operation_done(op, UCS_OK);  // the bytes are in the ring: the frame is free
    }
  }
  return moved;
}

bool Link::drain_ring() {
  if (!rx_ring_ || rx_held_ || !receiving()) return false;
  bool moved = false;
  for (int budget = 4; budget > 0; --budget) {
    auto slot = rx_ring_->peek();
    if (!slot) break;
    AmHeader h;
    std::memcpy(&h, slot->header, sizeof h);
    if (h.kind != kPart || h.flags != 0 || h.conn != id_) {
      protocol_error("a slot of the shared ring that is not a host frame's part (kind " + std::to_string(h.kind) + ")");
      return moved;
    }
    if ((!parked_.empty() || backlog_.over(*inbox_, arriving_messages_, arriving_bytes_)) && !must_take(h)) {
      rx_held_ = true;  // the writer waits; resume_parked looks again
      resume_later();
      break;
    }
    accept_am(h, const_cast<std::uint8_t*>(slot->data), slot->length, false);  // copies the bytes out
    // Counted as rendezvous data is (arriving_*, must_take) until the message is delivered.
    if (auto it = incoming_.find(h.seq); it != incoming_.end() && receiving()) {
      if (it->second.rndv_bytes == 0) ++arriving_messages_;
      it->second.rndv_bytes += slot->length;
      arriving_bytes_ += slot->length;
    }
    rx_ring_->pop();
    g_ring_read.fetch_add(slot->length, std::memory_order_relaxed);
    moved = true;
    if (rx_ring_->take_writer_wake()) send_control(kRingSpace);
  }
  return moved;
}

bool Link::progress_ring() {
  try {
    const bool wrote = pump_ring();
    const bool read = drain_ring();
    return wrote || read;
  } catch (const std::exception& e) {  // the peer broke the ring (shm_ring.hpp checks)
    protocol_error(e.what());
    drop_rings();
    return true;
  }
}

bool Link::ring_may_sleep() {
  try {
    if (tx_state_ == RingState::kInUse && !ring_jobs_.empty() && sending() && !tx_ring_->writer_arm()) return false;
    if (rx_ring_ && !rx_held_ && receiving() && !rx_ring_->reader_arm()) return false;
  } catch (const std::exception& e) {
    protocol_error(e.what());
    drop_rings();
  }
  return true;
}

void Link::ring_resume() {
  if (!rx_held_) return;
  rx_held_ = false;
  e_.kick();
}

void Link::drop_rings() {
  ring_jobs_.clear();
  tx_ring_.reset();
  rx_ring_.reset();
  rx_held_ = false;
  if (tx_state_ == RingState::kOffered || tx_state_ == RingState::kInUse) tx_state_ = RingState::kRefused;
  e_.ring_links.erase(id_);
}

namespace {
// Calls f(link) for each link with a ring while f returns true; false when one returned false.
// Over a copy of the ids: a link that fails inside f leaves the set. Ids of links gone are dropped.
template <typename F>
bool each_ring_link(Engine& e, F&& f) {
  std::vector<std::uint64_t> ids(e.ring_links.begin(), e.ring_links.end());
  for (auto id : ids) {
    auto it = e.links.find(id);
    if (it == e.links.end()) {
      e.ring_links.erase(id);
      continue;
    }
    auto link = it->second;  // alive while f runs
    if (!f(*link)) return false;
  }
  return true;
}
}  // namespace

bool Engine::progress_rings() {
  bool moved = false;
  each_ring_link(*this, [&](Link& link) {
    if (link.progress_ring()) moved = true;
    return true;
  });
  return moved;
}

bool Engine::rings_may_sleep() {
  return each_ring_link(*this, [](Link& link) { return link.ring_may_sleep(); });
}

}  // namespace tessera::comm::detail::ucx
