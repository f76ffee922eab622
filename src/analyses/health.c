/* health.c - what the capture itself lacks (jp_analysis.health): the profiler's own errors and
 * warnings (XSpace fields 2 and 3), device planes left empty while their host dispatched programs
 * (device tracing failed or was off), and modules that ran without an HloProto in the metadata (no
 * FLOPs or memory for them). A complete capture has none. */
#include <string.h>

#include "analyses/analyses.h"
#include "decode/chrome.h"
#include "base/vec.h"

/* The most modules without HLO named one by one; past it, one entry counts the rest. */
enum { HEALTH_MODULES_MAX = 32 };

static int add(jp_vec *out, const char *kind, const char *host, const char *text) {
    jp_health *h = text ? jp_vec_push(out, sizeof *h) : NULL;
    if (!h) return JP_ERR_NOMEM;
    *h = (jp_health){kind, host, text};
    return JP_OK;
}

/* Which device a host's index range holds: devices of host h are [first_device, next host's). */
static size_t host_of_device(const jp_model *m, size_t d) {
    size_t h = 0;
    while (h + 1 < m->hosts.n && JP_VEC_AT(&m->hosts, jp_model_host, h + 1).first_device <= d) h++;
    return h;
}

static int is_accelerator(const jp_device *dev) {
    return dev->platform != JP_PLATFORM_CPU && strncmp(dev->name, "/device:", 8) == 0 &&
           strncmp(dev->name, "/device:CUSTOM:", 15) != 0;
}

/* Host h's GPU or TPU planes, when it has some and none of them recorded an op or a transfer while
 * the host dispatched programs: the host saw the launches, the devices nothing. One device of
 * several left empty is no sign (a one-device program on an eight-GPU machine), so only a host
 * whose every device is empty is named, with its devices. */
static int empty_host(const jp_model *m, jp_arena *arena, const jp_analysis *a, size_t h, uint64_t dispatches,
                      jp_vec *out) {
    char buf[512];
    jp_text names = jp_text_make(buf, sizeof buf); /* many devices: cut with "..." */
    size_t n = 0;
    for (size_t d = 0; d < a->n_devices && d < m->devices.n; d++) {
        const jp_device *dev = &a->devices[d];
        if (host_of_device(m, d) != h || !is_accelerator(dev)) continue;
        if (dev->n_ops || dev->busy_ps) return JP_OK;
        jp_text_printf(&names, "%s%s", n++ ? ", " : "", dev->name);
    }
    if (!n || !dispatches) return JP_OK;
    const char *text = jp_analysis_printf(
        arena, "%s recorded no events while the host dispatched %llu program%s: device tracing failed or was off "
               "(device_tracer_level 0), or its events were dropped", buf, (unsigned long long)dispatches,
        dispatches == 1 ? "" : "s");
    return add(out, "empty device", JP_VEC_AT(&m->hosts, jp_model_host, h).name, text);
}

static int empty_devices(const jp_model *m, jp_arena *arena, const jp_analysis *a, jp_vec *out) {
    if (!m->hosts.n || !a->n_devices) return JP_OK;
    uint64_t *dispatches = jp_arena_alloc(arena, m->hosts.n * sizeof *dispatches);
    if (!dispatches) return JP_ERR_NOMEM;
    memset(dispatches, 0, m->hosts.n * sizeof *dispatches);
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (h->is_dispatch && h->depth == 0) dispatches[jp_model_line_host(m, h->line)]++;
    }
    for (size_t h = 0; h < m->hosts.n; h++)
        if (empty_host(m, arena, a, h, dispatches[h], out)) return JP_ERR_NOMEM;
    return JP_OK;
}

static int has_hlo(const jp_model *m, const char *module, uint32_t host) {
    for (size_t i = 0; i < m->hlo.n; i++) {
        const jp_hlo_module *hm = &JP_VEC_AT(&m->hlo, jp_hlo_module, i);
        if (hm->host == host && hm->name && strcmp(hm->name, module) == 0) return 1;
    }
    return 0;
}

/* A host read from a Chrome trace: it has no HloProto by the format (its capture note says so). */
static int from_chrome(const jp_model *m, uint32_t host) {
    const char *name = JP_VEC_AT(&m->hosts, jp_model_host, host).name;
    for (size_t i = 0; i < m->capture_notes.n; i++) {
        const jp_health *h = &JP_VEC_AT(&m->capture_notes, jp_health, i);
        if (h->host && name && strcmp(h->host, name) == 0 && strncmp(h->text, JP_CHROME_NOTE_PREFIX, strlen(JP_CHROME_NOTE_PREFIX)) == 0) return 1;
    }
    return 0;
}

typedef struct lacking {
    const char *module;
    uint32_t host;
} lacking;

/* Adds (module, host) to *named unless it has HLO or is there already; consecutive calls mostly
 * repeat one module (op definitions are grouped by module), which *last answers without a search. */
static int consider(const jp_model *m, const char *module, uint32_t host, jp_vec *named, lacking *last) {
    if (!module || !module[0] || host >= m->hosts.n || (last->module == module && last->host == host)) return JP_OK;
    *last = (lacking){module, host};
    if (has_hlo(m, module, host) || from_chrome(m, host)) return JP_OK;
    for (size_t i = 0; i < named->n; i++) {
        const lacking *l = &JP_VEC_AT(named, lacking, i);
        if (l->host == host && strcmp(l->module, module) == 0) return JP_OK;
    }
    lacking *slot = jp_vec_push(named, sizeof *slot);
    if (!slot) return JP_ERR_NOMEM;
    *slot = (lacking){module, host};
    return JP_OK;
}

/* Modules whose ops ran on a device (or whose executions a device recorded) with no HloProto from
 * their host. Host dispatches are left out: they name the function, not always its module; so are
 * the modules XLA's autotuner runs while it compiles (autotune.c). */
static int modules_without_hlo(const jp_model *m, jp_arena *arena, jp_vec *out) {
    jp_vec named = {0}; /* lacking */
    lacking last = {0};
    int rc = JP_OK;
    for (size_t i = 0; i < m->opdefs.n && rc == JP_OK; i++) {
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, i);
        if (d->device < m->devices.n && !d->no_xla_op && !d->autotuning) /* the autotuner's modules have none */
            rc = consider(m, d->module, (uint32_t)host_of_device(m, d->device), &named, &last);
    }
    for (size_t i = 0; i < m->execs.n && rc == JP_OK; i++) {
        const jp_exec *e = &JP_VEC_AT(&m->execs, jp_exec, i);
        if (e->device != UINT32_MAX) rc = consider(m, e->module, e->host, &named, &last);
    }
    for (size_t i = 0; i < named.n && i < HEALTH_MODULES_MAX && rc == JP_OK; i++) {
        const lacking *l = &JP_VEC_AT(&named, lacking, i);
        const char *text = jp_analysis_printf(arena, "module %s ran without an HloProto in the metadata: its ops "
                                                     "have no FLOPs, bytes or memory (enable_hlo_proto)", l->module);
        rc = add(out, "no HLO", JP_VEC_AT(&m->hosts, jp_model_host, l->host).name, text);
    }
    if (rc == JP_OK && named.n > HEALTH_MODULES_MAX)
        rc = add(out, "no HLO", JP_VEC_AT(&m->hosts, jp_model_host, 0).name,
                 jp_analysis_printf(arena, "%zu more modules ran without an HloProto in the metadata",
                                    named.n - HEALTH_MODULES_MAX));
    jp_vec_free(&named);
    return rc;
}

int jp_health_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    jp_vec out = {0};
    int rc = JP_OK;
    for (size_t i = 0; i < m->capture_notes.n && rc == JP_OK; i++) {
        const jp_health *h = &JP_VEC_AT(&m->capture_notes, jp_health, i);
        rc = add(&out, h->kind, h->host, h->text);
    }
    if (rc == JP_OK) rc = empty_devices(m, arena, a, &out);
    if (rc == JP_OK) rc = modules_without_hlo(m, arena, &out);
    if (rc == JP_OK) {
        a->health = jp_analysis_copy(arena, &out, sizeof(jp_health));
        a->n_health = out.n;
        if (out.n && !a->health) rc = JP_ERR_NOMEM;
    }
    jp_vec_free(&out);
    return rc;
}
