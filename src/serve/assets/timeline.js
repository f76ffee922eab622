// timeline.js - the viewer's Timeline page: a time ruler over canvas rows grouped per process, level of
// detail from the server (dense runs as a busy-fraction strip), range selection with exact totals from
// the server, a details panel, marks, keyboard navigation, and the window and selection in the URL.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go, hostPicker, onHostPick) it uses.
"use strict";

// ---- state --------------------------------------------------------------------------------------------
// start, end: the window (ms from the capture's start); span: the profile's end. tracks: every track of
// the run (from the whole-profile answer), so rows never jump while panning. data: the window's answer.
// sel: {kind: "slice", track, index, start, end, name} or {kind: "range", start, end, tracks (ids or
// null: all)}. flows: the window's arrows [from_track, from_index, from_depth, from_us, to_track,
// to_index, to_depth, to_us]; showFlows draws them all, else only the selected slice's.
const TL = {
  run: null, host: null, start: 0, end: 1, span: 1, tracks: [], data: null, rows: [], hits: [], ticks: [],
  flows: [], showFlows: false, search: "", collapsed: new Set(), sel: null, marks: [], detail: null, agg: null,
  aggSort: { key: "total_ns", desc: true }, seq: 0, mouse: null, labelW: 220, layoutKey: "", ops: null,
  byTrack: new Map(), flowsDrawn: 0,
};
const TL_ROW_H = 16, TL_PAD = 5, TL_GROUP_H = 22, TL_AXIS_H = 30;
const TL_UNITS = [["s", 1e3], ["ms", 1], ["µs", 1e-3], ["ns", 1e-6]];  // unit, its size in ms

// ---- time: nice ticks and readable durations ---------------------------------------------------------

// A 1-2-5 step (ms) giving about one tick per `every` pixels over a window of `span` ms and `width` px.
function tlNiceStep(span, width, every) {
  const raw = span / Math.max(1, width / every), p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw * 0.999);
}

// The unit a step is labelled in: its size in that unit stays in [0.1, 100).
function tlStepUnit(step) { return TL_UNITS.find(([, f]) => step >= f * 0.0999) || TL_UNITS[3]; }

function tlNumber(v, digits) {
  return v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

// The ruler's ticks over [start, end): every multiple of the step, labelled in the step's unit.
function tlTicks(start, end, width) {
  const step = tlNiceStep(end - start, width, 110), [unit, f] = tlStepUnit(step), digits = step / f < 1 ? 1 : 0;
  const out = [];
  for (let k = Math.ceil(start / step - 1e-9); k * step < end; k++) {
    const t = k * step + 0;  // + 0: no "-0"
    out.push({ ms: t, x: (t - start) / (end - start) * width, label: `${tlNumber(t / f, digits)} ${unit}` });
  }
  return { step, unit, ticks: out };
}

// A duration in the unit that suits it, with 4 significant digits ("1.234 ms", "56.78 µs").
function tlDur(v) {
  if (v === 0) return "0";
  const [unit, f] = TL_UNITS.find(([, s]) => Math.abs(v) >= s) || TL_UNITS[3];
  const x = v / f;
  return `${tlNumber(x, x >= 100 ? 1 : x >= 10 ? 2 : 3)} ${unit}`;
}

// The window's ends, in the unit of its width, with digits enough to tell them apart.
function tlWindowText(start, end) {
  const w = end - start, [unit, f] = TL_UNITS.find(([, s]) => w >= s) || TL_UNITS[3];
  const digits = Math.max(0, Math.min(6, 3 - Math.floor(Math.log10(w / f))));
  return `${tlNumber(start / f, digits)} – ${tlNumber(end / f, digits)} ${unit}`;
}

// ---- tracks and rows ------------------------------------------------------------------------------------

// "tf_XLAEigen/-5641046492388053131" -> "XLAEigen": TensorFlow's thread prefix and the thread id go
// (both stay in the row's title); "(overlap N)" stays.
function tlShortThread(name) {
  const m = /^(.*?)( \(overlap \d+\))?$/.exec(name);
  return m[1].replace(/^tf_/, "").replace(/\/-?\d+$/, "") + (m[2] || "");
}

// The server's analysis rows (exposed communication, launch delay: the index's last tracks) go under
// the plane's other derived rows (Steps, XLA Modules, XLA Ops), above its lines, where they are seen.
const TL_ANALYSIS = { exposed_comm: "#e15759", launch_delay: "#9c755f" };
function tlAnalysisFirst(group) {
  const rank = (t) => t.kind === "source" ? 2 : TL_ANALYSIS[t.kind] ? 1 : 0;
  return group.map((t, i) => [rank(t), i, t]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((x) => x[2]);
}

// Rows top to bottom: a header per host when several are shown, a header per process (plane) that
// collapses its tracks, then a row per track as deep as the track's events. y and h in CSS pixels.
function tlLayout(tracks) {
  const hosts = [...new Set(tracks.map((t) => t.host))], multi = hosts.length > 1, rows = [];
  let y = 0;
  const push = (r) => { r.y = y; y += r.h; rows.push(r); return r; };
  for (const host of hosts) {
    const mine = tracks.filter((t) => t.host === host), hostKey = `h\u0000${host}`;
    if (multi) push({ kind: "host", key: hostKey, header: host, label: `host ${host}`, h: TL_GROUP_H, tracks: mine });
    if (multi && TL.collapsed.has(hostKey)) continue;
    for (const proc of [...new Set(mine.map((t) => t.process))]) {
      const group = tlAnalysisFirst(mine.filter((t) => t.process === proc)), key = `p\u0000${host}\u0000${proc}`;
      const label = multi && proc.startsWith(`${host}: `) ? proc.slice(host.length + 2) : proc;
      push({ kind: "group", key, label, title: proc, h: TL_GROUP_H, tracks: group });
      if (TL.collapsed.has(key)) continue;
      const seen = new Map();
      for (const t of group) seen.set(tlShortThread(t.thread), (seen.get(tlShortThread(t.thread)) || 0) + 1);
      const nth = new Map();
      for (const t of group) {
        const short = tlShortThread(t.thread), k = (nth.get(short) || 0) + 1;
        nth.set(short, k);
        push({ kind: "track", key: `t${t.id}`, t, h: Math.max(1, t.levels) * TL_ROW_H + TL_PAD,
          label: seen.get(short) > 1 ? `${short} #${k}` : short, title: `${t.thread}\ntrack ${t.id} · ${t.process}` });
      }
    }
  }
  return rows;
}

// The label column: one element per row (the full name in its title), headers that collapse on click.
function tlLabels(rows) {
  const key = rows.map((r) => `${r.key}:${r.y}`).join("|") + TL.labelW;
  if (key === TL.layoutKey) return;
  TL.layoutKey = key;
  const box = $("#tl-labels");
  box.style.width = `${TL.labelW}px`;
  box.style.height = `${rows.reduce((s, r) => s + r.h, 0)}px`;
  box.innerHTML = rows.map((r, i) => {
    const open = !TL.collapsed.has(r.key), n = r.tracks ? r.tracks.length : 0;
    const text = r.kind === "track" ? esc(r.label)
      : `<span class="tl-caret">${open ? "▾" : "▸"}</span>${esc(r.label)} <span class="tl-count">${n} track${n === 1 ? "" : "s"}</span>`;
    return `<div class="tl-label tl-${r.kind}" data-row="${i}" style="top:${r.y}px;height:${r.h}px"
      title="${esc(r.title || r.label)}">${text}</div>`;
  }).join("");
  box.querySelectorAll(".tl-host, .tl-group").forEach((el) => {
    el.onclick = () => tlToggle(TL.rows[+el.dataset.row].key);
  });
}

function tlToggle(key) {
  if (TL.collapsed.has(key)) TL.collapsed.delete(key); else TL.collapsed.add(key);
  tlDraw();
}

// The label column is as wide as the longest short name needs, within [200, 360] px.
function tlLabelWidth(tracks) {
  const g = document.createElement("canvas").getContext("2d");
  g.font = "12px system-ui, sans-serif";
  const widest = Math.max(0, ...tracks.map((t) => g.measureText(tlShortThread(t.thread)).width),
    ...tracks.map((t) => g.measureText(t.process).width * 0.9));
  return Math.round(Math.min(360, Math.max(200, widest + 36)));
}

// ---- drawing ----------------------------------------------------------------------------------------------

// A colour per name (hashed), as Perfetto does: the same op looks the same everywhere.
function tlColor(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return `hsl(${((h >>> 0) % 360)}, 55%, ${44 + ((h >>> 9) % 12)}%)`;
}

// A canvas sized w x h CSS pixels, sharp on high-DPI screens; its context drawn in CSS pixels.
function tlCanvas(cv, w, h) {
  const dpr = window.devicePixelRatio || 1;
  cv.style.width = `${w}px`; cv.style.height = `${h}px`;
  cv.width = Math.round(w * dpr); cv.height = Math.round(h * dpr);
  const g = cv.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.font = "11px system-ui, sans-serif";
  return g;
}

// x (CSS px on the plot) of a time (ms), and back.
function tlX(t, W) { return (t - TL.start) / (TL.end - TL.start) * W; }
function tlT(x, W) { return TL.start + x / W * (TL.end - TL.start); }

// One merged run: its busy fraction per bucket, shaded (the server's density digits). Buckets are
// snapped to whole pixels so that neighbours tile without seams or overlaps; buckets that share a
// pixel show the busiest of them.
function tlDensity(g, e, y, W, data) {
  const dens = e[7] || "", px = data.px_ns / 1e6, at = (k) => Math.round(tlX(data.start_ms + (e[6] + k) * px, W));
  let x0 = at(0), level = 0;
  for (let k = 0; k < dens.length; k++) {
    const x1 = at(k + 1);
    level = Math.max(level, parseInt(dens[k], 16));
    if (x1 <= x0 && k + 1 < dens.length) continue;  // the next bucket starts in the same pixel
    const a = Math.max(0, x0), b = Math.min(W, Math.max(x1, x0 + 1));
    if (level && b > a) {
      g.fillStyle = `rgba(51, 65, 85, ${(0.12 + 0.88 * level / 15).toFixed(3)})`;
      g.fillRect(a, y + 1, b - a, TL_ROW_H - 2);
    }
    x0 = Math.max(x1, x0 + 1);
    level = 0;
  }
}

// One slice, clipped to the plot: a slice that starts before the window is drawn from the left edge,
// as wide as its visible part, with its name from there.
function tlSlice(g, e, r, W, name) {
  const y = r.y + e[3] * TL_ROW_H, x0 = tlX(e[0] / 1000, W), x1 = tlX((e[0] + e[1]) / 1000, W);
  if (x1 < 0 || x0 > W) return null;
  const cx = Math.max(0, x0), w = Math.max(1, Math.min(W, x1) - cx);
  const hit = TL.search && name.toLowerCase().includes(TL.search), sel = TL.sel && TL.sel.kind === "slice" &&
    TL.sel.track === r.t.id && TL.sel.index === e[4];
  g.globalAlpha = TL.search && !hit ? 0.3 : 1;
  g.fillStyle = hit ? "#dc2626" : TL_ANALYSIS[r.t.kind] || tlColor(name);
  g.fillRect(cx, y + 1, w, TL_ROW_H - 2);
  g.globalAlpha = 1;
  if (sel) { g.strokeStyle = "#111827"; g.lineWidth = 2; g.strokeRect(cx + 1, y + 2, Math.max(1, w - 2), TL_ROW_H - 4); }
  if (w > 28) {
    g.fillStyle = "#fff";
    const fit = Math.floor((w - 6) / 6.2);
    g.fillText(name.length > fit ? `${name.slice(0, Math.max(1, fit - 1))}…` : name, cx + 3, y + 12);
  }
  return { x: cx, y, w, h: TL_ROW_H, name, e, track: r.t, depth: e[3] };
}

function tlTrackRow(g, r, W, data) {
  g.fillStyle = "#e5e7eb"; g.fillRect(0, r.y + r.h - 1, W, 1);
  const events = TL.byTrack.get(r.t.id) || [];
  for (const e of events) {
    if (e[2] < 0) {
      tlDensity(g, e, r.y + e[3] * TL_ROW_H, W, data);
      const x0 = Math.max(0, tlX(e[0] / 1000, W)), x1 = Math.min(W, tlX((e[0] + e[1]) / 1000, W));
      TL.hits.push({ x: x0, y: r.y + e[3] * TL_ROW_H, w: Math.max(1, x1 - x0), h: TL_ROW_H, merged: true, e, track: r.t,
        name: `${e[4]} events merged, ${(100 * e[5] / Math.max(e[1], 1e-9)).toFixed(0)}% busy` });
      continue;
    }
    const h = tlSlice(g, e, r, W, data.names[e[2]]);
    if (h) TL.hits.push(h);
  }
}

// Bands: the marks (kept) and the selection's range, over the plot.
function tlBands(g, W, H) {
  for (const m of TL.marks) {
    const x0 = tlX(m.start, W), x1 = tlX(m.end, W);
    g.fillStyle = "rgba(250, 204, 21, 0.18)"; g.fillRect(x0, 0, Math.max(1, x1 - x0), H);
    g.fillStyle = "#ca8a04"; g.fillRect(x0, 0, 1, H); g.fillRect(x1, 0, 1, H);
  }
  const s = TL.sel;
  if (s && s.kind === "range") {
    const x0 = tlX(s.start, W), x1 = tlX(s.end, W);
    const on = (r) => !s.tracks || (r.kind === "track" ? s.tracks.includes(r.t.id) : r.tracks.some((t) => s.tracks.includes(t.id)));
    g.fillStyle = "rgba(37, 99, 235, 0.14)";
    for (const r of TL.rows) if (on(r)) g.fillRect(x0, r.y, Math.max(1, x1 - x0), r.h);
    g.fillStyle = "#2563eb"; g.fillRect(x0, 0, 1, H); g.fillRect(x1, 0, 1, H);
  }
}

// Thin arrows from the end of each flow's first event to the start of its second.
function tlFlows(g, W) {
  const rowOf = new Map(TL.rows.filter((r) => r.kind === "track").map((r) => [r.t.id, r]));
  const s = TL.sel && TL.sel.kind === "slice" ? TL.sel : null;
  const shown = TL.showFlows ? TL.flows : s ? TL.flows.filter((f) => (f[0] === s.track && f[1] === s.index) ||
    (f[4] === s.track && f[5] === s.index)) : [];
  g.strokeStyle = g.fillStyle = "#111827"; g.lineWidth = 1;
  for (const [ft, , fd, f_us, tt, , td, t_us] of shown) {
    const a = rowOf.get(ft), b = rowOf.get(tt);
    if (!a || !b) continue;
    const x0 = tlX(f_us / 1000, W), y0 = a.y + fd * TL_ROW_H + TL_ROW_H / 2;
    const x1 = tlX(t_us / 1000, W), y1 = b.y + td * TL_ROW_H + TL_ROW_H / 2, ang = Math.atan2(y1 - y0, x1 - x0);
    g.beginPath(); g.moveTo(x0, y0); g.lineTo(x1, y1); g.stroke();
    g.beginPath(); g.moveTo(x1, y1);
    g.lineTo(x1 - 6 * Math.cos(ang - 0.4), y1 - 6 * Math.sin(ang - 0.4));
    g.lineTo(x1 - 6 * Math.cos(ang + 0.4), y1 - 6 * Math.sin(ang + 0.4));
    g.closePath(); g.fill();
  }
  return shown.length;
}

// The ruler: ticks and labels that follow the window, minor ticks, the marks and the selection.
function tlAxis(W) {
  const cv = $("#tl-axis"), g = tlCanvas(cv, W, TL_AXIS_H), { step, ticks } = tlTicks(TL.start, TL.end, W);
  TL.ticks = ticks;
  g.fillStyle = "#f9fafb"; g.fillRect(0, 0, W, TL_AXIS_H);
  g.fillStyle = "#9ca3af";
  const mantissa = Math.round(step / 10 ** Math.floor(Math.log10(step) + 1e-9)), minor = step / (mantissa === 2 ? 4 : 5);
  for (let t = Math.ceil(TL.start / minor) * minor; t < TL.end; t += minor) g.fillRect(tlX(t, W), TL_AXIS_H - 5, 1, 5);
  for (const k of ticks) {
    g.fillStyle = "#6b7280"; g.fillRect(k.x, 8, 1, TL_AXIS_H - 8);
    g.fillStyle = "#1d2330"; g.fillText(k.label, k.x + 4, 17);
  }
  for (const m of TL.marks) { g.fillStyle = "rgba(202, 138, 4, 0.5)"; g.fillRect(tlX(m.start, W), 0, Math.max(2, tlX(m.end, W) - tlX(m.start, W)), 5); }
  if (TL.sel) { g.fillStyle = "rgba(37, 99, 235, 0.6)"; g.fillRect(tlX(TL.sel.start, W), 0, Math.max(2, tlX(TL.sel.end, W) - tlX(TL.sel.start, W)), 5); }
  g.fillStyle = "#d1d5db"; g.fillRect(0, TL_AXIS_H - 1, W, 1);
  $("#tl-range").innerHTML = tlWindowText(TL.start, TL.end);
  $("#tl-range").title = `window ${$("#tl-range").textContent} from the capture's start, ${tlDur(TL.end - TL.start)} wide`;
}

// The plot's width: the wrap less the label column and a scroll bar.
function tlPlotWidth() { return Math.max(200, $("#timeline-wrap").clientWidth - TL.labelW); }

function tlDraw() {
  const cv = $("#timeline");
  if (!cv || !TL.tracks) return;
  TL.rows = tlLayout(TL.tracks);
  tlLabels(TL.rows);
  const W = tlPlotWidth(), H = Math.max(60, TL.rows.reduce((s, r) => s + r.h, 0));
  $("#tl-range").style.width = `${TL.labelW}px`;
  tlAxis(W);
  const g = tlCanvas(cv, W, H), data = TL.data;
  g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
  TL.hits = [];
  for (const t of TL.ticks) { g.fillStyle = "#f3f4f6"; g.fillRect(t.x, 0, 1, H); }
  for (const r of TL.rows) {
    if (r.kind !== "track") { g.fillStyle = r.kind === "host" ? "#e0e7ff" : "#f3f4f6"; g.fillRect(0, r.y, W, r.h - 1); }
    else if (data) tlTrackRow(g, r, W, data);
  }
  tlBands(g, W, H);
  TL.flowsDrawn = tlFlows(g, W);
  // rows taller than the wrap give it a scroll bar only once drawn, which narrows the plot: again
  // at the new width (once: the height, hence the bar, stays), not a different picture on the next draw
  if (tlPlotWidth() !== W && !TL.redrawn) { TL.redrawn = true; tlDraw(); TL.redrawn = false; }
}

// ---- the window: server answers ---------------------------------------------------------------------------

async function tlLoad() {
  const seq = ++TL.seq, px = tlPlotWidth();
  let data;
  try {
    data = await runApi(`timeline?start_ms=${TL.start}&end_ms=${TL.end}&px=${px}`);
  } catch (e) {
    if (seq === TL.seq && $("#tl-status")) $("#tl-status").textContent = `no answer for this window: ${e.message}`;
    return;
  }
  if (seq !== TL.seq || !$("#timeline")) return;  // a newer window was asked for meanwhile
  TL.data = data;
  TL.flows = data.flows || [];
  TL.byTrack = new Map(data.tracks.map((t) => [t.id, t.events]));
  const flows = TL.flows.length ? ` · ${TL.flows.length}${data.flows_truncated ? "+" : ""} flows` : "";
  $("#tl-status").textContent = `${data.total_events.toLocaleString()} events in view` +
    `${data.aggregated ? `, ${data.aggregated.toLocaleString()} of them in dense strips` : ""}${flows}`;
  tlDraw();
}

// The URL keeps the window, the selection and the marks: push for a new selection (back undoes it),
// replace while the window moves.
function tlUrl(push) {
  const p = new URLSearchParams({ run: state.run, start: String(TL.start), end: String(TL.end) });
  if (state.host) p.set("host", state.host);
  if (TL.sel) p.set("sel", tlSelKey(TL.sel).replace(/:$/, ""));
  if (TL.marks.length) p.set("marks", TL.marks.map((m) => `${m.start}:${m.end}`).join(","));
  const url = `#/timeline?${p}`;
  if (url !== location.hash) history[push ? "pushState" : "replaceState"](null, "", url);
}

// Track ids as "1-4,7" (the aggregate API's form, short for wide selections).
function tlRanges(ids) {
  const s = [...ids].sort((a, b) => a - b), out = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : `${s[i]}`);
    i = j;
  }
  return out.join(",");
}
function tlParseRanges(text) {
  const out = [];
  for (const part of (text || "").split(",").filter(Boolean)) {
    const [a, b] = part.split("-").map(Number);
    for (let t = a; t <= (b === undefined ? a : b); t++) out.push(t);
  }
  return out;
}

function tlSetWindow(a, b, push) {
  const w = Math.min(Math.max(b - a, 1e-6), TL.span);
  a = Math.max(0, Math.min(a, TL.span - w));
  TL.start = a; TL.end = Math.min(TL.span, a + w);
  tlUrl(push);
  tlDraw();  // at once, with the answer we have; the new one follows
  tlLoad();
}

function tlZoom(factor, at) {
  const c = at === undefined || at === null ? (TL.start + TL.end) / 2 : at;
  tlSetWindow(c - (c - TL.start) * factor, c + (TL.end - c) * factor);
}

// ---- selection: a slice (details) or a range (totals) ---------------------------------------------------

function tlSelect(sel, push) {
  TL.sel = sel;
  TL.detail = null;
  TL.agg = null;
  $("#tl-details").innerHTML = "";
  $("#tl-agg").innerHTML = "";
  $("#tl-view").classList.toggle("tl-with-panel", !!sel);
  tlUrl(push);
  tlDraw();
  if (sel && sel.kind === "slice") tlShowSlice(sel);
  if (sel && sel.kind === "range") tlShowRange(sel);
}

async function tlShowSlice(sel) {
  let ev;
  try {
    ev = await runApi(`event?track=${sel.track}&index=${sel.index}`);
  } catch (e) {
    if (TL.sel === sel) $("#tl-details").innerHTML = `<p class="rating-bad">${esc(e.message)}</p>`;
    return;
  }
  if (TL.sel !== sel) return;
  sel.start = ev.start_us / 1000; sel.end = (ev.start_us + ev.dur_us) / 1000; sel.name = ev.name;
  TL.detail = ev;
  const ops = await tlOps();
  if (TL.sel !== sel) return;
  $("#tl-details").innerHTML = tlDetailsHtml(ev, ops);
  $("#tl-details").querySelectorAll("a[data-track]").forEach((a) => {
    a.onclick = (e) => { e.preventDefault(); tlSelect({ kind: "slice", track: +a.dataset.track, index: +a.dataset.index }, true); };
  });
  tlDraw();
}

// The run's op rows (category, scope, source), for events whose HLO the profile does not hold.
async function tlOps() {
  const key = `${state.run}|${state.host}`;
  if (!TL.ops || TL.ops.key !== key) {
    try { TL.ops = { key, rows: (await runApi("ops")).ops || [] }; } catch (e) { TL.ops = { key, rows: [] }; }
  }
  return TL.ops.rows;
}

// What the panel says about an event: its HLO instruction when the profile holds its module (found
// by program id, the exact compilation), else the op row of the same module and name.
function tlDetailFacts(ev, ops) {
  const a = ev.args || {}, h = ev.hlo, op = a.hlo_op || (h && h.name) || ev.name, module = a.hlo_module || (h && h.module) || "";
  const row = ops.find((o) => o.name === op && (!module || o.module === module)) || {};
  const pick = (k) => (h && h[k]) || row[k] || "";
  return { op, module, h, category: pick("category"), scope: pick("scope"), op_name: pick("op_name"),
    source: pick("source"), fn: pick("function") };
}

// The user's frames of a Python stack (innermost first), the whole stack folded below them.
function tlStackHtml(stack) {
  const frame = (s) => `<li class="${s.library ? "muted" : ""}">${esc(s.function || "?")} <span class="muted">${esc(s.file)}:${s.line}</span></li>`;
  const user = stack.filter((s) => !s.library).slice(0, 6);
  return `<ol class="tl-stack">${user.map(frame).join("")}</ol>${stack.length > user.length ? `<details class="tl-more">
    <summary>whole stack (${stack.length} frames)</summary><ol class="tl-stack">${stack.map(frame).join("")}</ol></details>` : ""}`;
}

function tlDetailsHtml(ev, ops) {
  const f = tlDetailFacts(ev, ops), h = f.h, a = ev.args || {}, dash = '<span class="muted">—</span>';
  const row = (k, v, id) => `<tr><th>${k}</th><td${id ? ` id="${id}"` : ""}>${v === "" || v === undefined ? dash : v}</td></tr>`;
  const stack = h && h.stack.length ? tlStackHtml(h.stack) : "";
  const flows = (ev.flows || []).map((fl) => `<li>${fl.dir === "out" ? "→" : "←"} <a href="#" data-track="${fl.track}" data-index="${fl.index}">${esc(fl.name)}</a>
    <span class="muted">${esc(tlShortThread(fl.thread))} at ${tlDur(fl.us / 1000)}</span></li>`).join("");
  const stats = Object.entries(a);
  return `<h3 id="tl-d-name">${esc(ev.name)}</h3><table class="tl-kv">
    ${row("category", esc(f.category), "tl-d-category")}${row("scope", esc(f.scope), "tl-d-scope")}
    ${row("op_name", esc(f.op_name), "tl-d-op-name")}
    ${row("source", f.source ? `${esc(f.source)}${f.fn ? ` <span class="muted">in ${esc(f.fn)}</span>` : ""}` : "", "tl-d-source")}
    ${row("duration", tlDur(ev.dur_us / 1000), "tl-d-dur")}${row("self time", tlDur(ev.self_us / 1000), "tl-d-self")}
    ${row("start", tlDur(ev.start_us / 1000))}${row("track", `${esc(ev.process)} · ${esc(tlShortThread(ev.thread))}`)}
    ${row("HLO", h ? `<code>${esc(h.name)}</code> · opcode <b id="tl-d-opcode">${esc(h.opcode)}</b> · module <code id="tl-d-module">${esc(h.module)}</code>` +
      `${h.program_id >= 0 ? ` · program ${h.program_id}` : ""}` : f.module ? `<code>${esc(f.op)}</code> · module <code id="tl-d-module">${esc(f.module)}</code>` : "", "tl-d-hlo")}
    ${h && h.text ? row("HLO text", `<code class="tl-hlo-text">${esc(h.text)}</code>`, "tl-d-hlo-text") : ""}
    ${h && (h.flops || h.bytes) ? row("per run", `${h.flops.toLocaleString()} FLOP · ${h.bytes.toLocaleString()} bytes`) : ""}
    ${stack ? row("stack", stack) : ""}${flows ? row("flows", `<ul class="tl-flows">${flows}</ul>`) : ""}</table>
    <details id="tl-d-raw"><summary>raw stats (${stats.length})</summary><table class="tl-kv">${stats.map(([k, v]) =>
      `<tr><th>${esc(k)}</th><td>${esc(typeof v === "string" ? v : JSON.stringify(v))}</td></tr>`).join("")}</table></details>`;
}

async function tlShowRange(sel) {
  if (sel.tracks && !sel.tracks.length) {
    $("#tl-agg").innerHTML = '<p class="muted">No track under the selection: drag across rows, or along the ruler for all.</p>';
    return;
  }
  const tracks = sel.tracks ? `&tracks=${tlRanges(sel.tracks)}` : "";
  let agg;
  try {
    agg = await runApi(`timeline/aggregate?start_us=${(sel.start * 1000).toFixed(3)}&end_us=${(sel.end * 1000).toFixed(3)}${tracks}`);
  } catch (e) {
    if (TL.sel === sel) $("#tl-agg").innerHTML = `<p class="rating-bad">${esc(e.message)}</p>`;
    return;
  }
  if (TL.sel !== sel) return;
  TL.agg = agg;
  tlAggTable();
}

const TL_AGG_COLS = [["name", "name"], ["count", "count"], ["total_ns", "wall (µs)"], ["self_ns", "self (µs)"],
  ["in_range_ns", "wall in range (µs)"], ["self_in_range_ns", "self in range (µs)"]];

// Exact: nanoseconds as microseconds with all three decimals.
function tlUs(ns) { return tlNumber(ns / 1000, 3); }

function tlAggTable() {
  const a = TL.agg, { key, desc } = TL.aggSort;
  const byName = (x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
  const rows = [...a.rows].sort((x, y) => (key === "name" ? byName(x, y) : x[key] - y[key]) * (desc ? -1 : 1));
  const cell = (r, k) => k === "name" ? `<td class="tl-name" title="${esc(r.name)}">${esc(r.name)}</td>`
    : `<td class="num">${k === "count" ? r.count.toLocaleString() : tlUs(r[k])}</td>`;
  $("#tl-agg").innerHTML = `<div class="tl-agg-head"><b>Range</b> ${tlWindowText(TL.sel.start, TL.sel.end)} ·
      ${a.tracks.length} track${a.tracks.length === 1 ? "" : "s"} · <span id="tl-agg-slices">${a.slices.toLocaleString()}</span> slices
      <span class="muted">(slices overlapping the range; wall and self are their whole times, "in range" the part inside)</span></div>
    <table id="tl-agg-table"><thead><tr>${TL_AGG_COLS.map(([k, label]) =>
      `<th data-key="${k}" class="${k === "name" ? "" : "num"}">${label}${k === key ? (desc ? " ▾" : " ▴") : ""}</th>`).join("")}</tr></thead>
    <tbody>${rows.map((r) => `<tr>${TL_AGG_COLS.map(([k]) => cell(r, k)).join("")}</tr>`).join("")}</tbody>
    <tfoot><tr><th>all slices</th><td class="num">${a.slices.toLocaleString()}</td>${TL_AGG_COLS.slice(2).map(([k]) =>
      `<td class="num">${tlUs(a[k])}</td>`).join("")}</tr></tfoot></table>
    ${a.rows_truncated ? `<p class="muted">The ${a.rows.length.toLocaleString()} names with the most wall time are listed.</p>` : ""}`;
  $("#tl-agg").querySelectorAll("th[data-key]").forEach((th) => {
    th.onclick = () => {
      const k = th.dataset.key;
      TL.aggSort = { key: k, desc: TL.aggSort.key === k ? !TL.aggSort.desc : k !== "name" };
      tlAggTable();
    };
  });
}

// The tracks whose rows [y0, y1] touches (a header stands for its tracks).
function tlTracksBetween(y0, y1) {
  const [a, b] = y0 < y1 ? [y0, y1] : [y1, y0], ids = new Set();
  for (const r of TL.rows) {
    if (r.y + r.h <= a || r.y >= b) continue;
    for (const t of r.kind === "track" ? [r.t] : r.tracks) ids.add(t.id);
  }
  return [...ids].sort((x, y) => x - y);
}

// The selection's span (ms), for `f` and `m`.
function tlSelSpan() {
  const s = TL.sel;
  return s && s.end > s.start ? [s.start, s.end] : s && s.kind === "slice" && s.start !== undefined ? [s.start, s.start] : null;
}

function tlFit() {
  const span = tlSelSpan();
  if (!span) return;
  const pad = Math.max((span[1] - span[0]) * 0.05, 1e-5);
  tlSetWindow(span[0] - (TL.sel.kind === "slice" ? pad : 0), span[1] + (TL.sel.kind === "slice" ? pad : 0), true);
}

function tlMark() {
  const span = tlSelSpan();
  if (!span) return;
  const i = TL.marks.findIndex((m) => m.start === span[0] && m.end === span[1]);
  if (i >= 0) TL.marks.splice(i, 1); else TL.marks.push({ start: span[0], end: span[1] });
  tlUrl(false);
  tlDraw();
}

// ---- input ----------------------------------------------------------------------------------------------------

function tlKey(ev) {
  if (state.page !== "timeline" || !$("#timeline") || /INPUT|SELECT|TEXTAREA/.test(ev.target.tagName)) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key.toLowerCase(), w = TL.end - TL.start;
  if (k === "w") tlZoom(0.8, TL.mouse);
  else if (k === "s") tlZoom(1.25, TL.mouse);
  else if (k === "a") tlSetWindow(TL.start - w * 0.2, TL.end - w * 0.2);
  else if (k === "d") tlSetWindow(TL.start + w * 0.2, TL.end + w * 0.2);
  else if (k === "f") tlFit();
  else if (k === "m") tlMark();
  else if (k === "escape") tlSelect(null, true);
  else return;
  ev.preventDefault();
}

// Mouse on the plot: wheel zooms at the pointer; drag pans; Shift+drag selects a range over the
// tracks it crosses; a drag on the ruler selects a range over every track; a click picks a slice.
function tlMouse() {
  const cv = $("#timeline"), axis = $("#tl-axis");
  const at = (el, ev) => { const r = el.getBoundingClientRect(); return { x: ev.clientX - r.left, y: ev.clientY - r.top }; };
  let drag = null;
  cv.onwheel = (ev) => { ev.preventDefault(); tlZoom(ev.deltaY > 0 ? 1.25 : 0.8, tlT(at(cv, ev).x, tlPlotWidth())); };
  const begin = (el, ev, range) => {
    const p = at(el, ev);
    drag = { el, x: p.x, y: p.y, range, s: TL.start, e: TL.end, moved: false, all: el === axis };
    ev.preventDefault();
  };
  cv.onmousedown = (ev) => begin(cv, ev, ev.shiftKey);
  axis.onmousedown = (ev) => begin(axis, ev, true);
  cv.onmousemove = (ev) => { TL.mouse = tlT(at(cv, ev).x, tlPlotWidth()); };
  cv.onmouseleave = () => { TL.mouse = null; };
  window.onmousemove = (ev) => {
    if (!drag || !$("#timeline")) return;
    const p = at(drag.el, ev), W = tlPlotWidth();
    if (Math.abs(p.x - drag.x) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (drag.range) {
      const [a, b] = [tlT(drag.x, W), tlT(p.x, W)].sort((u, v) => u - v);
      TL.sel = { kind: "range", start: a, end: b, tracks: drag.all ? null : tlTracksBetween(drag.y, p.y), dragging: true };
      tlDraw();
    } else {
      const dt = (p.x - drag.x) / W * (drag.e - drag.s);
      tlSetWindow(drag.s - dt, drag.e - dt);
    }
  };
  window.onmouseup = (ev) => {
    if (!drag || !$("#timeline")) { drag = null; return; }
    const d = drag;
    drag = null;
    if (d.range && d.moved) { const s = TL.sel; delete s.dragging; tlSelect(s, true); return; }
    if (d.moved || d.el !== cv) return;
    const p = at(cv, ev), hit = TL.hits.find((h) => p.x >= h.x && p.x <= h.x + Math.max(h.w, 2) && p.y >= h.y && p.y <= h.y + h.h);
    if (hit && hit.merged) { $("#tl-status").textContent = `${hit.name}: zoom in (W) to see each one`; return; }
    tlSelect(hit ? { kind: "slice", track: hit.track.id, index: hit.e[4], start: hit.e[0] / 1000,
      end: (hit.e[0] + hit.e[1]) / 1000, name: hit.name } : null, true);
  };
}

// ---- the page ---------------------------------------------------------------------------------------------------

// The window, selection and marks the URL names (start/end in ms; start_us/end_us also read).
function tlFromUrl(whole) {
  const p = state.params, num = (k) => (p.get(k) === null ? NaN : parseFloat(p.get(k)));
  let a = num("start"), b = num("end");
  if (!(b > a) && num("end_us") > num("start_us")) { a = num("start_us") / 1000; b = num("end_us") / 1000; }
  TL.start = b > a ? a : whole.start_ms; TL.end = b > a ? b : Math.max(whole.end_ms, TL.start + 1e-3);
  TL.marks = (p.get("marks") || "").split(",").filter(Boolean).map((m) => m.split(":").map(Number))
    .filter(([x, y]) => y > x).map(([x, y]) => ({ start: x, end: y }));
  const sel = (p.get("sel") || "").split(":");
  if (sel[0] === "slice" && sel.length === 3) return { kind: "slice", track: +sel[1], index: +sel[2] };
  if (sel[0] === "range" && +sel[2] > +sel[1]) return { kind: "range", start: +sel[1], end: +sel[2], tracks: sel[3] ? tlParseRanges(sel[3]) : null };
  return null;
}

// Opened again for the same run and host (back/forward, a link): the window and selection move,
// nothing is fetched but the window.
function tlRestore() {
  const sel = tlFromUrl({ start_ms: TL.start, end_ms: TL.end });
  if (tlSelKey(sel) !== tlSelKey(TL.sel)) tlSelect(sel, false);
  tlDraw();
  tlLoad();
}

function tlSelKey(s) {
  if (!s) return "";
  return s.kind === "slice" ? `slice:${s.track}:${s.index}` : `range:${s.start}:${s.end}:${s.tracks ? tlRanges(s.tracks) : ""}`;
}

async function timeline() {
  if ($("#timeline") && TL.run === state.run && TL.host === state.host) return tlRestore();
  const whole = await runApi("timeline?px=1");  // the profile's range, every host and every track
  state.hosts[state.run] = whole.hosts;
  TL.run = state.run; TL.host = state.host;
  TL.span = Math.max(whole.end_ms, 1e-3);  // an empty profile still gets a microsecond of ruler
  TL.tracks = whole.tracks.filter((t) => t.events.length).map(({ events, ...t }) => t);
  TL.labelW = tlLabelWidth(TL.tracks);
  TL.data = null; TL.layoutKey = ""; TL.sel = null;
  const sel = tlFromUrl(whole);
  $("#page").innerHTML = `<div class="toolbar">${hostPicker(whole.hosts)}<input id="tl-search" placeholder="search names">
      <label title="every flow arrow of the window; a selected slice always shows its own"><input type="checkbox" id="tl-flows"
        ${TL.showFlows ? "checked" : ""}> all flows</label>
      <span class="muted tl-help">W/S zoom · A/D pan · drag pan · Shift+drag select · F fit · M mark · Esc clear</span>
      <span id="tl-status" class="muted"></span></div>
    <div id="tl-view"><div id="tl-head"><div id="tl-range"></div><canvas id="tl-axis"></canvas></div>
      <div id="timeline-wrap"><div id="tl-labels"></div><canvas id="timeline"></canvas></div></div>
    <div id="tl-agg"></div><div id="tl-details"></div>`;
  $("#tl-search").oninput = (ev) => { TL.search = ev.target.value.toLowerCase(); tlDraw(); };
  $("#tl-flows").onchange = (ev) => { TL.showFlows = ev.target.checked; tlDraw(); };
  onHostPick(() => { TL.run = null; TL.sel = null; tlUrl(false); timeline(); });
  tlMouse();
  document.onkeydown = tlKey;
  tlUrl(false);
  await tlLoad();
  if (sel) tlSelect(sel, false);
}

window.addEventListener("resize", () => { if (state.page === "timeline" && $("#timeline")) { tlDraw(); tlLoad(); } });
