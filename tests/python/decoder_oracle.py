"""libjaxprof's XSpace decoder line by line, for tests: the module ``_xplane_lines``
(tests/python/xplane_lines.c), which meson builds beside ``jaxprof._core`` but never installs."""
from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path
from types import ModuleType

#: Where ``make install`` builds (pip's -Cbuild-dir); JAXPROF_BUILD_DIR names another build.
BUILD_DIR = Path(os.environ.get("JAXPROF_BUILD_DIR") or Path(__file__).resolve().parents[2] / "build-py")


@lru_cache(maxsize=None)
def _module() -> ModuleType:
    found = sorted(BUILD_DIR.glob("_xplane_lines.*.so"))
    assert found, f"no _xplane_lines module in {BUILD_DIR}: `make install` (or ninja -C build-py) builds it"
    spec = importlib.util.spec_from_file_location("_xplane_lines", found[0])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def xplane_lines(path: str | os.PathLike[str]) -> list[tuple[str, str, int, int, int]]:
    """Every line of an .xplane.pb[.gz] as (plane, line, line id, events, summed duration in ps)."""
    return _module().xplane_lines(os.fspath(path))  # type: ignore[no-any-return]
