// flame.js - the viewer's Flame page: device time by Python call stack, as an icicle.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

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
  const tip = `${n.name}\ntotal ${ms(n.total_ms)} ms (${n.pct.toFixed(1)}% of all)\nself ${ms(n.self_ms)} ms` +
    (n.split_ms > 0 ? `\n${ms(n.split_ms)} ms estimated: a fusion's time split over its lines by modelled cost` : "");
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

window.addEventListener("resize", () => { if (state.page === "flame") drawFlame(); });
