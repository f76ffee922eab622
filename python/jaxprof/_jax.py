"""Everything jaxprof needs from ``jax.profiler``, in one place, made safe for a training loop.

Starting or stopping a trace never raises here: failures are logged and reported as ``False``.
"""
from __future__ import annotations

import os
import signal
from typing import Any, Callable, Mapping

import jax

from ._log import log

from .config import check_profile_options


#: advanced_configuration keys that killed the traced process where we tried them: dropped with a
#: warning unless JAXPROF_ALLOW_CRASHING_OPTIONS=1, since profiling must never end a training run.
CRASHING_OPTIONS = {
    "gpu_enable_cupti_activity_graph_trace": "a segmentation fault in 2 of 2 captures (JAX 0.11.2, H200; "
                                             "tests/data/gpu/README.md)",
}


def _without_crashing(advanced: Mapping[str, Any]) -> dict[str, Any]:
    kept = dict(advanced)
    if os.environ.get("JAXPROF_ALLOW_CRASHING_OPTIONS") == "1":
        return kept
    for key, seen in CRASHING_OPTIONS.items():
        if kept.get(key):
            log.warning("advanced_configuration %s dropped: it caused %s; set JAXPROF_ALLOW_CRASHING_OPTIONS=1 "
                        "to pass it anyway", key, seen)
            del kept[key]
    return kept


def make_options(
    *,
    device_trace: bool = True,
    python_trace: bool = False,
    host_trace_level: int = 2,
    extra: Mapping[str, Any] | None = None,
) -> Any | None:
    """Builds a ``jax.profiler.ProfileOptions`` (JAX >= 0.6.1); ``None`` where JAX lacks it.

    Fields the installed JAX does not expose are skipped with a warning when the caller asked
    for a non-default value, so a setting is never silently dead.
    """
    options_type = getattr(jax.profiler, "ProfileOptions", None)
    if options_type is None:
        if not device_trace or python_trace or host_trace_level != 2 or extra:
            log.warning("this JAX (%s) has no ProfileOptions; profiling with its defaults", jax.__version__)
        return None
    options = options_type()
    wanted: dict[str, Any] = {
        "host_tracer_level": int(host_trace_level),
        "device_tracer_level": 1 if device_trace else 0,
        "python_tracer_level": 1 if python_trace else 0,
    }
    wanted.update(check_profile_options(extra or {}))
    if wanted.get("advanced_configuration"):
        wanted["advanced_configuration"] = _without_crashing(wanted["advanced_configuration"])
    for field, value in wanted.items():
        if field == "advanced_configuration" and not value:
            continue  # JAX's default: nothing to set (and nothing to warn about on an older JAX)
        if hasattr(type(options), field):  # the type's: setting an unknown name on the instance would stick silently
            setattr(options, field, dict(value) if field == "advanced_configuration" else value)
        elif field == "device_tracer_level" and value == 1:
            pass  # device tracing is on by default where the knob is missing
        else:
            log.warning("this JAX (%s) cannot set ProfileOptions.%s=%r; ignored", jax.__version__, field, value)
    return options


def options_from(value: Any) -> Any | None:
    """Accepts a ready ``ProfileOptions``, a dict of its fields, or ``None``."""
    if value is None or not isinstance(value, Mapping):
        return value
    return make_options(extra=check_profile_options(value))


def _profile_state() -> Any | None:
    """JAX's private module state of the active trace, if this JAX has the one we know."""
    try:
        from jax._src import profiler as jax_profiler
    except ImportError:
        return None
    state = getattr(jax_profiler, "_profile_state", None)
    return state if state is not None and hasattr(state, "profile_session") else None


def trace_active() -> bool:
    """True when some trace (ours or the user's own ``start_trace``) is running in this process."""
    state = _profile_state()
    return bool(state is not None and state.profile_session is not None)


def sync_devices() -> None:
    """Waits for all outstanding work on every local device.

    Uses ``Device.synchronize_all_activity()`` where the backend has it, else blocks on every live
    array (which covers all work whose results are still referenced), then the effects barrier.
    """
    try:
        devices = jax.local_devices()
        if all(hasattr(d, "synchronize_all_activity") for d in devices):
            for d in devices:
                d.synchronize_all_activity()
            return
        jax.block_until_ready(jax.live_arrays())
        jax.effects_barrier()
    except Exception as exc:  # a failed sync must not stop the training loop
        log.warning("could not wait for device work: %s", exc)


def block_tree(tree: Any) -> Any:
    """Blocks on every array leaf of a pytree; non-array leaves pass through."""
    return jax.block_until_ready(tree)


def start(log_dir: str | os.PathLike[str], options: Any | None) -> bool:
    """Starts a trace writing under ``log_dir``. False (with one warning) when it cannot."""
    if trace_active():
        log.warning("another profiler trace is already active in this process; capture into %s skipped", log_dir)
        return False
    try:
        os.makedirs(log_dir, exist_ok=True)
        if not os.access(log_dir, os.W_OK):
            raise PermissionError(f"{log_dir} is not writable")
        kwargs: dict[str, Any] = {}
        if options is not None:
            kwargs["profiler_options"] = options
        jax.profiler.start_trace(str(log_dir), **kwargs)
        return True
    except Exception as exc:
        log.warning("could not start profiler trace in %s: %s", log_dir, exc)
        return False


def stop() -> bool:
    """Stops the active trace and writes its files. False (with one warning) on failure.

    When writing fails (disk full, directory removed) JAX keeps its session marked active and
    every later ``start_trace`` would raise; we clear that state so profiling can go on.
    """
    try:
        jax.profiler.stop_trace()
        return True
    except Exception as exc:
        log.warning("could not stop profiler trace / write its files: %s", exc)
        _reset_state()
        return False


def finish_interrupted_stop(written: Callable[[], bool]) -> bool:
    """After a KeyboardInterrupt inside ``jax.profiler.stop_trace``: leaves no session running.

    ``written()`` says whether this capture's files are on disk. Interrupted before the export, the
    session still runs and is stopped now. Interrupted after it (files written, JAX's state not yet
    cleared), stopping again would overwrite them with an empty capture, so only the state is cleared.
    """
    if not trace_active():
        return written()
    if not written():
        return stop()
    _reset_state()
    return True


class sigint_held:
    """Holds back Ctrl-C (SIGINT) over a few lines that must run whole, then delivers it.

    Starting or stopping a capture changes two states, JAX's session and the caller's record of
    it; a KeyboardInterrupt between the two (Python raises it between any two bytecodes, even in
    an ``except`` or ``finally`` that was meant to repair things) leaves a trace running that
    nothing will stop. Inside this block SIGINT only records itself; on leaving it, the program's
    own handler is put back and the signal is raised again, so it acts as the program would have
    it (KeyboardInterrupt, a custom handler, ignored) a few lines later. Blocking the signal with
    ``pthread_sigmask`` would not do: the kernel hands a process-wide SIGINT to any of JAX's
    threads that does not block it, and Python still raises it in the main thread.

    Python runs signal handlers in the main thread only, so elsewhere (and where SIGINT is ignored
    or has a C handler we could not put back) this does nothing. ``on_interrupt`` runs, still
    held, when a SIGINT came in: an ``__enter__`` whose block will not run undoes its start there.
    Keep the block short: it holds back the user's Ctrl-C while it runs.
    """

    __slots__ = ("_saved", "_pending", "_on_interrupt")

    def __init__(self, on_interrupt: Callable[[], None] | None = None) -> None:
        self._saved: Any = None
        self._pending = False
        self._on_interrupt = on_interrupt

    def __enter__(self) -> "sigint_held":
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, None):
            return self
        try:
            self._saved = signal.signal(signal.SIGINT, self._hold)
        except ValueError:  # not the main thread (of the main interpreter): no KeyboardInterrupt here
            self._saved = None
        return self

    def _hold(self, _signum: int, _frame: Any) -> None:
        self._pending = True

    @property
    def pending(self) -> bool:
        """True once a SIGINT has been held back."""
        return self._pending

    def __exit__(self, *exc: Any) -> None:
        if self._saved is None:
            return
        try:
            self._undo_if_interrupted()
        finally:
            saved, self._saved = self._saved, None
            signal.signal(signal.SIGINT, saved)  # runs _hold first for a SIGINT that just came in
        if self._pending:
            self._undo_if_interrupted()  # one that came in during the line above (not held: rare)
            signal.raise_signal(signal.SIGINT)

    def _undo_if_interrupted(self) -> None:
        if self._pending and self._on_interrupt is not None:
            undo, self._on_interrupt = self._on_interrupt, None
            undo()


def _reset_state() -> None:
    state = _profile_state()
    if state is not None and state.profile_session is not None and hasattr(state, "reset"):
        state.reset()


def start_in_memory(options: Any | None) -> bool:
    """Starts a profiler session whose capture stays in memory (``stop_in_memory`` returns it).
    The session is JAX's own, registered where ``start_trace`` registers its: a ``start_trace``
    meanwhile is refused as for any running trace. False (with one warning) when it cannot start."""
    state = _profile_state()
    if trace_active():
        log.warning("another profiler trace is already active in this process; in-memory capture skipped")
        return False
    try:
        from jax._src import xla_bridge
        from jax._src.lib import _profiler

        if state is None:
            raise RuntimeError(f"this JAX ({jax.__version__}) keeps no profiler state jaxprof knows")
        xla_bridge.get_backend()  # backends first, as start_trace does (a TPU tracer needs libtpu up)
        options = options if options is not None else make_options()
        with state.lock:
            if state.profile_session is not None:
                raise RuntimeError("a trace started meanwhile")
            state.profile_session = _profiler.ProfilerSession(options) if options is not None else _profiler.ProfilerSession()
        return True
    except Exception as exc:
        log.warning("could not start an in-memory profiler session: %s", exc)
        return False


def stop_in_memory() -> bytes | None:
    """Stops the session ``start_in_memory`` started and returns its serialized XSpace, writing no
    file. None (with one warning) when stopping fails; the session is cleared either way."""
    state = _profile_state()
    session = state.profile_session if state is not None else None
    if session is None:
        return None
    try:
        return bytes(session.stop())
    except Exception as exc:
        log.warning("could not stop the in-memory profiler session: %s", exc)
        return None
    finally:
        _reset_state()
