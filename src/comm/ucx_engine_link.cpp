// A ucx:// link's life: the endpoint to its peer, the handshake ping, the control connection
// it closes over, and failures (docs/ucx.md).
#include <cstdio>
#include <cstdlib>

#include "../core/logging.hpp"
#include "ucx_engine_internal.hpp"

namespace tessera::comm::detail::ucx {

void Link::connect(const Offer& theirs) {
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

void Link::ping(std::chrono::milliseconds timeout, std::function<void(std::exception_ptr)> done) {
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

void Link::start(std::shared_ptr<Comm> ctl) {
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

void Link::abandon() {
  auto self = shared_from_this();
  abandoned_ = true;
  ping_done_ = nullptr;
  ping_timer_.cancel();
  drop_incoming();
  drop_rings();
  close_ep();
  unregister();
}

std::string Link::describe_lanes() const {
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

void Link::on_pong() {
  if (!ping_done_) return;
  ping_timer_.cancel();
  auto done = std::move(ping_done_);
  ping_done_ = nullptr;
  done(nullptr);
}

void Link::on_ctl_message(const Message& m) {
  if (m.op != kBye) {
    logging::warn("comm: {}: unexpected '{}' on the UCX control connection", peer_, m.op);
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
    logging::warn("comm: {}: the peer closed; {} of its messages did not arrive within {} ms", self->peer_,
                 *self->peer_sent_ - self->next_deliver_, self->options_.close_timeout.count());
    self->peer_closed();
  });
}

void Link::on_ctl_close(std::exception_ptr reason) {
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

void Link::peer_closed() {
  if (failed_ || closed_) return;
  fail(std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": peer closed the connection")), false);
}

/** close() of the comm: what was sent gets close_timeout to complete, then goodbye. */
void Link::close_local() {
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
    logging::warn("comm: {}: {}", self->peer_, why);
    self->fail_ops(why);
    self->finish_close();
  });
}

void Link::finish_close() {
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
  drop_rings();
  close_ep();
  unregister();
}

void Link::fail_later(std::exception_ptr reason) {
  e_.defer([self = shared_from_this(), reason] { self->fail(reason); });
}

void Link::protocol_error(const std::string& why) {
  logging::warn("comm: closing {}: protocol error: {}", peer_, why);
  fail_later(std::make_exception_ptr(ProtocolError("protocol error from " + peer_ + ": " + why)));
}

void Link::fail(std::exception_ptr reason, bool log) {
  auto self = shared_from_this();
  if (failed_ || closed_ || abandoned_) return;
  failed_ = true;
  close_text_ = describe_exception(reason);
  if (log) logging::debug("comm: {}: {}", peer_, close_text_);
  close_timer_.cancel();
  inbox_->push_close(reason);
  fail_ops(close_text_);
  drop_incoming();
  drop_rings();
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

void Link::fail_ops(const std::string& why) {
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

void Link::on_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  if (!g_engine) return;
  const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(arg));
  auto it = g_engine->links.find(id);
  if (it == g_engine->links.end()) return;
  auto link = it->second;
  link->fail_later(std::make_exception_ptr(
      CommClosedError("comm to " + link->peer_ + ": UCX reports the connection broken: " + status_text(status))));
}

void Link::on_ep_closed(void* request, ucs_status_t, void*) {
  ucp_request_free(request);
  if (g_engine && g_engine->closing_eps > 0) --g_engine->closing_eps;
}

void Link::close_ep() {
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

}  // namespace tessera::comm::detail::ucx
