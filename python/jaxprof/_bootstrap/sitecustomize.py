"""``jaxprof run``'s bootstrap: Python imports this at startup because the launcher put its folder first
on PYTHONPATH. It only installs an import hook that acts when ``jax`` finishes importing (then
``jaxprof._run_child.install`` sets up the capture), and runs the next ``sitecustomize`` on
sys.path as Python would have. A process that never imports JAX pays one finder on sys.meta_path.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _warn(message):
    sys.stderr.write(f"jaxprof run: {message}\n")


def _after_jax():
    """Runs once ``jax`` is imported; never raises into the program."""
    try:
        from jaxprof import _run_child
    except Exception as exc:  # this Python has JAX but not jaxprof (another environment)
        _warn(f"capture off in this process: {sys.executable} cannot import jaxprof ({exc!r})")
        return
    _run_child.install()


class _Loader:
    """Wraps the loader of ``jax``: runs the hook after the package's own code."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        module.__loader__ = self._loader  # jax's spec and loader are left as they were
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        _after_jax()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _JaxFinder:
    """A meta-path finder that answers only for ``jax``, through the finders after it."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not cls]  # once is enough
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def _chain():
    """Runs the ``sitecustomize`` that Python would have found without this folder."""
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("JAXPROF_RUN_DIR") and "jax" not in sys.modules:
    sys.meta_path.insert(0, _JaxFinder)
try:
    _chain()
except Exception as exc:  # as Python itself does with a failing sitecustomize: say so, go on
    _warn(f"the next sitecustomize on sys.path failed: {exc!r}")
