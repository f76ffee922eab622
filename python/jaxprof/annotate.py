"""Annotations that name both host time and device ops: a host TraceMe plus a jax.named_scope.

``annotate`` is implemented in C (``jaxprof._core.annotate``) so that it costs next to nothing
when nobody is looking. Entering one asks two questions, each a few nanoseconds in C:

- Is a profiler trace recording? jaxlib's ``TraceMe.is_enabled()`` reads the C++ TraceMe
  recorder's state, so a trace started by ``jax.profiler.start_trace`` directly, by jaxprof, or by
  a remote profiler client is noticed alike. Only then is a host event (the ``TraceMe`` that
  ``jax.profiler.TraceAnnotation`` is) created and entered.
- Is JAX tracing (jit, grad, vmap...)? JAX's current trace is not its ``EvalTrace``. Only then is
  ``jax.named_scope(name)`` entered: it names the ops being traced (HLO ``op_name``) and has no
  effect on eager dispatch. Inside a jitted function this costs at trace time only; the compiled
  function is cached and keeps the names.

Where JAX's private trace state is missing the named scope is always entered; where
``TraceMe.is_enabled`` is missing the host event is always created (both as before this fast
path existed).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar, overload

import jax

from . import _core

F = TypeVar("F", bound=Callable[..., Any])


def _jax_hooks() -> tuple[Any, Any, Any, Any]:
    """(TraceMe type, its is_enabled, JAX's trace state config, EvalTrace); None where missing."""
    traceme: Any = jax.profiler.TraceAnnotation
    try:
        from jax._src.lib import _profiler

        if issubclass(jax.profiler.TraceAnnotation, _profiler.TraceMe):
            traceme = _profiler.TraceMe  # the same event without a Python subclass in between
    except (ImportError, AttributeError):
        pass
    is_enabled = getattr(traceme, "is_enabled", None)
    try:
        from jax._src import core as jax_core

        trace_state, eval_trace = jax_core.trace_state_strong_ref, jax_core.EvalTrace
        trace_state.value  # noqa: B018 - what the C check reads: fail here, not per call
    except (ImportError, AttributeError):
        trace_state = eval_trace = None
    return traceme, is_enabled, trace_state, eval_trace


def _wrap(fn: F, name: str | None, stats: dict[str, Any]) -> F:
    """``fn`` called inside ``annotate(name or its qualified name, **stats)`` (the decorator)."""
    label = name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    wrapper = _core.annotated_function(fn, label, stats)
    functools.update_wrapper(wrapper, fn)
    return wrapper  # type: ignore[no-any-return]


_traceme, _is_enabled, _trace_state, _eval_trace = _jax_hooks()
_core._annotate_setup(_traceme, _is_enabled, jax.named_scope, _trace_state, _eval_trace, _wrap)

#: ``annotate(name=None, **stats)``: context manager and decorator (see ``help(annotate)``).
#:
#: >>> with annotate("data", batch=3): ...
#: >>> @annotate
#: ... def loss(params, x): ...
#: >>> @annotate("update")
#: ... def update(params, grads): ...
annotate = _core.annotate


def scope(name: str, **stats: Any) -> Any:
    """A named region: ``with jaxprof.scope("forward"): ...`` (same as ``annotate(name)``)."""
    return annotate(name, **stats)


@overload
def trace_function(fn: F, name: str | None = None) -> F: ...
@overload
def trace_function(fn: None = None, name: str | None = None) -> Callable[[F], F]: ...


def trace_function(fn: Callable[..., Any] | None = None, name: str | None = None) -> Any:
    """Annotates every call of ``fn`` (named ``name`` or its qualified name); usable as a decorator."""
    if fn is None:
        return lambda f: _wrap(f, name, {})
    return _wrap(fn, name, {})


profile_scope = scope
