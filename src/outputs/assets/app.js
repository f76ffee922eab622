// app.js - the jaxprof viewer: pages over the server's JSON API (/api/...), no outside resources.
"use strict";

const PARTS = ["compute", "collective", "h2d", "d2h", "d2d", "compile", "host", "idle"];
const PART_COLORS = ["#2563eb", "#7c3aed", "#0891b2", "#0d9488", "#65a30d", "#d97706", "#db2777", "#d1d5db"];
// host: the picked host ("" for all), passed to every run request as ?host=; hosts: each run's host names.
const state = { runs: [], run: null, page: "overview", params: new URLSearchParams(), host: "", hosts: {} };
const $ = (sel) => document.querySelector(sel);

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function ms(v) { return v >= 100 ? v.toFixed(1) : v >= 1 ? v.toFixed(3) : v.toFixed(4); }
async function api(path) {
  const r = await fetch(path);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function runApi(what, run) {
  const host = state.host ? `${what.includes("?") ? "&" : "?"}host=${encodeURIComponent(state.host)}` : "";
  return api(`/api/run/${encodeURIComponent(run || state.run)}/${what}${host}`);
}

// ---- routing: #/<page>?run=<id>&... -----------------------------------------------------------
function parseHash() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  state.page = path || "overview";
  state.params = new URLSearchParams(query || "");
  if (state.params.get("run")) state.run = state.params.get("run");
  state.host = state.params.get("host") || "";
}
function go(page, extra) {
  const p = new URLSearchParams(extra || {});
  p.set("run", state.run);
  if (state.host) p.set("host", state.host);
  location.hash = `#/${page}?${p}`;
}

// ---- hosts: a picker on the overview and the timeline ------------------------------------------
// Every host of the run, from an unfiltered answer (a filtered overview names only its host).
async function runHosts() {
  if (!state.hosts[state.run]) {
    const d = await api(`/api/run/${encodeURIComponent(state.run)}/overview`);
    state.hosts[state.run] = d.hosts;
  }
  return state.hosts[state.run];
}
function hostPicker(hosts) {
  if (hosts.length < 2) return "";
  return `<label>host <select id="host-pick"><option value="">all hosts</option>${hosts.map((h) =>
    `<option value="${esc(h)}" ${h === state.host ? "selected" : ""}>${esc(h)}</option>`).join("")}</select></label>`;
}
function onHostPick(then) {
  const sel = $("#host-pick");
  if (sel) sel.onchange = () => { state.host = sel.value; then(); };
}

async function start() {
  parseHash();
  state.runs = await api("/api/runs");
  if (!state.runs.length) { $("#page").innerHTML = "<p>No profile runs under this directory.</p>"; return; }
  if (!state.runs.some((r) => String(r.id) === state.run)) state.run = String(state.runs[state.runs.length - 1].id);
  $("#run").innerHTML = state.runs.map((r) =>
    `<option value="${esc(r.id)}">${esc(r.path)} (${r.hosts} host${r.hosts === 1 ? "" : "s"})</option>`).join("");
  $("#run").value = state.run;
  $("#run").onchange = () => { state.run = $("#run").value; state.host = ""; go(state.page); };
  document.querySelectorAll("#tabs a").forEach((a) => { a.onclick = () => go(a.dataset.page); });
  window.onhashchange = () => { parseHash(); render(); };
  render();
}

async function render() {
  document.querySelectorAll("#tabs a").forEach((a) => a.classList.toggle("active", a.dataset.page === state.page));
  const pages = { overview, ops, flame, roofline, timeline, memory, compare };
  const page = pages[state.page] || overview;
  try { await page(); } catch (e) { $("#page").innerHTML = `<p class="rating-bad">${esc(e.message)}</p>`; }
}

// ---- overview ----------------------------------------------------------------------------------
function stepChart(steps) {
  if (!steps.length) return "<p class='muted'>No steps found.</p>";
  const W = 900, H = 220, pad = 30, max = Math.max(...steps.map((s) => s.duration_ms)) || 1;
  const bw = Math.max(2, (W - pad) / steps.length - 2);
  let bars = "";
  steps.forEach((s, i) => {
    let y = H - pad;
    const x = pad + i * (bw + 2);
    PARTS.forEach((p, k) => {
      const h = (s[p + "_ms"] / max) * (H - 2 * pad);
      if (h <= 0) return;
      y -= h;
      bars += `<rect x="${x}" y="${y}" width="${bw}" height="${h}" fill="${PART_COLORS[k]}"><title>step ${s.step} ${p} ${ms(s[p + "_ms"])} ms</title></rect>`;
    });
  });
  const legend = PARTS.map((p, k) => `<span><i style="background:${PART_COLORS[k]}"></i>${p}</span>`).join("");
  return `<svg id="step-chart" width="${W}" height="${H}" role="img"><text x="2" y="12" class="muted">${ms(max)} ms</text>${bars}</svg>
    <div class="legend">${legend}</div>`;
}

async function overview() {
  const d = await runApi("overview");
  if (!state.host) state.hosts[state.run] = d.hosts;
  const hosts = await runHosts();
  const s = d.step_summary;
  const dev = d.devices.map((v) => `${esc(v.name)} (${esc(v.host)}) busy ${ms(v.busy_ms)} ms, ${v.ops} ops, ` +
    `idle ${v.idle_pct.toFixed(1)}%`).join("<br>") +
    `<br><small>idle: of each device's first-to-last activity (XProf's window), ${d.device_idle_pct.toFixed(1)}% ` +
    `over all; utilization and host overhead below: of step time</small>`;
  const kpis = d.kpis.map((k) => `<tr><td>${esc(k.name)}</td><td class="num">${k.value.toFixed(2)} ${esc(k.unit)}</td>
    <td class="rating-${esc(k.rating)}">${esc(k.rating)}</td></tr>`).join("");
  const findings = d.findings.length ? d.findings.map((f) => `<div class="finding ${esc(f.severity)}">
    <b class="severity-${esc(f.severity)}">${esc(f.title)}</b><br>${esc(f.evidence)}<br><i>Fix:</i> ${esc(f.fix)}</div>`).join("")
    : "<p>No findings: nothing stands out.</p>";
  const breakdown = PARTS.map((p) => `<td class="num">${ms(s.breakdown_ms[p])}</td>`).join("");
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}</div>
    <h2>${esc(d.path)}</h2>
    <p>${esc(d.platform.toUpperCase())} · hosts ${esc(d.hosts.join(", "))} · ${d.events.toLocaleString()} events · span ${ms(d.span_ms)} ms</p>
    <p>${dev}</p>
    <h2>Steps</h2>
    <p id="step-summary">${s.count} steps (${esc(s.method)}), mean ${ms(s.mean_ms)} ms, median ${ms(s.median_ms)} ms, p90 ${ms(s.p90_ms)} ms</p>
    ${stepChart(d.steps)}
    <table><tr>${PARTS.map((p) => `<th class="num">${p} ms</th>`).join("")}</tr><tr>${breakdown}</tr></table>
    ${hostsSection(d)}
    ${linesSection(d)}
    <h2>KPIs</h2><table>${kpis}</table>
    <h2>Findings</h2><div id="findings">${findings}</div>`;
  onHostPick(() => go("overview"));
}

// Multi-host runs: each host's totals, then its step times side by side, the straggler marked.
function hostsSection(d) {
  if (!d.host_stats || d.host_stats.length < 2) return "";
  const names = d.host_stats.map((h) => h.host);
  const rows = d.host_stats.map((h) => `<tr><td>${esc(h.host)}</td><td>${esc(h.clock)}</td>
    <td class="num">${ms(h.offset_ms)}</td><td class="num">${h.steps}</td><td class="num">${ms(h.mean_step_ms)}</td>
    <td class="num">${ms(h.collective_ms)}</td><td class="num">${ms(h.wait_ms)}</td><td class="num">${ms(h.idle_ms)}</td>
    <td class="num">${h.straggler_steps}</td><td>${esc(h.top_op)}</td></tr>`).join("");
  const bySteps = new Map();
  for (const r of d.host_steps) {
    if (!bySteps.has(r.step)) bySteps.set(r.step, {});
    bySteps.get(r.step)[r.host] = r;
  }
  const steps = [...bySteps.entries()].map(([step, per]) => {
    const lag = d.stragglers.find((g) => g.step === step);
    return `<tr><td class="num">${step}</td>${names.map((n) => per[n]
      ? `<td class="num${lag && lag.host === n ? " straggler" : ""}">${ms(per[n].duration_ms)}</td>` : "<td></td>").join("")}
      <td>${lag ? `${esc(lag.host)} held the others ${ms(lag.behind_ms)} ms` : ""}</td></tr>`;
  }).join("");
  return `<h2>Hosts</h2><p id="clock-method">clocks aligned by ${esc(d.clock_method)}</p>
    <table id="hosts-table"><tr><th>host</th><th>clock</th><th class="num">offset ms</th><th class="num">steps</th>
      <th class="num">mean step ms</th><th class="num">collective ms</th><th class="num">waiting ms</th>
      <th class="num">idle ms</th><th class="num">straggler in</th><th>top op</th></tr>${rows}</table>
    <table id="host-steps"><tr><th class="num">step</th>${names.map((n) => `<th class="num">${esc(n)} ms</th>`).join("")}
      <th>straggler</th></tr>${steps}</table>`;
}

// The source lines whose ops took the most device time, first ten; nothing when no op has a line.
function linesSection(d) {
  if (!d.lines || !d.lines.length) return "";
  const rows = d.lines.slice(0, 10).map((l) => `<tr><td title="${esc(l.file)}"><code>${esc(l.source)}</code></td>
    <td>${esc(l.function)}</td><td class="num">${ms(l.self_ms)}</td><td class="num">${l.pct_device.toFixed(1)}</td>
    <td>${esc(l.ops)}</td></tr>`).join("");
  const p = new URLSearchParams({ run: state.run });
  if (state.host) p.set("host", state.host);
  return `<h2>Top source lines</h2><table id="lines-table"><tr><th>line</th><th>function</th><th class="num">self ms</th>
      <th class="num">% device</th><th>top ops</th></tr>${rows}</table>
    <p class="muted">${d.lines.length} line${d.lines.length === 1 ? "" : "s"} with device time ·
      <a href="#/flame?${esc(p)}">by call stack</a></p>`;
}

// ---- ops ---------------------------------------------------------------------------------------
const OP_COLS = [["name", "op"], ["category", "category"], ["count", "count", 1], ["total_ms", "total ms", 1],
  ["self_ms", "self ms", 1], ["avg_ms", "avg ms", 1], ["pct_time", "%time", 1], ["gflops_per_s", "GFLOP/s", 1],
  ["gbytes_per_s", "GB/s", 1], ["devices", "devices", 1], ["module", "module"], ["scope", "scope"]];

function groupOps(rows, by) {
  if (by === "none") return rows;
  const groups = new Map();
  for (const r of rows) {
    const k = r[by] || "(none)";
    const g = groups.get(k) || { name: k, category: by === "category" ? k : "", count: 0, total_ms: 0, self_ms: 0,
      avg_ms: 0, pct_time: 0, gflops_per_s: 0, gbytes_per_s: 0, module: by === "module" ? k : "", scope: by === "scope" ? k : "" };
    g.count += r.count; g.total_ms += r.total_ms; g.self_ms += r.self_ms; g.pct_time += r.pct_time;
    g.avg_ms = g.total_ms / g.count;
    groups.set(k, g);
  }
  return [...groups.values()];
}

async function ops() {
  const d = await runApi("ops");
  const sort = state.params.get("sort") || "self_ms", filter = state.params.get("filter") || "";
  const by = state.params.get("group") || "none";
  $("#page").innerHTML = `<div class="toolbar">
      <input id="op-filter" placeholder="filter (regex)" value="${esc(filter)}">
      <label>group by <select id="op-group">${["none", "category", "module", "scope"].map((g) =>
        `<option ${g === by ? "selected" : ""}>${g}</option>`).join("")}</select></label></div>
    <div id="op-bars"></div><table id="ops-table"></table>`;
  const draw = () => {
    let re;
    try { re = new RegExp($("#op-filter").value, "i"); } catch (e) { re = /.*/; }
    let rows = groupOps(d.ops.filter((r) => re.test(`${r.name} ${r.category} ${r.module} ${r.scope} ${r.op_name}`)),
      $("#op-group").value);
    const key = state.params.get("sort") || sort, numeric = typeof (rows[0] || {})[key] === "number";
    rows.sort((a, b) => numeric ? b[key] - a[key] : String(a[key]).localeCompare(String(b[key])));
    const top = rows.slice(0, 15), max = Math.max(...top.map((r) => r.self_ms), 1e-9);
    $("#op-bars").innerHTML = top.map((r) => `<div><span class="bar" style="width:${(300 * r.self_ms / max).toFixed(0)}px"></span>
      ${esc(r.name)} <span class="muted">${ms(r.self_ms)} ms</span></div>`).join("");
    $("#ops-table").innerHTML = `<tr>${OP_COLS.map(([k, h, n]) => `<th data-key="${k}" class="${n ? "num" : ""}">${h}${k === key ? " ▾" : ""}</th>`).join("")}</tr>` +
      rows.map((r) => `<tr>${OP_COLS.map(([k, , n]) => `<td class="${n ? "num" : ""}">${n ? (k === "count" || k === "devices" ? (r[k] ?? "") : ms(r[k])) : esc(r[k])}</td>`).join("")}</tr>`).join("");
    document.querySelectorAll("#ops-table th").forEach((th) => {
      th.onclick = () => { state.params.set("sort", th.dataset.key); draw(); };
    });
  };
  $("#op-filter").oninput = draw;
  $("#op-group").onchange = draw;
  draw();
}

// ---- flame: device time by Python call stack, as an icicle of DOM boxes ------------------------------
// nodes: the flame JSON (depth first, children by total); start: each node's left edge in ms from the
// root's; focus: the node drawn full width, its ancestors as full-width rows above it; search: lower case.
const FL = { nodes: [], start: [], focus: 0, search: "" };
const FL_ROW = 20;
const FL_KINDS = [["frame", "your code", 212, 70], ["library", "library frames", 268, 30], ["op", "op", 28, 85],
  ["none", "no source", 0, 0], ["root", "all", 220, 10]];

// Each node's left edge: its parent's left edge plus the totals of the siblings drawn before it.
function flameStarts(nodes) {
  const start = nodes.map(() => 0), next = nodes.map(() => 0);
  nodes.forEach((n, i) => {
    if (n.parent < 0) return;
    start[i] = next[i] = next[n.parent];
    next[n.parent] += n.total_ms;
  });
  return start;
}

// A light fill by kind, its shade varied by name so that neighbours stand apart.
function flameColor(n) {
  const [, , hue, sat] = FL_KINDS.find((k) => k[0] === n.kind) || FL_KINDS[3];
  let h = 0;
  for (const c of n.name) h = (h * 31 + c.charCodeAt(0)) % 9973;
  return `hsl(${hue + (h % 16) - 8},${sat}%,${70 + (h % 13)}%)`;
}

// Which nodes the search matches, and their share of all the time (a match inside a match counted once).
function flameHits() {
  const hit = FL.nodes.map((n) => FL.search !== "" && n.name.toLowerCase().includes(FL.search));
  const under = [];
  let matched = 0;
  FL.nodes.forEach((n, i) => {
    under[i] = n.parent >= 0 && (under[n.parent] || hit[n.parent]);
    if (hit[i] && !under[i]) matched += n.total_ms;
  });
  return { hit, pct: 100 * matched / (FL.nodes[0].total_ms || 1), count: hit.filter(Boolean).length };
}

function flameBox(i, left, width, px, cls, hits) {
  const n = FL.nodes[i];
  const tip = `${n.name}\ntotal ${ms(n.total_ms)} ms (${n.pct.toFixed(1)}% of all)\nself ${ms(n.self_ms)} ms`;
  const mark = hits.hit[i] ? " fl-hit" : FL.search ? " fl-dim" : "";
  const label = px >= 24 ? `${esc(n.name)} <span class="fl-ms">${ms(n.total_ms)} ms</span>` : "";
  return `<div class="fl-node fl-${esc(n.kind)}${cls}${mark}" data-i="${i}" title="${esc(tip)}" ` +
    `style="left:${left.toFixed(4)}%;width:${width.toFixed(4)}%;top:${n.depth * FL_ROW}px;background:${flameColor(n)}">${label}</div>`;
}

// The focus full width at its depth, its ancestors full width above it, its subtree below scaled to it;
// boxes under half a pixel wide are left out.
function drawFlame() {
  const box = $("#flame");
  if (!box || !FL.nodes.length) return;
  const nodes = FL.nodes, f = FL.focus, top = nodes[f], span = top.total_ms, W = box.clientWidth, hits = flameHits();
  let html = "", deepest = top.depth;
  for (let a = top.parent; a >= 0; a = nodes[a].parent) html += flameBox(a, 0, 100, W, " fl-crumb", hits);
  for (let i = f; i < nodes.length && (i === f || nodes[i].depth > top.depth); i++) {
    const w = span > 0 ? nodes[i].total_ms / span : 0;
    if (w * W < 0.5 && i !== f) continue;
    deepest = Math.max(deepest, nodes[i].depth);
    html += flameBox(i, 100 * (FL.start[i] - FL.start[f]) / (span || 1), i === f ? 100 : 100 * w, w * W,
      i === f ? " fl-focus" : "", hits);
  }
  box.style.height = `${(deepest + 1) * FL_ROW}px`;
  box.innerHTML = html;
  $("#fl-match").textContent = FL.search ?
    `${hits.count} match${hits.count === 1 ? "" : "es"}, ${hits.pct.toFixed(1)}% of all` : "";
  $("#fl-status").textContent = f ? `zoomed to ${top.name}: ${ms(top.total_ms)} ms, ${top.pct.toFixed(1)}% of all` :
    `all: ${ms(top.total_ms)} ms of device op time`;
}

function flameFocus(i) {
  FL.focus = i;
  const p = new URLSearchParams({ run: state.run });
  if (state.host) p.set("host", state.host);
  if (i) p.set("focus", i);
  history.replaceState(null, "", `#/flame?${p}`);
  drawFlame();
}

async function flame() {
  const d = await runApi("flame");
  const hosts = await runHosts();
  FL.nodes = d.flame || [];
  if (FL.nodes.length < 2) {
    FL.nodes = [];
    $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}</div><p>No device op time to draw.</p>`;
    onHostPick(() => go("flame"));
    return;
  }
  FL.start = flameStarts(FL.nodes);
  const f = parseInt(state.params.get("focus") || "0", 10);
  FL.focus = f > 0 && f < FL.nodes.length ? f : 0;
  const legend = FL_KINDS.slice(0, 4).map(([, label, hue, sat]) =>
    `<span><i style="background:hsl(${hue},${sat}%,74%)"></i>${label}</span>`).join("");
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}
      <input id="fl-search" placeholder="search frames and ops" value="${esc(FL.search)}"><span id="fl-match"></span>
      <span class="muted">device time by Python call stack · click a box to zoom in, a row above it to zoom out</span></div>
    <div class="legend">${legend}</div><div id="flame"></div><p id="fl-status" class="muted"></p>`;
  $("#flame").onclick = (ev) => {
    const el = ev.target.closest(".fl-node");
    if (el) flameFocus(parseInt(el.dataset.i, 10));
  };
  $("#fl-search").oninput = (ev) => { FL.search = ev.target.value.trim().toLowerCase(); drawFlame(); };
  onHostPick(() => go("flame"));
  drawFlame();
}

// ---- roofline: each op's mean FLOP/s against its FLOP per byte, log-log, under one device's roofs ----
// ops: the run's op rows; dots: indexes into ops of those placed (FLOP and byte counts, the most self
// time first); self: all ops' self time (ms); pick: the op whose details show (-1: none).
const RF = { ops: [], dots: [], self: 0, pick: -1 };
const RF_DOTS = 200, RF_W = 900, RF_H = 440, RF_LEFT = 96, RF_RIGHT = 32, RF_TOP = 14, RF_BOTTOM = 44;
const BOUND_COLORS = { compute: "#dc2626", memory: "#2563eb", "": "#9ca3af" };
const BOUND_WORDS = { compute: "compute bound", memory: "memory bound", "": "bound unknown" };

function num(v, digits) { return v.toLocaleString("en-US", { maximumSignificantDigits: digits || 3 }); }
function roofDevice(devices) { return devices.find((v) => v.peak_tflops > 0 && v.peak_gbps > 0) || null; }

// "1 GFLOP/s", "100 TFLOP/s": a power of ten in SI prefixes.
function rate(e, unit) {
  if (e < 0 || e >= 27) return `1e${e} ${unit}`;
  return `${["1", "10", "100"][e % 3]} ${" kMGTPEZY"[Math.floor(e / 3)].trim()}${unit}`;
}

// Whole decades around [lo, hi] (log10 values), at least two of them, none of the values on an edge.
function decades(lo, hi) {
  lo = Math.floor(lo - 0.1); hi = Math.ceil(hi + 0.1);
  return hi - lo < 2 ? [lo - 1, lo + 2] : [lo, hi];
}

// The axes: every dot, and the ridge and the compute peak (with room for its label) when there are roofs.
function roofScale(dots, dev) {
  const xs = dots.map((o) => Math.log10(o.intensity)), ys = dots.map((o) => Math.log10(o.gflops_per_s * 1e9));
  let xlo = Math.min(...xs), xhi = Math.max(...xs), ylo = Math.min(...ys), yhi = Math.max(...ys);
  if (dev) {
    const ridge = Math.log10(dev.peak_tflops * 1e3 / dev.peak_gbps), peak = Math.log10(dev.peak_tflops * 1e12);
    xlo = Math.min(xlo, ridge - 1); xhi = Math.max(xhi, ridge + 1);
    ylo = Math.min(ylo, peak - 3); yhi = Math.max(yhi, peak + 0.35);
  }
  const [x0, x1] = decades(xlo, xhi), [y0, y1] = decades(ylo, yhi);
  return { x0, x1, y0, y1,
    x: (v) => RF_LEFT + (Math.log10(v) - x0) / (x1 - x0) * (RF_W - RF_LEFT - RF_RIGHT),
    y: (v) => RF_TOP + (y1 - Math.log10(v)) / (y1 - y0) * (RF_H - RF_TOP - RF_BOTTOM) };
}

// Grid lines and labels, one per decade (every other one on a wide axis), and the axis titles.
function roofAxes(s) {
  const bottom = RF_H - RF_BOTTOM, right = RF_W - RF_RIGHT;
  let out = "";
  for (let e = s.x0; e <= s.x1; e += s.x1 - s.x0 > 8 ? 2 : 1) {
    const x = s.x(10 ** e).toFixed(1);
    out += `<line class="rf-grid-x" data-e="${e}" x1="${x}" y1="${RF_TOP}" x2="${x}" y2="${bottom}"/>
      <text x="${x}" y="${bottom + 15}" text-anchor="middle">${e >= -4 && e <= 5 ? num(10 ** e) : `1e${e}`}</text>`;
  }
  for (let e = s.y1; e >= s.y0; e -= s.y1 - s.y0 > 8 ? 2 : 1) {
    const y = s.y(10 ** e).toFixed(1);
    out += `<line class="rf-grid-y" data-e="${e}" x1="${RF_LEFT}" y1="${y}" x2="${right}" y2="${y}"/>
      <text x="${RF_LEFT - 5}" y="${+y + 4}" text-anchor="end">${rate(e, "FLOP/s")}</text>`;
  }
  return out + `<line class="rf-axis" x1="${RF_LEFT}" y1="${bottom}" x2="${right}" y2="${bottom}"/>
    <line class="rf-axis" x1="${RF_LEFT}" y1="${RF_TOP}" x2="${RF_LEFT}" y2="${bottom}"/>
    <text x="${(RF_LEFT + right) / 2}" y="${RF_H - 8}" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>`;
}

// The memory roof y = x * bw from where it enters the plot up to the ridge, the compute roof flat at
// the peak from there to the right edge, a dashed drop from the ridge to the axis, and their labels.
function roofLines(s, dev) {
  const bw = dev.peak_gbps * 1e9, peak = dev.peak_tflops * 1e12, ridge = peak / bw;
  const a = Math.max(10 ** s.x0, 10 ** s.y0 / bw), b = 10 ** s.x1;
  const [ax, ay, rx, ry, bx] = [s.x(a), s.y(a * bw), s.x(ridge), s.y(peak), s.x(b)].map((v) => +v.toFixed(1));
  // The bandwidth label sits above the middle of the memory roof, away from the dots under it.
  const bottom = RF_H - RF_BOTTOM, angle = Math.atan2(ay - ry, rx - ax);
  const lx = ((ax + rx) / 2).toFixed(1), ly = ((ay + ry) / 2).toFixed(1);
  return `<line id="rf-memory-roof" class="rf-roof" x1="${ax}" y1="${ay}" x2="${rx}" y2="${ry}"/>
    <line id="rf-compute-roof" class="rf-roof" x1="${rx}" y1="${ry}" x2="${bx}" y2="${ry}"/>
    <line class="rf-ridge" x1="${rx}" y1="${ry}" x2="${rx}" y2="${bottom}"/>
    <text id="rf-peak-label" x="${bx - 4}" y="${ry - 6}" text-anchor="end">peak ${num(dev.peak_tflops, 4)} TFLOP/s</text>
    <text id="rf-bw-label" x="${lx}" y="${ly}" dy="-6" text-anchor="middle" transform="rotate(${(-angle * 180 / Math.PI).toFixed(1)} ${lx} ${ly})">${num(dev.peak_gbps, 4)} GB/s</text>
    <text id="rf-ridge-label" x="${rx + 5}" y="${bottom - 6}">ridge ${num(ridge)} FLOP/byte</text>`;
}

// A dot's area is its op's share of all op self time.
function roofDot(s, i) {
  const o = RF.ops[i], share = RF.self > 0 ? o.self_ms / RF.self : 0;
  const tip = `${o.name}\n${num(o.intensity)} FLOP/byte, ${num(o.gflops_per_s, 4)} GFLOP/s\n` +
    `${o.bound_by ? `${num(o.roof_pct)}% of its roof, ${BOUND_WORDS[o.bound_by]}` : "bound unknown"}`;
  return `<circle class="rf-dot" data-op="${i}" cx="${s.x(o.intensity).toFixed(1)}" cy="${s.y(o.gflops_per_s * 1e9).toFixed(1)}" ` +
    `r="${(3 + 17 * Math.sqrt(share)).toFixed(1)}" fill="${BOUND_COLORS[o.bound_by] || BOUND_COLORS[""]}"><title>${esc(tip)}</title></circle>`;
}

function roofChart(dev) {
  if (!RF.dots.length) return "<p>No op has both FLOP and byte counts: nothing to place on a roofline.</p>";
  const s = roofScale(RF.dots.map((i) => RF.ops[i]), dev);
  const legend = (dev ? ["compute", "memory", ""] : [""]).map((b) =>
    `<span><i class="rf-swatch" style="background:${BOUND_COLORS[b]}"></i>${BOUND_WORDS[b]}</span>`).join("");
  return `<div class="legend">${legend}<span class="muted">dot area: share of op self time</span></div>
    <svg id="roofline-chart" width="${RF_W}" height="${RF_H}" role="img"
      aria-label="roofline: FLOP/s against FLOP per byte, log-log">${roofAxes(s)}${dev ? roofLines(s, dev) : ""}
      ${RF.dots.map((i) => roofDot(s, i)).join("")}</svg>`;
}

function roofNote(dev, counted) {
  const shown = !counted ? "" : `${counted} op${counted === 1 ? "" : "s"} with FLOP and byte counts` +
    `${counted > RF.dots.length ? `, the top ${RF.dots.length} by self time shown` : ""}, each at its mean FLOP/s.` +
    " Click a dot for its details.";
  if (!dev) return `<p id="rf-note" class="rf-warn">No device peaks in this profile: run
    <code>jaxprof report --peak-tflops X --peak-gbps Y</code> or calibrate. ${shown}</p>`;
  return `<p id="rf-note">Roofs of <code>${esc(dev.name)}</code>: ${num(dev.peak_tflops, 4)} TFLOP/s,
    ${num(dev.peak_gbps, 4)} GB/s (${esc(dev.peak_source || "peaks")}); ridge at
    ${num(dev.peak_tflops * 1e3 / dev.peak_gbps)} FLOP/byte. ${shown}</p>`;
}

// The picked op's details under the chart, its dot ringed.
function roofDetail(i) {
  RF.pick = i;
  document.querySelectorAll("#roofline-chart .rf-dot").forEach((c) => c.classList.toggle("rf-picked", +c.dataset.op === i));
  document.querySelectorAll("#rf-top tr[data-op]").forEach((r) => r.classList.toggle("rf-picked", +r.dataset.op === i));
  const o = RF.ops[i];
  if (!o) { $("#rf-detail").innerHTML = "<p class='muted'>Click a dot or a row for the op's details.</p>"; return; }
  const share = RF.self > 0 ? 100 * o.self_ms / RF.self : 0;
  const rows = [["op", `<b>${esc(o.name)}</b>`], ["category", esc(o.category)],
    ["source", o.source ? `<code>${esc(o.source)}</code>` : "<span class='muted'>none</span>"],
    ["self time", `${ms(o.self_ms)} ms (${share.toFixed(1)}% of op self time)`], ["FLOPs", o.flops.toLocaleString("en-US")],
    ["bytes", o.bytes.toLocaleString("en-US")], ["intensity", o.flops > 0 ? `${num(o.intensity)} FLOP/byte` : "—"],
    ["achieved", `${num(o.gflops_per_s, 4)} GFLOP/s, ${num(o.gbytes_per_s, 4)} GB/s`],
    ["bound by", esc(BOUND_WORDS[o.bound_by] || o.bound_by)], ["roof", o.bound_by ? `${roofPct(o)}%` : "—"],
    ["devices", o.device ? esc(o.device) : `${o.devices}`]];
  $("#rf-detail").innerHTML = `<table class="rf-kv">${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>`;
}

// An op's share of its roof; above 100% its counts or its time cannot both be right, and it says so.
function roofPct(o) {
  if (!o.bound_by) return "—";
  return o.roof_pct > 100 ? `<span class="rf-over" title="above its roof: the op's FLOP or byte counts or its time are suspect">` +
    `${num(o.roof_pct)}</span>` : num(o.roof_pct);
}

// The ten ops with the most self time, placed on the chart or not.
function roofTable() {
  const top = RF.ops.map((o, i) => i).sort((a, b) => RF.ops[b].self_ms - RF.ops[a].self_ms).slice(0, 10);
  const rows = top.map((i) => {
    const o = RF.ops[i];
    return `<tr data-op="${i}"><td title="${esc(o.name)}">${esc(o.name)}</td><td>${esc(o.category)}</td><td class="num">${ms(o.self_ms)}</td>
      <td class="num">${(RF.self > 0 ? 100 * o.self_ms / RF.self : 0).toFixed(1)}</td>
      <td class="num">${o.flops > 0 && o.bytes > 0 ? num(o.intensity) : "—"}</td>
      <td class="num">${o.flops > 0 ? num(o.gflops_per_s, 4) : "—"}</td>
      <td><span class="rf-swatch" style="background:${BOUND_COLORS[o.bound_by] || BOUND_COLORS[""]}"></span>${esc(o.bound_by || "unknown")}</td>
      <td class="num">${roofPct(o)}</td></tr>`;
  }).join("");
  return `<h2>Top ops by self time</h2><table id="rf-top"><tr><th>op</th><th>category</th><th class="num">self ms</th>
    <th class="num">% self</th><th class="num">FLOP/byte</th><th class="num">GFLOP/s</th><th>bound</th>
    <th class="num">roof %</th></tr>${rows}</table>`;
}

async function roofline() {
  const d = await runApi("ops");
  const hosts = await runHosts();
  const dev = roofDevice(d.devices);
  RF.ops = d.ops;
  RF.self = d.ops.reduce((t, o) => t + o.self_ms, 0);
  const placed = d.ops.map((o, i) => i).filter((i) => RF.ops[i].flops > 0 && RF.ops[i].bytes > 0 && RF.ops[i].gflops_per_s > 0);
  RF.dots = placed.sort((a, b) => RF.ops[b].self_ms - RF.ops[a].self_ms).slice(0, RF_DOTS);
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}</div><h2>Roofline</h2>
    ${roofNote(dev, placed.length)}${roofChart(dev)}<div id="rf-detail"></div>${roofTable()}`;
  const pickOn = (el) => { if (el) roofDetail(+el.dataset.op); };
  const chart = $("#roofline-chart");
  if (chart) chart.onclick = (ev) => pickOn(ev.target.closest(".rf-dot"));
  $("#rf-top").onclick = (ev) => pickOn(ev.target.closest("tr[data-op]"));
  onHostPick(() => go("roofline"));
  roofDetail(-1);
}

// ---- timeline: canvas rows per track, server-side level of detail -------------------------------
// flows: the window's arrows [from_track, from_index, from_depth, from_us, to_track, to_index, to_depth, to_us]
const TL = { start: 0, end: 1, span: 1, data: null, hits: [], search: "", flows: [], showFlows: true, rows: [] };
const ROW_H = 14, LABEL_W = 220, HOST_H = 18;

// Rows top to bottom: a header per host when several are shown, then a row per track, as deep as
// its events and the flow ends on it.
function trackLayout(data) {
  const deepest = new Map();
  for (const f of data.flows || []) {
    deepest.set(f[0], Math.max(deepest.get(f[0]) || 0, f[2]));
    deepest.set(f[4], Math.max(deepest.get(f[4]) || 0, f[6]));
  }
  const grouped = new Set(data.tracks.map((t) => t.host)).size > 1;
  let y = 0, host = null;
  const rows = [];
  for (const t of data.tracks) {
    if (grouped && t.host !== host) {
      host = t.host;
      rows.push({ header: host, y, h: HOST_H });
      y += HOST_H;
    }
    const depth = t.events.reduce((m, e) => Math.max(m, e[3]), deepest.get(t.id) || 0) + 1;
    const label = grouped && t.process.startsWith(t.host + ": ") ? t.process.slice(t.host.length + 2) : t.process;
    rows.push({ t, y, h: depth * ROW_H + 6, label: `${label} · ${t.thread}` });
    y += depth * ROW_H + 6;
  }
  return rows;
}

function drawRow(g, r, data, scale) {
  if (r.header) {
    g.fillStyle = "#1d2330"; g.fillRect(0, r.y, g.canvas.width, r.h - 2);
    g.fillStyle = "#fff"; g.fillText(`host ${r.header}`, 4, r.y + 12);
    return;
  }
  g.fillStyle = "#f3f4f6"; g.fillRect(0, r.y, LABEL_W, r.h - 2);
  g.fillStyle = "#1d2330"; g.fillText(r.label.slice(0, 40), 4, r.y + 11);
  for (const e of r.t.events) {
    const [s_us, d_us, ni, depth] = e;
    const x = LABEL_W + (s_us / 1000 - TL.start) * scale, w = Math.max(1, (d_us / 1000) * scale);
    const name = ni >= 0 ? data.names[ni] : `(${e[4] || "many"} events)`;
    const y = r.y + depth * ROW_H;
    const hit = TL.search && name.toLowerCase().includes(TL.search);
    g.fillStyle = ni < 0 ? "#9ca3af" : hit ? "#dc2626" : PART_COLORS[(ni * 7) % 6];
    g.fillRect(Math.max(LABEL_W, x), y + 1, w, ROW_H - 2);
    if (w > 40) { g.fillStyle = "#fff"; g.fillText(name.slice(0, Math.floor(w / 6)), Math.max(LABEL_W, x) + 2, y + 11); }
    TL.hits.push({ x, y, w, h: ROW_H, name, e, track: r.t });
  }
}

// Thin arrows from the end of each flow's first event to the start of its second, clipped to the plot.
function drawFlows(g, rows, scale) {
  const rowOf = new Map(rows.filter((r) => r.t).map((r) => [r.t.id, r]));
  g.save();
  g.beginPath(); g.rect(LABEL_W, 0, g.canvas.width - LABEL_W, g.canvas.height); g.clip();
  g.strokeStyle = g.fillStyle = "#111827"; g.lineWidth = 1;
  for (const [ft, , fd, f_us, tt, , td, t_us] of TL.flows) {
    const a = rowOf.get(ft), b = rowOf.get(tt);
    if (!a || !b) continue;
    const x0 = LABEL_W + (f_us / 1000 - TL.start) * scale, y0 = a.y + fd * ROW_H + ROW_H / 2;
    const x1 = LABEL_W + (t_us / 1000 - TL.start) * scale, y1 = b.y + td * ROW_H + ROW_H / 2;
    g.beginPath(); g.moveTo(x0, y0); g.lineTo(x1, y1); g.stroke();
    const ang = Math.atan2(y1 - y0, x1 - x0);
    g.beginPath(); g.moveTo(x1, y1);
    g.lineTo(x1 - 6 * Math.cos(ang - 0.4), y1 - 6 * Math.sin(ang - 0.4));
    g.lineTo(x1 - 6 * Math.cos(ang + 0.4), y1 - 6 * Math.sin(ang + 0.4));
    g.closePath(); g.fill();
  }
  g.restore();
}

function drawTimeline() {
  const cv = $("#timeline"), data = TL.data;
  if (!cv || !data) return;
  const rows = trackLayout(data), W = cv.clientWidth;
  TL.rows = rows;
  cv.width = W;
  cv.height = Math.max(60, rows.reduce((s, r) => s + r.h, 0));
  const g = cv.getContext("2d"), scale = (W - LABEL_W) / (TL.end - TL.start);
  g.font = "11px system-ui";
  TL.hits = [];
  for (const r of rows) drawRow(g, r, data, scale);
  if (TL.showFlows) drawFlows(g, rows, scale);
}

async function showEvent(hit) {
  const head = `${hit.name}\n${hit.track.process} · ${hit.track.thread}\n` +
    `start ${ms(hit.e[0] / 1000)} ms, duration ${ms(hit.e[1] / 1000)} ms`;
  $("#event-info").textContent = head;
  if (hit.e[2] < 0) return;  // merged sub-pixel events: zoom in for each one
  const ev = await runApi(`event?track=${hit.track.id}&index=${hit.e[4]}`);
  $("#event-info").textContent = head + "\n" + Object.entries(ev.args || {}).map(([k, v]) => `${k}: ${v}`).join("\n");
}

async function loadWindow() {
  const cv = $("#timeline");
  const px = Math.max(200, (cv ? cv.clientWidth : 1000) - LABEL_W);
  TL.data = await runApi(`timeline?start_ms=${TL.start}&end_ms=${TL.end}&px=${px}`);
  TL.flows = TL.data.flows || [];
  const flows = TL.flows.length ? ` · ${TL.flows.length}${TL.data.flows_truncated ? "+" : ""} flows` : "";
  $("#tl-status").textContent = `${ms(TL.start)}–${ms(TL.end)} ms · ${TL.data.returned_events.toLocaleString()} of ` +
    `${TL.data.total_events.toLocaleString()} events${TL.data.aggregated ? ` (${TL.data.aggregated} merged at this zoom)` : ""}${flows}`;
  drawTimeline();
}

function setWindow(a, b) {
  const min = 0, max = TL.span, w = Math.min(Math.max(b - a, 1e-6), max);
  a = Math.max(min, Math.min(a, max - w));
  TL.start = a; TL.end = Math.min(max, a + w);
  const host = state.host ? `&host=${encodeURIComponent(state.host)}` : "";
  history.replaceState(null, "", `#/timeline?run=${encodeURIComponent(state.run)}&start=${TL.start}&end=${TL.end}${host}`);
  loadWindow();
}

function zoom(factor, at) {
  const c = at === undefined ? (TL.start + TL.end) / 2 : at;
  setWindow(c - (c - TL.start) * factor, c + (TL.end - c) * factor);
}

async function timeline() {
  const whole = await runApi("timeline?px=1");  // the profile's full time range and every host
  state.hosts[state.run] = whole.hosts;
  TL.span = whole.end_ms;
  TL.start = parseFloat(state.params.get("start") || String(whole.start_ms));
  TL.end = parseFloat(state.params.get("end") || String(whole.end_ms));
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(whole.hosts)}<input id="tl-search" placeholder="search names">
      <label><input type="checkbox" id="tl-flows" ${TL.showFlows ? "checked" : ""}> Flows</label>
      <span class="muted">wheel / W S zoom · drag / A D pan · click an event</span><span id="tl-status"></span></div>
    <div id="timeline-wrap"><canvas id="timeline"></canvas></div><div id="event-info"></div>`;
  const cv = $("#timeline");
  const tAt = (clientX) => TL.start + ((clientX - cv.getBoundingClientRect().left - LABEL_W) / (cv.clientWidth - LABEL_W)) * (TL.end - TL.start);
  cv.onwheel = (ev) => { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, tAt(ev.clientX)); };
  let drag = null;
  cv.onmousedown = (ev) => { drag = { x: ev.clientX, s: TL.start, e: TL.end, moved: false }; };
  window.onmouseup = (ev) => {
    if (drag && !drag.moved) {
      const r = cv.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      const hit = TL.hits.find((h) => x >= h.x && x <= h.x + Math.max(h.w, 2) && y >= h.y && y <= h.y + h.h);
      if (hit) showEvent(hit);
    }
    drag = null;
  };
  cv.onmousemove = (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x;
    if (Math.abs(dx) > 3) drag.moved = true;
    const dt = (dx / (cv.clientWidth - LABEL_W)) * (drag.e - drag.s);
    if (drag.moved) setWindow(drag.s - dt, drag.e - dt);
  };
  document.onkeydown = (ev) => {
    if (state.page !== "timeline" || ev.target.tagName === "INPUT") return;
    const k = ev.key.toLowerCase(), w = TL.end - TL.start;
    if (k === "w") zoom(0.8); else if (k === "s") zoom(1.25);
    else if (k === "a") setWindow(TL.start - w * 0.2, TL.end - w * 0.2);
    else if (k === "d") setWindow(TL.start + w * 0.2, TL.end + w * 0.2);
  };
  $("#tl-search").oninput = (ev) => { TL.search = ev.target.value.toLowerCase(); drawTimeline(); };
  $("#tl-flows").onchange = (ev) => { TL.showFlows = ev.target.checked; drawTimeline(); };
  onHostPick(() => setWindow(TL.start, TL.end));
  await loadWindow();
}

// ---- memory ------------------------------------------------------------------------------------
async function memory() {
  const d = await runApi("memory");
  if (!d.memory.length) { $("#page").innerHTML = "<p>This profile records no allocations.</p>"; return; }
  const W = 900, H = 260, pad = 40;
  const series = Object.entries(d.memory_timeline);
  const tMax = Math.max(...series.flatMap(([, pts]) => pts.map((p) => p[0])), 1e-9);
  const bMax = Math.max(...series.flatMap(([, pts]) => pts.map((p) => p[1])), 1);
  const lines = series.map(([name, pts], k) => {
    const path = pts.map((p, i) => `${i ? "L" : "M"}${(pad + (p[0] / tMax) * (W - pad)).toFixed(1)},${(H - pad - (p[1] / bMax) * (H - 2 * pad)).toFixed(1)}`).join("");
    return `<path d="${path}" fill="none" stroke="${PART_COLORS[k % 8]}" stroke-width="1.5"><title>${esc(name)}</title></path>`;
  }).join("");
  const rows = d.memory.map((m) => `<tr>${Object.values(m).map((v) => `<td>${esc(typeof v === "number" ? +v.toFixed(3) : v)}</td>`).join("")}</tr>`).join("");
  $("#page").innerHTML = `<h2>Memory in use</h2><svg id="memory-chart" width="${W}" height="${H}">${lines}
    <text x="2" y="14">${(bMax / 1e6).toFixed(1)} MB</text><text x="${W - 80}" y="${H - 5}">${ms(tMax)} ms</text></svg>
    <table><tr>${Object.keys(d.memory[0]).map((k) => `<th>${esc(k)}</th>`).join("")}</tr>${rows}</table>`;
}

// ---- compare: two runs through the diff engine (/api/diff), base → new ------------------------------
const CHANGES = ["slower", "faster", "added", "removed", "unchanged"];
const MATCHES = ["name", "op_name", "shape", "none"];
const CHANGE_CLASS = { slower: "change-slower", added: "change-slower", faster: "change-faster",
  removed: "change-faster", unchanged: "muted" };
const CMP_ROWS = 500;  // rows drawn per table; the filter reaches the rest

function signedMs(v) { return `${v < 0 ? "−" : "+"}${ms(Math.abs(v))}`; }
function signedPct(v) { return `${v < 0 ? "−" : "+"}${Math.abs(v).toFixed(1)}%`; }
function changeWord(c) { return `<span class="${CHANGE_CLASS[c] || ""}">${esc(c)}</span>`; }

// The two runs compared: ?base= and ?new= when they name listed runs, else the two newest (runs are
// listed oldest first), new being the newest; a log dir with one run compares it with itself.
function comparedRuns() {
  const ids = state.runs.map((r) => String(r.id)), pick = (k, dflt) => ids.includes(state.params.get(k)) ? state.params.get(k) : dflt;
  const newest = ids[ids.length - 1], before = ids[Math.max(0, ids.length - 2)];
  return { base: pick("base", before), new: pick("new", newest) };
}
function goCompare(base, next) {
  const p = new URLSearchParams({ base, new: next });
  if (state.host) p.set("host", state.host);
  location.hash = `#/compare?${p}`;
}

function stepLine(s) {
  const noise = s.noise_pct > 0 ? ` ± ${s.noise_pct.toFixed(1)}%` : " (no noise estimate)";
  return `<p id="step-delta">step time ${ms(s.base_mean_ms)} → ${ms(s.new_mean_ms)} ms
    (<span class="${s.change_pct > 0 ? "delta-up" : "delta-down"}">${signedPct(s.change_pct)}</span>${noise})
    <b id="verdict" class="verdict ${CHANGE_CLASS[s.verdict] || ""}">${esc(s.verdict)}</b>
    <span class="muted">· median ${ms(s.base_median_ms)} → ${ms(s.new_median_ms)} ms · p90 ${ms(s.base_p90_ms)} →
    ${ms(s.new_p90_ms)} ms · ${s.base_n} → ${s.new_n} steps</span></p>`;
}

function breakdownTable(parts) {
  return `<table id="cmp-breakdown"><tr><th>part</th><th class="num">base ms/step</th><th class="num">new ms/step</th>
    <th class="num">Δ ms/step</th></tr>${parts.map((p) => `<tr><td>${esc(p.part)}</td><td class="num">${ms(p.base_ms)}</td>
    <td class="num">${ms(p.new_ms)}</td><td class="num ${p.delta_ms > 0 ? "delta-up" : p.delta_ms < 0 ? "delta-down" : ""}">
    ${signedMs(p.delta_ms)}</td></tr>`).join("")}</table>`;
}

// One op or scope row: Δ% means nothing for an added or removed row, so it shows a dash.
function diffRow(r, isOp) {
  const renamed = isOp && r.base_name && r.base_name !== r.name ? ` <span class="muted">was ${esc(r.base_name)}</span>` : "";
  const dpct = r.change === "added" || r.change === "removed" ? "—" : signedPct(r.delta_pct);
  const cells = [`<td>${changeWord(r.change)}</td>`, `<td class="num">${signedMs(r.delta_ms)}</td>`,
    `<td class="num">${dpct}</td>`, `<td class="num">${ms(r.base_ms)}</td>`, `<td class="num">${ms(r.new_ms)}</td>`,
    `<td class="num">${+r.base_count.toFixed(2)}</td>`, `<td class="num">${+r.new_count.toFixed(2)}</td>`,
    `<td>${esc(r.name)}${renamed}</td>`, `<td>${esc(r.category)}</td>`];
  if (isOp) cells.push(`<td>${esc(r.scope)}</td>`, `<td>${esc(r.match)}</td>`);
  return `<tr data-change="${esc(r.change)}">${cells.join("")}</tr>`;
}
function diffTable(id, rows, isOp) {
  const head = ["change", "Δ ms/step", "Δ%", "base ms/step", "new ms/step", "base count", "new count",
    isOp ? "op" : "scope", isOp ? "category" : "kind"].concat(isOp ? ["scope", "match"] : []);
  const num = (h) => /ms|Δ|count/.test(h);
  const more = rows.length > CMP_ROWS ? `<p class="muted">first ${CMP_ROWS} of ${rows.length} rows: filter to see the rest</p>` : "";
  return `<table id="${id}"><tr>${head.map((h) => `<th class="${num(h) ? "num" : ""}">${h}</th>`).join("")}</tr>
    ${rows.slice(0, CMP_ROWS).map((r) => diffRow(r, isOp)).join("")}</table>${more}`;
}

function findingsList(findings) {
  if (!findings.length) return "<p>No finding appeared or disappeared.</p>";
  const list = (appeared) => findings.filter((f) => f.appeared === appeared).map((f) =>
    `<li class="${appeared ? "appeared" : "disappeared"}"><b class="severity-${esc(f.severity)}">${esc(f.title)}</b>
    <span class="muted">${esc(f.id)}</span></li>`).join("");
  const part = (title, appeared) => { const l = list(appeared); return l ? `<h3>${title}</h3><ul>${l}</ul>` : ""; };
  return part("Appeared", true) + part("Disappeared", false);
}

function summaryTable(sum) {
  const row = (name, counts, keys) => `<tr><td>${name}</td>${keys.map((k) =>
    `<td class="num">${counts[k] || 0}</td>`).join("")}</tr>`;
  return `<table id="cmp-summary"><tr><th></th>${CHANGES.map((c) => `<th class="num">${changeWord(c)}</th>`).join("")}</tr>
    ${row("ops", sum.ops, CHANGES)}${row("scopes", sum.scopes, CHANGES)}</table>
    <p id="cmp-matched">ops matched by ${MATCHES.map((m) => `${m} <b>${sum.matched[m] || 0}</b>`).join(" · ")}</p>`;
}

async function compare() {
  const { base, new: next } = comparedRuns();
  const options = (sel) => state.runs.map((r) =>
    `<option value="${esc(r.id)}" ${String(r.id) === sel ? "selected" : ""}>${esc(r.path)}</option>`).join("");
  const filter = state.params.get("filter") || "";
  $("#page").innerHTML = `<div class="toolbar"><label>base <select id="cmp-base">${options(base)}</select></label>
    <span>→</span><label>new <select id="cmp-new">${options(next)}</select></label></div><div id="diff"><p class="muted">Comparing…</p></div>`;
  $("#cmp-base").onchange = () => goCompare($("#cmp-base").value, next);
  $("#cmp-new").onchange = () => goCompare(base, $("#cmp-new").value);
  const host = state.host ? `&host=${encodeURIComponent(state.host)}` : "";
  const d = await api(`/api/diff?base=${encodeURIComponent(base)}&new=${encodeURIComponent(next)}${host}`);
  $("#diff").innerHTML = `${stepLine(d.steps)}
    <h2>Breakdown per step</h2>${breakdownTable(d.breakdown)}
    <h2>Summary</h2>${summaryTable(d.summary)}
    <h2>Ops</h2><div class="toolbar"><input id="cmp-filter" placeholder="filter ops and scopes (regex)"
      value="${esc(filter)}"><span class="muted">self time per step; slower/faster beyond ${d.options.min_change_pct}%
      and ${d.options.min_share_pct}% of the base step</span></div>
    <div id="cmp-ops-wrap"></div><h2>Scopes</h2><div id="cmp-scopes-wrap"></div>
    <h2>Findings</h2><div id="cmp-findings">${findingsList(d.findings)}</div>`;
  const draw = () => {
    let re;
    try { re = new RegExp($("#cmp-filter").value, "i"); } catch (e) { re = /.*/; }
    const keep = (r) => re.test(`${r.name} ${r.base_name || ""} ${r.module} ${r.category} ${r.scope} ${r.change}`);
    $("#cmp-ops-wrap").innerHTML = diffTable("cmp-ops", d.ops.filter(keep), true);
    $("#cmp-scopes-wrap").innerHTML = diffTable("cmp-scopes", d.scopes.filter(keep), false);
  };
  $("#cmp-filter").oninput = draw;
  draw();
}

window.addEventListener("resize", drawTimeline);
window.addEventListener("resize", drawFlame);
start();
