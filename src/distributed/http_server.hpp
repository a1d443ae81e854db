#pragma once
/**
 * @file A small HTTP/1.1 server (Boost.Beast) on a thread of its own, for the dashboards of the
 * scheduler and the workers (docs/dashboard.md). It knows nothing of Tessera: a handler maps a
 * request to a response. Private to libtessera; Beast stays in http_server.cpp.
 */
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace tessera::distributed {

/** @brief Where to listen: "host:port", ":port" (on default_host), "http://host:port", "[::1]:port". */
struct HttpEndpoint {
  std::string host;
  int port = 0;
};

/** @brief Parses a --dashboard-address; throws tessera::Error naming the text when it is not one. */
HttpEndpoint parse_http_address(const std::string& text, const std::string& default_host);

struct HttpRequest {
  std::string method;  ///< "GET", "HEAD"
  std::string target;  ///< as sent: "/metrics?x=1"
  std::string path;    ///< target without the query: "/metrics"
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  /**
   * When set, the response is a stream of server-sent events instead of `body`: the headers go
   * at once (text/event-stream, chunked), then the server calls `next_event` on its thread at
   * once and every `event_interval` seconds, and sends what it returns (an empty string: nothing
   * this round) until the client goes or the server stops. A client that does not read what was
   * sent is skipped, and dropped after the idle timeout, so it never buffers without bound.
   */
  std::function<std::string()> next_event;
  double event_interval = 0.25;
  std::size_t max_events = 0;  ///< the stream ends after this many events (0: never)
};

struct HttpServerOptions {
  std::string address = ":8787";          ///< see parse_http_address
  std::string default_host = "127.0.0.1";  ///< the host of ":port"
  /** When the port asked for is taken, listen on a free one (with a warning) instead of failing,
   *  as Dask's dashboard does: two clusters on one machine both come up. */
  bool fallback_to_free_port = true;
  double idle_timeout = 10;   ///< seconds a connection may stay silent (or half-sent) before it is closed
  /** Connections served at once; one more is answered 503 and closed at accept, so idle browsers
   *  or a flood cannot take the descriptors the cluster's own listener needs. 0: one eighth of
   *  the process's descriptor limit (RLIMIT_NOFILE), at least 16 and at most 512; the cluster
   *  listener's default cap is three quarters (CommOptions::max_connections), which leaves an
   *  eighth for files, spill and outgoing connections. */
  std::size_t max_connections = 0;
  std::string name = "http";  ///< in log messages: "scheduler dashboard"
};

/**
 * @brief Serves HTTP until stop() or destruction. Only GET and HEAD reach the handler (others:
 * 405); a request that does not parse gets 400 and its connection closed; a handler that throws
 * gives 500. Every connection is read with a deadline, so a client that sends nothing, or half a
 * request, is dropped after idle_timeout and never holds the server. The handler runs on the
 * server's one thread, one request at a time.
 */
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  /** @brief Binds and starts serving; throws tessera::Error when it cannot listen. */
  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /** @brief The port it listens on (the one picked when 0 was asked for). */
  int port() const;
  /** @brief "http://127.0.0.1:8787"; a wildcard host (0.0.0.0, ::) is shown as loopback, which reaches it. */
  const std::string& url() const;
  /** @brief The connection cap in effect (HttpServerOptions::max_connections, or its default). */
  std::size_t max_connections() const;
  /** @brief Stops listening, drops every connection and joins the thread. Idempotent. */
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // null once stopped
  std::string url_;
  int port_ = 0;
};

}  // namespace tessera::distributed
