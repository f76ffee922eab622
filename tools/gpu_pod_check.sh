#!/bin/sh
# The pod check on a GPU, one call: jaxprof built there, then tools/gpu_pod_check.py (two
# jax.distributed processes on the one GPU, summaries merged on process 0, compared with the raw
# files' merge). Everything lands in $OUT.
set -u
OUT=${OUT:-/tmp/gpu_pod_out}; mkdir -p "$OUT"
nvidia-smi -L; python3 -c "import jax; print(jax.__version__, jax.devices())"
( meson setup /tmp/b -Dpython=enabled -Dtests=disabled --buildtype=release && ninja -C /tmp/b ) > "$OUT/build.log" 2>&1 \
  && echo "build ok" || { echo "build failed"; tail -20 "$OUT/build.log"; exit 0; }
mkdir -p /tmp/pkg && cp -r python/jaxprof /tmp/pkg/ && cp /tmp/b/_core*.so /tmp/pkg/jaxprof/
PYTHONPATH=/tmp/pkg JAXPROF_BIN=/tmp/b/jaxprof timeout 360 python3 tools/gpu_pod_check.py /tmp/pod; echo "pod check rc $?"
cp /tmp/pod/process*.log "$OUT/" 2>/dev/null
tar czf "$OUT/pod_run.tgz" -C /tmp pod 2>/dev/null; ls -la "$OUT"
