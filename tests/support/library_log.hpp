#pragma once
// What the library logs (its own logger, core/logging.hpp), kept while a LibraryLog lives, for
// tests that check a line was written, or written only so often. Thread-safe: the library logs
// from its I/O threads while a test reads.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/base_sink.h>

#include "core/logging.hpp"

namespace tessera_test {

class LibraryLog {
 public:
  /** Keeps lines at `level` and above (the logger's level is lowered to it while alive). */
  explicit LibraryLog(spdlog::level::level_enum level = spdlog::level::warn)
      : sink_(std::make_shared<Sink>()), saved_(tessera::library_logger()->level()) {
    tessera::library_logger()->sinks().push_back(sink_);
    if (level < saved_) tessera::library_logger()->set_level(level);
  }
  ~LibraryLog() {
    tessera::library_logger()->set_level(saved_);
    auto& sinks = tessera::library_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LibraryLog(const LibraryLog&) = delete;
  LibraryLog& operator=(const LibraryLog&) = delete;

  /** Every line as formatted (with its prefix). */
  std::string text() {
    std::string out;
    for (const auto& l : sink_->snapshot()) out += l.formatted;
    return out;
  }
  /** How often `needle` occurs in text(). */
  int count(const std::string& needle) {
    const std::string t = text();
    int n = 0;
    for (auto pos = t.find(needle); pos != std::string::npos; pos = t.find(needle, pos + 1)) ++n;
    return n;
  }
  /** The lines' messages (no prefix) that hold every one of `needles`. */
  std::vector<std::string> lines(const std::vector<std::string>& needles) {
    std::vector<std::string> out;
    for (const auto& l : sink_->snapshot())
      if (std::all_of(needles.begin(), needles.end(),
                      [&](const std::string& n) { return l.payload.find(n) != std::string::npos; }))
        out.push_back(l.payload);
    return out;
  }

 private:
  struct Line {
    std::string payload, formatted;
  };
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<Line> snapshot() {
      std::lock_guard lock(mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      spdlog::memory_buf_t buf;
      formatter_->format(msg, buf);
      lines_.push_back({std::string(msg.payload.data(), msg.payload.size()), std::string(buf.data(), buf.size())});
    }
    void flush_() override {}

   private:
    std::vector<Line> lines_;
  };
  std::shared_ptr<Sink> sink_;
  spdlog::level::level_enum saved_;
};

}  // namespace tessera_test
