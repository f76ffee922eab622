"""`jaxprof report --html`: one self-contained page, checked on a real JAX CPU capture (structure,
no outside resources, the same numbers as --json, one chart bar per step, a real headless
Chromium load), on a synthetic profile whose names hold markup (escaping), and on bad input."""
from __future__ import annotations

import re
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxprof

from conftest import REAL_CAPTURES, jaxprof_json, only_xplane, run_jaxprof
from xplane_gen import HloComputation, HloInstruction, HloModule, Uint, XSpace

CHROMIUM = Path("/usr/bin/chromium")
VOID_TAGS = {"meta", "br", "img", "input", "link", "hr", "wbr", "col", "area", "base", "source"}


@jax.jit
def scoped_step(w: jax.Array, x: jax.Array) -> jax.Array:
    """A matmul under a named scope, so ops carry a user scope."""
    with jax.named_scope("html_dense"):
        h = jnp.tanh(x @ w)
    return w - 1e-3 * jnp.mean(h)


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    """Five steps, steps 1-3 captured by the Profiler."""
    log_dir = tmp_path_factory.mktemp("html_capture")
    w, x = jnp.ones((128, 128)) * 1e-2, jnp.ones((64, 128))
    scoped_step(w, x).block_until_ready()  # compile outside the capture
    with jaxprof.Profiler(log_dir, start_step=1, num_steps=3, report=False) as prof:
        for i in range(5):
            with prof.step(i):
                w = scoped_step(w, x)
            w.block_until_ready()
    return only_xplane(log_dir)


class Structure(HTMLParser):
    """Checks that every opened element is closed in order, and collects what the tests read."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.step_groups = 0
        self.ops: list[str] = []
        self.lines: list[str] = []            # the source lines table's "file:line" cells
        self.dots: list[str] = []             # the roofline's dots, each its <title>
        self.step_count: str | None = None
        self._capture: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "g" and a.get("class") == "step":
            self.step_groups += 1
        if tag == "code" and a.get("class") == "op" or tag == "span" and a.get("id") == "step-count":
            self._capture, self._text = ("op" if tag == "code" else "steps"), ""
        if tag == "code" and a.get("class") == "line":
            self._capture, self._text = "line", ""
        if tag == "circle" and a.get("class") == "op":
            self._capture, self._text = "dot", ""
        if tag not in VOID_TAGS:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "g" and dict(attrs).get("class") == "step":
            self.step_groups += 1

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if self._capture == "dot" and tag == "circle":
            self.dots.append(self._text)
            self._capture = None
        if self._capture and tag in ("code", "span"):
            if self._capture == "op":
                self.ops.append(self._text)
            elif self._capture == "line":
                self.lines.append(self._text)
            elif self.step_count is None:
                self.step_count = self._text
            self._capture = None

    def handle_data(self, data: str) -> None:
        if self._capture:
            self._text += data


def parse(html: str) -> Structure:
    p = Structure()
    p.feed(html)
    p.close()
    assert not p.errors, p.errors[:5]
    assert p.stack == [], f"unclosed: {p.stack}"
    return p


def write_html(profile: Path, out: Path) -> str:
    proc = run_jaxprof("report", str(profile), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert not list(out.parent.glob("*.tmp"))  # no temporary file left (.NAME.<hex>.tmp)
    return out.read_text(encoding="utf-8")


def assert_self_contained(html: str) -> None:
    low = html.lower()
    assert "<script" not in low
    assert "http://" not in low and "https://" not in low
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(//|[a-z][a-z0-9+.-]*:)""", low)
    assert "@import" not in low and "url(" not in low and "<link" not in low and "<iframe" not in low


@pytest.fixture(scope="module")
def cpu_html(capture, tmp_path_factory) -> tuple[Path, str, dict]:
    out = tmp_path_factory.mktemp("html_out") / "report.html"
    return out, write_html(capture, out), jaxprof_json("report", capture)


def test_html_matches_json_report(cpu_html):
    _, html, doc = cpu_html
    page = parse(html)
    assert_self_contained(html)
    assert doc["step_summary"]["count"] == len(doc["steps"]) == 3
    assert page.step_count == "3"
    assert page.step_groups == 3  # one bar group per step
    assert doc["ops"] and page.ops[0] == doc["ops"][0]["name"]
    assert page.ops == [o["name"] for o in doc["ops"][:20]]
    assert "html_dense" in html  # the named scope reaches the ops and scopes tables
    for part in ("compute", "collective", "h2d", "d2h", "d2d", "compile", "host", "idle"):
        assert f"</span>{part}" in html  # legend entry
    for section in ("overview", "steps", "breakdown", "kpis", "ops", "scopes", "findings"):
        assert f'<section id="{section}">' in html
    for kpi in doc["kpis"]:
        assert kpi["name"] in html
    for finding in doc["findings"]:
        assert finding["id"] in html


def roofline_ops(doc: dict) -> list[dict]:
    """The ops the roofline places: FLOP and byte counts and time, the top 50 by self time."""
    ops = [o for o in doc["ops"] if o["flops"] > 0 and o["bytes"] > 0 and o["total_ms"] > 0]
    return sorted(ops, key=lambda o: -o["self_ms"])[:50]


def test_html_has_source_lines_and_a_roofline(cpu_html, capture, tmp_path):
    _, html, doc = cpu_html
    page = parse(html)
    # A line of scoped_step in this file (XLA:CPU fuses its matmul into the op of its last line),
    # relative to the directory the files share, heads the lines table.
    src = Path(__file__).read_text(encoding="utf-8").splitlines()
    body = {f"test_html_report.py:{n}" for n, text in enumerate(src, 1)
            if text.strip() in ("h = jnp.tanh(x @ w)", "return w - 1e-3 * jnp.mean(h)")}
    assert len(body) == 2 and page.lines and page.lines[0] in body
    assert page.lines == [line["source"] for line in doc["lines"][:10]]
    assert "<td>scoped_step</td>" in html
    assert '<section id="lines">' in html and "<th>top ops</th>" in html
    # One dot per op with FLOP and byte counts, named by its op; the CPU has no peaks, so no roofs.
    want = roofline_ops(doc)
    assert want, "the capture's matmul has FLOP and byte counts"
    assert len(page.dots) == len(want) == html.count('<circle class="op"')
    assert sorted(t.split(": ")[0] for t in page.dots) == sorted(o["name"] for o in want)
    assert '<svg id="roofline-chart"' in html and 'class="roof"' not in html
    assert "no device peaks known (pass --peak-tflops/--peak-gbps)" in html.lower()
    # With peaks given, the roofs are drawn and every dot says which roof it sits under.
    proc = run_jaxprof("report", str(capture), "--html", str(tmp_path / "peaks.html"), "--peak-tflops", "1",
                       "--peak-gbps", "50")
    assert proc.returncode == 0, proc.stderr
    peaks = (tmp_path / "peaks.html").read_text(encoding="utf-8")
    page = parse(peaks)
    assert_self_contained(peaks)
    assert peaks.count('<polyline class="roof"') == 1 and "ridge at 20 FLOP/byte" in peaks
    assert len(page.dots) == len(want)
    assert all(t.endswith("of its roof") and ("compute bound" in t or "memory bound" in t) for t in page.dots)


def wait_for_chromium() -> None:
    """Chromium may still be being installed by apt: wait for it rather than skip the check."""
    deadline = time.monotonic() + 300
    while not CHROMIUM.exists() and time.monotonic() < deadline:
        time.sleep(5)
    assert CHROMIUM.exists(), "chromium did not appear at /usr/bin/chromium"


def chromium(profile_dir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile_dir}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def test_html_loads_in_headless_chromium(cpu_html, tmp_path):
    wait_for_chromium()
    out, _, doc = cpu_html
    png = tmp_path / "report.png"
    shot = chromium(tmp_path / "p1", f"--screenshot={png}", "--window-size=1280,2000", out.as_uri())
    assert png.exists(), shot.stderr[-2000:]
    assert png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = chromium(tmp_path / "p2", "--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = parse(dom.stdout)
    assert page.ops and page.ops[0] == doc["ops"][0]["name"]
    assert page.step_count == str(doc["step_summary"]["count"]) == "3"
    assert page.step_groups == 3


# A GPU profile whose HLO op, scope and host annotation names carry markup.
EVIL = "<script>alert(1)</script>"
EVIL_OP = f'dot{EVIL}.1"&'
EVIL_HLO = HloModule("jit_step", [
    HloComputation("main", 1, [
        HloInstruction(EVIL_OP, "dot", op_name=f"jit(step)/{EVIL}/dense/dot_general",
                       source_file=f"/src/{EVIL}.py", source_line=7),
    ]),
])


def evil_space() -> XSpace:
    space = XSpace(hostnames=["evil-host"])
    space.hlo_module(7, EVIL_HLO)
    py = space.plane("/host:CPU").line("python3", id=1)
    for step in range(2):
        py.span("train", step * 1000, step * 1000 + 500, {"_r": 1, "step_num": step})
        py.span(f"annotation {EVIL}", step * 1000 + 10, step * 1000 + 90)
    compute = space.plane("/device:GPU:0").line("Stream #13(Compute)", id=13)
    for step in range(2):
        compute.span("gemm_kernel", step * 1000 + 100, step * 1000 + 300,
                     {"hlo_op": EVIL_OP, "hlo_module": "jit_step", "program_id": 7,
                      "correlation_id": Uint(step + 1)})
    return space


def test_markup_in_names_is_escaped(tmp_path):
    profile = evil_space().write(tmp_path / "evil-host.xplane.pb")
    doc = jaxprof_json("report", profile)
    assert doc["ops"][0]["name"] == EVIL_OP and EVIL in doc["ops"][0]["scope"]
    assert any(EVIL in s["scope"] for s in doc["scopes"] if s["kind"] != "device")
    html = write_html(profile, tmp_path / "evil.html")
    page = parse(html)
    assert_self_contained(html)  # no <script at all: every name was escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "dot&lt;script&gt;alert(1)&lt;/script&gt;.1&quot;&amp;" in html
    assert [line["source"] for line in doc["lines"]] == page.lines  # the source line too
    assert len(page.lines) == 1 and page.lines[0].endswith(f"{EVIL}.py:7")
    assert page.ops[0] == EVIL_OP  # and the parser reads the original name back
    assert page.step_groups == 2


def test_bad_input_exits_2_and_leaves_no_file(tmp_path):
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a profile")
    out = tmp_path / "out.html"
    proc = run_jaxprof("report", str(bad), "--html", str(out))
    assert proc.returncode == 2
    assert proc.stderr.startswith("jaxprof: ") and proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == [bad]


def test_unwritable_output_exits_2_and_leaves_no_file(capture, tmp_path):
    out = tmp_path / "missing_dir" / "out.html"
    proc = run_jaxprof("report", str(capture), "--html", str(out))
    assert proc.returncode == 2
    # the file asked for is named (not the .tmp written first), and why it cannot be
    assert proc.stderr == f"jaxprof: {out}: cannot write: the directory {out.parent} does not exist\n"
    assert not out.parent.exists()
    # an existing directory in the way of the rename: the .tmp is removed again
    blocker = tmp_path / "taken.html"
    blocker.mkdir()
    (blocker / "keep").write_text("x")
    proc = run_jaxprof("report", str(capture), "--html", str(blocker))
    assert proc.returncode == 2 and proc.stderr.startswith("jaxprof: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.html"]


@pytest.mark.parametrize("args", [["ops"], ["steps"], ["report", "--json"], ["report", "--csv"]])
def test_html_only_with_plain_report(capture, tmp_path, args):
    out = tmp_path / "x.html"
    proc = run_jaxprof(args[0], str(capture), *args[1:], "--html", str(out))
    assert proc.returncode == 2 and proc.stderr.startswith("jaxprof: ")
    assert not out.exists()


def test_html_needs_a_file_name(capture):
    proc = run_jaxprof("report", str(capture), "--html")
    assert proc.returncode == 2 and proc.stderr.startswith("jaxprof: ")


# ---- many devices: communication and idle by cause ---------------------------------------------------

class SectionRows(HTMLParser):
    """The cell texts of each body row of the table inside <section id=...>."""

    def __init__(self, section: str) -> None:
        super().__init__()
        self.section, self.inside, self.rows, self._cell = section, False, [], None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.inside = dict(attrs).get("id") == self.section
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self._cell = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.inside = False
        elif self.inside and tag == "td" and self._cell is not None:
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell += data


def section_rows(html: str, section: str) -> list[list[str]]:
    p = SectionRows(section)
    p.feed(html)
    return [r for r in p.rows if r]  # the header row has no <td>


UNIT_BYTES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
UNIT_MS = {"ps": 1e-9, "ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1e3}


def cell_ms(text: str) -> float:
    """"373.80 ms" -> 373.8; "0" -> 0 (jp_format_time's forms)."""
    value, _, unit = text.strip().partition(" ")
    return float(value) * (UNIT_MS[unit] if unit else 1.0)


def test_html_report_lists_the_collectives_of_jaxprof_comm(tmp_path):
    """The real v6e capture (12 all-reduce runs on 4 cores): the report's Communication section
    gives each collective's count, times, size, n, busbw, wait and last device as `comm --json`."""
    capture = REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz"
    html = write_html(capture, tmp_path / "tpu.html")
    rows = section_rows(html, "communication")
    doc = jaxprof_json("comm", capture)["comm"]
    assert len(rows) == len(doc) >= 1
    for cells, c in zip(rows, doc):
        name, module, kind, count, devices, total, hidden, exposed, size, n, busbw, wait, last = cells
        assert (name, module, kind, int(count), int(devices), int(n), last) == (
            c["name"], c["module"], c["type"], c["count"], c["devices"], c["group_size"], c["last_device"])
        for got, want in ((total, c["total_ms"]), (hidden, c["hidden_ms"]), (exposed, c["exposed_ms"]),
                          (wait, c["wait_ms"])):
            assert cell_ms(got) == pytest.approx(want, rel=5e-3, abs=1e-6), cells
        assert float(busbw) == pytest.approx(c["busbw_gbps"], abs=0.006), cells
        value, unit = size.split()
        assert float(value) * UNIT_BYTES[unit] == pytest.approx(c["bytes"], rel=5e-3), cells


def test_html_report_splits_device_idle_by_cause_as_jaxprof_launch(tmp_path):
    """The project's own H200 capture without command buffers: the Device idle by cause section
    gives each device's host wait, kernel-to-kernel and other idle, launches and queue as
    `launch --json`; a CPU profile (no launches) has no such section."""
    capture = Path(__file__).resolve().parents[1] / "data" / "gpu" / "h200_transformer_nocb.xplane.pb.gz"
    html = write_html(capture, tmp_path / "gpu.html")
    rows = section_rows(html, "idle-causes")
    devices = [d for d in jaxprof_json("launch", capture)["devices"] if d["launched"]]
    assert len(rows) == len(devices) >= 1
    for cells, d in zip(rows, devices):
        name, host, k2k, other, launched, short, qmax, qmean = cells
        assert (name, int(launched), int(short), int(qmax)) == (d["name"], d["launched"], d["short_kernels"], d["queue_max"])
        for got, want in ((host, d["idle_host_ms"]), (k2k, d["idle_kernel_ms"]), (other, d["idle_other_ms"])):
            assert cell_ms(got) == pytest.approx(want, rel=5e-3, abs=1e-6), cells
        assert float(qmean) == pytest.approx(d["queue_mean"], abs=0.051)
    assert 'id="idle-causes"' not in write_html(REAL_CAPTURES / "jax_tpu_v6e_4core_inference.xplane.pb.gz", tmp_path / "t.html")
