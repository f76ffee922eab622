"""`jaxprof diff BASE NEW`: real JAX CPU captures of one step function before and after an extra
matmul in a named scope, the same capture against itself, the regression gate's exit codes, the
JSON schema, CSV, --filter/--top, the HTML page (same top op as --json, escaped names), renamed ops
in a synthetic pair, bad input and usage errors."""
from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

import jaxprof

from conftest import run_jaxprof
from test_html_report import EVIL, EVIL_OP, assert_self_contained, evil_space, parse
from xplane_gen import HloComputation, HloInstruction, HloModule, Uint, XSpace

TOP_KEYS = {"schema_version", "kind", "base", "new", "steps", "breakdown", "ops", "scopes", "summary", "findings",
            "options", "op_rule"}
STEP_KEYS = {"base_n", "new_n", "base_mean_ms", "new_mean_ms", "base_median_ms", "new_median_ms", "base_p90_ms",
             "new_p90_ms", "change_pct", "noise_pct", "significant", "verdict"}
ROW_KEYS = ["name", "base_name", "module", "category", "scope", "change", "match", "base_count", "new_count",
            "base_ms", "new_ms", "base_total_ms", "new_total_ms", "delta_ms", "delta_pct", "noise_ms", "noise_basis"]
CHANGES = {"slower", "faster", "added", "removed", "unchanged"}
PARTS = ["compute", "collective", "h2d", "d2h", "d2d", "compile", "host", "idle"]
ARTIFACTS = Path(os.environ.get("JAXPROF_ARTIFACTS") or Path(__file__).resolve().parents[2] / "test-artifacts")


def make_step(extra: bool) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The same function (so the same HLO module name, jit_step) with or without three extra
    matmuls inside jax.named_scope("extra")."""

    def step(w: jax.Array, x: jax.Array) -> jax.Array:
        with jax.named_scope("forward"):
            h = jnp.tanh(x @ w)
        if extra:
            with jax.named_scope("extra"):
                for _ in range(3):
                    h = jnp.tanh(h @ w)
        return w - 1e-3 * (h.T @ x)

    return jax.jit(step)


def capture(log_dir: Path, extra: bool, steps: int = 4) -> Path:
    """Captures `steps` steps (after one warm-up step) with jaxprof.Profiler; returns log_dir."""
    fn = make_step(extra)
    w, x = jnp.ones((256, 256)) * 1e-2, jnp.ones((128, 256))
    fn(w, x).block_until_ready()  # compile outside the capture
    with jaxprof.Profiler(log_dir, start_step=1, num_steps=steps, report=False) as prof:
        for i in range(steps + 2):
            with prof.step(i):
                w = fn(w, x)
            w.block_until_ready()
    return log_dir


@dataclass
class Pair:
    base: Path
    extra: Path


def run_dir(log_dir: Path) -> Path:
    """The one run directory under log_dir."""
    (run,) = {p.parent for p in log_dir.rglob("*.xplane.pb*")}
    return run


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    return Pair(capture(tmp_path_factory.mktemp("diff_base"), False),
                capture(tmp_path_factory.mktemp("diff_extra"), True))


def diff_json(base: Path, new: Path, *args: str, expect: int = 0) -> dict[str, Any]:
    proc = run_jaxprof("diff", base, new, "--json", *args)
    assert proc.returncode == expect, (proc.returncode, proc.stderr)
    return json.loads(proc.stdout)


def extra_scope_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in doc["scopes"] if r["category"] == "device" and r["name"].split("/")[-1] == "extra"]


# ---- the same capture against itself --------------------------------------------------------------

def test_self_diff_is_all_unchanged_with_the_full_schema(pair: Pair) -> None:
    doc = diff_json(pair.base, pair.base)
    assert set(doc) == TOP_KEYS and doc["schema_version"] == 1 and doc["kind"] == "diff"
    run = str(run_dir(pair.base))  # the run read, not only the log directory given
    assert doc["base"] == {"path": run} and doc["new"] == {"path": run}
    steps = doc["steps"]
    assert set(steps) == STEP_KEYS
    assert steps["change_pct"] == 0 and not steps["significant"] and steps["verdict"] == "unchanged"
    assert steps["base_n"] == steps["new_n"] == 4 and steps["base_mean_ms"] == steps["new_mean_ms"] > 0
    assert [b["part"] for b in doc["breakdown"]] == PARTS
    assert all(b["delta_ms"] == 0 and b["base_ms"] == b["new_ms"] for b in doc["breakdown"])
    assert doc["ops"] and doc["scopes"]
    for row in doc["ops"] + doc["scopes"]:
        assert list(row) == ROW_KEYS
        assert row["change"] == "unchanged" and row["match"] == "name", row
        assert row["delta_ms"] == 0 and row["base_ms"] == row["new_ms"] and row["base_name"] == row["name"]
    summary = doc["summary"]
    assert summary["ops"] == {"unchanged": len(doc["ops"]), "slower": 0, "faster": 0, "added": 0, "removed": 0}
    assert summary["scopes"]["unchanged"] == len(doc["scopes"])
    assert summary["matched"] == {"none": 0, "name": len(doc["ops"]), "op_name": 0, "shape": 0}
    assert doc["findings"] == []
    assert doc["options"] == {"min_change_pct": 5, "min_share_pct": 0.5}


def test_self_diff_passes_both_gates(pair: Pair) -> None:
    proc = run_jaxprof("diff", pair.base, pair.base, "--fail-if-slower", "0", "--fail-if-op-slower", "10")
    assert proc.returncode == 0, proc.stderr
    assert "regression" not in proc.stderr
    doc = diff_json(pair.base, pair.base, "--fail-if-op-slower", "10")
    assert doc["gate"]["tripped"] is False
    assert doc["gate"]["max_op_slowdown_pct"] == 10 and doc["gate"]["max_step_slowdown_pct"] is None


def test_self_diff_text(pair: Pair) -> None:
    proc = run_jaxprof("diff", pair.base, pair.base)
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout
    assert out.startswith(f"jaxprof diff: {run_dir(pair.base)} → {run_dir(pair.base)}\n")
    assert re.search(r"^Step time: mean .* \(\+0\.0% ± [0-9.]+% noise\): unchanged$", out, re.M), out
    assert "Breakdown per step" in out and "Findings that changed (0)" in out
    summary = [line for line in out.splitlines() if line.startswith("Summary: ")]
    assert len(summary) == 1 and " 0 slower," in summary[0] and " 0 added," in summary[0]


# ---- an extra matmul in a named scope ----------------------------------------------------------------

def test_extra_scope_is_added(pair: Pair) -> None:
    doc = diff_json(pair.base, pair.extra)
    rows = extra_scope_rows(doc)
    assert len(rows) == 1, [r["name"] for r in doc["scopes"]]
    extra = rows[0]
    assert extra["change"] == "added" and extra["match"] == "none"
    assert extra["base_ms"] == 0 and extra["new_ms"] > 0 and extra["delta_ms"] == extra["new_ms"]
    assert extra["base_count"] == 0 and extra["new_count"] >= 3  # three matmuls (+ tanh) per step
    # ops that ran under the new scope are new, or paired with a base op and slower
    under = [r for r in doc["ops"] if r["scope"].split("/")[-1] == "extra"]
    assert under and any(r["change"] in ("added", "slower") for r in under)
    assert doc["summary"]["ops"]["added"] >= 1 and doc["summary"]["scopes"]["added"] >= 1
    assert sum(doc["summary"]["ops"].values()) == len(doc["ops"])
    assert sum(doc["summary"]["matched"].values()) == len(doc["ops"])
    assert {r["change"] for r in doc["ops"] + doc["scopes"]} <= CHANGES


def test_extra_scope_named_in_text(pair: Pair) -> None:
    doc = diff_json(pair.base, pair.extra)
    extra = extra_scope_rows(doc)[0]
    proc = run_jaxprof("diff", pair.base, pair.extra, "--top", "100", "--width", "200")
    assert proc.returncode == 0, proc.stderr
    scopes = proc.stdout.split("\nScopes by change in self time per step")[1].split("\nFindings")[0]
    lines = [line for line in scopes.splitlines() if f"  {extra['name']}  " in line]
    assert len(lines) == 1 and lines[0].startswith("added ") and lines[0].endswith("  device  none"), scopes


def test_op_gate_trips_and_names_the_ops(pair: Pair) -> None:
    doc = diff_json(pair.base, pair.extra)
    proc = run_jaxprof("diff", pair.base, pair.extra, "--fail-if-op-slower", "10")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("jaxprof diff: ")  # the diff itself is still printed
    (why,) = [line for line in proc.stderr.splitlines() if line.startswith("jaxprof: regression: ")]
    over = [r for r in doc["ops"] if r["change"] == "added" or (r["change"] == "slower" and r["delta_pct"] > 10)]
    assert over and over[0]["name"] in why, why
    gated = diff_json(pair.base, pair.extra, "--fail-if-op-slower", "10", expect=1)
    assert gated["gate"]["tripped"] is True and over[0]["name"] in gated["gate"]["explanation"]
    assert gated["gate"]["explanation"] in why  # the same paragraph in both places
    assert {k: v for k, v in gated.items() if k != "gate"} == doc


def test_filter_and_top(pair: Pair) -> None:
    doc = diff_json(pair.base, pair.extra, "--filter", "extra$", "--top", "2")
    assert 0 < len(doc["ops"]) <= 2 and len(doc["scopes"]) == 1
    for row in doc["ops"] + doc["scopes"]:
        assert any(re.search("extra$", row[k]) for k in ("name", "base_name", "module", "scope")), row
    full = diff_json(pair.base, pair.extra)
    assert doc["summary"] == full["summary"]  # counts cover every row, not only those shown
    text = run_jaxprof("diff", pair.base, pair.extra, "--filter", "extra$").stdout
    assert re.search(r"^Scopes by change in self time per step \(1 of 1 matching the filter\)$", text, re.M), text


def test_csv_has_one_row_per_op(pair: Pair) -> None:
    doc = diff_json(pair.base, pair.extra)
    proc = run_jaxprof("diff", pair.base, pair.extra, "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert list(rows[0]) == ROW_KEYS
    assert [(r["name"], r["change"]) for r in rows] == [(r["name"], r["change"]) for r in doc["ops"]]


def test_html_page_has_the_top_op_of_the_json(pair: Pair, tmp_path: Path) -> None:
    doc = diff_json(pair.base, pair.extra)
    out = tmp_path / "diff.html"
    proc = run_jaxprof("diff", pair.base, pair.extra, "--html", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("jaxprof diff: ") and not list(tmp_path.glob("*.tmp"))
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    page = parse(html)
    assert page.ops and page.ops[0] == doc["ops"][0]["name"]
    assert page.ops == [r["name"] for r in doc["ops"][:50]]
    extra = extra_scope_rows(doc)[0]
    assert re.search(r'<tr class="added"><td>added</td>.*<code class="scope">' + re.escape(wrapped(extra["name"])) +
                     "</code>", html)
    assert f'id="verdict">' in html and 'id="breakdown-chart"' in html


def wrapped(name: str) -> str:
    """A name as the diff page writes it (no markup in it here): a <wbr> after each '/' and '.'."""
    return re.sub(r"([/.])", r"\1<wbr>", name)


def test_html_escapes_names(tmp_path: Path) -> None:
    profile = evil_space().write(tmp_path / "evil-host.xplane.pb")
    out = tmp_path / "evil.html"
    proc = run_jaxprof("diff", profile, profile, "--html", out)
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)  # no <script at all
    assert "dot&lt;script&gt;alert(1)&lt;/<wbr>script&gt;.<wbr>1&quot;&amp;" in html  # escaped, then wrappable
    assert parse(html).ops == [EVIL_OP]
    doc = diff_json(profile, profile)
    assert doc["ops"][0]["name"] == EVIL_OP and EVIL in doc["ops"][0]["scope"]


# Every place a <code> name wraps onto a new line: the character before the break, the name, and
# whether the page let it break anywhere (data-long). Characters are measured one by one.
CODE_BREAKS_JS = """
const breaks = [];
const range = document.createRange();
for (const code of document.querySelectorAll('code')) {
  const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  let top = null, prev = null;
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    for (let i = 0; i < t.length; i++) {
      range.setStart(t, i);
      range.setEnd(t, i + 1);
      const r = range.getClientRects()[0];
      if (!r || r.width === 0) continue;
      if (top !== null && r.top > top + 2) breaks.push([prev, code.textContent, code.hasAttribute('data-long')]);
      top = r.top;
      prev = t.data[i];
    }
  }
}
return breaks;
"""


def test_html_names_wrap_between_parts_never_inside_a_word(pair: Pair, tmp_path: Path) -> None:
    """In Chromium, at a wide and at a narrow window: a name that wraps does so after a '/' or '.'
    (the report's style sheet breaks code anywhere, which split names mid-word on this page)."""
    out = tmp_path / "diff.html"
    assert run_jaxprof("diff", pair.base, pair.extra, "--html", out).returncode == 0
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        for width in (1400, 560):
            driver.set_window_size(width, 2200)
            driver.get(out.as_uri())
            breaks = driver.execute_script(CODE_BREAKS_JS)
            driver.save_screenshot(str(ARTIFACTS / f"diff_html_{width}.png"))
            assert all(ch in "/." or long for ch, _, long in breaks), [b for b in breaks if b[0] not in "/."]
            if width < 1000:  # names must wrap at this width, so the check above has seen some
                assert len(breaks) >= 3, breaks
    finally:
        driver.quit()


# ---- renumbered ops (synthetic) ----------------------------------------------------------------------

def renumbered_space(op: str, dur: int) -> XSpace:
    """Two steps of one GPU op called `op` (its op_name stays put), `dur` ns per occurrence."""
    hlo = HloModule("jit_step", [HloComputation("main", 1, [
        HloInstruction(op, "fusion", op_name="jit(step)/dense/dot_general")])])
    space = XSpace(hostnames=["host"])
    space.hlo_module(7, hlo)
    py = space.plane("/host:CPU").line("python3", id=1)
    compute = space.plane("/device:GPU:0").line("Stream #13(Compute)", id=13)
    for step in range(2):
        py.span("train", step * 10000, step * 10000 + 5000, {"_r": 1, "step_num": step})
        compute.span("kernel", step * 10000 + 100, step * 10000 + 100 + dur,
                     {"hlo_op": op, "hlo_module": "jit_step", "program_id": 7, "correlation_id": Uint(step + 1)})
    return space


def test_renumbered_op_is_paired_and_shown_with_its_old_name(tmp_path: Path) -> None:
    base = renumbered_space("fusion.12", 1000).write(tmp_path / "base.xplane.pb")
    new = renumbered_space("fusion.14", 2000).write(tmp_path / "new.xplane.pb")
    doc = diff_json(base, new)
    (row,) = doc["ops"]
    assert (row["name"], row["base_name"], row["match"], row["change"]) == ("fusion.14", "fusion.12", "op_name", "slower")
    assert row["delta_pct"] == pytest.approx(100)
    text = run_jaxprof("diff", base, new).stdout
    # two identical executions a side: a noise of exactly 0, shown in the noise column
    assert re.search(r"^slower .* fusion\.14 \(was fusion\.12\) .* op_name +\u00b10$", text, re.M), text


# ---- bad input and usage -------------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["base", "new"])
def test_truncated_profile_exits_2_naming_the_file(pair: Pair, tmp_path: Path, side: str) -> None:
    good = next(pair.base.rglob("*.xplane.pb*"))
    data = good.read_bytes()
    cut = tmp_path / "cut.xplane.pb"
    if good.suffix == ".gz":
        import gzip
        data = gzip.decompress(data)
    cut.write_bytes(data[: len(data) // 2])
    args = (cut, pair.base) if side == "base" else (pair.base, cut)
    proc = run_jaxprof("diff", *args, "--fail-if-slower", "5")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"jaxprof: {cut}: ") and " at byte " in proc.stderr


def test_missing_profile_exits_2(tmp_path: Path) -> None:
    proc = run_jaxprof("diff", tmp_path / "nothing", tmp_path / "nothing")
    assert proc.returncode == 2 and proc.stderr.startswith(f"jaxprof: {tmp_path / 'nothing'}")


@pytest.mark.parametrize("args", [
    [], ["A"], ["A", "A", "A"], ["A", "A", "--top"], ["A", "A", "--top", "-1"], ["A", "A", "--bogus"],
    ["A", "A", "--fail-if-slower", "abc"], ["A", "A", "--fail-if-op-slower", "-5"], ["A", "A", "--min-change", "x"],
    ["A", "A", "--html"], ["A", "A", "--filter", "("],
])
def test_usage_errors_exit_2(pair: Pair, args: list[str]) -> None:
    proc = run_jaxprof("diff", *[str(pair.base) if a == "A" else a for a in args])
    assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
    assert proc.stdout == "" and proc.stderr.startswith("jaxprof: ") and proc.stderr.count("\n") == 1


def test_help_lists_diff() -> None:
    proc = run_jaxprof("help")
    assert proc.returncode == 0 and "diff BASE NEW" in proc.stdout and "--fail-if-op-slower" in proc.stdout
