/* buffers.c - memory at the peak, per compiled module: XLA's buffer assignment replayed in program
 * order (the heap simulator's events), the peak and the buffers live at it, as XProf's memory
 * viewer computes them for memory colour 0 (docs/design.md "Memory at the peak"). */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

enum { SMALL_BUFFER = 16384 }; /* XProf's kSmallBufferSize: smaller rows are summed into one */

const char *jp_buffer_kind_name(int kind) {
    static const char *const names[] = {"parameter", "output", "constant", "temporary", "small"};
    return kind >= 0 && kind < JP_BUFFER_KIND_COUNT ? names[kind] : "?";
}

/* Sums of sizes (y >= 0), saturated both ways: a heap of absurd sizes (fuzzed: two buffers of
 * 2^63 - 1 bytes) makes the allocations saturate at INT64_MAX, and the frees, which take the full
 * sizes off, then go below zero; a plain subtraction there overflowed (UBSan). */
static int64_t add_sat(int64_t x, int64_t y) { return x > INT64_MAX - y ? INT64_MAX : x + y; }
static int64_t sub_sat(int64_t x, int64_t y) { return x < INT64_MIN + y ? INT64_MIN : x - y; }

/* Live for the whole program, outside the heap simulation; thread-local ones are left out, as
 * XProf 2.24.2 leaves them (measured). */
static int indefinite(const jp_hlo_alloc *a) {
    return !(a->flags & JP_ALLOC_THREAD_LOCAL) && (a->flags & (JP_ALLOC_PARAMETER | JP_ALLOC_CONSTANT | JP_ALLOC_LIVE_OUT));
}

/* XProf's order of tests: a donated parameter, also live out, is a parameter. */
static int kind_of(const jp_hlo_alloc *a) {
    if (a->flags & JP_ALLOC_PARAMETER) return JP_BUFFER_PARAMETER;
    if (a->flags & JP_ALLOC_LIVE_OUT) return JP_BUFFER_OUTPUT;
    if (!(a->flags & JP_ALLOC_THREAD_LOCAL) && (a->flags & JP_ALLOC_CONSTANT)) return JP_BUFFER_CONSTANT;
    return JP_BUFFER_TEMPORARY;
}

/* ---- choosing the trace ----------------------------------------------------------------------- */

/* The colour-0 trace: the one owned by the first colour-0 heap allocation (a trace belongs to the
 * allocation of its first event's buffer; a later trace wins), else the trace with the most events
 * on colour-0 buffers (the first of equals); -1 when none. */
static long choose_trace(const jp_hlo_memory *mem, int32_t *owner) {
    for (size_t i = 0; i < mem->n_allocs; i++) owner[i] = -1;
    for (size_t t = 0; t < mem->n_traces; t++) {
        const jp_hlo_trace *tr = &mem->traces[t];
        int32_t b = tr->n_events ? tr->events[0].buffer : -1;
        if (b >= 0 && mem->buffers[b].known) owner[mem->buffers[b].alloc] = (int32_t)t;
    }
    for (size_t i = 0; i < mem->n_allocs; i++)
        if (mem->allocs[i].color == 0 && !indefinite(&mem->allocs[i]) && owner[i] >= 0) return owner[i];
    long best = -1;
    size_t most = 0;
    for (size_t t = 0; t < mem->n_traces; t++) {
        size_t n = 0;
        for (uint32_t i = 0; i < mem->traces[t].n_events; i++) {
            int32_t b = mem->traces[t].events[i].buffer;
            n += b >= 0 && mem->buffers[b].known && mem->buffers[b].color == 0;
        }
        if (n > most) most = n, best = (long)t;
    }
    return best;
}

/* ---- walking the trace ------------------------------------------------------------------------ */

typedef struct lb_state {      /* one logical buffer during the walk */
    int64_t refs;              /* holders of its memory: itself and the buffers sharing it */
    int32_t canonical;         /* the buffer it shares memory with (SHARE_WITH), -1 */
    int32_t display;           /* the sharer its memory came back for after a FREE, -1 */
    int64_t grown_at;          /* the event that last made it live */
    int64_t end;               /* the event that freed it after the peak, -1 */
    int32_t shown;             /* at the peak: the buffer its row names (display then, or itself) */
    uint8_t live, at_peak;
} lb_state;

typedef struct walk {
    const jp_hlo_memory *mem;
    const jp_hlo_trace *trace;
    lb_state *st;
    int64_t heap, unpadded;    /* bytes live now */
    int64_t peak, peak_unpadded, peak_pos; /* the first maximum and the event that reached it */
    int32_t alloc;             /* the allocation of every known event's buffer, -1 before the first */
    int64_t snapshot;          /* pass 2: the event after which the live set is the peak's, else -1 */
    int32_t *rows;             /* pass 2: the live buffers at the peak, in the order they grew */
    size_t n_rows;
    const char *refused;       /* why XProf would refuse the trace (its heap part is dropped) */
    const char *ignored;       /* an event left out (a SHARE_WITH cycle) */
    int64_t note_at;           /* the event of the first of them */
} walk;

/* The end of b's chain of canonical buffers, bounded by the number of buffers (sharing never makes
 * a cycle, see share(), but the bound costs nothing). */
static int32_t root(const walk *w, int32_t b) {
    for (size_t i = 0; i < w->mem->n_buffers && w->st[b].canonical >= 0; i++) b = w->st[b].canonical;
    return b;
}

static void grow(walk *w, int32_t b, int64_t i) {
    const jp_hlo_lbuf *lb = &w->mem->buffers[b];
    w->st[b].live = 1;
    w->st[b].grown_at = i;
    w->heap = add_sat(w->heap, lb->bytes);
    w->unpadded = add_sat(w->unpadded, lb->unpadded);
    if (w->heap > w->peak) w->peak = w->heap, w->peak_pos = i, w->peak_unpadded = w->unpadded; /* the first max */
}

static void refuse(walk *w, const char *why, int64_t i) {
    if (!w->refused) w->refused = why, w->note_at = i;
}

static void free_(walk *w, int32_t b, int64_t i) {
    int32_t r = root(w, b);
    lb_state *s = &w->st[r];
    if (--s->refs < 0) return refuse(w, "a buffer is freed twice", i);
    if (s->refs) return; /* a sharer still holds the memory */
    s->live = 0;
    w->heap = sub_sat(w->heap, w->mem->buffers[r].bytes);
    w->unpadded = sub_sat(w->unpadded, w->mem->buffers[r].unpadded);
    if (w->heap < 0) refuse(w, "the heap goes below zero", i);
    if (w->snapshot >= 0 && i > w->snapshot && s->at_peak && s->end < 0) s->end = i;
}

/* SHARE_WITH: b takes k's memory; when k's memory had been freed it comes back, for b. An event
 * that would close a cycle of canonical buffers is left out (XProf's walk would never end). */
static void share(walk *w, int32_t b, int32_t k, int64_t i) {
    int32_t p = k;
    for (size_t n = 0; n <= w->mem->n_buffers && p >= 0; n++, p = w->st[p].canonical)
        if (p == b) {
            if (!w->ignored) w->ignored = "a SHARE_WITH event closing a cycle is left out", w->note_at = i;
            return;
        }
    w->st[b].canonical = k;
    int32_t r = root(w, k);
    if (++w->st[r].refs == 1) {
        w->st[r].display = b;
        grow(w, r, i);
    }
}

static void step(walk *w, const jp_hlo_heap_event *e, int64_t i) {
    const jp_hlo_memory *mem = w->mem;
    int32_t b = e->buffer;
    if (b < 0 || !mem->buffers[b].known) return; /* XProf skips buffers it does not know */
    if (w->alloc < 0) w->alloc = mem->buffers[b].alloc;
    else if (w->alloc != mem->buffers[b].alloc) refuse(w, "the heap events span several allocations", i);
    if (e->kind == JP_HEAP_ALLOC) {
        w->st[root(w, b)].refs++;
        grow(w, b, i);
    } else if (e->kind == JP_HEAP_FREE) {
        free_(w, b, i);
    } else if (e->kind == JP_HEAP_SHARE) {
        if (e->share_with >= 0 && mem->buffers[e->share_with].known) share(w, b, e->share_with, i);
    } else {
        refuse(w, "a heap event has an unknown kind", i);
    }
}

/* The live buffers after event i, in the order they grew, each shown as the sharer its memory
 * came back for (XProf's display rule); marked for their end. */
static int take_snapshot(walk *w) {
    size_t n = 0;
    for (size_t b = 0; b < w->mem->n_buffers; b++) n += w->st[b].live;
    if (!(w->rows = malloc((n ? n : 1) * sizeof *w->rows))) return JP_ERR_NOMEM;
    for (size_t b = 0; b < w->mem->n_buffers; b++)
        if (w->st[b].live) {
            lb_state *s = &w->st[b];
            s->at_peak = 1;
            s->shown = s->display >= 0 ? s->display : (int32_t)b; /* later sharers do not rename it */
            w->rows[w->n_rows++] = (int32_t)b;
        }
    for (size_t k = 1; k < w->n_rows; k++) { /* insertion by grown_at: live sets are small */
        int32_t x = w->rows[k];
        size_t j = k;
        for (; j > 0 && w->st[w->rows[j - 1]].grown_at > w->st[x].grown_at; j--) w->rows[j] = w->rows[j - 1];
        w->rows[j] = x;
    }
    return JP_OK;
}

/* One walk over the trace from a clean state; timeline (n_events + 1 points, may be NULL) gets the
 * bytes live before each event and after the last. */
static int walk_trace(walk *w, int64_t *timeline) {
    memset(w->st, 0, w->mem->n_buffers * sizeof *w->st);
    for (size_t b = 0; b < w->mem->n_buffers; b++) w->st[b].canonical = w->st[b].display = -1, w->st[b].end = -1;
    w->heap = w->unpadded = w->peak = w->peak_unpadded = w->peak_pos = 0;
    w->alloc = -1;
    w->refused = w->ignored = NULL;
    uint32_t n = w->trace->n_events;
    for (uint32_t i = 0; i < n; i++) {
        if (timeline) timeline[i] = w->heap;
        step(w, &w->trace->events[i], i);
        if ((int64_t)i == w->snapshot && take_snapshot(w)) return JP_ERR_NOMEM;
    }
    if (timeline) timeline[n] = w->heap;
    return JP_OK;
}

/* ---- the rows ------------------------------------------------------------------------------- */

typedef struct rows_acc {      /* the rows at the peak as they are added, in program order */
    jp_buffer *v;
    size_t n;
    int64_t small_bytes, small_unpadded; /* the buffers under SMALL_BUFFER, summed */
    uint32_t n_small;
} rows_acc;

static int add_row(jp_arena *arena, const jp_hlo_memory *mem, int32_t b, int64_t start, int64_t end, rows_acc *acc) {
    const jp_hlo_lbuf *lb = &mem->buffers[b];
    if (lb->bytes < SMALL_BUFFER) {
        acc->small_bytes = add_sat(acc->small_bytes, lb->bytes);
        acc->small_unpadded = add_sat(acc->small_unpadded, lb->unpadded);
        acc->n_small++;
        return JP_OK;
    }
    jp_buffer *r = &acc->v[acc->n++];
    *r = (jp_buffer){lb->id, lb->bytes, lb->unpadded, kind_of(&mem->allocs[lb->alloc]), lb->instruction, lb->opcode,
                     lb->shape, lb->op_name, lb->source, lb->function, NULL, 0, 0, start, end};
    return jp_analysis_stack(arena, lb->frame, &r->stack, &r->n_stack);
}

/* The largest known buffer an allocation lists (the first of equals), -1 when none is over 0 B. */
static int32_t largest_buffer(const jp_hlo_memory *mem, const jp_hlo_alloc *a) {
    int32_t best = -1;
    for (uint32_t k = 0; k < a->n; k++) {
        int32_t b = mem->assigned[a->first + k];
        if (b >= 0 && mem->buffers[b].known && (best < 0 || mem->buffers[b].bytes > mem->buffers[best].bytes)) best = b;
    }
    return best >= 0 && mem->buffers[best].bytes > 0 ? best : -1;
}

/* Colour-0 totals, the always-live part by kind, and a row for each always-live allocation. */
static int always_live(jp_arena *arena, const jp_hlo_memory *mem, jp_module_memory *out, rows_acc *rows) {
    int64_t indefinite_allocs = 0;
    for (size_t i = 0; i < mem->n_allocs; i++) {
        const jp_hlo_alloc *a = &mem->allocs[i];
        if (a->color != 0) continue;
        if (!(a->flags & JP_ALLOC_THREAD_LOCAL)) out->total_bytes = add_sat(out->total_bytes, a->bytes);
        if (a->flags & JP_ALLOC_PARAMETER) out->parameter_bytes = add_sat(out->parameter_bytes, a->bytes);
        if (a->flags & JP_ALLOC_LIVE_OUT) out->output_bytes = add_sat(out->output_bytes, a->bytes);
        if (a->flags & JP_ALLOC_ALIASED) out->alias_bytes = add_sat(out->alias_bytes, a->bytes);
        if (!indefinite(a)) continue;
        indefinite_allocs = add_sat(indefinite_allocs, a->bytes);
        int32_t b = largest_buffer(mem, a);
        if (b < 0) continue;
        out->always_live_bytes = add_sat(out->always_live_bytes, a->bytes);
        out->kind_bytes[kind_of(a)] = add_sat(out->kind_bytes[kind_of(a)], a->bytes);
        int rc = add_row(arena, mem, b, -1, -1, rows);
        if (rc) return rc;
    }
    out->temp_bytes = out->total_bytes - indefinite_allocs;
    return JP_OK;
}

/* Largest first; equals keep program order (a stable merge sort: qsort is not stable everywhere). */
static void sort_rows(jp_buffer *v, jp_buffer *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2, i = 0, j = h, k = 0;
    sort_rows(v, tmp, h);
    sort_rows(v + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = v[j].bytes > v[i].bytes ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static int finish_rows(jp_arena *arena, rows_acc *rows, jp_module_memory *out) {
    jp_buffer *tmp = malloc((rows->n ? rows->n : 1) * sizeof *tmp);
    if (!tmp) return JP_ERR_NOMEM;
    sort_rows(rows->v, tmp, rows->n);
    free(tmp);
    if (rows->n_small) {
        const char *empty = "";
        const char *name = jp_analysis_printf(arena, "small (<%d bytes)", SMALL_BUFFER);
        if (!name) return JP_ERR_NOMEM;
        rows->v[rows->n++] = (jp_buffer){-1, rows->small_bytes, rows->small_unpadded, JP_BUFFER_SMALL, name, empty, empty,
                                         empty, empty, empty, NULL, 0, rows->n_small, -1, -1};
    }
    out->buffers = rows->v;
    out->n_buffers = rows->n;
    return JP_OK;
}

/* ---- one module ------------------------------------------------------------------------------ */

/* The heap part: the walk, its timeline and peak, the rows live at the peak. */
static int heap_part(jp_arena *arena, const jp_hlo_memory *mem, const jp_hlo_trace *tr, walk *w, jp_module_memory *out,
                     rows_acc *rows) {
    int64_t *timeline = jp_arena_alloc(arena, ((size_t)tr->n_events + 1) * sizeof *timeline);
    const char **names = jp_arena_alloc(arena, ((size_t)tr->n_events + 1) * sizeof *names);
    if (!timeline || !names) return JP_ERR_NOMEM;
    w->snapshot = -1;
    int rc = walk_trace(w, timeline);
    if (rc) return rc;
    if (w->refused) {
        out->note = jp_analysis_printf(arena, "heap trace left out: %s (event %lld); only the always-live part is shown",
                                       w->refused, (long long)w->note_at);
        return out->note ? JP_OK : JP_ERR_NOMEM;
    }
    int64_t peak_pos = w->peak_pos, peak = w->peak, peak_unpadded = w->peak_unpadded;
    w->snapshot = peak_pos;
    if ((rc = walk_trace(w, NULL))) return rc;
    for (size_t k = 0; k < w->n_rows; k++) {
        int32_t r = w->rows[k], shown = w->st[r].shown;
        int64_t end = w->st[r].end >= 0 ? w->st[r].end : (int64_t)tr->n_events - 1;
        if ((rc = add_row(arena, mem, shown, w->st[r].grown_at, end, rows))) return rc;
    }
    for (uint32_t i = 0; i < tr->n_events; i++) {
        timeline[i] = add_sat(timeline[i], out->always_live_bytes);
        names[i] = tr->events[i].instruction;
    }
    timeline[tr->n_events] = add_sat(timeline[tr->n_events], out->always_live_bytes);
    names[tr->n_events] = "";
    out->timeline = timeline;
    out->timeline_instructions = names;
    out->n_timeline = (size_t)tr->n_events + 1;
    out->peak_bytes = add_sat(out->always_live_bytes, peak);
    out->peak_unpadded_bytes = add_sat(out->always_live_bytes, peak_unpadded);
    out->peak_index = peak_pos;
    out->peak_instruction = tr->events[peak_pos].instruction;
    out->peak_computation = tr->events[peak_pos].computation;
    if (w->ignored)
        out->note = jp_analysis_printf(arena, "%s (event %lld)", w->ignored, (long long)w->note_at);
    return out->note ? JP_OK : JP_ERR_NOMEM;
}

int jp_buffers_module(const jp_hlo_memory *mem, jp_arena *arena, jp_module_memory *out) {
    *out = (jp_module_memory){.name = "", .host = "", .peak_index = -1, .peak_instruction = "", .peak_computation = "",
                              .note = ""};
    rows_acc rows = {jp_arena_alloc(arena, (mem->n_buffers + mem->n_allocs + 1) * sizeof(jp_buffer)), 0, 0, 0, 0};
    int32_t *owner = malloc((mem->n_allocs ? mem->n_allocs : 1) * sizeof *owner);
    walk w = {.mem = mem, .st = malloc((mem->n_buffers ? mem->n_buffers : 1) * sizeof(lb_state))};
    int rc = rows.v && owner && w.st ? JP_OK : JP_ERR_NOMEM;
    if (rc == JP_OK) rc = always_live(arena, mem, out, &rows);
    long t = rc == JP_OK ? choose_trace(mem, owner) : -1;
    out->peak_bytes = out->peak_unpadded_bytes = out->always_live_bytes;
    if (rc == JP_OK && t >= 0 && mem->traces[t].n_events) {
        w.trace = &mem->traces[t];
        size_t before = rows.n;
        rc = heap_part(arena, mem, w.trace, &w, out, &rows);
        if (rc == JP_OK && w.refused) rows.n = before;
    }
    if (rc == JP_OK) rc = finish_rows(arena, &rows, out);
    free(w.rows);
    free(w.st);
    free(owner);
    return rc;
}

/* ---- every module ---------------------------------------------------------------------------- */

/* Executions per module and host: the most any one device ran it (every device of an SPMD program
 * runs it once per execution), kept under the device key BEST. Executions come from run_ids (CPU,
 * GPU) or XLA Modules lines (TPU); where a module has none (the MI300 captures write no run_id), the
 * fewest occurrences of any of its ops on a device stand for them (an op runs at least once per
 * execution; one in a loop or launching several kernels, more).
 * A process compiles one module name more than once (jit_step for two shapes), and its metadata
 * lists every module compiled so far, run or not: so executions that name their program (XLA:CPU
 * and GPU write program_id) are counted per program as well, and a module of a name whose runs
 * name their programs ran only if its own program did. */
enum { BEST = 1, PROGRAMS }; /* device keys no device has: jp_exec.device is a uint32 */
static const uint64_t BEST_KEY = (uint64_t)UINT32_MAX + BEST, PROGRAMS_KEY = (uint64_t)UINT32_MAX + PROGRAMS;

typedef struct run_counts {
    jp_map by_name;    /* (module, host, device | BEST_KEY | PROGRAMS_KEY) */
    jp_map by_program; /* (program_id, host, device | BEST_KEY) */
} run_counts;

/* One more run under (what, host) on device, and the most of any device under BEST_KEY. */
static int count_one(jp_map *map, uint64_t what, uint32_t host, uint32_t device) {
    uint32_t *n = jp_map_value(map, what, host, device, 0, NULL);
    if (!n) return JP_ERR_NOMEM;
    uint32_t here = *n < UINT32_MAX - 1 ? ++*n : *n;
    uint32_t *best = jp_map_value(map, what, host, BEST_KEY, 0, NULL);
    if (!best) return JP_ERR_NOMEM;
    if (here > *best) *best = here;
    return JP_OK;
}

static int count_runs(const jp_model *m, run_counts *rc) {
    const jp_exec *x = m->execs.data;
    for (size_t i = 0; i < m->execs.n; i++) {
        if (count_one(&rc->by_name, jp_ptr_key(x[i].module), x[i].host, x[i].device)) return JP_ERR_NOMEM;
        if (x[i].program_id < 0) continue;
        if (count_one(&rc->by_program, (uint64_t)x[i].program_id, x[i].host, x[i].device) ||
            !jp_map_value(&rc->by_name, jp_ptr_key(x[i].module), x[i].host, PROGRAMS_KEY, 0, NULL))
            return JP_ERR_NOMEM;
    }
    return JP_OK;
}

/* The runs of module hm: of its own program where the runs of its name say theirs, else of its
 * name, else the op-based count (0 where none). */
static uint32_t runs_of(const jp_hlo_module *hm, const run_counts *rc, const jp_map *ops_runs) {
    uint64_t name = jp_ptr_key(hm->name);
    uint32_t r;
    if (hm->program_id >= 0 && jp_map_get(&rc->by_name, name, hm->host, PROGRAMS_KEY) != UINT32_MAX)
        r = jp_map_get(&rc->by_program, (uint64_t)hm->program_id, hm->host, BEST_KEY);
    else if ((r = jp_map_get(&rc->by_name, name, hm->host, BEST_KEY)) == UINT32_MAX)
        r = jp_map_get(ops_runs, name, hm->host, BEST_KEY);
    return r == UINT32_MAX ? 0 : r;
}

/* The host whose devices include device d. */
static uint32_t host_of_device(const jp_model *m, uint32_t d) {
    uint32_t h = (uint32_t)m->hosts.n;
    while (h > 1 && JP_VEC_AT(&m->hosts, jp_model_host, h - 1).first_device > d) h--;
    return h ? h - 1 : 0;
}

/* The op-based count (see above) into ops_runs under (module, host, BEST_KEY). */
static int count_op_runs(const jp_model *m, jp_map *ops_runs) {
    const jp_opdef *defs = m->opdefs.data;
    uint32_t *n = calloc(m->opdefs.n ? m->opdefs.n : 1, sizeof *n);
    if (!n) return JP_ERR_NOMEM;
    for (size_t i = 0; i < m->ops.n; i++) {
        uint32_t *c = &n[JP_VEC_AT(&m->ops, jp_op_ev, i).op];
        if (*c < UINT32_MAX - 1) ++*c;
    }
    int rc = JP_OK;
    for (int pass = 0; pass < 2 && rc == JP_OK; pass++) /* the fewest per device, then the most per host */
        for (size_t i = 0; i < m->opdefs.n && rc == JP_OK; i++) {
            if (!n[i] || !*defs[i].module) continue;
            uint32_t *least = jp_map_value(ops_runs, jp_ptr_key(defs[i].module), defs[i].device, 0, n[i], NULL);
            if (least && pass == 0 && n[i] < *least) *least = n[i];
            uint32_t here = least ? *least : 0;
            uint32_t *best = least ? jp_map_value(ops_runs, jp_ptr_key(defs[i].module), host_of_device(m, defs[i].device),
                                                  BEST_KEY, 0, NULL) : NULL;
            if (!best) rc = JP_ERR_NOMEM;
            else if (pass == 1 && here > *best) *best = here;
        }
    free(n);
    return rc;
}

static int cmp_module(const void *a, const void *b) {
    const jp_module_memory *x = a, *y = b;
    if (x->peak_bytes != y->peak_bytes) return x->peak_bytes < y->peak_bytes ? 1 : -1;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->host, y->host);
}

int jp_buffers_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    const jp_hlo_module *mods = m->hlo.data;
    size_t n = 0;
    for (size_t i = 0; i < m->hlo.n; i++) n += mods[i].memory != NULL;
    if (!n) return JP_OK;
    run_counts runs = {0};
    jp_map ops_runs = {0};
    int rc = count_runs(m, &runs);
    if (rc == JP_OK) rc = count_op_runs(m, &ops_runs);
    if (rc == JP_OK && !(a->modules = jp_arena_alloc(arena, n * sizeof *a->modules))) rc = JP_ERR_NOMEM;
    for (size_t i = 0; i < m->hlo.n && rc == JP_OK; i++) {
        if (!mods[i].memory) continue;
        jp_module_memory *mm = &a->modules[a->n_modules++];
        if ((rc = jp_buffers_module(mods[i].memory, arena, mm))) break;
        mm->name = mods[i].key ? mods[i].key : mods[i].name;
        mm->host = mods[i].host < m->hosts.n ? JP_VEC_AT(&m->hosts, jp_model_host, mods[i].host).name : "";
        mm->runs = runs_of(&mods[i], &runs, &ops_runs);
    }
    jp_map_deinit(&runs.by_name);
    jp_map_deinit(&runs.by_program);
    jp_map_deinit(&ops_runs);
    if (rc == JP_OK) qsort(a->modules, a->n_modules, sizeof *a->modules, cmp_module);
    return rc;
}
