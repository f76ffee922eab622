// roofline.js - the viewer's Roofline page: each op's FLOP/s against its arithmetic intensity, under the device's roofs.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// ---- roofline: the library's chart (charts.c: the HTML report's roofline, served by the chart
// endpoint), its dots linked to the ops' details. ops: the run's op rows; self: all ops' self time
// (ms); pick: the op whose details show (-1: none).
const RF = { ops: [], self: 0, pick: -1 };
// charts.c's palette and words, for the table's swatches
const BOUND_COLORS = { compute: "#e15759", memory: "#4e79a7", "": "#888888" };
const BOUND_WORDS = { compute: "compute bound", memory: "memory bound", "": "bound unknown" };

function num(v, digits) { return v.toLocaleString("en-US", { maximumSignificantDigits: digits || 3 }); }

// The op a dot stands for: its <title> starts with the op's name, then ": <x> FLOP/byte, "; of the
// rows of that name (one per program), the one with the most self time, as the chart picks them.
function dotOp(circle) {
  const m = /^([\s\S]*): \S+ FLOP\/byte, /.exec(circle.querySelector("title").textContent);
  let best = -1;
  if (m) RF.ops.forEach((o, i) => { if (o.name === m[1] && (best < 0 || o.self_ms > RF.ops[best].self_ms)) best = i; });
  return best;
}

// The picked op's details under the chart, its dot ringed.
function roofDetail(i) {
  RF.pick = i;
  document.querySelectorAll("#roofline-chart circle.op").forEach((c) => c.classList.toggle("rf-picked", +c.dataset.op === i));
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
  const [d, chart] = await Promise.all([runApi("ops"), runChart("roofline")]);
  const hosts = await runHosts();
  RF.ops = d.ops;
  RF.self = d.ops.reduce((t, o) => t + o.self_ms, 0);
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(hosts)}</div><h2>Roofline</h2>
    <div id="rf-chart">${chart}</div><div id="rf-detail"></div>${roofTable()}`;
  document.querySelectorAll("#roofline-chart circle.op").forEach((c) => { c.dataset.op = dotOp(c); });
  const pickOn = (el) => { if (el) roofDetail(+el.dataset.op); };
  const svg = $("#roofline-chart");
  if (svg) svg.onclick = (ev) => pickOn(ev.target.closest("circle.op"));
  $("#rf-top").onclick = (ev) => pickOn(ev.target.closest("tr[data-op]"));
  onHostPick(() => go("roofline"));
  roofDetail(-1);
}
