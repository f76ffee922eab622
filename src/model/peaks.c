/* peaks.c - a device's peak FLOP/s and memory bandwidth, the roofs of the roofline: from the
 * peaks libtpu writes on its planes, from the capabilities CUPTI and ROCm write on GPU planes
 * (clock x cores x per-core rate), from a table of TPU chips, or from the user's flags. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "model/model.h"

/* Dense 16-bit matrix FLOPs per streaming multiprocessor (compute unit) per clock cycle: the
 * figure vendors' peak TFLOP/s derive from (H100 SXM: 132 SMs x 1.83 GHz x 4096 = 989 TFLOP/s). */
typedef struct gpu_rate {
    int amd, major, minor;
    double flops_per_core_cycle;
} gpu_rate;

static const gpu_rate GPU_RATES[] = { /* by compute capability, or AMD gfx major.minor */
    {0, 7, 0, 1024}, /* V100 */       {0, 7, 5, 1024}, /* T4 */    {0, 8, 0, 2048}, /* A100 */
    {0, 8, 6, 1024}, /* A10, A40 */   {0, 8, 9, 1024}, /* L4, L40S */ {0, 9, 0, 4096}, /* H100, H200 */
    {0, 10, 0, 8192}, /* B200 */      {1, 9, 0, 1024}, /* MI200 (gfx90a) */
    {1, 9, 4, 2048}, /* MI300 (gfx942) */ {1, 9, 5, 4096}, /* MI350 (gfx950) */
};

/* The rate of the nearest capability at or below (major, minor) of the same vendor, 0 if none. */
static double gpu_rate_of(int amd, int major, int minor) {
    double rate = 0;
    int best = -1;
    for (size_t i = 0; i < sizeof GPU_RATES / sizeof GPU_RATES[0]; i++) {
        const gpu_rate *g = &GPU_RATES[i];
        int cc = g->major * 100 + g->minor;
        if (g->amd == amd && cc <= major * 100 + minor && cc > best) best = cc, rate = g->flops_per_core_cycle;
    }
    return rate;
}

/* Data-sheet HBM bandwidth of GPUs whose runtime reports another: ROCm's memory_bandwidth for
 * gfx942 and gfx950 is half the data sheet's (2662.4 GB/s on an MI300X rated 5.3 TB/s, 4096 GB/s
 * on an MI355X rated 8 TB/s: the memory clock times the bus width, without the double data
 * rate), so kernels measured at 2.9 TB/s read as 110 % of a "peak". A chip is told by its
 * gfx version, compute units and memory size. */
typedef struct gpu_spec {
    int major, minor;           /* AMD gfx major.minor */
    double cores;               /* compute units */
    double min_gib, max_gib;    /* device memory, GiB */
    double gbps;                /* data-sheet HBM bandwidth, GB/s */
    const char *source;         /* peak_source when it replaces the reported one */
} gpu_spec;

static const gpu_spec AMD_SPECS[] = {
    {9, 4, 304, 160, 200, 5300, "clock x cores; memory: AMD MI300X data sheet, 5.3 TB/s (ROCm reports half)"},
    {9, 4, 304, 230, 270, 6000, "clock x cores; memory: AMD MI325X data sheet, 6 TB/s (ROCm reports half)"},
    {9, 4, 228, 100, 140, 5300, "clock x cores; memory: AMD MI300A data sheet, 5.3 TB/s (ROCm reports half)"},
    {9, 5, 256, 260, 300, 8000, "clock x cores; memory: AMD MI350X/MI355X data sheet, 8 TB/s (ROCm reports half)"},
};

/* The data sheet's bandwidth (bytes/s) where it differs from what the device reported by more
 * than 10 %, with the peak source that says so; 0 otherwise. */
static double spec_bandwidth(const jp_device_caps *caps, const char **source) {
    double gib = caps->mem_size / (1024.0 * 1024 * 1024);
    for (size_t i = 0; caps->amd && i < sizeof AMD_SPECS / sizeof AMD_SPECS[0]; i++) {
        const gpu_spec *g = &AMD_SPECS[i];
        if (g->major != caps->cc_major || g->minor != caps->cc_minor || g->cores != caps->cores || gib < g->min_gib ||
            gib > g->max_gib)
            continue;
        double sheet = g->gbps * 1e9;
        if (caps->mem_bw > 0.9 * sheet && caps->mem_bw < 1.1 * sheet) return 0;
        *source = g->source;
        return sheet;
    }
    return 0;
}

typedef struct tpu_peak {
    const char *type;   /* device_type_string prefix */
    double tflops, gbps; /* per chip, dense bf16 and HBM */
} tpu_peak;

static const tpu_peak TPU_PEAKS[] = {
    {"TPU v2", 45, 600},     {"TPU v3", 123, 900},    {"TPU v4", 275, 1228},
    {"TPU v5 lite", 197, 819}, {"TPU v5e", 197, 819}, {"TPU v5p", 459, 2765}, {"TPU v5", 459, 2765},
    {"TPU v6 lite", 918, 1640}, {"TPU v6e", 918, 1640},
};

void jp_device_set_peaks(jp_device *d, const jp_device_caps *caps) {
    if (caps->peak_tflops > 0 && caps->peak_gbps > 0) { /* libtpu says so itself */
        d->peak_flops = caps->peak_tflops * 1e12, d->peak_bw = caps->peak_gbps * 1e9;
        d->peak_source = "device";
        return;
    }
    double rate = gpu_rate_of(caps->amd, caps->cc_major, caps->cc_minor);
    if (d->platform == JP_PLATFORM_GPU && rate > 0 && caps->clock_khz > 0 && caps->cores > 0 && caps->mem_bw > 0) {
        d->peak_flops = caps->cores * caps->clock_khz * 1e3 * rate;
        d->peak_bw = caps->mem_bw;
        d->peak_source = "clock x cores";
        double sheet = spec_bandwidth(caps, &d->peak_source);
        if (sheet > 0) d->peak_bw = sheet;
        return;
    }
    for (size_t i = 0; i < sizeof TPU_PEAKS / sizeof TPU_PEAKS[0]; i++)
        if (*caps->type && strncmp(caps->type, TPU_PEAKS[i].type, strlen(TPU_PEAKS[i].type)) == 0) {
            d->peak_flops = TPU_PEAKS[i].tflops * 1e12, d->peak_bw = TPU_PEAKS[i].gbps * 1e9;
            d->peak_source = "table";
            return;
        }
    d->peak_source = "";
}

void jp_device_override_peaks(jp_device *d, double peak_tflops, double peak_gbps) {
    if (peak_tflops > 0) d->peak_flops = peak_tflops * 1e12;
    if (peak_gbps > 0) d->peak_bw = peak_gbps * 1e9;
    if (peak_tflops > 0 || peak_gbps > 0) d->peak_source = "flag";
}

/* The calibration file's text, NUL-terminated in buf (cap bytes, cap > JP_CPU_PEAKS_MAX): 1, or 0
 * with why[] filled unless the file is simply absent. The file is stat'ed before it is opened, so
 * a FIFO or a device is never opened at all, and opened with O_NONBLOCK, so one swapped in between
 * cannot block; what was opened must be a regular file too. Links are followed: a calibration kept
 * elsewhere and linked here is the user's choice, and the checks make a link to /dev/zero harmless. */
static int peaks_text(const char *path, char *buf, size_t cap, char *why, size_t why_cap) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) snprintf(why, why_cap, "%s: ignored: %s", path, strerror(errno));
        return 0;
    }
    int fd = S_ISREG(st.st_mode) ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) : -1;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) close(fd), fd = -1;
    if (fd < 0) {
        snprintf(why, why_cap, "%s: ignored: not a regular file (jaxprof calibrate writes one)", path);
        return 0;
    }
    if (st.st_size > JP_CPU_PEAKS_MAX) {
        close(fd);
        snprintf(why, why_cap, "%s: ignored: %lld bytes, more than a calibration's %d", path, (long long)st.st_size,
                 JP_CPU_PEAKS_MAX);
        return 0;
    }
    size_t got = 0;
    while (got < cap - 1) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return 1;
}

int jp_cpu_peaks_path(const char *cache_dir, const char *xdg_cache_home, const char *home, char *buf, size_t cap,
                      jp_error *err) {
    int n = cache_dir && *cache_dir           ? snprintf(buf, cap, "%s/cpu_peaks", cache_dir)
            : xdg_cache_home && *xdg_cache_home ? snprintf(buf, cap, "%s/jaxprof/cpu_peaks", xdg_cache_home)
            : home && *home                     ? snprintf(buf, cap, "%s/.cache/jaxprof/cpu_peaks", home)
                                                : -1;
    if (n < 0)
        return jp_error_set(err, JP_ERR_NOT_FOUND, 0,
                            "no directory for the CPU calibration (no cache directory, XDG cache home or home)");
    if ((size_t)n >= cap)
        return jp_error_set(err, JP_ERR_LIMIT, 0, "the CPU calibration path is longer than %zu bytes", cap);
    return JP_OK;
}

int jp_cpu_peaks_read(const char *path, jp_str hostname, double *tflops, double *gbps, char *why, size_t why_cap) {
    if (why_cap) why[0] = '\0';
    *tflops = *gbps = 0;
    char *text = path && hostname.len ? malloc(JP_CPU_PEAKS_MAX + 2) : NULL;
    if (!text || !peaks_text(path, text, JP_CPU_PEAKS_MAX + 2, why, why_cap)) {
        free(text);
        return 0;
    }
    int host_ok = 0;
    for (char *line = text, *next; *line; line = next) {
        size_t len = strcspn(line, "\n");
        next = line + len + (line[len] ? 1 : 0);
        line[len] = '\0';
        line[strcspn(line, "\r")] = '\0';
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq) continue;
        *eq = '\0';
        const char *key = line, *value = eq + 1;
        if (strcmp(key, "hostname") == 0)
            host_ok = strlen(value) == hostname.len && memcmp(value, hostname.ptr, hostname.len) == 0;
        else if (strcmp(key, "peak_tflops") == 0) *tflops = strtod(value, NULL);
        else if (strcmp(key, "peak_gbps") == 0) *gbps = strtod(value, NULL);
    }
    free(text);
    return host_ok && *tflops > 0 && *tflops < 1e6 && *gbps > 0 && *gbps < 1e7;
}
