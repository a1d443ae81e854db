#pragma once
// Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
// messages ended by a NUL byte, Chromium reading fd 3 and writing fd 4), for tests that watch a
// live page in real time: --dump-dom needs --virtual-time-budget to run a page's scripts, and
// virtual time stands still while a response (a stream of server-sent events) is open. The
// browser runs in a process group of its own, killed with everything in it when this goes.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera_test {

class CdpBrowser {
 public:
  CdpBrowser(const std::string& chromium, const std::filesystem::path& profile) {
    int to_chrome[2], from_chrome[2];
    if (::pipe(to_chrome) != 0 || ::pipe(from_chrome) != 0) throw std::runtime_error("pipe failed");
    const std::string profile_arg = "--user-data-dir=" + profile.string();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::setpgid(0, 0);
      // fds 3 and 4 as Chromium expects them, whatever numbers the pipes got.
      int in = ::fcntl(to_chrome[0], F_DUPFD, 10), out = ::fcntl(from_chrome[1], F_DUPFD, 10);
      ::dup2(in, 3);
      ::dup2(out, 4);
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      for (int fd = 5; fd < 1024; ++fd) ::close(fd);  // in and out too: 3 and 4 are their copies
      std::vector<std::string> args = {chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                       "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                                       "--remote-debugging-pipe", profile_arg, "about:blank"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(chromium.c_str(), argv.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    ::close(to_chrome[0]);
    ::close(from_chrome[1]);
    write_fd_ = to_chrome[1];
    read_fd_ = from_chrome[0];
  }
  ~CdpBrowser() {
    if (write_fd_ >= 0) ::close(write_fd_);
    if (read_fd_ >= 0) ::close(read_fd_);
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  CdpBrowser(const CdpBrowser&) = delete;
  CdpBrowser& operator=(const CdpBrowser&) = delete;

  // Sends a command and waits for its answer's "result" (throws on "error" or after timeout_s).
  nlohmann::json call(const std::string& method, nlohmann::json params = nlohmann::json::object(),
                      const std::string& session = {}, double timeout_s = 30) {
    const int id = next_id_++;
    nlohmann::json msg = {{"id", id}, {"method", method}, {"params", std::move(params)}};
    if (!session.empty()) msg["sessionId"] = session;
    std::string text = msg.dump();
    text.push_back('\0');
    for (std::size_t off = 0; off < text.size();) {
      ssize_t n = ::write(write_fd_, text.data() + off, text.size() - off);
      if (n <= 0) throw std::runtime_error("chromium's pipe closed");
      off += static_cast<std::size_t>(n);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      for (auto nul = buf_.find('\0'); nul != std::string::npos; nul = buf_.find('\0')) {
        auto reply = nlohmann::json::parse(buf_.substr(0, nul));
        buf_.erase(0, nul + 1);
        if (!reply.contains("id") || reply["id"] != id) continue;  // events and others' answers
        if (reply.contains("error")) throw std::runtime_error(method + ": " + reply["error"].dump());
        return reply["result"];
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw std::runtime_error(method + ": no answer from chromium");
      pollfd p{read_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char b[65536];
      ssize_t n = ::read(read_fd_, b, sizeof b);
      if (n <= 0) throw std::runtime_error(method + ": chromium exited");
      buf_.append(b, static_cast<std::size_t>(n));
    }
  }

  // Opens `url` in a new tab; returns the session for evaluate().
  std::string open(const std::string& url) {
    auto target = call("Target.createTarget", {{"url", url}})["targetId"].get<std::string>();
    return call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}})["sessionId"].get<std::string>();
  }

  // The value of a JavaScript expression in the page (JSON-serialisable).
  nlohmann::json evaluate(const std::string& session, const std::string& expression, double timeout_s = 30) {
    auto r = call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}}, session, timeout_s);
    if (r.contains("exceptionDetails")) throw std::runtime_error("evaluate: " + r["exceptionDetails"].dump());
    return r["result"].contains("value") ? r["result"]["value"] : nlohmann::json();
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int write_fd_ = -1, read_fd_ = -1;
  int next_id_ = 1;
  std::string buf_;
};

}  // namespace tessera_test
