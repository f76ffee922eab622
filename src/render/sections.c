/* sections.c - the section registry: one row per jp_section (report, ops, steps, ...) naming it,
 * saying what it shows, what it takes and its table (columns.c: the columns and where the analysis
 * keeps the rows). jp_render enforces the flags and renders the table; the CLI's usage and help,
 * the viewer's API index and the tests read the rows, so a section is declared here once. */
#include <string.h>

#include "jaxprof/jaxprof.h"
#include "render/columns.h"

#define IN_REPORT JP_SECTION_IN_REPORT

static const jp_section_def SECTIONS[] = {
    {JP_SECTION_REPORT, "report",
     "overview: devices, steps, breakdown, top ops and scopes, findings",
     "The overview: devices, steps and their breakdown, KPIs, top ops, scopes and source lines,\n"
     "findings with their evidence and fix.\n",
     NULL, JP_SECTION_TABLES | JP_SECTION_NO_CSV | JP_SECTION_SUMMARIES, -1},
    {JP_SECTION_OPS, "ops", "XLA ops by self time",
     "XLA ops by self time: category, count, total, self, average, share of device time.\n"
     "Text columns beyond the default (see --columns): scope, op_name, source, function, min_ms,\n"
     "max_ms, gflops_per_s, gbytes_per_s, intensity, bound_by, module, device, dtype, remat,\n"
     "wasted_ms, wasted_pct (--sort wasted: the time each op spends short of its roof).\n",
     NULL, IN_REPORT, JP_TABLE_OPS},
    {JP_SECTION_STEPS, "steps", "one row per training step: its time and where it went",
     "One row per training step: its time, where it went (compute, communication, input,\n"
     "host, idle), FLOPs and achieved GFLOP/s.\n",
     NULL, IN_REPORT | JP_SECTION_REPORT_ALL, JP_TABLE_STEPS},
    {JP_SECTION_SCOPES, "scopes", "time by user scope (named_scope, Flax modules, annotations)",
     "Time by user scope: jax.named_scope / Flax module paths on the device, and\n"
     "TraceAnnotation / jaxprof.annotate ranges on the host.\n",
     NULL, IN_REPORT, JP_TABLE_SCOPES},
    {JP_SECTION_KERNELS, "kernels", "GPU kernels by total time, with launch shapes and occupancy",
     "GPU kernels by total time, with their launch shapes and occupancy.\n",
     "kernels are summed per kernel while the profile is read, not kept per step", IN_REPORT | JP_SECTION_WHOLE_RUN,
     JP_TABLE_KERNELS},
    {JP_SECTION_MEMORY, "memory",
     "the buffers live at each compiled module's memory peak; allocator events",
     "Memory at the peak, from XLA's buffer assignment (CPU, GPU and TPU captures): the compiled\n"
     "modules that ran, largest peak first (peak, temporaries at the peak, parameters, outputs,\n"
     "the instruction at the peak), then the largest module's top buffers live at its peak: size,\n"
     "kind, the HLO instruction that made it, shape, op_name and the line of your code. Then the\n"
     "allocator events, per allocator (GPU and TPU captures; XLA:CPU records none).\n"
     "--top, --sort, --filter and --columns apply to the buffers (--top: per module, default 10).\n"
     "--csv writes one row per buffer, with its module's columns first.\n",
     NULL, IN_REPORT | JP_SECTION_TAKES_MODULE, JP_TABLE_MEMORY},
    {JP_SECTION_TRANSFERS, "transfers", "host/device copies: count, bytes, time, GB/s",
     "Host-to-device, device-to-host and device-to-device copies: count, bytes, time, GB/s.\n",
     NULL, IN_REPORT, JP_TABLE_TRANSFERS},
    {JP_SECTION_COMPILES, "compiles", "XLA compilations during the capture and their triggers",
     "XLA compilations during the capture: module, time, and what triggered them.\n",
     NULL, IN_REPORT, JP_TABLE_COMPILES},
    {JP_SECTION_FINDINGS, "findings", "rated findings, each with its evidence and fix",
     "Rated findings, most severe first, each with its evidence and the fix to try.\n",
     NULL, IN_REPORT | JP_SECTION_REPORT_ALL | JP_SECTION_SUMMARIES, JP_TABLE_FINDINGS},
    {JP_SECTION_HOSTS, "hosts", "multi-host runs: hosts side by side, clocks, stragglers",
     "Multi-host runs: each host's steps side by side, how the clocks were aligned, the\n"
     "straggler per step, waiting and top ops per host.\n",
     "hosts compares whole runs host by host (one host's steps: the steps section of that host, in a window)",
     JP_SECTION_WHOLE_RUN | JP_SECTION_TABLES | JP_SECTION_SUMMARIES, JP_TABLE_HOST_STATS},
    {JP_SECTION_LINES, "lines", "device time by the line of your code that made each op",
     "Device time by the line of your code that made each op (self time, count, % of device\n"
     "time, function, the ops behind it).\n",
     NULL, IN_REPORT | JP_SECTION_SPLIT_NOTE, JP_TABLE_LINES},
    {JP_SECTION_FLAME, "flame",
     "device time by Python call stack: a tree, folded stacks or pprof",
     "Device time by Python call stack: the tree as a table, or folded stacks\n"
     "(flamegraph.pl, speedscope), or a pprof profile (pprof -http).\n",
     NULL, JP_SECTION_SPLIT_NOTE, JP_TABLE_FLAME},
    {JP_SECTION_LAUNCH, "launch", "GPU launches: API, queue and launch delay per kernel; idle causes",
     "GPU kernels and copies matched to the host call that launched them (correlation_id): per\n"
     "kernel and device the launch call's time (api), the queue time (start - call end), the\n"
     "kernel time, the launch delay (start - call start) and the kernels shorter than their call.\n"
     "Each device's idle split (waiting for the host, kernel to kernel, other) and launch queue\n"
     "depth are device columns: idle_host_ms, idle_kernel_ms, idle_other_ms, queue_max, queue_mean\n"
     "(in every --json document). Then the same idle split per stream (--table launch_streams), and\n"
     "in --json the queue depth over time per device (launch_queue).\n",
     "launches are matched over the whole capture", JP_SECTION_WHOLE_RUN | JP_SECTION_SECOND_TABLE, JP_TABLE_LAUNCHES},
    {JP_SECTION_COMM, "comm", "collectives: hidden/exposed time, message size, bus bandwidth, wait",
     "Collectives, one row per op (an async start/done pair as one): count, total, the time hidden\n"
     "behind compute on the same device and the exposed rest, message size and group size n from the\n"
     "HLO, algorithm and bus bandwidth by the nccl-tests convention, the wait across devices per\n"
     "instance, the device that arrived last and robust stragglers. Per device and per step: the\n"
     "devices and steps tables' collective_hidden_ms, collective_exposed_ms and overlap_pct (JSON).\n"
     "Then the instances (the k-th run of an op on each device), those with the longest wait first:\n"
     "step, exposed time min and max, wait, last device, straggler (--table comm_instances: all).\n",
     NULL, IN_REPORT | JP_SECTION_SECOND_TABLE, JP_TABLE_COMM},
};
_Static_assert(sizeof SECTIONS / sizeof SECTIONS[0] == JP_SECTION_COUNT, "one registry row per jp_section");

const jp_section_def *jp_section_get(int section) {
    if (section < 0 || section >= JP_SECTION_COUNT) return NULL;
    return SECTIONS[section].id == section ? &SECTIONS[section] : NULL; /* rows in enum order (tested) */
}

int jp_section_second_table(int section) {
    const jp_section_def *d = jp_section_get(section);
    if (!d || !(d->flags & JP_SECTION_SECOND_TABLE)) return -1;
    return section == JP_SECTION_COMM ? JP_TABLE_COMM_INSTANCES : section == JP_SECTION_LAUNCH ? JP_TABLE_LAUNCH_STREAMS : -1;
}

int jp_section_from_name(const char *name) {
    for (int i = 0; name && i < JP_SECTION_COUNT; i++)
        if (strcmp(name, SECTIONS[i].name) == 0) return i;
    return -1;
}

const char *jp_section_name(int section) {
    const jp_section_def *d = jp_section_get(section);
    return d ? d->name : "?";
}
