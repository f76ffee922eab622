"""Crash isolation (issue 30, section 2): a fault in the analysis of a capture never stops training,
and the CLI never dies by a signal of its own making.

The fault is the library's test-only JAXPROF_TEST_FAULT (src/profile/testfault.h): segv and abort
kill the process reading a profile by that signal, hang never returns, oom allocates until the
address-space limit stops it. Each training script below is a real JAX loop on CPU; the claims
checked every time: every step runs (the loop's result is the unprofiled one), the exit status is
0, the capture is on disk and reads cleanly once the fault is gone, and one warning names the run
directory and what happened to its analysis.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import JAXPROF_BIN, run_jaxprof

DATA = Path(__file__).resolve().parent.parent / "data"
SMALL = DATA / "cpu_small.xplane.pb.gz"

#: fault -> what the warning must say about the analysis (the limits are the ones FAULT_ENV sets)
SAID = {
    "segv": r"was killed by signal 11 \(SIGSEGV\)",
    "abort": r"was killed by signal 6 \(SIGABRT\)",
    "hang": r"took longer than 2 s and was stopped",
    "oom": r"out of memory after (\d+) MiB .*\(limit 256 MiB",
}
FAULTS = sorted(SAID)

TRAIN = """
    import sys
    import jax, jax.numpy as jnp
    import jaxprof

    @jax.jit
    def train_step(w, x):
        return w - 0.01 * jnp.tanh(x @ w)

    X = jnp.ones((32, 32)) * 0.5
    def reference(n):
        w = jnp.ones((32, 32))
        for _ in range(n):
            w = train_step(w, X)
        return w

    class Trainer(jaxprof.ProfilingMixin):
        def __init__(self, out):
            self.profiling_config = jaxprof.ProfilerConfig(
                enable_profiling=True, profiling_dir=out, profiler_start_step=2, profiler_num_steps=2)

    @jaxprof.profile_function(sys.argv[1] + "/function", warmup_steps=1, profile_steps=2)
    def profiled(w):
        return train_step(w, X)

    out = sys.argv[1]
    w, steps = jnp.ones((32, 32)), 0
    with jaxprof.Profiler(out + "/profiler", start_step=2, num_steps=2, report="full", perfetto=True) as prof:
        for i in range(6):
            with prof.step(i):
                w = train_step(w, X)
                steps += 1
    trainer = Trainer(out + "/mixin")
    for i in range(6):
        with trainer.profile_context(i, name="train_step"):
            w = train_step(w, X)
            steps += 1
    trainer.close_profiler()
    with jaxprof.trace(out + "/trace", perfetto=True):
        w = train_step(w, X)
        steps += 1
    w = profiled(w)
    steps += 1
    ok = bool(jnp.allclose(w, reference(14)))
    print(f"STEPS {steps} SAME {ok}", flush=True)
"""


def fault_env(fault: str | None) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAXPROF_ANALYSIS_TIMEOUT="2", JAXPROF_ANALYSIS_MEMORY="256M")
    env.pop("JAXPROF_TEST_FAULT", None)
    if fault:
        env["JAXPROF_TEST_FAULT"] = fault
    return env


def runs_under(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.xplane.pb*")})


def assert_readable(run: Path) -> None:
    """The capture is whole: the CLI reports it, without the fault, exit 0."""
    proc = run_jaxprof("report", run)
    assert proc.returncode == 0, proc.stderr
    assert "Steps:" in proc.stdout


def assert_warned(stderr: str, fault: str, run: Path, goes_on: str) -> None:
    """One warning per failed analysis names the run, what happened, where the capture is."""
    pattern = rf"analysis of {re.escape(str(run))} [^\n]*{SAID[fault]}[^\n]*; the capture is on disk at " \
              rf"{re.escape(str(run))}; {goes_on}"
    found = re.findall(pattern, stderr)
    assert found, f"no warning for {run} matching {SAID[fault]!r} in:\n{stderr}"
    if fault == "oom":  # the address-space limit stopped it, not the fault's own 1 GiB cap
        assert all(int(m) < 256 for m in found), found


@pytest.mark.parametrize("fault", FAULTS)
def test_training_survives_a_fault_in_every_capture_side_analysis(tmp_path, fault):
    """Profiler(report="full", perfetto=True), the mixin (its short report), trace(perfetto=True)
    and profile_function, one after the other in one real training script."""
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(TRAIN))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(train), str(out)], capture_output=True, text=True, timeout=300,
                          env=fault_env(fault))
    assert proc.returncode == 0, proc.stderr
    assert "STEPS 14 SAME True" in proc.stdout, proc.stdout + proc.stderr
    runs = {part: runs_under(out / part) for part in ("profiler", "mixin", "trace", "function")}
    assert all(len(found) == 1 for found in runs.values()), runs
    for part in ("profiler", "mixin", "trace"):  # each of them analysed (or exported) its capture
        assert_warned(proc.stderr, fault, runs[part][0], "training continues")
    for found in runs.values():
        assert_readable(found[0])
    assert not (runs["profiler"][0] / "perfetto_trace.json.gz").exists() or fault == "hang"
    assert "Top ops by self time" not in proc.stderr  # no report came out of a failed analysis


def test_the_same_script_without_a_fault_logs_the_reports(tmp_path):
    """The control: the isolated analysis gives what the in-process one gave (the line with the
    top finding, the full report, the Perfetto export)."""
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(TRAIN))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(train), str(out)], capture_output=True, text=True, timeout=300,
                          env=fault_env(None))
    assert proc.returncode == 0 and "STEPS 14 SAME True" in proc.stdout, proc.stderr
    assert "analysis of" not in proc.stderr
    run = runs_under(out / "profiler")[0]
    assert re.search(rf"captured steps 2-3 \(2 steps, mean [\d.]+ ms/step\), (top finding \[\w+\] .+|no finding) -> "
                     rf"{re.escape(str(run))}\n", proc.stderr), proc.stderr
    assert f"jaxprof report: {run}" in proc.stderr and "Top ops by self time" in proc.stderr
    assert (run / "perfetto_trace.json.gz").stat().st_size > 0
    assert (runs_under(out / "trace")[0] / "perfetto_trace.json.gz").exists()


@pytest.mark.parametrize("fault", [None, "segv", "hang"])
def test_without_the_jaxprof_executable_python_runs_the_analysis(tmp_path, fault):
    """No `jaxprof` binary to be found: the child is `python -m jaxprof._isolated`, as isolated."""
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(TRAIN))
    out = tmp_path / "out"
    env = fault_env(fault)
    env["JAXPROF_BIN"] = str(tmp_path / "no-such-jaxprof")
    env["JAXPROF_ANALYSIS_TIMEOUT"] = "2" if fault == "hang" else "60"  # python + jax import: seconds
    env["JAXPROF_ANALYSIS_MEMORY"] = "16G"  # JAX's import alone maps more than 256 MiB
    proc = subprocess.run([sys.executable, str(train), str(out)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0 and "STEPS 14 SAME True" in proc.stdout, proc.stderr
    run = runs_under(out / "profiler")[0]
    if fault is None:  # the same line and report as the executable gives
        assert re.search(rf"\), (top finding \[\w+\] .+|no finding) -> {re.escape(str(run))}\n", proc.stderr), proc.stderr
        assert f"jaxprof report: {run}" in proc.stderr and (run / "perfetto_trace.json.gz").exists()
    else:
        assert re.search(SAID[fault], proc.stderr), proc.stderr
    assert_readable(run)


JAXPROF_RUN_TRAIN = """
    import sys
    import jax, jax.numpy as jnp

    @jax.jit
    def train_step(w, x):
        return w - 0.01 * jnp.tanh(x @ w)

    w, x = jnp.ones((64, 64)), jnp.ones((64, 64))
    for i in range(20):
        w = train_step(w, x)
    print(f"ran 20 steps, {float(w.sum()):.3f}", flush=True)
"""


@pytest.mark.parametrize("fault", FAULTS)
def test_jaxprof_run_survives_a_fault_in_its_report(tmp_path, fault):
    """`jaxprof run`'s report runs in a child of the launcher: the program's output and exit status
    are untouched, the run directory is printed, and the warning names the problem."""
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(JAXPROF_RUN_TRAIN))
    out = tmp_path / "out"
    proc = subprocess.run([str(JAXPROF_BIN), "run", "--out", str(out), "--steps", "5:7", "--", sys.executable,
                           str(train)], capture_output=True, text=True, timeout=300, env=fault_env(fault))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ran 20 steps"), proc.stdout
    (run,) = runs_under(out)
    assert f"jaxprof run: run directory: {run}\n" in proc.stderr
    assert_warned(proc.stderr, fault, run, "(?:the program continues|see it with jaxprof report)")
    assert_readable(run)


# ---- the CLI: exit 0, 1 or 2, never a signal of its own --------------------------------------

CLI_COMMANDS = {
    "diff": ["diff", SMALL, SMALL],
    "report": ["report", SMALL],
    "ops": ["ops", SMALL, "--json"],
    "list": ["list", DATA],
    "export": ["export", SMALL, "-o", "{tmp}/t.json.gz"],
}


@pytest.mark.parametrize("fault", ["segv", "abort"])
@pytest.mark.parametrize("command", sorted(CLI_COMMANDS))
def test_a_crash_in_a_command_is_exit_2_with_a_message(tmp_path, command, fault):
    args = [str(a).replace("{tmp}", str(tmp_path)) for a in CLI_COMMANDS[command]]
    proc = subprocess.run([str(JAXPROF_BIN), *args], capture_output=True, text=True, timeout=60,
                          env=fault_env(fault))
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    sig = {"segv": "11 (SIGSEGV)", "abort": "6 (SIGABRT)"}[fault]
    assert f"jaxprof: internal error: `jaxprof {' '.join(args)}` was killed by signal {sig}; this is a bug" \
        in proc.stderr, proc.stderr
    assert not list(tmp_path.glob(".t.json.gz.*.tmp"))  # no output half-written... or left behind
    # and the same command without the fault works: the fault was the only problem
    clean = subprocess.run([str(JAXPROF_BIN), *args], capture_output=True, text=True, timeout=60, env=fault_env(None))
    assert clean.returncode == 0, clean.stderr


def test_diff_out_of_memory_is_exit_2(tmp_path):
    proc = subprocess.run(["/bin/sh", "-c", f'ulimit -v 262144 && exec "{JAXPROF_BIN}" diff "{SMALL}" "{SMALL}"'],
                          capture_output=True, text=True, timeout=60, env=fault_env("oom"))
    assert proc.returncode == 2 and re.search(r"out of memory after \d+ MiB", proc.stderr), proc.stderr


def test_the_fault_can_name_the_file_it_hits(tmp_path):
    """KIND:PART faults only paths containing PART: one run of many can be made to crash."""
    env = fault_env(f"segv:{tmp_path.name}")
    assert subprocess.run([str(JAXPROF_BIN), "report", SMALL], capture_output=True, env=env).returncode == 0
    copy = tmp_path / "copy.xplane.pb.gz"
    copy.write_bytes(SMALL.read_bytes())
    assert subprocess.run([str(JAXPROF_BIN), "report", copy], capture_output=True, env=env).returncode == 2


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "\nState:\tZ" in status:
            return True
        time.sleep(0.05)
    return False


def _hanging_report() -> tuple[subprocess.Popen, int]:
    """`jaxprof report` whose worker hangs: the command and its worker's pid."""
    proc = subprocess.Popen([str(JAXPROF_BIN), "report", str(SMALL)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=fault_env("hang"))
    deadline = time.monotonic() + 10
    while not _children(proc.pid):
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.02)
    return proc, _children(proc.pid)[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_sent_to_the_command_still_ends_it_by_that_signal(sig):
    """Ctrl-C, kill and a hang-up are not crashes: passed on to the worker, and the command ends by
    the same signal, as a shell expects (128+N)."""
    proc, worker = _hanging_report()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == -sig, (proc.returncode, err)
    assert "internal error" not in err
    assert _gone(worker)


def test_the_worker_dies_with_the_command():
    """SIGKILL to `jaxprof` (a CI runner's time limit) leaves no worker running on alone."""
    proc, worker = _hanging_report()
    proc.kill()
    proc.communicate(timeout=10)
    assert _gone(worker)


def test_a_closed_pipe_ends_the_command_quietly():
    """`jaxprof ops ... | head`, the reader gone before it writes: SIGPIPE ends the command, as it
    did before it worked in a child; no 'internal error'."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the command starts: its first write must meet a closed pipe
    try:
        proc = subprocess.Popen([str(JAXPROF_BIN), "ops", str(SMALL)], stdout=write_end, stderr=subprocess.PIPE,
                                text=True, env=fault_env(None))
    finally:
        os.close(write_end)
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGPIPE, (proc.returncode, err)
    assert "internal error" not in err
