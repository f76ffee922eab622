"""benchmarks/real_capture.py, the real capture of the speed and memory benchmarks (issue 34): the file
it caches is one uncompressed XSpace holding exactly the steps it says, captured with the tracers its
docstring names (Python frames, XLA:CPU thunks). The truth is JAX's own ProfileData. A short capture
(4 steps): the benchmark's 150 take too long for the suite, and only the count differs."""
from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

from raw_events import raw_planes

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
_spec = importlib.util.spec_from_file_location("real_capture", BENCH / "real_capture.py")
real_capture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_capture)
_spec = importlib.util.spec_from_file_location("floor_speed", BENCH / "floor_speed.py")
floor_speed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floor_speed)

STEPS = 4


def test_the_cached_capture_holds_the_steps_and_tracers_it_says(tmp_path):
    path = real_capture.cached(STEPS, cache=tmp_path)
    assert path == tmp_path / f"lm-{STEPS}.xplane.pb"
    assert path.read_bytes()[:1] != b"\x1f"  # uncompressed: its size is the file the goals speak of
    steps, thunks, python_frames, events = set(), 0, 0, 0
    for plane in raw_planes(path):
        for line in plane.lines:
            for ev in line.events:
                events += 1
                st = dict(ev.stats)
                if ev.name == "train" and "step_num" in st:
                    steps.add(int(st["step_num"]))
                thunks += "hlo_op" in st  # host_tracer_level 2: one event per XLA:CPU thunk
                python_frames += ev.name.startswith("$")  # the Python tracer's "$file:line function"
    first = real_capture.WARMUP_STEPS
    assert steps == set(range(first, first + STEPS))
    assert thunks >= STEPS * 1000, thunks  # the LM's step runs about 1,200 thunks
    assert python_frames >= STEPS * 1000, python_frames  # about 3,700 a step
    # and the cache answers without capturing again
    assert real_capture.cached(STEPS, cache=tmp_path).stat().st_mtime_ns == path.stat().st_mtime_ns
    # the floor walks all of it (the benchmark's ns/event divides by this count)
    floor = floor_speed.build_floor(tmp_path / "floor")
    out = subprocess.run([str(floor), str(path)], capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out)["events"] == events
