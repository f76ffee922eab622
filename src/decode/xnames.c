/* xnames.c - XProf's rules on XPlane names: plane kinds, derived and stream lines, GPU events. */
#include "decode/xnames.h"

#include "base/error.h"

int jp_xn_contains(jp_str s, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return 1;
    if (s.len < n) return 0;
    const char *p = s.ptr, *last = s.ptr + (s.len - n); /* the last place a match may start */
    while (p <= last && (p = memchr(p, needle[0], (size_t)(last - p) + 1)) != NULL) {
        if (memcmp(p, needle, n) == 0) return 1;
        p++;
    }
    return 0;
}

int jp_xn_event_span(const jp_xspace *xs, const jp_line *ln, const jp_event *ev, int64_t *start_ps, int64_t *dur_ps,
                     jp_error *err) {
    const int64_t lim = JP_XN_TIME_LIMIT_PS;
    int64_t ts = ln->timestamp_ns, off = ev->offset_ps, d = ev->duration_ps > 0 ? ev->duration_ps : 0;
    if (ts < -lim / 1000 || ts > lim / 1000 || off < -lim || off > lim || ts * 1000 + off < -lim ||
        ts * 1000 + off > lim || d > lim) {
        unsigned long long at = (unsigned long long)(ev->raw.ptr - jp_xspace_input(xs).ptr);
        return jp_error_set(err, JP_ERR_CORRUPT, at,
                            "corrupt XEvent at byte %llu: time out of range (line at %lld ns, offset %lld ps, "
                            "duration %lld ps)", at, (long long)ts, (long long)off, (long long)d);
    }
    *start_ps = ts * 1000 + off;
    *dur_ps = d;
    return JP_OK;
}

jp_xn_plane jp_xn_plane_kind(const jp_plane *plane) {
    if (jp_str_eq(plane->name, JP_XN_PLANE_METADATA)) return JP_XN_METADATA;
    if (jp_xn_has_prefix(plane->name, JP_XN_PLANE_HOST)) return JP_XN_HOST;
    if (jp_xn_has_prefix(plane->name, JP_XN_PLANE_CUSTOM)) return JP_XN_CUSTOM;
    if (jp_xn_has_prefix(plane->name, JP_XN_PLANE_DEVICE)) return JP_XN_DEVICE;
    return JP_XN_OTHER;
}

int jp_xn_device_platform(const jp_plane *plane) {
    return jp_xn_has_prefix(plane->name, JP_XN_PLANE_TPU) ? JP_PLATFORM_TPU : JP_PLATFORM_GPU;
}

/* Rows that profilers derive from the raw events and may save beside them (TensorFlow's profiler,
 * files written again after XProf's processing). XLA/TSL reserve them thread ids from 0xdeadbeef
 * (kThreadIdDerivedMin in trace_utils.h) up: 290 ids in current versions, 8 in older ones. */
enum { DERIVED_ID_MIN = 0xdeadbeef, DERIVED_ID_COUNT = 290 };
static const char *const DERIVED_NAMES[] = {
    JP_XN_LINE_STEPS, JP_XN_LINE_XLA_MODULES, JP_XN_LINE_XLA_OPS, "TensorFlow Ops", "Framework Ops",
    "TensorFlow Name Scope", "Framework Name Scope", "Launch Stats", "Source code", "Kernel Launch",
    "Async XLA Ops", "XLA TraceMe",
};

int jp_xn_line_is_derived(const jp_line *line) {
    /* the id is a 32-bit thread id, written sign-extended (0xffffffffdeadbeef) or not */
    uint64_t id = (uint64_t)line->id, high = id >> 32;
    uint32_t low = (uint32_t)id;
    if ((high == 0 || high == 0xffffffffu) && low >= DERIVED_ID_MIN && low - DERIVED_ID_MIN < DERIVED_ID_COUNT) return 1;
    for (size_t i = 0; i < sizeof DERIVED_NAMES / sizeof DERIVED_NAMES[0]; i++)
        if (jp_str_eq(line->name, DERIVED_NAMES[i])) return 1;
    return 0;
}

int jp_xn_plane_has_derived(const jp_plane *plane) {
    for (size_t i = 0; i < plane->n_lines; i++)
        if (jp_xn_line_is_derived(&plane->lines[i])) return 1;
    return 0;
}

int jp_xn_device_line_is_stream(const jp_plane *plane, const jp_line *line) {
    if (jp_xn_device_platform(plane) == JP_PLATFORM_TPU) return jp_str_eq(line->name, JP_XN_LINE_XLA_OPS);
    return !jp_str_eq(line->name, JP_XN_LINE_CUPTI_OVERHEAD) && !jp_xn_line_is_derived(line);
}

/* jp_xn_gpu_name_kind's hints beyond a jp_xfer_kind: another copy ("MemcpyOther": the details
 * decide), or anything else. */
enum { NAME_MEMCPY = JP_XN_GPU_BOOKKEEPING + 1, NAME_OTHER };

int jp_xn_gpu_name_kind(jp_str name) {
    if (jp_xn_contains(name, "H2D") || jp_xn_contains(name, "HtoD")) return JP_XFER_H2D;
    if (jp_xn_contains(name, "D2H") || jp_xn_contains(name, "DtoH")) return JP_XFER_D2H;
    if (jp_xn_contains(name, "D2D") || jp_xn_contains(name, "DtoD") || jp_xn_contains(name, "P2P")) return JP_XFER_D2D;
    return jp_xn_contains(name, "emcpy") ? NAME_MEMCPY : NAME_OTHER;
}

/* A copy's kind from the name's hint and its memcpy details ("kind_src:host kind_dst:device
 * size:4096 ..."), or -1 for no copy. In the details, CUPTI's pinned and pageable memory kinds
 * are host memory too: copies between them and the device are what a "MemcpyOther" event may hold. */
static int transfer_kind(int name_kind, jp_str details) {
    static const char *const HOST_KINDS[] = {"host", "pinned", "pageable"};
    if (name_kind < JP_XFER_COUNT) return name_kind;
    if (!details.len && name_kind == NAME_OTHER) return -1;
    int on_host[2] = {0, 0}; /* source, destination */
    const char *const keys[2] = {"kind_src:", "kind_dst:"};
    for (int side = 0; side < 2; side++) {
        size_t n = strlen(keys[side]);
        for (size_t i = 0; i + n <= details.len; i++) {
            if (memcmp(details.ptr + i, keys[side], n) != 0 || (i && details.ptr[i - 1] != ' ')) continue;
            jp_str kind = {details.ptr + i + n, 0};
            while (i + n + kind.len < details.len && kind.ptr[kind.len] != ' ') kind.len++;
            for (size_t k = 0; k < sizeof HOST_KINDS / sizeof HOST_KINDS[0]; k++)
                on_host[side] |= jp_str_eq(kind, HOST_KINDS[k]);
            break;
        }
    }
    if (on_host[0] && !on_host[1]) return JP_XFER_H2D;
    if (!on_host[0] && on_host[1]) return JP_XFER_D2H;
    return JP_XFER_D2D;
}

/* "Memset", or "Memset 3" as JAX 0.11 names it: the number is CUPTI's memory kind (3 device, 0 unknown:
 * its Memset_details say the same). */
static int is_memset(jp_str name) {
    if (name.len < 6 || memcmp(name.ptr, "Memset", 6) != 0) return 0;
    if (name.len == 6) return 1;
    if (name.ptr[6] != ' ' || name.len == 7) return 0;
    for (size_t i = 7; i < name.len; i++)
        if (name.ptr[i] < '0' || name.ptr[i] > '9') return 0;
    return 1;
}

int jp_xn_gpu_event_kind(jp_str name, int name_kind, jp_str memcpy_details) {
    int xk = transfer_kind(name_kind, memcpy_details);
    if (xk >= 0) return xk;
    /* CUPTI names activity that has no name of its own by its type: allocator and residency
     * bookkeeping and CUPTI's own overhead are no device execution, so neither kernels nor ops. */
    static const char *const BOOKKEEPING[] = {"MemoryAlloc", "MemoryFree", "MemoryResidency", "Overhead",
                                              "UnifiedMemory", "HostRegister", "HostUnregister"};
    for (size_t i = 0; i < sizeof BOOKKEEPING / sizeof BOOKKEEPING[0]; i++)
        if (jp_str_eq(name, BOOKKEEPING[i])) return JP_XN_GPU_BOOKKEEPING;
    return is_memset(name) ? JP_XN_GPU_MEMSET : JP_XN_GPU_KERNEL;
}

uint64_t jp_xn_details_uint(jp_str details, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i + n <= details.len; i++) {
        if (memcmp(details.ptr + i, key, n) != 0 || (i && details.ptr[i - 1] != ' ')) continue;
        uint64_t v = 0;
        for (size_t j = i + n; j < details.len && details.ptr[j] >= '0' && details.ptr[j] <= '9'; j++)
            v = v * 10 + (uint64_t)(details.ptr[j] - '0');
        return v;
    }
    return 0;
}
