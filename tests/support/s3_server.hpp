#pragma once
/**
 * @file A real S3 server for tests: moto (moto_server) from the project's Python environment.
 *
 *     if (auto why = tessera::testing::S3Server::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
 *     tessera::testing::S3Server s3;                        // http://127.0.0.1:<free port>
 *     s3.create_bucket("taxi");
 *     s3.upload("taxi", "2019/yellow_tripdata_2019-01.csv", local_file);
 *     // read s3://taxi/2019/... with endpoint s3.endpoint(), any access and secret key
 *
 * The Python environment is $TESSERA_PYENV, else $HOME/.cache/tessera/pyenv (scripts/setup.sh
 * makes it with moto[server], which brings boto3). Buckets are made and files uploaded by that
 * environment's python running boto3, the client S3 users have, so the server sees real
 * signed requests.
 *
 * The server runs in its own process group, which the destructor ends (SIGTERM, then SIGKILL):
 * a failing assertion that leaves the test's scope stops it too. If the test binary itself
 * dies, the kernel kills the server (PR_SET_PDEATHSIG): that signal follows the *thread* that
 * made the S3Server, so make it on a thread that outlives it (a test body's own thread does).
 */
#include <filesystem>
#include <string>

#include <sys/types.h>

namespace tessera::testing {

/** @brief A status code and body read from an HTTP/1.0 GET. */
struct HttpResponse {
  int status = 0;  ///< 0: no HTTP answer (refused, closed or timed out)
  std::string body;
};

/**
 * @brief GET `path` from 127.0.0.1:`port` over a plain socket (HTTP/1.0, so the server closes
 * the connection after its answer); waits at most `timeout_s` for the whole answer.
 */
HttpResponse http_get(int port, const std::string& path, double timeout_s = 5.0);

/** @brief Whether something accepts TCP connections on 127.0.0.1:`port` now. */
bool port_accepts_connections(int port);

/** @brief A moto S3 server on 127.0.0.1, stopped with its whole process group on destruction. */
class S3Server {
 public:
  /**
   * @brief Starts moto_server on a free port and waits until it answers S3 requests.
   * @param timeout_s how long to wait for the first answer (moto imports for a few seconds).
   * @throw std::runtime_error when unavailable_reason() is not empty, or when the server does
   *        not start (the message has the end of its output).
   */
  explicit S3Server(double timeout_s = 60.0);
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  /** @brief Why no server can be started here ("" when one can): no environment, no moto_server, no boto3. */
  static std::string unavailable_reason();
  /** @brief The Python environment used: $TESSERA_PYENV, else $HOME/.cache/tessera/pyenv. */
  static std::filesystem::path environment();

  /** @brief "http://127.0.0.1:PORT", the endpoint S3 clients are given. */
  const std::string& endpoint() const { return endpoint_; }
  int port() const { return port_; }
  /** @brief moto_server's process id, also its process group id. */
  pid_t pid() const { return pid_; }

  /** @brief Makes a bucket (boto3 create_bucket). @throw std::runtime_error with boto3's output. */
  void create_bucket(const std::string& bucket) const;
  /**
   * @brief Uploads a local file as s3://bucket/key (boto3 upload_file), readable by anyone
   * (ACL public-read: a plain HTTP GET of endpoint()/bucket/key reads it). @throw std::runtime_error
   */
  void upload(const std::string& bucket, const std::string& key, const std::filesystem::path& local_path) const;

  /** @brief What moto_server wrote to stdout and stderr so far (its request log). */
  std::string log() const;

 private:
  bool start_on(int port, double timeout_s, std::string& why_not);
  void stop() noexcept;
  void run_boto3(const std::string& op, const std::string& bucket, const std::string& key,
                 const std::string& local_path) const;

  std::filesystem::path environment_;
  std::filesystem::path dir_;  // a private temporary folder: moto's log
  std::string endpoint_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tessera::testing
