#!/usr/bin/env bash
# output_matrix.sh JAXPROF OUTDIR [INPUT...]: every output of every command on every input, one file
# each (stdout, then stderr and the exit code), so two builds can be compared with `diff -r`. The
# refactors of issue 32 promise byte-identical outputs; this is the check. Inputs default to
# tests/data/cpu_small and every capture in $JAXPROF_REAL_CAPTURES (default ../shared/captures).
set -uo pipefail
jp=$(realpath "$1"); out=$(mkdir -p "$2" && realpath "$2"); shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
caps=${JAXPROF_REAL_CAPTURES:-$here/../shared/captures}
if [ $# -eq 0 ]; then
    set -- "$here/tests/data/cpu_small.xplane.pb.gz" "$caps"/*.xplane.pb.gz
fi
# The inputs are linked under one fixed folder and the outputs named relative to $out, so the paths
# the outputs print are the same whichever checkout or output folder runs the matrix.
inputs=/tmp/jp-matrix-inputs; mkdir -p "$inputs"
for f in "$@"; do ln -sf "$(realpath "$f")" "$inputs/$(basename "$f")"; done
cd "$out" || exit 2
tables="report ops steps scopes kernels memory transfers compiles findings lines flame hosts launch comm"
one() { # one NAME ARGS...: run, keep stdout, stderr and the exit code
    local name=$1; shift
    "$jp" "$@" >"$name.out" 2>"$name.err"; echo "rc=$?" >>"$name.err"
}
prev=""
for f in "$@"; do
    b=$(basename "$f" .xplane.pb.gz); f=$inputs/$(basename "$f")
    for t in $tables; do
        one "$b.$t.txt" "$t" "$f" --width 120
        one "$b.$t.json" "$t" "$f" --json
        one "$b.$t.csv" "$t" "$f" --csv
    done
    one "$b.ops.top5" ops "$f" --top 5 --sort count --width 100
    one "$b.ops.cols" ops "$f" --columns name,self_ms,scope,source,bound_by --csv
    one "$b.steps.window" report "$f" --steps 1:2 --width 120
    one "$b.report.html" report "$f" --html "$b.html"
    one "$b.folded" flame "$f" --folded -o "$b.folded.txt"
    one "$b.export.chrome" export "$f" --format chrome -o "$b.chrome.json"
    one "$b.export.perfetto" export "$f" --format perfetto -o "$b.perfetto.pb"
    if [ -n "$prev" ]; then
        one "$b.diff.txt" diff "$prev" "$f" --width 120
        one "$b.diff.json" diff "$prev" "$f" --json
        one "$b.diff.csv" diff "$prev" "$f" --csv
        one "$b.diff.html" diff "$prev" "$f" --html "$b.diff.page.html"
    fi
    one "$b.diff.self.json" diff "$f" "$f" --json
    prev=$f
done
