"""Pods: real jax.distributed CPU jobs whose processes share no file system (each works in a
directory of its own, as the machines of a pod). Each process summarises its own capture and shares
the summary through the job's key-value store; process 0 logs the merged multi-host report. The
merge from summaries is held to the merge of the raw files copied to one place (what
`jaxprof hosts` reads without summaries), and a bad summary to a clear warning and the raw file."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_jaxprof
from test_multihost import free_port

WORKER = Path(__file__).with_name("multihost_worker.py")
HOST = socket.gethostname()


def run_job(root: Path, *extra: str, count: int = 3, gather_s: int = 60) -> list[subprocess.CompletedProcess]:
    """The job's processes side by side, each in root/machine<i>; their outputs and exit codes."""
    port = free_port()
    env = {**os.environ, "JAXPROF_GATHER_TIMEOUT": str(gather_s)}
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(i), str(count), str(port), str(root), "--own-disk", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) for i in range(count)]
    done = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=240)
            done.append(subprocess.CompletedProcess(p.args, p.returncode, out, ""))
    finally:
        for p in procs:
            p.kill()
    return done


SAME = ("clock_method", "host_stats", "host_steps", "stragglers", "hosts", "platform", "events", "span_ms",
        "device_busy_ms", "device_idle_pct", "capture_health")


def assert_same_merge(merged: dict, raw: dict) -> None:
    """`hosts --json` merged from summaries against the raw files': every multi-host key and the
    header equal; the devices but for the cross-host collective wait, which needs every host's
    events; each host's kept top ops (50 at most) equal to those rows of the raw table."""
    assert merged["summarized_hosts"] > 0 and raw["summarized_hosts"] == 0
    for key in SAME:
        assert merged[key] == raw[key], key
    strip = lambda devs: [{k: v for k, v in d.items() if k != "collective_wait_ms"} for d in devs]
    assert strip(merged["devices"]) == strip(raw["devices"])
    row = lambda r: (r["module"], r["name"], r["device"], r["program_id"])
    for host, rows in merged["host_ops"].items():
        kept = {row(r) for r in rows}
        assert len(rows) == min(50, len(raw["host_ops"][host]))
        assert rows == [r for r in raw["host_ops"][host] if row(r) in kept]


def run_dir(root: Path, machine: int) -> Path:
    runs = list((root / f"machine{machine}" / "profiles" / "step_00000002" / "plugins" / "profile").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


@pytest.fixture(scope="module")
def pod(tmp_path_factory) -> tuple[Path, list[subprocess.CompletedProcess]]:
    """Three processes; process 1 sleeps 80 ms inside steps 3 and 4: the planted straggler."""
    root = tmp_path_factory.mktemp("pod")
    return root, run_job(root, "--slow", "3,4")


@pytest.fixture(scope="module")
def raw_copy(pod, tmp_path_factory) -> Path:
    """The three raw captures copied to one place, as a user without summaries would."""
    root, _ = pod
    raw = tmp_path_factory.mktemp("raw")
    for m in range(3):
        for f in run_dir(root, m).glob("*.xplane.pb"):
            shutil.copy(f, raw / f.name)
    return raw


def hosts_json(path: Path, *extra: str) -> dict:
    res = run_jaxprof("hosts", path, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_process_0_logs_the_merged_report_with_the_straggler_named(pod):
    root, outs = pod
    assert [o.returncode for o in outs] == [0, 0, 0], [o.stdout[-2000:] for o in outs]
    line = next(l for l in outs[0].stdout.splitlines() if "merged from their summaries" in l)
    assert "3 of 3 processes merged from their summaries" in line
    assert f"step 3 {HOST}-p1 (+" in line and f"step 4 {HOST}-p1 (+" in line, line
    assert "One host holds the others back" in line and "missing" not in line
    listed = run_jaxprof("list", root / "machine0" / "profiles", "--json")
    [run] = json.loads(listed.stdout)["runs"]
    assert run["hosts"] == [f"{HOST}-p0"] and run["summarized_hosts"] == [f"{HOST}-p1", f"{HOST}-p2"]
    assert f"{HOST}-p0 + summaries of {HOST}-p1, {HOST}-p2" in run_jaxprof("list", root / "machine0" / "profiles").stdout
    import jaxprof
    assert jaxprof.latest_run(root / "machine0" / "profiles").summarized_hosts == (f"{HOST}-p1", f"{HOST}-p2")
    for o in outs[1:]:  # only process 0 reports
        assert "merged from their summaries" not in o.stdout
    # each machine holds its own capture and summary; process 0 also the others' summaries
    for m in range(3):
        names = sorted(f.name for f in run_dir(root, m).iterdir() if "xplane" in f.name or "summary" in f.name)
        others = [f"{HOST}-p{k}.jaxprof-summary.json" for k in range(3) if k != m] if m == 0 else []
        assert names == sorted([f"{HOST}-p{m}.jaxprof-summary.json", f"{HOST}-p{m}.xplane.pb", *others])


def test_the_merge_from_summaries_equals_the_merge_from_the_raw_files(pod, raw_copy):
    root, _ = pod
    merged = hosts_json(run_dir(root, 0))
    raw = hosts_json(raw_copy)
    assert merged["summarized_hosts"] == 3
    assert_same_merge(merged, raw)
    behind = {(s["step"], s["host"]): s["behind_ms"] for s in merged["stragglers"]}
    assert behind[(3, f"{HOST}-p1")] > 60 and behind[(4, f"{HOST}-p1")] > 60
    # the text is the same too, but for the line that says where the hosts came from
    text = run_jaxprof("hosts", run_dir(root, 0)).stdout.splitlines()
    assert text[0] == "3 of 3 hosts read from their summaries (jaxprof summarize); --full reads every file"
    assert text[1:] == run_jaxprof("hosts", raw_copy).stdout.splitlines()


def test_summaries_alone_merge_and_full_reads_the_files(pod, raw_copy, tmp_path):
    """The rsync recipe: only the summaries copied to one place."""
    root, _ = pod
    for m in range(3):
        for f in run_dir(root, m).glob(f"*-p{m}.jaxprof-summary.json"):
            shutil.copy(f, tmp_path / f.name)
    only = hosts_json(tmp_path)
    assert only["host_stats"] == hosts_json(raw_copy)["host_stats"]
    report = run_jaxprof("report", tmp_path)
    assert report.returncode == 0 and "3 of 3 hosts read from their summaries" in report.stdout
    assert "Findings (" in report.stdout and "One host holds the others back (" in report.stdout
    # --full on process 0's run reads its one file: one host
    full = hosts_json(run_dir(root, 0), "--full")
    assert full["hosts"] == [f"{HOST}-p0"] and full["summarized_hosts"] == 0


def summaries_tree(root: Path, logs: Path) -> Path:
    """Every process's summary alone, copied into one log directory's run as its machines hold it
    (the rsync recipe keeping the tree): logs/step_00000002/plugins/profile/<run>/."""
    run = logs / run_dir(root, 0).relative_to(root / "machine0" / "profiles")
    run.mkdir(parents=True)
    for m in range(3):
        shutil.copy(run_dir(root, m) / f"{HOST}-p{m}.jaxprof-summary.json", run)
    return run


def test_a_log_directory_of_summaries_alone_lists_reports_and_refuses_what_needs_files(pod, raw_copy, tmp_path):
    root, _ = pod
    run = summaries_tree(root, tmp_path / "logs")
    [listed] = json.loads(run_jaxprof("list", tmp_path / "logs", "--json").stdout)["runs"]
    assert listed["path"] == str(run) and listed["hosts"] == [] and listed["files"] != []
    assert listed["summarized_hosts"] == [f"{HOST}-p{m}" for m in range(3)]
    assert listed["steps"] == {"count": 4, "first": 2, "last": 5} and listed["error"] is None
    assert f"summaries of {HOST}-p0, {HOST}-p1, {HOST}-p2" in run_jaxprof("list", tmp_path / "logs").stdout
    assert hosts_json(tmp_path / "logs")["host_stats"] == hosts_json(raw_copy)["host_stats"]
    report = run_jaxprof("report", tmp_path / "logs")
    assert report.returncode == 0 and "3 of 3 hosts read from their summaries" in report.stdout
    ops = run_jaxprof("ops", tmp_path / "logs")
    assert ops.returncode == 2 and f"{run}: holds host summaries alone, no *.xplane.pb" in ops.stderr, ops.stderr
    import jaxprof
    assert jaxprof.latest_run(tmp_path / "logs").summarized_hosts == tuple(f"{HOST}-p{m}" for m in range(3))
    assert [h["host"] for h in jaxprof.load(tmp_path / "logs", summaries=True).hosts()["host_stats"]] == [
        f"{HOST}-p{m}" for m in range(3)]


def test_a_process_killed_mid_run_is_reported_missing_and_the_job_ends(tmp_path):
    outs = run_job(tmp_path, "--die", "2", gather_s=10)
    assert outs[2].returncode == -9  # SIGKILL, right after its last captured step
    assert [o.returncode for o in outs[:2]] == [0, 0], [o.stdout[-2000:] for o in outs[:2]]
    line = next(l for l in outs[0].stdout.splitlines() if "merged from their summaries" in l)
    assert "2 of 3 processes merged" in line
    assert "process 2 missing: no summary within 10 s" in line
    assert sorted(f.name for f in run_dir(tmp_path, 0).glob("*.jaxprof-summary.json")) == [
        f"{HOST}-p0.jaxprof-summary.json", f"{HOST}-p1.jaxprof-summary.json"]


# ---- summaries on disk: written offline, validated on read ----------------------------------------

@pytest.fixture()
def two_hosts(pod, tmp_path) -> Path:
    """Two of the pod's raw captures in one run directory, summarised offline."""
    root, _ = pod
    for m in (0, 1):
        shutil.copy(run_dir(root, m) / f"{HOST}-p{m}.xplane.pb", tmp_path)
    res = run_jaxprof("summarize", tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(tmp_path / f"{HOST}-p{m}.jaxprof-summary.json") for m in (0, 1)]
    return tmp_path


def summary_of(run: Path, m: int) -> Path:
    return run / f"{HOST}-p{m}.jaxprof-summary.json"


def test_a_summary_is_a_small_versioned_document_of_its_file(two_hosts):
    doc = json.loads(summary_of(two_hosts, 1).read_text())
    assert doc["jaxprof_host_summary"] == 1 and doc["host"] == f"{HOST}-p1" and doc["file"] == f"{HOST}-p1.xplane.pb"
    assert doc["file_bytes"] == (two_hosts / f"{HOST}-p1.xplane.pb").stat().st_size
    assert [s["step"] for s in doc["steps"]] == [2, 3, 4, 5]
    assert all(s["sync_ps"] is not None for s in doc["steps"])  # every step ends in the all-reduce
    assert summary_of(two_hosts, 1).stat().st_size < 64 * 1024


@pytest.mark.parametrize("damage, words", [
    (lambda t: t[: len(t) // 2], "bad host summary at byte"),
    (lambda t: t.replace('"jaxprof_host_summary":1', '"jaxprof_host_summary":99'), "schema version 99"),
    (lambda t: t.replace('"dur_ps":', '"dur_ps":"x","was":', 1), "steps[0].dur_ps is not an integer"),
    (lambda t: t.replace('"host":', '"hostname":', 1), "host is missing"),
    (lambda t: "[]", "not a JSON object"),
])
def test_a_bad_summary_is_named_and_its_file_read_instead(two_hosts, damage, words):
    expected = hosts_json(two_hosts, "--full")
    bad = summary_of(two_hosts, 1)
    bad.write_text(damage(bad.read_text()))
    res = run_jaxprof("hosts", two_hosts, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["summarized_hosts"] == 1
    assert doc["host_stats"] == expected["host_stats"] and doc["stragglers"] == expected["stragglers"]
    text = run_jaxprof("report", two_hosts).stdout
    warning = next(l for l in text.splitlines() if l.startswith("warning: "))
    assert str(bad) in warning and words in warning and "its file is read instead" in warning, warning


def test_a_summary_older_than_its_file_is_not_used(two_hosts):
    with (two_hosts / f"{HOST}-p1.xplane.pb").open("ab") as f:  # changed since: a field XSpace does not have
        f.write(b"\x7a\x01x")
    text = run_jaxprof("report", two_hosts).stdout
    assert "which has changed since it was summarised" in text
    assert "1 of 2 hosts read from their summaries" in text


def test_a_bad_summary_without_its_file_leaves_the_host_out(two_hosts):
    (two_hosts / f"{HOST}-p1.xplane.pb").unlink()
    summary_of(two_hosts, 1).write_text("{")
    res = run_jaxprof("hosts", two_hosts)
    assert res.returncode == 0
    text = run_jaxprof("report", two_hosts).stdout
    assert "the host has no capture file here and is left out" in text
    assert "1 host" in res.stdout  # the one left


def test_summarize_refuses_a_cut_capture_with_its_offset(two_hosts, tmp_path_factory):
    cut = tmp_path_factory.mktemp("cut") / "h.xplane.pb"
    data = (two_hosts / f"{HOST}-p0.xplane.pb").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    res = run_jaxprof("summarize", cut)
    assert res.returncode == 2 and str(cut) in res.stderr and "at byte" in res.stderr, res.stderr
    assert not list(cut.parent.glob("*.jaxprof-summary.json"))
    many = run_jaxprof("summarize", two_hosts, "-o", two_hosts / "x.json")
    assert many.returncode == 2 and "-o names one summary" in many.stderr


# ---- the viewer on process 0's copy of the run --------------------------------------------------

def test_the_viewer_shows_every_host_from_process_0s_copy(pod):
    """Process 0's machine holds its own file and the others' summaries: the Overview shows all three
    hosts side by side from them; the pages that need events read the one file there is."""
    from test_viewer_browser import ARTIFACTS, serve_dir, wait_for
    from conftest import headless_chromium
    import urllib.request

    root, _ = pod
    log_dir = root / "machine0" / "profiles"
    server = serve_dir(log_dir)
    url = next(server)
    browser_gen = headless_chromium("1400,900", page=(1400, 1200))
    browser = next(browser_gen)
    try:
        runs = json.loads(urllib.request.urlopen(url + "api/runs").read())
        rid = runs[0]["id"]
        overview = json.loads(urllib.request.urlopen(f"{url}api/run/{rid}/overview").read())
        assert overview["summarized_hosts"] == 3 and len(overview["host_stats"]) == 3
        assert any(f["id"] == "straggler" and f"{HOST}-p1 was the straggler" in f["evidence"] for f in overview["findings"])
        ops = json.loads(urllib.request.urlopen(f"{url}api/run/{rid}/ops").read())
        assert ops["hosts"] == [f"{HOST}-p0"] and ops["ops"]  # from the one file here
        browser.get(url + "#/overview")
        note = wait_for(browser, "#pod-note", "3 of 3 hosts read from their summaries")
        assert note.is_displayed()
        assert f"{HOST}-p1 held the others" in browser.find_element("css selector", "#page").text
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "pod_overview.png"))
    finally:
        for gen in (browser_gen, server):
            gen.close()


def test_the_viewer_shows_a_run_of_summaries_alone(pod, tmp_path):
    """The summaries alone in a log directory: the run picker lists the run, the Overview shows the
    three hosts from them and says no file is here; a page that needs the files says why."""
    from test_viewer_browser import ARTIFACTS, serve_dir, wait_for
    from conftest import headless_chromium

    root, _ = pod
    summaries_tree(root, tmp_path / "logs")
    server = serve_dir(tmp_path / "logs")
    url = next(server)
    browser_gen = headless_chromium("1400,900", page=(1400, 1200))
    browser = next(browser_gen)
    try:
        browser.get(url + "#/overview")
        note = wait_for(browser, "#pod-note", "no host's file is here")
        assert "3 of 3 hosts read from their summaries" in note.text
        assert "(3 hosts from summaries)" in browser.find_element("css selector", "#run").text
        assert f"{HOST}-p1 held the others" in browser.find_element("css selector", "#page").text
        ARTIFACTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "pod_summaries_alone.png"))
        browser.get(url + "#/ops")
        wait_for(browser, "#page .rating-bad", "holds host summaries alone, no *.xplane.pb")
    finally:
        for gen in (browser_gen, server):
            gen.close()


def test_python_loads_a_run_from_its_summaries(pod, raw_copy):
    import jaxprof
    root, _ = pod
    merged = jaxprof.load(run_dir(root, 0), summaries=True).hosts()
    assert merged["host_stats"] == jaxprof.load(raw_copy).hosts()["host_stats"]
    assert [h["host"] for h in merged["host_stats"]] == [f"{HOST}-p{m}" for m in range(3)]
    assert [h["host"] for h in jaxprof.load(run_dir(root, 0)).hosts()["host_stats"]] == []  # the one file alone


def test_a_realistic_data_parallel_lm_pod(tmp_path):
    """pod_lm_worker.py: the Flax NNX transformer LM with AdamW (its step returns the whole train
    state, 308 arrays) trained data-parallel over 2 processes x 2 XLA:CPU devices, no shared file
    system, process 1's loader 120 ms late before step 3."""
    port = free_port()
    procs = [subprocess.Popen([sys.executable, str(Path(__file__).with_name("pod_lm_worker.py")), str(i), "2", str(port),
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    try:
        outs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], [o[-3000:] for o in outs]
    assert "leaves 308" in outs[0]
    line = next(l for l in outs[0].splitlines() if "merged from their summaries" in l)
    assert "2 of 2 processes merged" in line and f"step 3 {HOST}-p1 (+" in line, line
    raw = tmp_path / "raw"
    raw.mkdir()
    for m in range(2):
        shutil.copy(run_dir(tmp_path, m) / f"{HOST}-p{m}.xplane.pb", raw)
    merged, files = hosts_json(run_dir(tmp_path, 0)), hosts_json(raw)
    assert_same_merge(merged, files)
    assert [s["host"] for s in merged["stragglers"] if s["step"] == 3] == [f"{HOST}-p1"]
    assert all(len(rows) == 50 < len(files["host_ops"][h]) for h, rows in merged["host_ops"].items())
