"""Chrome-trace input (issue 35, item 4): the `.trace.json.gz` jax.profiler writes beside the
`.xplane.pb` is read into the same model. Judged on the three vLLM TPU serving captures of
../shared/captures against the raw JSON, read here with json alone."""
from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

import pytest

import jaxprof
from conftest import REAL_CAPTURES, SECTIONS, jaxprof_json, run_jaxprof

TRACES = sorted(REAL_CAPTURES.glob("*.trace.json.gz")) if REAL_CAPTURES.is_dir() else []


def raw_ops(path: Path) -> dict[str, tuple[int, int]]:
    """Per op name on the TPU planes' XLA Ops lines: (events, summed device time in ps). An op's
    device time is its device_duration_ps, the core's own clock (as XProf counts it); libtpu writes
    0 for a few async starts, whose time is then the slice's span (`dur`)."""
    doc = json.load(gzip.open(path))
    events = doc["traceEvents"]
    planes = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    out: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("ph") != "X" or not planes.get(e["pid"], "").startswith("/device:TPU"):
            continue
        if threads.get((e["pid"], e["tid"])) != "XLA Ops":
            continue
        out[e["name"]][0] += 1
        device = int(e["args"]["device_duration_ps"])
        out[e["name"]][1] += device if device > 0 else round(e["dur"] * 1e6)
    return {k: (n, ps) for k, (n, ps) in out.items()}


def test_there_are_chrome_traces_to_read() -> None:
    assert len(TRACES) >= 3


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_op_counts_and_device_time_equal_the_raw_json(path: Path) -> None:
    want = raw_ops(path)
    ops = jaxprof_json("ops", path, "--top", "0")["ops"]
    got: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0])
    for o in ops:
        got[o["name"]][0] += o["count"]
        got[o["name"]][1] += o["total_ms"]
        got[o["name"]][2] += 1
    assert set(got) == set(want)
    for name, (n, ps) in want.items():
        count, total_ms, rows = got[name]
        assert count == n, name
        assert total_ms * 1e9 == pytest.approx(ps, abs=500 * rows), name  # --json keeps whole ns
    all_reduce = sum(n for name, (n, _) in want.items() if name.startswith("all-reduce"))
    assert all_reduce > 0
    assert sum(o["count"] for o in ops if o["name"].startswith("all-reduce")) == all_reduce
    comm = jaxprof_json("comm", path)["comm"]  # the collectives, each run counted on every core
    assert sum(c["count"] for c in comm if c["name"].startswith("all-reduce")) == all_reduce
    assert all(c["type"] == "all-reduce" for c in comm if c["name"].startswith("all-reduce"))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_command_reads_it_and_says_what_needs_the_xplane(path: Path) -> None:
    report = jaxprof_json("report", path)
    assert report["platform"] == "tpu"
    assert [d["name"] for d in report["devices"] if d["platform"] == "tpu"] == ["/device:TPU:0", "/device:TPU:1"]
    health = [h["text"] for h in report["capture_health"]]
    assert any(t.startswith("read from a Chrome trace (JSON)") and ".xplane.pb" in t for t in health)
    assert not any("enable_hlo_proto" in t for t in health)  # no option would give a JSON its HLO
    assert report["hosts"] == [path.name.removesuffix(".trace.json.gz")]
    for section in SECTIONS:
        proc = run_jaxprof(section, path)
        assert proc.returncode == 0 and proc.stdout, (section, proc.stderr)
    memory = run_jaxprof("memory", path).stdout
    assert "needs the .xplane.pb" in memory
    assert run_jaxprof("sql", path, "SELECT count(*) FROM events").returncode == 0
    p = jaxprof.load(path)
    assert sum(o.count for o in p.ops()) == sum(n for n, _ in raw_ops(path).values())


def test_a_cut_chrome_trace_names_the_byte(tmp_path: Path) -> None:
    cut = tmp_path / "cut.trace.json"
    cut.write_bytes(gzip.open(TRACES[0]).read()[:100_000])
    proc = run_jaxprof("report", cut)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"jaxprof: {cut}: not a valid Chrome trace at byte ")


def test_a_run_kept_as_json_alone_is_a_run(tmp_path: Path) -> None:
    """vLLM keeps profiles/plugins/profile/<run>/<host>.trace.json.gz with no .xplane.pb beside it:
    the log directory reads as for any run. Beside an .xplane.pb, the JSON is not read again."""
    import shutil

    run = tmp_path / "logs" / "plugins" / "profile" / "2026_01_11_21_26_41"
    run.mkdir(parents=True)
    shutil.copy(TRACES[0], run / "t1v-w-0.trace.json.gz")
    listed = run_jaxprof("list", tmp_path / "logs")
    assert listed.returncode == 0 and "t1v-w-0" in listed.stdout, listed.stderr
    report = jaxprof_json("report", tmp_path / "logs")
    assert report["hosts"] == ["t1v-w-0"] and report["platform"] == "tpu"
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(TRACES[0], both / "a.trace.json.gz")
    shutil.copy(Path(__file__).resolve().parent.parent / "data" / "cpu_small.xplane.pb.gz", both / "a.xplane.pb.gz")
    assert jaxprof_json("report", both)["platform"] == "cpu"
