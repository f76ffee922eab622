"""Annotations that name both host time and device ops: a TraceAnnotation plus a jax.named_scope."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar, overload

import jax

F = TypeVar("F", bound=Callable[..., Any])


def _make_tracing_check() -> Callable[[], bool]:
    """A cheap "is JAX tracing right now?" test.

    A named scope only changes anything while JAX traces (jit, grad, vmap...): eager dispatch does
    not use the name stack. Entering ``jax.named_scope`` costs ~1.4 us, so outside tracing we skip
    it. This reads JAX's private trace context; where that is missing we always enter the scope.
    """
    try:
        from jax._src import core as jax_core

        trace_ctx, eval_trace = jax_core.trace_ctx, jax_core.EvalTrace
        type(trace_ctx.trace)
    except (ImportError, AttributeError):
        return lambda: True
    return lambda: not isinstance(trace_ctx.trace, eval_trace)


_tracing = _make_tracing_check()


class annotate:
    """Marks a region or function in the profile, on the host timeline and in device op names.

    As a context manager or decorator it emits ``jax.profiler.TraceAnnotation(name, **stats)`` (a
    host event with ``stats`` as arguments) and enters ``jax.named_scope(name)``, so XLA ops traced
    inside a jitted function carry ``name`` in their HLO ``op_name`` (``jit(step)/name/dot_general``)
    and device time can be attributed to it.

    >>> with annotate("data", batch=3): ...
    >>> @annotate
    ... def loss(params, x): ...
    >>> @annotate("update")
    ... def update(params, grads): ...

    A decorated function keeps its name, docstring, signature and ``__wrapped__``. Decorating a
    function that is itself ``jax.jit``-ed names its host dispatch; its device ops carry the scope
    when it is called from inside another jitted function.
    """

    __slots__ = ("name", "stats", "_entered")

    def __init__(self, name: str | Callable[..., Any] | None = None, **stats: Any) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError("annotate(name): name must be a string (use @annotate or @annotate('name'))")
        self.name = name
        self.stats = stats
        self._entered: list[tuple[Any, Any]] = []  # (annotation, scope) per nested __enter__

    # ``@annotate`` without parentheses: the class receives the function as ``name``.
    def __new__(cls, name: Any = None, **stats: Any) -> Any:
        if callable(name) and not isinstance(name, str):
            return _wrap(name, None, stats)
        return super().__new__(cls)

    def __call__(self, fn: F) -> F:
        return _wrap(fn, self.name, self.stats)

    def __enter__(self) -> "annotate":
        if self.name is None:
            raise TypeError("annotate() used as a context manager needs a name")
        annotation = jax.profiler.TraceAnnotation(self.name, **self.stats)
        annotation.__enter__()
        named = jax.named_scope(self.name) if _tracing() else None
        if named is not None:
            try:
                named.__enter__()
            except BaseException:
                annotation.__exit__(None, None, None)
                raise
        self._entered.append((annotation, named))
        return self

    def __exit__(self, *exc: Any) -> None:
        annotation, named = self._entered.pop()
        try:
            if named is not None:
                named.__exit__(*exc)
        finally:
            annotation.__exit__(*exc)


def _wrap(fn: F, name: str | None, stats: dict[str, Any]) -> F:
    label = name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with jax.profiler.TraceAnnotation(label, **stats):
            if not _tracing():
                return fn(*args, **kwargs)
            with jax.named_scope(label):
                return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def scope(name: str, **stats: Any) -> annotate:
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
