"""``jaxprof run [options] -- PROGRAM ARGS...``: profiles an unchanged program (zero-code capture).

The launcher runs PROGRAM in a child process with stdin/stdout/stderr passed through. Capture is
injected through the environment: PYTHONPATH starts with ``_bootstrap/`` (a ``sitecustomize`` that
waits for ``import jax``) and ``JAXPROF_RUN_*`` variables carry the settings, so every descendant
Python process that imports JAX captures into the one run directory named here. When the capture
is done (or PROGRAM exits) the report goes to stderr, then the run directory; PROGRAM's exit status
becomes ours (128+N when a signal N killed it, as a shell says).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Callable, Sequence

from ._run_child import Settings
from .config import PRESETS, options_of, parse_option, preset_options
from . import _core, _isolated, multihost, runs

BOOTSTRAP_DIR = Path(__file__).resolve().parent / "_bootstrap"
DEFAULT_STEPS = (10, 14)
DEFAULT_SETTLE = 2  # default steps begin once this many steps in a row compiled nothing
POLL_S = 0.2  # how often the launcher looks for a finished capture while PROGRAM runs


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="jaxprof run",
        usage="jaxprof run [--out DIR] [--steps A:B | --delay DUR --duration DUR] [--report|--no-report]\n"
              "                   [--python-trace] [--preset lean] [--host-tracer-level N] [--option KEY=VALUE]...\n"
              "                   -- PROGRAM [ARGS...]",
        description="Run PROGRAM unchanged (e.g. python train.py) and profile the JAX work of every Python "
                    "process it starts that imports JAX. Steps are the calls of the step function: the jitted "
                    "function (jax.jit, jax.pmap, Flax's nnx.jit) that, among those called at least twice by "
                    "the time the first one reaches call A, whose first call (its trace and compile) took longest, "
                    "counted from 0. PROGRAM's output passes through; the report and the run directory go "
                    "to stderr; the exit status is PROGRAM's (128+N when killed by signal N).")
    ap.add_argument("--out", default="profiles", metavar="DIR",
                    help="log directory; the run goes to DIR/plugins/profile/<run>/ (default: ./profiles)")
    ap.add_argument("--steps", metavar="A:B", type=_steps,
                    help=f"capture calls A to B of the step function, inclusive, as every jaxprof --steps "
                         f"(N: call N alone; :B from call 0) (default: {DEFAULT_STEPS[1] - DEFAULT_STEPS[0]} "
                         f"steps from call {DEFAULT_STEPS[0]}, or later, once {DEFAULT_SETTLE} steps in a row "
                         "compiled nothing). Until this release B was the first call left out: 10:14 now captures 5 calls")
    ap.add_argument("--delay", type=_seconds, metavar="DUR",
                    help="capture a time window instead, starting DUR after JAX is imported (2s, 500ms; bare "
                         "numbers are seconds; default 0)")
    ap.add_argument("--duration", type=_seconds, metavar="DUR", help="the window's length (bare numbers are seconds)")
    ap.add_argument("--report", dest="report", action="store_true", default=True,
                    help="print the report of the run to stderr (default)")
    ap.add_argument("--no-report", dest="report", action="store_false", help="print only the run directory")
    ap.add_argument("--python-trace", action="store_true", help="turn on JAX's Python tracer (bigger traces)")
    ap.add_argument("--preset", choices=sorted(PRESETS),
                    help="a named set of ProfileOptions: lean (host tracer level 1, no Python tracer, no dataset "
                         "ops, CUPTI buffers of 1 Mi events) for big GPU jobs; the options below override it")
    ap.add_argument("--host-tracer-level", type=int, choices=range(4), metavar="N",
                    help="JAX's host tracer level: 0 off, 1 user annotations and dispatches, 2 (default), 3 verbose")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", type=_option,
                    help="any ProfileOptions field (enable_hlo_proto=false) or advanced_configuration key "
                         "(gpu_max_activity_api_events=4000000, tpu_trace_mode=TRACE_COMPUTE); repeatable")
    return ap


def _option(text: str) -> tuple[str, object]:
    try:
        return parse_option(text, "--option")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def profile_options(args: argparse.Namespace) -> dict:
    """The ProfileOptions fields ``jaxprof run`` asked for: the preset's, then --python-trace and
    --host-tracer-level, then every --option (later ones win); ValueError for a value of the wrong kind."""
    pairs = list(args.option)
    if args.host_tracer_level is not None:
        pairs.insert(0, ("host_tracer_level", args.host_tracer_level))
    if args.python_trace:
        pairs.insert(0, ("python_tracer_level", 1))
    return options_of(pairs, preset_options(args.preset) if args.preset else None)


def _steps(text: str) -> tuple[int, int]:
    """--steps as the library reads every step range (jp_steps_parse: N, A:B inclusive, :B), as the
    half-open (first call, first call left out) pair the child works with."""
    try:
        first, last = _core.steps_parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if last is None:
        raise argparse.ArgumentTypeError(f"{text!r}: the capture needs a last step (A:B, inclusive)")
    return first or 0, last + 1


def _seconds(text: str) -> float:
    try:
        return _core.duration_parse(text, 1.0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """Our options and PROGRAM's argv (after ``--``, or from the first word that is not ours)."""
    ap = parser()
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        args, program = ap.parse_args(argv[:cut]), argv[cut + 1:]
    else:
        ap.add_argument("program", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        args = ap.parse_args(argv)
        program = args.program
    if not program:
        ap.error("no PROGRAM to run (jaxprof run [options] -- PROGRAM ARGS...)")
    if args.steps is not None and (args.delay is not None or args.duration is not None):
        ap.error("--steps and --delay/--duration choose different captures: give one")
    if args.delay is not None and args.duration is None:
        ap.error("--delay needs --duration")
    if args.duration is not None and args.duration <= 0:
        ap.error("--duration must be > 0")
    try:
        args.options = profile_options(args)
    except ValueError as exc:
        ap.error(str(exc))
    return args, program


def main(argv: Sequence[str]) -> int:
    args, program = parse(argv)
    log_dir = Path(args.out)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(log_dir, os.W_OK):
            raise PermissionError(f"{log_dir} is not writable")
    except OSError as exc:
        _say(f"cannot write to --out {log_dir} ({exc}); running {_shown(program)} without capture")
        return _exit_status(_run(program, os.environ.copy())[0])

    run_dir = _new_run_dir(log_dir / "plugins" / "profile")
    state_dir = Path(tempfile.mkdtemp(prefix="jaxprof-run-"))
    window = args.duration is not None
    settings = Settings(run_dir=run_dir.resolve(), state_dir=state_dir,
                        steps=None if window else (args.steps or DEFAULT_STEPS),
                        settle=DEFAULT_SETTLE if args.steps is None and not window else 0,
                        delay_s=args.delay or 0.0, duration_s=args.duration or 0.0, python_trace=args.python_trace,
                        options=args.options)
    if window:
        _say(f"capturing {settings.duration_s:g} s from {settings.delay_s:g} s after JAX is imported into {run_dir}")
    else:
        a, b = settings.steps  # type: ignore[misc]
        later = f", or later once {settings.settle} steps in a row compiled nothing" if settings.settle else ""
        _say(f"capturing steps {a}:{b - 1} (calls {a}-{b - 1} of the step function{later}) into {run_dir}")
    env = os.environ.copy()
    env.update(settings.to_env())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOTSTRAP_DIR), env.get("PYTHONPATH")) if p)
    try:
        watcher = _Watcher(run_dir, state_dir, args.report)
        rc, started = _run(program, env, watcher.poll)
        if started:
            watcher.finish(_shown(program))
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
        _remove_stale(log_dir)
        try:
            run_dir.rmdir()  # only when empty (nothing captured): leave no empty run behind
        except OSError:
            pass
    return _exit_status(rc)


def _run(program: list[str], env: dict[str, str], poll: Callable[[], None] | None = None) -> tuple[int, bool]:
    """Runs PROGRAM to its end, calling ``poll`` every POLL_S while it runs; returns its exit code
    (-N: killed by signal N) and whether it started (if not, the code is 127 or 126, as a shell's).

    Ctrl-C in a terminal reaches the whole foreground process group, PROGRAM included, so we only
    let it pass by us (a no-op handler, which exec resets to the default in the child); SIGTERM and
    SIGHUP sent to us are forwarded to PROGRAM."""
    child: list[subprocess.Popen] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child:
            child[0].send_signal(signum)

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, lambda _s, _f: None)
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGHUP, forward)
    try:
        try:
            child.append(subprocess.Popen(program, env=env))
        except OSError as exc:
            _say(f"cannot run {program[0]}: {exc.strerror or exc}")
            return (127 if isinstance(exc, FileNotFoundError) else 126), False
        while True:
            try:
                return child[0].wait(timeout=POLL_S if poll else None), True
            except subprocess.TimeoutExpired:
                poll()  # type: ignore[misc]
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


class _Watcher:
    """Prints the report once the run's captures are filed: while PROGRAM still runs (a window that
    ended, steps done) or after it exits; again at exit when files came after the first report."""

    def __init__(self, run_dir: Path, state_dir: Path, report: bool) -> None:
        self.run_dir = run_dir
        self.state_dir = state_dir
        self.report = report
        self.reported: set[str] = set()  # the xplane names the printed report covered
        self.unreadable = False          # warned that the run cannot be read
        self.running = True              # PROGRAM still runs (poll) or has ended (finish)

    def _files(self) -> set[str]:
        self._adopt()
        if not self.run_dir.is_dir():
            return set()
        return {f.name for f in self.run_dir.iterdir() if runs.xplane_host(f.name)}

    def _adopt(self) -> None:
        """Follows PROGRAM's processes into the run process 0 of their jax.distributed job named
        (another ``jaxprof run``'s, when each process was started by its own)."""
        for marker in self.state_dir.glob("*.filed"):
            try:
                filed = Path(marker.read_text())
            except OSError:
                continue
            if filed != self.run_dir.resolve() and filed.is_dir():
                self.run_dir = filed
                return

    def _settled(self) -> bool:
        return not any(self.state_dir.glob("*.capturing"))

    def poll(self) -> None:
        try:
            files = self._files()
            if files and files != self.reported and self._settled():
                self._print(files)
        except OSError as exc:  # PROGRAM removed the run or --out: say so once, keep waiting
            if not self.unreadable:
                self.unreadable = True
                _say(f"cannot read {self.run_dir} ({exc})")

    def finish(self, shown: str) -> None:
        self.running = False
        files = self._files()
        if files and files != self.reported:
            self._print(files)
        elif not files:
            _say(self._why_nothing(shown))

    def _print(self, files: set[str]) -> None:
        self.reported = files
        if self.report:  # in a child process: a crash in the analysis is a message, not our end
            outcome = _isolated.run(["report", self.run_dir])
            if outcome.ok:
                text = outcome.stdout
                sys.stderr.write(text if text.endswith("\n") else text + "\n")
            else:
                _say(_isolated.failure(self.run_dir, outcome, "the program continues" if self.running else
                                       "see it with jaxprof report"))
        _say(f"run directory: {self.run_dir}")
        sys.stderr.flush()

    def _why_nothing(self, shown: str) -> str:
        statuses = sorted(self.state_dir.glob("*.status"))
        if not statuses:
            return (f"{shown} never imported JAX; nothing captured (a Python started with -E, -I or -S "
                    "ignores PYTHONPATH and cannot be captured)")
        lines = []
        for f in statuses:
            try:
                lines.append(f"process {f.name.split('.')[0]}: {f.read_text().strip()}")
            except OSError:
                pass
        return "nothing captured: " + "; ".join(lines)


def _new_run_dir(parent: Path) -> Path:
    """Creates the run directory, named as JAX names runs (the time, to the second); ``-2``, ``-3``
    when another capture took that second (mkdir is the claim, so two launchers never share one)."""
    return multihost.new_dir(parent / time.strftime("%Y_%m_%d_%H_%M_%S"))


def _remove_stale(log_dir: Path) -> None:
    """Removes the private directories of PROGRAM's processes that died mid-capture (SIGKILL): those
    of this host whose process is gone (another host's pid means nothing here)."""
    prefix = f".jaxprof-run-{socket.gethostname()}-"
    for path in log_dir.glob(".jaxprof-run-*"):
        pid = path.name[len(prefix):] if path.name.startswith(prefix) else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exit_status(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def _shown(program: list[str]) -> str:
    return " ".join(program) if len(" ".join(program)) <= 60 else " ".join(program)[:57] + "..."


def _say(message: str) -> None:
    print(f"jaxprof run: {message}", file=sys.stderr, flush=True)
