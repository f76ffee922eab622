/* xnames.h - XPlane names and XProf's rules on them (prefix jp_xn_), one copy for the model and
 * the outputs: the stat, plane and line names profilers write, which lines hold a device's own
 * events, and what a GPU stream event is (kernel, memset, copy, bookkeeping) - so the ops table
 * and the exported XLA Ops rows count the same kernels (internal). */
#ifndef JP_DECODE_XNAMES_H
#define JP_DECODE_XNAMES_H

#include <stdint.h>
#include <string.h>

#include "jaxprof/jaxprof_results.h"
#include "jaxprof/jaxprof_xspace.h"

/* ---- stat names ------------------------------------------------------------------------------- */

#define JP_XN_STAT_HLO_OP "hlo_op"                   /* the HLO instruction an event ran */
#define JP_XN_STAT_HLO_MODULE "hlo_module"           /* its module */
#define JP_XN_STAT_PROGRAM_ID "program_id"           /* the module's compilation */
#define JP_XN_STAT_RUN_ID "run_id"                   /* the execution (XLA:CPU, GPU when present) */
#define JP_XN_STAT_DEVICE_ORDINAL "device_ordinal"   /* XLA:CPU: the local device a thunk ran for */
#define JP_XN_STAT_STEP_NUM "step_num"               /* StepTraceAnnotation */
#define JP_XN_STAT_ROOT "_r"                         /* a root (step marker) TraceMe */
#define JP_XN_STAT_KERNEL_DETAILS "kernel_details"   /* a GPU kernel's launch: grid, block, registers */
#define JP_XN_STAT_MEMCPY_DETAILS "memcpy_details"   /* a GPU copy: "kind_src:... kind_dst:... size:N" */
#define JP_XN_STAT_ALLOCATOR "allocator_name"
#define JP_XN_STAT_BYTES_ALLOCATED "bytes_allocated"
#define JP_XN_STAT_BYTES_RESERVED "bytes_reserved"
#define JP_XN_STAT_PEAK_BYTES "peak_bytes_in_use"
#define JP_XN_STAT_INDEX_ON_HOST "index_on_host"     /* libtpu: which chip of the host */
#define JP_XN_STAT_FLOPS "flops"
#define JP_XN_STAT_BYTES_ACCESSED "bytes_accessed"
#define JP_XN_STAT_HLO_CATEGORY "hlo_category"
#define JP_XN_STAT_HLO_PROTO "Hlo Proto"             /* /host:metadata: a module's serialized HloProto */
#define JP_XN_STAT_PEAK_TFLOPS "peak_teraflops_per_second"
#define JP_XN_STAT_PEAK_HBM_GBPS "peak_hbm_bw_gigabytes_per_second"
#define JP_XN_STAT_FLOW_PRODUCER "_p"                /* XLA:CPU: an async op starts a flow */
#define JP_XN_STAT_FLOW_CONSUMER "_c"                /* its "end:" event ends it */
#define JP_XN_STAT_CORRELATION_ID "correlation_id"   /* CUPTI/ROCm: a launch and its kernel or copy */
#define JP_XN_TF_OP_MODULE_LEVEL "XlaModule:"      /* tf_op of a GPU kernel run outside the module's ops */
#define JP_XN_STAT_CUDA_GRAPH_ID "cuda_graph_id"     /* a kernel run inside a CUDA graph (command buffer) */
#define JP_XN_STAT_CUDA_GRAPH_NODE "cuda_graph_node_id" /* its node in that graph */
#define JP_XN_STAT_TF_OP "tf_op"                     /* the framework op ("scope/op:Type") */
#define JP_XN_STAT_SOURCE "source"                   /* "file:line" of the op */
#define JP_XN_STAT_DEVICE_DURATION "device_duration_ps" /* libtpu: the op's time by the core's clock */
#define JP_XN_STAT_ANNOTATION "annotation"           /* TensorFlow's "scope/op#args#" */
#define JP_XN_STAT_CLOCK_RATE "clock_rate"           /* GPU plane: kHz */
#define JP_XN_STAT_CORE_COUNT "core_count"           /* GPU plane: SMs or compute units */
#define JP_XN_STAT_MEMORY_BANDWIDTH "memory_bandwidth" /* GPU plane: bytes/s */
#define JP_XN_STAT_MEMORY_SIZE "memory_size" /* GPU plane: bytes of device memory */
#define JP_XN_STAT_CC_MAJOR "compute_cap_major"
#define JP_XN_STAT_CC_MINOR "compute_cap_minor"
#define JP_XN_STAT_DEVICE_VENDOR "device_vendor"
#define JP_XN_STAT_DEVICE_TYPE "device_type_string" /* libtpu: "TPU v6 Lite" */
#define JP_XN_STAT_PROFILE_START "profile_start_time" /* Task Environment: capture start, ns since the epoch */

/* ---- plane and line names ------------------------------------------------------------------- */

#define JP_XN_PLANE_METADATA "/host:metadata"     /* HLO protos, no events */
#define JP_XN_PLANE_HOST_CPU "/host:CPU"          /* the host's threads; XLA:CPU's only device */
#define JP_XN_PLANE_HOST "/host:"                 /* prefix of every host plane */
#define JP_XN_PLANE_DEVICE "/device:"             /* prefix of every device plane */
#define JP_XN_PLANE_TPU "/device:TPU"             /* prefix of TPU cores */
#define JP_XN_PLANE_CUSTOM "/device:CUSTOM:"      /* prefix of other subsystems' traces (Megascale DCN) */
#define JP_XN_PLANE_TASK_ENV "Task Environment"   /* capture-wide facts (profile_start_time) */

#define JP_XN_LINE_STEPS "Steps"
#define JP_XN_LINE_XLA_MODULES "XLA Modules"
#define JP_XN_LINE_XLA_OPS "XLA Ops"
#define JP_XN_LINE_CUPTI_OVERHEAD "CUPTI overhead"  /* the GPU tracer's own work */
#define JP_XN_LINE_WORKER "tf_"                     /* prefix of TSL thread pools: XLA runtime threads */

/* ---- rules ------------------------------------------------------------------------------------- */

/* Bounds that keep every later sum of durations and difference of times far from int64 overflow:
 * an event starts within +-JP_XN_TIME_LIMIT_PS and lasts at most that long, and the events of one
 * load last at most that long together (2^61 ps, 26 days). Beyond that the input is corrupt. */
#define JP_XN_TIME_LIMIT_PS ((int64_t)1 << 61)

/* An event's start (line timestamp + offset) and duration in ps, or JP_ERR_CORRUPT naming its
 * byte offset in xs when either is out of bounds. */
int jp_xn_event_span(const jp_xspace *xs, const jp_line *ln, const jp_event *ev, int64_t *start_ps, int64_t *dur_ps,
                     jp_error *err);

static inline int jp_xn_has_prefix(jp_str s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.len >= n && memcmp(s.ptr, prefix, n) == 0;
}

/* 1 when needle occurs in s ("" occurs everywhere). */
int jp_xn_contains(jp_str s, const char *needle);

/* What a plane is, by its name. */
typedef enum jp_xn_plane {
    JP_XN_OTHER,    /* anything else ("Task Environment", unknown planes) */
    JP_XN_METADATA, /* /host:metadata */
    JP_XN_HOST,     /* another /host: plane */
    JP_XN_DEVICE,   /* a /device: plane of a TPU or GPU */
    JP_XN_CUSTOM    /* /device:CUSTOM:..., no device of its own */
} jp_xn_plane;

jp_xn_plane jp_xn_plane_kind(const jp_plane *plane);
/* JP_PLATFORM_TPU or JP_PLATFORM_GPU for a device plane (every non-TPU device reads as a GPU). */
int jp_xn_device_platform(const jp_plane *plane);
/* 1 for a line a profiler derived from the raw events (Steps, TensorFlow Ops, XLA Ops, ...): a
 * reserved thread id (0xdeadbeef + k) or one of the derived rows' names. */
int jp_xn_line_is_derived(const jp_line *line);
/* 1 when any of the plane's lines is derived: its writer saved rows of its own. */
int jp_xn_plane_has_derived(const jp_plane *plane);
/* 1 for a device plane's line that holds the device's own events: a TPU's "XLA Ops"; a GPU's
 * streams, never the tracer's own line nor a derived one (which repeats the streams' kernels). */
int jp_xn_device_line_is_stream(const jp_plane *plane, const jp_line *line);

/* What a GPU stream event is. A copy is one of jp_xfer_kind (JP_XFER_H2D, _D2H, _D2D). */
enum jp_xn_gpu_event {
    JP_XN_GPU_KERNEL = JP_XFER_COUNT, /* device execution: a kernel, summed by jp_kernel_sum */
    JP_XN_GPU_MEMSET,                 /* device work for its op (XLA zero-fills buffers), no kernel */
    JP_XN_GPU_BOOKKEEPING,            /* CUPTI's allocator, residency and overhead records: no work */
};
/* What an event's name alone says (asked once per metadata entry): a jp_xfer_kind, or a hint
 * for jp_xn_gpu_event_kind. */
int jp_xn_gpu_name_kind(jp_str name);
/* The kind of a GPU stream event from its name, name_kind (jp_xn_gpu_name_kind(name)) and its
 * memcpy_details stat ("" when absent). */
int jp_xn_gpu_event_kind(jp_str name, int name_kind, jp_str memcpy_details);
/* 1 for the kinds that are an occurrence of the event's op, in the ops table and the XLA Ops row
 * alike (XProf's GPU op metrics: one occurrence per kernel). */
static inline int jp_xn_gpu_is_op_work(int kind) { return kind == JP_XN_GPU_KERNEL || kind == JP_XN_GPU_MEMSET; }
/* The unsigned number after `key` ("size:") in a details string, 0 when absent. */
uint64_t jp_xn_details_uint(jp_str details, const char *key);

#endif
