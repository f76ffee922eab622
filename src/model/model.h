/* model.h - the normalised profile every analysis reads: ops with HLO metadata, host events,
 * transfers, kernels, allocations and activity spans, built from one or more XSpaces (internal). */
#ifndef JP_MODEL_MODEL_H
#define JP_MODEL_MODEL_H

#include "base/intern.h"
#include "base/map.h"
#include "base/sort.h"
#include "base/text.h"
#include "base/vec.h"
#include "analyses/result_names.h"
#include "base/arena.h"
#include "decode/hlo.h"
#include "jaxprof/jaxprof_results.h"
#include "jaxprof/jaxprof_xspace.h"

/* ---- device peaks (peaks.c) ------------------------------------------------------------------ */

typedef struct jp_device_caps {  /* what a device plane says about its hardware */
    double peak_tflops, peak_gbps; /* libtpu: peak_teraflops_per_second, peak_hbm_bw_gigabytes_per_second */
    double clock_khz, cores;       /* GPU: clock_rate, core_count (SMs or compute units) */
    double mem_bw;                 /* GPU: memory_bandwidth, bytes/s */
    double mem_size;               /* GPU: memory_size, bytes */
    int cc_major, cc_minor;        /* GPU: compute capability (AMD: gfx major.minor) */
    int amd;                       /* device_vendor is AMD */
    char type[64];                 /* device_type_string ("TPU v6 Lite"), "" when absent */
} jp_device_caps;

/* Sets d's peaks and peak_source from its capabilities (see docs/design.md "Device peaks"). */
void jp_device_set_peaks(jp_device *d, const jp_device_caps *caps);
/* Reads a `jaxprof calibrate` file: 1 and its peaks when it names `hostname`, else 0 (a missing,
 * unreadable or foreign file is no error: the peaks stay unknown). Only a regular file of at most
 * JP_CPU_PEAKS_MAX bytes is read: anything else (a FIFO, a link to /dev/zero, a huge file) would
 * stall or swamp every load, and is ignored with why[] saying so; why[0] is 0 otherwise. */
enum { JP_CPU_PEAKS_MAX = 64 << 10 };
int jp_cpu_peaks_read(const char *path, jp_str hostname, double *tflops, double *gbps, char *why, size_t why_cap);
/* The user's --peak-tflops / --peak-gbps (0 leaves that peak as it is). */
void jp_device_override_peaks(jp_device *d, double peak_tflops, double peak_gbps);

/* ---- model records -------------------------------------------------------------------------- */

enum { JP_OPDEF_KERNELS = 4 }; /* distinct kernels counted per GPU op (more share the last count) */

typedef struct jp_opdef {    /* one distinct executed op: (device, module, name) */
    const char *module, *name, *category, *op_name, *scope, *source;
    const char *function;    /* of the source line, "" when unknown */
    const jp_hlo_frame *frame; /* innermost frame of its Python stack, NULL when not recorded */
    const jp_hlo_share *shares; /* a fusion's source lines by modelled cost (jp_hlo_instr), or NULL */
    uint32_t n_shares;
    uint32_t device;
    double flops, bytes;     /* per occurrence: the profile's own stats (TPU, GPU), else hlo_flops */
    double hlo_flops;        /* per occurrence, counted from the HLO (hlo_cost.c); 0 without HLO */
    double xla_flops;        /* per occurrence, the profile's own flops stat; 0 when it has none */
    double transcendentals;  /* per occurrence, from the HLO */
    uint8_t collective;      /* jp_hlo_is_collective(category), asked once per op */
    uint8_t shared_name;     /* the metadata holds several programs of its module's name */
    int64_t program_id;      /* with shared_name, the program its events named (its costs are that
                              * program's); -1 when the name has one program or the event named none */
    uint8_t no_xla_op;       /* GPU: a kernel that no XLA (or framework) op launched, named after itself */
    uint8_t with_program;    /* GPU: one of its events named its program_id */
    uint8_t autotuning;      /* GPU: device work of XLA's autotuner during a compile (autotune.c) */
    const char *kernel[JP_OPDEF_KERNELS]; /* GPU: the first distinct kernels seen running the op */
    uint64_t kernel_n[JP_OPDEF_KERNELS];  /* launches of each */
    uint64_t n_kernels;      /* GPU: kernel events of the op */
    const char *dtype;       /* the element type it computes in (jp_hlo_instr.dtype); "" without HLO */
    double coll_bytes;       /* collectives: message size from the HLO (jp_hlo_instr), 0 unknown */
    uint32_t group_size;     /* collectives: replica-group size n from the HLO, 0 unknown */
    const char *async_start; /* an asynchronous "-done" half: its "-start"'s name; else NULL */
    const char *opcode;      /* its HLO opcode ("all-reduce-start"), NULL without the HLO */
    const jp_hlo_instr *hlo; /* its instruction, NULL without the HLO */
} jp_opdef;

/* The share of an op's FLOPs and bytes each of its events carries. A GPU op that runs as several
 * kernels (a library convolution: an Im2Col kernel and a GEMM) is one occurrence per kernel, as
 * XProf counts them, but does its HLO cost once per execution; executions are counted as the
 * launches of its most launched kernel (one of them may lose its op stats: the MI300 conv capture
 * has 40 GEMMs and 39 Im3d2Col launches of its convolution). 1 for everything else. */
static inline double jp_opdef_event_share(const jp_opdef *d) {
    uint64_t runs = 0;
    for (int i = 0; i < JP_OPDEF_KERNELS; i++)
        if (d->kernel_n[i] > runs) runs = d->kernel_n[i];
    return runs && d->n_kernels > runs ? (double)runs / (double)d->n_kernels : 1;
}

typedef struct jp_op_ev {    /* one occurrence of an op (GPU: one kernel) */
    int64_t start_ps, end_ps;
    int64_t dur_ps;          /* busy time: end - start, or the device's own measure (TPU) */
    int64_t self_ps;         /* dur minus direct children on the same line */
    uint32_t op;             /* index into opdefs */
    uint32_t line;           /* global line number, for nesting */
    int64_t run_id;          /* execution id (XLA:CPU run_id), 0 when unknown */
    union {                  /* one slot for two uses that never meet on one event: */
        uint64_t flow;       /* XLA:CPU: producer flow id (_p) linking its "end:" event, read and
                              * then cleared while its host plane is read (host.c) */
        uint64_t launch;     /* GPU: the launch that queued it (jp_op_launch_*), 0 when none */
    };
    int64_t nest_end_ps;     /* end of the TraceMe itself, for nesting: an asynchronous op extended
                              * to its "end:" event does not contain the ops its thread ran next */
} jp_op_ev;

enum jp_host_kind {
    JP_HOST_USER,            /* TraceAnnotation / jaxprof.annotate from user code */
    JP_HOST_RUNTIME,         /* JAX/XLA TraceMes: PjitFunction(f), ParseArguments, X::Y, ... */
    JP_HOST_PYTHON,          /* python tracer frames ("$file:line fn") */
    JP_HOST_COMPILE,         /* lowering and backend compilation */
    JP_HOST_STEP             /* StepTraceAnnotation markers */
};

typedef struct jp_host_ev {  /* 48 bytes: a Python-traced capture holds a million of them */
    int64_t start_ps, end_ps, self_ps;
    const char *name;        /* interned */
    union {                  /* one slot for two uses that never meet on one event: */
        const char *module;  /* compile events: the module from the enclosing PjitFunction ("" none) */
        int64_t step_num;    /* step markers (JP_HOST_STEP) */
    };
    uint32_t line;
    uint8_t depth;           /* nesting depth on its thread (< JP_NEST_MAX_DEPTH, 256) */
    uint8_t kind;            /* jp_host_kind */
    uint8_t is_dispatch;     /* a PjitFunction(...) event */
    uint8_t recursive;       /* nested inside an event of the same name on its thread */
} jp_host_ev;
_Static_assert(sizeof(jp_host_ev) == 48, "jp_host_ev grew");

/* The most bytes of a module name derived from a dispatch, the NUL included; a longer one is cut
 * (and then matches no module). */
enum { JP_MODULE_NAME_MAX = 4096 };

/* The module a dispatch runs: "PjitFunction(f)" -> "jit_f", appended to out. Compile events
 * (nesting.c) and step ends (steps.c) derive it the same way, so they agree. */
void jp_host_dispatch_module(const char *dispatch_name, jp_text *out);

typedef struct jp_xfer_ev {
    int64_t start_ps, end_ps;
    uint64_t bytes;
    uint32_t device;
    uint8_t kind;            /* jp_xfer_kind */
} jp_xfer_ev;

/* The kernels of one (name, launch details), summed as they are read: a GPU profile holds
 * millions of kernel events, and the analyses need only these sums. */
enum { JP_SMALL_KERNEL_PS = 100000000 }; /* 0.1 ms: kernels shorter than this count as small */

typedef struct jp_kernel_sum {
    const char *name;        /* interned kernel name */
    const char *details;     /* interned kernel_details, "" when absent */
    const char *op;          /* the first kernel's hlo_op, or "" */
    uint32_t opdef;          /* the first kernel's opdef, UINT32_MAX until it is known */
    uint8_t with_program;    /* its kernels name a program_id (a sum is kept per value: the
                              * autotuner runs the program's own kernel names without one) */
    uint8_t autotuning;      /* XLA's autotuner's (autotune.c) */
    uint64_t count, n_small; /* kernels, and those under JP_SMALL_KERNEL_PS */
    int64_t total_ps, min_ps, max_ps;
} jp_kernel_sum;

/* The two ends of a launch (launch.c): a host API call (cuLaunchKernel, hipModuleLaunchKernel,
 * cudaMemcpyAsync, ...) and the device work it queued, linked by their correlation_id, which is
 * unique within one process (one host's XSpace). A GPU profile holds a pair for every kernel,
 * millions of them. The calls are kept apart in launch_calls, 32 bytes each: most are on thread
 * pool lines, which make no host events. The device end of a kernel or memset rides on its op
 * event, whose `launch` packs the correlation id, the kernel's name (an index into
 * jp_model.launch_names) and whether it is a kernel; a copy (a transfer, not an op), or work whose
 * id or name index does not fit there, is kept apart in launch_work. */
#define JP_OP_LAUNCH_SET (UINT64_C(1) << 63)    /* the op event has a launch */
#define JP_OP_LAUNCH_KERNEL (UINT64_C(1) << 62) /* it is a kernel (not a memset) */
enum { JP_OP_LAUNCH_ID_BITS = 40, JP_OP_LAUNCH_NAME_BITS = 22 };
static inline uint64_t jp_op_launch_id(uint64_t l) { return l & ((UINT64_C(1) << JP_OP_LAUNCH_ID_BITS) - 1); }
static inline uint32_t jp_op_launch_name(uint64_t l) {
    return (uint32_t)((l >> JP_OP_LAUNCH_ID_BITS) & ((UINT64_C(1) << JP_OP_LAUNCH_NAME_BITS) - 1));
}

typedef struct jp_launch_call { /* a launch API call, 32 bytes */
    int64_t start_ps, end_ps;
    uint64_t correlation;
    uint32_t name;           /* the API call's name: an index into jp_model.launch_names */
    uint32_t line;           /* global line number: launch_calls is in line order */
} jp_launch_call;

typedef struct jp_launch_ev {   /* device work kept apart (see above) */
    uint64_t correlation;
    int64_t start_ps, end_ps;
    const char *name;        /* interned: the kernel or copy */
    uint32_t where;          /* the device index, with JP_LAUNCH_KERNEL for a kernel (not a copy or memset) */
    uint32_t line;           /* global line number: launch_work is in line order */
} jp_launch_ev;

typedef struct jp_launch_line { /* a device line (GPU stream) with correlated work */
    const char *name;        /* interned: the line's name */
    int64_t id;              /* the line's id */
    uint32_t device;
    uint32_t line;           /* global line number */
} jp_launch_line;

#define JP_LAUNCH_KERNEL 0x80000000u
static inline uint32_t jp_launch_device(const jp_launch_ev *l) { return l->where & ~JP_LAUNCH_KERNEL; }
static inline int jp_launch_is_kernel(const jp_launch_ev *l) { return (l->where & JP_LAUNCH_KERNEL) != 0; }

typedef struct jp_mem_ev {
    int64_t t_ps;
    const char *allocator;   /* interned */
    int64_t in_use;          /* bytes_allocated + bytes_reserved after the event */
    int64_t peak;            /* peak_bytes_in_use reported (the allocator's lifetime peak), 0 when absent */
} jp_mem_ev;

typedef struct jp_exec {     /* one execution of a module on a device */
    const char *module;
    int64_t run_id;
    int64_t program_id;      /* the compiled program that ran (XLA's program_id), -1 when unknown:
                              * a process may compile several programs of one module name */
    int64_t start_ps, end_ps;
    uint32_t host;           /* index into jp_model.hosts */
    uint32_t device;         /* index into jp_model.devices; UINT32_MAX for host dispatches */
} jp_exec;

/* qsort comparator: executions by start time. */
int jp_exec_cmp_start(const void *a, const void *b);

typedef struct jp_span {     /* an activity interval for the breakdown sweep and busy time */
    int64_t start_ps, end_ps;
    uint32_t device;         /* UINT32_MAX for host activity */
    uint8_t part;            /* jp_part */
} jp_span;

/* One host's XSpace in the model. Hosts are added one after another, so each host's records
 * are one run of every vector: lines and devices are numbered on from the previous host's, and
 * spans, transfers and allocations are appended (and stay in that order); ops and host events,
 * sorted by line in jp_model_finish, stay grouped by host too. */
typedef struct jp_model_host {
    const char *name;        /* interned; the file name without .xplane.pb */
    int64_t start_ns;        /* the capture's start on the host's wall clock (Task Environment
                              * profile_start_time, ns since the epoch); 0 when not recorded */
    int64_t first_ps, last_ps; /* its first and last event (first > last: none) */
    uint32_t first_line, first_device;
    size_t first_span, first_xfer, first_mem; /* where its records start in those vectors */
    uint64_t call_lo, call_hi; /* its launch calls' least and greatest correlation_id (lo > hi: none) */
} jp_model_host;

typedef struct jp_model {
    jp_arena *arena;         /* the profile's arena: interned strings, final tables */
    jp_intern intern;
    jp_vec hosts;            /* jp_model_host, in the order added */
    jp_vec devices;          /* jp_device */
    jp_vec hlo;              /* jp_hlo_module */
    jp_vec opdefs;           /* jp_opdef */
    jp_map op_index;         /* (device | program slot << 32, module, name) -> opdef (records.c) */
    jp_map run_program;      /* run_id -> program_id, from the op events that carry both */
    jp_vec ops;              /* jp_op_ev */
    jp_vec host;             /* jp_host_ev */
    jp_vec xfers;            /* jp_xfer_ev */
    jp_vec kernels;          /* jp_kernel_sum, in order of first sight */
    jp_map kernel_index;     /* (name, details) -> kernels */
    jp_vec mem;              /* jp_mem_ev */
    jp_vec execs;            /* jp_exec, from run_id groups or XLA Modules lines */
    jp_vec device_steps;     /* jp_exec, from device Steps lines (TPU, saved GPU ones; module = step name) */
    jp_vec spans;            /* jp_span */
    size_t n_compile_spans;  /* spans with part JP_PART_COMPILE, counted as added (a host view or a
                              * step window holds at most as many): without one, no pass looks */
    jp_vec launch_calls;     /* jp_launch_call: every launch call, in line order */
    jp_vec launch_work;      /* jp_launch_ev: device work whose launch is on no op event, in line order */
    jp_vec launch_names;     /* const char *: the names launches index (kernels', calls') */
    jp_map launch_name_index; /* name -> launch_names */
    jp_vec launch_lines;     /* jp_launch_line: the device lines with correlated work, in line order */
    uint32_t n_lines;        /* global line counter */
    int64_t first_ps, last_ps;
    uint64_t n_events;
    int64_t total_dur_ps;    /* summed event durations, bounded to keep sums in range (build.c) */
    jp_vec warnings;         /* const char * (arena), one sentence each: what reading met that the
                              * profile is still usable without (events naming no metadata, an
                              * ignored calibration file, a file that looks cut short) */
    jp_vec capture_notes;    /* jp_health: each XSpace's own errors and warnings (arena strings) */
    const struct jp_model *whole; /* a step window's (profile.c): the model it narrows, whose launches
                                   * launch.c matches (design.md "Launch and idle causes"); else NULL */
    /* A part: one host's model built on a worker thread, to be merged (merge.c) into the model
     * the hosts before it made. It notes what the sequential build would have read from those
     * hosts, so that the merge reproduces it or tells the caller to build the host in place. */
    uint8_t part;
    jp_vec tpu_runs;         /* jp_part_tpu_run: per non-GPU device plane, its ops and executions */
    jp_vec hlo_misses;       /* jp_part_hlo_miss: op look-ups its own metadata did not answer */
    jp_map hlo_miss_index;   /* (module, program id) -> hlo_misses */
    jp_vec kernel_renames;   /* jp_part_rename: what command buffers did to kernel sums' op */
    jp_map rename_heads;     /* kernel sum -> its latest kernel_renames entry */
} jp_model;

/* What a part notes for the merge (merge.c). */
typedef struct jp_part_tpu_run { /* a non-GPU device plane: ops [op_a, op_b) in executions [ex_a, ex_b) */
    size_t op_a, op_b, ex_a, ex_b;
} jp_part_tpu_run;
typedef struct jp_part_hlo_miss { /* an op look-up of (module, program_id) its host's HLO missed */
    const char *module;
    int64_t program_id;
} jp_part_hlo_miss;
typedef struct jp_part_rename {  /* kernel sum `sum`'s op, when it is `from` at the part's start, */
    uint32_t sum, next;          /* ends as `to`; next: the sum's previous entry, UINT32_MAX none */
    const char *from, *to;
} jp_part_rename;

void jp_model_init(jp_model *m, jp_arena *arena);
void jp_model_deinit(jp_model *m);
/* Adds a warning (printf-style) unless the same text is there already. JP_ERR_NOMEM or 0. */
int jp_model_warn(jp_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds every plane of one host's XSpace; `host` names it. Applies opt's device filter. */
int jp_model_add_xspace(jp_model *m, jp_xspace *xs, const char *host, const jp_load_options *opt,
                        jp_error *err);
/* Merges part (one host, built with part = 1 on the same shared intern table) into m as if
 * jp_model_add_xspace had added that host to m: 0; 1 when it cannot be reproduced (the host's
 * build read what earlier hosts hold, or passes a limit the hosts together pass), m unchanged:
 * the caller builds the host into m itself; JP_ERR_NOMEM. part's records are copied (into an
 * empty m, its vectors are taken); the memory its arena holds must outlive m (jp_arena_adopt it),
 * and part is only deinitialised afterwards. */
int jp_model_merge(jp_model *m, jp_model *part);
/* A part's note that kernel sum `sum`'s op, if `from`, becomes `to` (graphs.c). JP_ERR_NOMEM or 0. */
int jp_model_note_rename(jp_model *m, uint32_t sum, const char *from, const char *to);
/* Sorts, nests (self time, depth) and derives executions once every host is added. */
int jp_model_finish(jp_model *m, jp_error *err);
/* Marks the ops that are XLA's autotuner at work during a compile (jp_opdef.autotuning). */
int jp_model_mark_autotuning(jp_model *m);

/* A finished model's records of host h alone, for analyses that take a jp_model: *view borrows
 * m's tables (devices, op definitions and interned strings are shared, so device and op indices
 * keep their meaning) with every event vector narrowed to the host's run. Executions and device
 * steps are copied into `scratch` (two vectors the caller frees). The view must not be grown,
 * finished or deinitialised, and lives as long as m and scratch stay unchanged. */
int jp_model_host_view(const jp_model *m, size_t h, jp_model *view, jp_vec scratch[2]);
/* The first index in [0, n) of elements of `size` bytes sorted by their uint32 line (at line_off)
 * whose line is >= line: where a line's records start. */
size_t jp_model_first_at_line(const void *base, size_t n, size_t size, size_t line_off, uint32_t line);
/* Moves every record of host h by delta_ps on the time axis (clock alignment across hosts) and
 * keeps executions and device steps in time order. */
void jp_model_shift_host(jp_model *m, size_t h, int64_t delta_ps);

/* The host whose lines hold global line number `line` (hosts number their lines one after another). */
static inline size_t jp_model_line_host(const jp_model *m, uint32_t line) {
    size_t h = 0;
    while (h + 1 < m->hosts.n && JP_VEC_AT(&m->hosts, jp_model_host, h + 1).first_line <= line) h++;
    return h;
}

#endif
