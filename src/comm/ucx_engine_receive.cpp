// Receiving over UCX: heads and parts in any order, rendezvous data straight into frames,
// receive back-pressure, and delivery to the inbox in order.
#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "wire.hpp"
#include "tessera/core/device.hpp"
#include "ucx_engine_internal.hpp"

namespace tessera::comm::detail::ucx {

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

ucs_status_t Link::on_am(const AmHeader& h, void* data, std::size_t length, bool rndv) {
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
    case kRingOffer:
    case kRingAccept:
    case kRingDecline:
    case kRingWake:
    case kRingSpace:
      on_ring_message(h, data, length, rndv);
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

void Link::resume_later() {
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

void Link::resume_parked() {
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
  ring_resume();
  e_.kick();
}

/**
 * Data that is taken in whatever the backlog: the rest of a message whose data started coming
 * (a message is never split), and the next message to deliver when the owner has nothing left
 * to take (else a message over the limit, or one behind a started later one, would never come).
 */
bool Link::must_take(const AmHeader& h) const {
  if (auto it = incoming_.find(h.seq); it != incoming_.end() && it->second.rndv_bytes > 0) return true;
  return h.seq == next_deliver_ && inbox_->queued() == 0;
}

/** The link stops receiving: partial messages go, parked data goes back to UCX. */
void Link::drop_incoming() {
  incoming_.clear();
  arriving_messages_ = arriving_bytes_ = 0;
  release_parked();
}

/** Gives parked descriptors back to UCX (the link stops receiving, or the worker goes). */
void Link::release_parked() {
  if (e_.alive)
    for (const auto& p : parked_) ucp_am_data_release(e_.worker, p.desc);
  parked_.clear();
  resume_timer_.cancel();
}

// Takes in a head or part: parsed or copied now, or (rendezvous) received into its buffer.
ucs_status_t Link::accept_am(const AmHeader& h, void* data, std::size_t length, bool rndv) {
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
      const StreamView stream = rt->thread_stream(slot->device());
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
void Link::recv_into(Incoming& in, std::uint64_t seq, std::uint32_t item, Frame buffer, std::size_t offset, void* desc,
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

void Link::on_received(void* request, ucs_status_t status, size_t, void* user_data) {
  ucp_request_free(request);
  auto* ctx = static_cast<RecvCtx*>(user_data);
  if (auto link = ctx->link.lock()) return link->received(ctx, status);
  delete ctx;
}

void Link::received(RecvCtx* ctx, ucs_status_t status) {
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

void Link::parse_head(Incoming& in, const std::uint8_t* p, std::size_t n) {
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

void Link::schedule_delivery() {
  if (delivery_scheduled_) return;
  delivery_scheduled_ = true;
  e_.defer([self = shared_from_this()] {
    self->delivery_scheduled_ = false;
    self->deliver();
  });
}

// Hands complete messages to the inbox, in order (outside UCX callbacks).
void Link::deliver() {
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

}  // namespace tessera::comm::detail::ucx
