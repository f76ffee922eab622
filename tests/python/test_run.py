"""`jaxprof run` (issue 21): real scripts with no profiler code, run unchanged under the launcher, on
real JAX CPU. Each script is written to tmp_path; the assertions read the run it leaves behind."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest

import jaxprof

from conftest import JAXPROF_BIN, jaxprof_json

TRAIN = """
    import sys
    import jax
    import jax.numpy as jnp

    def forward(w, x):  # four layers sharing w: the step's gradient is several times loss's program
        for _ in range(4):
            x = jnp.tanh(x @ w)
        return jnp.mean(x ** 2)

    @jax.jit
    def train_step(w, x):
        return w - 1e-3 * jax.grad(forward)(w, x)

    @jax.jit
    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    w, x = jnp.ones((256, 256)) * 0.01, jnp.ones((128, 256))
    for i in range(int(sys.argv[1])):
        w = train_step(w, x)
        value = loss(w, x)
    print(f"final loss {float(value):.6f}", flush=True)
    sys.exit(int(sys.argv[2]))
"""


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def jaxprof_run(*args: object, timeout: int = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(JAXPROF_BIN), "run", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def run_dirs(out: Path) -> list[Path]:
    return sorted({p.parent for p in out.rglob("*.xplane.pb")})


def the_run(out: Path, stderr: str) -> Path:
    (run,) = run_dirs(out)
    assert f"jaxprof run: run directory: {run}\n" in stderr
    return run


def step_numbers(path: Path) -> list[int]:
    profile = jaxprof.load(path)
    assert profile.step_summary()["method"] == "StepTraceAnnotation"
    return [s["step"] for s in profile.steps()]


def event_names(run: Path) -> set[str]:
    """Every event name in the run's xplanes, read by JAX's own ProfileData."""
    names = set()
    for xplane in run.glob("*.xplane.pb"):
        for plane in jax.profiler.ProfileData.from_file(str(xplane)).planes:
            names.update(event.name for line in plane.lines for event in line.events)
    return names


def test_a_training_loop_runs_unchanged_and_its_steps_are_captured(tmp_path):
    train = script(tmp_path, "train.py", TRAIN)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "5:8", "--", sys.executable, train, 16, 3)
    assert proc.returncode == 3, proc.stderr  # PROGRAM's exit status
    assert re.fullmatch(r"final loss \d+\.\d{6}\n", proc.stdout), proc.stdout  # PROGRAM's stdout, only it
    assert "capturing steps 5:8 (calls 5-8 of the step function)" in proc.stderr
    assert "steps are calls of train_step" in proc.stderr  # the bigger compile of the two, called as often
    run = the_run(out, proc.stderr)
    (xplane,) = run.glob("*.xplane.pb")
    assert xplane.name.endswith("-p0.xplane.pb")
    assert step_numbers(run) == [5, 6, 7, 8]  # from the markers: calls 5..8 of train_step
    assert f"jaxprof report: {run}\n" in proc.stderr and "Steps: 4 (StepTraceAnnotation)" in proc.stderr
    # the report precedes the run directory, and PROGRAM's stdout holds none of it
    assert proc.stderr.index("Steps: 4") < proc.stderr.index("jaxprof run: run directory:")
    ops = {op["name"] for op in jaxprof.load(run).ops()}
    assert any("dot" in name or "fusion" in name for name in ops), ops
    assert not list(out.glob(".jaxprof-run-*"))  # the private write directory is gone
    assert not any(name.startswith("$") for name in event_names(run))  # no Python tracer unless asked


def test_python_m_jaxprof_run_with_the_default_steps(tmp_path):
    train = script(tmp_path, "train.py", TRAIN)
    out = tmp_path / "prof"
    proc = subprocess.run([sys.executable, "-m", "jaxprof", "run", "--out", str(out), "--no-report", "--python-trace",
                           "--", sys.executable, str(train), "16", "0"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "capturing steps 10:13" in proc.stderr
    run = the_run(out, proc.stderr)
    assert "jaxprof report:" not in proc.stderr  # --no-report: only the run directory
    assert step_numbers(run) == [10, 11, 12, 13]
    assert any(name.startswith("$") for name in event_names(run))  # the Python tracer's "$file:line fn" events


def test_a_script_that_never_imports_jax_runs_and_nothing_is_captured(tmp_path):
    plain = script(tmp_path, "plain.py", """
        import sys
        print("no jax here", sys.argv[1:])
        sys.exit(7)
    """)
    user_site = tmp_path / "user_site"  # the user's own sitecustomize, further on PYTHONPATH, still runs
    user_site.mkdir()
    script(user_site, "sitecustomize.py", """
        import sys
        sys.stderr.write("user sitecustomize ran\\n")
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--", sys.executable, plain, "a", "--steps", "1:2",
                       env={**os.environ, "PYTHONPATH": str(user_site)})
    assert proc.returncode == 7
    # it ran in the launcher's Python (python -m jaxprof), then in PROGRAM's after the bootstrap
    assert proc.stderr.count("user sitecustomize ran\n") == 2
    assert proc.stderr.index("capturing steps") < proc.stderr.rindex("user sitecustomize ran")
    assert proc.stdout == "no jax here ['a', '--steps', '1:2']\n"  # PROGRAM's own options reach it
    assert f"jaxprof run: {sys.executable} {plain} a --steps 1:2"[:40] in proc.stderr
    assert "never imported JAX; nothing captured" in proc.stderr
    assert list((out / "plugins" / "profile").iterdir()) == []  # no run left behind, not even empty


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_program_killed_by_a_signal_exits_128_plus_n(tmp_path, sig):
    killed = script(tmp_path, "killed.py", f"""
        import os, signal
        import jax, jax.numpy as jnp
        step = jax.jit(lambda w: w * 0.5 + 1.0)
        w = jnp.ones(8)
        for i in range(6):
            w = step(w)
        print("killing myself", flush=True)
        os.kill(os.getpid(), {int(sig)})
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "2:49", "--", sys.executable, killed)
    assert proc.returncode == 128 + sig, proc.stderr
    assert proc.stdout == "killing myself\n"
    # killed mid-capture: no exit handler ran, so JAX never wrote; nothing is left half-made
    assert "nothing captured" in proc.stderr
    assert re.search(r"ended without running its exit handlers \(os._exit, a signal or a crash\); it was capturing "
                     r"steps 2:49 of \S+, after 6 calls of it \(step 5 had begun\); nothing was written", proc.stderr), \
        proc.stderr
    assert not list(out.rglob("*.xplane.pb")) and not list(out.glob(".jaxprof-run-*"))


@pytest.mark.parametrize("calls, said", [
    (12, "it was capturing steps 10:13 of train_step, after 12 calls of it (step 11 had begun)"),
    (10, "it ran jitted functions; none had reached call 10 (the first step to capture)"),
])
def test_a_program_that_vanishes_is_said_to_have_vanished(tmp_path, calls, said):
    """The step function ran 12 times, the program left by os._exit during the capture of steps
    10:14: no exit handler ran and nothing could be written. jaxprof run once said "no jitted
    function ran"; now it says what happened, from the status noted when the phase last changed."""
    vanishing = script(tmp_path, "vanishing.py", f"""
        import os
        import jax, jax.numpy as jnp

        @jax.jit
        def train_step(w):
            return w * 0.5 + 1.0

        w = jnp.ones(8)
        for i in range({calls}):
            w = train_step(w)
        w.block_until_ready()
        print("leaving", flush=True)
        os._exit(0)
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "10:13", "--", sys.executable, vanishing)
    assert proc.returncode == 0 and proc.stdout == "leaving\n", proc.stderr
    assert "no jitted function ran" not in proc.stderr
    assert f"ended without running its exit handlers (os._exit, a signal or a crash); {said}; nothing was written" \
        in proc.stderr, proc.stderr
    assert not list(out.rglob("*.xplane.pb"))


def test_a_time_window_instead_of_steps(tmp_path):
    # `early` runs only in the first 0.3 s after JAX is imported, then `late`: the window opens 1 s after
    # the import (0.7 s after `early` stopped) and lasts 1.5 s, so it holds `late` only. The program
    # goes on 3 s past the moment its capture file appears, so the report comes before its last line.
    windowed = script(tmp_path, "windowed.py", """
        import pathlib, sys, time
        import jax
        t0 = time.monotonic()
        import jax.numpy as jnp

        @jax.jit
        def early(w):
            return jnp.sin(w) + 1.0

        @jax.jit
        def late(w):
            return jnp.cos(w) * 0.5

        w = jnp.ones((64, 64))
        while time.monotonic() - t0 < 0.3:
            w = early(w).block_until_ready()
        filed = None
        while filed is None or time.monotonic() - filed < 3.0:
            w = late(w).block_until_ready()
            time.sleep(0.002)
            if filed is None and any(pathlib.Path(sys.argv[1], "plugins", "profile").glob("*/*.xplane.pb")):
                filed = time.monotonic()
            if time.monotonic() - t0 > 60:
                break
        print("program done", file=sys.stderr, flush=True)
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--delay", "1", "--duration", "1.5", "--", sys.executable, windowed, out)
    assert proc.returncode == 0, proc.stderr
    assert "capturing 1.5 s from 1 s after JAX is imported" in proc.stderr
    run = the_run(out, proc.stderr)
    assert proc.stderr.index("jaxprof run: run directory:") < proc.stderr.index("program done")
    profile = jaxprof.load(run)
    assert {op["module"] for op in profile.ops()} == {"jit_late"}  # nothing from before the window
    assert 750 <= profile.summary()["span_ms"] <= 2500  # about the 1.5 s asked for (loose: a busy machine)


WORKER = """
    import sys
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    index, port = int(sys.argv[1]), int(sys.argv[2])
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=index)
    rows = NamedSharding(Mesh(np.array(jax.devices()), ("p",)), PartitionSpec("p"))

    @jax.jit
    def train_step(x):
        y = jax.numpy.tanh(x @ jax.numpy.swapaxes(x, 1, 2))
        return x * 0.999 + 0.001 * jax.numpy.mean(y)

    x = jax.make_array_from_process_local_data(rows, np.full((1, 64, 64), index + 1.0, np.float32))
    for i in range(8):
        x = train_step(x)
    x.block_until_ready()
    print(f"worker {index} done", flush=True)
    jax.distributed.shutdown()
"""

LAUNCHER = """
    import subprocess, sys
    worker, port = sys.argv[1], sys.argv[2]
    procs = [subprocess.Popen([sys.executable, worker, str(i), port]) for i in range(2)]
    sys.exit(max(p.wait() for p in procs))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_two_process_jax_distributed_job_writes_one_run(tmp_path):
    worker = script(tmp_path, "worker.py", WORKER)
    launcher = script(tmp_path, "launcher.py", LAUNCHER)  # never imports JAX itself
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "2:4", "--", sys.executable, launcher, worker, free_port(),
                       timeout=240)
    assert proc.returncode == 0, proc.stderr
    # both workers' output passed through (with gloo's own lines, and maybe interleaved on one pipe)
    assert sorted(re.findall(r"worker \d done", proc.stdout)) == ["worker 0 done", "worker 1 done"]
    run = the_run(out, proc.stderr)
    files = sorted(f.name for f in run.glob("*.xplane.pb"))
    assert [f.rsplit("-", 1)[1] for f in files] == ["p0.xplane.pb", "p1.xplane.pb"], files
    for f in files:  # each decodes on its own, with the steps of its own process
        assert step_numbers(run / f) == [2, 3, 4]
    assert jaxprof.load(run).hosts()["host_stats"] and len(jaxprof.load(run).hosts()["host_stats"]) == 2
    # process 0 merged both processes' summaries (shared through the job's key-value store) and said so,
    # though the worker shuts jax.distributed down right after its last step
    assert "2 of 2 processes merged from their summaries" in proc.stderr, proc.stderr[-3000:]
    assert sorted(f.name.split(".")[0].rsplit("-", 1)[1] for f in run.glob("*.jaxprof-summary.json")) == ["p0", "p1"]


def test_a_jax_distributed_job_launched_per_process_writes_one_run(tmp_path):
    # one `jaxprof run` per process (as on a cluster, one per host): process 0 names the run for all
    worker = script(tmp_path, "worker.py", WORKER)
    out, port = tmp_path / "prof", str(free_port())
    procs = [subprocess.Popen([str(JAXPROF_BIN), "run", "--out", str(out), "--steps", "2:4", "--no-report", "--",
                               sys.executable, str(worker), str(i), port],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    results = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    run = the_run(out, results[0][1])
    assert f"jaxprof run: run directory: {run}\n" in results[1][1]  # process 1's launcher follows it there
    files = sorted(f.name for f in run.glob("*.xplane.pb"))
    assert [f.rsplit("-", 1)[1] for f in files] == ["p0.xplane.pb", "p1.xplane.pb"], files
    assert [p.name for p in (out / "plugins" / "profile").iterdir()] == [run.name]  # no empty second run


def test_subprocesses_that_import_jax_capture_into_the_same_run(tmp_path):
    # a parent without JAX starts two JAX children with no jax.distributed: both are process 0, so the
    # second to file its capture adds its pid to the name
    train = script(tmp_path, "train.py", TRAIN)
    parent = script(tmp_path, "parent.py", f"""
        import subprocess, sys
        children = [subprocess.Popen([sys.executable, {str(train)!r}, "6", "0"]) for _ in range(2)]
        print("children", *[c.pid for c in children], flush=True)
        sys.exit(max(c.wait() for c in children))
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "2:3", "--no-report", "--", sys.executable, parent)
    assert proc.returncode == 0, proc.stderr
    pids = proc.stdout.splitlines()[0].split()[1:]
    run = the_run(out, proc.stderr)
    names = sorted(f.name for f in run.glob("*.xplane.pb"))
    host = names[0].split("-p0")[0]
    assert names in ([f"{host}-p0-{pid}.xplane.pb", f"{host}-p0.xplane.pb"] for pid in pids), (names, pids)
    for name in names:
        assert step_numbers(run / name) == [2, 3]


def test_ctrl_c_during_the_capture_reaches_the_program_and_the_files_are_written(tmp_path):
    looping = script(tmp_path, "looping.py", """
        import signal, sys
        import jax, jax.numpy as jnp

        def on_sigint(signum, frame):
            print("program caught SIGINT", flush=True)
            sys.exit(5)

        signal.signal(signal.SIGINT, on_sigint)
        step = jax.jit(lambda w: jnp.tanh(w @ w) * 0.5)
        w = jnp.ones((64, 64))
        i = 0
        while True:
            w = step(w).block_until_ready()
            print(f"step {i}", flush=True)
            i += 1
    """)
    out = tmp_path / "prof"
    proc = subprocess.Popen([str(JAXPROF_BIN), "run", "--out", str(out), "--steps", "3:99999", "--",
                             sys.executable, str(looping)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        for line in proc.stdout:
            if line == "step 20\n":  # capturing since step 3
                break
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
        rest, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, stderr  # the launcher let Ctrl-C pass and returned PROGRAM's status
    assert "program caught SIGINT\n" in rest
    assert "ended during the capture" in stderr
    run = the_run(out, stderr)
    steps = step_numbers(run)
    assert steps[0] == 3 and len(steps) >= 17 and steps == list(range(3, 3 + len(steps)))


def test_capture_faults_leave_the_program_running(tmp_path):
    plain = tmp_path / "file"
    plain.write_text("")
    train = script(tmp_path, "train.py", TRAIN)
    # --out cannot be a directory: one warning, PROGRAM runs without capture, its status passes
    proc = jaxprof_run("--out", plain / "sub", "--", sys.executable, train, 3, 4)
    assert proc.returncode == 4 and proc.stdout.startswith("final loss ")
    assert proc.stderr.count("jaxprof run:") == 1 and "cannot write to --out" in proc.stderr
    # another trace already active when step A comes: one warning, PROGRAM unchanged
    own = script(tmp_path, "own_trace.py", f"""
        import sys
        import jax
        jax.profiler.start_trace({str(tmp_path / 'own')!r})
        sys.argv = [sys.argv[0], "8", "0"]
        exec(open({str(train)!r}).read())
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "2:3", "--", sys.executable, own)
    assert proc.returncode == 0 and proc.stdout.startswith("final loss "), proc.stderr
    assert "another profiler trace is already active" in proc.stderr
    assert "nothing captured: process" in proc.stderr and not list(out.rglob("*.xplane.pb"))


def test_steps_and_durations_are_read_by_the_library_rules():
    """run --steps is the step range of every jaxprof command (jp_steps_parse, inclusive), held by the
    launcher as (first call, first call left out); --delay/--duration are jp_duration_parse's."""
    from jaxprof import _core, launch
    assert _core.steps_parse("3:5") == (3, 5) and _core.steps_parse("4:") == (4, None)
    assert _core.steps_parse(":2") == (None, 2) and _core.steps_parse("7") == (7, 7)
    for text, half_open in (("3:5", (3, 6)), ("7", (7, 8)), (":2", (0, 3)), ("10:10", (10, 11))):
        args, program = launch.parse(["--steps", text, "--", "true"])
        assert args.steps == half_open and program == ["true"], text
    for delay, duration, want in (("500ms", "2s", (0.5, 2.0)), ("1.5", "250", (1.5, 250.0)), ("0", "1min", (0.0, 60.0))):
        args, _ = launch.parse(["--delay", delay, "--duration", duration, "--", "true"])
        assert (args.delay, args.duration) == pytest.approx(want), (delay, duration)
    assert _core.duration_parse("500us", 1.0) == pytest.approx(0.0005)
    with pytest.raises(ValueError, match="is not a duration"):
        _core.duration_parse("5 parsecs", 1.0)


def test_bad_options_are_usage_errors():
    for args, message in ((["--steps", "5:2", "--", "true"], "the first step is after the last"),
                          (["--steps", "5:", "--", "true"], "the capture needs a last step"),
                          (["--steps", "1:3", "--duration", "1", "--", "true"], "give one"),
                          (["--delay", "1", "--", "true"], "--delay needs --duration"),
                          (["--delay", "1x", "--duration", "1", "--", "true"], "'1x' is not a duration"),
                          ([], "no PROGRAM to run")):
        proc = jaxprof_run(*args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    missing = jaxprof_run("--no-report", "--", "/nonexistent/program")
    assert missing.returncode == 127 and "cannot run /nonexistent/program" in missing.stderr
    assert "nothing captured" not in missing.stderr  # it never ran: no note about JAX


def test_a_function_jitted_anew_each_iteration_is_one_step_function(tmp_path):
    """`jax.jit(step)(w)` inside the loop: a new jitted object per call, one cached program; its calls
    are counted per Python function, so it still has steps."""
    inline = script(tmp_path, "inline.py", """
        import jax
        import jax.numpy as jnp

        def step(w):
            return jnp.tanh(w @ w) * 0.5

        w = jnp.ones((64, 64))
        for i in range(12):
            w = jax.jit(step)(w)
        print(float(w[0, 0]) > -2)
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "4:6", "--no-report", "--", sys.executable, inline)
    assert proc.returncode == 0 and proc.stdout == "True\n", proc.stderr
    assert "steps are calls of step" in proc.stderr
    assert step_numbers(the_run(out, proc.stderr)) == [4, 5, 6]


FLAX = """
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(32, 64, rngs=rngs)
            self.l2 = nnx.Linear(64, 10, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    x, y = jnp.ones((16, 32)), jnp.arange(16) % 10
    for i in range(10):
        loss = train_step(model, optimizer, x, y)
    print(f"loss {float(loss):.4f}")
"""


def test_a_flax_nnx_and_optax_training_loop(tmp_path):
    """A real Flax NNX model trained with Optax: nnx.jit goes through jax.jit, so its steps count."""
    train = script(tmp_path, "flax_train.py", FLAX)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "3:5", "--", sys.executable, train)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"loss \d+\.\d{4}\n", proc.stdout), proc.stdout
    run = the_run(out, proc.stderr)
    assert step_numbers(run) == [3, 4, 5]
    ops = {op["name"] for op in jaxprof.load(run).ops()}
    assert any("dot" in name or "fusion" in name for name in ops), ops


def test_default_steps_wait_until_the_step_function_stops_compiling(tmp_path):
    """The default steps start at call 10 or later, once 2 steps in a row compiled nothing: here
    calls 9 and 10 get new batch shapes (each compiles), so steps 9 and 10 compiled and the four
    steps are 13..16; none of them compiles."""
    shapes = script(tmp_path, "shapes.py", """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def train_step(w, x):
            return w - 1e-3 * (x.T @ jnp.tanh(x @ w))

        w = jnp.ones((64, 64)) * 0.01
        for i in range(24):
            rows = {9: 16, 10: 24}.get(i, 32)
            w = train_step(w, jnp.ones((rows, 64)))
        print("done")
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--no-report", "--", sys.executable, shapes)
    assert proc.returncode == 0 and proc.stdout == "done\n", proc.stderr
    assert "capturing steps 10:13 (calls 10-13 of the step function, or later once 2 steps" in proc.stderr
    assert "steps 13:16 instead: JAX compiled in step 10" in proc.stderr
    run = the_run(out, proc.stderr)
    assert step_numbers(run) == [13, 14, 15, 16]
    assert [s["compiles"] for s in jaxprof.load(run).steps()] == [0, 0, 0, 0]


def test_given_steps_are_taken_as_given_even_while_compiling(tmp_path):
    shapes = script(tmp_path, "shapes.py", """
        import jax
        import jax.numpy as jnp

        f = jax.jit(lambda x: jnp.tanh(x).sum())
        for i in range(8):
            f(jnp.ones((i + 1, 8)))  # a new shape, so a compile, every call
    """)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--no-report", "--steps", "2:4", "--", sys.executable, shapes)
    assert proc.returncode == 0, proc.stderr
    assert step_numbers(the_run(out, proc.stderr)) == [2, 3, 4]


def test_profile_options_reach_the_program(tmp_path):
    """Issue 33 item 5: --preset, --host-tracer-level and --option reach JAX in PROGRAM's process.
    The lean preset turns the Python tracer off; an --option after it turns it on again, and the
    raw events (JAX's ProfileData) hold its "$file:line fn" frames; enable_hlo_proto=false leaves
    every module that ran without its HloProto, which the capture's health then names (item 4): the
    modules of the raw events' hlo_module stats."""
    from jaxprof import launch
    args, _ = launch.parse(["--preset", "lean", "--python-trace", "--host-tracer-level", "2",
                            "--option", "gpu_max_callback_api_events=7", "--", "true"])
    assert args.options == {"host_tracer_level": 2, "python_tracer_level": 1, "include_dataset_ops": False,
                            "advanced_configuration": {"gpu_max_activity_api_events": 1 << 20,
                                                       "gpu_max_callback_api_events": 7}}
    train = script(tmp_path, "train.py", TRAIN)
    out = tmp_path / "prof"
    proc = jaxprof_run("--out", out, "--steps", "3:4", "--no-report", "--preset", "lean",
                       "--option", "python_tracer_level=1", "--option", "enable_hlo_proto=false",
                       "--", sys.executable, train, 8, 0)
    assert proc.returncode == 0, proc.stderr
    run = the_run(out, proc.stderr)
    assert any(name.startswith("$") for name in event_names(run))
    (xplane,) = run.glob("*.xplane.pb")
    ran = {str(dict(e.stats)["hlo_module"]) for p in jax.profiler.ProfileData.from_file(str(xplane)).planes
           for line in p.lines for e in line.events if "hlo_module" in dict(e.stats)}
    assert {"jit_train_step", "jit_loss"} <= ran
    health = jaxprof_json("report", run)["capture_health"]
    assert {h["kind"] for h in health} == {"no HLO"}
    assert {h["text"].split()[1] for h in health} == ran


def test_unknown_profile_options_are_usage_errors():
    for args, message in ((["--option", "gpu_events=5", "--", "true"], "--option: unknown key 'gpu_events'"),
                          (["--option", "host_tracer_level=two", "--", "true"], "must be an integer, got 'two'"),
                          (["--option", "tpu_trace_mode=FAST", "--", "true"], "must be one of ['TRACE_ONLY_HOST'"),
                          (["--preset", "tiny", "--", "true"], "invalid choice: 'tiny'")):
        proc = jaxprof_run(*args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
