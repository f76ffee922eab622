"""benchmarks/gen_xplane.py (the big-profile generator of the report benchmark) at a tiny size:
JAX's own reader and jaxprof both read what it writes, with the counts and ops it says it wrote."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import jaxprof

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import gen_xplane  # noqa: E402

STEPS = 4


def jax_event_counts(path: Path) -> dict[str, int]:
    return {p.name: sum(len(list(ln.events)) for ln in p.lines)
            for p in jax.profiler.ProfileData.from_file(str(path)).planes}


@pytest.mark.parametrize("layout", ["cpu", "gpu"])
def test_tiny_profile_decodes_with_expected_counts(tmp_path, layout):
    path = tmp_path / f"{layout}.xplane.pb"
    info = gen_xplane.generate(path, layout, steps=STEPS, threads=6, gpus=2, ops_per_step=24)
    assert path.stat().st_size == info["bytes"]
    assert jax_event_counts(path) == info["events"]          # an independent reader agrees

    profile = jaxprof.load(path)
    summary = profile.summary()
    assert summary["platform"] == layout
    assert summary["events"] == info["total_events"]
    assert summary["step_summary"]["count"] == STEPS
    assert summary["step_summary"]["method"] == "StepTraceAnnotation"
    steps = profile.steps()
    assert [s["step"] for s in steps] == list(range(STEPS))

    ops = profile.ops()
    n_devices = {"cpu": 1, "gpu": 2}[layout]
    # one row per op, summed over the devices it ran on (as XProf aggregates)
    assert {o["devices"] for o in ops} == {n_devices}
    assert {o["device"] for o in ops} == {"/host:CPU" if layout == "cpu" else ""}
    rows = {o["name"]: o for o in ops}
    assert sorted(rows) == sorted(info["ops"])
    for name, row in rows.items():
        assert row["count"] == STEPS * n_devices
        assert row["module"] == "jit_train_step"
        assert row["op_name"].startswith("jit(train_step)/")  # from the HloProto on /host:metadata
        # On XLA:CPU an op lasts until its "end: <op>" event ends: the generator puts that 0.3 us
        # after the thunk and makes it 0.4 us long.
        ps = info["op_ps"][name] + (700_000 if layout == "cpu" else 0)
        assert row["self_ms"] == pytest.approx(n_devices * STEPS * ps / 1e9, rel=1e-5, abs=1e-6)  # 6 digits

    if layout == "gpu":
        kernels = profile.kernels()
        assert sum(k["count"] for k in kernels) == STEPS * 2 * len(info["ops"])
        assert all(k["registers"] > 0 and k["grid"] for k in kernels)    # kernel_details parsed
        xfers = {t["kind"]: t for t in profile.transfers()}
        assert xfers["H2D"]["count"] == xfers["D2H"]["count"] == STEPS * 2
        assert xfers["H2D"]["bytes"] == STEPS * 2 * (64 << 20)


def test_cli_writes_the_requested_size(tmp_path):
    out = tmp_path / "one.xplane.pb"
    proc = subprocess.run([sys.executable, str(BENCH / "gen_xplane.py"), "--layout", "gpu", "--size-mb", "1.5",
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert abs(out.stat().st_size - 1.5e6) < 0.02 * 1.5e6
    assert jaxprof.load(out).summary()["step_summary"]["count"] > 10


def test_report_speed_prints_its_table(tmp_path):
    """benchmarks/report_speed.py end to end at 1 MB, XProf skipped (timings are not checked)."""
    proc = subprocess.run([sys.executable, str(BENCH / "report_speed.py"), "--sizes", "1", "--repeats", "1",
                           "--real-steps", "0", "--xprof-python", "", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "## Report speed and memory on big profiles" in proc.stdout
    assert "| generated cpu | 1 |" in proc.stdout and "| generated gpu | 1 |" in proc.stdout


@pytest.mark.parametrize("layout", ["cpu", "gpu"])
def test_one_and_two_threads_report_the_same(tmp_path, layout):
    """`--threads 2` (events parsed ahead on a second thread) prints byte-for-byte what one thread
    prints, here on a 3 MB profile; JAXPROF_THREADS is the same switch; counts past 1-256 are refused."""
    path = tmp_path / f"{layout}.xplane.pb"
    gen_xplane.generate(path, layout, size_mb=3)
    jp = str(Path(sys.executable).parent / "jaxprof")

    def report(*extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([jp, "report", str(path), "--json", *extra], capture_output=True, text=True,
                              timeout=120, env=env)

    one, two = report("--threads", "1"), report("--threads", "2")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout and '"ops"' in one.stdout
    assert report(env={**os.environ, "JAXPROF_THREADS": "2"}).stdout == one.stdout
    assert report("--threads", "3").stdout == one.stdout  # one file: 3 parses as 2 does
    for n in ("0", "257"):
        bad = report("--threads", n)
        assert bad.returncode == 2 and "takes 1 to 256" in bad.stderr
