// tcp:// transport: Boost.Asio sockets on the comm runtime's I/O thread. tls:// is the same
// code over Boost.Asio's SSL stream (OpenSSL): a TLS handshake before the hello, and the
// stream's reads and writes where tcp:// uses the socket's (see "TLS" below and tls_context.hpp).
//
// Small messages go through Asio (async_read_some into a 64 KiB buffer). The body of a large
// message, and every write, use plain non-blocking recvmsg/sendmsg on the socket with no size
// cap (Asio's composed read/write move at most 64 KiB per system call), waiting for readiness
// with async_wait only when the socket has nothing (more) to give or take.
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "../core/logging.hpp"
#include "frame_pool.hpp"
#include "inbox.hpp"
#include "log_limiter.hpp"
#include "tls_context.hpp"
#include "transports.hpp"

namespace tessera::comm::detail {

namespace {

using tcp = asio::ip::tcp;
using boost::system::error_code;

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
// A hello's body is read in pieces of at most this much (TcpSetup::read_hello_body).
constexpr std::size_t kHelloPiece = 256;

std::string endpoint_address(const tcp::endpoint& ep, const std::string& scheme = "tcp") {
  const auto a = ep.address();
  if (a.is_v6()) return scheme + "://[" + a.to_string() + "]:" + std::to_string(ep.port());
  return scheme + "://" + a.to_string() + ":" + std::to_string(ep.port());
}

struct HostPort {
  std::string host;
  std::string port;
};

// "scheme://host:port" (tcp://, or ucx://, whose connections start as TCP on that port).
HostPort parse_tcp_address(const std::string& address) {
  const auto scheme = address_scheme(address);
  const std::string prefix = scheme + "://";
  std::string rest = address.substr(prefix.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  HostPort hp;
  std::size_t colon = std::string::npos;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) throw CommError("bad IPv6 address in '" + address + "'");
    hp.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') throw CommError("bad address '" + address + "'");
      colon = close + 1;
    }
  } else {
    colon = rest.rfind(':');
    hp.host = rest.substr(0, colon);
  }
  if (colon != std::string::npos) hp.port = rest.substr(colon + 1);
  const bool digits = !hp.port.empty() && hp.port.size() <= 5 &&
                      hp.port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoul(hp.port) > 65535)
    throw CommError("address '" + address + "' needs a port: " + scheme + "://host:port (port 0 picks a free one)");
  return hp;
}

/** One of a listener's max_connections, held from accept until the socket closes. */
class ConnSlot {
 public:
  explicit ConnSlot(std::shared_ptr<std::atomic<std::size_t>> open) : open_(std::move(open)) {}
  ~ConnSlot() { release(); }
  ConnSlot(const ConnSlot&) = delete;
  ConnSlot& operator=(const ConnSlot&) = delete;
  void release() {
    if (open_) --*open_;
    open_.reset();
  }

 private:
  std::shared_ptr<std::atomic<std::size_t>> open_;
};

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

/** Connects (client) or takes an accepted socket (server), then handshakes; finishes once. */
class TcpSetup : public std::enable_shared_from_this<TcpSetup> {
 public:
  using Finish = std::function<void(std::shared_ptr<Comm>, std::exception_ptr)>;

  /** `tls_ctx` set: tls:// (the TLS handshake first); `scheme` names our and the peer's addresses. */
  TcpSetup(std::shared_ptr<asio::io_context> io, const CommOptions& options, std::string peer, Finish finish,
           std::string scheme = "tcp", std::shared_ptr<asio::ssl::context> tls_ctx = nullptr)
      : io_(io), socket_(*io), resolver_(*io), timer_(*io), options_(options), peer_(std::move(peer)),
        finish_(std::move(finish)), scheme_(std::move(scheme)), tls_ctx_(std::move(tls_ctx)) {}

  void connect(const HostPort& hp) {
    timer_.expires_after(options_.connect_timeout);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->done_) return;
      self->fail(std::make_exception_ptr(CommError("cannot connect to " + self->peer_ + ": timed out after " +
                                                   std::to_string(self->options_.connect_timeout.count()) + " ms")));
    });
    resolver_.async_resolve(hp.host, hp.port, [self = shared_from_this(), host = hp.host](
                                                  error_code ec, tcp::resolver::results_type results) {
      if (self->done_) return;
      if (ec)
        return self->fail(std::make_exception_ptr(
            CommError("cannot connect to " + self->peer_ + ": cannot resolve '" + host + "': " + ec.message())));
      asio::async_connect(self->socket_, results, [self](error_code ec, const tcp::endpoint&) {
        if (self->done_) return;
        if (ec)
          return self->fail(std::make_exception_ptr(CommError("cannot connect to " + self->peer_ + ": " + ec.message())));
        error_code ignored;
        self->socket_.set_option(tcp::no_delay(true), ignored);
        self->connector_ = true;
        self->begin(endpoint_address(self->socket_.local_endpoint(ignored), self->scheme_));
      });
    });
  }

  void accept(tcp::socket socket, const std::string& listener_address, std::unique_ptr<ConnSlot> slot) {
    socket_ = std::move(socket);
    slot_ = std::move(slot);
    error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    begin(listener_address);
  }

 private:
  tcp::socket& sock() { return tls_ ? tls_->next_layer() : socket_; }

  // The whole buffer out or in, over TLS when this is tls://.
  template <typename Buffers, typename Handler>
  void write_all(const Buffers& b, Handler&& h) {
    if (tls_) asio::async_write(*tls_, b, std::forward<Handler>(h));
    else asio::async_write(socket_, b, std::forward<Handler>(h));
  }
  template <typename Buffers, typename Handler>
  void read_all(const Buffers& b, Handler&& h) {
    if (tls_) asio::async_read(*tls_, b, std::forward<Handler>(h));
    else asio::async_read(socket_, b, std::forward<Handler>(h));
  }

  // One deadline for all of it, the TLS handshake included: a peer that opens TCP and never
  // finishes TLS costs its slot for handshake_timeout at most, as one that sends no hello.
  void begin(const std::string& our_address) {
    timer_.expires_after(options_.handshake_timeout);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->done_) return;
      self->fail(std::make_exception_ptr(HandshakeError("no handshake from " + self->peer_ + " within " +
                                                        std::to_string(self->options_.handshake_timeout.count()) +
                                                        " ms")));
    });
    if (!tls_ctx_) return handshake(our_address);
    tls_ = std::make_unique<TlsStream>(std::move(socket_), *tls_ctx_);
    const auto type = connector_ ? asio::ssl::stream_base::client : asio::ssl::stream_base::server;
    tls_->async_handshake(type, [self = shared_from_this(), our_address](error_code ec) {
      if (self->done_) return;
      if (ec) return self->io_failed("in", ec, "TLS handshake");
      self->handshake(our_address);
    });
  }

  // Hellos first (nonces, no secret), then, with a token, the connector's proof of it and, once
  // the listener has checked that, the listener's (prove()); a side goes on only after checking
  // the other's proof. See docs/protocol.md.
  void handshake(const std::string& our_address) {
    try {
      ours_ = make_hello(options_, our_address);
    } catch (const CommError& e) {
      return refuse(e.what());
    }
    // Write first, then read: a refusal then never discards our hello, so the peer learns why too.
    out_ = wire::encode_hello(ours_);
    write_all(asio::buffer(out_), [self = shared_from_this()](error_code ec, std::size_t) {
      if (self->done_) return;
      if (ec) return self->io_failed("sending", ec);
      self->read_all(asio::buffer(self->in_fixed_), [self](error_code ec, std::size_t) {
        if (self->done_) return;
        if (ec) return self->io_failed("reading", ec);
        std::uint32_t version = 0, n = 0;
        try {
          n = wire::decode_hello_fixed(self->in_fixed_.data(), version);
        } catch (const ProtocolError& e) {
          return self->refuse(e.what());
        }
        self->in_body_.clear();
        self->read_hello_body(version, n);  // n is at most kMaxHelloBody
      });
    });
  }

  // The peer's hello body, `n` bytes, in pieces: the buffer grows with what has arrived, at most
  // kHelloPiece ahead of it, never with what the prefix claims. A stranger that claims the
  // largest body and sends none of it costs one piece (issue 29: the whole claimed body was
  // allocated and zeroed up front, 64 KiB for 12 bytes sent).
  void read_hello_body(std::uint32_t version, std::size_t n) {
    const std::size_t have = in_body_.size();
    if (have == n) return hello_arrived(version);
    in_body_.resize(std::min(n, have + kHelloPiece));
    auto on_read = [self = shared_from_this(), version, n, have](error_code ec, std::size_t k) {
      if (self->done_) return;
      if (ec) return self->io_failed("reading", ec);
      self->in_body_.resize(have + k);
      self->read_hello_body(version, n);
    };
    const auto room = asio::buffer(in_body_.data() + have, in_body_.size() - have);
    if (tls_) tls_->async_read_some(room, std::move(on_read));
    else socket_.async_read_some(room, std::move(on_read));
  }

  void hello_arrived(std::uint32_t version) {
    wire::Hello theirs;
    try {
      theirs = wire::decode_hello_body(version, in_body_.data(), in_body_.size());
    } catch (const ProtocolError& e) {
      return refuse(e.what());
    }
    if (auto why = wire::check_hello(ours_, theirs); !why.empty()) return refuse(why);
    if (!(ours_.flags & wire::kHelloProves)) return succeed(std::move(theirs));
    prove(std::move(theirs));
  }

  // The token proofs, connector first (docs/protocol.md): the connector sends its proof and
  // then checks the listener's; the listener checks the connector's and only then computes and
  // sends its own. A listener that answered first handed every stranger an HMAC of the token
  // over known bytes, against which token guesses can be tested offline (issue 29).
  void prove(wire::Hello theirs) {
    theirs_ = std::move(theirs);
    std::vector<std::uint8_t> their_hello(in_fixed_.begin(), in_fixed_.end());
    their_hello.insert(their_hello.end(), in_body_.begin(), in_body_.end());
    connector_hello_ = connector_ ? out_ : their_hello;
    listener_hello_ = connector_ ? std::move(their_hello) : out_;
    try {
      expected_ = wire::handshake_proof(options_.token, connector_ ? wire::Role::listener : wire::Role::connector,
                                        connector_hello_, listener_hello_);
    } catch (const CommError& e) {
      return refuse(e.what());
    }
    proof_in_.assign(wire::kProofBytes, 0);
    if (connector_) return send_proof([self = shared_from_this()] { self->read_proof(); });
    read_proof();
  }

  // Ours, under our role; then `next`.
  template <typename Next>
  void send_proof(Next next) {
    try {
      proof_out_ = wire::handshake_proof(options_.token, connector_ ? wire::Role::connector : wire::Role::listener,
                                         connector_hello_, listener_hello_);
    } catch (const CommError& e) {
      return refuse(e.what());
    }
    write_all(asio::buffer(proof_out_), [self = shared_from_this(), next = std::move(next)](error_code ec, std::size_t) {
      if (self->done_) return;
      if (ec) return self->io_failed("sending", ec, "token proof");
      next();
    });
  }

  // The peer's, checked in constant time; a listener answers with its own only after that.
  void read_proof() {
    read_all(asio::buffer(proof_in_), [self = shared_from_this()](error_code ec, std::size_t) {
      if (self->done_) return;
      if (ec) return self->io_failed("reading", ec, "token proof");
      if (!wire::proofs_equal(self->proof_in_, self->expected_)) {
        if (self->connector_) {
          const std::vector<std::uint8_t> refused(wire::kProofRefused, wire::kProofRefused + wire::kProofBytes);
          return self->refuse(wire::proofs_equal(self->proof_in_, refused)
                                  ? "handshake token mismatch (the peer refused our proof: it holds another shared "
                                    "secret)"
                                  : "handshake token mismatch (the peer proved another shared secret)");
        }
        // The connector learns why, and nothing that depends on the token.
        return self->write_all(asio::buffer(wire::kProofRefused, wire::kProofBytes), [self](error_code, std::size_t) {
          self->refuse("handshake token mismatch (the peer proved another shared secret)");
        });
      }
      if (self->connector_) return self->succeed(std::move(self->theirs_));
      self->send_proof([self] { self->succeed(std::move(self->theirs_)); });
    });
  }

  void io_failed(const char* doing, error_code ec, const char* what = "hello") {
    std::string why;
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated) {
      why = "the peer closed the connection";
      // A tls:// listener closes a plain connection at once; a tcp:// one never answers TLS.
      if (!tls_ctx_ && std::string(doing) == "reading" && std::string(what) == "hello")
        why += " (a tls:// address reached with tcp://? Its listener closes plain connections)";
      else if (tls_ctx_ && connector_)
        why += " (TLS: a listener closes a connection whose certificate it refuses, or when it is at its limit of "
               "connections; is ours signed by its CA?)";
    } else if (is_tls_error(ec)) {
      why = "TLS refused: " + ec.message();
      if (tls_ && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER)
        why += " (the peer does not speak TLS: a tcp:// listener?)";
    } else {
      why = ec.message();
    }
    fail(std::make_exception_ptr(
        HandshakeError("handshake with " + peer_ + " failed while " + doing + " its " + what + ": " + why)));
  }

  void refuse(const std::string& why) {
    fail(std::make_exception_ptr(HandshakeError("handshake with " + peer_ + " refused: " + why)));
  }

  void succeed(wire::Hello theirs) {
    done_ = true;
    timer_.cancel();
    error_code ec;
    const auto local = endpoint_address(sock().local_endpoint(ec), scheme_);
    const auto remote = endpoint_address(sock().remote_endpoint(ec), scheme_);
    if (ec) return finish(nullptr, std::make_exception_ptr(CommError("connection to " + peer_ + " lost: " + ec.message())));
    PeerInfo info{theirs.version, std::move(theirs.name), std::move(theirs.address), std::move(theirs.transports)};
    auto comm = std::make_shared<TcpComm>(io_, std::move(socket_), std::move(tls_), options_, local, remote,
                                          std::move(info), std::move(slot_));
    comm->start();
    finish(std::move(comm), nullptr);
  }

  void fail(std::exception_ptr e) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    resolver_.cancel();
    error_code ignored;
    sock().close(ignored);
    if (slot_) slot_->release();
    finish(nullptr, std::move(e));
  }

  void finish(std::shared_ptr<Comm> comm, std::exception_ptr e) {
    auto f = std::move(finish_);
    finish_ = nullptr;
    try {
      f(std::move(comm), std::move(e));
    } catch (const std::exception& ex) {
      logging::error("comm: connect handler threw: {}", ex.what());
    }
  }

  std::shared_ptr<asio::io_context> io_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  CommOptions options_;
  std::string peer_;
  Finish finish_;
  bool done_ = false;
  bool connector_ = false;  // we dialled; else we accepted
  std::string scheme_;
  std::shared_ptr<asio::ssl::context> tls_ctx_;  // tls:// only
  std::unique_ptr<TlsStream> tls_;               // made from socket_ once TCP is up
  std::unique_ptr<ConnSlot> slot_;  // accepted: the listener's slot, handed on to the comm
  wire::Hello ours_, theirs_;
  std::vector<std::uint8_t> out_;
  std::vector<std::uint8_t> connector_hello_, listener_hello_;  // as sent, for the proofs
  std::vector<std::uint8_t> proof_out_, proof_in_, expected_;
  std::array<std::uint8_t, wire::kHelloFixedBytes> in_fixed_{};
  std::vector<std::uint8_t> in_body_;
};

class TcpListenerImpl : public std::enable_shared_from_this<TcpListenerImpl> {
 public:
  TcpListenerImpl(std::shared_ptr<asio::io_context> io, const CommOptions& options, AcceptHandler on_comm,
                  ListenErrorHandler on_error, std::shared_ptr<asio::ssl::context> tls_ctx = nullptr)
      : io_(io), acceptor_(*io), retry_(*io), options_(options), on_comm_(std::move(on_comm)),
        on_error_(std::move(on_error)), tls_ctx_(std::move(tls_ctx)) {}

  void bind(const std::string& requested) {
    auto hp = parse_tcp_address(requested);
    if (hp.host.empty()) hp.host = "0.0.0.0";
    try {
      tcp::resolver resolver(*io_);
      const auto results = resolver.resolve(hp.host, hp.port, tcp::resolver::passive);
      const tcp::endpoint ep = results.begin()->endpoint();
      acceptor_.open(ep.protocol());
      acceptor_.set_option(tcp::acceptor::reuse_address(true));
      acceptor_.bind(ep);
      acceptor_.listen(asio::socket_base::max_listen_connections);
      // The requested scheme stays: a ucx:// listener is this TCP listener (see ucx.cpp).
      address_ = endpoint_address(acceptor_.local_endpoint(), address_scheme(requested));
    } catch (const boost::system::system_error& e) {
      throw CommError("cannot listen on " + requested + ": " + e.code().message());
    }
  }

  const std::string& address() const noexcept { return address_; }

  void accept_next() {
    acceptor_.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
      if (self->stopped_) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        // Out of file descriptors and the like: back off (doubling up to a second) instead of
        // spinning, and say so at most once per interval.
        self->accept_backoff_ = std::min(std::max(self->accept_backoff_ * 2, kAcceptBackoffMin), kAcceptBackoffMax);
        if (std::size_t more = 0; self->accept_log_.allow(more))
          logging::warn("comm: accept on {} failed: {}; retrying in {} ms{}", self->address_, ec.message(),
                        self->accept_backoff_.count(), suppressed_text(more, "accept failures"));
        self->retry_.expires_after(self->accept_backoff_);
        self->retry_.async_wait([self](error_code ec) {
          if (!ec && !self->stopped_) self->accept_next();
        });
        return;
      }
      self->accept_backoff_ = std::chrono::milliseconds(0);
      error_code ignored;
      const auto peer = endpoint_address(socket.remote_endpoint(ignored), self->scheme_);
      if (self->open_->load() >= self->max_connections_) {
        if (!self->tls_ctx_) tell_full(socket, self->max_connections_);
        socket.close(ignored);  // at the cap: the descriptor goes back at once
        self->log_refusal(peer, std::to_string(self->max_connections_) +
                                    " connections are open, the limit (max_connections)");
        return self->accept_next();
      }
      ++*self->open_;
      auto slot = std::make_unique<ConnSlot>(self->open_);
      auto setup = std::make_shared<TcpSetup>(
          self->io_, self->options_, peer, [self, peer](std::shared_ptr<Comm> comm, std::exception_ptr e) {
            if (e) {
              self->log_refusal(peer, describe_exception(e));
              if (self->on_error_ && !self->stopped_) self->on_error_(peer, e);
              return;
            }
            if (self->stopped_) return comm->close();
            self->on_comm_(std::move(comm));
          },
          self->scheme_, self->tls_ctx_);
      setup->accept(std::move(socket), self->address_, std::move(slot));
      self->accept_next();
    });
  }

  /** Connections this listener holds now (in the handshake or open). */
  std::size_t open_connections() const noexcept { return open_->load(); }

  void stop() {
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
  }

 private:
  std::shared_ptr<asio::io_context> io_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  CommOptions options_;
  AcceptHandler on_comm_;
  ListenErrorHandler on_error_;
  std::string address_;
  std::shared_ptr<asio::ssl::context> tls_ctx_;  // tls://: every accepted socket does TLS first
  // Of the connections' addresses: "tls", or "tcp" (also under ucx://, see Comm::transport()).
  std::string scheme_ = tls_ctx_ ? "tls" : "tcp";
  bool stopped_ = false;
  std::size_t max_connections_ = effective_max_connections(options_);
  std::shared_ptr<std::atomic<std::size_t>> open_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::chrono::milliseconds accept_backoff_{0};
  LogLimiter accept_log_{kLogInterval};
  LogLimiter refusal_log_{std::chrono::seconds(1)};

  static constexpr std::chrono::milliseconds kAcceptBackoffMin{50}, kAcceptBackoffMax{1000};
  static constexpr std::chrono::seconds kLogInterval{10};

  static std::size_t effective_max_connections(const CommOptions& options) {
    if (options.max_connections > 0) return options.max_connections;
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 65536;
    return std::max<std::size_t>(16, static_cast<std::size_t>(lim.rlim_cur) / 4 * 3);
  }

  // A connection refused at the cap is told so (wire::kFullMagic), where its connector reads the
  // listener's hello: before issue 29 it only saw the connection close ("a tls:// address
  // reached with tcp://?"). 12 bytes fit any socket buffer, so the send never waits; what the
  // peer already sent is read first so that the close is a FIN rather than a reset. tls://
  // connections cannot be told before their TLS handshake, which is not worth doing at the cap.
  static void tell_full(tcp::socket& socket, std::size_t max_connections) {
    const int fd = socket.native_handle();
    char sink[4096];
    [[maybe_unused]] auto got = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    const auto cap = static_cast<std::uint32_t>(std::min<std::size_t>(max_connections, UINT32_MAX));
    const auto notice = wire::encode_full_notice(cap);
    [[maybe_unused]] auto sent = ::send(fd, notice.data(), notice.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  static std::string suppressed_text(std::size_t n, const char* what) {
    return n ? " (" + std::to_string(n) + " more " + what + " not logged)" : std::string();
  }

  void log_refusal(const std::string& peer, const std::string& why) {
    if (std::size_t more = 0; refusal_log_.allow(more))
      logging::warn("comm: {} refused a connection from {}: {}{}", address_, peer, why,
                    suppressed_text(more, "refusals"));
  }
};

class TcpListener final : public Listener {
 public:
  explicit TcpListener(std::shared_ptr<TcpListenerImpl> impl) : impl_(std::move(impl)), address_(impl_->address()) {}
  ~TcpListener() override { stop(); }
  const std::string& address() const override { return address_; }
  void stop() override {
    if (stopped_.exchange(true)) return;
    run_on_io_thread([impl = impl_] { impl->stop(); });
  }

 private:
  std::shared_ptr<TcpListenerImpl> impl_;
  std::string address_;
  std::atomic<bool> stopped_{false};
};

/** tcp://, and tls:// (the same over TLS; `tls` set). Also takes ucx:// addresses (ucx.cpp). */
class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(bool tls) : tls_(tls) {}
  std::string scheme() const override { return tls_ ? "tls" : "tcp"; }

  void connect(const std::string& address, const CommOptions& options, ConnectHandler done) override {
    auto& rt = CommRuntime::instance();
    HostPort hp;
    std::string scheme;
    std::shared_ptr<asio::ssl::context> ctx;
    try {
      hp = parse_tcp_address(address);
      if (address_scheme(address) == "tls") ctx = tls_context(options.security, /*for_listener=*/false);
      scheme = ctx ? "tls" : "tcp";  // a ucx:// connection's TCP start says tcp (Comm::transport())
    } catch (...) {
      rt.post([done, e = std::current_exception()] { done(nullptr, e); });
      return;
    }
    auto setup = std::make_shared<TcpSetup>(rt.io(), options, address, std::move(done), scheme, std::move(ctx));
    rt.post([setup, hp] { setup->connect(hp); });
  }

  std::unique_ptr<Listener> listen(const std::string& address, AcceptHandler on_comm, const CommOptions& options,
                                   ListenErrorHandler on_error) override {
    auto& rt = CommRuntime::instance();
    std::shared_ptr<asio::ssl::context> ctx;
    if (address_scheme(address) == "tls") ctx = tls_context(options.security, /*for_listener=*/true);
    auto impl = std::make_shared<TcpListenerImpl>(rt.io(), options, std::move(on_comm), std::move(on_error),
                                                  std::move(ctx));
    impl->bind(address);
    rt.post([impl] { impl->accept_next(); });
    return std::make_unique<TcpListener>(std::move(impl));
  }

 private:
  bool tls_;
};

}  // namespace

std::shared_ptr<Transport> make_tcp_transport() { return std::make_shared<TcpTransport>(false); }
std::shared_ptr<Transport> make_tls_transport() { return std::make_shared<TcpTransport>(true); }

}  // namespace tessera::comm::detail
