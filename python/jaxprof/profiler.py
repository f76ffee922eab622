"""``jaxprof.Profiler``: step-scheduled, periodic and on-demand capture inside a training loop.

The schedule is a pure function of the step number (``is_scheduled``), so every process of a job
agrees on it; the state machine around it (idle -> capturing -> idle) lives in ``begin_step`` and
``end_step``. Nothing here raises into the training loop except the caller's own exceptions.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import jax

from . import _isolated, _jax, multihost, pod
from ._log import log
from .config import ProfilerConfig, check_profiler_args, report_mode
from .export import export_perfetto
from .runs import latest_run

@dataclass
class Capture:
    """One finished capture."""

    step_dir: Path                 #: ``log_dir/step_XXXXXXXX`` (first captured step)
    run_dir: Path | None           #: the run directory JAX wrote, None when writing failed
    steps: list[int] = field(default_factory=list)  #: step numbers captured, in order
    wall_s: float = 0.0            #: wall time from the first step's start to the last step's end
    reason: str = ""               #: why it ended: "steps", "duration", "exception", "close"
    bytes: int = 0                 #: size of the files under ``step_dir`` when it ended

    @property
    def mean_step_ms(self) -> float:
        return 1e3 * self.wall_s / len(self.steps) if self.steps else 0.0


@dataclass
class _Active:
    """The capture in progress."""

    step_dir: Path
    jax_dir: Path              # where JAX writes: step_dir, or a private directory in it (multi-process)
    target_steps: int | None   # None: bounded by duration only
    deadline: float | None     # time.perf_counter() value after which it ends
    started: float
    steps: list[int] = field(default_factory=list)


class Profiler:
    """Captures chosen training steps into ``log_dir/step_XXXXXXXX/`` in TensorBoard layout.

    >>> prof = jaxprof.Profiler("/tmp/prof", start_step=10, num_steps=5)
    >>> for i in range(100):
    ...     with prof.step(i):
    ...         state = train_step(state, batch)

    Schedule: captures begin at ``start_step`` and, with ``every_n_steps=K``, at ``start_step + jK``
    for ``j < max_profiles``. Each capture spans ``num_steps`` steps or ``duration_ms`` of wall time
    (checked at step boundaries), whichever ends first. The first ``skip_first`` steps this object
    sees are never captured. ``capture_async()`` arms an extra capture at the next step.
    ``max_total_bytes`` caps the disk space of all captures: no capture starts once the next one
    (estimated as the largest so far) could pass it.

    In a ``jax.distributed`` job every process captures the same steps (the schedule counts steps,
    not time) into one run directory per capture, ``step_XXXXXXXX/plugins/profile/<run>/``, named
    by process 0 for all, each process writing ``<host>-p<process_index>.xplane.pb``.
    ``processes=[0, 3]`` captures on those process indices only.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        *,
        start_step: int = 1,
        num_steps: int | None = None,
        every_n_steps: int = 0,
        max_profiles: int | None = None,
        duration_ms: float = 0,
        skip_first: int = 0,
        block_on_edges: bool = True,
        device_trace: bool = True,
        python_trace: bool = False,
        host_trace_level: int = 2,
        perfetto: bool = False,
        enabled: bool = True,
        step_name: str = "train",
        report: bool | str = True,
        max_total_bytes: int | None = None,
        processes: Sequence[int] | None = None,
        report_timeout_s: float | None = None,
        enable_hlo_proto: bool = True,
        include_dataset_ops: bool = True,
        raise_error_on_start_failure: bool = False,
        start_timestamp_ns: int = 0,
        trace_duration_ms: int = 0,
        advanced_configuration: Mapping[str, Any] | None = None,
    ) -> None:
        if num_steps is None:
            num_steps = 0 if duration_ms > 0 else 1
        check_profiler_args(dict(
            start_step=start_step, num_steps=num_steps, every_n_steps=every_n_steps, skip_first=skip_first,
            host_trace_level=host_trace_level, max_profiles=max_profiles, max_total_bytes=max_total_bytes,
            duration_ms=duration_ms, report=report, processes=processes, report_timeout_s=report_timeout_s,
            enable_hlo_proto=enable_hlo_proto, include_dataset_ops=include_dataset_ops,
            raise_error_on_start_failure=raise_error_on_start_failure, start_timestamp_ns=start_timestamp_ns,
            trace_duration_ms=trace_duration_ms, advanced_configuration=advanced_configuration or {}))

        self.log_dir = Path(log_dir)
        self.start_step = start_step
        self.num_steps = num_steps
        self.every_n_steps = every_n_steps
        self.max_profiles = 1 if not every_n_steps else max_profiles
        self.duration_ms = float(duration_ms)
        self.skip_first = skip_first
        self.block_on_edges = block_on_edges
        self.perfetto = perfetto
        self.enabled = enabled
        self.step_name = step_name
        self.report = report_mode(report)
        self.report_timeout_s = report_timeout_s  # None: $JAXPROF_ANALYSIS_TIMEOUT, else 300 s
        self.max_total_bytes = max_total_bytes
        self.processes = tuple(sorted(set(processes))) if processes is not None else None
        self._proc: multihost.Process | None = None  # asked at the first step: jax.distributed may start late
        self._run_name: str | None = None     # the run name all processes use (multi-process)
        self._instance = _next_instance(self.log_dir)
        self._over_disk_budget = False       # set (with one warning) once max_total_bytes stops captures
        self._reports: list[threading.Thread] = []  # background analyses of finished captures
        # the other ProfileOptions fields, where they differ from JAX's defaults (so that an older
        # JAX without one warns only when it was asked for)
        chosen = dict(enable_hlo_proto=enable_hlo_proto, include_dataset_ops=include_dataset_ops,
                      raise_error_on_start_failure=raise_error_on_start_failure,
                      start_timestamp_ns=start_timestamp_ns, duration_ms=trace_duration_ms,
                      advanced_configuration=dict(advanced_configuration or {}))
        defaults = dict(enable_hlo_proto=True, include_dataset_ops=True, raise_error_on_start_failure=False,
                        start_timestamp_ns=0, duration_ms=0, advanced_configuration={})
        self.options = _jax.make_options(
            device_trace=device_trace, python_trace=python_trace, host_trace_level=host_trace_level,
            extra={k: v for k, v in chosen.items() if v != defaults[k]},
        )
        self.captures: list[Capture] = []  #: finished captures, in order
        self._active: _Active | None = None
        self._annotation: Any | None = None
        self._step: int | None = None        # step number between begin_step and end_step
        self._next_step = 0                  # used when begin_step() gets no number
        self._seen = 0                       # steps begun so far
        self._scheduled = 0                  # scheduled captures started so far
        self._async_steps: int | None = None # armed by capture_async
        self._lock = threading.Lock()        # guards _async_steps (capture_async may come from any thread)
        ref = weakref.ref(self)
        self._atexit = lambda: (p := ref()) is not None and p.close()
        atexit.register(self._atexit)

    @classmethod
    def from_config(cls, cfg: ProfilerConfig, **overrides: Any) -> "Profiler":
        """A Profiler honouring every field of a :class:`ProfilerConfig` (disabled if it says so)."""
        cfg.validate()
        kwargs = cfg.profiler_kwargs()
        kwargs.update(overrides)
        return cls(cfg.profiling_dir, **kwargs)

    # ---- schedule ---------------------------------------------------------------------------

    def is_scheduled(self, step: int) -> bool:
        """True when ``step`` falls in one of the first ``max_profiles`` capture windows.

        This is the plan; at run time ``skip_first`` and failed starts can move captures to later
        windows, since ``max_profiles`` counts captures taken, not windows passed.
        """
        index = self._window_index(step, self.num_steps or 1)
        return index is not None and (self.max_profiles is None or index < self.max_profiles)

    def _window_index(self, step: int, length: int) -> int | None:
        """Which capture window (0, 1, ...) ``step`` is in, ``None`` when in none."""
        offset = step - self.start_step
        if offset < 0:
            return None
        if not self.every_n_steps:
            return 0 if offset < length else None
        index, within = divmod(offset, self.every_n_steps)
        return index if within < length else None

    @property
    def capturing(self) -> bool:
        """True while a capture is running."""
        return self._active is not None

    # ---- the step protocol ------------------------------------------------------------------

    def begin_step(self, step: int | None = None) -> None:
        """Marks the start of a training step (numbered ``step``, else counted from 0)."""
        if step is None:
            step = self._next_step
        self._next_step = step + 1
        self._step = step
        self._seen += 1
        if not self.enabled:
            return
        try:
            if self._active is None:
                self._maybe_start(step)
            if self._active is not None:
                try:
                    self._annotation = jax.profiler.StepTraceAnnotation(self.step_name, step_num=step)
                    self._annotation.__enter__()
                except Exception as exc:  # never let annotation trouble reach the loop
                    log.warning("could not annotate step %d: %s", step, exc)
                    self._annotation = None
        except BaseException:
            # A KeyboardInterrupt (Ctrl-C) landing here skips the step's body and its end_step:
            # end the capture now so no trace is left running that no later step would stop.
            if self._active is not None:
                self._end_step(failed=True)
            raise

    def end_step(self) -> None:
        """Marks the end of the step begun by :meth:`begin_step`; may end the capture."""
        self._end_step(failed=False)

    def step(self, step: int | None = None) -> "_StepScope":
        """Context manager around one training step: ``with prof.step(i): ...``."""
        return _StepScope(self, step)

    def capture_async(self, num_steps: int | None = None) -> bool:
        """Arms a capture of ``num_steps`` steps (default: the configured length) at the next step.

        Safe to call from any thread. Returns False (and logs) when a capture is already running
        or armed, or when ``max_total_bytes`` has stopped capturing.
        """
        if self._over_disk_budget:
            log.info("capture_async ignored: the disk budget (max_total_bytes) is spent")
            return False
        with self._lock:
            if self._active is not None or self._async_steps is not None:
                log.info("capture_async ignored: a capture is already running or armed")
                return False
            self._async_steps = num_steps if num_steps is not None else self.num_steps
        return True

    def close(self) -> None:
        """Stops a running capture (its files are written) and waits for pending short reports.
        Idempotent; also runs at exit."""
        if self._active is not None:
            self._close_annotation()
            self._stop("close")
        self.wait_for_reports()
        atexit.unregister(self._atexit)

    def __enter__(self) -> "Profiler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- internals --------------------------------------------------------------------------

    def _process(self) -> multihost.Process:
        if self._proc is None:
            self._proc = multihost.this_process()
        return self._proc

    def _captures_here(self) -> bool:
        return self.processes is None or self._process().index in self.processes

    def _maybe_start(self, step: int) -> None:
        with self._lock:
            armed, self._async_steps = self._async_steps, None
        proc = self._process()
        if proc.multi and self._run_name is None and self._window_index(step, 1) is not None:
            # every process, capturing or not, reaches the first window: process 0 names the run there
            self._run_name = multihost.agree_run_name(self.log_dir, self._instance, proc)
        if armed is not None:
            if self._disk_budget_left():
                self._start(step, armed)
        elif self._seen > self.skip_first and self._window_index(step, 1) is not None and self._budget_left() \
                and self._captures_here() and self._disk_budget_left():
            self._start(step, self.num_steps, scheduled=True)

    def _budget_left(self) -> bool:
        # max_profiles caps captures taken, which also stops step numbers that repeat (per-epoch
        # counters) from capturing again.
        return self.max_profiles is None or self._scheduled < self.max_profiles

    def _disk_budget_left(self) -> bool:
        """False (with one warning, the first time) once the next capture could pass max_total_bytes.

        Used is the size of the files under this object's capture directories now (so perfetto
        exports written since count too); the next capture is estimated as the largest so far.
        Checked only when a capture would start: a running capture always finishes.
        """
        if self.max_total_bytes is None:
            return True
        if self._over_disk_budget:
            return False
        # a multi-process step directory holds the other processes' files too: count this one's
        sizes = [c.bytes if self._process().multi else _dir_bytes(c.step_dir) for c in self.captures
                 if c.run_dir is not None]
        used, estimate = sum(sizes), max(sizes, default=0)
        if used + estimate <= self.max_total_bytes:
            return True
        self._over_disk_budget = True
        log.warning(
            "disk budget: captures so far use %d bytes and the next may add ~%d, over max_total_bytes=%d; "
            "no further captures (%d taken)", used, estimate, self.max_total_bytes, len(sizes),
        )
        return False

    def _start(self, step: int, num_steps: int, scheduled: bool = False) -> bool:
        proc = self._process()
        if _jax.trace_active():  # say so (one warning) before making any directory
            return _jax.start(self.log_dir, self.options)
        # The directory JAX writes into is this capture's own (mkdir is the claim: step_X-2 when
        # another process took step_X), so a failed capture removes only what it wrote.
        try:
            if proc.multi:  # the processes share the step directory; JAX writes into a private one in it
                step_dir = self.log_dir / f"step_{step:08d}"
                jax_dir = multihost.new_dir(step_dir / f".jaxprof-p{proc.index}-{os.getpid()}")
            else:
                step_dir = jax_dir = multihost.new_dir(self.log_dir / f"step_{step:08d}")
        except OSError as exc:
            log.warning("could not start profiler trace in %s: %s", self.log_dir, exc)
            return False
        if self.block_on_edges:
            _jax.sync_devices()  # earlier steps' work stays out of the capture
        outside = _jax.trace_active()
        # JAX's session and self._active change together: a Ctrl-C waits until both have.
        with _jax.sigint_held():
            try:
                if not _jax.start(jax_dir, self.options):
                    _remove_empty(jax_dir)
                    return False
                now = time.perf_counter()
                deadline = now + self.duration_ms / 1e3 if self.duration_ms > 0 else None
                self._active = _Active(step_dir, jax_dir, num_steps or None, deadline, now)
                if scheduled:
                    self._scheduled += 1
            except BaseException:
                # Raised by code (signals wait): stop the trace JAX began, else nothing would end it.
                if self._active is None and not outside and _jax.trace_active():
                    _jax.stop()
                raise
        return True

    def _end_step(self, failed: bool) -> None:
        self._close_annotation()
        active = self._active
        if active is None or self._step is None:
            self._step = None
            return
        active.steps.append(self._step)
        self._step = None
        if failed:
            self._stop("exception")
        elif active.target_steps is not None and len(active.steps) >= active.target_steps:
            self._stop("steps")
        elif active.deadline is not None and time.perf_counter() >= active.deadline:
            self._stop("duration")

    def _close_annotation(self) -> None:
        if self._annotation is not None:
            annotation, self._annotation = self._annotation, None
            try:
                annotation.__exit__(None, None, None)
            except Exception as exc:
                log.warning("could not close step annotation: %s", exc)

    def _stop(self, reason: str) -> None:
        active = self._active
        if active is None:
            return
        interrupt: BaseException | None = None  # a Ctrl-C while stopping: re-raised once the trace is stopped
        if self.block_on_edges:  # (a Ctrl-C before the hold below leaves the capture running, and recorded)
            try:
                _jax.sync_devices()  # the last step's device work belongs to the capture
            except BaseException as exc:
                interrupt = exc
        # The trace stops, self._active clears and the capture is recorded together: a Ctrl-C
        # waits until all have (the export itself runs in C++, which never saw signals anyway).
        with _jax.sigint_held():
            self._active = None
            wall = time.perf_counter() - active.started
            try:
                written = _jax.stop()
            except BaseException as exc:  # raised by code (signals wait)
                interrupt = interrupt or exc
                written = _jax.finish_interrupted_stop(lambda: latest_run(active.jax_dir) is not None)
            if not written:
                # A failed write (disk full, EFBIG, directory gone) can leave a truncated xplane under
                # its final name; the directory is this capture's own (made by multihost.new_dir: the
                # step directory, or this process's private one in it), so remove it.
                _remove_partial(active.jax_dir)
            run = latest_run(active.jax_dir) if written else None
            run_dir, size = (run.path, _dir_bytes(active.step_dir)) if run else (None, 0)
            own_file = None  # this process's xplane in a multi-process run
            if run is not None and active.jax_dir != active.step_dir:
                run_dir, size, own_file = self._file_shared(active, run.path)
            capture = Capture(active.step_dir, run_dir, active.steps, wall, reason, size)
            self.captures.append(capture)
        if interrupt is not None:
            raise interrupt
        if capture.run_dir is None:
            return
        first, last = (capture.steps[0], capture.steps[-1]) if capture.steps else (None, None)
        ended = "" if reason == "steps" else f", ended by {reason}"
        line = f"captured steps {first}-{last} ({len(capture.steps)} steps, mean {capture.mean_step_ms:.2f} ms/step{ended})"
        proc = self._process()
        expected = len(self.processes) if self.processes is not None else proc.count
        reporter = self.processes[0] if self.processes else 0  # one process reports a multi-process run
        limits = _isolated.Limits.from_env(self.report_timeout_s)
        if proc.multi and self.report != "off" and own_file is not None and multihost._kv_client() is not None:
            # every process summarises its own file; the reporter merges the summaries (pod.py)
            pc = pod.PodCapture(pod.capture_key(self.log_dir, self._instance, len(self.captures)), own_file,
                                capture.run_dir, proc.index, self.processes or tuple(range(proc.count)), reporter)
            if proc.index != reporter:  # its own line; the reporter's carries the merged report
                log.info("%s -> %s", line, capture.run_dir)
            pod.hold_shutdown_for(self._background(pod.share_and_report, pc, line, self.report == "full", limits))
            if self.perfetto and proc.index == reporter:
                self._background(_after_capture, capture.run_dir, line, True, "off", expected, limits)
            return
        report = self.report if not proc.multi or proc.index == reporter else "off"
        if report == "off":
            log.info("%s -> %s", line, capture.run_dir)
        if report != "off" or (self.perfetto and (not proc.multi or proc.index == reporter)):
            # Export and analysis of a big capture take seconds: never on the training thread.
            self._background(_after_capture, capture.run_dir, line, self.perfetto, report,
                             expected if proc.multi else 1, limits)

    def _background(self, fn: Any, *args: Any) -> threading.Thread:
        """Runs fn(*args) on a daemon thread once the previous capture's analysis is over: lines in
        capture order, one analysis child at a time."""
        previous = next((t for t in reversed(self._reports) if t.is_alive()), None)
        thread = threading.Thread(target=_after_previous, args=(previous, fn, *args), daemon=True, name="jaxprof-report")
        thread.start()
        self._reports.append(thread)
        return thread

    def _file_shared(self, active: _Active, written: Path) -> tuple[Path | None, int, Path | None]:
        """Moves this process's files from its private directory into the run all processes share;
        returns the run directory, the bytes and this process's xplane there."""
        run_dir = active.step_dir / "plugins" / "profile" / (self._run_name or written.name)
        try:
            size, xplane = multihost.file_capture(written, run_dir, self._process().index)
        except OSError as exc:
            log.warning("could not move the capture into %s: %s; it stays in %s", run_dir, exc, written)
            return written, _dir_bytes(active.jax_dir), None
        multihost.remove_private(active.jax_dir)
        return run_dir, size, xplane

    def wait_for_reports(self, timeout: float | None = None) -> None:
        """Waits (up to ``timeout`` s each; default 60, plus the gathering's limit in a multi-process
        job) for the reports of finished captures."""
        if timeout is None:
            timeout = 60.0 + (pod.gather_timeout_s() if self._proc is not None and self._proc.multi else 0.0)
        for thread in self._reports:
            thread.join(timeout)
        self._reports = [t for t in self._reports if t.is_alive()]


class _StepScope:
    """What ``Profiler.step()`` returns: a slotted class, not ``@contextmanager`` (whose generator
    costs ~1 us per step). Begins the step on enter; an exception ends it as failed and propagates."""

    __slots__ = ("_profiler", "_step")

    def __init__(self, profiler: Profiler, step: int | None) -> None:
        self._profiler = profiler
        self._step = step

    def __enter__(self) -> None:
        self._profiler.begin_step(self._step)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._profiler._end_step(failed=exc_type is not None)


def _after_previous(previous: threading.Thread | None, fn: Any, *args: Any) -> None:
    if previous is not None:
        previous.join()
    fn(*args)


def _after_capture(run_dir: Path, line: str, perfetto: bool, report: str, expected_files: int = 1,
                   limits: _isolated.Limits | None = None) -> None:
    if expected_files > 1:  # the other processes of the job may still be writing theirs
        have = multihost.wait_for_files(run_dir, expected_files, multihost.AGREE_TIMEOUT_S)
        if have < expected_files:
            log.warning("%s holds %d of the %d processes' files; analysing what is there", run_dir, have, expected_files)
    if perfetto:
        export_perfetto(run_dir, limits)
    if report != "off":
        _log_report(run_dir, line, full=report == "full", limits=limits)


def _log_report(run_dir: Path, line: str, full: bool, limits: _isolated.Limits | None = None) -> None:
    """Logs the capture's line with its top finding (and the report when ``full``). The analysis
    runs in a child process (``_isolated``): its crash, abort, memory exhaustion or hang is one
    warning here, and training goes on."""
    limits = limits or _isolated.Limits.from_env()
    outcome = _isolated.run(["findings", run_dir, "--json"], limits)
    findings: list = []
    if outcome.ok:
        try:
            findings = json.loads(outcome.stdout)["findings"]
        except (ValueError, KeyError, TypeError) as exc:
            outcome = _isolated.Outcome(outcome.stdout, outcome.stderr, outcome.returncode,
                                        f"gave unreadable findings ({exc})")
    if outcome.ok and full:
        outcome = _isolated.run(["report", run_dir, "--top", "5"], limits)
    if not outcome.ok:
        log.info("%s -> %s", line, run_dir)
        _isolated.warn(run_dir, outcome)
        return
    text = outcome.stdout if full else ""
    top = f"top finding [{findings[0]['severity']}] {findings[0]['title']}" if findings else "no finding"
    log.info("%s, %s -> %s%s", line, top, run_dir, "\n" + text.rstrip() if full else "")


_instances: dict[str, int] = {}  # Profilers created per log directory in this process
_instances_lock = threading.Lock()


def _next_instance(log_dir: Path) -> int:
    """0 for the first Profiler on log_dir in this process, then 1, ...: the processes of a job
    create theirs in the same order, so the number names the same Profiler in each of them."""
    key = os.path.abspath(log_dir)
    with _instances_lock:
        n = _instances.get(key, 0)
        _instances[key] = n + 1
    return n


def _remove_partial(step_dir: Path) -> None:
    if step_dir.is_dir() and not step_dir.is_symlink():
        shutil.rmtree(step_dir, ignore_errors=True)
        if not step_dir.exists():
            log.info("removed the incomplete capture in %s", step_dir)


def _dir_bytes(path: Path) -> int:
    """Total size of the regular files under ``path`` (0 when it is gone)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _remove_empty(path: Path) -> None:
    """Removes a directory this capture made, when nothing was written into it."""
    try:
        path.rmdir()
    except OSError:
        pass
