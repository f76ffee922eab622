"""The capture side of ``jaxprof run``: runs inside PROGRAM's processes, once they import JAX.

The bootstrap (``_bootstrap/sitecustomize.py``) calls :func:`install` right after ``jax`` finishes
importing. It replaces ``jax.jit`` and ``jax.pmap`` with versions whose functions count their
calls (JAX's C++ fast path skips Python after a jitted function's first call, so counting has to
happen in front of the function, not inside JAX), picks the step function among them, and captures
the steps of ``--steps A:B`` (A to B, inclusive) or a time window into the run directory the
launcher named. Nothing here raises into the program: a failure is one warning and capture is off.
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import threading
import time
import types
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import jax
import numpy as np

from . import _isolated, _jax, multihost, pod
from .config import check_profile_options
from ._log import log
from .runs import latest_run

# The launcher's settings, passed to every descendant process in the environment.
ENV_DIR = "JAXPROF_RUN_DIR"                 # the run directory every process files its xplane into
ENV_STATE = "JAXPROF_RUN_STATE"             # the launcher's directory of per-process status files
ENV_STEPS = "JAXPROF_RUN_STEPS"             # "A:E": executions A..E-1 (E = B+1 of the inclusive --steps A:B)
ENV_DELAY = "JAXPROF_RUN_DELAY"             # seconds from the import of JAX to the window's start
ENV_DURATION = "JAXPROF_RUN_DURATION"       # the window's length in seconds
ENV_PYTHON_TRACE = "JAXPROF_RUN_PYTHON_TRACE"  # "1": JAX's Python tracer on
ENV_SETTLE = "JAXPROF_RUN_SETTLE"           # N: start at A or later, after N steps in a row compiled nothing
ENV_OPTIONS = "JAXPROF_RUN_OPTIONS"         # JSON object: ProfileOptions fields (--preset, --host-tracer-level, --option)
SETTLE_WAIT = 20                            # with a settle rule, start by call A + this all the same
STEP_NAME = "train"                         # the StepTraceAnnotation name of the steps (as Profiler's)
RUN_NAME_KEY = "jaxprof/run/cli-run-name"   # jax.distributed key-value store: process 0's run name


@dataclass(frozen=True)
class Settings:
    """What ``jaxprof run`` asked for; the launcher writes it with :meth:`to_env`."""

    run_dir: Path                          # LOGDIR/plugins/profile/<run>
    state_dir: Path | None = None          # status files for the launcher (None: none kept)
    steps: tuple[int, int] | None = None   # (A, B), B exclusive; None: a time window
    delay_s: float = 0.0                   # window start, from the import of JAX
    duration_s: float = 0.0                # window length
    python_trace: bool = False             # JAX's Python tracer on
    settle: int = 0                        # steps: begin at the first call >= A after this many steps
                                           # in a row that compiled nothing (0: exactly at A)
    options: Mapping[str, Any] = field(default_factory=dict)  # ProfileOptions fields over jaxprof's defaults

    def to_env(self) -> dict[str, str]:
        env = {ENV_DIR: str(self.run_dir), ENV_PYTHON_TRACE: "1" if self.python_trace else "0",
               ENV_SETTLE: str(self.settle)}
        if self.options:
            env[ENV_OPTIONS] = json.dumps(dict(self.options), sort_keys=True)
        if self.state_dir is not None:
            env[ENV_STATE] = str(self.state_dir)
        if self.steps is not None:
            env[ENV_STEPS] = f"{self.steps[0]}:{self.steps[1]}"
        else:
            env[ENV_DELAY], env[ENV_DURATION] = repr(self.delay_s), repr(self.duration_s)
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Settings":
        """Raises ValueError on a malformed value (the launcher never writes one)."""
        state = env.get(ENV_STATE)
        common = dict(run_dir=Path(env[ENV_DIR]), state_dir=Path(state) if state else None,
                      python_trace=env.get(ENV_PYTHON_TRACE) == "1", settle=int(env.get(ENV_SETTLE, "0")),
                      options=check_profile_options(json.loads(env[ENV_OPTIONS]), ENV_OPTIONS) if env.get(ENV_OPTIONS) else {})
        if ENV_STEPS in env:
            a, b = (int(v) for v in env[ENV_STEPS].split(":"))
            return cls(steps=(a, b), **common)
        return cls(delay_s=float(env[ENV_DELAY]), duration_s=float(env[ENV_DURATION]), **common)


# Phases of a process's capture.
CHOOSING, WAITING, DELAYED, ARMED, CAPTURING, DONE = range(6)


@dataclass(eq=False)
class Calls:
    """One jitted function's calls in this process."""

    name: str
    count: int = 0          # dispatches so far: its executions 0..count-1
    first_s: float = 0.0    # how long its first call took: its trace and compile
    compiles_seen: int = 0  # the process's compile count at its last dispatch
    last_compiled: int = -1 # the last of its steps (dispatch to next dispatch) in which JAX compiled
    signature: Any = None   # its first call's (args, kwargs), arrays as jax.ShapeDtypeStruct: for its cost
    cost: tuple[float, float] | None = None  # (FLOPs, bytes accessed) of one call, from XLA's cost analysis
    fn_ref: Any = None      # a weak reference to the jitted function, to lower it again (never keeps it alive)


class Tracker:
    """Counts dispatches of the wrapped functions and runs this process's one capture."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.options = _jax.make_options(python_trace=settings.python_trace, extra=settings.options)
        # one Calls per Python function jitted, gone with the function; a list for those that
        # take no weak reference
        self._calls_of: weakref.WeakKeyDictionary[Any, Calls] = weakref.WeakKeyDictionary()
        self._unkeyed: list[Calls] = []
        self.phase = CHOOSING if settings.steps is not None else DELAYED
        self.watching = settings.steps is not None  # False: wrapped functions skip dispatch()
        self.step_fn: Calls | None = None
        self._first, self._end = settings.steps if settings.steps is not None else (-1, -1)  # A, B
        self.compiles = 0                          # JAX's compile events in this process (settle rule)
        self.steps_seen: list[int] = []            # step numbers captured so far
        self.status = "imported JAX; no jitted function ran"  # for the launcher, at exit
        self._ran_any = False                      # a jitted function ran (its status was noted)
        self._annotation: Any | None = None
        self._lock = threading.RLock()             # window timers run on their own threads
        self._local = threading.local()            # depth: inside a wrapped call on this thread
        self._started = 0.0
        self._timer: threading.Timer | None = None
        self._pod: threading.Thread | None = None  # sharing this capture's summary (jax.distributed)
        log_dir = settings.run_dir.parent.parent.parent
        # where JAX writes before the move; named by host and pid: the launcher removes those of its
        # host's dead processes only (a log directory may be shared by hosts)
        self.private = log_dir / f".jaxprof-run-{socket.gethostname()}-{os.getpid()}"

    # ---- dispatch ---------------------------------------------------------------------------

    def wrap(self, fn: Any, fun: Any) -> "Counted":
        """``fn`` (jitted ``fun``) counting its calls. Calls are counted per ``fun``: ``jax.jit(f)(x)``
        in a loop makes a new jitted object each time, yet runs one cached program, so it is one
        function here too (and the list does not grow by one entry a call)."""
        try:
            calls = self._calls_of.get(fun)
        except TypeError:  # no weak reference to it: a function of its own
            calls = None
        if calls is None:
            calls = Calls(str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)))
            try:
                self._calls_of[fun] = calls
            except TypeError:
                self._unkeyed.append(calls)
        return Counted(fn, calls, self)

    @property
    def calls(self) -> list[Calls]:
        return [*self._calls_of.values(), *self._unkeyed]

    def dispatch(self, calls: Calls, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Calls ``fn``; first counts the call and, on the calls that matter, moves the capture along."""
        local = self._local
        if getattr(local, "depth", 0):  # called while another wrapped function is traced: no dispatch
            return fn(*args, **kwargs)
        index = calls.count
        calls.count = index + 1
        if self.compiles != calls.compiles_seen:  # JAX compiled since its last dispatch: in its last step
            calls.compiles_seen, calls.last_compiled = self.compiles, index - 1
        if calls is self.step_fn or self.phase == ARMED or (index == self._first and self.phase == CHOOSING):
            try:
                with self._lock:
                    self._before(calls, index)
            except Exception as exc:  # our trouble must never become the program's
                self._give_up(exc)
        local.depth = 1
        if index:
            try:
                return fn(*args, **kwargs)
            finally:
                local.depth = 0
        if not self._ran_any and self.settings.steps is not None:  # the first call of any: what to say should the process vanish from now on
            self._ran_any = True
            self._note_vanished(f"ran jitted functions; none had reached call {self._first} (the first step to capture)")
        start = time.perf_counter()  # the first call: its trace and compile
        try:
            return fn(*args, **kwargs)
        finally:
            local.depth = 0
            calls.first_s = time.perf_counter() - start
            calls.signature = _abstract((args, kwargs))
            try:
                calls.fn_ref = weakref.ref(fn)
            except TypeError:
                calls.fn_ref = None

    def _before(self, calls: Calls, index: int) -> None:
        if self.phase == ARMED:
            self._open_window()
            return
        first, end = self._first, self._end
        if self.phase == CHOOSING and index == first:
            self._choose(calls)
        if calls is not self.step_fn:
            return
        if self.phase == WAITING and index >= first and self._settled(calls, index):
            if index != first:
                log.info("run: steps %d:%d instead: JAX compiled in step %d", index, index + end - first - 1,
                         calls.last_compiled)
            self._first, self._end = index, index + end - first
            self._begin_steps(index)
        elif self.phase == CAPTURING:
            self._close_annotation()
            if index >= end:
                self._finish(f"captured steps {first}:{end - 1} of {calls.name}")
            else:
                self._note_vanished(f"was capturing steps {first}:{end - 1} of {calls.name}, after {index + 1} calls "
                                    f"of it (step {index} had begun)")  # between steps: in neither
                self._open_annotation(index)

    def _choose(self, reached: Calls) -> None:
        """The step function: among the functions dispatched at least twice when the first one
        reaches execution A, the one with the most compiled work per call, XLA's cost analysis of its
        program (FLOPs, then bytes accessed), which does not depend on how busy the machine is;
        the first call's time (trace and compile) only breaks ties, e.g. when no cost is known."""
        candidates = [c for c in self.calls if c.count >= 2] or [reached]
        for c in candidates:
            if c.cost is None:
                c.cost = self._cost(c)
        self.step_fn = max(candidates, key=lambda c: (*(c.cost or (-1.0, -1.0)), c.first_s))
        self.phase = WAITING
        self._note_vanished(f"had run the step function {self.step_fn.name} {self.step_fn.count} times or more; "
                            "the capture had not begun")
        log.info("run: steps are calls of %s (%s; %s); capturing steps %d:%d%s",
                 self.step_fn.name, _describe(self.step_fn), _others(candidates, self.step_fn), self._first, self._end - 1,
                 f" or later, after {self.settings.settle} steps in a row without compiling" if self.settings.settle else "")

    def _cost(self, calls: Calls) -> tuple[float, float]:
        """(FLOPs, bytes accessed) of one call of ``calls``' function, lowered again from its first
        call's shapes (JAX's caches make that cheap); (-1, -1) when that fails."""
        fn = calls.fn_ref() if calls.fn_ref is not None else None
        if fn is None or calls.signature is None:
            return (-1.0, -1.0)
        local = self._local
        depth, local.depth = getattr(local, "depth", 0), 1  # its tracing dispatches nothing
        try:
            args, kwargs = calls.signature
            cost = fn.lower(*args, **kwargs).cost_analysis()
            if isinstance(cost, (list, tuple)):
                cost = cost[0] if cost else {}
            return (float(cost.get("flops", 0.0)), float(cost.get("bytes accessed", 0.0)))
        except Exception as exc:  # a function that cannot be lowered again: ranked by first call
            log.debug("run: no cost analysis of %s: %r", calls.name, exc)
            return (-1.0, -1.0)
        finally:
            local.depth = depth

    def _settled(self, calls: Calls, index: int) -> bool:
        """Whether steps may begin at this call: the settle rule's steps before it compiled nothing
        (a recompile, a first eval, a new batch shape would otherwise be what the capture shows)."""
        settle = self.settings.settle
        if not settle or index - calls.last_compiled > settle:
            return True
        if index < self._first + SETTLE_WAIT:
            return False
        log.warning("run: %s still compiles (last in step %d): capturing from step %d all the same",
                    calls.name, calls.last_compiled, index)
        return True

    def on_event(self, event: str, *_args: Any, **_kwargs: Any) -> None:
        """jax.monitoring listener: counts JAX's compile events (tracing, lowering, backend compile)."""
        if event.startswith("/jax/core/compile/"):
            self.compiles += 1

    def _begin_steps(self, index: int) -> None:
        _jax.sync_devices()  # earlier work stays out of the first step
        if self._start():
            self._note_vanished(f"was capturing steps {index}:{self._end - 1} of {self.step_fn.name if self.step_fn else '?'}"
                                f", after {index + 1} calls of it (step {index} had begun)")
            self._open_annotation(index)

    def _note_vanished(self, what: str) -> None:
        """The status the launcher shows should this process end without its exit handlers (os._exit,
        a signal, a crash), overwritten by :meth:`at_exit` when they run. Written when the phase
        changes and between captured steps (never inside one: its time stays the program's)."""
        _mark(self.settings.state_dir, f"{os.getpid()}.status",
              f"ended without running its exit handlers (os._exit, a signal or a crash); it {what}; "
              "nothing was written")

    # ---- the time window --------------------------------------------------------------------

    def arm_window(self) -> None:
        """Starts the window's timer (from now: JAX has just been imported)."""
        self._timer = threading.Timer(self.settings.delay_s, self._window_due)
        self._timer.daemon = True
        self._timer.start()

    def _window_due(self) -> None:
        with self._lock:
            if self.phase != DELAYED:
                return
            # start_trace initializes JAX's backends; before the program's first jitted call that
            # could come before its jax.distributed.initialize: wait for that call then
            if _backends_ready():
                self._open_window()
            else:
                self.phase, self.watching = ARMED, True

    def _open_window(self) -> None:
        self.watching = False
        if not self._start():
            return
        self._note_vanished(f"was capturing a {self.settings.duration_s:g} s window")
        self._timer = threading.Timer(self.settings.duration_s, self._window_over)
        self._timer.daemon = True
        self._timer.start()

    def _window_over(self) -> None:
        with self._lock:
            if self.phase == CAPTURING:
                self._finish(f"captured a {self.settings.duration_s:g} s window", sync=False)

    # ---- start, stop, file --------------------------------------------------------------------

    def _start(self) -> bool:
        self.phase = CAPTURING  # before start_trace: a Ctrl-C inside it still gets the trace stopped at exit
        _mark(self.settings.state_dir, f"{os.getpid()}.capturing", "")
        if _jax.start(self.private, self.options):
            self._started = time.perf_counter()
            self.status = "capturing"
            self._name_run()
            return True
        self.phase, self.watching = DONE, False
        self.status = "could not start the trace (see its warning)"
        _unmark(self.settings.state_dir, f"{os.getpid()}.capturing")
        return False

    def _finish(self, what: str, sync: bool = True) -> None:
        """Stops the trace and files its xplane into the run directory."""
        self._close_annotation()
        interrupt: BaseException | None = None
        try:
            if sync:
                _jax.sync_devices()  # the last step's device work belongs to the capture
        except BaseException as exc:  # Ctrl-C while waiting: stop cleanly, then re-raise
            interrupt = exc
        # A Ctrl-C between marking the capture done and JAX's stop would leave a trace nobody stops:
        # it is held until the stop and the filing are over, then delivered (_jax.sigint_held).
        with _jax.sigint_held():
            self.phase, self.watching = DONE, False
            try:
                written = _jax.stop()
            except BaseException as exc:  # an error while stopping: finish it, then re-raise
                interrupt = interrupt or exc
                written = _jax.finish_interrupted_stop(lambda: latest_run(self.private) is not None)
            try:
                dest = self._file() if written else None
                self.status = f"{what} -> {dest}" if dest else f"{what}, but no file was written"
                if dest:
                    log.info("run: %s (%.2f s) -> %s", what, time.perf_counter() - self._started, dest)
                    self._share(dest, what)
            finally:
                multihost.remove_private(self.private)
                _unmark(self.settings.state_dir, f"{os.getpid()}.capturing")
        if interrupt is not None:
            raise interrupt

    def _name_run(self) -> None:
        """Process 0 of a jax.distributed job tells the others its run directory's name, through the
        job's key-value store: processes started by separate ``jaxprof run`` commands (one per host)
        then file into one run, as Profiler's do. Set when capture starts, read when filing, so no
        process waits for another's stop."""
        proc = multihost.this_process()
        client = multihost._kv_client() if proc.multi and proc.index == 0 else None
        if client is not None:
            try:
                client.key_value_set(RUN_NAME_KEY, self.settings.run_dir.name)
            except Exception as exc:
                log.warning("run: could not tell the other processes the run's name: %r", exc)

    def _run_dir(self, proc: multihost.Process) -> Path:
        """This process's run directory: process 0's (by name, beside ours) in a jax.distributed job."""
        own = self.settings.run_dir
        client = multihost._kv_client() if proc.multi and proc.index != 0 else None
        if client is None:
            return own
        try:
            name = str(client.blocking_key_value_get(RUN_NAME_KEY, int(multihost.AGREE_TIMEOUT_S * 1000)))
        except Exception as exc:
            log.warning("run: process 0 did not name the run (%r); process %d files into its own", exc, proc.index)
            return own
        return own.parent / name if name and "/" not in name and name not in (".", "..") else own

    def _file(self) -> Path | None:
        """Moves the xplane JAX wrote into the shared run directory as ``<host>-p<index>``."""
        run = latest_run(self.private)
        if run is None:
            return None
        proc = multihost.this_process()
        run_dir = self._run_dir(proc)
        run_dir.mkdir(parents=True, exist_ok=True)
        dest = None
        for src in run.xplanes:
            dest = multihost.claim(src, run_dir, proc.index)
        _mark(self.settings.state_dir, f"{os.getpid()}.filed", str(run_dir))
        return dest

    def _share(self, own_file: Path, what: str) -> None:
        """In a jax.distributed job: this process's summary to process 0, which logs the merged
        report (pod.py), on a thread the exit waits for (bounded)."""
        proc = multihost.this_process()
        if not proc.multi or multihost._kv_client() is None:
            return
        pc = pod.PodCapture(f"jaxprof/pod/cli/{own_file.parent.name}", own_file, own_file.parent, proc.index,
                            tuple(range(proc.count)), 0)
        self._pod = threading.Thread(target=pod.share_and_report, args=(pc, f"run: {what}", False, _isolated.Limits.from_env()),
                                     daemon=True, name="jaxprof-pod")
        self._pod.start()
        pod.hold_shutdown_for(self._pod)

    def _open_annotation(self, index: int) -> None:
        self._annotation = jax.profiler.StepTraceAnnotation(STEP_NAME, step_num=index)
        self._annotation.__enter__()
        self.steps_seen.append(index)

    def _close_annotation(self) -> None:
        annotation, self._annotation = self._annotation, None
        if annotation is not None:
            annotation.__exit__(None, None, None)

    def _give_up(self, exc: Exception) -> None:
        log.warning("run: capture stopped after an internal error: %r", exc)
        with self._lock:
            if self.phase == CAPTURING:
                self._finish("stopped by an error")
            self.phase, self.watching = DONE, False

    # ---- exit ---------------------------------------------------------------------------------

    def at_exit(self) -> None:
        """The program is ending: write a capture still running, and say why there was none; wait
        (bounded) for this process's part of the merged multi-host report."""
        try:
            self._at_exit()
        finally:
            if self._pod is not None:
                self._pod.join(pod.gather_timeout_s() + 60.0)

    def _at_exit(self) -> None:
        try:
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                if self.phase == CAPTURING:
                    if self.settings.steps is not None:
                        first, end = self._first, self._end
                        what = f"ended during the capture: {len(self.steps_seen)} of {end - first} steps seen"
                    else:
                        what = f"ended {time.perf_counter() - self._started:.2f} s into the window"
                    log.warning("run: the program %s; writing what was captured", what)
                    self._finish(f"the program {what}")
                elif self.phase in (CHOOSING, WAITING):
                    self.status = self._why_no_steps()
                elif self.phase in (DELAYED, ARMED):
                    self.status = f"ended before the window opened ({self.settings.delay_s:g} s after the import of JAX)"
            _mark(self.settings.state_dir, f"{os.getpid()}.status", self.status)
        except Exception as exc:
            log.warning("run: could not finish the capture at exit: %r", exc)

    def forked(self) -> None:
        """In a child made by fork() (multiprocessing's default on Linux): no capture of its own, and
        none of the parent's to stop; it never ran the bootstrap, only copied the parent's state."""
        self.phase, self.watching, self._annotation, self._timer = DONE, False, None, None
        self._lock = threading.RLock()  # another thread may have held the parent's at the fork
        self.settings = Settings(run_dir=self.settings.run_dir, steps=self.settings.steps)  # no status files

    def _why_no_steps(self) -> str:
        first = max(self._first, 0)
        ran = [c for c in self.calls if c.count]
        if not ran:
            return "imported JAX; no jitted function ran"
        fn = self.step_fn
        if fn is not None and fn.count > first:
            return (f"ended before steps began: JAX still compiled in step {fn.last_compiled} of {fn.name} "
                    f"({fn.count} calls; steps begin after {self.settings.settle} in a row without compiling)")
        if fn is not None:
            return f"ended before step {first}: the step function {fn.name} ran {fn.count} times"
        top = max(ran, key=lambda c: c.count)
        return f"ended before step {first}: no jitted function ran {first + 1} times (most: {top.name}, {top.count})"


class Counted:
    """A jitted (or pmapped) function that counts its calls; every other attribute is the original's
    (``lower``, ``trace``, ``eval_shape``, ``__wrapped__``, ...), and it binds as a method like it."""

    __slots__ = ("_fn", "_calls", "_tracker", "__weakref__")

    def __init__(self, fn: Any, calls: Calls, tracker: Tracker) -> None:
        self._fn = fn
        self._calls = calls
        self._tracker = tracker

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._tracker.watching:  # steps captured (or a window): one attribute read per call
            return self._fn(*args, **kwargs)
        return self._tracker.dispatch(self._calls, self._fn, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in Counted.__slots__:  # not set yet (copy, unpickling): no endless forwarding
            raise AttributeError(name)
        return getattr(self._fn, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._fn.__doc__

    def __repr__(self) -> str:
        return repr(self._fn)


def _abstract(tree: Any) -> Any:
    """``tree`` with every array replaced by its shape and dtype (no reference to its data kept)."""
    def leaf(x: Any) -> Any:
        if isinstance(x, jax.Array):
            try:  # its sharding too: a sharded step lowers as it ran
                return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding, weak_type=x.weak_type)
            except Exception:
                return jax.ShapeDtypeStruct(x.shape, x.dtype)
        if isinstance(x, np.ndarray):
            return jax.ShapeDtypeStruct(x.shape, x.dtype)
        return x
    try:
        return jax.tree_util.tree_map(leaf, tree)
    except Exception:
        return None


def _describe(c: Calls) -> str:
    flops = f"{c.cost[0]:.3g} FLOPs" if c.cost and c.cost[0] >= 0 else "cost unknown"
    return f"{c.name} {flops}, first call {c.first_s:.3f} s"


def _others(candidates: list[Calls], chosen: Calls) -> str:
    rest = [c for c in candidates if c is not chosen]
    if not rest:
        return "the only function called twice"
    return "others: " + ", ".join(_describe(c) for c in rest[:3]) + (" ..." if len(rest) > 3 else "")


def _backends_ready() -> bool:
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # a JAX without it: wait for the first jitted call
        return False


def _mark(state_dir: Path | None, name: str, text: str) -> None:
    if state_dir is None:
        return
    try:
        (state_dir / name).write_text(text)
    except OSError:
        pass  # the launcher is gone, or its directory: only its summary suffers


def _unmark(state_dir: Path | None, name: str) -> None:
    if state_dir is not None:
        try:
            (state_dir / name).unlink()
        except OSError:
            pass


_tracker: Tracker | None = None  # this process's, once install() ran


def install(env: Mapping[str, str] | None = None) -> Tracker | None:
    """Sets up capture in this process (once): patches ``jax.jit``/``jax.pmap``, arms the window or
    the step count, registers the exit handler. Called by the bootstrap; never raises."""
    global _tracker
    if _tracker is not None:
        return _tracker
    try:
        settings = Settings.from_env(os.environ if env is None else env)
        tracker = Tracker(settings)
        _patch(tracker)
        _mark(settings.state_dir, f"{os.getpid()}.status", tracker.status)
        atexit.register(tracker.at_exit)
        os.register_at_fork(after_in_child=tracker.forked)
        if settings.settle:
            jax.monitoring.register_event_duration_secs_listener(tracker.on_event)
        if settings.steps is None:
            tracker.arm_window()
        _tracker = tracker
        return tracker
    except Exception as exc:
        log.warning("run: capture not set up in this process: %r", exc)
        return None


def _patch(tracker: Tracker) -> None:
    """Replaces the public ``jax.jit`` and ``jax.pmap``; JAX's own modules keep theirs."""
    try:  # JAX's traceback filter hides our frames between the program and its jitted function
        from jax._src import traceback_util
        traceback_util.register_exclusion(__file__)
    except Exception:
        pass  # a JAX without it: tracebacks show one more frame
    for name in ("jit", "pmap"):
        setattr(jax, name, _counting(getattr(jax, name), tracker))


def _counting(make: Callable[..., Any], tracker: Tracker) -> Callable[..., Any]:
    """``make`` (jax.jit or jax.pmap) whose functions count their calls."""

    def counted(*args: Any, **kwargs: Any) -> Any:
        made = make(*args, **kwargs)
        if args or "fun" in kwargs:
            return tracker.wrap(made, args[0] if args else kwargs["fun"])
        return lambda fun: tracker.wrap(made(fun), fun)  # @jax.jit(static_argnames=...): a decorator

    counted.__doc__, counted.__name__, counted.__qualname__ = make.__doc__, make.__name__, make.__name__
    counted.__module__, counted.__wrapped__ = "jax", make  # type: ignore[attr-defined]
    return counted
