"""`jaxprof list` and `jaxprof extract` over real JAX CPU captures taken by jaxprof.Profiler."""
from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import jax.numpy as jnp
import pytest

import jaxprof

from conftest import run_jaxprof, train_step

XPLANE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")


@dataclass
class Captured:
    """Two captures under one log directory, oldest first."""

    log_dir: Path
    run_dirs: list[Path]
    steps: list[list[int]]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """Steps 2-4 and 7-9 captured into step_00000002/ and step_00000007/, each with a Perfetto trace."""
    log_dir = tmp_path_factory.mktemp("runs")
    x = jnp.ones((64, 64)) * 0.5
    w = jnp.ones((64, 64))
    train_step(w, x).block_until_ready()  # compile outside the captures
    prof = jaxprof.Profiler(log_dir, start_step=2, num_steps=3, every_n_steps=5, max_profiles=2,
                            perfetto=True, report=False)
    with prof:
        for i in range(12):
            with prof.step(i):
                w = train_step(w, x)
    assert [c.run_dir is not None for c in prof.captures] == [True, True]
    # Both runs may carry the same second-resolution name: list orders them by modification time.
    return Captured(log_dir, [Path(c.run_dir) for c in prof.captures], [c.steps for c in prof.captures])


def hosts_of(run_dir: Path) -> list[str]:
    names = sorted(p.name for p in run_dir.iterdir() if p.name.endswith(XPLANE_SUFFIXES))
    return [n[: -len(next(s for s in XPLANE_SUFFIXES[::-1] if n.endswith(s)))] for n in names]


def list_json(path: Path) -> dict:
    proc = run_jaxprof("list", path, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_list_json_describes_every_run_in_time_order(captured: Captured) -> None:
    doc = list_json(captured.log_dir)
    assert doc["schema_version"] == 1
    assert doc["dir"] == str(captured.log_dir)
    runs = doc["runs"]
    assert [r["path"] for r in runs] == [str(p) for p in captured.run_dirs]
    assert runs[0]["path"].startswith(str(captured.log_dir / "step_00000002" / "plugins" / "profile"))
    assert runs[1]["path"].startswith(str(captured.log_dir / "step_00000007" / "plugins" / "profile"))
    for run, run_dir, steps in zip(runs, captured.run_dirs, captured.steps):
        assert run["name"] == run_dir.name
        assert run["hosts"] == hosts_of(run_dir) and run["hosts"]
        expect_files = sorted((p.name, p.stat().st_size) for p in run_dir.iterdir() if p.is_file())
        assert [(f["name"], f["bytes"]) for f in run["files"]] == expect_files
        names = {f["name"] for f in run["files"]}
        assert "perfetto_trace.json.gz" in names  # non-xplane files are listed too
        assert any(n.endswith(".trace.json.gz") for n in names)
        assert run["steps"] == {"count": len(steps), "first": steps[0], "last": steps[-1]}
        assert run["steps"]["count"] == 3
        assert run["duration_ms"] > 0
        assert run["error"] is None


def test_list_text_is_a_table_within_100_columns(captured: Captured) -> None:
    proc = run_jaxprof("list", captured.log_dir)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["RUN", "STEPS", "DURATION", "SIZE", "HOSTS"]
    assert all(len(line) <= 100 for line in lines)
    # JAX names runs by the second they stopped: the two captures may fall in different seconds
    rows = [line for line in lines if line.startswith(tuple(d.name for d in captured.run_dirs))]
    assert len(rows) == 2
    assert "2-4 (3)" in rows[0] and "7-9 (3)" in rows[1]
    for run_dir in captured.run_dirs:
        assert str(run_dir.relative_to(captured.log_dir)) in proc.stdout
        assert "perfetto_trace.json.gz" in proc.stdout


def test_list_keeps_going_past_a_run_that_fails_to_load(captured: Captured, tmp_path: Path) -> None:
    shutil.copytree(captured.run_dirs[0], tmp_path / "good")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "broken.xplane.pb").write_bytes(b"\x0a\xff\xff\xff")  # truncated length
    os.utime(tmp_path / "bad" / "broken.xplane.pb", ns=(1, 1))  # oldest: listed first
    doc = list_json(tmp_path)
    bad, good = doc["runs"]
    assert bad["name"] == "bad" and bad["hosts"] == ["broken"]
    assert bad["error"] and "broken.xplane.pb" in bad["error"]
    assert bad["steps"] is None and bad["duration_ms"] is None
    assert bad["files"] == [{"name": "broken.xplane.pb", "bytes": 4}]
    assert good["error"] is None and good["steps"]["count"] == 3
    text = run_jaxprof("list", tmp_path)
    assert text.returncode == 0
    assert "error:" in text.stdout and "good" in text.stdout


def test_list_json_escapes_names(captured: Captured, tmp_path: Path) -> None:
    odd = tmp_path / 'we"ird\\run\tx'
    shutil.copytree(captured.run_dirs[0], odd)
    (run,) = list_json(tmp_path)["runs"]
    assert run["name"] == odd.name and run["path"] == str(odd)


def test_list_without_runs_or_directory(tmp_path: Path) -> None:
    (tmp_path / "empty" / "plugins" / "profile").mkdir(parents=True)
    proc = run_jaxprof("list", tmp_path / "empty")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("jaxprof: ")
    proc = run_jaxprof("list", tmp_path / "missing", "--json")
    assert proc.returncode == 2 and "missing" in proc.stderr


def check_extracted(run_dir: Path, out_dir: Path, stdout: str) -> None:
    """Every .gz decompressed into out_dir, byte for byte; plain trace files named in place."""
    gz = sorted(p for p in run_dir.iterdir() if p.name.endswith(".gz"))
    plain = sorted(p for p in run_dir.iterdir() if p.name.endswith((".xplane.pb", ".json", ".pftrace"))
                   and not (out_dir == run_dir and p.with_name(p.name + ".gz").exists()))  # reported once
    expect = [out_dir / p.name[:-3] for p in gz] + plain
    assert stdout.splitlines() == [str(p) for p in expect]
    for src in gz:
        assert (out_dir / src.name[:-3]).read_bytes() == gzip.decompress(src.read_bytes())
    assert json.loads((out_dir / "perfetto_trace.json").read_bytes())  # usable by a JSON reader
    assert not list(out_dir.glob("*.tmp"))


def test_extract_newest_run(captured: Captured, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_jaxprof("extract", captured.log_dir, "--out", out)
    assert proc.returncode == 0, proc.stderr
    check_extracted(captured.run_dirs[1], out, proc.stdout)


def test_extract_run_option_picks_the_older_run(captured: Captured, tmp_path: Path) -> None:
    older = captured.run_dirs[0]
    tail = str(older.relative_to(captured.log_dir))  # step_00000002/plugins/profile/<name>
    for i, want in enumerate([tail, str(older)]):
        out = tmp_path / f"out{i}"
        proc = run_jaxprof("extract", captured.log_dir, "--run", want, "--out", out)
        assert proc.returncode == 0, proc.stderr
        check_extracted(older, out, proc.stdout)


def test_extract_in_place_by_default(captured: Captured, tmp_path: Path) -> None:
    copy = tmp_path / "logs" / "plugins" / "profile" / "r1"
    shutil.copytree(captured.run_dirs[0], copy)
    proc = run_jaxprof("extract", tmp_path / "logs", "--run", "r1")
    assert proc.returncode == 0, proc.stderr
    check_extracted(copy, copy, proc.stdout)


def test_extract_errors(captured: Captured, tmp_path: Path) -> None:
    proc = run_jaxprof("extract", captured.log_dir, "--run", "no_such_run", "--out", tmp_path / "o")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("jaxprof: ") and len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "o").exists()
    run = tmp_path / "plugins" / "profile" / "r"
    shutil.copytree(captured.run_dirs[0], run)
    (run / "cut.trace.json.gz").write_bytes(gzip.compress(b"x" * 100000)[:50])
    proc = run_jaxprof("extract", tmp_path, "--out", tmp_path / "o2")
    assert proc.returncode == 2
    assert "cut.trace.json.gz" in proc.stderr and "truncated" in proc.stderr
    assert not (tmp_path / "o2" / "cut.trace.json").exists()
    assert not list((tmp_path / "o2").glob("*.tmp"))


# ---- one run schema: list --json, the viewer's /api/runs, Python's Run ----------------------------------

RUN_MEMBERS = ["name", "path", "hosts", "summarized_hosts", "bytes", "mtime_ms"]  # jp_run_write_json, in order
LIST_MEMBERS = RUN_MEMBERS + ["files", "steps", "duration_ms", "error"]


def test_list_viewer_and_python_share_one_run_schema(tmp_path: Path, launch_view) -> None:
    """Hosts are names everywhere, in file-name order ("h-2" sorts before "h." as a file name),
    with the same bytes and time: the three come from jp_runs_find through one writer."""
    import http.client
    from test_view import free_port

    src = Path(__file__).parent.parent / "data" / "cpu_small.xplane.pb.gz"
    run = tmp_path / "logs" / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    for host, when in (("h", 1_700_000_000), ("h-2", 1_700_000_005)):
        shutil.copy(src, run / f"{host}.xplane.pb.gz")
        os.utime(run / f"{host}.xplane.pb.gz", ns=(when * 10**9 + 123_456_789,) * 2)
    (run / "notes.txt").write_text("not a host\n")
    size = src.stat().st_size

    listed = list_json(tmp_path / "logs")["runs"]
    assert len(listed) == 1 and list(listed[0]) == LIST_MEMBERS
    want = {"name": "r1", "path": str(run), "hosts": ["h-2", "h"], "summarized_hosts": [], "bytes": 2 * size,
            "mtime_ms": 1_700_000_005_123}
    assert {k: listed[0][k] for k in RUN_MEMBERS} == want
    assert listed[0]["files"] == [{"name": "h-2.xplane.pb.gz", "bytes": size}, {"name": "h.xplane.pb.gz", "bytes": size},
                                  {"name": "notes.txt", "bytes": 11}]

    port = free_port()
    launch_view(tmp_path / "logs", "--ui", "builtin", "--port", str(port))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/api/runs")
    served = json.loads(conn.getresponse().read())
    conn.close()
    assert len(served) == 1 and list(served[0]) == ["id"] + RUN_MEMBERS
    assert {k: served[0][k] for k in RUN_MEMBERS} == {**want, "path": "plugins/profile/r1"}

    (found,) = jaxprof.find_runs(tmp_path / "logs")
    assert (found.name, found.path, list(found.hosts), found.bytes, found.mtime_ns // 10**6) == (
        "r1", run, ["h-2", "h"], 2 * size, 1_700_000_005_123)
    assert found.n_files == 2
