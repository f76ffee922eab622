// timeline.js - the viewer's Timeline page: the trace on canvas rows, level of detail from the server.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

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

window.addEventListener("resize", () => { if (state.page === "timeline") drawTimeline(); });
