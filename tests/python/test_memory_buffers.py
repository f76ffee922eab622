"""Memory at the peak, buffer by buffer (issue 20), through the CLI.

(a) A real XLA:CPU capture of a jitted step that makes one 64 MiB intermediate on a known line of
    this file: `jaxprof memory` lists the module, that buffer is live at the peak with its size,
    shape and line, `--module` shows it, the CSV has it, and the peak_temporaries finding names it.
(b) Agreement with XProf's own memory viewer (xprof_oracle.memory_viewer) on every module of every
    fixture that carries a buffer assignment and of the capture: peak bytes, peak position,
    unpadded peak, the heap timeline, the totals, and the rows at the peak as a multiset (XProf's
    order among equal sizes is unspecified).
(c) jax's compiled.memory_analysis() totals (temp, argument, output, alias sizes) equal ours.
"""
from __future__ import annotations

import csv
import inspect
import io
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jaxprof
import xprof_oracle
from conftest import REAL_CAPTURES, jaxprof_json, run_jaxprof, xplanes

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = REAL_CAPTURES
BIG = 64 << 20  # the intermediate's bytes: f32[4096,4096]


def big_step(a: jax.Array, b: jax.Array) -> jax.Array:
    big = jnp.dot(a, b)  # f32[4096,4096]: 64 MiB, used twice below, so XLA must keep it
    s = jnp.sin(big) + jnp.cos(big)
    return s.sum(axis=0) * big[0]


def donated_update(w: jax.Array, g: jax.Array) -> jax.Array:
    """An update whose parameter the caller donates: alias bytes in memory_analysis()."""
    return w - 0.1 * jnp.tanh(g @ w)


def _line_of(fn: Any, needle: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if needle in text)


BIG_LINE = _line_of(big_step, "jnp.dot(a, b)")


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two captured steps of big_step and donated_update (compiled before the capture), the run's
    .xplane.pb and jax's memory_analysis() of both."""
    log_dir = tmp_path_factory.mktemp("memory_capture")
    a, b = jnp.ones((4096, 256), jnp.float32), jnp.ones((256, 4096), jnp.float32)
    w, g = jnp.ones((512, 512), jnp.float32), jnp.ones((512, 512), jnp.float32) * 1e-3
    big, update = jax.jit(big_step), jax.jit(donated_update, donate_argnums=0)
    analysis = {"big": big.lower(a, b).compile().memory_analysis(),
                "update": update.lower(w, g).compile().memory_analysis()}
    big(a, b).block_until_ready()
    w = update(w, g)
    with jaxprof.Profiler(log_dir, start_step=1, num_steps=2, report=False) as prof:
        for i in range(4):
            with prof.step(i):
                big(a, b).block_until_ready()
                w = update(w, g)
            w.block_until_ready()
    (path,) = xplanes(log_dir)
    return {"path": path, "analysis": analysis}


def _module(doc: dict[str, Any], plain: str) -> dict[str, Any]:
    (mod,) = [m for m in doc["modules"] if m["name"].startswith(plain + "(")]
    return mod


def _big_buffer(mod: dict[str, Any]) -> dict[str, Any]:
    (row,) = [b for b in mod["buffers"] if b["bytes"] == BIG and b["op_name"].endswith("dot_general")]
    return row


# ---- (a) the 64 MiB capture --------------------------------------------------------------------


def test_memory_json_has_the_64_mib_buffer_at_the_peak_with_its_line(capture: dict[str, Any]) -> None:
    doc = jaxprof_json("memory", capture["path"])
    mod = _module(doc, "jit_big_step")
    assert mod["runs"] >= 2  # both captured steps ran it
    assert doc["modules"][0]["peak_bytes"] >= mod["peak_bytes"]  # largest peak first
    assert [m["peak_bytes"] for m in doc["modules"]] == sorted((m["peak_bytes"] for m in doc["modules"]), reverse=True)
    row = _big_buffer(mod)
    assert row["kind"] == "temporary" and row["shape"] == "f32[4096,4096]" and row["unpadded_bytes"] == BIG
    assert row["source"].endswith(f"test_memory_buffers.py:{BIG_LINE}"), row
    assert row["function"] == "big_step" and row["stack"][0]["line"] == BIG_LINE
    assert 0 <= row["start"] <= mod["peak_index"] <= row["end"]  # live across the peak
    # sin and cos of it are two more 64 MiB temporaries live at the same time; the parameters
    # (2 x 4 MiB) and the output live all along
    assert mod["peak_bytes"] >= 3 * BIG + 8 * (1 << 20)
    assert mod["kind_bytes"]["parameter"] == 8 << 20 and mod["always_live_bytes"] >= 8 << 20
    assert len(mod["buffers"]) <= 10  # the default --top per module
    assert sum(b["bytes"] for b in mod["buffers"]) == mod["peak_bytes"]  # the rows at the peak make the peak


def test_memory_module_text_csv_and_timeline(capture: dict[str, Any]) -> None:
    doc = jaxprof_json("memory", capture["path"], "--module", "jit_big_step")
    (mod,) = doc["modules"]
    assert len(mod["timeline"]) >= 2 and max(t["bytes"] for t in mod["timeline"]) == mod["peak_bytes"]
    assert mod["timeline"][mod["peak_index"] + 1]["bytes"] == mod["peak_bytes"]  # first reached after that event
    assert mod["timeline"][mod["peak_index"]]["instruction"] == mod["peak_instruction"]
    big = _big_buffer(mod)

    r = run_jaxprof("memory", capture["path"], "--module", mod["name"], "--width", "220")
    assert r.returncode == 0, r.stderr
    assert f"Module {mod['name']}" in r.stdout
    line = next(text for text in r.stdout.splitlines() if big["instruction"] + " " in text and "64.0 MiB" in text)
    assert "temporary" in line and "f32[4096,4096]" in line and f"test_memory_buffers.py:{BIG_LINE}" in line
    peak_mib = f"{mod['peak_bytes'] / 2**20:.1f} MiB ({mod['peak_bytes']} bytes)"
    assert peak_mib in r.stdout

    r = run_jaxprof("memory", capture["path"], "--width", "220")
    assert r.returncode == 0, r.stderr
    assert "Memory at the peak, per compiled module" in r.stdout and mod["name"] in r.stdout
    assert "Allocator events: none (XLA:CPU records no allocator events" in r.stdout

    r = run_jaxprof("memory", capture["path"], "--csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert list(rows[0])[:6] == ["module", "host", "runs", "module_peak_bytes", "module_always_live_bytes", "id"]
    (csv_big,) = [x for x in rows if x["module"] == mod["name"] and x["id"] == str(big["id"])]
    assert csv_big["bytes"] == str(BIG) and csv_big["shape"] == "f32[4096,4096]"
    assert csv_big["module_peak_bytes"] == str(mod["peak_bytes"])


def test_unknown_module_is_a_usage_error_naming_the_known_ones(capture: dict[str, Any]) -> None:
    r = run_jaxprof("memory", capture["path"], "--module", "jit_nothing_like_it")
    assert r.returncode == 2 and r.stdout == ""
    assert "jit_nothing_like_it: no such module" in r.stderr and "jit_big_step(" in r.stderr
    r = run_jaxprof("ops", capture["path"], "--module", "jit_big_step")
    assert r.returncode == 2 and "--module goes only with memory" in r.stderr


def test_peak_temporaries_finding_names_the_buffers_and_lines(capture: dict[str, Any]) -> None:
    mod = _module(jaxprof_json("memory", capture["path"]), "jit_big_step")
    (f,) = [f for f in jaxprof_json("findings", capture["path"])["findings"] if f["id"] == "peak_temporaries"]
    temps = [b for b in mod["buffers"] if b["kind"] == "temporary"][:3]
    held = sum(b["bytes"] for b in temps)
    assert held * 2 > mod["peak_bytes"]
    ev = f["evidence"]
    assert f"{mod['name']} peaks at {mod['peak_bytes'] / 2**20:.1f} MiB ({mod['peak_bytes']} bytes)" in ev
    assert f"3 temporaries hold {held / 2**20:.1f} MiB of it ({100 * held / mod['peak_bytes']:.0f}%" in ev
    assert f"f32[4096,4096] 64.0 MiB at test_memory_buffers.py:{BIG_LINE}" in ev
    # big_step differentiates nothing: rematerialisation (jax.checkpoint) has no backward pass to
    # recompute in, so the advice is to shrink the batch's temporaries instead
    assert "no backward pass" in f["fix"] and "checkpoint" not in f["fix"] and "smaller chunks" in f["fix"]
    assert mod["name"] in f["fix"]
    assert f["severity"] == "warning"  # 64 MiB temporaries: a peak under 1 GiB


def test_small_modules_raise_no_memory_finding() -> None:
    doc = jaxprof_json("findings", DATA / "cpu_small.xplane.pb.gz")
    assert "peak_temporaries" not in {f["id"] for f in doc["findings"]}
    mem = jaxprof_json("memory", DATA / "cpu_small.xplane.pb.gz")
    assert mem["modules"] and max(m["peak_bytes"] for m in mem["modules"]) < 64 << 20



TWINS = """
import sys, jax, jax.numpy as jnp
import jaxprof

def _twin(x):
    return jnp.tanh(x @ x) + 1.0

other, ran = jnp.ones((96, 96), jnp.float32), jnp.ones((128, 128), jnp.float32)
fn_other, fn_ran = jax.jit(_twin), jax.jit(_twin)
fn_other(other).block_until_ready()
fn_ran(ran).block_until_ready()
with jaxprof.Profiler(sys.argv[1], start_step=0, num_steps=3, report=False) as prof:
    for i in range(3):
        with prof.step(i):
            fn_ran(ran).block_until_ready()
"""


def test_runs_count_the_program_not_the_module_name(tmp_path: Path) -> None:
    """Two programs of one module name (jit__twin for two shapes), both compiled and run before the
    capture, only the 128x128 one during it: the capture's metadata lists both, and only the one
    that ran may say it ran (counted by name, both said 3 runs and a plain --module was ambiguous).
    A process of its own, so that the metadata holds few modules and the CLI's list of them names all."""
    script = tmp_path / "twins.py"
    script.write_text(TWINS)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "log")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr
    (path,) = xplanes(tmp_path / "log")
    listing = run_jaxprof("memory", path, "--module", "jit__twin(none)").stderr  # names every module
    names = sorted(set(re.findall(r"jit__twin\(\d+\)", listing)))
    assert len(names) == 2 and "..." not in listing, listing
    shown = {}
    for name in names:
        (mod,) = jaxprof_json("memory", path, "--module", name)["modules"]
        (param,) = [b["shape"] for b in mod["buffers"] if b["kind"] == "parameter"]
        shown[param] = mod
    assert shown["f32[128,128]"]["runs"] == 3 and shown["f32[96,96]"]["runs"] == 0
    ran_name = shown["f32[128,128]"]["name"]
    assert [m["name"] for m in jaxprof_json("memory", path)["modules"] if m["name"].startswith("jit__twin(")] == [ran_name]
    (plain,) = jaxprof_json("memory", path, "--module", "jit__twin")["modules"]  # the one that ran
    assert plain["name"] == ran_name

# ---- (c) jax's memory_analysis() ---------------------------------------------------------------


@pytest.mark.parametrize("fn", ["big", "update"])
def test_totals_equal_memory_analysis(capture: dict[str, Any], fn: str) -> None:
    plain = {"big": "jit_big_step", "update": "jit_donated_update"}[fn]
    (mod,) = jaxprof_json("memory", capture["path"], "--module", plain)["modules"]
    ma = capture["analysis"][fn]
    assert (mod["temp_bytes"], mod["parameter_bytes"], mod["output_bytes"], mod["alias_bytes"]) == (
        ma.temp_size_in_bytes, ma.argument_size_in_bytes, ma.output_size_in_bytes, ma.alias_size_in_bytes)
    if fn == "update":
        assert mod["alias_bytes"] == 512 * 512 * 4  # the donated parameter
    else:
        assert mod["temp_bytes"] >= 3 * BIG


# ---- (b) XProf's memory viewer -----------------------------------------------------------------

# Every fixture whose HloProtos carry a buffer assignment (the TensorFlow one has no HloProto, the
# mangled one is refused as corrupt).
FIXTURES = sorted(p.name for p in REAL.glob("*.xplane.pb.gz")
                  if not p.name.startswith(("mangled", "tf_bert"))) + ["cpu_small.xplane.pb.gz"]


def _row_key(b: dict[str, Any]) -> tuple[Any, ...]:
    if b["kind"] == "small":
        return (b["bytes"], "small")
    return (b["bytes"], b["kind"], b["instruction"], b["shape"])


def _xprof_row_key(r: dict[str, Any]) -> tuple[Any, ...]:
    if r["kind"] is None:  # "small (<16384 bytes)"
        return (r["bytes"], "small")
    return (r["bytes"], r["kind"].lower(), r["instruction"], r["shape"])


def _ours_all_modules(path: Path) -> dict[str, dict[str, Any]]:
    """Every module entry with all its buffers and its timeline: `memory --module KEY --json` each."""
    listed = jaxprof_json("memory", path, "--top", "1000000")
    keys = {m["name"] for m in listed["modules"]}
    out = {}
    for key in sorted(keys | set(_xprof_keys(path))):
        (mod,) = jaxprof_json("memory", path, "--module", key)["modules"]
        out[key] = mod
    return out


_XPROF_CACHE: dict[str, dict[str, dict[str, Any]]] = {}


def _xprof(path: Path) -> dict[str, dict[str, Any]]:
    if str(path) not in _XPROF_CACHE:
        _XPROF_CACHE[str(path)] = xprof_oracle.memory_viewer(path)
    return _XPROF_CACHE[str(path)]


def _xprof_keys(path: Path) -> list[str]:
    return list(_xprof(path))


def _agree(path: Path) -> int:
    """Asserts every module of path agrees with XProf; returns how many were compared."""
    theirs = _xprof(path)
    ours = _ours_all_modules(path)
    assert theirs, f"XProf found no module in {path}"
    assert set(theirs) <= set(ours), sorted(set(theirs) - set(ours))
    for key, x in theirs.items():
        m = ours[key]
        where = f"{path.name} {key}"
        assert m["peak_bytes"] == x["peak_bytes"], where
        assert m["peak_unpadded_bytes"] == x["peak_unpadded_bytes"], where
        assert [t["bytes"] for t in m.get("timeline", [])] == x["heap_bytes"], where
        if x["heap_bytes"]:
            assert m["peak_index"] == x["peak_position"], where
        else:  # XProf says position 0 without a heap trace; we say -1
            assert m["peak_index"] == -1, where
        assert (m["total_bytes"], m["always_live_bytes"], m["parameter_bytes"], m["output_bytes"]) == (
            x["total_bytes"], x["indefinite_bytes"], x["parameter_bytes"], x["live_out_bytes"]), where
        assert Counter(map(_row_key, m["buffers"])) == Counter(map(_xprof_row_key, x["rows"])), where
        unpadded = Counter((b["bytes"], b["unpadded_bytes"]) for b in m["buffers"] if b["kind"] != "small")
        assert unpadded == Counter((r["bytes"], r["unpadded_bytes"]) for r in x["rows"] if r["kind"]), where
        # largest first, the small row last
        sizes = [b["bytes"] for b in m["buffers"] if b["kind"] != "small"]
        assert sizes == sorted(sizes, reverse=True), where
        assert all(b["kind"] != "small" for b in m["buffers"][:-1]), where
    return len(theirs)


needs_xprof = pytest.mark.skipif(not xprof_oracle.available(), reason="XProf (pip install xprof) is the oracle here")


def test_every_real_capture_with_buffers_is_compared() -> None:
    """The list above is read from a folder: an empty or moved folder must fail, not shrink it."""
    assert len(FIXTURES) >= 8, f"{REAL} holds {len(FIXTURES) - 1} real captures"


@needs_xprof
@pytest.mark.parametrize("name", FIXTURES)
def test_agrees_with_xprof_memory_viewer_on_fixture(name: str) -> None:
    path = REAL / name if (REAL / name).exists() else DATA / name
    assert _agree(path) >= 4  # every fixture here holds at least 4 modules


@needs_xprof
def test_agrees_with_xprof_memory_viewer_on_cpu_capture(capture: dict[str, Any]) -> None:
    assert _agree(capture["path"]) >= 2
    x = _xprof(capture["path"])
    (key,) = [k for k in x if k.startswith("jit_big_step(")]
    assert any(r["bytes"] == BIG and r["shape"] == "f32[4096,4096]" for r in x[key]["rows"])  # XProf sees it too

