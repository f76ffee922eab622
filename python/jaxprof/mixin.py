"""``ProfilingMixin``: profiling for a task or trainer class, driven by its ``ProfilerConfig``."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

import jax
import numpy as np

from .annotate import annotate
from .config import ProfilerConfig
from .profiler import Profiler


class ProfilingMixin:
    """Gives a trainer ``profile_context``, ``should_profile`` and ``profiling_dir``.

    Set ``self.profiling_config`` (a :class:`ProfilerConfig`) in ``__init__``; without it the
    mixin reads ``ProfilerConfig.from_env()`` on first use.

    >>> class Trainer(ProfilingMixin):
    ...     def train(self, state):
    ...         for _ in range(100):
    ...             with self.profile_context(state, name="train_step"):
    ...                 state = self.train_step(state)
    """

    profiling_config: ProfilerConfig | None = None

    @property
    def profiler(self) -> Profiler:
        """The Profiler this object captures with (created from the config on first use)."""
        prof = self.__dict__.get("_jaxprof_profiler")
        if prof is None:
            cfg = self.profiling_config if self.profiling_config is not None else ProfilerConfig.from_env()
            self.profiling_config = cfg
            prof = Profiler.from_config(cfg)
            self.__dict__["_jaxprof_profiler"] = prof
        return prof

    @property
    def profiling_dir(self) -> Path:
        """Where this object's captures are written."""
        return self.profiler.log_dir

    def should_profile(self, step: int) -> bool:
        """True when ``step`` is in a scheduled capture window and profiling is enabled."""
        prof = self.profiler
        return prof.enabled and prof.is_scheduled(int(step))

    @contextlib.contextmanager
    def profile_context(self, state: Any, name: str | None = None) -> Iterator[None]:
        """Wraps one step: captures it when scheduled, and names it ``name`` in the profile.

        ``state`` is the step number or an object with ``num_steps``. A traced value (inside
        ``jit``) is never evaluated: the step number then comes from this object's own counter.
        """
        step = _host_step(state)
        scope = annotate(name) if name else contextlib.nullcontext()
        with self.profiler.step(step), scope:
            yield

    def close_profiler(self) -> None:
        """Stops a running capture (also happens at interpreter exit)."""
        prof = self.__dict__.get("_jaxprof_profiler")
        if prof is not None:
            prof.close()


def _tracer_type() -> type:
    """JAX's Tracer class: public as jax.core.Tracer in older releases, private in newer ones."""
    public = getattr(jax.core, "Tracer", None)
    if isinstance(public, type):
        return public
    from jax._src.core import Tracer

    return Tracer


_TRACER = _tracer_type()


def _host_step(state: Any) -> int | None:
    """The step number as a host int, or None when it is only known as a traced value."""
    value = getattr(state, "num_steps", state)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, _TRACER):
        return None
    if isinstance(value, (jax.Array, np.ndarray)) and np.ndim(value) == 0:
        return int(value)  # concrete scalar: one small device-to-host read
    return None
