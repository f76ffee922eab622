"""`jaxprof capture`: traces a real JAX process that called jax.profiler.start_server, over gRPC
with xprof's client, then reports; and says why when nothing answers."""
from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

import jaxprof
from conftest import run_jaxprof

SERVED = textwrap.dedent("""
    import sys, time
    import jax, jax.numpy as jnp
    jax.profiler.start_server(int(sys.argv[1]))
    step = jax.jit(lambda x: jnp.tanh(x @ x) * 0.5)
    x = jnp.ones((128, 128))
    x = step(x).block_until_ready()
    print("serving", flush=True)
    deadline = time.time() + 120
    i = 0
    while time.time() < deadline:
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            x = step(x).block_until_ready()
        i += 1
        time.sleep(0.002)
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served_port() -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVED, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "serving"
        yield port
    finally:
        proc.kill()
        proc.wait()


def test_capture_traces_the_running_process_and_reports(served_port, tmp_path):
    proc = run_jaxprof("capture", f"127.0.0.1:{served_port}", "--duration", "400ms", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "jaxprof report:" in proc.stdout and "Steps:" in proc.stdout
    run = jaxprof.latest_run(tmp_path)
    assert run is not None
    assert [p.name for p in run.xplanes] == [f"127.0.0.1_{served_port}.xplane.pb"]
    steps = jaxprof.load(run.path).steps()
    assert len(steps) >= 5  # a ~3 ms step traced for 400 ms
    assert f"captured -> {run.path}" in proc.stderr


def test_a_bare_port_means_this_machine_and_no_report_prints_the_run(served_port, tmp_path):
    proc = run_jaxprof("capture", str(served_port), "--duration", "200ms", "--out", str(tmp_path), "--no-report")
    assert proc.returncode == 0, proc.stderr
    run = Path(proc.stdout.strip())
    assert run == jaxprof.latest_run(tmp_path).path and "jaxprof report:" not in proc.stdout


def test_nothing_listening_is_a_clear_error(tmp_path):
    port = free_port()
    proc = run_jaxprof("capture", f"127.0.0.1:{port}", "--duration", "100ms", "--attempts", "1", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert f"jaxprof capture: no trace from 127.0.0.1:{port} after 1 attempt(s): UNAVAILABLE" in proc.stderr
    assert "jax.profiler.start_server(PORT)" in proc.stderr and "Traceback" not in proc.stderr
    assert not jaxprof.find_runs(tmp_path)


@pytest.mark.parametrize("addr", ["localhost", "host:port", ":80"])
def test_a_malformed_address_is_refused(addr, tmp_path):
    proc = run_jaxprof("capture", addr, "--out", str(tmp_path))
    assert proc.returncode == 2 and "is not HOST:PORT or PORT" in proc.stderr
