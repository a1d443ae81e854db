#include "status_page.hpp"

namespace tessera::distributed {
namespace {

// Plain DOM and canvas, no library: the page must work from the binary alone. The task stream
// is a canvas (tens of thousands of bars stay cheap to draw, where as many SVG or DOM nodes
// would not); what a test or a screen reader needs (workers, prefixes, bar counts) is in the DOM.
constexpr std::string_view kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tessera dashboard</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 12px 16px; color: #222; background: #fafafa; }
h1 { font-size: 18px; margin: 0 0 8px; } h2 { font-size: 14px; margin: 14px 0 6px; }
#summary span { margin-right: 18px; } #summary b { font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; background: #fff; } td, th { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
#stream { background: #fff; border: 1px solid #ddd; display: block; }
.legend { list-style: none; padding: 0; margin: 4px 0; } .legend li { display: inline-block; margin-right: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }
.bar { display: inline-block; height: 10px; vertical-align: middle; }
#error { color: #b00; }
</style>
</head>
<body>
<h1>Tessera scheduler</h1>
<div id="summary"><span>workers <b id="n-workers">0</b></span><span>threads <b id="n-threads">0</b></span>
<span>tasks/s <b id="tasks-per-second">0</b></span><span>finished <b id="n-finished">0</b></span>
<span>clients <b id="n-clients">0</b></span><span>event loop <b id="loop-latency">0</b> ms</span>
<span>uptime <b id="uptime">0</b> s</span><span>updates <b id="transport">-</b></span><span id="error"></span></div>
<h2>Task stream</h2>
<canvas id="stream" width="1240" height="200" data-bars="0"></canvas>
<ul class="legend" id="stream-legend"></ul>
<h2>Progress</h2>
<table id="progress"><thead><tr><th>operation</th><th>progress</th><th>waiting</th><th>queued</th>
<th>processing</th><th>memory</th><th>erred</th><th>total</th></tr></thead><tbody></tbody></table>
<h2>Workers</h2>
<table id="workers"><thead><tr><th>address</th><th>name</th><th>threads</th><th>running</th><th>managed</th>
<th>spilled</th><th>limit</th><th>process</th><th>CPU</th><th>received</th><th>sent</th><th>GPU</th><th>GPU use</th>
<th>GPU memory</th><th>PCIe tx / rx</th><th>NVLink tx / rx</th></tr></thead><tbody></tbody></table>
<script>
"use strict";
const WINDOW_S = 20;          // seconds of task stream shown at most
const KEEP = 10000;           // bars kept in the page (older ones thinned out past it)
let since = 0, bars = [], uptime = 0, rate = [], finishedSeen = null;
const colours = {};
function colour(prefix) {
  if (prefix === "transfer") return "#d62728";  // fetches from peers and by clients: red, as in Dask's task stream
  if (!colours[prefix]) {
    let h = 0;
    for (const c of prefix) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    colours[prefix] = "hsl(" + (h % 360) + ",65%,52%)";
  }
  return colours[prefix];
}
function bytes(n) {
  if (!n) return "0";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}
// NVML's throughput pair, bytes per second; a side NVML did not give is left out, not zero.
function rates(tx, rx) {
  if (tx === undefined && rx === undefined) return "";
  const one = v => v === undefined ? "-" : bytes(v) + "/s";
  return one(tx) + " / " + one(rx);
}
function cell(row, text) { const td = document.createElement("td"); td.textContent = text; row.appendChild(td); return td; }
async function json(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}
function showWorkers(w) {
  const body = document.querySelector("#workers tbody");
  body.textContent = "";
  let threads = 0;
  for (const x of w.workers) {
    threads += x.nthreads;
    const tr = document.createElement("tr");
    tr.className = "worker-row";
    tr.dataset.address = x.address;
    // The worker's own page, where it serves one (--dashboard-address).
    const page = x.extra && x.extra.dashboard;
    const first = cell(tr, page ? "" : x.address);
    if (page) { const a = document.createElement("a"); a.href = page + "/status"; a.textContent = x.address; first.appendChild(a); }
    cell(tr, x.name); cell(tr, x.nthreads); cell(tr, x.processing);
    cell(tr, bytes(x.memory)); cell(tr, bytes(x.spilled || 0)); cell(tr, x.memory_limit ? bytes(x.memory_limit) : "none");
    cell(tr, x.rss ? bytes(x.rss) : ""); cell(tr, x.cpu === undefined ? "" : Math.round(x.cpu) + " %").className = "cpu";
    cell(tr, bytes(x.bytes_received || 0)); cell(tr, bytes(x.bytes_sent || 0));
    // NVML's live figures where the worker has them; else what it reported when it registered.
    const g = x.gpus && x.gpus.length ? x.gpus[0] : null, n = x.gpu;
    cell(tr, n ? n.name : g ? g.name : "");
    cell(tr, n ? n.utilization + " %" : "");
    cell(tr, n ? bytes(n.memory_used) + " / " + bytes(n.memory_total)
               : g ? bytes(x.device_memory) + " / " + bytes(g.total_memory) : "");
    cell(tr, n ? rates(n.pcie_tx, n.pcie_rx) : "").className = "pcie";
    cell(tr, n ? rates(n.nvlink_tx, n.nvlink_rx) : "").className = "nvlink";
    body.appendChild(tr);
  }
  document.getElementById("n-workers").textContent = w.num_workers;
  document.getElementById("n-threads").textContent = threads;
}
function showProgress(p) {
  uptime = p.uptime;
  document.getElementById("uptime").textContent = p.uptime.toFixed(1);
  document.getElementById("n-finished").textContent = p.finished;
  document.getElementById("n-clients").textContent = p.clients;
  // The scheduler's own clock (uptime), not the page's: a busy or throttled tab, or a headless
  // browser's virtual time, must not skew the figure.
  const now = p.uptime;
  rate.push([now, p.finished]);
  while (rate.length > 2 && now - rate[0][0] > 3) rate.shift();
  if (p.event_loop_latency !== undefined)
    document.getElementById("loop-latency").textContent = (1000 * p.event_loop_latency_max).toFixed(1);
  if (p.tasks_per_second !== undefined) {
    document.getElementById("tasks-per-second").textContent = Math.round(p.tasks_per_second);
  } else if (rate.length > 1) {
    const [t0, n0] = rate[0], [t1, n1] = rate[rate.length - 1];
    document.getElementById("tasks-per-second").textContent = t1 > t0 ? Math.round((n1 - n0) / (t1 - t0)) : 0;
  }
  const body = document.querySelector("#progress tbody");
  body.textContent = "";
  for (const x of p.prefixes) {
    const tr = document.createElement("tr");
    tr.className = "progress-row";
    const name = cell(tr, "");
    const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = colour(x.name);
    name.appendChild(sw); name.appendChild(document.createTextNode(x.name));
    const done = (x.memory || 0) + (x.erred || 0) + (x.released || 0);
    const bar = cell(tr, ""), span = document.createElement("span");
    span.className = "bar"; span.style.background = colour(x.name);
    span.style.width = Math.round(120 * (x.total ? done / x.total : 0)) + "px";
    bar.appendChild(span);
    cell(tr, (x.waiting || 0) + (x["no-worker"] || 0)); cell(tr, x.queued || 0); cell(tr, x.processing || 0);
    cell(tr, x.memory || 0); cell(tr, x.erred || 0); cell(tr, x.total);
    body.appendChild(tr);
  }
}
// A worker's threads, then its transfers ("#~" sorts after the thread numbers).
function rowName(b) { return b.worker + (b.thread < 0 ? " #~transfers" : " #" + b.thread); }
function drawStream() {
  const cv = document.getElementById("stream"), ctx = cv.getContext("2d");
  const rowsByName = new Map();
  for (const b of bars) rowsByName.set(b.row, true);
  const rows = [...rowsByName.keys()].sort();
  const rowIndex = new Map(rows.map((r, i) => [r, i]));
  const rowH = Math.max(8, Math.min(24, Math.floor(180 / Math.max(1, rows.length))));
  cv.height = Math.max(60, rows.length * rowH + 24);
  const left = 210, width = cv.width - left - 10;
  let end = uptime, first = Infinity;
  for (const b of bars) { end = Math.max(end, b.stop); first = Math.min(first, b.start); }
  // A young stream fills the width rather than a corner of a 20 s axis.
  const span = Math.min(WINDOW_S, Math.max(1, end - first)), start = end - span;
  ctx.clearRect(0, 0, cv.width, cv.height);
  ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = "#444";
  rows.forEach((r, i) => {
    const label = r.replace(" #~transfers", " transfers");
    ctx.fillText(label.length > 34 ? "..." + label.slice(-31) : label, 4, i * rowH + rowH - 2);
  });
  let drawn = 0;
  for (const b of bars) {
    if (b.stop < start) continue;
    const x0 = left + (Math.max(b.start, start) - start) / span * width;
    const x1 = left + (b.stop - start) / span * width;
    ctx.fillStyle = colour(b.prefix);
    ctx.fillRect(x0, rowIndex.get(b.row) * rowH + 1, Math.max(1, x1 - x0), rowH - 2);
    drawn++;
  }
  ctx.fillStyle = "#666";
  for (let i = 0; i <= 4; i++) {
    const ago = span * (4 - i) / 4;
    ctx.fillText(i === 4 ? "now" : "-" + ago.toFixed(ago < 10 ? 1 : 0) + " s", left + i / 4 * width - (i === 4 ? 24 : 0),
                 cv.height - 4);
  }
  cv.dataset.bars = drawn;
  cv.dataset.rows = rows.length;
  const legend = document.getElementById("stream-legend"), seen = [...new Set(bars.map(b => b.prefix))].sort();
  legend.textContent = "";
  for (const p of seen) {
    const li = document.createElement("li"); li.className = "stream-prefix";
    const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = colour(p);
    li.appendChild(sw); li.appendChild(document.createTextNode(p)); legend.appendChild(li);
  }
}
function addBars(list) {
  for (const t of list) { t.row = rowName(t); bars.push(t); }  // named once, not at every redraw
  if (bars.length > KEEP) {
    // Keep the newer half as it is and every other bar of the older half: 100,000 tasks in
    // flight neither grow the page nor empty its past.
    const half = bars.length - Math.floor(KEEP / 2);
    bars = bars.slice(0, half).filter((b, i) => i % 2 === 0).concat(bars.slice(half));
  }
}
// How long an update takes the page (parsing, tables, canvas), for people and for tests.
const stats = document.body.dataset;
stats.updates = 0; stats.updateMs = 0; stats.updateMaxMs = 0; stats.eventBytes = 0;
function timed(f) {
  const t0 = performance.now();
  f();
  const ms = performance.now() - t0;
  stats.updates = +stats.updates + 1;
  stats.updateMs = ms.toFixed(2);
  stats.updateMaxMs = Math.max(+stats.updateMaxMs, ms).toFixed(2);
}
// Pushed updates: /api/v1/events sends workers, progress and the new bars a few times a second.
let seenId = 0;  // the newest bar shown: a reconnected stream starts again with bars the page has
function listen() {
  const max = /[?&]events=(\d+)/.exec(location.search);  // ?events=n: streams of n events (tests)
  const es = new EventSource("/api/v1/events" + (max ? "?max=" + max[1] : ""));
  let got = false;
  es.onmessage = e => {
    got = true;
    stats.eventBytes = +stats.eventBytes + e.data.length;
    timed(() => {
      const d = JSON.parse(e.data), st = d.stream;
      showWorkers(d.workers);
      showProgress(d.progress);
      if (st.newest < seenId) seenId = 0;  // a scheduler that started again
      const fresh = st.bars.slice(Math.max(0, seenId - st.from));
      seenId = Math.max(seenId, st.from + st.bars.length);
      addBars(fresh.map(b => ({worker: st.workers[b[0]], thread: b[1], start: b[2], stop: b[3],
                               prefix: st.prefixes[b[4]]})));
      drawStream();
    });
    clearTimeout(quiet);
    document.getElementById("transport").textContent = "pushed";
    document.getElementById("error").textContent = "";
  };
  let quiet = null;
  es.onerror = () => {
    // Never connected (a proxy that buffers streams, an old server): poll instead. Once it
    // worked, EventSource reconnects by itself: a stream that ended is no error unless the
    // next does not come.
    if (!got) { es.close(); poll(); return; }
    clearTimeout(quiet);
    quiet = setTimeout(() => { document.getElementById("error").textContent = "not reachable: reconnecting"; }, 3000);
  };
}
// Polling, the fallback (and ?poll in the address).
async function poll() {
  document.getElementById("transport").textContent = "polled";
  try {
    const [w, p, s] = await Promise.all([json("/api/v1/workers"), json("/api/v1/progress"),
                                         json("/api/v1/task-stream?tail=" + KEEP + "&since=" + since)]);
    timed(() => {
      showWorkers(w);
      showProgress(p);
      since = s.next;
      addBars(s.tasks);
      drawStream();
    });
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent = "not reachable: " + e.message;
  }
  setTimeout(poll, 300);
}
if (window.EventSource && !/[?&]poll/.test(location.search)) listen(); else poll();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view status_page_html() { return kPage; }

}  // namespace tessera::distributed
