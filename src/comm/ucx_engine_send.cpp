// Sending over UCX: a message as one head plus parts (active messages), large host frames
// through the shared ring when the peer took one (ucx_engine_ring.cpp), device frames sent
// directly or staged through pinned host buffers, and completion of the sender's callback.
#include <algorithm>

#include "tessera/core/device.hpp"
#include "ucx_engine_internal.hpp"

namespace tessera::comm::detail::ucx {

void Link::issue(std::shared_ptr<SendOp> op) {
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
      const auto& f = op->frames[item - 1];
      if (ring_takes(f->size())) ring_send(op, p, f->data(), f->size());
      else send_am(p, f->data(), f->size(), op, kHostMemory, {});
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
void Link::send_am(const AmHeader& h, const void* data, std::size_t size, const std::shared_ptr<SendOp>& op,
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
void Link::send_staged(std::uint64_t seq, std::uint32_t item, std::size_t offset, std::size_t item_size, Frame stage,
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

void Link::send_control(std::uint32_t kind, std::vector<std::uint8_t> payload) {
  AmHeader h;
  h.conn = peer_id_;
  h.kind = kind;
  auto* ctx = new PartCtx{weak_from_this(), nullptr, h, {}, std::move(payload)};
  if (!ep_) return part_done(ctx, UCS_ERR_NOT_CONNECTED);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &Link::on_sent;
  p.user_data = ctx;
  auto r = ucp_am_send_nbx(ep_, kAmId, &ctx->hdr, sizeof(AmHeader), ctx->payload.data(), ctx->payload.size(), &p);
  if (r == nullptr) return part_done(ctx, UCS_OK);
  if (UCS_PTR_IS_ERR(r)) return part_done(ctx, UCS_PTR_STATUS(r));
}

void Link::on_sent(void* request, ucs_status_t status, void* user_data) {
  ucp_request_free(request);
  auto* ctx = static_cast<PartCtx*>(user_data);
  if (auto link = ctx->link.lock()) return link->part_done(ctx, status);
  if (g_engine && ctx->stage) g_engine->return_stage_buffer(std::move(ctx->stage));
  delete ctx;
}

void Link::part_done(PartCtx* ctx, ucs_status_t status) {
  auto op = std::move(ctx->op);
  if (ctx->stage) e_.return_stage_buffer(std::move(ctx->stage));
  delete ctx;
  operation_done(op, status);
}

void Link::operation_done(const std::shared_ptr<SendOp>& op, ucs_status_t status) {
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

void Link::finish_op(const std::shared_ptr<SendOp>& op) {
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
      const StreamView stream = rt->thread_stream(job.device);
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

}  // namespace tessera::comm::detail::ucx
