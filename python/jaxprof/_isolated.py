"""Analysis of a capture in a child process, for code that runs inside a training process.

The ``Profiler``'s capture line and ``report=``, ``perfetto=True`` exports and ``jaxprof run``'s
report all read the capture they just wrote. Read in-process, a bug in the analysis (a crash, an
abort), an input that takes all the memory, or one that never finishes would take training down
with it. Here every such analysis is the ``jaxprof`` command in a child process, under a time limit
and an address-space limit; whatever goes wrong is one logged warning naming the run directory, and
the caller goes on. Explicit calls (``jaxprof.load``, ``jaxprof.diff``) stay in-process.

Limits: ``JAXPROF_ANALYSIS_TIMEOUT`` (seconds, default 300) and ``JAXPROF_ANALYSIS_MEMORY`` (bytes,
with an optional K/M/G/T suffix; default half of this machine's memory, at least 1 GiB).
"""
from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ._log import log

DEFAULT_TIMEOUT_S = 300.0  #: a 1.5 GB capture analyses in ~12 s on one core: 25x headroom for a busy host
ENV_TIMEOUT = "JAXPROF_ANALYSIS_TIMEOUT"
ENV_MEMORY = "JAXPROF_ANALYSIS_MEMORY"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Limits:
    """What one analysis child may use."""

    timeout_s: float           #: wall time, then it is killed (SIGKILL)
    memory_bytes: int | None   #: its address space (RLIMIT_AS); None: no limit

    @classmethod
    def from_env(cls, timeout_s: float | None = None) -> "Limits":
        """``timeout_s`` if given, else ``$JAXPROF_ANALYSIS_TIMEOUT``, else 300 s; the memory from
        ``$JAXPROF_ANALYSIS_MEMORY``, else half of the machine's memory. A malformed value is a
        warning and the default."""
        if timeout_s is None:
            timeout_s = _env_number(ENV_TIMEOUT, DEFAULT_TIMEOUT_S)
        memory = _env_size(ENV_MEMORY)
        return cls(float(timeout_s), memory if memory is not None else _default_memory())


def _env_number(var: str, default: float) -> float:
    text = os.environ.get(var)
    if not text:
        return default
    try:
        value = float(text)
        if value > 0:
            return value
    except ValueError:
        pass
    log.warning("%s=%r is not a positive number of seconds; using %g", var, text, default)
    return default


def _env_size(var: str) -> int | None:
    text = os.environ.get(var)
    if not text:
        return None
    m = _SIZE.match(text)
    if not m or float(m.group(1)) <= 0:
        log.warning("%s=%r is not a size (e.g. 4G); using the default", var, text)
        return None
    return int(float(m.group(1)) * 1024 ** "_kmgt".index((m.group(2) or "_").lower()))


def _default_memory() -> int | None:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return max(total // 2, 1 << 30)


@dataclass(frozen=True)
class Outcome:
    """What the child did: its output, or why there is none."""

    stdout: str
    stderr: str
    returncode: int | None   #: None: it never ran, or was killed at the time limit
    problem: str             #: "" when it exited 0; else what went wrong, in words

    @property
    def ok(self) -> bool:
        return not self.problem


def command() -> list[str]:
    """How to run ``jaxprof``: the executable installed beside this Python (``$JAXPROF_BIN`` for a
    development build), else this Python running the package's own CLI entry."""
    from .viewers import jaxprof_binary

    binary = jaxprof_binary()
    if binary is not None and binary.is_file() and os.access(binary, os.X_OK):
        return [str(binary)]
    return [sys.executable, "-m", "jaxprof._isolated"]


_children: set[subprocess.Popen] = set()  # analyses running now: killed if this interpreter exits first
_children_lock = threading.Lock()


def _kill(child: subprocess.Popen) -> None:
    """SIGKILL to the child's process group (it leads one: start_new_session)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        try:
            child.kill()
        except OSError:
            pass


def _kill_children() -> None:
    with _children_lock:
        for child in list(_children):
            _kill(child)


atexit.register(_kill_children)


def run(args: Sequence[str], limits: Limits | None = None, stdin: bytes | None = None) -> Outcome:
    """Runs ``jaxprof ARGS`` in a child under ``limits`` (default: :meth:`Limits.from_env`) and
    returns what it did. Never raises for the child's sake. ``stdin``: bytes the child reads (an
    in-memory capture, for PATH ``-``).

    The limits are set by ``/bin/sh`` (``ulimit -v``, and ``ulimit -t`` at twice the time limit as
    a backstop for a child whose parent died) before it execs the command: a ``preexec_fn`` could
    deadlock in a process with threads, which a training process always has."""
    limits = limits or Limits.from_env()
    argv = [*command(), *map(str, args)]
    shell = ['ulimit -t "$1" || exit 126']
    if limits.memory_bytes is not None:
        shell.append('ulimit -v "$2" || exit 126')
    shell.append('shift 2; exec "$@"')
    cpu_s = max(1, int(2 * limits.timeout_s) + 1)
    kib = _capped_kib(limits.memory_bytes)
    full = ["/bin/sh", "-c", "; ".join(shell), "sh", str(cpu_s), str(kib), *argv]
    try:
        # a session of its own: the terminal's Ctrl-C is the training's to handle, and the time
        # limit ends the child's whole group (the CLI works in a forked process of its own)
        child = subprocess.Popen(full, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return Outcome("", "", None, f"could not be started ({exc})")
    with _children_lock:
        _children.add(child)
    try:
        try:
            raw_out, raw_err = child.communicate(input=stdin, timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            _kill(child)
            raw_out, raw_err = child.communicate()
            return Outcome(_text(raw_out), _text(raw_err), None, f"took longer than {limits.timeout_s:g} s and was "
                                                                 f"stopped (limit: {ENV_TIMEOUT})")
    finally:
        with _children_lock:
            _children.discard(child)
    rc, out, err = child.returncode, _text(raw_out), _text(raw_err)
    if rc == 0:
        return Outcome(out, err, rc, "")
    return Outcome(out, err, rc, _describe(rc, err, limits))


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _capped_kib(memory: int | None) -> int:
    """The limit in KiB for ``ulimit -v``, never above the hard limit this process already has."""
    kib = (memory or 0) // 1024
    try:
        import resource

        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        if hard != resource.RLIM_INFINITY:
            kib = min(kib, hard // 1024)
    except (ImportError, ValueError, OSError):
        pass
    return max(kib, 1)


def _describe(rc: int, stderr: str, limits: Limits) -> str:
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        hint = " (out of memory?)" if -rc == signal.SIGKILL else ""
        return f"was killed by signal {-rc} ({name}){hint}"
    crashed = re.search(r"killed by signal (\d+) \(([^)]*)\)", stderr)
    if crashed:  # the CLI's worker crashed and the CLI said so (exit 2): say it as plainly
        return f"was killed by signal {crashed.group(1)} ({crashed.group(2)})"
    last = [line for line in stderr.strip().splitlines() if line.strip()]
    why = last[-1].removeprefix("jaxprof: ") if last else "no message"
    if "out of memory" in why and limits.memory_bytes is not None:
        why += f" (limit {limits.memory_bytes >> 20} MiB: {ENV_MEMORY})"
    return f"failed (exit {rc}): {why}"


def failure(run_dir: Path | str, outcome: Outcome, goes_on: str = "training continues") -> str:
    """What to say about an analysis that failed: what happened, and that the capture is safe."""
    return f"analysis of {run_dir} {outcome.problem}; the capture is on disk at {run_dir}; {goes_on}"


def warn(run_dir: Path | str, outcome: Outcome, goes_on: str = "training continues") -> None:
    """Logs :func:`failure` as the one warning on the ``jaxprof`` logger."""
    log.warning("%s", failure(run_dir, outcome, goes_on))


_VIEW_FLAGS = {"--top": ("top", int), "--width": ("width", int), "--sort": ("sort", str), "--filter": ("filter", str),
               "--columns": ("columns", str), "--module": ("module", str), "--group": ("group", str),
               "--table": ("table", str)}


def _section_call(args: list[str]) -> str:
    """``SECTION PATH [--json|--csv] [view flags]`` through the extension; PATH ``-``: an XSpace
    on standard input."""
    from .analysis import load

    section, path, rest = args[0], args[1], args[2:]
    view: dict[str, object] = {}
    fmt = "json" if "--json" in rest else "csv" if "--csv" in rest else "text"
    for flag, (key, kind) in _VIEW_FLAGS.items():
        if flag in rest:
            view[key] = kind(rest[rest.index(flag) + 1])
    profile = load(sys.stdin.buffer.read() if path == "-" else path)
    return profile.render(section, format=fmt, **view)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxprof._isolated SECTION PATH [--json|--csv] [--top N ...]`` and ``export PATH -o
    OUT``: the fallback when no ``jaxprof`` executable is installed (the same library, through the
    extension)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["export"] and len(args) == 4 and args[2] == "-o":
            from .export import export_trace

            r = export_trace(args[1], args[3])
            print(f"exported {r.events_out} of {r.events_in} events -> {r.path}")
            return 0
        if len(args) >= 2:
            text = _section_call(args)
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            return 0
    except Exception as exc:
        print(f"jaxprof: {exc}", file=sys.stderr)
        return 2
    print("usage: python -m jaxprof._isolated SECTION PATH [--json|--csv] [--top N ...] | export PATH -o OUT",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
