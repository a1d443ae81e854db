// One open tcp:// or tls:// connection (TcpConn, private to this file) and its Comm (TcpComm):
// the framing of messages (preamble, header, frames), writing, reading, receive back-pressure
// and closing. Every member of a TcpConn is touched on the I/O thread only.
//
// Small messages go through Asio (async_read_some into a 64 KiB buffer). The body of a large
// message, and every write, use plain non-blocking recvmsg/sendmsg on the socket with no size
// cap (Asio's composed read/write move at most 64 KiB per system call), waiting for readiness
// with async_wait only when the socket has nothing (more) to give or take. tls:// reads and
// writes through the TLS stream instead (write_tls, read_direct_tls).
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "../core/logging.hpp"
#include "frame_pool.hpp"
#include "inbox.hpp"
#include "tcp_internal.hpp"

namespace tessera::comm::detail::tcp_transport {

namespace {

constexpr std::size_t kReadBuffer = 64 * 1024;    // small messages are parsed out of this
constexpr std::size_t kDirectRead = 64 * 1024;    // a rest this large is read straight into place
// A message's frames are allocated as its bytes arrive, not when its preamble announces them:
// a direct read covers the frame being filled and further frames up to this many bytes beyond
// what the socket already holds (FIONREAD). So 65,536 announced frames of 16 KiB cost what was
// sent, not 65,536 allocations (about 260 MB touched: each small block's malloc header sits on a
// page of its own) kept after the peer leaves (issue 29, item 2). The price: a message of very
// many small frames arrives more slowly than when all were allocated at once (65,536 frames of
// 4 KiB: about 0.25 s of receiver CPU for 256 MiB against 0.19 s; benchmarks/comm_transfer
// --frames), since the allocator's heap then grows in small steps.
constexpr std::size_t kFrameWindow = 64 * 1024;
constexpr std::size_t kInlineHeader = 64 * 1024;  // headers this small share the preamble's buffer
constexpr std::size_t kMaxIovecs = 64;            // buffers gathered into one write
// Bytes one connection may move in a row before it lets the I/O thread run other handlers.
constexpr std::size_t kIoBudget = std::size_t{64} << 20;
// While waiting for the rest of a large message, wake up once this much has arrived.
constexpr std::size_t kRcvLowat = std::size_t{1} << 20;
// While paused by receive back-pressure, how often to look whether the owner took messages.
constexpr auto kResumePoll = std::chrono::milliseconds(1);
// TLS: a write of buffers up to this size in all is copied into one first.
constexpr std::size_t kTlsGather = 64 * 1024;

/** One message on its way out: preamble (with the header when small), header, frames. */
struct Out {
  std::vector<std::uint8_t> head;
  std::string header;  // empty when inlined into head
  std::vector<Frame> frames;
  Comm::SendCallback done;
};

/** The live socket of one TcpComm; every member is touched on the I/O thread only. */
class TcpConn : public std::enable_shared_from_this<TcpConn> {
 public:
  TcpConn(std::shared_ptr<asio::io_context> io, tcp::socket socket, std::unique_ptr<TlsStream> tls,
          const CommOptions& options, std::shared_ptr<Inbox> inbox, std::string peer, std::unique_ptr<ConnSlot> slot)
      : io_(std::move(io)), socket_(std::move(socket)), tls_(std::move(tls)), options_(options),
        inbox_(std::move(inbox)), peer_(std::move(peer)), resume_timer_(*io_), close_timer_(*io_),
        first_timer_(*io_), slot_(std::move(slot)) {}

  const CommOptions& options() const noexcept { return options_; }

  void start() {
    error_code ignored;
    sock().native_non_blocking(true, ignored);  // recvmsg/sendmsg below must never block
    rbuf_.resize(kReadBuffer);
    // Only accepted connections (they hold a listener's slot) must speak first.
    if (slot_ && options_.first_message_timeout.count() > 0) {
      first_timer_.expires_after(options_.first_message_timeout);
      first_timer_.async_wait([self = shared_from_this()](error_code ec) {
        if (ec || self->closed_ || self->got_message_) return;
        const std::string why = "no message within " + std::to_string(self->options_.first_message_timeout.count()) +
                                " ms of the handshake";
        logging::debug("comm: closing {}: {}", self->peer_, why);
        self->fail(std::make_exception_ptr(CommClosedError("comm to " + self->peer_ + ": " + why)), why);
      });
    }
    process();
  }

  void send(Out out) {
    if (CommRuntime::instance().on_io_thread()) {
      enqueue(std::move(out));
    } else {
      asio::post(*io_, [self = shared_from_this(), out = std::move(out)]() mutable {
        self->enqueue(std::move(out));
      });
    }
  }

  /**
   * Closes once what is queued has been written, or after close_timeout if the peer does not
   * take it (then the connection is reset and those sends fail). Never waits itself.
   */
  void close_local() {
    asio::post(*io_, [self = shared_from_this()] {
      if (self->closed_ || self->closing_) return;
      self->closing_ = true;
      if (!self->writing_) return self->fail(nullptr, "closed locally");
      self->close_timer_.expires_after(self->options_.close_timeout);
      self->close_timer_.async_wait([self](error_code ec) {
        if (ec || self->closed_) return;
        const std::string why = "closed locally; the peer did not take the queued messages within " +
                                std::to_string(self->options_.close_timeout.count()) + " ms";
        logging::warn("comm: {}: {}", self->peer_, why);
        error_code ignored;
        self->sock().set_option(asio::socket_base::linger(true, 0), ignored);  // reset, drop the rest
        self->fail(nullptr, why);
      });
    });
  }

 private:
  int fd() { return sock().native_handle(); }
  // The TCP socket: our own, or the one under the TLS stream.
  tcp::socket& sock() { return tls_ ? tls_->next_layer() : socket_; }

  // ---- writing -----------------------------------------------------------------------------
  void enqueue(Out out) {
    if (closed_ || closing_) {
      call_done(out.done, closed_error(peer_, closed_ ? close_text_ : "closed locally"));
      return;
    }
    queue_.push_back(std::move(out));
    if (!writing_) start_write();
  }

  void start_write() {
    inflight_.clear();
    std::size_t iovecs = 0;
    while (!queue_.empty()) {
      const std::size_t need = 2 + queue_.front().frames.size();
      if (!inflight_.empty() && iovecs + need > kMaxIovecs) break;
      iovecs += need;
      inflight_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    // Buffers point into inflight_, which no longer moves.
    wiov_.clear();
    auto add = [&](const void* p, std::size_t n) {
      if (n) wiov_.push_back({const_cast<void*>(p), n});
    };
    for (const auto& o : inflight_) {
      add(o.head.data(), o.head.size());
      add(o.header.data(), o.header.size());
      for (const auto& f : o.frames) add(f->data(), f->size());
    }
    wnext_ = 0;
    writing_ = true;
    write_some(/*from_enqueue=*/true);
  }

  // Writes until done, the socket is full (then waits for room) or the budget is spent.
  void write_some(bool from_enqueue) {
    if (tls_) return write_tls();
    std::size_t moved = 0;
    while (wnext_ < wiov_.size()) {
      if (moved >= kIoBudget) {
        asio::post(*io_, [self = shared_from_this()] {
          if (!self->closed_) self->write_some(false);
        });
        return;
      }
      msghdr mh{};
      mh.msg_iov = wiov_.data() + wnext_;
      mh.msg_iovlen = std::min<std::size_t>(wiov_.size() - wnext_, IOV_MAX);
      const auto k = ::sendmsg(fd(), &mh, MSG_NOSIGNAL);
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          socket_.async_wait(tcp::socket::wait_write, [self = shared_from_this()](error_code ec) {
            if (self->closed_) return;
            if (ec) return self->on_write(ec);
            self->write_some(false);
          });
          return;
        }
        return on_write(error_code(errno, boost::system::system_category()));
      }
      moved += static_cast<std::size_t>(k);
      advance(wiov_, wnext_, static_cast<std::size_t>(k));
    }
    // Sent. Completions never run inside send(): a caller may hold a lock its callback takes.
    if (from_enqueue) asio::post(*io_, [self = shared_from_this()] { self->on_write({}); });
    else on_write({});
  }

  // TLS: the stream encrypts, so no sendmsg. Many small buffers (a batch of small messages)
  // are gathered into one so they make one TLS record and one system call, not one each.
  void write_tls() {
    std::vector<asio::const_buffer> bufs;
    std::size_t total = 0;
    for (std::size_t i = wnext_; i < wiov_.size(); ++i) {
      bufs.emplace_back(wiov_[i].iov_base, wiov_[i].iov_len);
      total += wiov_[i].iov_len;
    }
    if (bufs.size() > 1 && total <= kTlsGather) {
      tls_gather_.clear();
      for (const auto& b : bufs)
        tls_gather_.insert(tls_gather_.end(), static_cast<const std::uint8_t*>(b.data()),
                           static_cast<const std::uint8_t*>(b.data()) + b.size());
      bufs.assign(1, asio::buffer(tls_gather_));
    }
    // Completions always come through the io_context, never inside send().
    asio::async_write(*tls_, bufs, [self = shared_from_this()](error_code ec, std::size_t) {
      if (self->closed_) return;
      self->on_write(ec);
    });
  }

  // Drops n bytes from the front of iov[next...].
  static void advance(std::vector<iovec>& iov, std::size_t& next, std::size_t n) {
    while (n > 0 && next < iov.size()) {
      auto& v = iov[next];
      if (n >= v.iov_len) {
        n -= v.iov_len;
        ++next;
      } else {
        v.iov_base = static_cast<char*>(v.iov_base) + n;
        v.iov_len -= n;
        n = 0;
      }
    }
  }

  void on_write(error_code ec) {
    if (!writing_) return;
    writing_ = false;
    auto sent = std::move(inflight_);
    inflight_.clear();
    wiov_.clear();
    if (ec || closed_) {
      const std::string why = closed_ ? close_text_ : "write failed: " + ec.message();
      for (auto& o : sent) call_done(o.done, closed_error(peer_, why));
      fail(std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": " + why)), why);
      return;
    }
    for (auto& o : sent) call_done(o.done, nullptr);
    sent.clear();  // frames released before anything else runs
    if (closed_) return;
    if (!queue_.empty()) start_write();
    else if (closing_) fail(nullptr, "closed locally");
  }

  // ---- reading -----------------------------------------------------------------------------
  // Target 0 is the header, 1 + i frame i; frames are allocated when reached (allocate_targets).
  std::size_t ntargets() const noexcept { return 1 + in_lens_.size(); }
  std::uint8_t* target_data(std::size_t i) {
    return i == 0 ? reinterpret_cast<std::uint8_t*>(in_header_.get())
                  : static_cast<std::uint8_t*>(in_frames_[i - 1]->data());
  }
  std::size_t target_size(std::size_t i) const { return i == 0 ? in_header_size_ : in_lens_[i - 1]; }

  // Allocates the frames of targets up to `last` (inclusive); false (the connection failed)
  // when memory ran out.
  bool allocate_targets(std::size_t last) {
    try {
      while (in_frames_.size() < last) in_frames_.push_back(allocate_frame(in_lens_[in_frames_.size()]));
      return true;
    } catch (const std::bad_alloc&) {
      protocol_error("cannot allocate " + std::to_string(in_lens_[in_frames_.size()]) + " bytes for a frame");
      return false;
    }
  }

  // A read buffer grown for a long preamble (8 bytes a frame) goes back to kReadBuffer once what
  // it holds fits, so a connection does not keep both it and the frame sizes read out of it.
  // Called once the preamble was read out of it and when a message is done, never while a
  // preamble is still arriving (begin_message grew it for that).
  void shrink_read_buffer() {
    const std::size_t rest = rend_ - rbeg_;
    if (rbuf_.size() <= kReadBuffer || rest > kReadBuffer) return;
    std::vector<std::uint8_t> small(kReadBuffer);
    std::memcpy(small.data(), rbuf_.data() + rbeg_, rest);
    rbuf_.swap(small);
    rbeg_ = 0;
    rend_ = rest;
  }

  void read_more() {
    if (rbeg_ == rend_) {
      rbeg_ = rend_ = 0;
    } else if (rbeg_ > 0) {
      std::memmove(rbuf_.data(), rbuf_.data() + rbeg_, rend_ - rbeg_);
      rend_ -= rbeg_;
      rbeg_ = 0;
    }
    auto on_read = [self = shared_from_this()](error_code ec, std::size_t n) {
      if (self->closed_) return;
      if (ec) return self->on_read_error(ec, n);
      self->rend_ += n;
      self->process();
    };
    const auto room = asio::buffer(rbuf_.data() + rend_, rbuf_.size() - rend_);
    if (tls_) tls_->async_read_some(room, std::move(on_read));
    else socket_.async_read_some(room, std::move(on_read));
  }

  // Parses what rbuf_ holds, then asks for more.
  void process() {
    while (!closed_) {
      const std::size_t avail = rend_ - rbeg_;
      if (!in_body_) {
        if (backlogged()) return pause();
        if (avail < wire::kPreambleFixedBytes) return read_more();
        if (!begin_message(avail)) return;  // failed, or needs more bytes (read issued)
        continue;
      }
      copy_from_buffer();
      if (tgt_ == ntargets()) {
        finish_message();
        continue;
      }
      if (in_total_ - in_got_ >= kDirectRead) return read_direct();
      return read_more();
    }
  }

  // ---- receive back-pressure (Backlog, inbox.hpp) ------------------------------------------------
  bool backlogged() { return backlog_.over(*inbox_); }

  // Stops reading until the owner takes messages (polled: the inbox has no hook for it).
  void pause() {
    resume_timer_.expires_after(kResumePoll);
    resume_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->closed_) return;
      self->process();
    });
  }

  // Validates the preamble in rbuf_ and allocates the message; false when not (yet) possible.
  bool begin_message(std::size_t avail) {
    const std::uint8_t* p = rbuf_.data() + rbeg_;
    const auto pre = wire::decode_preamble_fixed(p);
    if (auto error = check_preamble(pre, options_); !error.empty()) {
      protocol_error(error);
      return false;
    }
    const std::size_t need = wire::kPreambleFixedBytes + 8 * std::size_t{pre.nframes};
    if (avail < need) {
      if (rbuf_.size() < need) {
        std::memmove(rbuf_.data(), p, avail);
        rbeg_ = 0;
        rend_ = avail;
        rbuf_.resize(need);
      }
      read_more();
      return false;
    }
    std::uint64_t total = 0;
    if (auto error = read_frame_sizes(p, pre, options_, in_lens_, total); !error.empty()) {
      protocol_error(error);
      return false;
    }
    try {
      reserve_header(pre.header_bytes);
      in_frames_.clear();  // allocated as the bytes arrive (allocate_targets)
    } catch (const std::bad_alloc&) {
      protocol_error("cannot allocate " + std::to_string(pre.header_bytes) + " bytes for a message header");
      return false;
    }
    rbeg_ += need;
    shrink_read_buffer();
    in_body_ = true;
    tgt_ = 0;
    tgt_off_ = 0;
    in_total_ = total;
    in_got_ = 0;
    return true;
  }

  // Room for the header the preamble announced. Never zero-filled (std::string::resize would
  // write every page at once): a peer that announces a large header and sends little of it
  // makes only the pages it filled resident, as with frames (aligned_alloc, frame_pool.cpp).
  void reserve_header(std::size_t n) {
    if (n > in_header_cap_) {
      in_header_.reset();
      in_header_cap_ = 0;
      in_header_.reset(new char[n]);
      in_header_cap_ = n;
    }
    in_header_size_ = n;
  }

  void skip_full_targets() {
    while (tgt_ < ntargets() && tgt_off_ == target_size(tgt_)) {
      ++tgt_;
      tgt_off_ = 0;
    }
  }

  void copy_from_buffer() {
    skip_full_targets();
    while (rbeg_ < rend_ && tgt_ < ntargets()) {
      if (!allocate_targets(tgt_)) return;
      const std::size_t n = std::min(rend_ - rbeg_, target_size(tgt_) - tgt_off_);
      std::memcpy(target_data(tgt_) + tgt_off_, rbuf_.data() + rbeg_, n);
      rbeg_ += n;
      tgt_off_ += n;
      in_got_ += n;
      skip_full_targets();
    }
  }

  // The rest of a large message goes straight into its buffers: big scatter reads for as long
  // as the socket has data, then a wait for more.
  // It covers the target being filled and the next ones up to kFrameWindow bytes past what the
  // socket holds already (tls://: past the target being filled), allocated now; direct_end_ is
  // the first target it leaves out.
  void read_direct() {
    riov_.clear();
    std::size_t window = kFrameWindow;
    if (!tls_ && tgt_ + 1 < ntargets()) {  // one target left: it is the whole window anyway
      int queued = 0;
      if (::ioctl(fd(), FIONREAD, &queued) == 0 && queued > 0) window += static_cast<std::size_t>(queued);
    }
    std::size_t covered = 0, end = tgt_;
    for (; end < ntargets() && (end == tgt_ || covered < window); ++end)
      covered += target_size(end) - (end == tgt_ ? tgt_off_ : 0);
    if (!allocate_targets(end - 1)) return;
    for (std::size_t i = tgt_; i < end; ++i) {
      const std::size_t off = i == tgt_ ? tgt_off_ : 0;
      if (target_size(i) > off) riov_.push_back({target_data(i) + off, target_size(i) - off});
    }
    direct_end_ = end;
    rnext_ = 0;
    if (tls_) return read_direct_tls();
    read_direct_some();
  }

  // TLS: the stream decrypts into the message's buffers until they are full.
  void read_direct_tls() {
    std::vector<asio::mutable_buffer> bufs;
    for (const auto& v : riov_) bufs.emplace_back(v.iov_base, v.iov_len);
    asio::async_read(*tls_, bufs, [self = shared_from_this()](error_code ec, std::size_t n) {
      if (self->closed_) return;
      self->in_got_ += n;
      if (ec) return self->on_read_error(ec, 0);
      self->direct_done();
    });
  }

  void read_direct_some() {
    std::size_t moved = 0;
    while (rnext_ < riov_.size()) {
      if (moved >= kIoBudget) {
        asio::post(*io_, [self = shared_from_this()] {
          if (!self->closed_) self->read_direct_some();
        });
        return;
      }
      msghdr mh{};
      mh.msg_iov = riov_.data() + rnext_;
      mh.msg_iovlen = std::min<std::size_t>(riov_.size() - rnext_, IOV_MAX);
      const auto k = ::recvmsg(fd(), &mh, 0);
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          set_rcvlowat(static_cast<int>(std::min<std::uint64_t>(in_total_ - in_got_, kRcvLowat)));
          socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](error_code ec) {
            if (self->closed_) return;
            if (ec) return self->on_read_error(ec, 0);
            self->read_direct_some();
          });
          return;
        }
        return on_read_error(error_code(errno, boost::system::system_category()), 0);
      }
      if (k == 0) return on_read_error(asio::error::eof, 0);
      moved += static_cast<std::size_t>(k);
      in_got_ += static_cast<std::size_t>(k);
      advance(riov_, rnext_, static_cast<std::size_t>(k));
    }
    set_rcvlowat(1);
    direct_done();
  }

  // The targets a direct read covered are full: the message is done, or the next read begins.
  void direct_done() {
    riov_.clear();
    tgt_ = direct_end_;
    tgt_off_ = 0;
    if (tgt_ == ntargets()) finish_message();
    process();
  }

  // SO_RCVLOWAT: wake the reader of a large message only once this much has arrived (or the
  // kernel needs the buffer drained), so each wake-up moves a big block, not one segment.
  void set_rcvlowat(int v) {
    if (v == rcvlowat_) return;
    ::setsockopt(fd(), SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v);
    rcvlowat_ = v;
  }

  void finish_message() {
    if (!allocate_targets(in_lens_.size())) return;  // empty frames at the end were skipped, not reached
    Message msg;
    try {
      decode_header(in_header_.get(), in_header_size_, msg);
    } catch (const ProtocolError& e) {
      protocol_error(e.what());
      return;
    }
    msg.frames = std::move(in_frames_);
    in_frames_.clear();
    if (in_lens_.capacity() > 1024) in_lens_ = {};  // a message of many frames keeps no memory after it
    else in_lens_.clear();
    shrink_read_buffer();
    in_body_ = false;
    if (!got_message_) {
      got_message_ = true;
      first_timer_.cancel();
    }
    std::size_t bytes = in_header_size_;
    for (const auto& f : msg.frames) bytes += f->size();
    if (in_header_cap_ > kReadBuffer) {
      in_header_.reset();
      in_header_cap_ = 0;
    }
    backlog_.pushed(bytes);
    inbox_->push(std::move(msg));
  }

  void on_read_error(error_code ec, std::size_t n) {
    if (closed_) return;
    std::string why;
    bool mid_message = false;
    // A TLS peer that closes without close_notify (as fail() below does) reads as truncated.
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated) {
      if (in_body_) {
        mid_message = true;
        why = "peer closed the connection in the middle of a message (" + std::to_string(in_got_ + n) +
              " of " + std::to_string(in_total_) + " bytes received)";
      } else if (rend_ > rbeg_) {
        mid_message = true;
        why = "peer closed the connection in the middle of a message preamble";
      } else {
        why = "peer closed the connection";
      }
    } else {
      mid_message = true;
      why = "read failed: " + ec.message();
    }
    if (mid_message) logging::warn("comm: closing {}: {}", peer_, why);
    else logging::debug("comm: {}: {}", peer_, why);
    fail(std::make_exception_ptr(CommClosedError("comm to " + peer_ + ": " + why)), why);
  }

  void protocol_error(const std::string& why) {
    logging::warn("comm: closing {}: protocol error: {}", peer_, why);
    fail(std::make_exception_ptr(ProtocolError("protocol error from " + peer_ + ": " + why)), why);
  }

  // Closes the socket, tells the inbox (reason null: it already knows), fails queued sends.
  void fail(std::exception_ptr reason, const std::string& why) {
    if (closed_) return;
    closed_ = true;
    close_text_ = why;
    resume_timer_.cancel();
    close_timer_.cancel();
    first_timer_.cancel();
    error_code ignored;
    sock().shutdown(tcp::socket::shutdown_both, ignored);
    sock().close(ignored);
    if (slot_) slot_->release();
    if (reason) inbox_->push_close(reason);
    auto queued = std::move(queue_);
    queue_.clear();
    for (auto& o : queued) call_done(o.done, closed_error(peer_, why));
    if (writing_) {  // a write was waiting for room: it fails now, not when Asio says so
      writing_ = false;
      auto inflight = std::move(inflight_);
      inflight_.clear();
      wiov_.clear();
      for (auto& o : inflight) call_done(o.done, closed_error(peer_, why));
    }
    in_frames_.clear();
    in_lens_ = {};  // its memory too: 8 bytes per announced frame
    in_header_.reset();
    in_header_cap_ = 0;
    riov_.clear();
  }

  std::shared_ptr<asio::io_context> io_;
  tcp::socket socket_;               // tcp://; unused (not open) under TLS
  std::unique_ptr<TlsStream> tls_;   // tls://: the stream over the socket
  std::vector<std::uint8_t> tls_gather_;
  CommOptions options_;
  std::shared_ptr<Inbox> inbox_;
  std::string peer_;
  asio::steady_timer resume_timer_, close_timer_, first_timer_;
  std::unique_ptr<ConnSlot> slot_;  // null on connections we dialled
  bool got_message_ = false;
  bool closed_ = false;
  bool closing_ = false;
  std::string close_text_;
  // write side
  std::deque<Out> queue_;
  std::vector<Out> inflight_;
  std::vector<iovec> wiov_;
  std::size_t wnext_ = 0;
  bool writing_ = false;
  // read side
  std::vector<std::uint8_t> rbuf_;
  std::size_t rbeg_ = 0, rend_ = 0;
  bool in_body_ = false;
  std::unique_ptr<char[]> in_header_;  // not zeroed: see reserve_header
  std::size_t in_header_size_ = 0, in_header_cap_ = 0;
  std::vector<std::uint64_t> in_lens_;  // the frames' sizes, from the preamble
  std::vector<Frame> in_frames_;         // the frames allocated so far (a prefix of in_lens_)
  std::size_t tgt_ = 0, tgt_off_ = 0;
  std::size_t direct_end_ = 0;  // read_direct: the first target past those it covers
  std::uint64_t in_total_ = 0, in_got_ = 0;
  std::vector<iovec> riov_;
  std::size_t rnext_ = 0;
  Backlog backlog_{options_};
  int rcvlowat_ = 1;
};

class TcpComm final : public Comm {
 public:
  TcpComm(std::shared_ptr<asio::io_context> io, tcp::socket socket, std::unique_ptr<TlsStream> tls,
          const CommOptions& options, std::string local, std::string peer, PeerInfo info,
          std::unique_ptr<ConnSlot> slot)
      : Comm(std::move(local), std::move(peer), std::move(info)) {
    conn_ = std::make_shared<TcpConn>(std::move(io), std::move(socket), std::move(tls), options, inbox(),
                                      peer_address(), std::move(slot));
  }
  ~TcpComm() override { close(); }

  void start() { conn_->start(); }

  void close() override {
    if (closed_locally_.exchange(true)) return;
    inbox()->push_close(
        std::make_exception_ptr(CommClosedError("comm to " + peer_address() + " was closed locally")));
    conn_->close_local();
  }

 protected:
  void do_send(Message msg, SendCallback done) override {
    if (is_closed()) return call_done(done, closed_error(peer_address(), close_reason()));
    Out out;
    std::vector<std::uint64_t> lens;
    if (auto error = prepare_send(msg, conn_->options(), peer_address(), "tcp:// and tls:// send host memory only",
                                  out.header, lens))
      return call_done(done, std::move(error));
    out.head = wire::encode_preamble(out.header.size(), lens);
    if (out.header.size() <= kInlineHeader) {
      out.head.insert(out.head.end(), out.header.begin(), out.header.end());
      out.header.clear();
    }
    out.frames = std::move(msg.frames);
    out.done = std::move(done);
    conn_->send(std::move(out));
  }

 private:
  std::shared_ptr<TcpConn> conn_;
  std::atomic<bool> closed_locally_{false};
};

}  // namespace

std::shared_ptr<Comm> start_comm(std::shared_ptr<asio::io_context> io, tcp::socket socket,
                                 std::unique_ptr<TlsStream> tls, const CommOptions& options, std::string local,
                                 std::string peer, PeerInfo info, std::unique_ptr<ConnSlot> slot) {
  auto comm = std::make_shared<TcpComm>(std::move(io), std::move(socket), std::move(tls), options, std::move(local),
                                        std::move(peer), std::move(info), std::move(slot));
  comm->start();
  return comm;
}

}  // namespace tessera::comm::detail::tcp_transport
