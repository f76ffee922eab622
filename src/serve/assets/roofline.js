// roofline.js - the viewer's Roofline page: each op's FLOP/s against its arithmetic intensity, under the device's roofs.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

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
