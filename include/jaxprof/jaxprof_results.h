/* jaxprof_results.h - the C layout of libjaxprof's results: jp_analysis (what jp_profile_analysis
 * returns) and jp_diff (what jp_diff_new makes), with every row type they hold. Clients of the stable
 * API (jaxprof.h) read results through jp_render's JSON instead; this header may change between
 * releases. Times are picoseconds since the session start; strings are NUL-terminated and interned;
 * everything is owned by its profile or diff and immutable after it is made: safe to read from
 * several threads. */
#ifndef JAXPROF_RESULTS_H
#define JAXPROF_RESULTS_H

#include "jaxprof.h" /* beside this header, in the tree and installed alike */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum jp_platform { JP_PLATFORM_CPU = 0, JP_PLATFORM_GPU, JP_PLATFORM_TPU } jp_platform;

typedef struct jp_device {
    const char *name;     /* "/host:CPU" (XLA:CPU's one device; of several "/device:CPU:0", ...),
                           * "/device:GPU:0", ... */
    const char *host;     /* hostname (file name without .xplane.pb) */
    int platform;         /* jp_platform */
    int64_t busy_ps;      /* union of its op and transfer intervals */
    int64_t first_ps;     /* first activity start, 0 when idle */
    int64_t last_ps;      /* last activity end */
    uint64_t n_ops;       /* op occurrences (GPU: kernels) */
    double peak_flops;    /* FLOP/s, 0 when unknown (see peak_source) */
    double peak_bw;       /* memory bytes/s, 0 when unknown */
    const char *peak_source; /* "device" (its own stats), "clock x cores" (GPU capabilities, then
                              * "; memory: <chip> data sheet ..." where the runtime's own bandwidth
                              * is off the data sheet, as ROCm's is), "table"
                              * (TPU chip by name), "calibrated" (CPU, jaxprof calibrate), "flag"
                              * (jp_load_options), "" unknown */
    double bytes_accessed; /* summed over its op occurrences, 0 when the profile does not say */
    const int64_t (*busy)[2]; /* the union of its op spans as [start, end) ps, in time order */
    size_t n_busy;
    /* Launch and idle causes (launch.c; GPU captures whose launches carry correlation ids, else 0):
     * each gap between its correlated device events (all streams together) goes to one cause by
     * the event that ends it. See docs/design.md "Launch and idle causes". */
    int64_t idle_host_ps;     /* its launch call began after the device went idle: waiting for the host */
    int64_t idle_kernel_ps;   /* launched before, and the gap is under JP_LAUNCH_K2K_PS: kernel to kernel */
    int64_t idle_other_ps;    /* launched before, longer gap (a dependency, a sync), or its launch unknown */
    uint64_t n_launched;      /* device events matched to their launch call */
    uint64_t n_short;         /* of those, kernels that ran shorter than their launch call took */
    uint32_t queue_max;       /* most launches outstanding at once (call begun, work not ended) */
    double queue_mean;        /* their time-weighted mean from the first call to the last end */
    int64_t comm_ps;      /* the union of its collectives' spans (an async pair: start to done) */
    int64_t comm_hidden_ps; /* of that, the time its compute ops ran too: |comm U n compute U| */
    double comm_overlap_pct; /* comm_hidden_ps / comm_ps in %, -1 without collectives */
    int64_t comm_wait_ps; /* summed over collective instances (the k-th of an op on each device): its
                           * exposed time minus the least exposed time of any device: waiting */
} jp_device;

/* Kernel-to-kernel gaps: shorter than this, with the next launch already made (docs/design.md). */
enum { JP_LAUNCH_K2K_PS = 10000000 }; /* 10 µs */

/* One frame of the Python call stack JAX recorded for an op (current JAX writes the stack into
 * the HLO; older ones only a source file and line). */
typedef struct jp_source_frame {
    const char *file;     /* the path as traced */
    const char *function; /* "" when unknown */
    uint32_t line;
    int library;          /* matches the library-frame rule (jp_load_options.library_frames) */
} jp_source_frame;

/* One source line's share of a fusion whose fused instructions come from several lines: the
 * fusion's time is split over them by the modelled cost of those instructions (FLOPs, or bytes
 * when it does no FLOPs). An estimate, not a measurement (docs/design.md "Source lines"). */
typedef struct jp_line_share {
    const char *source;   /* "file:line", as jp_op_stat.source */
    const char *function; /* "" when unknown */
    const jp_source_frame *stack; /* the Python stack of the line's first fused instruction */
    uint32_t n_stack;
    double weight;        /* its fraction of the fusion's modelled cost; an op's shares sum to 1 */
} jp_line_share;

/* Roofline: an op of arithmetic intensity I = flops / bytes on a device with peaks P (FLOP/s) and
 * B (bytes/s) can reach at most min(P, I * B) FLOP/s; it is memory bound when I < P / B. */
typedef enum jp_bound { JP_BOUND_UNKNOWN = 0, JP_BOUND_COMPUTE, JP_BOUND_MEMORY } jp_bound;

#define JP_CATEGORY_NO_XLA_OP "kernel, no XLA op" /* jp_op_stat.category of a no_xla_op row */

typedef struct jp_op_stat {
    const char *module;   /* HLO module ("jit_train_step") */
    const char *name;     /* HLO instruction ("dot.3", "loop_fusion.1") */
    const char *category; /* "matmul", "loop fusion", "collective", ... (see docs/design.md) */
    const char *op_name;  /* metadata.op_name, "" when unknown */
    const char *scope;    /* user scope path derived from op_name, "" when unknown */
    const char *source;   /* "file:line" of the innermost frame of user code that made the op (library
                           * frames skipped), else metadata.source_file:line; "" when unknown */
    const char *function; /* the function of that line, "" when unknown */
    const jp_source_frame *stack; /* the whole recorded Python stack, innermost frame first */
    uint32_t n_stack;     /* frames in stack; 0 when the HLO holds no stack */
    const jp_line_share *shares; /* a fusion of instructions from several lines: each line's share,
                                  * the largest first (jaxprof lines and flame split its time by
                                  * them); NULL otherwise */
    uint32_t n_shares;
    uint32_t device;      /* index into jp_analysis.devices */
    uint64_t count;       /* occurrences */
    int64_t total_ps;     /* sum of durations */
    int64_t self_ps;      /* total minus time covered by nested ops on the same line; the
                           * report's "%time" is self_ps / jp_analysis.op_self_ps */
    int64_t min_ps, max_ps;
    double flops;         /* summed over occurrences: XLA's own count where the profile holds one
                           * (TPU, GPU op stats), else hlo_flops; 0 when unknown */
    double bytes;         /* bytes accessed, summed, from the same source; 0 when unknown */
    double hlo_flops;     /* summed, counted by jaxprof from the HLO (docs/design.md); 0 without HLO */
    double xla_flops;     /* summed, the profile's own flops stat (libtpu, XLA:GPU); 0 without one */
    double transcendentals; /* summed exp/log/tanh/... elements, from the HLO (XLA counts them apart) */
    double self_sumsq;    /* summed squares of each occurrence's self time (ps^2): their spread */
    double step_sd_ps;    /* sample standard deviation of its self time per step across the steps (a
                           * step it did not run in counts 0); 0 with fewer than 2 steps. The diff's
                           * noise estimate for the op (docs/design.md "Diff") */
    int bound;            /* jp_bound: the roof it sits under, UNKNOWN without peaks or counts */
    double roof_pct;      /* its FLOP/s (compute bound) or bytes/s (memory bound), % of that roof */
    uint32_t n_devices;   /* devices it ran on: an op of an SPMD program runs on every chip, and
                           * its row sums them (as XProf does); device is then the first of them.
                           * jp_load_options.device keeps one device for a per-device view */
    int64_t program_id;   /* the compiled program (XLA's program_id) when its module's name has
                           * several in the profile: each program's op is a row of its own with
                           * that program's FLOPs and bytes; -1 when the name has one program */
    int no_xla_op;        /* 1: a GPU kernel no XLA op launched (ROCm's __amd_rocclr_copyBuffer, a
                           * library's helper kernel), listed under its kernel name with category
                           * JP_CATEGORY_NO_XLA_OP; XProf leaves these out of its op tables, the text
                           * report lists them apart from the HLO ops */
    int autotuning;       /* 1: GPU work of XLA's autotuner while a host compiled (candidate GEMM
                           * kernels, redzone and comparison kernels): no op of the program, listed
                           * apart in the text report (docs/design.md "Autotuning") */
    int no_rate;          /* 1: an asynchronous start or done half ("copy-start.4", "all-gather-done"):
                           * its time is the launch or the wait, not the work, so no FLOP/s, GB/s or
                           * roof is computed for it (its FLOPs and bytes are still listed; a done's
                           * bytes, which repeat its start's, stay out of the bandwidth KPI) */
    const char *dtype;    /* the element type it computes in, from the HLO: a dot's, convolution's or
                           * library call's left operand's, a fusion's first fused dot's or
                           * convolution's left operand's, else its output's ("bf16", "f32"); ""
                           * without HLO */
    int remat;            /* 1: rematerialised: XLA's clone ("fusion.3.remat") or, from
                           * jax.checkpoint, an op_name under "rematted_computation" */
    int64_t wasted_ps;    /* self time x (1 - roof_pct / 100), roof_pct capped at 100: the time it
                           * spends short of its roof; 0 when bound is UNKNOWN */
} jp_op_stat;

/* Op self time by the precision the ops compute in (jp_op_stat.dtype): "16-bit" (bf16, f16),
 * "32-bit" (f32), "8-bit" (8-bit floats and integers), "other" (other types), "unknown" (no HLO). */
typedef struct jp_precision_stat {
    const char *precision;
    int64_t self_ps;      /* its ops' self time */
    double flops;         /* its ops' FLOPs */
    uint32_t n_ops;       /* op rows */
} jp_precision_stat;

enum jp_part { /* the parts of a step, in the priority order of the breakdown sweep */
    JP_PART_COMPUTE, JP_PART_COLLECTIVE, JP_PART_H2D, JP_PART_D2H, JP_PART_D2D,
    JP_PART_COMPILE, JP_PART_HOST, JP_PART_IDLE, JP_PART_COUNT
};

/* Device time by the line of user code that made the ops (jaxprof lines). An op's self time goes
 * to its source line: the innermost frame of its recorded Python stack outside library code. */
typedef struct jp_line_stat {
    const char *source;   /* "file:line" as in jp_op_stat.source */
    const char *file;     /* the path, "" when the op has only a source string */
    uint32_t line;
    const char *function; /* "" when unknown */
    uint64_t count;       /* op occurrences */
    int64_t self_ps;      /* the self time of its ops */
    int64_t split_ps;     /* the part of self_ps that is a fusion's time split over its lines by
                           * modelled cost (jp_line_share): an estimate */
    double flops;         /* of its ops */
    uint32_t n_ops;       /* distinct ops */
    const char *ops;      /* its ops by self time, at most five: "dot.3, fusion.2, ..." */
} jp_line_stat;

enum jp_flame_kind { JP_FLAME_ROOT = 0, JP_FLAME_FRAME, JP_FLAME_LIBRARY, JP_FLAME_OP, JP_FLAME_NO_SOURCE };

/* Device time by Python call stack as a tree, in depth-first order (children by total time):
 * the root, then each op's frames from the outermost to the innermost, consecutive library frames
 * folded into one "[package]" node, and the op itself as the leaf. Ops without a recorded stack
 * hang under "[no source]" (or their source line, when that is all the profile has). Self time
 * sits on the leaves only, so the root's total is the ops' self time (jp_analysis.op_self_ps). */
typedef struct jp_flame_node {
    const char *name;     /* "train_step (train.py:42)", "[flax]", "dot.3", ... */
    const char *file;     /* frames: the path relative to source_prefix; else "" */
    uint32_t line;        /* frames: the line; else 0 */
    uint32_t parent;      /* index of the parent, UINT32_MAX for the root */
    uint32_t depth;       /* 0 for the root */
    int kind;             /* jp_flame_kind */
    int64_t total_ps, self_ps;
    int64_t split_ps;     /* the part of total_ps that is a fusion's time split over its lines by
                           * modelled cost (jp_line_share): an estimate */
} jp_flame_node;

typedef struct jp_step {
    int64_t step_num;              /* from StepTraceAnnotation, or the execution index */
    int64_t start_ps, dur_ps;
    int64_t part_ps[JP_PART_COUNT]; /* sums exactly to dur_ps */
    uint64_t n_ops;                /* op occurrences starting in the step */
    uint32_t n_compiles;           /* compile events starting in the step */
    double flops;                  /* of the op occurrences starting in the step */
    int outlier;                   /* 1 when dur_ps > 1.5 x the median */
    int64_t host_start_ps, host_dur_ps; /* when the host issued the step: its marker (every host's
                                    * StepTraceAnnotation of that number), or the dispatch it was
                                    * inferred from; 0, 0 when unknown (device steps, executions).
                                    * Host events in it (compiles) belong to the step even when the
                                    * step's device-ended span [start, start + dur) began later */
    int no_device_work;            /* 1 when no device op ran in the step (a transfer alone does
                                    * not count): it is left out of the summary */
    int64_t gap_ps;                /* steps inferred from host dispatches: the time after the step
                                    * until the next dispatch, when neither host dispatch nor device
                                    * work of the step ran (the program's Python between calls); in
                                    * no step. 0 otherwise */
    double bytes;                  /* bytes accessed by the op occurrences starting in the step (an
                                    * asynchronous done half's, which repeat its start's, left out) */
    double roof_pct;               /* the step as one program on the roofline: its FLOP/s (compute
                                    * bound) or bytes/s (memory bound) over the summed roofs of the
                                    * devices that ran ops, at its intensity flops / bytes; -1 unknown */
    int64_t comm_hidden_ps;        /* its collective time that overlapped compute on the same device,
                                    * and the rest (exposed): per device, the mean over the devices
                                    * that ran collectives in the step (docs/design.md "Communication") */
    int64_t comm_exposed_ps;
    int64_t sync_ps;               /* the end of the last collective op that starts in it: one instant
                                    * every host of a synchronous job sees (multi-host clock alignment);
                                    * INT64_MIN when none */
} jp_step;

typedef struct jp_step_summary {
    const char *method; /* "StepTraceAnnotation", "executions of <module>", "none" */
    double mean_ps, median_ps, p90_ps, std_ps, min_ps, max_ps;
    int64_t part_ps[JP_PART_COUNT]; /* summed over steps */
    int64_t total_ps;               /* summed step time */
    size_t n_no_device;             /* steps with no device work, left out of the numbers above
                                     * (unless every step is such a step) */
    int64_t gap_ps;                 /* summed dispatch gaps (jp_step.gap_ps): not step time */
    int64_t part_median_ps[JP_PART_COUNT]; /* each part's median over the steps: the typical step,
                                            * from which an outlier's excess is measured */
} jp_step_summary;

typedef enum jp_scope_kind { JP_SCOPE_DEVICE = 0, JP_SCOPE_HOST } jp_scope_kind;

typedef struct jp_scope_stat {
    const char *path;  /* "train_step/loss/forward" or a TraceAnnotation name */
    int kind;          /* jp_scope_kind */
    int user;          /* host scopes: 1 for user annotations, 0 for JAX/XLA runtime TraceMes */
    uint32_t depth;    /* device: number of path components - 1; host: nesting depth seen first */
    uint64_t count;    /* op occurrences (device) or events (host) */
    int64_t total_ps;  /* device: ops under the path; host: sum of durations */
    int64_t self_ps;   /* device: ops exactly at the path; host: minus nested host events */
    int64_t wall_ps;   /* host: the wall time its events cover, the union over threads (total_ps
                        * sums the threads, so it can exceed the wall time); device: total_ps */
} jp_scope_stat;

typedef struct jp_compile {
    const char *name;   /* the compile event ("backend_compile_and_load", ...) */
    const char *module; /* module compiled, "" when the profile does not say */
    int64_t start_ps, dur_ps;
    int64_t step_num;   /* the step it happened in, or -1 */
    int steady;         /* 1 when inside the steady state: any step after the first, and the first
                         * one too unless it compiles the capture's step module (a warm-up) */
} jp_compile;

enum jp_xfer_kind { JP_XFER_H2D, JP_XFER_D2H, JP_XFER_D2D, JP_XFER_COUNT };

typedef struct jp_transfer_stat {
    const char *kind;  /* "H2D", "D2H", "D2D" */
    uint64_t count;
    uint64_t bytes;    /* 0 when the profile does not record sizes (XLA:CPU) */
    int64_t total_ps;
    int64_t max_ps;
} jp_transfer_stat;

typedef struct jp_kernel_stat {
    const char *name;   /* kernel name */
    const char *op;     /* HLO op of its first occurrence, "" when unknown */
    uint32_t registers, static_shared, dynamic_shared;
    uint32_t grid[3], block[3];
    double occupancy;   /* percent, 0 when unknown */
    uint64_t count;
    int64_t total_ps, min_ps, max_ps;
    int autotuning;     /* 1: XLA's autotuner's, while a host compiled (jp_op_stat.autotuning) */
} jp_kernel_stat;

/* One kernel (or copy, memset) on one device, its correlated launches summed (launch.c). Times
 * of a launch: api = the host call's duration; queue = device start - call end (negative when
 * the call returned after the work began: synchronous copies); delay = device start - call start. */
typedef struct jp_launch_stat {
    const char *name;         /* the kernel or copy */
    const char *api;          /* the launch call of its first launch ("cuLaunchKernel"), "" when none matched */
    uint32_t device;          /* index into jp_analysis.devices */
    int kernel;               /* 1: a kernel; 0: a copy or memset */
    uint64_t count;           /* its device events with a correlation id */
    uint64_t matched;         /* of those, with their launch call found; a call that queued several
                               * (a CUDA graph's kernels) counts once, on its first event's row, and
                               * its api, queue and delay times with it */
    uint64_t n_short;         /* matched kernels shorter than their launch call */
    uint64_t n_host_wait;     /* launches that found the device idle (the gap before went to the host) */
    int64_t kernel_ps;        /* summed device time */
    int64_t api_ps, queue_ps, delay_ps; /* summed over the matched launches */
    int64_t queue_max_ps, delay_max_ps;
} jp_launch_stat;

/* One stream of one device (a GPU plane's line with correlated work, launch.c): its idle gaps
 * split by HTA's rule per stream (_analyze_idle_time_for_stream), as jp_device's over the union. */
typedef struct jp_launch_stream {
    uint32_t device;          /* index into jp_analysis.devices */
    const char *name;         /* the line's name ("Stream #13(Compute)") */
    int64_t id;               /* the line's id (the stream id) */
    uint64_t events;          /* its correlated device events */
    uint64_t n_launched;      /* of those, matched to their launch call (a graph's kernels once) */
    int64_t first_ps, last_ps; /* its first event's start, its last end */
    int64_t busy_ps;          /* the union of its events */
    int64_t idle_host_ps, idle_kernel_ps, idle_other_ps; /* its gaps, by cause (as jp_device's) */
} jp_launch_stream;

/* The launch queue's depth over time on one device (launch.c): a step function, depth from t_ps
 * until the next point. */
typedef struct jp_queue_point {
    int64_t t_ps;
    uint32_t depth;
} jp_queue_point;

enum { JP_QUEUE_POINTS_MAX = 2048 }; /* a device with more changes is downsampled */

typedef struct jp_queue_series {
    uint32_t device;          /* index into jp_analysis.devices */
    uint64_t n_changes;       /* instants at which its depth changed */
    int64_t bucket_ps;        /* 0: every change is a point; else downsampled: each point is the
                               * most outstanding within its bucket of this length from t_ps, and
                               * a run of buckets without change the depth it carries */
    const jp_queue_point *points;
    size_t n_points;
} jp_queue_series;

typedef struct jp_memory_sample {
    int64_t t_ps;
    int64_t bytes_in_use;
} jp_memory_sample;

typedef struct jp_memory_stat {
    const char *allocator;   /* its name, or "device N" (libtpu's index_on_host) */
    int64_t peak_bytes;      /* most bytes in use (allocated + reserved) during the capture */
    int64_t peak_t_ps;
    int64_t lifetime_peak_bytes; /* the allocator's own peak_bytes_in_use since it was created
                                  * (may predate the capture), 0 when not recorded */
    uint64_t n_events;    /* allocation + deallocation events */
    jp_memory_sample *samples; /* at most 1000, evenly spaced over the events */
    size_t n_samples;
} jp_memory_stat;

/* ---- memory at the peak: XLA's buffer assignment, per compiled module ----------------------
 * From the BufferAssignmentProto that the HloProto in /host:metadata carries next to the module
 * (CPU captures too): what XProf's memory viewer shows for memory colour 0 (device memory; host
 * memory on CPU), plus each buffer's Python source. Program order is the order of the heap
 * simulator's events. docs/design.md "Memory at the peak" defines the timeline and the peak. */

typedef enum jp_buffer_kind {
    JP_BUFFER_PARAMETER = 0, /* an entry parameter, donated or not: live for the whole program */
    JP_BUFFER_OUTPUT,        /* may be live out of the program: live for the whole program */
    JP_BUFFER_CONSTANT,      /* a constant: live for the whole program */
    JP_BUFFER_TEMPORARY,     /* on the heap: live from its definition to its last use */
    JP_BUFFER_SMALL,         /* the one row that sums every buffer under 16 KiB live at the peak */
    JP_BUFFER_KIND_COUNT
} jp_buffer_kind;

typedef struct jp_buffer {
    int64_t id;                   /* XLA's logical buffer id; -1 for the small row */
    int64_t bytes;                /* as allocated (padded and tiled): what it costs */
    int64_t unpadded_bytes;       /* the dense size of its shape, without layout padding */
    int kind;                     /* jp_buffer_kind */
    const char *instruction;      /* the HLO instruction that defines it, "{i,j}" added for an
                                   * element of a tuple; "" for the small row */
    const char *opcode;           /* that instruction's opcode, "" when unknown */
    const char *shape;            /* "f32[4096,4096]" (no layout), "" when unknown */
    const char *op_name;          /* the instruction's own metadata.op_name, "" when none */
    const char *source;           /* "file:line" of the user's code, as jp_op_stat.source */
    const char *function;         /* the function of that line, "" when unknown */
    const jp_source_frame *stack; /* the whole recorded Python stack, innermost frame first */
    uint32_t n_stack;             /* frames in stack; 0 when the HLO holds no stack */
    uint32_t n_small;             /* the small row: how many buffers it sums; else 0 */
    int64_t start, end;           /* its life in program order: the heap event that allocated it
                                   * and the one that freed it (the last event when never freed);
                                   * -1 and -1 for buffers live for the whole program */
} jp_buffer;

typedef struct jp_module_memory {
    const char *name;             /* the module as XProf names it: "jit_step(6)" */
    const char *host;             /* the host whose metadata holds it */
    uint64_t runs;                /* its executions in the profile; 0: compiled, never run */
    int64_t peak_bytes;           /* most bytes live at once: always_live_bytes + the heap's peak */
    int64_t peak_unpadded_bytes;  /* the same without layout padding */
    int64_t peak_index;           /* the heap event at which the heap first reaches its peak;
                                   * -1 without heap events */
    const char *peak_instruction; /* the instruction that event processes, "" without one */
    const char *peak_computation; /* and its computation (a while body, ...), "" without one */
    int64_t always_live_bytes;    /* the allocations live for the whole program (parameters,
                                   * outputs, constants; thread-local ones left out, as XProf) */
    int64_t kind_bytes[JP_BUFFER_KIND_COUNT]; /* always_live_bytes by kind (temporary, small: 0) */
    int64_t total_bytes;          /* every allocation but thread-local ones: the peak with
                                   * fragmentation */
    int64_t parameter_bytes;      /* entry parameters: memory_analysis()'s argument size */
    int64_t output_bytes;         /* maybe-live-out allocations: its output size */
    int64_t alias_bytes;          /* parameters aliased with an output (donated): its alias size */
    int64_t temp_bytes;           /* total_bytes - always_live_bytes: its temp size */
    int64_t *timeline;            /* n_timeline points: bytes live just before each heap event,
                                   * then after the last one; always_live_bytes included */
    const char **timeline_instructions; /* the instruction each event processes; "" at the end */
    size_t n_timeline;            /* heap events + 1, or 0 without heap events */
    jp_buffer *buffers;           /* live at the peak, largest first (ties in program order), the
                                   * small row last */
    size_t n_buffers;
    const char *note;             /* why the heap part is missing (e.g. a buffer freed twice), or "" */
} jp_module_memory;

/* ABOVE_PEAK: a rate above the physical peak it is compared with, which no hardware reaches: the
 * peak is wrong or the work is misattributed. Never rated good (docs/design.md "Device peaks"). */
typedef enum jp_rating {
    JP_RATING_NA = -1, JP_RATING_GOOD = 0, JP_RATING_WARNING, JP_RATING_BAD, JP_RATING_ABOVE_PEAK
} jp_rating;

typedef struct jp_kpi {
    const char *name;  /* "device utilization", "kernel duration", ... */
    double value;
    const char *unit;  /* "%", "ms", "s" */
    int rating;        /* jp_rating; NA when the profile cannot tell */
} jp_kpi;

typedef struct jp_finding {
    const char *id;       /* stable id: "many_small_ops", "device_idle", ... */
    int severity;         /* jp_rating: WARNING or BAD */
    const char *title;
    const char *evidence; /* numbers, names and steps behind it */
    const char *fix;      /* what to change */
} jp_finding;

/* Multi-host profiles (a run with one file per host or process, as jax.distributed jobs write):
 * each host is also analysed alone, and the hosts' clocks are put on one time axis.
 *
 * Clock alignment. Every host's events are timed from its own capture's start. Where the files
 * record that start on the wall clock (the Task Environment plane's profile_start_time), hosts
 * are first placed by it. Then, where two hosts share numbered steps that end in collectives, the
 * end of each step's last collective is one instant seen by both (a collective completes on every
 * participant together), so the median difference of those ends over the shared steps gives the
 * offset; it corrects wall-clock skew between machines. A host without such steps keeps the
 * wall-clock placement. Every time in jp_analysis (the merged model) is on that shared axis.
 *
 * Stragglers. In a synchronous job every host waits in its collectives for the last one to
 * arrive, so in each shared step the host with the least collective time is the one the others
 * waited for. It is named the step's straggler when the others' median collective time exceeds
 * its own by at least 10% of the step and 1 ms; that excess is how long it held them back. */

typedef struct jp_host_stat {
    const char *name;            /* as in jp_analysis.hosts */
    int64_t offset_ps;           /* added to the host's own times to put them on the shared axis */
    const char *clock;           /* how offset_ps was found: "reference", "collective ends",
                                  * "wall clock" or "none" (session starts taken as simultaneous) */
    uint32_t n_sync;             /* shared steps behind a "collective ends" offset */
    int64_t sync_spread_ps;      /* median distance of those steps' own offsets from offset_ps */
    jp_step *steps;              /* the host's own steps and breakdown, on the shared axis */
    size_t n_steps;
    jp_step_summary step_summary;
    jp_op_stat *ops;             /* its ops by total time (device indexes jp_analysis.devices) */
    size_t n_ops;
    int64_t op_self_ps;          /* sum of its ops' self time */
    int64_t collective_ps;       /* collective part of its steps */
    int64_t wait_ps;             /* of that, the time beyond the least collective time of any
                                  * host in the same step: waiting for others */
    uint32_t n_straggling;       /* steps where it was the straggler */
} jp_host_stat;

typedef struct jp_straggler {
    int64_t step_num;
    uint32_t host;               /* index into host_stats */
    int64_t behind_ps;           /* the others' median collective time minus its own */
    int64_t step_ps;             /* the step's median time over the hosts */
} jp_straggler;

/* One thing that makes the capture itself incomplete (jp_analysis.health). */
typedef struct jp_health {
    const char *kind; /* "error", "warning": the profiler's own words (XSpace errors, warnings);
                       * "empty device": a device plane without events while its host dispatched;
                       * "no HLO": a module that ran without an HloProto in the metadata */
    const char *host; /* the host whose XSpace says so */
    const char *text; /* the profiler's message, or ours naming the device or module */
} jp_health;
/* One collective op (jaxprof comm): its instances on every device, an asynchronous -start/-done
 * pair as one instance spanning start to done. docs/design.md "Communication" defines each number. */
typedef struct jp_comm_stat {
    const char *module;
    const char *name;        /* the op; an async pair by its start's name ("all-reduce-start.1") */
    const char *type;        /* "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                              * "collective-permute", ... */
    uint32_t n_devices;      /* devices it ran on */
    uint64_t count;          /* instances, summed over the devices */
    int64_t total_ps;        /* their spans, summed */
    int64_t hidden_ps;       /* the part of those spans a compute op ran on the same device */
    int64_t exposed_ps;      /* total - hidden */
    double bytes;            /* S per instance by the nccl-tests convention, from the HLO; 0 unknown */
    uint32_t group_size;     /* n: devices per replica group, from the HLO; 0 unknown */
    double algbw;            /* bytes/s: S / mean instance time; 0 when S is unknown */
    double busbw;            /* algbw x the nccl-tests factor of its type and n; -1 unknown */
    int64_t wait_ps;         /* per instance matched across devices (the k-th on each): the spread
                              * (max - min) of exposed time, summed over instances */
    int64_t wait_max_ps;     /* the largest such spread */
    const char *last_device; /* the device that started its instance last most often; "" */
    uint32_t n_late;         /* instances it started last */
    uint64_t n_straggler;    /* (instance, device) pairs whose start is a robust outlier: median/MAD
                              * z-score above 3.5 among >= 3 devices */
    const char *straggler;   /* the device most often such an outlier; "" when none */
} jp_comm_stat;

/* A stretch of exposed communication on one device (comm.c): the union of its collectives' spans
 * less the union of its compute ops'; what the viewer's timeline draws as that device's row. */
typedef struct jp_comm_span {
    int64_t start_ps, end_ps;
    uint32_t device;         /* index into jp_analysis.devices */
} jp_comm_span;

/* One collective instance (jaxprof comm): the k-th run of a collective op on each device it ran
 * on, matched across those devices (docs/design.md "Communication"). */
typedef struct jp_comm_instance {
    const char *module, *name, *type; /* as its jp_comm_stat */
    uint64_t index;          /* k: its place among the op's instances on each device, from 0 */
    int64_t step_num;        /* the step its earliest start falls in; INT64_MIN: none */
    uint32_t n_devices;      /* devices that ran it */
    int64_t start_ps;        /* the earliest start on any device */
    int64_t last_start_ps;   /* the latest start: the last device's arrival */
    int64_t exposed_min_ps, exposed_max_ps; /* the devices' exposed time (span - hidden) */
    int64_t wait_ps;         /* exposed_max - exposed_min */
    const char *last_device; /* the device that started last */
    double z_max;            /* the largest modified z-score of a start, 0.6745 (x - median) / MAD;
                              * -1 with < 3 devices or MAD 0 */
    uint32_t n_straggler;    /* devices whose z-score is above 3.5 */
    const char *straggler;   /* the one with the largest z-score among those; "" when none */
} jp_comm_instance;

typedef struct jp_analysis {
    const char *path;           /* the xplane file, or the run directory */
    const char **hosts;
    size_t n_hosts;
    const int64_t *host_start_ns; /* per host: its capture's start on its wall clock (ns since the
                                   * epoch), 0 when the file does not record it */
    size_t n_summarized;        /* hosts read from their summary (jaxprof summarize) instead of their
                                 * file: then only the multi-host tables, devices and findings are
                                 * filled (docs/design.md "Pods") */
    int platform;               /* of the devices analysed */
    int64_t span_ps;            /* first to last event */
    int64_t first_ps;           /* the first event */
    uint64_t n_events;          /* events decoded */
    jp_device *devices;
    size_t n_devices;
    jp_op_stat *ops;            /* sorted by total time, descending */
    size_t n_ops;
    int64_t op_busy_ps;         /* sum over devices of busy time (overlap counted once) */
    double device_idle_pct;     /* idle share of the devices' own active windows: sum over devices
                                 * of (last - first activity - busy) / sum of (last - first), as
                                 * XProf's device idle time; the KPIs use the steps instead */
    int64_t op_self_ps;         /* sum of every op's self time (parallel threads/streams add up) */
    jp_step *steps;             /* in time order */
    size_t n_steps;
    jp_step_summary step_summary;
    double step_flops;          /* FLOPs per step, the mean over steps (0 without steps or counts) */
    double device_util_pct;     /* each device's busy time (the union of its ops and transfers) inside
                                 * the steps over the steps' time, averaged over the devices that ran
                                 * ops, as XProf's duty cycle; -1 without steps */
    double mfu_pct;             /* model FLOPs utilization: the steps' FLOPs / their time / the summed
                                 * peak FLOP/s of the devices that ran ops; -1 when unknown */
    jp_line_stat *lines;        /* device time by source line, by self time */
    size_t n_lines;
    int64_t line_self_ps;       /* the ops' self time that has a source line */
    const char *source_prefix;  /* the directory every user frame's file shares ("/home/me/proj/"),
                                 * which text output leaves out; "" when none */
    jp_flame_node *flame;       /* device time by Python call stack (see jp_flame_node) */
    size_t n_flame;
    jp_scope_stat *scopes;      /* device scopes then host scopes, each by total time */
    size_t n_scopes;
    jp_compile *compiles;
    size_t n_compiles;
    jp_transfer_stat transfers[JP_XFER_COUNT];
    jp_kernel_stat *kernels;    /* by total time */
    size_t n_kernels;
    uint64_t n_small_kernels;   /* kernel launches under 0.1 ms */
    jp_launch_stat *launches;   /* launch statistics per (device, kernel), by summed launch delay */
    size_t n_launches;
    jp_memory_stat *memory;     /* allocator events, per allocator */
    size_t n_memory;
    jp_module_memory *modules;  /* memory at the peak per compiled module (one entry per host and
                                 * module), largest peak first */
    size_t n_modules;
    jp_kpi *kpis;
    size_t n_kpis;
    jp_finding *findings;       /* most severe first; empty on a healthy profile */
    size_t n_findings;
    jp_host_stat *host_stats;   /* one per host, in hosts' order, when there are 2 or more; else NULL */
    size_t n_host_stats;
    const char *clock_method;   /* how the hosts' clocks were aligned, one sentence; "" for one host */
    jp_straggler *stragglers;   /* by step */
    size_t n_stragglers;
    const char **warnings;      /* what loading met that the analysis stands without, one sentence
                                 * each naming the file (events whose metadata id names no metadata,
                                 * a file that looks cut after a plane, an ignored CPU peaks file) */
    size_t n_warnings;
    int step_window;            /* 1: the analysis of a step window alone (jp_load_options.has_steps) */
    jp_health *health;          /* what the capture lacks: the XSpaces' own errors and warnings, empty
                                 * device planes, modules without HLO; empty for a complete capture */
    size_t n_health;
    jp_precision_stat *precision; /* op self time by precision, the most first; empty without ops */
    size_t n_precision;
    int64_t precision_ps;            /* the self time those classes share: every op's but the autotuner's */
    jp_comm_stat *comms;        /* collectives by total time (jaxprof comm) */
    size_t n_comms;
    int64_t comm_ps, comm_hidden_ps; /* summed over devices: jp_device.comm_ps, comm_hidden_ps */
    jp_comm_span *comm_exposed; /* every device's exposed communication, by device then time: their
                                 * lengths sum to comm_ps - comm_hidden_ps */
    size_t n_comm_exposed;
    jp_comm_instance *comm_instances; /* every collective instance, by earliest start */
    size_t n_comm_instances;
    jp_launch_stream *launch_streams; /* per device and stream with correlated work, in reading order */
    size_t n_launch_streams;
    jp_queue_series *queue_series;    /* the launch queue's depth per device with launches */
    size_t n_queue_series;
} jp_analysis;

/* ---- comparing two profiles (jaxprof.h, jp_diff_*) ------------------------------------------- */

typedef enum jp_change {
    JP_CHANGE_UNCHANGED = 0, JP_CHANGE_SLOWER, JP_CHANGE_FASTER, JP_CHANGE_ADDED, JP_CHANGE_REMOVED, JP_CHANGE_COUNT
} jp_change;

typedef enum jp_match {
    JP_MATCH_NONE = 0, /* added or removed */
    JP_MATCH_NAME,     /* same module and op name (scopes: same kind and path, renumbered) */
    JP_MATCH_OP_NAME,  /* same module, category and metadata op_name (renumbered); op renamed */
    JP_MATCH_SHAPE,    /* same module, category, scope and occurrences per step; op renamed */
    JP_MATCH_COUNT
} jp_match;

typedef struct jp_diff_row {
    const char *name;      /* op: the new run's name (the base's when removed); scope: its path */
    const char *base_name; /* the base run's name ("" when added); differs after a renumbering
                            * (an op by XLA; a scope under a renumbered layer: its old path) */
    const char *module;    /* op: HLO module; scope: "" */
    const char *category;  /* op: category; scope: "device" or "host" */
    const char *scope;     /* op: user scope path; scope: its path */
    int change;            /* jp_change */
    int match;             /* jp_match */
    double base_count, new_count; /* occurrences per step */
    double base_ps, new_ps;       /* self time per step (summed over devices) */
    double base_total_ps, new_total_ps; /* total time per step (scopes: including nested) */
    double delta_ps;              /* new_ps - base_ps */
    double delta_pct;             /* 100 * delta / base; 0 when added or removed */
    double noise_ps;              /* ops: two standard errors of delta_ps from each run's own spread of
                                   * the op (jp_noise_basis); a paired op within it is unchanged.
                                   * 0: unknown (and always for scopes) */
    int noise_basis;              /* jp_noise_basis: the least informed of the two runs' estimates */
} jp_diff_row;

/* Where an op's noise in a diff comes from, per run: its self time per step across at least
 * JP_NOISE_MIN_STEPS steps (where the analysis measured it: step_sd_ps > 0); else per execution
 * (at least two); else nothing. */
enum jp_noise_basis { JP_NOISE_NONE = 0, JP_NOISE_EXECUTIONS, JP_NOISE_STEPS, JP_NOISE_BASIS_COUNT };
enum { JP_NOISE_MIN_STEPS = 3 };

typedef struct jp_diff_steps {
    size_t base_n, new_n;                  /* steps found (1 when a run has none: its whole span) */
    double base_mean_ps, new_mean_ps;
    double base_median_ps, new_median_ps;
    double base_p90_ps, new_p90_ps;
    double change_pct;                     /* 100 * (new mean - base mean) / base mean */
    double noise_pct;                      /* 2 standard errors of that difference, % of base mean
                                            * (0 with fewer than 2 steps on a side) */
    int significant;                       /* |change_pct| > noise_pct */
    double base_part_ps[JP_PART_COUNT];    /* breakdown per step */
    double new_part_ps[JP_PART_COUNT];
} jp_diff_steps;

typedef struct jp_diff_finding {
    const char *id;
    const char *title;
    int severity;  /* jp_rating */
    int appeared;  /* 1: only in the new run; 0: only in the base run */
} jp_diff_finding;

typedef struct jp_diff {
    const char *base_path, *new_path;
    jp_diff_steps steps;
    jp_diff_row *ops;        /* by |delta_ps| descending, unchanged rows last */
    size_t n_ops;
    jp_diff_row *scopes;     /* device scopes then host scopes, each by |delta_ps| descending */
    size_t n_scopes;
    size_t op_changes[JP_CHANGE_COUNT];    /* rows per jp_change */
    size_t scope_changes[JP_CHANGE_COUNT];
    size_t op_matches[JP_MATCH_COUNT];     /* op rows per jp_match */
    jp_diff_finding *findings;             /* appeared first */
    size_t n_findings;
    jp_diff_options options;               /* as applied (defaults filled in) */
} jp_diff;

#ifdef __cplusplus
}
#endif
#endif /* JAXPROF_RESULTS_H */
