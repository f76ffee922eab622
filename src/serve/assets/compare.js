// compare.js - the viewer's Compare page: two runs through the diff engine.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// ---- compare: two runs through the diff engine (/api/diff), base → new ------------------------------
const CHANGES = ["slower", "faster", "added", "removed", "unchanged"];
const MATCHES = ["name", "op_name", "shape", "none"];
const CHANGE_CLASS = { slower: "change-slower", added: "change-slower", faster: "change-faster",
  removed: "change-faster", unchanged: "muted" };
const CMP_ROWS = 500;  // rows drawn per table; the filter reaches the rest

function signedMs(v) { return `${v < 0 ? "−" : "+"}${ms(Math.abs(v))}`; }
function signedPct(v) { return `${v < 0 ? "−" : "+"}${Math.abs(v).toFixed(1)}%`; }
function changeWord(c) { return `<span class="${CHANGE_CLASS[c] || ""}">${esc(c)}</span>`; }

// The two runs compared: ?base= and ?new= when they name listed runs, else "" (not picked yet). The
// user picks both: the two newest runs of a log directory may be unrelated experiments.
function comparedRuns() {
  const ids = state.runs.map((r) => String(r.id)), pick = (k) => ids.includes(state.params.get(k)) ? state.params.get(k) : "";
  return { base: pick("base"), new: pick("new") };
}
function goCompare(base, next) {
  const p = new URLSearchParams();
  if (base) p.set("base", base);
  if (next) p.set("new", next);
  if (state.host) p.set("host", state.host);
  location.hash = `#/compare?${p}`;
}
function runDate(r) { return new Date(r.mtime_ms).toLocaleString(); }
// Every run with its date, newest first, each with buttons to pick it as base or new.
function runsTable(base, next) {
  const rows = [...state.runs].reverse().map((r) => { const id = String(r.id);
    return `<tr><td>${wrapName(r.path)}</td><td>${esc(runDate(r))}</td><td class="num">${r.hosts.length}</td>
      <td class="num">${r.bytes >= 2 ** 20 ? `${(r.bytes / 2 ** 20).toFixed(1)} MiB` : `${(r.bytes / 1024).toFixed(1)} KiB`}</td><td><button data-as="base" data-id="${esc(id)}" ${id === base ? "disabled" : ""}>base</button>
      <button data-as="new" data-id="${esc(id)}" ${id === next ? "disabled" : ""}>new</button></td></tr>`; }).join("");
  return `<h2>Runs under this directory</h2><table id="cmp-runs"><tr><th>run</th><th>written</th><th class="num">hosts</th>
    <th class="num">size</th><th>pick as</th></tr>${rows}</table>`;
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
    `<td class="wrap">${wrapName(r.name)}${renamed}</td>`, `<td>${esc(r.category)}</td>`];
  if (isOp) cells.push(`<td class="clip" title="${esc(r.scope)}">${esc(r.scope)}</td>`, `<td>${esc(r.match)}</td>`);
  return `<tr data-change="${esc(r.change)}">${cells.join("")}</tr>`;
}
function diffTable(id, rows, isOp) {
  const head = ["change", "Δ ms/step", "Δ%", "base ms/step", "new ms/step", "base count", "new count",
    isOp ? "op" : "scope", isOp ? "category" : "kind"].concat(isOp ? ["scope", "match"] : []);
  const num = (h) => /ms|Δ|count/.test(h);
  const more = rows.length > CMP_ROWS ? `<p class="muted">first ${CMP_ROWS} of ${rows.length} rows: filter to see the rest</p>` : "";
  return `<table id="${id}" class="cmp-table"><tr>${head.map((h) => `<th class="${num(h) ? "num" : ""}">${h}</th>`).join("")}</tr>
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
  const options = (sel) => `<option value="" ${sel ? "" : "selected"}>— pick a run —</option>` + state.runs.map((r) =>
    `<option value="${esc(r.id)}" title="${esc(runDate(r))}" ${String(r.id) === sel ? "selected" : ""}>${esc(r.path)}</option>`).join("");
  const filter = state.params.get("filter") || "";
  $("#page").innerHTML = `<div class="toolbar"><label>base <select id="cmp-base">${options(base)}</select></label>
    <button id="cmp-swap" title="swap base and new" ${base && next ? "" : "disabled"}>⇄</button>
    <label>new <select id="cmp-new">${options(next)}</select></label></div><div id="diff"></div>`;
  $("#cmp-base").onchange = () => goCompare($("#cmp-base").value, next);
  $("#cmp-new").onchange = () => goCompare(base, $("#cmp-new").value);
  $("#cmp-swap").onclick = () => goCompare(next, base);
  if (!base || !next) {
    const missing = !base && !next ? "a base run and a new run" : !base ? "a base run" : "a new run";
    $("#diff").innerHTML = `<p id="cmp-prompt" class="prompt">Pick ${missing} to compare: the base is the reference, the
      new run is measured against it (step time with its noise, breakdown, ops and scopes per step, findings).</p>
      ${runsTable(base, next)}`;
    document.querySelectorAll("#cmp-runs button").forEach((b) => {
      b.onclick = () => b.dataset.as === "base" ? goCompare(b.dataset.id, next) : goCompare(base, b.dataset.id);
    });
    return;
  }
  $("#diff").innerHTML = `<p class="muted">Comparing…</p>`;
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
