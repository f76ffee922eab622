"""A pod's in-job summaries on a real GPU (tools/gpu_pod_check.sh): two jax.distributed processes
share the one GPU, each in a directory of its own (no shared file system), each training the small
transformer of gpu_capture.py under jaxprof.Profiler (steps 2-4 captured; process 1 sleeps 50 ms
in step 3). No step has a cross-process collective (NCCL refuses two ranks on one GPU), so the
clocks are aligned by the capture start times. Checks what test_pod.py checks on CPU: process 0
logs the merged line, each process wrote its summary, and `jaxprof hosts --json` merged from the
summaries equals the merge of the raw files copied to one place.

    python3 tools/gpu_pod_check.py OUT                      # the driver
    python3 tools/gpu_pod_check.py --worker I N PORT OUT    # one process
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

SAME = ("clock_method", "host_stats", "host_steps", "stragglers", "hosts", "platform", "events", "span_ms",
        "device_busy_ms", "device_idle_pct", "capture_health")


def worker(index: int, count: int, port: int, out: Path) -> None:
    import jax
    import numpy as np

    import jaxprof

    sys.path.insert(0, str(Path(__file__).parent))
    from gpu_capture import SIZES
    from gpu_plain_loop import make_train_step

    machine = out / f"machine{index}"
    machine.mkdir(parents=True, exist_ok=True)
    os.chdir(machine)
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=count, process_id=index)
    size = SIZES["small"]
    state, step = make_train_step(size)
    rng = np.random.default_rng(index)
    prof = jaxprof.Profiler("profiles", start_step=2, num_steps=3)
    for i in range(6):
        with prof.step(i):
            if index == 1 and i == 3:
                time.sleep(0.05)
            tokens = jax.device_put(rng.integers(0, size["V"], (size["B"], size["T"] + 1), dtype=np.int32),
                                    jax.local_devices()[0])
            state, loss = step(state, tokens)
            float(loss)
    prof.close()
    print("captures", [str(c.run_dir) for c in prof.captures], flush=True)
    jax.distributed.shutdown()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hosts_json(jaxprof: str, path: Path) -> dict:
    res = subprocess.run([jaxprof, "hosts", str(path), "--json"], capture_output=True, text=True, timeout=120)
    if res.returncode:
        raise SystemExit(f"jaxprof hosts {path}: exit {res.returncode}: {res.stderr}")
    return json.loads(res.stdout)


def main(out: Path) -> int:
    port = free_port()
    env = {**os.environ, "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.3", "PYTHONUNBUFFERED": "1"}
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(i), "2", str(port), str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for i, (p, text) in enumerate(zip(procs, outs)):
        (out / f"process{i}.log").write_text(text)
        print(f"== process {i}: exit {p.returncode}")
        print("\n".join(l for l in text.splitlines() if "jaxprof" in l or "captures" in l or "Error" in l)[-3000:])
    if any(p.returncode for p in procs):
        return 1
    runs = [next((out / f"machine{m}" / "profiles").rglob("*.xplane.pb")).parent for m in range(2)]
    for m, run in enumerate(runs):
        print(f"machine{m}:", sorted((f.name, f.stat().st_size) for f in run.iterdir()))
    raw = out / "raw"
    raw.mkdir()
    for run in runs:
        for f in run.glob("*.xplane.pb"):
            shutil.copy(f, raw / f.name)
    jaxprof = os.environ.get("JAXPROF_BIN", "jaxprof")
    merged, files = hosts_json(jaxprof, runs[0]), hosts_json(jaxprof, raw)
    differ = [k for k in SAME if merged.get(k) != files.get(k)]
    print("summarized_hosts", merged.get("summarized_hosts"), "platform", merged.get("platform"),
          "clock_method", merged.get("clock_method"))
    print("host_stats", json.dumps(merged.get("host_stats"))[:1500])
    print("merged from summaries == merged from raw files:", "yes" if not differ else f"no: {differ}")
    return 1 if differ or merged.get("summarized_hosts") != 2 else 0


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
    else:
        sys.exit(main(Path(sys.argv[1])))
