#!/bin/sh
# The device check, one call: real captures (tools/gpu_capture.py), jaxprof built there, its capture
# API on the GPU (tools/gpu_api_check.py) and its report on each capture. Everything lands in $OUT.
set -u
OUT=${OUT:-/tmp/gpu_check_out}; mkdir -p "$OUT"
nvidia-smi -L; python3 -c "import jax, flax, optax; print(jax.__version__, flax.__version__, optax.__version__, jax.devices())"
PYTHONUNBUFFERED=1 CAPTURE_BUDGET_S=${CAPTURE_BUDGET_S:-200} python3 tools/gpu_capture.py /tmp/cap gpu > "$OUT/capture.log" 2>&1
grep "^== " "$OUT/capture.log"
tar czf "$OUT/gpu_captures.tgz" -C /tmp cap
( meson setup /tmp/b -Dpython=enabled -Dtests=disabled --buildtype=release && ninja -C /tmp/b ) > "$OUT/build.log" 2>&1 \
  && echo "build ok" || { echo "build failed"; tail -20 "$OUT/build.log"; exit 0; }
mkdir -p /tmp/pkg && cp -r python/jaxprof /tmp/pkg/ && cp /tmp/b/_core*.so /tmp/pkg/jaxprof/
PYTHONPATH=/tmp/pkg PYTHONUNBUFFERED=1 timeout 150 python3 tools/gpu_api_check.py /tmp/api > "$OUT/api.log" 2>&1; echo "api check rc $?"
tail -5 "$OUT/api.log"
for f in $(find /tmp/cap /tmp/api -name '*.xplane.pb'); do echo "=== $f"; timeout 60 /tmp/b/jaxprof report "$f" | head -30; done > "$OUT/reports.txt" 2>&1
tar czf "$OUT/api_captures.tgz" -C /tmp api 2>/dev/null
ls -la "$OUT"
