/* peaks.c - a device's peak FLOP/s and memory bandwidth, the roofs of the roofline: from the
 * peaks libtpu writes on its planes, from the capabilities CUPTI and ROCm write on GPU planes
 * (clock x cores x per-core rate), from a table of TPU chips, or from the user's flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int jp_cpu_peaks_read(const char *path, jp_str hostname, double *tflops, double *gbps) {
    FILE *f = path && hostname.len ? fopen(path, "r") : NULL;
    if (!f) return 0;
    char line[512];
    int host_ok = 0;
    *tflops = *gbps = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq) continue;
        *eq = '\0';
        const char *key = line, *value = eq + 1;
        if (strcmp(key, "hostname") == 0)
            host_ok = strlen(value) == hostname.len && memcmp(value, hostname.ptr, hostname.len) == 0;
        else if (strcmp(key, "peak_tflops") == 0) *tflops = strtod(value, NULL);
        else if (strcmp(key, "peak_gbps") == 0) *gbps = strtod(value, NULL);
    }
    fclose(f);
    return host_ok && *tflops > 0 && *tflops < 1e6 && *gbps > 0 && *gbps < 1e7;
}
