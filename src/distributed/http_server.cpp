#include "http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <optional>
#include <thread>

#include "../core/logging.hpp"
#include "comm/log_limiter.hpp"
#include "tessera/core/error.hpp"

namespace tessera::distributed {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Limits on what a client may send: the dashboards take GETs with no body, so anything bigger is
// a mistake or an attack, answered with 431/413 rather than buffered.
constexpr std::uint32_t kHeaderLimit = 16 * 1024;
constexpr std::uint64_t kBodyLimit = 64 * 1024;

std::string server_header() { return "tessera"; }

bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

// What the server shares with its connections: they may outlive the HttpServer object by a
// moment (their handlers are destroyed with the io_context), so they hold it by shared_ptr.
struct Shared {
  HttpServer::Handler handler;
  std::chrono::steady_clock::duration idle;
  std::string name;
  std::atomic<std::size_t> open{0};  // sessions alive (HttpServerOptions::max_connections)
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // Counted from here to destruction, when the socket closes.
  Session(tcp::socket socket, std::shared_ptr<Shared> shared) : stream_(std::move(socket)), shared_(std::move(shared)) {
    ++shared_->open;
  }
  ~Session() { --shared_->open; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    // The deadline covers the whole request: a client that connects and sends nothing, or
    // trickles a header byte by byte, is dropped when it passes.
    stream_.expires_after(shared_->idle);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted)
      return close();
    if (ec && is_parse_error(ec)) {
      // Answer what can be answered, then close: after a bad request the stream's framing is lost.
      unsigned status = 400;
      if (ec == http::error::header_limit) status = 431;
      if (ec == http::error::body_limit) status = 413;
      HttpResponse r;
      r.status = status;
      r.body = "bad request: " + ec.message() + "\n";
      return write(r, 11, false, true);
    }
    if (ec) return close();  // reset by the peer and the like

    const auto& req = parser_->get();
    bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    const bool head = req.method() == http::verb::head;
    HttpResponse r;
    if (req.method() != http::verb::get && !head) {
      r.status = 405;
      r.body = "method not allowed: " + std::string(req.method_string()) + " (only GET and HEAD)\n";
    } else if (req.target().empty() || req.target().front() != '/') {
      r.status = 400;
      r.body = "bad request: the target must be a path starting with '/'\n";
      keep_alive = false;  // not a client worth keeping: as for a request that does not parse
    } else {
      HttpRequest hr;
      hr.method = std::string(req.method_string());
      hr.target = std::string(req.target());
      hr.path = hr.target.substr(0, hr.target.find('?'));
      try {
        r = shared_->handler(hr);
      } catch (const std::exception& e) {
        logging::warn("{}: {} {} failed: {}", shared_->name, hr.method, hr.target, e.what());
        r = HttpResponse{};
        r.status = 500;
        r.body = std::string("internal error: ") + e.what() + "\n";
      }
    }
    if (r.next_event && !head && r.status == 200) return start_events(std::move(r), version);
    write(r, version, head, !keep_alive);
  }

  // ---- server-sent events: a response that never ends ----------------------------------------
  void start_events(HttpResponse r, unsigned version) {
    next_event_ = std::move(r.next_event);
    events_left_ = r.max_events;
    event_interval_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(r.event_interval > 0 ? r.event_interval : 0.25));
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::ok, version);
    res->set(http::field::server, server_header());
    res->set(http::field::content_type, "text/event-stream");
    res->set(http::field::cache_control, "no-cache");
    res->chunked(true);  // each event a chunk; the length of the whole is never known
    // Not reused after a stream that ends (max_events): this connection reads nothing more.
    res->keep_alive(false);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    // The timeouts are ours from here: a stream's read (below) waits for ever, its writes are
    // watched by the timer.
    stream_.expires_never();
    writing_since_ = std::chrono::steady_clock::now();
    http::async_write_header(stream_, *sr, [self = shared_from_this(), res, sr](beast::error_code ec, std::size_t) {
      self->writing_since_.reset();
      if (ec) return self->close();
      self->watch_for_close();
      self->send_event();
    });
  }

  // A client that closes the stream (a tab closed, EventSource.close()) is seen by a read; what
  // it might send meanwhile is dropped.
  void watch_for_close() {
    stream_.async_read_some(asio::buffer(discard_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close_events();
      self->watch_for_close();
    });
  }

  void send_event() {
    if (closed_ || ending_) return;
    if (writing_since_) {
      // The last event is still on its way: this client reads slower than we send. Skip a round
      // rather than queue; give it up when it has read nothing for the idle timeout.
      if (std::chrono::steady_clock::now() - *writing_since_ > shared_->idle) return close_events();
      return schedule_event();
    }
    std::string data;
    try {
      data = next_event_();
    } catch (const std::exception& e) {
      logging::warn("{}: an event failed: {}", shared_->name, e.what());
      return close_events();
    }
    if (data.empty()) return schedule_event();
    auto buf = std::make_shared<std::string>(std::move(data));
    writing_since_ = std::chrono::steady_clock::now();
    const bool last = events_left_ == 1;
    if (events_left_ > 0) --events_left_;
    asio::async_write(stream_, http::make_chunk(asio::buffer(*buf)),
                      [self = shared_from_this(), buf, last](beast::error_code ec, std::size_t) {
                        self->writing_since_.reset();
                        if (ec) return self->close_events();
                        if (last) self->end_events();
                      });
    if (!last) schedule_event();
  }

  // The stream's end (max_events sent): the last chunk, then our side closes; the connection
  // goes when the client closes its side (seen by watch_for_close's read), or 2 s later.
  void end_events() {
    ending_ = true;
    asio::async_write(stream_, http::make_chunk_last(), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close_events();
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      if (!self->timer_) self->timer_.emplace(self->stream_.get_executor());
      self->timer_->expires_after(std::chrono::seconds(2));
      self->timer_->async_wait([self](beast::error_code e) {
        if (!e) self->close_events();
      });
    });
  }

  void schedule_event() {
    if (!timer_) timer_.emplace(stream_.get_executor());
    timer_->expires_after(event_interval_);
    timer_->async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->send_event();
    });
  }

  void close_events() {
    if (closed_) return;
    closed_ = true;
    if (timer_) timer_->cancel();
    close();
  }

  void write(const HttpResponse& r, unsigned version, bool head, bool close_after) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version);
    res->set(http::field::server, server_header());
    res->set(http::field::content_type, r.content_type);
    if (r.status == 405) res->set(http::field::allow, "GET, HEAD");
    res->keep_alive(!close_after);
    if (head) {
      res->content_length(r.body.size());  // what a GET would send, and no body
    } else {
      res->body() = r.body;
      res->prepare_payload();
    }
    stream_.expires_after(shared_->idle);  // a client that stops reading is dropped too
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, close_after](beast::error_code ec, std::size_t) {
                        // end_of_stream: Beast's word that this message ends the connection.
                        if (ec && ec != http::error::end_of_stream) return self->close();
                        if (close_after || ec) return self->linger();
                        self->read();
                      });
  }

  // Closing a socket with unread bytes in it sends a reset, which across a network can destroy
  // the response before the client reads it (a 400 or 431 sent while the request was still
  // arriving; RFC 7230 6.6). So: end our side, read and drop what the client still sends until
  // it closes too, then close, all within a short deadline.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::min<std::chrono::steady_clock::duration>(shared_->idle, std::chrono::seconds(2)));
    drain();
  }
  void drain() {
    stream_.async_read_some(asio::buffer(discard_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      self->drain();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Shared> shared_;
  std::array<char, 4096> discard_;
  // Server-sent events (start_events): the source, its pace, and the write in progress.
  std::function<std::string()> next_event_;
  std::chrono::steady_clock::duration event_interval_{};
  std::optional<asio::steady_timer> timer_;
  std::optional<std::chrono::steady_clock::time_point> writing_since_;
  std::size_t events_left_ = 0;  // 0: no limit
  bool ending_ = false;  // the last event went
  bool closed_ = false;
};

bool is_wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

}  // namespace

HttpEndpoint parse_http_address(const std::string& text, const std::string& default_host) {
  auto bad = [&](const std::string& why) {
    return Error("dashboard address '" + text + "': " + why + " (expected host:port, :port or port)");
  };
  std::string rest = text;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  HttpEndpoint ep;
  std::string port_text;
  if (!rest.empty() && rest.front() == '[') {  // [::1]:8787
    auto close = rest.find(']');
    if (close == std::string::npos) throw bad("unclosed '['");
    ep.host = rest.substr(1, close - 1);
    if (close + 1 >= rest.size() || rest[close + 1] != ':') throw bad("no port after the IPv6 host");
    port_text = rest.substr(close + 2);
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    ep.host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
    if (ep.host.find(':') != std::string::npos) throw bad("an IPv6 host goes in brackets");
  } else {
    port_text = rest;  // "8787"
  }
  if (ep.host.empty()) ep.host = default_host;
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    throw bad("the port must be a number from 0 to 65535");
  ep.port = port;
  return ep;
}

struct HttpServer::Impl {
  // Declared first, destroyed last: the acceptor and the connections (owned by pending
  // handlers, destroyed with the io_context) need it while they go.
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::shared_ptr<Shared> shared;
  std::thread thread;
  std::size_t max_connections = 0;
  comm::detail::LogLimiter refusal_log{std::chrono::seconds(10)};
  asio::steady_timer retry{ioc};  // after a failed accept (no descriptor left): a pause, not a spin
  std::chrono::milliseconds backoff{0};

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        backoff = std::min(std::max(backoff * 2, std::chrono::milliseconds(50)), std::chrono::milliseconds(1000));
        if (std::size_t more = 0; refusal_log.allow(more))
          logging::warn("{}: accept failed: {}; retrying in {} ms ({} more since the last line)", shared->name,
                        ec.message(), backoff.count(), more);
        retry.expires_after(backoff);
        retry.async_wait([this](beast::error_code e) {
          if (!e && acceptor.is_open()) accept();
        });
        return;
      }
      backoff = std::chrono::milliseconds(0);
      if (shared->open.load() >= max_connections) {
        refuse(socket);
      } else {
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<Session>(std::move(socket), shared)->start();
      }
      accept();
    });
  }

  // At the cap: a 503 written without waiting (it fits any socket buffer; a peer that is not
  // reading simply misses it), and the descriptor back at once.
  void refuse(tcp::socket& socket) {
    static constexpr char kFull[] =
        "HTTP/1.1 503 Service Unavailable\r\nServer: tessera\r\nContent-Type: text/plain\r\n"
        "Connection: close\r\nContent-Length: 43\r\n\r\ntoo many dashboard connections; try again\r\n";
    beast::error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(kFull, sizeof kFull - 1), ignored);
    socket.close(ignored);
    if (std::size_t more = 0; refusal_log.allow(more))
      logging::warn("{}: refused a connection: {} are open, the limit ({} more refused since the last line)",
                    shared->name, max_connections, more);
  }

  static std::size_t default_max_connections() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 512;
    return std::clamp<std::size_t>(static_cast<std::size_t>(lim.rlim_cur) / 8, 16, 512);
  }

  void bind(const tcp::endpoint& ep) {
    acceptor.open(ep.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(ep);
    acceptor.listen(asio::socket_base::max_listen_connections);
  }
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
  const HttpEndpoint want = parse_http_address(options.address, options.default_host);
  auto shared = std::make_shared<Shared>();
  shared->handler = std::move(handler);
  shared->idle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options.idle_timeout > 0 ? options.idle_timeout : 10.0));
  shared->name = options.name;
  impl_->shared = std::move(shared);
  impl_->max_connections = options.max_connections > 0 ? options.max_connections : Impl::default_max_connections();

  tcp::endpoint ep;
  try {
    tcp::resolver resolver(impl_->ioc);
    auto results = resolver.resolve(want.host, std::to_string(want.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service);
    if (results.empty()) throw Error("no address");
    ep = results.begin()->endpoint();
  } catch (const std::exception& e) {
    throw Error(options.name + ": cannot resolve '" + want.host + "': " + e.what());
  }
  try {
    impl_->bind(ep);
  } catch (const boost::system::system_error& e) {
    if (e.code() != asio::error::address_in_use || !options.fallback_to_free_port || want.port == 0)
      throw Error(options.name + ": cannot listen on " + want.host + ":" + std::to_string(want.port) + ": " +
                  e.code().message());
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    ep.port(0);
    try {
      impl_->bind(ep);
    } catch (const boost::system::system_error& e2) {
      throw Error(options.name + ": cannot listen on " + want.host + ": " + e2.code().message());
    }
    logging::warn("{}: port {} is in use; serving on port {} instead", options.name, want.port,
                  impl_->acceptor.local_endpoint().port());
  }
  port_ = impl_->acceptor.local_endpoint().port();
  std::string shown = want.host;
  if (is_wildcard(shown)) shown = ep.address().is_v6() ? "::1" : "127.0.0.1";
  if (shown.find(':') != std::string::npos) shown = "[" + shown + "]";
  url_ = "http://" + shown + ":" + std::to_string(port_);
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get(), name = options.name] {
    // A handler's exception is caught in the session; anything escaping run() is a bug worth a
    // log line, and the server goes on.
    while (true) {
      try {
        impl->ioc.run();
        return;
      } catch (const std::exception& e) {
        logging::error("{}: {}", name, e.what());
      }
    }
  });
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return port_; }

std::size_t HttpServer::max_connections() const { return impl_ ? impl_->max_connections : 0; }

const std::string& HttpServer::url() const { return url_; }

void HttpServer::stop() {
  if (!impl_) return;
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Destroying the io_context destroys the pending handlers, which own the connections: every
  // socket, the listener's included, is closed here, and the handler is never called again.
  impl_.reset();
}

}  // namespace tessera::distributed
