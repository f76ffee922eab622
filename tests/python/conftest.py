"""Shared helpers: a tiny real JAX training step and a reader for the xplane files it produces."""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import pytest

import jaxprof

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Hermetic: a `jaxprof calibrate` the user ran on this machine must not give the tests' CPU
# profiles peaks (tests that want a calibration write their own into this directory's files).
os.environ["JAXPROF_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxprof-cache-")

# The jaxprof executable under test: the one installed beside this Python, unless JAXPROF_BIN
# points at another build (handy while iterating on the C code without reinstalling).
JAXPROF_BIN = Path(os.environ.get("JAXPROF_BIN") or Path(sys.executable).parent / "jaxprof")


# The section commands (report, ops, ...) from the library's registry (src/render/sections.c), in
# its order, with their flags: a new section is in every test that walks these lists.
SECTION_FLAGS = {name: flags for name, _summary, flags in jaxprof._core.sections()}
SECTIONS = list(SECTION_FLAGS)


# Real captures written by others live beside the project, never in it (../shared/captures, its
# README says where each comes from); JAXPROF_REAL_CAPTURES points elsewhere.
REAL_CAPTURES = Path(os.environ.get("JAXPROF_REAL_CAPTURES") or Path(__file__).resolve().parents[3] / "shared" / "captures")


def under_ci() -> bool:
    """CI (.ci/run sets CI=true): what a local run may skip for want of a build or a folder must fail."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without the real captures (a user's fresh clone), the modules that read them are skipped and
    say why; under CI they fail, so CI never skips them."""
    if REAL_CAPTURES.is_dir():
        return
    why = f"no real captures at {REAL_CAPTURES}: they live beside the project (set JAXPROF_REAL_CAPTURES)"
    if under_ci():
        pytest.exit(why, returncode=1)
    for item in items:
        if getattr(getattr(item, "module", None), "REAL_CAPTURES", None) is REAL_CAPTURES:
            item.add_marker(pytest.mark.skip(reason=why))


def run_jaxprof(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(JAXPROF_BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def jaxprof_json(command: str, path: Path | str, *args: str) -> dict[str, Any]:
    """Runs `jaxprof <command> PATH --json ...` and returns the parsed document (asserts exit 0)."""
    proc = run_jaxprof(command, str(path), "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@jax.jit
def train_step(w: jax.Array, x: jax.Array) -> jax.Array:
    """One 'training step': small enough to be fast, real enough to emit XLA:CPU op events."""
    return w - 0.01 * jnp.tanh(x @ w)


@pytest.fixture
def step_fn() -> Callable[[jax.Array], jax.Array]:
    x = jnp.ones((64, 64)) * 0.5

    def run(w: jax.Array) -> jax.Array:
        return train_step(w, x)

    run(jnp.ones((64, 64))).block_until_ready()  # compile outside any capture
    return run


@pytest.fixture
def w0() -> jax.Array:
    return jnp.ones((64, 64))


@dataclass
class XplaneContent:
    """What the tests look for in a captured xplane."""

    step_nums: list[int] = field(default_factory=list)   # StepTraceAnnotation step_num, in time order
    names: set[str] = field(default_factory=set)          # every event name
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)  # first stats seen per event name
    hlo_modules: set[str] = field(default_factory=set)    # hlo_module stats of executed ops


def read_xplane(path: Path) -> XplaneContent:
    """Reads an xplane with JAX's own ProfileData (an oracle independent of jaxprof)."""
    data = jax.profiler.ProfileData.from_file(str(path))
    out = XplaneContent()
    steps: list[tuple[float, int]] = []
    for plane in data.planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                out.names.add(event.name)
                out.stats.setdefault(event.name, stats)
                if stats.get("_r") == 1 and "step_num" in stats:
                    steps.append((event.start_ns, int(stats["step_num"])))
                if "hlo_module" in stats:
                    out.hlo_modules.add(str(stats["hlo_module"]))
    out.step_nums = [s for _, s in sorted(steps)]
    return out


def xplanes(root: Path) -> list[Path]:
    """Every xplane file under root, sorted."""
    return sorted(p for p in root.rglob("*.xplane.pb"))


def only_xplane(root: Path) -> Path:
    files = xplanes(root)
    assert len(files) == 1, f"expected one xplane under {root}, found {files}"
    return files[0]


def step_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("step_"))


@jax.jit
def scoped_step(w: jax.Array, x: jax.Array) -> jax.Array:
    """A jitted step whose matmul sits under a named scope: real XLA:CPU ops with scope paths."""
    with jax.named_scope("forward"):
        h = jnp.tanh(x @ w)
    return w - 1e-3 * (h.T @ x)


def profile_steps(log_dir: Path, step: Callable[[int], Any], steps: int) -> Path:
    """Plain jax.profiler: `steps` calls of step(i), each in a StepTraceAnnotation; returns log_dir."""
    jax.profiler.start_trace(str(log_dir))
    try:
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                step(i)
    finally:
        jax.profiler.stop_trace()
    return log_dir


def capture_steps(log_dir: Path, *, start_step: int = 1, num_steps: int = 3, total: int = 5,
                  annotation: str | None = None) -> Path:
    """Runs `total` steps of `scoped_step` with jaxprof.Profiler capturing start_step..+num_steps-1
    (each step optionally inside jaxprof.annotate(annotation)); returns log_dir."""
    w, x = jnp.ones((128, 128)) * 1e-2, jnp.ones((64, 128))
    scoped_step(w, x).block_until_ready()  # compile outside the capture
    with jaxprof.Profiler(log_dir, start_step=start_step, num_steps=num_steps, report=False) as prof:
        for i in range(total):
            with prof.step(i):
                if annotation:
                    with jaxprof.annotate(annotation):
                        w = scoped_step(w, x)
                else:
                    w = scoped_step(w, x)
            w.block_until_ready()
    return log_dir


# ---- `jaxprof view` servers started by the tests --------------------------------------------------

def read_until_link(proc: subprocess.Popen, timeout: float = 60) -> str:
    """stdout up to and including the "Open: " line (raw reads: never blocks past the timeout)."""
    out = b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while b"\nOpen: " not in out or not out.endswith(b"\n"):
        if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
            raise AssertionError(f"no link within {timeout} s: {out!r}")
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            raise AssertionError(f"jaxprof view exited ({proc.wait()}): {out!r}")
        out += chunk
    return out.decode()


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stdout:
        proc.stdout.close()


@pytest.fixture
def launch_view(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen, str, Path]]]:
    """Starts `jaxprof view LOG_DIR --no-browser ARGS` and waits for its "Open:" line, returning
    (process, stdout so far, stderr file); every server is killed at teardown."""
    procs: list[subprocess.Popen] = []

    def launch(log_dir: Path, *args: str) -> tuple[subprocess.Popen, str, Path]:
        err = tmp_path / f"view-stderr{len(procs)}.txt"
        with open(err, "w") as err_file:
            proc = subprocess.Popen([str(JAXPROF_BIN), "view", str(log_dir), "--no-browser", *args],
                                    stdout=subprocess.PIPE, stderr=err_file)
        procs.append(proc)
        return proc, read_until_link(proc), err

    yield launch
    for proc in procs:
        stop(proc)


# ---- the browser tests' Chromium ----------------------------------------------------------------

def headless_chromium(window: str = "1400,900", page: tuple[int, int] | None = None) -> Iterator[Any]:
    """Yields Debian's Chromium, headless, driven through Debian's chromedriver, quit afterwards.
    window: the window size ("W,H", the browser's own bars included); page: the page's own size
    in pixels when it must be exact (screenshots at 1400x900)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={window}"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    if page:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": page[0], "height": page[1], "deviceScaleFactor": 1, "mobile": False})
    try:
        yield driver
    finally:
        driver.quit()


PLANT_STEPS, PLANT_GPUS, PLANT_OPS = 4, 2, 24  # the planted launch layout's size


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, dict]:
    """benchmarks/gen_xplane.py's GPU layout with planted launch timings (--plant-launch): the file
    and what the generator planted."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import gen_xplane
    path = tmp_path_factory.mktemp("planted") / "planted.xplane.pb"
    info = gen_xplane.generate(path, "gpu", steps=PLANT_STEPS, gpus=PLANT_GPUS, ops_per_step=PLANT_OPS,
                               plant_launch=True)
    return path, info
