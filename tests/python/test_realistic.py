"""Realistic captures under the sanitizers (issue 30): real JAX CPU captures of a transformer LM
training step (hundreds of output arrays), a CNN, a 500-array tuple and a deeply nested module with
a 512 MiB shape and 1,000+ character names (tests/python/realistic_models.py, run once per session
in a subprocess) go through every CLI command that reads a profile and every viewer API endpoint,
with the ASan+UBSan build of the CLI (build-asan/jaxprof, built by `make test-c`; the Makefile's
test-py names it in JAXPROF_ASAN_BIN). Each must exit with its documented status and print no
sanitizer report. Before issue 30 every command crashed on such captures (a stack overflow in HLO
text writing) and no test saw it, because every capture in the tests was small."""
from __future__ import annotations

import csv
import gzip
import http.client
import io
import json
import os
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import SECTIONS, read_until_link, stop, under_ci
from test_view import free_port
from trace_check import check_chrome_nesting, check_perfetto, decode_perfetto, load_chrome_trace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
import realistic_models as rm  # noqa: E402
from make_corpus import hlo_modules  # noqa: E402

ASAN_BIN = Path(os.environ.get("JAXPROF_ASAN_BIN") or ROOT / "build-asan" / "jaxprof")
# Leaks are reported (LeakSanitizer, on by default with ASan on Linux) and fail the command, as in
# `make test-c`; every report stops the process with a non-zero status.
SAN_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:abort_on_error=0:detect_leaks=1:print_summary=1:strict_string_checks=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:print_summary=1",
}
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer", "SUMMARY: ")
OPS_COLUMNS = ("name,category,count,total_ms,self_ms,avg_ms,min_ms,max_ms,pct_time,scope,op_name,source,"
               "function,gflops_per_s,gbytes_per_s,intensity,bound_by,module,device")
NAMES = list(rm.CAPTURES)


@dataclass
class Capture:
    name: str
    run_dir: Path     # the run directory (plugins/profile/<run>)
    xplane: Path      # its one .xplane.pb


@dataclass
class Realistic:
    log_dir: Path                 # every capture, each under log_dir/<name>/
    captures: dict[str, Capture]


@pytest.fixture(scope="session")
def asan_bin() -> Path:
    """The ASan+UBSan CLI; under CI its absence is a failure, locally a skip that says what to run."""
    if ASAN_BIN.is_file() and os.access(ASAN_BIN, os.X_OK):
        return ASAN_BIN
    if under_ci():
        pytest.fail(f"no ASan+UBSan jaxprof at {ASAN_BIN}: `make test` builds it (make test-c) before test-py")
    pytest.skip(f"no ASan+UBSan jaxprof at {ASAN_BIN}: run `make test-c` first (make test does)")


@pytest.fixture(scope="session")
def realistic(tmp_path_factory: pytest.TempPathFactory, asan_bin: Path) -> Realistic:
    """Every capture of realistic_models.py, made once per session in a subprocess (only when the
    ASan CLI is there to read them)."""
    log_dir = tmp_path_factory.mktemp("realistic")
    proc = subprocess.run([sys.executable, str(HERE / "realistic_models.py"), str(log_dir)],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    captures = {}
    for line in proc.stdout.splitlines():
        name, run_dir = line.split(" ", 1)
        (xplane,) = Path(run_dir).glob("*.xplane.pb")
        captures[name] = Capture(name, Path(run_dir), xplane)
    assert sorted(captures) == sorted(NAMES), proc.stdout
    return Realistic(log_dir, captures)


# ---- running the ASan CLI --------------------------------------------------------------------------

@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: bytes
    stderr: str

    def text(self) -> str:
        return self.stdout.decode("utf-8")  # every output is UTF-8 (a cut name never splits a character)


class Sanitized:
    """Runs the ASan CLI and collects every failure (a wrong status or a sanitizer report), so one
    test names every command that failed rather than the first."""

    def __init__(self, binary: Path, cwd: Path) -> None:
        self.binary, self.cwd, self.failures, self.count = binary, cwd, [], 0

    def run(self, *args: Any, ok: tuple[int, ...] = (0,)) -> Result:
        argv = [str(a) for a in args]
        proc = subprocess.run([str(self.binary), *argv], capture_output=True, timeout=600, cwd=self.cwd,
                              env={**os.environ, **SAN_ENV})
        self.count += 1
        res = Result(argv, proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))
        reports = [m for m in SANITIZER_MARKS if m in res.stderr]
        if proc.returncode not in ok or reports:
            self.failures.append(f"jaxprof {' '.join(a[:80] for a in argv)}: exit {proc.returncode} "
                                 f"(want {ok}), sanitizer {reports}\n{res.stderr[-3000:]}")
        try:
            res.text()
        except UnicodeDecodeError as e:  # a long name cut inside a character
            self.failures.append(f"jaxprof {' '.join(a[:80] for a in argv)}: stdout is not UTF-8: {e}")
        return res

    def json(self, *args: Any) -> Any:
        res = self.run(*args)
        try:
            return json.loads(res.stdout) if res.returncode == 0 else None
        except ValueError as e:
            self.failures.append(f"jaxprof {' '.join(res.args)}: invalid JSON: {e}")
            return None

    def csv(self, *args: Any) -> list[list[str]]:
        res = self.run(*args)
        rows = list(csv.reader(io.StringIO(res.text()))) if res.returncode == 0 else []
        widths = {len(r) for r in rows if r}
        if res.returncode == 0 and len(widths) > 1:
            self.failures.append(f"jaxprof {' '.join(res.args)}: CSV rows of {sorted(widths)} cells")
        return rows

    def check(self) -> None:
        assert not self.failures, f"{len(self.failures)} of {self.count} commands failed:\n" + \
            "\n".join(self.failures)


@pytest.fixture
def cli(asan_bin: Path, tmp_path: Path) -> Iterator[Sanitized]:
    s = Sanitized(asan_bin, tmp_path)
    yield s


def module_names(cap: Capture) -> list[str]:
    """One key ("jit_multiply(16)") per module name among the compiled modules in the capture's
    /host:metadata, those that ran and those that did not: the many modules of one name (JAX's
    small jit_multiply, jit_broadcast_in_dim, ...) differ only in their shapes, and the list stays
    short enough to run each under ASan."""
    by_name: dict[str, str] = {}
    for key in sorted(hlo_modules(cap.xplane.read_bytes())):
        by_name.setdefault(key.rsplit("(", 1)[0], key)
    return sorted(by_name.values())


# ---- every command on every capture ---------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_every_command_under_asan_ubsan(name: str, realistic: Realistic, cli: Sanitized, tmp_path: Path) -> None:
    cap = realistic.captures[name]
    path, run = cap.xplane, cap.run_dir
    docs: dict[str, Any] = {}
    for section in SECTIONS:
        cli.run(section, path)
        docs[section] = cli.json(section, run, "--json")
        if section == "report":
            cli.run(section, path, "--csv", ok=(2,))  # documented: --csv needs a table command
        else:
            cli.csv(section, path, "--csv")
    # the options that change how names and numbers are written
    cli.run("ops", path, "--columns", OPS_COLUMNS, "--width", "400")
    cli.run("ops", path, "--columns", OPS_COLUMNS, "--width", "20")
    cli.run("ops", path, "--sort", "name:asc", "--top", "5", "--filter", "fusion|dot")
    cli.run("ops", path, "--peak-tflops", "1", "--peak-gbps", "10", "--columns", "name,bound_by,intensity,roof_pct")
    cli.run("report", path, "--top", "3", "--width", "60", "--threads", "1")
    cli.run("report", path, "--threads", "2", "--library-frames", "")
    cli.run("scopes", path, "--library-frames", "", "--width", "400")
    cli.run("lines", path, "--width", "400")
    cli.run("ops", path, "--columns", "name,op_name,scope,source", "--width", "30")
    cli.run("report", path, "--html", tmp_path / "report.html")
    for section, table in (("comm", "comm_instances"), ("launch", "launch_streams")):  # second tables
        cli.run(section, path, "--table", table)
        cli.csv(section, path, "--table", table, "--csv")
        cli.json(section, path, "--table", table, "--json")
    steps = [s["step"] for s in (docs["steps"] or {}).get("steps", [])]
    if steps:
        cli.run("report", path, "--step", steps[-1])
        cli.run("ops", path, "--steps", f"{steps[0]}:{steps[-1]}", "--json")
    # memory: every compiled module in detail, text, JSON and CSV
    for module in module_names(cap):
        cli.run("memory", path, "--module", module)
        cli.json("memory", path, "--module", module, "--json")
    for m in (docs["memory"] or {}).get("modules", []):  # the modules that ran, by their key
        cli.run("memory", path, "--module", m["name"])
        cli.csv("memory", path, "--module", m["name"], "--csv")
    # flame: the table, folded stacks (stdout and a file) and pprof
    cli.run("flame", path, "--folded")
    cli.run("flame", path, "--folded", "-o", tmp_path / "folded.txt")
    cli.run("flame", path, "--pprof", tmp_path / "profile.pb.gz")
    # export: every format, and the windows
    exports = {"chrome.json.gz": [], "chrome.json": ["--format", "chrome"],
               "trace.pftrace": ["--format", "perfetto"], "gz9.json.gz": ["--gzip-level", "9"],
               "window.json": ["--window", "0:5"], "short.json": ["--min-duration", "10us"],
               "host.pftrace": ["--format", "perfetto", "--host", "vm"]}
    if steps:
        exports["steps.json"] = ["--steps", f"{steps[0]}:{steps[-1]}"]
        exports["step.pftrace"] = ["--format", "perfetto", "--steps", str(steps[0])]
    for out, args in exports.items():
        cli.run("export", run, "-o", tmp_path / out, *args)
    cli.run("latest", realistic.log_dir / name)
    cli.check()

    # what was written is what the formats say
    for out in exports:
        if out.endswith(".pftrace"):
            check_perfetto(decode_perfetto(tmp_path / out))
        else:
            doc = load_chrome_trace(tmp_path / out)
            check_chrome_nesting(doc["traceEvents"])
    full = load_chrome_trace(tmp_path / "chrome.json.gz")["traceEvents"]
    assert len(full) > 100
    assert gzip.decompress((tmp_path / "profile.pb.gz").read_bytes())
    assert (tmp_path / "folded.txt").read_text().strip()
    assert "<html" in (tmp_path / "report.html").read_text()
    for section in SECTIONS:
        assert docs[section]["section"] == section


# ---- diff, list, extract ----------------------------------------------------------------------------

def test_diff_list_extract_under_asan_ubsan(realistic: Realistic, cli: Sanitized, tmp_path: Path) -> None:
    caps = realistic.captures
    for name in NAMES:  # a capture against itself: nothing changed
        cli.json("diff", caps[name].xplane, caps[name].run_dir, "--json")
        cli.run("diff", caps[name].xplane, caps[name].xplane, "--fail-if-slower", "1", "--fail-if-op-slower", "1")
    for base, new in zip(NAMES, NAMES[1:] + NAMES[:1]):  # two different captures, every format
        a, b = caps[base].xplane, caps[new].xplane
        cli.run("diff", a, b)
        cli.json("diff", a, b, "--json")
        cli.csv("diff", a, b, "--csv")
        cli.run("diff", a, b, "--html", tmp_path / f"{base}-{new}.html", "--top", "3", "--width", "400")
        cli.run("diff", a, b, "--fail-if-slower", "0", "--fail-if-op-slower", "0", ok=(0, 1))
    runs = cli.json("list", realistic.log_dir, "--json")
    cli.run("list", realistic.log_dir)
    cli.run("latest", realistic.log_dir)
    # extract: a gzip'd copy of every capture, decompressed again
    gz = tmp_path / "gz"
    for name in NAMES:
        dst = gz / name / "plugins" / "profile" / caps[name].run_dir.name
        dst.mkdir(parents=True)
        (dst / f"{caps[name].xplane.name}.gz").write_bytes(gzip.compress(caps[name].xplane.read_bytes(), 1))
        cli.run("report", dst / f"{caps[name].xplane.name}.gz")
        cli.run("extract", gz / name, "--out", tmp_path / "out" / name)
    cli.run("extract", gz, "--run", caps["lm"].run_dir.name, "--out", tmp_path / "out-lm")
    cli.check()
    assert runs is not None and len(runs["runs"] if isinstance(runs, dict) else runs) == len(NAMES)
    for name in NAMES:
        (got,) = (tmp_path / "out" / name).rglob("*.xplane.pb")
        assert got.read_bytes() == caps[name].xplane.read_bytes()
    for name in NAMES:
        assert "<html" in (tmp_path / f"{name}-{NAMES[(NAMES.index(name) + 1) % len(NAMES)]}.html").read_text()


# ---- the viewer ---------------------------------------------------------------------------------

class Client:
    def __init__(self, port: int) -> None:
        self.port, self.failures, self.count = port, [], 0

    def get(self, path: str, want: int = 200) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body, status, ctype = resp.read(), resp.status, resp.getheader("content-type", "")
        finally:
            conn.close()
        self.count += 1
        if status != want:
            self.failures.append(f"{path[:200]}: {status} (want {want}): {body[:300]!r}")
            return None
        if ctype != "application/json":
            return body
        try:
            return json.loads(body)
        except ValueError as e:
            self.failures.append(f"{path[:200]}: invalid JSON: {e}")
            return None


@pytest.fixture
def asan_viewer(asan_bin: Path, realistic: Realistic, tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Client, Path]]:
    port = free_port()
    err = tmp_path / "viewer-stderr.txt"
    with open(err, "w") as err_file:
        proc = subprocess.Popen([str(asan_bin), "view", str(realistic.log_dir), "--no-browser", "--ui", "builtin",
                                 "--port", str(port)], stdout=subprocess.PIPE, stderr=err_file,
                                env={**os.environ, **SAN_ENV})
    try:
        out = read_until_link(proc, timeout=120)
        assert f"http://127.0.0.1:{port}/" in out
        yield proc, Client(port), err
    finally:
        stop(proc)


def test_viewer_every_endpoint_under_asan_ubsan(asan_viewer, realistic: Realistic) -> None:
    proc, v, err = asan_viewer
    index = v.get("/api")
    assert index and "/api/runs" in index["api"]
    assert v.get("/") is not None
    runs = v.get("/api/runs")
    assert runs is not None and len(runs) == len(NAMES)
    by_name = {}
    for r in runs:
        name = next(n for n in NAMES if r["path"].startswith(n + "/"))
        by_name[name] = r["id"]
    sections = ["overview" if s == "report" else s for s in SECTIONS]
    for name, rid in by_name.items():
        base = f"/api/run/{rid}"
        for section in sections:
            v.get(f"{base}/{section}")
        steps = (v.get(f"{base}/steps") or {}).get("steps", [])
        if steps:
            v.get(f"{base}/overview?steps={steps[0]['step']}:{steps[-1]['step']}")
            v.get(f"{base}/ops?steps={steps[-1]['step']}:{steps[-1]['step']}")
        for module in module_names(realistic.captures[name]):
            v.get(f"{base}/memory?module={urllib.parse.quote(module)}")
        v.get(f"{base}/ops?host=vm")
        full = v.get(f"{base}/timeline?px=1000000")
        assert full is not None and full["total_events"] > 0, name
        end_ms = max((e[0] + e[1] for t in full["tracks"] for e in t["events"]), default=1000) / 1000
        for start, end, px in ((0, end_ms, 2000), (0, end_ms / 10, 500), (end_ms / 2, end_ms / 2 + 0.01, 100),
                               (end_ms * 0.9, end_ms, 20), (0, end_ms, 1)):
            v.get(f"{base}/timeline?start_ms={start}&end_ms={end}&px={px}")
        tracks = [t["id"] for t in full["tracks"]]
        v.get(f"{base}/timeline/aggregate?start_us=0&end_us={end_ms * 1000}")
        v.get(f"{base}/timeline/aggregate?start_us=0&end_us={end_ms * 500}&tracks={','.join(map(str, tracks[:3]))}")
        picked = 0
        for t in full["tracks"]:
            for e in t["events"][:: max(1, len(t["events"]) // 3)][:3]:
                if e[4] >= 0:
                    detail = v.get(f"{base}/event?track={t['id']}&index={e[4]}")
                    picked += detail is not None and "name" in detail
        assert picked >= 3, name
    ids = [by_name[n] for n in NAMES]
    for a, b in zip(ids, ids[1:] + ids[:1]):
        v.get(f"/api/diff?base={a}&new={b}")
        v.get(f"/api/diff?base={a}&new={a}")
    v.get(f"/api/diff?base={ids[0]}&new={ids[1]}")  # the kept answer, sent again
    assert not v.failures, f"{len(v.failures)} of {v.count} requests failed:\n" + "\n".join(v.failures)
    assert proc.poll() is None, "the viewer died"
    proc.send_signal(signal.SIGTERM)  # a clean exit, so LeakSanitizer checks it too
    assert proc.wait(timeout=120) == 0
    stderr = err.read_text()
    assert not [m for m in SANITIZER_MARKS if m in stderr], stderr[-3000:]


# ---- real values ------------------------------------------------------------------------------------

def test_realistic_values(realistic: Realistic, cli: Sanitized) -> None:
    caps = realistic.captures
    # the LM: its train_step ran 3 captured steps, returning the whole train state
    lm_steps = cli.json("steps", caps["lm"].xplane, "--json")
    lm_ops = cli.json("ops", caps["lm"].xplane, "--json")
    lm_mem = cli.json("memory", caps["lm"].xplane, "--json")
    t500 = cli.json("memory", caps["tuple500"].xplane, "--json")
    t500_mod = cli.json("memory", caps["tuple500"].xplane, "--module", "jit_five_hundred", "--json")
    deep_ops = cli.json("ops", caps["deep"].xplane, "--json")
    deep_scopes = cli.json("scopes", caps["deep"].xplane, "--json")
    deep_mem = cli.json("memory", caps["deep"].xplane, "--json")
    deep_text = cli.run("memory", caps["deep"].xplane, "--width", "200").text()
    cli.check()
    assert [s["step"] for s in lm_steps["steps"]] == [2, 3, 4]
    assert {o["module"].split("(")[0] for o in lm_ops["ops"]} == {"jit_train_step"}
    assert any("train_step" in o["op_name"] for o in lm_ops["ops"])
    (lm_module,) = lm_mem["modules"]
    assert lm_module["name"].startswith("jit_train_step(") and lm_module["runs"] == 3
    assert lm_module["output_bytes"] > 0 and lm_module["parameter_bytes"] > 0
    # the 500-array tuple: one module, its 500 outputs of f32[64,80] among its buffers
    (mod,) = t500["modules"]
    each = rm.TUPLE_SHAPE[0] * rm.TUPLE_SHAPE[1] * 4
    assert mod["name"].startswith("jit_five_hundred(") and mod["output_bytes"] >= rm.TUPLE_N * each
    (detail,) = t500_mod["modules"]
    outputs = [b for b in detail["buffers"] if b["kind"] == "output" and b["bytes"] == each]
    assert len(outputs) == rm.TUPLE_N, len(outputs)
    assert {b["shape"] for b in outputs} == {f"f32[{rm.TUPLE_SHAPE[0]},{rm.TUPLE_SHAPE[1]}]"}
    # the deep module: its 512 MiB output, and the long names intact in JSON
    (dmod,) = deep_mem["modules"]
    assert dmod["name"] == f"jit_{rm.LONG_FN_NAME}" or dmod["name"].startswith(f"jit_{rm.LONG_FN_NAME}(")
    assert dmod["output_bytes"] >= 4 * 4096 * 4096 * 8
    big = next(b for b in dmod["buffers"] if b["bytes"] == 4 * 4096 * 4096 * 8)
    assert big["shape"] == "f32[4096,4096,8]" and rm.LONG_SCOPE in big["op_name"]
    top = deep_ops["ops"][0]
    assert top["op_name"] == f"jit({rm.LONG_FN_NAME})/{rm.LONG_SCOPE}/broadcast_in_dim"
    assert top["module"].startswith(f"jit_{rm.LONG_FN_NAME}")
    device_scopes = {s["scope"] for s in deep_scopes["scopes"] if s["kind"] == "device"}
    assert f"{rm.LONG_FN_NAME}/{rm.LONG_SCOPE}" in device_scopes, sorted(s[:60] for s in device_scopes)
    # text cuts a long name with a marker: what is shown is a piece of the name, after "..."
    row = next(line for line in deep_text.splitlines() if "512.0 MiB" in line and "abcdefghij" in line)
    shown = row.split()[0]
    assert shown.startswith("...") and len(shown) > 20 and dmod["name"].endswith(shown[3:]), shown


def test_memory_page_fits_a_thousand_character_module_name(realistic: Realistic) -> None:
    """The memory page of the `deep` capture in a real Chromium: its module picker holds the
    1,025-character module name and must stay inside the window (it widened the page past it)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from conftest import headless_chromium
    from test_viewer_browser import serve_dir

    for url in serve_dir(realistic.log_dir):
        with urllib.request.urlopen(url + "api/runs", timeout=60) as r:
            runs = json.load(r)
        (deep,) = [run["id"] for run in runs if run["path"].startswith("deep/")]
        for driver in headless_chromium("1400,1000"):
            driver.get(f"{url}#/memory?run={deep}")
            picker = WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#mem-module"))[0]
            name = picker.get_attribute("value")
            assert name.startswith("jit_deep_") and len(name) > 1000, name[:80]
            right = driver.execute_script("return arguments[0].getBoundingClientRect().right", picker)
            assert right <= driver.execute_script("return window.innerWidth"), right
