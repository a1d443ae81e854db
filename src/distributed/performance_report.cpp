#include "tessera/distributed/performance_report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../core/logging.hpp"
#include "tessera/core/error.hpp"
#include "tessera/distributed/client.hpp"

namespace tessera::distributed {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// The same colour for an operation as on the live page (status_page.cpp): a hash to a hue.
std::string colour(const std::string& prefix) {
  if (prefix == "transfer") return "#d62728";
  std::uint32_t h = 0;
  for (unsigned char c : prefix) h = h * 31 + c;
  return "hsl(" + std::to_string(h % 360) + ",65%,52%)";
}

std::string fixed(double x, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

struct Totals {
  std::size_t tasks = 0;
  double seconds = 0;
  std::size_t nbytes = 0;
};

}  // namespace

std::string performance_report_html(const std::vector<TaskStreamEntry>& entries, const std::string& title,
                                    double wall_seconds) {
  std::map<std::string, Totals> by_prefix, by_worker;
  std::set<std::pair<std::string, int>> rows;
  double t0 = entries.empty() ? 0 : entries.front().start, t1 = t0;
  Totals all, moved;  // tasks; transfers (not compute, so counted apart)
  for (const auto& e : entries) {
    const double d = e.stop - e.start;
    const bool transfer = e.thread < 0 && e.prefix == "transfer";
    auto add = [&](Totals& t) {
      t.tasks++;
      t.seconds += d;
      t.nbytes += e.nbytes;
    };
    if (transfer) {
      add(moved);
    } else {
      add(by_prefix[e.prefix]);
      add(by_worker[e.worker]);
      add(all);
    }
    rows.insert({e.worker, e.thread});
    t0 = std::min(t0, e.start);
    t1 = std::max(t1, e.stop);
  }
  const double span = std::max(t1 - t0, 1e-6);
  std::map<std::pair<std::string, int>, std::size_t> row_of;
  for (const auto& r : rows) row_of.emplace(r, row_of.size());

  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << escape(title)
    << "</title>\n<style>body{font:13px system-ui,sans-serif;margin:16px;color:#222}"
       "table{border-collapse:collapse;margin-bottom:12px}td,th{padding:2px 8px;border-bottom:1px solid #ddd;"
       "text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f0f0f0}"
       ".swatch{display:inline-block;width:10px;height:10px;margin-right:4px}</style></head><body>\n";
  o << "<h1>" << escape(title) << "</h1>\n<table id=\"summary\">"
    << "<tr><td>tasks</td><td>" << all.tasks << "</td></tr>"
    << "<tr><td>wall time</td><td>" << fixed(wall_seconds) << " s</td></tr>"
    << "<tr><td>task stream span</td><td>" << fixed(entries.empty() ? 0 : span) << " s</td></tr>"
    << "<tr><td>compute time (all threads)</td><td>" << fixed(all.seconds) << " s</td></tr>"
    << "<tr><td>workers</td><td>" << by_worker.size() << "</td></tr>"
    << "<tr><td>threads used</td><td>"
    << std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.second >= 0; }) << "</td></tr>"
    << "<tr><td>result bytes</td><td>" << all.nbytes << "</td></tr>"
    << "<tr><td>transfers</td><td>" << moved.tasks << "</td></tr>"
    << "<tr><td>bytes transferred</td><td>" << moved.nbytes << "</td></tr>"
    << "<tr><td>transfer time</td><td>" << fixed(moved.seconds) << " s</td></tr></table>\n";
  o << "<h2>By operation</h2>\n<table id=\"operations\"><tr><th>operation</th><th>tasks</th><th>compute s</th>"
       "<th>mean ms</th><th>result bytes</th></tr>";
  for (const auto& [p, t] : by_prefix)
    o << "<tr><td><span class=\"swatch\" style=\"background:" << colour(p) << "\"></span>" << escape(p) << "</td><td>"
      << t.tasks << "</td><td>" << fixed(t.seconds) << "</td><td>" << fixed(1e3 * t.seconds / t.tasks) << "</td><td>"
      << t.nbytes << "</td></tr>";
  o << "</table>\n<h2>By worker</h2>\n<table id=\"workers\"><tr><th>worker</th><th>tasks</th><th>compute s</th>"
       "<th>result bytes</th></tr>";
  for (const auto& [w, t] : by_worker)
    o << "<tr><td>" << escape(w) << "</td><td>" << t.tasks << "</td><td>" << fixed(t.seconds) << "</td><td>"
      << t.nbytes << "</td></tr>";
  o << "</table>\n";

  // The task stream: a label column, then time across; one row per worker thread.
  const int label_w = 220, plot_w = 1000, row_h = 18, axis_h = 20;
  const int height = static_cast<int>(rows.size()) * row_h + axis_h;
  o << "<h2>Task stream</h2>\n<svg id=\"task-stream\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label_w + plot_w + 10
    << "\" height=\"" << height << "\" font-size=\"11\">\n";
  for (const auto& [r, i] : row_of)
    o << "<text x=\"2\" y=\"" << i * row_h + row_h - 5 << "\">" << escape(r.first)
      << (r.second < 0 ? std::string(" transfers") : " #" + std::to_string(r.second)) << "</text>\n";
  for (const auto& e : entries) {
    const double x = label_w + (e.start - t0) / span * plot_w;
    const double w = std::max(0.5, (e.stop - e.start) / span * plot_w);
    o << "<rect class=\"task\" x=\"" << fixed(x, 1) << "\" y=\"" << row_of[{e.worker, e.thread}] * row_h + 1
      << "\" width=\"" << fixed(w, 1) << "\" height=\"" << row_h - 2 << "\" fill=\"" << colour(e.prefix)
      << "\"><title>" << escape(e.key) << " (" << escape(e.prefix) << ") " << fixed(1e3 * (e.stop - e.start))
      << " ms on " << escape(e.worker) << "</title></rect>\n";
  }
  for (int i = 0; i <= 4; ++i)
    o << "<text x=\"" << label_w + i * plot_w / 4 - (i == 4 ? 40 : 0) << "\" y=\"" << height - 4 << "\">"
      << fixed(span * i / 4, 3) << " s</text>\n";
  o << "</svg>\n</body></html>\n";
  return o.str();
}

PerformanceReport::PerformanceReport(Client& client, std::string path, std::string title)
    : client_(client),
      path_(std::move(path)),
      title_(std::move(title)),
      since_(client.task_stream_position()),
      started_(std::chrono::steady_clock::now()) {}

void PerformanceReport::save() {
  saved_ = true;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::string html = performance_report_html(client_.get_task_stream(since_), title_, wall);
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("performance report: cannot write " + path_);
  out << html;
  if (!out.flush()) throw Error("performance report: writing " + path_ + " failed");
}

PerformanceReport::~PerformanceReport() {
  if (saved_) return;
  try {
    save();
  } catch (const std::exception& e) {
    logging::warn("performance report {} not written: {}", path_, e.what());
  }
}

}  // namespace tessera::distributed
