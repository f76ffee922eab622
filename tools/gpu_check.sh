#!/bin/sh
# The device check, one call: real captures (tools/gpu_capture.py), jaxprof built there, its capture
# API on the GPU (tools/gpu_api_check.py), `jaxprof run` on a plain loop (tools/gpu_plain_loop.py)
# and its report on each capture. Everything lands in $OUT. SKIP_CAPTURES=1 leaves the captures out.
set -u
OUT=${OUT:-/tmp/gpu_check_out}; mkdir -p "$OUT"
nvidia-smi -L; python3 -c "import jax, flax, optax; print(jax.__version__, flax.__version__, optax.__version__, jax.devices())"
if [ -z "${SKIP_CAPTURES:-}" ]; then
  PYTHONUNBUFFERED=1 CAPTURE_BUDGET_S=${CAPTURE_BUDGET_S:-200} python3 tools/gpu_capture.py /tmp/cap gpu > "$OUT/capture.log" 2>&1
  grep "^== " "$OUT/capture.log"
  tar czf "$OUT/gpu_captures.tgz" -C /tmp cap
fi
( meson setup /tmp/b -Dpython=enabled -Dtests=disabled --buildtype=release && ninja -C /tmp/b ) > "$OUT/build.log" 2>&1 \
  && echo "build ok" || { echo "build failed"; tail -20 "$OUT/build.log"; exit 0; }
mkdir -p /tmp/pkg && cp -r python/jaxprof /tmp/pkg/ && cp /tmp/b/_core*.so /tmp/pkg/jaxprof/
PYTHONPATH=/tmp/pkg PYTHONUNBUFFERED=1 timeout 150 python3 tools/gpu_api_check.py /tmp/api > "$OUT/api.log" 2>&1; echo "api check rc $?"
tail -5 "$OUT/api.log"
PYTHONPATH=/tmp/pkg PYTHONUNBUFFERED=1 timeout 150 /tmp/b/jaxprof run --out /tmp/run -- python3 tools/gpu_plain_loop.py \
  > "$OUT/run.log" 2>&1; echo "jaxprof run rc $?"
tail -4 "$OUT/run.log"
for f in $(find /tmp/cap /tmp/api /tmp/run -name '*.xplane.pb' 2>/dev/null); do echo "=== $f"; timeout 60 /tmp/b/jaxprof report "$f" | head -30; done > "$OUT/reports.txt" 2>&1
tar czf "$OUT/api_captures.tgz" -C /tmp api run 2>/dev/null
ls -la "$OUT"
