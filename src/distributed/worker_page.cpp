#include "worker_page.hpp"

namespace tessera::distributed {
namespace {

// Fed by the worker's /api/v1/events (its /api/v1/worker polled where events do not arrive).
// Elements tests read: #w-address, #w-running (rows class="running-row"), #w-cpu, #w-gpu.
constexpr std::string_view kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tessera worker</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 12px 16px; color: #222; background: #fafafa; }
h1 { font-size: 18px; margin: 0 0 8px; } h2 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; background: #fff; } td, th { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
.meter { display: inline-block; width: 160px; height: 10px; background: #e8e8e8; vertical-align: middle; }
.meter span { display: block; height: 10px; background: #4a7fd4; } #error { color: #b00; }
</style>
</head>
<body>
<h1>Tessera worker <span id="w-name"></span></h1>
<table id="w-summary">
<tr><th>address</th><td id="w-address"></td></tr>
<tr><th>scheduler</th><td id="w-scheduler"></td></tr>
<tr><th>threads</th><td id="w-threads"></td></tr>
<tr><th>tasks run</th><td id="w-executed"></td></tr>
<tr><th>CPU</th><td id="w-cpu"></td></tr>
<tr><th>memory: results / limit</th><td><span class="meter"><span id="w-memory-bar"></span></span> <span id="w-memory"></span></td></tr>
<tr><th>spilled to disk</th><td id="w-spilled"></td></tr>
<tr><th>process (resident)</th><td id="w-rss"></td></tr>
<tr><th>received / sent</th><td id="w-transfers"></td></tr>
<tr><th>GPU</th><td id="w-gpu"></td></tr>
<tr><th>GPU use / memory</th><td><span class="meter"><span id="w-gpu-bar"></span></span> <span id="w-gpu-memory"></span></td></tr>
<tr><th>GPU PCIe / NVLink (tx / rx)</th><td id="w-gpu-links"></td></tr>
<tr><th>uptime</th><td id="w-uptime"></td></tr>
</table>
<span id="error"></span>
<h2>Running now</h2>
<table id="w-running"><thead><tr><th>thread</th><th>operation</th><th>key</th></tr></thead><tbody></tbody></table>
<h2>Tasks by state</h2>
<table id="w-states"><thead><tr><th>state</th><th>tasks</th></tr></thead><tbody></tbody></table>
<script>
"use strict";
function bytes(n) {
  if (!n) return "0";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}
function set(id, text) { document.getElementById(id).textContent = text; }
function row(body, cls, cells) {
  const tr = document.createElement("tr"); if (cls) tr.className = cls;
  for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); }
  body.appendChild(tr);
}
function show(w) {
  set("w-name", w.name); set("w-address", w.address); set("w-scheduler", w.scheduler);
  set("w-threads", w.nthreads); set("w-executed", w.executed + (w.failed ? " (" + w.failed + " failed)" : ""));
  set("w-cpu", w.cpu === undefined ? "unknown" : Math.round(w.cpu) + " %");
  set("w-memory", bytes(w.memory) + " / " + (w.memory_limit ? bytes(w.memory_limit) : "no limit") + (w.paused ? " (paused)" : ""));
  document.getElementById("w-memory-bar").style.width = (w.memory_limit ? Math.min(100, 100 * w.memory / w.memory_limit) : 0) + "%";
  set("w-spilled", bytes(w.spilled)); set("w-rss", bytes(w.rss));
  set("w-transfers", bytes(w.bytes_received) + " / " + bytes(w.bytes_sent));
  const g = w.gpu;
  set("w-gpu", g ? g.name : "none (no GPU, or no NVML)");
  set("w-gpu-memory", g ? g.utilization + " %, " + bytes(g.memory_used) + " / " + bytes(g.memory_total) : "");
  document.getElementById("w-gpu-bar").style.width = (g ? g.utilization : 0) + "%";
  const rate = v => v === undefined ? "-" : bytes(v) + "/s";
  set("w-gpu-links", g ? "PCIe " + rate(g.pcie_tx) + " / " + rate(g.pcie_rx) + ", NVLink " + rate(g.nvlink_tx) + " / " + rate(g.nvlink_rx) : "");
  set("w-uptime", w.uptime.toFixed(1) + " s");
  const running = document.querySelector("#w-running tbody"); running.textContent = "";
  w.running.forEach((t, i) => row(running, "running-row", [i, t.prefix, t.key]));
  const states = document.querySelector("#w-states tbody"); states.textContent = "";
  for (const [k, n] of Object.entries(w.states)) if (n) row(states, "state-row", [k, n]);
  set("error", "");
}
async function poll() {
  try {
    const r = await fetch("/api/v1/worker", {cache: "no-store"});
    show(await r.json());
  } catch (e) { set("error", "not reachable: " + e.message); }
  setTimeout(poll, 500);
}
if (window.EventSource && !/[?&]poll/.test(location.search)) {
  const es = new EventSource("/api/v1/events");
  let got = false;
  let quiet = null;
  es.onmessage = e => { got = true; clearTimeout(quiet); show(JSON.parse(e.data)); };
  es.onerror = () => {
    if (!got) { es.close(); poll(); return; }
    clearTimeout(quiet);  // a stream that ended is no error unless the next does not come
    quiet = setTimeout(() => set("error", "not reachable: reconnecting"), 3000);
  };
} else {
  poll();
}
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view worker_page_html() { return kPage; }

}  // namespace tessera::distributed
