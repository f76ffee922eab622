"""One rule, one place (issue 32, item 4): what counts as an xplane file and where the CPU
calibration lives are libjaxprof's rules; Python asks the library and the CLI uses the same, so
a file the CLI reads is one Python sees and a calibration Python writes is one the CLI finds."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import jax.numpy as jnp
import pytest

import jaxprof
from jaxprof import _core, calibrate, multihost, runs

from conftest import JAXPROF_BIN, profile_steps, train_step



@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> Path:
    """A real CPU capture of this host: its XSpace names this hostname, as calibrations do."""
    w, x = jnp.ones((64, 64)), jnp.ones((64, 64)) * 0.5
    log_dir = profile_steps(tmp_path_factory.mktemp("cpu_run"), lambda i: train_step(w, x).block_until_ready(), 2)
    return jaxprof.latest_run(log_dir).path


NAMES = ["a.xplane.pb", "b.xplane.pb.gz", "host.with.dots.xplane.pb", "c.xplane.pb.tmp", ".xplane.pb",
         "d.xplane.pbx", "e.trace.json.gz", "f.pb", "g.xplane.pb.gz.part", "xplane.pb"]


def test_python_and_the_library_agree_on_xplane_names(tmp_path: Path) -> None:
    """runs.xplane_host is jp_xplane_host_len; the run the library finds holds exactly those files."""
    for name in NAMES:
        (tmp_path / name).write_bytes(b"")
    hosts = {n: runs.xplane_host(n) for n in NAMES}
    assert hosts == {"a.xplane.pb": "a", "b.xplane.pb.gz": "b", "host.with.dots.xplane.pb": "host.with.dots",
                     "c.xplane.pb.tmp": None, ".xplane.pb": None, "d.xplane.pbx": None, "e.trace.json.gz": None,
                     "f.pb": None, "g.xplane.pb.gz.part": None, "xplane.pb": None}
    (run,) = jaxprof.find_runs(tmp_path)
    assert sorted(run.file_names) == sorted(n for n, h in hosts.items() if h)
    assert sorted(run.hosts) == sorted(h for h in hosts.values() if h)


def test_multihost_files_xplanes_by_the_library_rule(tmp_path: Path) -> None:
    """A process's xplane is renamed at the library's suffix; other trace files keep their suffixes;
    wait_for_files counts only what the library would read (not a half-written .tmp)."""
    assert multihost._with_process("h.x.xplane.pb.gz", 3) == "h.x-p3.xplane.pb.gz"
    assert multihost._with_process("h.xplane.pb", 0, "-77") == "h-p0-77.xplane.pb"
    assert multihost._with_process("h.trace.json.gz", 1) == "h-p1.trace.json.gz"
    for name in ("a-p0.xplane.pb", "a-p1.xplane.pb.gz", "a-p2.xplane.pb.tmp", "a.trace.json.gz"):
        (tmp_path / name).write_bytes(b"")
    assert multihost.wait_for_files(tmp_path, 2, 0) == 2
    assert multihost.wait_for_files(tmp_path / "absent", 1, 0) == 0


@pytest.mark.parametrize("env, where", [
    ({"JAXPROF_CACHE_DIR": "C", "XDG_CACHE_HOME": "X", "HOME": "H"}, "C/cpu_peaks"),
    ({"JAXPROF_CACHE_DIR": "", "XDG_CACHE_HOME": "X", "HOME": "H"}, "X/jaxprof/cpu_peaks"),
    ({"XDG_CACHE_HOME": "", "HOME": "H"}, "H/.cache/jaxprof/cpu_peaks"),
])
def test_calibration_python_writes_is_the_one_the_cli_reads(cpu_run, tmp_path: Path, monkeypatch, env,
                                                            where) -> None:
    """calibrate.cache_file() is jp_cpu_peaks_path over this environment: a calibration written
    there gives the CLI's report, Python's Profile and the rule itself the same file."""
    base = {k: str(tmp_path / v) if v else "" for k, v in env.items()}
    for k in ("JAXPROF_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(k, raising=False)
    for k, v in base.items():
        monkeypatch.setenv(k, v)
    path = calibrate.cache_file()
    assert path == tmp_path / where
    calibrate.write(calibrate.CpuPeaks(socket.gethostname(), 1.5, 20.0))
    assert path.is_file()
    proc = subprocess.run([str(JAXPROF_BIN), "report", str(cpu_run), "--json"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert proc.returncode == 0, proc.stderr
    (device,) = json.loads(proc.stdout)["devices"]
    assert (device["peak_tflops"], device["peak_gbps"], device["peak_source"]) == (1.5, 20.0, "calibrated")
    summary = jaxprof.load(cpu_run).summary()
    assert summary["devices"][0]["peak_source"] == "calibrated"


def test_calibration_path_without_any_directory(cpu_run, monkeypatch) -> None:
    """No cache directory, XDG cache home or home: no path (the CLI and Python read no calibration,
    and writing one says which variable to set)."""
    with pytest.raises(FileNotFoundError, match="no directory for the CPU calibration"):
        _core.cpu_peaks_path("", "", "")
    for k in ("JAXPROF_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(k, raising=False)
    assert calibrate.cache_file() is None
    with pytest.raises(FileNotFoundError, match="JAXPROF_CACHE_DIR"):
        calibrate.write(calibrate.CpuPeaks("h", 1, 1))
    assert jaxprof.load(cpu_run).summary()["devices"][0]["peak_source"] == ""


def test_calibration_path_too_long() -> None:
    with pytest.raises(RuntimeError, match="the CPU calibration path is longer than 4096 bytes"):
        _core.cpu_peaks_path("x" * 5000, "", "")


# ---- one unit style: µs in human text, sizes in KiB/MiB/GiB (JSON keys keep _us/_ms) -------------

CPU_SMALL = Path(__file__).resolve().parents[1] / "data" / "cpu_small.xplane.pb.gz"


def test_times_read_in_microseconds_everywhere(tmp_path: Path) -> None:
    """The text tables, the HTML report and `jaxprof list` write µs (never "us"); JSON keeps numbers."""
    ops = subprocess.run([str(JAXPROF_BIN), "ops", str(CPU_SMALL)], capture_output=True, text=True, timeout=60)
    assert ops.returncode == 0 and "33.9 µs" in ops.stdout and " us" not in ops.stdout
    lines = ops.stdout.splitlines()
    assert len({len(line) for line in lines[:3]}) == 1  # µ is one column: the table stays aligned
    out = tmp_path / "r.html"
    assert subprocess.run([str(JAXPROF_BIN), "report", str(CPU_SMALL), "--html", str(out)], timeout=60).returncode == 0
    html = out.read_text()
    assert "µs<" in html and " us<" not in html and " us," not in html
    run = tmp_path / "logs" / "r1"
    run.mkdir(parents=True)
    shutil.copy(CPU_SMALL, run / "h.xplane.pb.gz")
    listed = subprocess.run([str(JAXPROF_BIN), "list", str(tmp_path / "logs")], capture_output=True, text=True,
                            timeout=60)
    head, row = listed.stdout.splitlines()[:2]
    size = (run / "h.xplane.pb.gz").stat().st_size
    assert "352.7 µs" in row and f"{size / 1024:.1f} KiB" in row
    assert row.index("µs") + 2 == head.index("DURATION") + len("DURATION")  # right-aligned under its header


def test_sizes_read_in_binary_units(tmp_path: Path) -> None:
    """A size is KiB/MiB/GiB (powers of 1024), as the memory tables always wrote them."""
    out = tmp_path / "t.json"
    proc = subprocess.run([str(JAXPROF_BIN), "export", str(CPU_SMALL), "-o", str(out)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert proc.stderr.endswith(f", {out.stat().st_size / 1024:.1f} KiB\n"), proc.stderr


def test_python_groups_ops_through_the_library() -> None:
    """Profile.ops(group=...) is the library's grouping (the viewer's ?group=): one row per key."""
    p = jaxprof.load(CPU_SMALL)
    ops = p.ops()
    rows = p.ops(group="category")
    assert sorted(r["name"] for r in rows) == sorted({o["category"] for o in ops})
    assert sum(r["count"] for r in rows) == sum(o["count"] for o in ops)
    for r in rows:
        assert r["self_ms"] == pytest.approx(sum(o["self_ms"] for o in ops if o["category"] == r["name"]), abs=2e-6)
    with pytest.raises(ValueError, match="group 'x': category, module, scope or source"):
        p.ops(group="x")
