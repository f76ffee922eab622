// memory.js - the viewer's Memory page: memory at the peak per compiled module (XLA's buffer assignment:
// the program-order timeline stacked by buffer kind, the buffers live at a point, one buffer's
// instruction, source and life), then the allocators' use over time when the capture records it.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses, and after ops.js (wrapName).
"use strict";

// Round values for the y axis: 0 and multiples of 1, 2 or 5 x 10^k up to max, four or five of them.
function niceTicks(max) {
  const raw = max / 4, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v <= max * (1 + 1e-9); v += step) ticks.push(v);
  return ticks;
}

// ---- sizes -------------------------------------------------------------------------------------
const MEM_UNITS = [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
// The unit a size reads best in: the largest whose one is at most v.
function memUnit(v) { return MEM_UNITS.find(([, u]) => v >= u) || ["B", 1]; }
// "64 MiB", "200.03 MiB", "768 B": up to two decimals, trailing zeros dropped.
function memBytes(v) {
  const [name, u] = memUnit(Math.abs(v));
  return `${+(v / u).toFixed(2)} ${name}`;
}

// The bands the timeline stacks, bottom up: always-live kinds (flat), then the heap's temporaries.
const MEM_KINDS = ["parameter", "output", "constant", "temporary", "small"];
const MEM_COLORS = { parameter: "#0891b2", output: "#7c3aed", constant: "#65a30d", temporary: "#2563eb", small: "#9ca3af" };
const MEM_PLURAL = { parameter: "parameters", output: "outputs", constant: "constants", temporary: "temporaries", small: "small" };
function kindChip(kind) { return `<i class="mem-swatch" style="background:${MEM_COLORS[kind] || "#d1d5db"}"></i>${esc(kind)}`; }

// ---- the chart ---------------------------------------------------------------------------------
// Timeline point j is the bytes live just before heap event j (the last one: after every event); a
// buffer grown at event s and freed at event e is live at points s+1..e; the peak is point peak_index+1.
const MEM_W = 1000, MEM_H = 260, MEM_LEFT = 64, MEM_BOTTOM = 34, MEM_TOP = 12;
function memGeometry(m) {
  // headroom over the peak for its label
  const n = m.timeline.length, max = 1.15 * Math.max(m.peak_bytes, ...m.timeline.map((p) => p.bytes), 1);
  const [unitName, unit] = memUnit(max);
  const plotH = MEM_H - MEM_TOP - MEM_BOTTOM, step = (MEM_W - MEM_LEFT) / Math.max(n, 1);
  return { n, max, unitName, unit, step, x: (j) => MEM_LEFT + j * step, y: (b) => MEM_H - MEM_BOTTOM - (b / max) * plotH };
}

// One band as a step path between two running totals (lo, hi per point, bytes).
function memBand(g, lo, hi, color, kind) {
  let top = "", bottom = "";
  for (let j = 0; j < g.n; j++) {
    top += `${j ? "L" : "M"}${g.x(j).toFixed(1)},${g.y(hi[j]).toFixed(1)}L${g.x(j + 1).toFixed(1)},${g.y(hi[j]).toFixed(1)}`;
    bottom = `L${g.x(j + 1).toFixed(1)},${g.y(lo[j]).toFixed(1)}L${g.x(j).toFixed(1)},${g.y(lo[j]).toFixed(1)}` + bottom;
  }
  return `<path class="mem-band" data-kind="${kind}" d="${top}${bottom}Z" fill="${color}" fill-opacity=".8"><title>${esc(MEM_PLURAL[kind])}</title></path>`;
}

function memChart(m) {
  const g = memGeometry(m);
  let lo = m.timeline.map(() => 0), bands = "";
  for (const kind of ["parameter", "output", "constant"]) {
    const b = m.kind_bytes[kind] || 0;
    if (!b) continue;
    const hi = lo.map((v) => v + b);
    bands += memBand(g, lo, hi, MEM_COLORS[kind], kind);
    lo = hi;
  }
  bands += memBand(g, lo, m.timeline.map((p) => p.bytes), MEM_COLORS.temporary, "temporary");
  const grid = niceTicks(g.max / g.unit).map((v) => { const y = g.y(v * g.unit).toFixed(1);
    return `<line class="grid" x1="${MEM_LEFT}" x2="${MEM_W}" y1="${y}" y2="${y}"/><text x="${MEM_LEFT - 6}" y="${+y + 4}" text-anchor="end">${+v.toPrecision(6)}</text>`; }).join("");
  const pk = m.peak_index + 1, px = g.x(pk + 0.5), py = g.y(m.peak_bytes);
  const peak = `<g id="mem-peak" data-point="${pk}"><line x1="${px.toFixed(1)}" x2="${px.toFixed(1)}" y1="${MEM_TOP}" y2="${MEM_H - MEM_BOTTOM}"/>
    <circle cx="${px.toFixed(1)}" cy="${py.toFixed(1)}" r="6"/><text x="${(px + (px > MEM_W - 260 ? -10 : 10)).toFixed(1)}" y="${(py - 8).toFixed(1)}"
    text-anchor="${px > MEM_W - 260 ? "end" : "start"}">peak ${esc(memBytes(m.peak_bytes))} at ${esc(m.peak_instruction)}</text>
    <title>the peak: click for the buffers live there</title></g>`;
  const labels = [0, g.n - 1].filter((j, i, a) => a.indexOf(j) === i).map((j) =>
    `<text x="${g.x(j + 0.5).toFixed(1)}" y="${MEM_H - MEM_BOTTOM + 14}" text-anchor="middle">${j}</text>`).join("");
  return `<svg id="mem-chart" viewBox="0 0 ${MEM_W} ${MEM_H}" width="${MEM_W}" height="${MEM_H}" role="img">${grid}${bands}
      <rect id="mem-hit" x="${MEM_LEFT}" y="${MEM_TOP}" width="${MEM_W - MEM_LEFT}" height="${MEM_H - MEM_TOP - MEM_BOTTOM}"/>
      <g id="mem-span"></g><g id="mem-pick"></g>${peak}${labels}
      <text x="${MEM_LEFT + (MEM_W - MEM_LEFT) / 2}" y="${MEM_H - 4}" text-anchor="middle" class="muted">program order: heap event (click a point for the buffers live there)</text>
      <text x="14" y="${MEM_TOP + (MEM_H - MEM_TOP - MEM_BOTTOM) / 2}" transform="rotate(-90 14 ${MEM_TOP + (MEM_H - MEM_TOP - MEM_BOTTOM) / 2})"
        text-anchor="middle" class="muted">live (${g.unitName})</text></svg>`;
}

// ---- the buffers live at a point, one buffer ---------------------------------------------------
// Live at point j: always-live buffers (start -1), heap buffers with start < j <= end; the small row
// exists at the peak only. Only buffers live at the peak are known, so other points may hold more.
function memLiveAt(m, j) {
  const peak = j === m.peak_index + 1;
  return m.buffers.filter((b) => b.kind === "small" ? peak : b.start < 0 || (b.start < j && j <= b.end));
}

// The file's name and line (the whole path on hover): the line must show, so it is never clipped.
function memSourceCell(src) {
  return src ? `<td title="${esc(src)}"><code>${esc(src.split("/").pop())}</code></td>` : `<td class="muted">—</td>`;
}

function memBufferRows(rows) {
  return rows.map((b) => `<tr data-buffer="${b._i}"><td class="num">${b.bytes.toLocaleString()}</td>
    <td class="num">${esc(memBytes(b.bytes))}</td><td>${kindChip(b.kind)}</td>
    <td class="wrap">${b.kind === "small" ? `<span class="muted">${b.n_small} buffer${b.n_small === 1 ? "" : "s"} under 16 KiB</span>` : wrapName(b.instruction)}</td>
    <td><code>${esc(b.shape)}</code></td>${memSourceCell(b.source)}</tr>`).join("");
}
function memListAt(m, j) {
  const rows = memLiveAt(m, j), known = rows.reduce((t, b) => t + b.bytes, 0);
  const bytes = j < m.timeline.length ? m.timeline[j].bytes : m.peak_bytes, peak = j === m.peak_index + 1;
  const where = m.timeline.length ? (peak ? `at the peak (point ${j}, after ${esc(m.peak_instruction)})` :
    `at point ${j}${j < m.timeline.length - 1 ? `, before ${esc(m.timeline[j].instruction)}` : ", after the last event"}`) : "for the whole program";
  const rest = bytes - known;
  const restNote = !peak && rest > 0 ? `<p class="muted" id="mem-rest">${esc(memBytes(rest))} more are live here in buffers not live at the peak
    (the buffer assignment lists buffers at the peak only).</p>` : "";
  $("#mem-live").innerHTML = `<h3 id="mem-live-title">${esc(memBytes(bytes))} live ${where}: ${rows.length} buffer${rows.length === 1 ? "" : "s"} listed</h3>
    <table id="mem-buffers"><tr><th class="num">bytes</th><th class="num">size</th><th>kind</th><th>instruction</th><th>shape</th>
      <th>source</th></tr>${memBufferRows(rows)}</table>${restNote}`;
  document.querySelectorAll("#mem-buffers tr[data-buffer]").forEach((tr) => {
    tr.onclick = () => memShowBuffer(m, m.buffers[+tr.dataset.buffer], tr);
  });
  memMark(m, "#mem-pick", `<line class="mem-pick-line" x1="${memGeometry(m).x(j + 0.5).toFixed(1)}" x2="${memGeometry(m).x(j + 0.5).toFixed(1)}"
    y1="${MEM_TOP}" y2="${MEM_H - MEM_BOTTOM}"/>`);
}

// Draws svg into the chart's layer sel (the picked point, a buffer's life); nothing without a chart.
function memMark(m, sel, svg) {
  const el = $(sel);
  if (el && m.timeline.length) el.innerHTML = svg;
}

// A buffer's life on the chart: points a..b outlined, a bar under the axis, its name above the bar.
function memLife(m, a, b, name) {
  const g = memGeometry(m), x0 = g.x(a), x1 = g.x(b + 1), right = x0 > MEM_W / 2, w = (x1 - x0).toFixed(1);
  memMark(m, "#mem-span", `<rect class="mem-life" x="${x0.toFixed(1)}" y="${MEM_TOP}" width="${w}" height="${MEM_H - MEM_TOP - MEM_BOTTOM}"/>
    <rect class="mem-life-bar" x="${x0.toFixed(1)}" y="${MEM_H - MEM_BOTTOM + 1}" width="${w}" height="5"/>
    <text class="mem-life-label" x="${(right ? x1 - 4 : x0 + 4).toFixed(1)}" y="${MEM_H - MEM_BOTTOM - 6}" text-anchor="${right ? "end" : "start"}">life of ${esc(name)}</text>`);
}

function memStackHtml(stack) {
  if (!stack.length) return "";
  return `<ol class="tl-stack" id="mem-b-stack">${stack.map((s) => `<li class="${s.library ? "muted" : ""}">${esc(s.function || "?")}
    <span class="${s.library ? "" : "mem-src"}">${wrapName(s.file)}:${s.line}</span></li>`).join("")}</ol>`;
}

function memShowBuffer(m, b, tr) {
  document.querySelectorAll("#mem-buffers tr.mem-picked").forEach((r) => r.classList.remove("mem-picked"));
  if (tr) tr.classList.add("mem-picked");
  const dash = '<span class="muted">—</span>';
  const row = (k, v, id) => `<tr><th>${k}</th><td${id ? ` id="${id}"` : ""}>${v === "" || v === undefined ? dash : v}</td></tr>`;
  const n = m.timeline.length, always = b.start < 0;
  const at = (i) => `heap event ${i} (<code>${esc((m.timeline[i] || {}).instruction || "")}</code>)`;
  const life = b.kind === "small" ? "" : always ? "the whole program (allocated before it starts)" :
    `allocated at ${at(b.start)}, freed at ${at(b.end)}`;
  $("#mem-buffer").innerHTML = `<h3 id="mem-b-name">${b.kind === "small" ? "small buffers" : esc(b.instruction)}</h3><table class="tl-kv">
    ${row("size", `${esc(memBytes(b.bytes))} <span class="muted">(${b.bytes.toLocaleString()} bytes${b.unpadded_bytes !== b.bytes ?
      `, ${b.unpadded_bytes.toLocaleString()} without padding` : ""})</span>`, "mem-b-bytes")}
    ${row("kind", kindChip(b.kind), "mem-b-kind")}
    ${row("instruction", b.instruction ? `<code>${esc(b.instruction)}</code> · opcode <b id="mem-b-opcode">${esc(b.opcode)}</b>` : "", "mem-b-instruction")}
    ${row("shape", b.shape ? `<code>${esc(b.shape)}</code>` : "", "mem-b-shape")}
    ${row("op_name", esc(b.op_name), "mem-b-op-name")}
    ${row("source", b.source ? `<code>${wrapName(b.source)}</code>${b.function ? ` <span class="muted">in ${esc(b.function)}</span>` : ""}` : "", "mem-b-source")}
    ${row("life", life, "mem-b-life")}
    ${b.stack.length ? row("stack", memStackHtml(b.stack)) : ""}</table>`;
  if (b.kind === "small") return;
  memLife(m, always ? 0 : b.start + 1, always ? n - 1 : Math.max(b.start + 1, Math.min(b.end, n - 1)), b.instruction);
}

// ---- the page ----------------------------------------------------------------------------------
function memModuleOption(mod, pick, hosts) {
  const label = `${mod.name}${hosts > 1 ? ` on ${mod.host}` : ""} — peak ${memBytes(mod.peak_bytes)}${mod.runs ? ` · ${mod.runs} run${mod.runs === 1 ? "" : "s"}` : ""}`;
  return `<option value="${esc(mod.name)}" ${mod.name === pick ? "selected" : ""}>${esc(label)}</option>`;
}

function memSummary(m) {
  const kinds = ["parameter", "output", "constant"].filter((k) => m.kind_bytes[k]).map((k) => `${MEM_PLURAL[k]} ${esc(memBytes(m.kind_bytes[k]))}`);
  const heap = m.peak_bytes - m.always_live_bytes;
  return `<p id="mem-summary"><b>peak ${esc(memBytes(m.peak_bytes))}</b> <span class="muted">(${m.peak_bytes.toLocaleString()} bytes)</span>
    ${m.timeline.length ? ` at heap event ${m.peak_index} of ${m.timeline.length - 1}, <code>${esc(m.peak_instruction)}</code>${m.peak_computation ?
      ` in <code>${esc(m.peak_computation)}</code>` : ""}` : ""}
    · temporaries ${esc(memBytes(heap))} · always live ${esc(memBytes(m.always_live_bytes))}${kinds.length ? ` (${kinds.join(", ")})` : ""}
    · all allocations ${esc(memBytes(m.total_bytes))} <span class="muted">(with fragmentation)</span></p>`;
}

function memLegend(m) {
  return `<div class="legend">${["parameter", "output", "constant"].filter((k) => m.kind_bytes[k]).concat(["temporary"])
    .map((k) => `<span><i style="background:${MEM_COLORS[k]}"></i>${MEM_PLURAL[k]}</span>`).join("")}</div>`;
}

// The picked module in detail: its headline, chart, the buffers at its peak.
async function memModule(name) {
  const d = await runApi(`memory?module=${encodeURIComponent(name)}`), m = d.modules[0];
  m.buffers.forEach((b, i) => { b._i = i; });
  const chart = m.timeline.length ? `${memChart(m)}${memLegend(m)}` :
    `<p class="muted" id="mem-no-heap">No heap events in this module: only buffers live for the whole program.</p>`;
  $("#mem-module-view").innerHTML = `${memSummary(m)}${m.note ? `<p class="notice" id="mem-note">${esc(m.note)}</p>` : ""}${chart}
    <div class="columns"><div id="mem-live"></div><div id="mem-buffer"></div></div>`;
  const peak = m.timeline.length ? m.peak_index + 1 : 0;
  memListAt(m, peak);
  if (!m.timeline.length) return;
  $("#mem-peak").onclick = () => memListAt(m, peak);
  $("#mem-hit").onclick = (ev) => {
    const g = memGeometry(m), box = $("#mem-chart").getBoundingClientRect();
    const x = (ev.clientX - box.left) * (MEM_W / box.width);
    memListAt(m, Math.min(g.n - 1, Math.max(0, Math.floor((x - MEM_LEFT) / g.step))));
  };
}

function memModulesHtml(d) {
  if (!d.modules || !d.modules.length)
    return `<p class="muted" id="mem-no-modules">No compiled module with a buffer assignment in this capture (its HLO protos carry none).</p>`;
  const hosts = new Set(d.modules.map((m) => m.host)).size;
  const pick = d.modules.some((m) => m.name === state.params.get("module")) ? state.params.get("module") : d.modules[0].name;
  return `<div class="toolbar"><label>module <select id="mem-module">${d.modules.map((m) => memModuleOption(m, pick, hosts)).join("")}</select></label>
    <span class="muted">${d.modules.length} module${d.modules.length === 1 ? "" : "s"}, largest peak first</span></div>
    <div id="mem-module-view"></div>`;
}

// ---- allocators --------------------------------------------------------------------------------
// No allocator events: one line on why (XLA:CPU records none) and what gives memory numbers instead.
function noAllocatorEvents(platform) {
  const why = platform === "cpu" ? "XLA:CPU records no allocator events, so there is no allocator timeline"
    : "This capture holds no allocator events (the device tracer was off, or the capture ended first)";
  return `<p id="memory-none" class="muted">Allocators: ${why}; captures on a GPU or TPU show bytes in use over time and the
    peak per memory space here. A snapshot of live buffers on any backend:
    <code>jax.profiler.save_device_memory_profile("memory.prof")</code>, then <code>pprof -http=: memory.prof</code>.</p>`;
}

function allocatorsHtml(d) {
  if (!d.memory.length) return noAllocatorEvents(d.platform);
  const W = 900, H = 260, pad = 40;
  const series = Object.entries(d.memory_timeline);
  const tMax = Math.max(...series.flatMap(([, pts]) => pts.map((p) => p[0])), 1e-9);
  const bMax = Math.max(...series.flatMap(([, pts]) => pts.map((p) => p[1])), 1);
  const lines = series.map(([name, pts], k) => {
    const path = pts.map((p, i) => `${i ? "L" : "M"}${(pad + (p[0] / tMax) * (W - pad)).toFixed(1)},${(H - pad - (p[1] / bMax) * (H - 2 * pad)).toFixed(1)}`).join("");
    return `<path d="${path}" fill="none" stroke="${PART_COLORS[k % 8]}" stroke-width="1.5"><title>${esc(name)}</title></path>`;
  }).join("");
  const rows = d.memory.map((m) => `<tr>${Object.values(m).map((v) => `<td>${esc(typeof v === "number" ? +v.toFixed(3) : v)}</td>`).join("")}</tr>`).join("");
  return `<h2>Allocators: memory in use over time</h2><svg id="memory-chart" width="${W}" height="${H}">${lines}
    <text x="2" y="14">${(bMax / 2 ** 20).toFixed(1)} MiB</text><text x="${W - 80}" y="${H - 5}">${ms(tMax)} ms</text></svg>
    <table><tr>${Object.keys(d.memory[0]).map((k) => `<th>${esc(k)}</th>`).join("")}</tr>${rows}</table>`;
}

async function memory() {
  const d = await runApi("memory");
  $("#page").innerHTML = `<h2>Memory at the peak, per compiled module</h2>${memModulesHtml(d)}<div id="mem-allocators">${allocatorsHtml(d)}</div>`;
  const sel = $("#mem-module");
  if (!sel) return;
  sel.onchange = () => {
    const p = new URLSearchParams(state.params);
    p.set("module", sel.value);
    state.params = p;
    history.replaceState(null, "", `#/memory?${p}`);
    memModule(sel.value);
  };
  await memModule(sel.value);
}
