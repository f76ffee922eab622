"""annotate/scope/trace_function: host events and HLO op_name scopes."""
from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp

import jaxprof

from conftest import only_xplane, read_xplane


def compiled_text(fn, *args) -> str:
    return fn.lower(*args).compile().as_text()


def test_scope_inside_jit_names_hlo_ops():
    @jax.jit
    def step(x):
        with jaxprof.annotate("attention_block"):
            y = jnp.tanh(x @ x)
        with jaxprof.scope("head"):
            return y.sum()

    text = compiled_text(step, jnp.ones((8, 8)))
    assert 'op_name="jit(step)/attention_block/' in text
    assert 'op_name="jit(step)/head/' in text


def test_decorated_function_called_in_jit_names_ops():
    @jaxprof.annotate
    def mlp_layer(x):
        return jax.nn.relu(x @ x)

    @jaxprof.trace_function
    def norm(x):
        return x / jnp.linalg.norm(x)

    @jax.jit
    def model(x):
        return norm(mlp_layer(x))

    text = compiled_text(model, jnp.ones((4, 4)))
    assert "mlp_layer/" in text and "norm/" in text


def test_decorator_preserves_function_identity():
    @jaxprof.annotate("custom", layer=3)
    def f(a: int, b: float = 2.0) -> float:
        """Adds."""
        return a + b

    assert f(1) == 3.0
    assert f.__name__ == "f" and f.__doc__ == "Adds."
    assert f.__wrapped__(1, 1.0) == 2.0
    assert inspect.signature(f) == inspect.signature(f.__wrapped__)
    assert list(inspect.signature(f).parameters) == ["a", "b"]


def test_methods_and_jitted_functions(tmp_path):
    class Model:
        def __init__(self):
            self.scale = 2.0

        @jaxprof.annotate
        def apply(self, x):
            return x * self.scale

    jitted = jaxprof.annotate("jitted_fn")(jax.jit(lambda x: x + 1))
    with jaxprof.trace(tmp_path):
        assert float(Model().apply(jnp.float32(2.0))) == 4.0
        assert float(jitted(jnp.float32(1.0))) == 2.0
    names = read_xplane(only_xplane(tmp_path)).names
    assert "test_methods_and_jitted_functions.<locals>.Model.apply" in names
    assert "jitted_fn" in names


def test_host_annotation_carries_stats(tmp_path):
    with jaxprof.trace(tmp_path):
        with jaxprof.annotate("load_batch", batch=7, source="disk"):
            jnp.ones(3).block_until_ready()
        with jaxprof.profile_scope("aliased_scope"):
            pass
    content = read_xplane(only_xplane(tmp_path))
    assert content.stats["load_batch"]["batch"] == 7
    assert content.stats["load_batch"]["source"] == "disk"
    assert "aliased_scope" in content.names


def test_annotate_context_manager_needs_a_name():
    import pytest

    with pytest.raises(TypeError, match="needs a name"):
        with jaxprof.annotate():
            pass
    with pytest.raises(TypeError, match="must be a string"):
        jaxprof.annotate(42)


# ---- the C fast path (issue 7): what is entered when, exceptions, reuse ----------------------


class _Spy:
    """Stands in for TraceMe / named_scope to record what annotate enters and exits."""

    log: list = []

    def __init__(self, kind, name, **stats):
        self.kind, self.name, self.stats = kind, name, stats

    def __enter__(self):
        self.log.append(("enter", self.kind, self.name, self.stats))
        return self

    def __exit__(self, *exc):
        self.log.append(("exit", self.kind, self.name, exc[0]))
        return False


class _State:
    def __init__(self, value):
        self.value = value


class _Eval:  # stands in for jax's EvalTrace
    pass


def _spy_setup(profiling: bool, tracing: bool):
    """Points annotate at spies; returns the log and a function that restores the real hooks."""
    import sys

    from jaxprof import _core

    annotate_module = sys.modules["jaxprof.annotate"]  # jaxprof.annotate is the type

    _Spy.log = []
    state = _State(object() if tracing else _Eval())
    _core._annotate_setup(
        lambda name, **stats: _Spy("host", name, **stats),
        lambda: profiling,
        lambda name: _Spy("scope", name),
        state,
        _Eval,
        annotate_module._wrap,
    )

    def restore():
        m = annotate_module
        _core._annotate_setup(m._traceme, m._is_enabled, jax.named_scope, m._trace_state, m._eval_trace, m._wrap)

    return _Spy.log, restore


def test_idle_annotate_enters_nothing():
    log, restore = _spy_setup(profiling=False, tracing=False)
    try:
        with jaxprof.annotate("idle", n=1) as a:
            assert a.name == "idle" and a.stats == {"n": 1}

        @jaxprof.annotate
        def f(x):
            return x + 1

        assert f(1) == 2
    finally:
        restore()
    assert log == []


def test_profiling_enters_host_event_only_and_tracing_scope_only():
    log, restore = _spy_setup(profiling=True, tracing=False)
    try:
        with jaxprof.annotate("host", batch=2):
            pass
    finally:
        restore()
    assert log == [("enter", "host", "host", {"batch": 2}), ("exit", "host", "host", None)]

    log, restore = _spy_setup(profiling=False, tracing=True)
    try:
        with jaxprof.annotate("traced"):
            pass
    finally:
        restore()
    assert log == [("enter", "scope", "traced", {}), ("exit", "scope", "traced", None)]


def test_both_exit_in_order_and_exceptions_propagate():
    import pytest

    log, restore = _spy_setup(profiling=True, tracing=True)
    try:
        with pytest.raises(ValueError, match="boom"):
            with jaxprof.annotate("region"):
                raise ValueError("boom")

        @jaxprof.annotate("fn")
        def fails():
            raise KeyError("k")

        with pytest.raises(KeyError):
            fails()
    finally:
        restore()
    assert [(e[0], e[1], e[2]) for e in log] == [
        ("enter", "host", "region"), ("enter", "scope", "region"),
        ("exit", "scope", "region"), ("exit", "host", "region"),
        ("enter", "host", "fn"), ("enter", "scope", "fn"),
        ("exit", "scope", "fn"), ("exit", "host", "fn"),
    ]
    assert log[2][3] is ValueError and log[6][3] is KeyError  # the exception reaches both exits


def test_one_object_entered_recursively():
    log, restore = _spy_setup(profiling=True, tracing=False)
    region = jaxprof.annotate("again")
    try:
        with region:
            with region:
                with region:
                    pass
    finally:
        restore()
    assert [e[0] for e in log] == ["enter"] * 3 + ["exit"] * 3


def test_annotate_arguments():
    import pickle

    import pytest

    assert jaxprof.annotate(name="kw").name == "kw"
    assert repr(jaxprof.annotate("r")) == "annotate('r')"
    with pytest.raises(TypeError):
        jaxprof.annotate("a", "b")
    with pytest.raises(TypeError, match="multiple values"):
        jaxprof.annotate("a", name="b")
    assert pickle.loads(pickle.dumps(_module_level)) is _module_level
    assert _module_level(2) == 4


@jaxprof.annotate
def _module_level(x):
    return 2 * x


def test_outside_trace_is_noticed(tmp_path):
    """A trace started with jax.profiler directly, not through jaxprof, still gets the events."""

    @jaxprof.annotate("decorated_outside")
    def f():
        return 1

    jax.profiler.start_trace(str(tmp_path))
    try:
        with jaxprof.annotate("with_outside", k=1):
            f()
    finally:
        jax.profiler.stop_trace()
    names = read_xplane(only_xplane(tmp_path)).names
    assert "with_outside" in names and "decorated_outside" in names


def test_jit_of_annotated_function_and_eager_transforms():
    @jaxprof.annotate("inner")
    def inner(x):
        return jnp.sin(x) * 2

    assert float(jax.jit(inner)(jnp.float32(0.0))) == 0.0
    assert "inner/" in compiled_text(jax.jit(inner), jnp.ones(3))
    jaxpr = jax.make_jaxpr(jax.grad(lambda x: inner(x).sum()))(jnp.ones(3))
    assert any("inner" in str(eqn.source_info.name_stack) for eqn in jaxpr.jaxpr.eqns)


def test_context_manager_protocol_through_exitstack_and_class():
    import contextlib

    log, restore = _spy_setup(profiling=True, tracing=False)
    try:
        with contextlib.ExitStack() as stack:
            assert stack.enter_context(jaxprof.annotate("stacked")).name == "stacked"
        region = jaxprof.annotate("explicit")
        assert type(region).__enter__(region) is region
        type(region).__exit__(region, None, None, None)
        assert region.__enter__() is region
        region.__exit__(None, None, None)
    finally:
        restore()
    assert [(e[0], e[2]) for e in log] == [("enter", "stacked"), ("exit", "stacked")] + [
        ("enter", "explicit"), ("exit", "explicit")] * 2
    assert isinstance(jaxprof.annotate("x"), contextlib.AbstractContextManager)
