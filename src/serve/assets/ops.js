// ops.js - the viewer's Ops page: the op table, grouped, filtered and sorted; sort, direction, filter,
// grouping, columns and a step window live in the URL hash, so a reload or a shared link keeps them.
// Loaded after app.js, whose helpers (state, api, runApi, esc, ms, go) it uses.
"use strict";

// ---- ops ---------------------------------------------------------------------------------------
// [key, heading, kind, shown by default], from the ops table's columns (columns.js, generated from
// the library's column descriptors: those with a view are in the menu, view 2 shown by default).
// kind: "num" (ms), "int", "pct", "rate" (n/a when unknown), "text", "long" (wraps), "clip" (one line,
// ellipsis, the whole text on hover), "source" (file:line).
const OP_KIND = { name: "long", module: "clip", scope: "clip", op_name: "clip", source: "source" };
function opKind(c) {
  if (OP_KIND[c.key]) return OP_KIND[c.key];
  if (c.nullable) return "rate";
  return c.unit === "ms" ? "num" : c.unit === "%" ? "pct" : c.type === "integer" ? "int" : "text";
}
const OP_COLS = JP_COLUMNS.ops.filter((c) => c.view).map((c) => [c.key, c.label, opKind(c), c.view === 2 ? 1 : 0]);
const OP_TEXT = new Set(OP_COLS.filter((c) => ["text", "long", "clip", "source"].includes(c[2])).map((c) => c[0]));

// A long name, escaped, with break chances after its separators ("fusion.12", "a/b/c", "x_y"): it
// wraps there before it is cut anywhere.
function wrapName(name) { return esc(name).replace(/([_./-])/g, "$1<wbr>"); }

// An op's rate is known only when its FLOPs (bytes) are: XLA:CPU ops and ops without HLO carry 0.
function opRate(r, key) {
  const amount = key === "gflops_per_s" ? r.flops : r.bytes;
  return amount > 0 && r.total_ms > 0 ? r[key] : null;
}

// The value a column sorts by: rates unknown are null, and nulls go last in either direction.
function sortValue(r, key) { return key === "gflops_per_s" || key === "gbytes_per_s" ? opRate(r, key) : r[key]; }
function sortRows(rows, key, dir) {
  const text = OP_TEXT.has(key), sign = dir === "asc" ? 1 : -1;
  return rows.sort((a, b) => {
    const x = sortValue(a, key), y = sortValue(b, key);
    if (x === null || y === null || x === undefined || y === undefined) return (x == null) - (y == null);
    return sign * (text ? String(x).localeCompare(String(y)) : x - y);
  });
}

function sourceCell(src) {
  if (!src) return `<td class="muted">—</td>`;
  const base = src.split("/").pop();
  return `<td class="clip" title="${esc(src)}"><code>${esc(base)}</code></td>`;
}
// " (program 21)" after an op's name when rows of several compiled programs share its module and
// name (a row each, as in the text table), so that they can be told apart. `shared` holds the
// "module\0name" keys seen in more than one row (sharedNames).
function programTag(r, shared) {
  return r.program_id == null || !shared.has(`${r.module}\0${r.name}`) ? ""
    : ` <span class="muted">(program ${esc(String(r.program_id))})</span>`;
}
function sharedNames(ops) {
  const seen = new Set(), shared = new Set();
  for (const o of ops) {
    const k = `${o.module}\0${o.name}`;
    (seen.has(k) ? shared : seen).add(k);
  }
  return shared;
}

function opCellHtml(r, [k, , kind], shared) {
  const v = r[k];
  if (k === "name") return `<td class="wrap">${wrapName(v ?? "")}${programTag(r, shared)}</td>`;
  if (kind === "rate") { const x = opRate(r, k); return x === null ? `<td class="num muted" title="unknown: no FLOP or byte count">n/a</td>` : `<td class="num">${x.toFixed(2)}</td>`; }
  if (kind === "num") return `<td class="num">${ms(v)}</td>`;
  if (kind === "pct") return `<td class="num">${v.toFixed(1)}</td>`;
  if (kind === "int") return `<td class="num">${v ?? ""}</td>`;
  if (kind === "source") return sourceCell(v);
  if (kind === "clip") return `<td class="clip" title="${esc(v || "")}">${esc(v || "")}</td>`;
  return kind === "long" ? `<td class="wrap">${wrapName(v ?? "")}</td>` : `<td>${esc(v ?? "")}</td>`;
}

// The page's view as the hash keeps it: sort key, direction, filter, grouping, columns, steps.
function opsView() {
  const p = state.params, cols = p.get("cols");
  const sort = OP_COLS.some((c) => c[0] === p.get("sort")) ? p.get("sort") : "self_ms";
  const dir = p.get("dir") === "asc" || p.get("dir") === "desc" ? p.get("dir") : OP_TEXT.has(sort) ? "asc" : "desc";
  return { sort, dir, filter: p.get("filter") || "", group: p.get("group") || "none", steps: p.get("steps") || "",
    cols: cols ? cols.split(",").filter((k) => OP_COLS.some((c) => c[0] === k)) : OP_COLS.filter((c) => c[3]).map((c) => c[0]) };
}
// Writes the view into the hash without a reload (replaceState fires no hashchange).
function saveOpsView(v) {
  const p = new URLSearchParams({ run: state.run });
  if (state.host) p.set("host", state.host);
  if (v.steps) p.set("steps", v.steps);
  p.set("sort", v.sort); p.set("dir", v.dir);
  if (v.filter) p.set("filter", v.filter);
  if (v.group !== "none") p.set("group", v.group);
  const dflt = OP_COLS.filter((c) => c[3]).map((c) => c[0]).join(",");
  if (v.cols.join(",") !== dflt) p.set("cols", v.cols.join(","));
  state.params = p;
  history.replaceState(null, "", `#/ops?${p}`);
}

// The op rows as the library gives them: one per op, or summed by v.group (?group=, the same sums
// as `jaxprof ops`' columns) over the ops v.filter keeps.
function opsQuery(v, grouped) {
  const q = new URLSearchParams();
  if (v.steps) q.set("steps", v.steps);
  if (grouped && v.group !== "none") { q.set("group", v.group); if (v.filter) q.set("filter", v.filter); }
  return `ops${q.toString() ? `?${q}` : ""}`;
}

// A line over the table when XLA's autotuner ran kernels during a compile: they are rows like the
// program's (the text report lists them apart), so say which and how much.
function autotuningNote(rows) {
  const tuning = rows.filter((r) => r.autotuning);
  if (!tuning.length) return "";
  const self = tuning.reduce((t, r) => t + r.self_ms, 0);
  return `<p id="ops-autotuning" class="muted">${tuning.length} of these rows (${ms(self)} ms) are XLA's autotuner at
    work while it compiled, not your program (column <i>autotuning</i>; the text report lists them apart).</p>`;
}

async function ops() {
  const v = opsView();
  const d = await runApi(opsQuery(v, false));
  const stepsNote = v.steps ? `<span id="ops-steps" class="chip">steps ${esc(v.steps)} <a href="#" id="ops-all-steps" title="the whole run">×</a></span>` : "";
  $("#page").innerHTML = `<div class="toolbar">${stepsNote}
      <input id="op-filter" placeholder="filter (regex)" value="${esc(v.filter)}">
      <label>group by <select id="op-group">${["none", "category", "module", "scope", "source"].map((g) =>
        `<option ${g === v.group ? "selected" : ""}>${g}</option>`).join("")}</select></label>
      <details id="op-cols"><summary>columns</summary><div class="menu">${OP_COLS.map(([k, h]) =>
        `<label><input type="checkbox" value="${k}" ${v.cols.includes(k) ? "checked" : ""}> ${esc(h)}</label>`).join("")}</div></details>
      <span class="muted" id="op-count"></span></div>
    ${autotuningNote(d.ops)}<div id="op-bars"></div><table id="ops-table"></table><p id="ops-empty" class="muted"></p>`;
  const shared = sharedNames(d.ops);
  let drawn = 0; // the latest draw: an older answer arriving late is dropped
  const draw = async () => {
    const me = ++drawn;
    v.filter = $("#op-filter").value;
    v.group = $("#op-group").value;
    saveOpsView(v);
    let re;
    try { re = new RegExp(v.filter, "i"); } catch (e) { re = /.*/; }
    let groups = null;
    if (v.group !== "none") {
      try { groups = (await runApi(opsQuery(v, true))).ops; } catch (e) { groups = []; } // a regex the library refuses
      if (me !== drawn) return;
    }
    const rows = sortRows(groups || d.ops.filter((r) => re.test(`${r.name} ${r.category} ${r.module} ${r.scope} ${r.op_name} ${r.source}`)),
      v.sort, v.dir);
    const cols = OP_COLS.filter((c) => v.cols.includes(c[0]) || c[0] === "name");
    const top = [...rows].sort((a, b) => b.self_ms - a.self_ms).slice(0, 15), max = Math.max(...top.map((r) => r.self_ms), 1e-9);
    $("#op-bars").innerHTML = top.map((r) => `<div><span class="bar" style="width:${(300 * r.self_ms / max).toFixed(0)}px"></span>
      ${esc(r.name)}${programTag(r, shared)} <span class="muted">${ms(r.self_ms)} ms</span></div>`).join("");
    const arrow = v.dir === "asc" ? " ▴" : " ▾";
    $("#ops-table").innerHTML = `<tr>${cols.map(([k, h, kind]) => `<th data-key="${k}" class="${["num", "int", "rate", "pct"].includes(kind) ? "num" : ""}${k === v.sort ? " sorted" : ""}"
      title="sort by ${esc(h)}; click again to reverse">${esc(h)}${k === v.sort ? arrow : ""}</th>`).join("")}</tr>` +
      rows.map((r) => `<tr>${cols.map((c) => opCellHtml(r, c, shared)).join("")}</tr>`).join("");
    $("#ops-empty").textContent = rows.length ? "" : "No op matches the filter.";
    $("#op-count").textContent = v.group === "none" ? `${rows.length} of ${d.ops.length} rows` : `${rows.length} groups`;
    document.querySelectorAll("#ops-table th").forEach((th) => {
      th.onclick = () => {
        const k = th.dataset.key;
        v.dir = k === v.sort ? (v.dir === "asc" ? "desc" : "asc") : OP_TEXT.has(k) ? "asc" : "desc";
        v.sort = k;
        draw();
      };
    });
  };
  $("#op-filter").oninput = draw;
  $("#op-group").onchange = draw;
  document.querySelectorAll("#op-cols input").forEach((box) => {
    box.onchange = () => { v.cols = OP_COLS.map((c) => c[0]).filter((k) => document.querySelector(`#op-cols input[value="${k}"]`).checked); draw(); };
  });
  if (v.steps) $("#ops-all-steps").onclick = (ev) => { ev.preventDefault(); v.steps = ""; saveOpsView(v); ops(); };
  draw();
}
