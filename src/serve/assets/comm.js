// comm.js - the viewer's Communication page: the collectives of `jaxprof comm --json` (one row per
// op: count, hidden/exposed time, message size, n, algbw/busbw, wait, last device, stragglers), a
// chart of busbw by message size per collective type, hidden vs exposed per step (the steps
// document's columns), per device (the devices' columns) and every collective instance (the
// comm_instances table: the k-th run of an op across its devices), each a link into the Timeline.
// Loaded after app.js and overview.js, whose helpers (state, runApi, esc, ms, go, timelineHash) it uses.
"use strict";

const COMM_TYPE_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac"];
const COMM_HIDDEN = "#59a14f", COMM_EXPOSED = "#e15759";

// Bytes as the text table writes them: B, KiB, MiB, GiB with one decimal.
function commBytes(b) {
  if (b === null || b === undefined) return "n/a";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = b, u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u ? `${v.toFixed(1)} ${units[u]}` : `${b} B`;
}
function commRate(v) { return v === null || v === undefined ? "n/a" : v.toFixed(2); }
// "/device:CPU:2" -> "CPU:2" in the narrow columns (the whole name on hover).
function commDev(name) { return `<span title="${esc(name)}">${esc(String(name).replace(/^\/device:/, ""))}</span>`; }
// A round axis top (1, 2 or 5 times a power of ten) at or above v, and its step in 4 or 5 ticks.
function commNice(v) {
  const p = 10 ** Math.floor(Math.log10(v > 0 ? v : 1)), m = [1, 2, 2.5, 5, 10].find((k) => k * p >= v);
  const top = m * p, step = top / (m === 2.5 ? 5 : m === 1 || m === 10 ? 5 : 4);
  return [top, step];
}
function commTick(v) { return v === 0 ? "0" : Math.abs(v) >= 100 ? v.toFixed(0) : v >= 1 ? String(+v.toFixed(2)) : String(+v.toPrecision(2)); }

// [key, heading, cell]: the table's columns, each cell from one field of the comm row (columns.js
// names and documents them; the heading's tooltip is the library's doc).
const COMM_COLS = [
  ["name", "collective", (r) => `<td class="wrap">${wrapName(r.name)}<br><small class="muted">${wrapName(r.module)}</small></td>`],
  ["type", "type", (r) => `<td>${esc(r.type)}</td>`],
  ["bytes", "size", (r) => `<td class="num${r.bytes == null ? " muted" : ""}">${commBytes(r.bytes)}</td>`],
  ["group_size", "n", (r) => `<td class="num">${r.group_size ?? "n/a"}</td>`],
  ["count", "count", (r) => `<td class="num">${r.count}</td>`],
  ["total_ms", "total ms", (r) => `<td class="num">${ms(r.total_ms)}</td>`],
  ["hidden_ms", "hidden ms", (r) => `<td class="num">${ms(r.hidden_ms)}</td>`],
  ["exposed_ms", "exposed ms", (r) => `<td class="num">${ms(r.exposed_ms)}</td>`],
  ["overlap_pct", "overlap%", (r) => `<td class="num">${r.overlap_pct.toFixed(1)}</td>`],
  ["algbw_gbps", "algbw GB/s", (r) => `<td class="num${r.algbw_gbps == null ? " muted" : ""}">${commRate(r.algbw_gbps)}</td>`],
  ["busbw_gbps", "busbw GB/s", (r) => `<td class="num${r.busbw_gbps == null ? " muted" : ""}">${commRate(r.busbw_gbps)}</td>`],
  ["wait_ms", "wait ms", (r) => `<td class="num">${ms(r.wait_ms)}</td>`],
  ["last_device", "last", (r) => `<td>${r.last_device ? commDev(r.last_device) : "—"}${r.last_count ? ` <span class="muted">${r.last_count}×</span>` : ""}</td>`],
  ["stragglers", "stragglers", (r) => `<td class="num">${r.stragglers}${r.straggler ? ` <span class="muted">${commDev(r.straggler)}</span>` : ""}</td>`],
];
const COMM_TEXT = new Set(["name", "type", "last_device"]);
function commDoc(key) { const c = (JP_COLUMNS.comm || []).find((x) => x.key === key); return c ? c.doc : ""; }

async function comm() {
  const [d, st] = await Promise.all([runApi("comm"), runApi("steps")]);
  const rows = d.comm;
  if (!rows.length) {
    $("#page").innerHTML = `<h2>Communication</h2><p id="comm-none">No collectives in this profile <span class="muted">(no
      all-reduce, all-gather, reduce-scatter, all-to-all or collective-permute ran on its ${d.devices.length}
      device${d.devices.length === 1 ? "" : "s"})</span></p>`;
    return;
  }
  const devs = d.devices.filter((v) => v.collective_ms > 0);
  const total = devs.reduce((t, v) => t + v.collective_ms, 0), hidden = devs.reduce((t, v) => t + v.collective_hidden_ms, 0);
  const types = [...new Set(rows.map((r) => r.type))];
  $("#page").innerHTML = `<h2>Communication</h2>
    <p id="comm-summary">${rows.length} collective op${rows.length === 1 ? "" : "s"} (${types.map(esc).join(", ")}) on
      ${devs.length} device${devs.length === 1 ? "" : "s"} · time in collectives ${ms(total)} ms, hidden behind compute ${ms(hidden)} ms,
      exposed ${ms(total - hidden)} ms (overlap ${total > 0 ? (100 * hidden / total).toFixed(1) : "0.0"}%)
      <span class="muted">(each device's collectives merged, summed over the devices)</span></p>
    <p class="muted">hidden: a compute op ran on the same device at the time · exposed: the rest · busbw: the nccl-tests
      convention (all-reduce 2(n−1)/n × algbw, all-gather, reduce-scatter, all-to-all (n−1)/n, permute 1) · wait: per instance,
      the spread of exposed time across devices (the first to arrive waits for the last)</p>
    <table id="comm-table"></table>
    <div class="columns">
      <div><h3>Bus bandwidth by message size</h3>${busbwChart(rows, types)}</div>
      <div><h3>Hidden and exposed communication per step</h3>${stepChartComm(st.steps)}</div>
    </div>
    <h3>Per device</h3>${deviceTable(devs)}
    <h3>Collective instances</h3>
    <p class="muted">each instance: the k-th run of a collective op on every device that ran it, matched by that order ·
      arrival: the latest start minus the earliest · exposed min/max: the least and most exposed time of a device ·
      wait: their difference, the early arrivals' wait for the last · straggler: a device whose start is a robust
      outlier (median/MAD z-score over 3.5, 3 devices or more) · click a row for its window on the Timeline</p>
    <table id="comm-instances"></table><p id="comm-instances-more" class="muted"></p>`;
  instanceTable(d.comm_instances || []);
  let sort = "total_ms", dir = -1;
  const draw = () => {
    const sorted = [...rows].sort((a, b) => {
      const x = a[sort], y = b[sort];
      if (x == null || y == null) return (x == null) - (y == null);
      return dir * (COMM_TEXT.has(sort) ? String(x).localeCompare(String(y)) : x - y);
    });
    $("#comm-table").innerHTML = `<tr>${COMM_COLS.map(([k, h]) => `<th data-key="${k}" title="${esc(commDoc(k))}"
      class="${COMM_TEXT.has(k) ? "" : "num"}${k === sort ? " sorted" : ""}">${esc(h)}${k === sort ? (dir > 0 ? " ▴" : " ▾") : ""}</th>`).join("")}</tr>` +
      sorted.map((r) => `<tr>${COMM_COLS.map(([, , cell]) => cell(r)).join("")}</tr>`).join("");
    document.querySelectorAll("#comm-table th").forEach((th) => {
      th.onclick = () => {
        const k = th.dataset.key;
        dir = k === sort ? -dir : COMM_TEXT.has(k) ? 1 : -1;
        sort = k;
        draw();
      };
    });
  };
  draw();
}

// busbw (GB/s) against the message size (log2 axis), one colour per collective type; rows whose
// size or n is unknown have no busbw and are counted under the chart.
function busbwChart(rows, types) {
  const pts = rows.filter((r) => r.busbw_gbps != null && r.bytes > 0);
  const missing = rows.length - pts.length;
  const note = missing ? `<p class="muted" id="comm-busbw-missing">${missing} collective${missing === 1 ? "" : "s"} without a busbw
    (message size or group size unknown) not drawn</p>` : "";
  if (!pts.length) return `<p class="muted">No collective with a known busbw.</p>${note}`;
  const W = 560, H = 300, L = 56, R = 34, T = 12, B = 40;
  const lx = pts.map((p) => Math.log2(p.bytes));
  let x0 = Math.floor(Math.min(...lx)), x1 = Math.ceil(Math.max(...lx));
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  const [yMax, yStep] = commNice(Math.max(...pts.map((p) => p.busbw_gbps)) * 1.05);
  const X = (b) => L + (Math.log2(b) - x0) / (x1 - x0) * (W - L - R), Y = (v) => H - B - v / yMax * (H - T - B);
  let grid = "";
  const step = Math.max(1, Math.ceil((x1 - x0) / 8));
  for (let e = x0; e <= x1; e += step) {
    const x = X(2 ** e);
    grid += `<line x1="${x}" x2="${x}" y1="${T}" y2="${H - B}" stroke="#eee"/><text x="${x}" y="${H - B + 14}" text-anchor="middle">${commBytes(2 ** e)}</text>`;
  }
  for (let v = 0; v <= yMax + yStep / 2; v += yStep) {
    const y = Y(v);
    grid += `<line x1="${L}" x2="${W - R}" y1="${y}" y2="${y}" stroke="#eee"/><text x="${L - 4}" y="${y + 4}" text-anchor="end">${commTick(v)}</text>`;
  }
  const dots = pts.map((p) => {
    const c = COMM_TYPE_COLORS[types.indexOf(p.type) % COMM_TYPE_COLORS.length];
    return `<circle class="comm-pt" cx="${X(p.bytes).toFixed(1)}" cy="${Y(p.busbw_gbps).toFixed(1)}" r="5" fill="${c}" fill-opacity=".8"
      data-name="${esc(p.name)}"><title>${esc(p.name)} (${esc(p.type)}, ${esc(p.module)}): ${commBytes(p.bytes)}, n=${p.group_size},
busbw ${commRate(p.busbw_gbps)} GB/s, algbw ${commRate(p.algbw_gbps)} GB/s, ${p.count} instances</title></circle>`;
  }).join("");
  const legend = types.filter((t) => pts.some((p) => p.type === t)).map((t) =>
    `<span><i style="background:${COMM_TYPE_COLORS[types.indexOf(t) % COMM_TYPE_COLORS.length]}"></i>${esc(t)}</span>`).join("");
  return `<svg id="comm-busbw" class="comm-chart" width="${W}" height="${H}">${grid}
    <line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#999"/><line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#999"/>
    ${dots}<text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">message size (log scale)</text>
    <text transform="translate(12 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">busbw GB/s</text></svg>
    <div class="legend">${legend}</div>${note}`;
}

// Stacked bars: each step's hidden and exposed collective time (the steps document: the mean over
// the devices with collectives in the step).
function stepChartComm(steps) {
  const bars = steps.filter((s) => s.collective_hidden_ms > 0 || s.collective_exposed_ms > 0);
  if (!bars.length) return `<p class="muted" id="comm-steps-none">${steps.length ? `None of the ${steps.length} steps holds the start of
    a collective: they ran outside the steps found.` : "No steps found."}</p>`;
  const W = 560, H = 300, L = 56, R = 16, T = 12, B = 40;
  const [max, yStep] = commNice(Math.max(...bars.map((s) => s.collective_hidden_ms + s.collective_exposed_ms)) * 1.05);
  const bw = (W - L - R) / bars.length, Y = (v) => (H - T - B) * v / max;
  let grid = "";
  for (let v = 0; v <= max + yStep / 2; v += yStep) {
    const y = H - B - Y(v);
    grid += `<line x1="${L}" x2="${W - R}" y1="${y}" y2="${y}" stroke="#eee"/><text x="${L - 4}" y="${y + 4}" text-anchor="end">${commTick(v)}</text>`;
  }
  const every = Math.max(1, Math.ceil(bars.length / 20));
  const g = bars.map((s, i) => {
    const x = L + i * bw + bw * 0.1, w = Math.max(1, bw * 0.8), he = Y(s.collective_exposed_ms), hh = Y(s.collective_hidden_ms);
    const tip = `step ${s.step}: hidden ${ms(s.collective_hidden_ms)} ms, exposed ${ms(s.collective_exposed_ms)} ms of ${ms(s.duration_ms)} ms`;
    return `<g class="comm-step" data-step="${esc(s.step)}"><title>${tip}</title>
      <rect x="${x.toFixed(1)}" y="${(H - B - he).toFixed(1)}" width="${w.toFixed(1)}" height="${he.toFixed(1)}" fill="${COMM_EXPOSED}"/>
      <rect x="${x.toFixed(1)}" y="${(H - B - he - hh).toFixed(1)}" width="${w.toFixed(1)}" height="${hh.toFixed(1)}" fill="${COMM_HIDDEN}"/>
      ${i % every === 0 ? `<text x="${(x + w / 2).toFixed(1)}" y="${H - B + 14}" text-anchor="middle">${esc(s.step)}</text>` : ""}</g>`;
  }).join("");
  return `<svg id="comm-steps" class="comm-chart" width="${W}" height="${H}">${grid}${g}
    <line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#999"/>
    <text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">step</text>
    <text transform="translate(12 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">ms (mean over devices)</text></svg>
    <div class="legend"><span><i style="background:${COMM_EXPOSED}"></i>exposed</span><span><i style="background:${COMM_HIDDEN}"></i>hidden</span></div>`;
}

// Each device with collectives: its collective time, hidden and exposed, overlap, and wait, with
// bars of exposed and wait on one scale.
function deviceTable(devs) {
  const max = Math.max(...devs.map((v) => v.collective_ms), 1e-9);
  const bar = (v, c, what) => `<span class="bar" style="width:${(200 * v / max).toFixed(1)}px;background:${c}" title="${what} ${ms(v)} ms"></span>`;
  const rows = devs.map((v) => `<tr><td>${esc(v.name)}${v.host && new Set(devs.map((x) => x.host)).size > 1 ? ` <span class="muted">${esc(v.host)}</span>` : ""}</td><td class="num">${ms(v.collective_ms)}</td>
    <td class="num">${ms(v.collective_hidden_ms)}</td><td class="num">${ms(v.collective_exposed_ms)}</td>
    <td class="num">${v.overlap_pct == null ? "n/a" : v.overlap_pct.toFixed(1)}</td><td class="num">${ms(v.collective_wait_ms)}</td>
    <td class="comm-bars">${bar(v.collective_exposed_ms, COMM_EXPOSED, "exposed")}<br>${bar(v.collective_wait_ms, "#9c755f", "wait")}</td></tr>`).join("");
  return `<table id="comm-devices"><tr><th>device</th><th class="num">collectives ms</th><th class="num">hidden ms</th>
    <th class="num">exposed ms</th><th class="num">overlap %</th><th class="num" title="${esc(devDoc("collective_wait_ms"))}">wait ms</th>
    <th>exposed <span class="muted">/</span> wait</th></tr>${rows}</table>
    <p class="muted">wait: summed over the device's collective instances, its exposed time beyond that of the device that
    waited least — time spent waiting for the others to arrive</p>`;
}
// ---- the collective instances (comm_instances): sortable, the first INST_ROWS rows drawn -----------------
const INST_ROWS = 200;
const INST_COLS = [
  ["name", "collective", (r) => `<td class="clip" title="${esc(r.name)}">${esc(r.name)}</td>`],
  ["module", "module", (r) => `<td class="clip" title="${esc(r.module)}">${esc(r.module)}</td>`],
  ["type", "type", (r) => `<td>${esc(r.type)}</td>`],
  ["index", "k", (r) => `<td class="num">${r.index}</td>`],
  ["step", "step", (r) => `<td class="num">${r.step ?? "—"}</td>`],
  ["devices", "devs", (r) => `<td class="num">${r.devices}</td>`],
  ["start_ms", "start ms", (r) => `<td class="num">${ms(r.start_ms)}</td>`],
  ["arrival_spread_ms", "arrival ms", (r) => `<td class="num">${ms(r.arrival_spread_ms)}</td>`],
  ["wait_ms", "wait ms", (r) => `<td class="num">${ms(r.wait_ms)}</td>`],
  ["exposed_min_ms", "exp min ms", (r) => `<td class="num">${ms(r.exposed_min_ms)}</td>`],
  ["exposed_max_ms", "exp max ms", (r) => `<td class="num">${ms(r.exposed_max_ms)}</td>`],
  ["last_device", "last", (r) => `<td>${r.last_device ? commDev(r.last_device) : "—"}</td>`],
  ["stragglers", "straggler", (r) => `<td>${r.straggler ? `<span class="rating-bad">${commDev(r.straggler_device)}</span>${
    r.stragglers > 1 ? ` <span class="muted">+${r.stragglers - 1}</span>` : ""}` : "—"}</td>`],
  ["z_max", "z max", (r) => `<td class="num${r.z_max == null ? " muted" : ""}">${r.z_max == null ? "n/a" : r.z_max.toFixed(2)}</td>`],
];
const INST_TEXT = new Set(["name", "module", "type", "last_device"]);  // sorted as text, A first; the rest as numbers
const INST_LEFT = new Set([...INST_TEXT, "stragglers"]);
function instDoc(key) { const c = (JP_COLUMNS.comm_instances || []).find((x) => x.key === key); return c ? c.doc : ""; }

// An instance's window on the Timeline: from its earliest start to the latest start plus the most
// exposed time of a device (the instance holds no end of its own: at least that long), a quarter
// of that length around it.
function instWindow(r) {
  const len = Math.max(r.arrival_spread_ms + r.exposed_max_ms, 1e-3), pad = len / 4;
  return [Math.max(0, r.start_ms - pad), r.start_ms + len + pad];
}

function instanceTable(rows) {
  if (!rows.length) { $("#comm-instances").outerHTML = `<p class="muted" id="comm-instances">No instances.</p>`; return; }
  let sort = "wait_ms", dir = -1;
  const draw = () => {
    const sorted = [...rows].sort((a, b) => {
      const x = a[sort], y = b[sort];
      if (x == null || y == null) return (x == null) - (y == null);
      return dir * (INST_TEXT.has(sort) ? String(x).localeCompare(String(y)) : x - y);
    });
    const shown = sorted.slice(0, INST_ROWS);
    $("#comm-instances").innerHTML = `<tr>${INST_COLS.map(([k, h]) => `<th data-key="${k}" title="${esc(instDoc(k))}"
      class="${INST_LEFT.has(k) ? "" : "num"}${k === sort ? " sorted" : ""}">${esc(h)}${k === sort ? (dir > 0 ? " ▴" : " ▾") : ""}</th>`).join("")}
      <th></th></tr>` + shown.map((r) => {
      const [a, b] = instWindow(r);
      return `<tr class="inst${r.straggler ? " straggler-row" : ""}">${INST_COLS.map(([, , cell]) => cell(r)).join("")}
        <td><a class="inst-tl" href="${timelineHash(a, b)}" title="the Timeline from ${ms(a)} to ${ms(b)} ms">Timeline</a></td></tr>`;
    }).join("");
    const more = sorted.length - shown.length;
    $("#comm-instances-more").textContent = more > 0 ? `${more.toLocaleString()} more (${sorted.length.toLocaleString()} instances; ` +
      `the first ${INST_ROWS} by this order shown: jaxprof comm --json or --table comm_instances lists every one)` : "";
    document.querySelectorAll("#comm-instances th[data-key]").forEach((th) => {
      th.onclick = () => {
        const k = th.dataset.key;
        dir = k === sort ? -dir : INST_TEXT.has(k) ? 1 : -1;
        sort = k;
        draw();
      };
    });
    document.querySelectorAll("#comm-instances tr.inst").forEach((tr) => {
      tr.onclick = (ev) => { if (!ev.target.closest("a")) location.hash = tr.querySelector("a.inst-tl").getAttribute("href"); };
    });
  };
  draw();
}

function devDoc(key) { const c = (JP_COLUMNS.devices || []).find((x) => x.key === key); return c ? c.doc : ""; }
