"""The jaxprof command, the run finder behind it, and the demo."""
from __future__ import annotations

import gzip
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxprof

from conftest import JAXPROF_BIN as JAXPROF, read_xplane


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(JAXPROF), *args], capture_output=True, text=True, timeout=timeout)


def make_run(root: Path, rel: str, mtime: int) -> Path:
    run = root / rel
    run.mkdir(parents=True)
    f = run / "host.xplane.pb"
    f.write_bytes(b"\x00" * 10)
    os.utime(f, (mtime, mtime))
    return run


def test_version_and_help():
    assert run_cli("--version").stdout.strip() == f"jaxprof {jaxprof.__version__}"
    assert "demo" in run_cli("help").stdout
    bad = run_cli("frobnicate")
    assert bad.returncode == 2 and "unknown command 'frobnicate'" in bad.stderr


def test_latest_and_latest_run(tmp_path):
    make_run(tmp_path, "step_00000001/plugins/profile/a", 1000)
    newest = make_run(tmp_path, "step_00000009/plugins/profile/b", 2000)
    assert run_cli("latest", str(tmp_path)).stdout.strip() == str(newest)
    assert jaxprof.latest_run(tmp_path).path == newest
    assert [r.name for r in jaxprof.find_runs(tmp_path)] == ["a", "b"]


def test_latest_without_runs_and_missing_dir(tmp_path):
    empty = run_cli("latest", str(tmp_path))
    assert empty.returncode == 1 and "no profile" in empty.stderr
    missing = run_cli("latest", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "nope: cannot open directory" in missing.stderr
    assert jaxprof.latest_run(tmp_path) is None
    assert jaxprof.open_latest_profile(tmp_path) is None  # nothing to view: no server started


def test_demo_prints_a_profile_location_with_an_xplane(tmp_path):
    out = run_cli("demo", "--train-steps", "14", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    location = next(line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith("profile: "))
    xplane = next(Path(location).glob("*.xplane.pb"))
    assert xplane.stat().st_size > 0
    content = read_xplane(xplane)
    assert content.step_nums == [9, 10, 11, 12, 13]
    assert "data" in content.names  # host annotation around batch loading
    assert "jit_train_step" in content.hlo_modules


def test_demo_model_names_its_device_ops():
    from jaxprof import demo

    params = demo.init_params(jax.random.PRNGKey(0))
    x, y = jnp.ones((4, 784)), jnp.zeros(4, jnp.int32)
    text = demo.train_step.lower(params, params, x, y).compile().as_text()
    op_names = set(re.findall(r'op_name="([^"]*)"', text))
    # value_and_grad wraps the loss scope as jvp(loss) / transpose(jvp(loss)).
    assert any(n.startswith("jit(train_step)/jvp(loss)/forward/dot_general") for n in op_names)
    assert any(n.startswith("jit(train_step)/update/") for n in op_names)


def write_idx(path: Path, array: np.ndarray) -> None:
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_demo_reads_real_mnist_idx_files(tmp_path):
    rng = np.random.default_rng(1)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", rng.integers(0, 255, (300, 28, 28)))
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", rng.integers(0, 10, 300))
    out = run_cli("demo", "--train-steps", "4", "--out", str(tmp_path / "prof"), "--data", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"MNIST from {tmp_path} (300 images)" in out.stdout


def test_demo_reports_bad_data_cleanly(tmp_path):
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03\x00")
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(b"")
    out = run_cli("demo", "--data", str(tmp_path), "--out", str(tmp_path / "p"))
    assert out.returncode == 2
    assert "train-images-idx3-ubyte: header truncated at byte 5" in out.stdout


def test_run_xplanes_are_the_files_the_library_listed(tmp_path):
    run_dir = tmp_path / "plugins" / "profile" / "r"
    run_dir.mkdir(parents=True)
    for name in ("b.xplane.pb", "a.xplane.pb.gz", "a.trace.json.gz", "notes.xplane.pb.txt"):
        (run_dir / name).write_bytes(b"x")
    run = jaxprof.latest_run(tmp_path)
    assert run is not None
    assert run.hosts == ("a", "b")
    assert run.xplanes == [run_dir / "a.xplane.pb.gz", run_dir / "b.xplane.pb"]
