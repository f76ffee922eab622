"""Every example runs as a user would run it and writes the captures it promises."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import read_xplane, only_xplane, step_dirs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})}, cwd=EXAMPLES)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_periodic_profiling(tmp_path):
    run_example("periodic_profiling.py", "--steps", "50", "--out", str(tmp_path))
    assert step_dirs(tmp_path) == ["step_00000005", "step_00000025", "step_00000045"]


def test_env_configured_loop(tmp_path):
    env = {"PROFILE_ENABLED": "1", "PROFILE_DIR": str(tmp_path), "PROFILE_START_STEP": "4", "PROFILE_DURATION": "3"}
    out = run_example("env_configured_loop.py", "--steps", "10", env=env)
    assert "enabled: True" in out
    assert read_xplane(only_xplane(tmp_path)).step_nums == [4, 5, 6]
    run_example("env_configured_loop.py", "--steps", "8", "--enable_profiling", "--profiler_start_step", "2",
                "--profiling_dir", str(tmp_path / "flags"))
    assert step_dirs(tmp_path / "flags") == ["step_00000002"]


def test_begin_end_steps_with_async_capture(tmp_path):
    out = run_example("begin_end_steps.py", "--steps", "30", "--out", str(tmp_path))
    assert step_dirs(tmp_path) == ["step_00000003", "step_00000026"]
    assert "steps [3, 4, 5]" in out and "steps [26, 27]" in out
    assert read_xplane(only_xplane(tmp_path / "step_00000026")).step_nums == [26, 27]


def test_task_mixin(tmp_path):
    out = run_example("task_mixin.py", "--steps", "10", "--out", str(tmp_path))
    assert "trained 10 steps" in out
    content = read_xplane(only_xplane(tmp_path))
    assert content.step_nums == [5, 6, 7] and "train_step" in content.names
