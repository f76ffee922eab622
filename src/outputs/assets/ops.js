// ops.js - the viewer's Ops page: the op table, grouped and filtered.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

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
