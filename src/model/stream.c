/* stream.c - parses the events the model reads, chunk by chunk, on the caller's thread or ahead of
 * it on a second one; see stream.h. */
#include "model/stream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "decode/xspace.h"

/* ---- the stats the model wants ----------------------------------------------------------------- */

static const char *const STAT_NAMES[K_COUNT] = {
    [K_HLO_OP] = JP_XN_STAT_HLO_OP,
    [K_HLO_MODULE] = JP_XN_STAT_HLO_MODULE,
    [K_PROGRAM_ID] = JP_XN_STAT_PROGRAM_ID,
    [K_RUN_ID] = JP_XN_STAT_RUN_ID,
    [K_STEP_NUM] = JP_XN_STAT_STEP_NUM,
    [K_ROOT] = JP_XN_STAT_ROOT,
    [K_KERNEL_DETAILS] = JP_XN_STAT_KERNEL_DETAILS,
    [K_MEMCPY_DETAILS] = JP_XN_STAT_MEMCPY_DETAILS,
    [K_ALLOCATOR] = JP_XN_STAT_ALLOCATOR,
    [K_BYTES_ALLOCATED] = JP_XN_STAT_BYTES_ALLOCATED,
    [K_PEAK_BYTES] = JP_XN_STAT_PEAK_BYTES,
    [K_FLOPS] = JP_XN_STAT_FLOPS,
    [K_BYTES_ACCESSED] = JP_XN_STAT_BYTES_ACCESSED,
    [K_HLO_CATEGORY] = JP_XN_STAT_HLO_CATEGORY,
    [K_HLO_PROTO] = JP_XN_STAT_HLO_PROTO,
    [K_PEAK_TFLOPS] = JP_XN_STAT_PEAK_TFLOPS,
    [K_PEAK_HBM_GBPS] = JP_XN_STAT_PEAK_HBM_GBPS,
    [K_FLOW_P] = JP_XN_STAT_FLOW_PRODUCER,
    [K_FLOW_C] = JP_XN_STAT_FLOW_CONSUMER,
    [K_TF_OP] = JP_XN_STAT_TF_OP,
    [K_SOURCE] = JP_XN_STAT_SOURCE,
    [K_DEVICE_DURATION] = JP_XN_STAT_DEVICE_DURATION,
    [K_ANNOTATION] = JP_XN_STAT_ANNOTATION,
    [K_BYTES_RESERVED] = JP_XN_STAT_BYTES_RESERVED,
    [K_INDEX_ON_HOST] = JP_XN_STAT_INDEX_ON_HOST,
    [K_DEVICE_ORDINAL] = JP_XN_STAT_DEVICE_ORDINAL,
    [K_CORRELATION_ID] = JP_XN_STAT_CORRELATION_ID,
    [K_CUDA_GRAPH_ID] = JP_XN_STAT_CUDA_GRAPH_ID,
    [K_CUDA_GRAPH_NODE] = JP_XN_STAT_CUDA_GRAPH_NODE,
};

_Static_assert(K_COUNT <= 32, "one bit per key");

void jp_stat_keys_init(jp_stat_keys *keys, const jp_plane *plane) {
    for (int k = 0; k < K_COUNT; k++) keys->ids[k] = UINT64_MAX;
    for (size_t i = 0; i < plane->n_stat_meta; i++)
        for (int k = 0; k < K_COUNT; k++)
            if (jp_str_eq(plane->stat_meta[i].name, STAT_NAMES[k])) keys->ids[k] = (uint64_t)plane->stat_meta[i].id;
    memset(keys->small, 0, sizeof keys->small);
    for (int k = 0; k < K_COUNT; k++)
        if (keys->ids[k] < sizeof keys->small / sizeof keys->small[0]) keys->small[keys->ids[k]] |= (uint32_t)1 << k;
}

/* The keys whose stat id is `id`, one bit per key: a table look-up for the small ids writers use. */
static uint32_t keys_of(const jp_stat_keys *keys, uint64_t id) {
    if (id < sizeof keys->small / sizeof keys->small[0]) return keys->small[id];
    uint32_t mask = 0;
    for (int k = 0; k < K_COUNT; k++)
        if (keys->ids[k] == id) mask |= (uint32_t)1 << k;
    return mask;
}

/* Like jp_stat_str, without inflating: compressed bytes are left for the model's thread. One
 * switch on the kind (the integers jp_stat_int gives, spelled out): every wanted stat of every
 * event comes through here. */
static void set_value(const jp_plane *plane, const jp_stat *st, jp_key_value *v) {
    *v = (jp_key_value){.s = {"", 0}};
    switch (st->kind) {
    case JP_STAT_UINT: v->i = (int64_t)st->v.u, v->d = (double)v->i; break;
    case JP_STAT_INT: v->i = st->v.i, v->d = (double)v->i; break;
    case JP_STAT_DOUBLE: v->i = jp_stat_int(st), v->d = st->v.d; break;
    case JP_STAT_BYTES: v->b = (jp_bytes){(const uint8_t *)st->v.s.ptr, st->v.s.len}; break;
    case JP_STAT_REF:
        v->ref = jp_plane_stat_meta_view(plane, st->v.u);
        if (v->ref) v->s = v->ref->name;
        break;
    case JP_STAT_STR:
    case JP_STAT_COMPRESSED: v->s = st->v.s; break;
    default: break;
    }
}

/* Sets the keys `st` is a value of, except those in skip; returns all the keys it is a value of. */
static uint32_t add_stat(const jp_plane *plane, const jp_stat_keys *keys, const jp_stat *st, jp_ev_info *info,
                         uint32_t skip) {
    uint32_t matched = keys_of(keys, st->metadata_id);
    for (uint32_t mask = matched & ~skip; mask; mask &= mask - 1) { /* set bits only: the high keys are common */
        int k = __builtin_ctz(mask);
        uint32_t bit = (uint32_t)1 << k;
        info->has |= bit;
        info->compressed = st->kind == JP_STAT_COMPRESSED ? info->compressed | bit : info->compressed & ~bit;
        set_value(plane, st, &info->v[k]);
    }
    return matched;
}

/* Adds the stats walked by `it` to info, leaving the keys in skip alone; *matched (optional) gets
 * every key they hold. */
static int read_stats_except(const jp_plane *plane, const jp_stat_keys *keys, jp_stats_iter it, jp_ev_info *info,
                             uint32_t skip, uint32_t *matched, jp_error *err) {
    jp_stat st;
    int rc;
    uint32_t all = 0;
    while ((rc = jp_stats_next(&it, &st, err)) == 1) all |= add_stat(plane, keys, &st, info, skip);
    if (matched) *matched = all;
    return rc;
}

int jp_read_stats(const jp_plane *plane, const jp_stat_keys *keys, jp_stats_iter it, jp_ev_info *info,
                  jp_error *err) {
    return read_stats_except(plane, keys, it, info, 0, NULL, err);
}

/* ---- what the model reads ------------------------------------------------------------------------ */

int jp_device_selected(jp_str plane_name, const jp_load_options *opt) {
    if (!opt || !opt->device || !*opt->device) return 1;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(plane_name.len > 200 ? 200 : plane_name.len), plane_name.ptr);
    const char *d = opt->device;
    if (strspn(d, "0123456789") == strlen(d)) { /* an index: "/device:GPU:1" is device 1 */
        if (strcmp(name, JP_XN_PLANE_HOST_CPU) == 0) return strcmp(d, "0") == 0; /* XLA:CPU's one device */
        const char *colon = strrchr(name, ':');
        return colon && strcmp(colon + 1, d) == 0;
    }
    return strstr(name, d) != NULL;
}

int jp_plane_role_of(const jp_plane *plane, const jp_load_options *opt) {
    switch (jp_xn_plane_kind(plane)) {
    case JP_XN_METADATA: return JP_ROLE_METADATA;
    case JP_XN_HOST: return JP_ROLE_HOST;
    case JP_XN_DEVICE: return jp_device_selected(plane->name, opt) ? JP_ROLE_DEVICE : JP_ROLE_SKIP;
    default: return JP_ROLE_SKIP; /* CUSTOM planes trace other subsystems (Megascale's DCN), no device's ops */
    }
}

int jp_line_wanted(const jp_plane *plane, const jp_line *line) {
    return jp_xn_plane_kind(plane) != JP_XN_DEVICE || jp_xn_device_line_is_stream(plane, line);
}

/* ---- parsing, chunk by chunk -------------------------------------------------------------------- */

enum { CHUNK = 1024, RING = 8 };

typedef struct chunk {
    const jp_line *line; /* the events' line; NULL past the last line */
    size_t n;            /* events parsed */
    int last;            /* the line ends with this chunk */
    int rc;              /* a parse error after the n events, or JP_OK */
    jp_error err;
    jp_parsed ev[CHUNK];
} chunk;

typedef struct parser { /* where parsing is; touched by the parsing thread only */
    jp_xspace *xs;
    const jp_load_options *opt;
    const jp_plane *planes;
    size_t n_planes;
    size_t plane, line;     /* the current or next line: planes[plane].lines[line] */
    size_t keyed;           /* the plane `keys` and `keyless` belong to, SIZE_MAX for none */
    int in_line;            /* reader is inside the line */
    int failed;             /* a chunk ended with an error: nothing more is parsed */
    jp_event_reader reader;
    jp_stat_keys keys;
    uint8_t *keyless;       /* per event metadata entry: 1 when its stats hold no wanted key */
} parser;

/* Moves to the next line the model reads (the current one when inside it); 0 when none is left,
 * or JP_ERR_NOMEM. */
static int next_line(parser *p) {
    for (; p->plane < p->n_planes; p->plane++, p->line = 0) {
        const jp_plane *pl = &p->planes[p->plane];
        int role = jp_plane_role_of(pl, p->opt);
        if (role != JP_ROLE_HOST && role != JP_ROLE_DEVICE) continue;
        while (p->line < pl->n_lines && !jp_line_wanted(pl, &pl->lines[p->line])) p->line++;
        if (p->line == pl->n_lines) continue;
        if (p->keyed != p->plane) {
            free(p->keyless);
            if (!(p->keyless = calloc(pl->n_event_meta + 1, 1))) return JP_ERR_NOMEM;
            jp_stat_keys_init(&p->keys, pl);
            p->keyed = p->plane;
        }
        return 1;
    }
    return 0;
}

typedef struct stat_sink { /* where an event's own stats go as the reader decodes them */
    const jp_plane *plane;
    const jp_stat_keys *keys;
    jp_ev_info *info;
} stat_sink;

static void take_stat(void *ctx, const struct jp_stat *st) {
    stat_sink *sink = ctx;
    add_stat(sink->plane, sink->keys, st, sink->info, 0);
}

/* Reads the next event of the current line and its stats in one walk, then its metadata's stats
 * for the keys the event lacks (the event's own win), unless they are known to hold none. */
static int parse_event(parser *p, const jp_plane *pl, jp_parsed *pe, jp_error *err) {
    pe->info.has = pe->info.compressed = 0;
    stat_sink sink = {pl, &p->keys, &pe->info};
    jp_stat_filter wanted = {p->keys.small, sizeof p->keys.small / sizeof p->keys.small[0]};
    int rc = jp_event_reader_next_stats(&p->reader, &pe->ev, wanted, take_stat, &sink, err);
    if (rc <= 0) return rc;
    pe->em = jp_plane_event_meta_view(pl, pe->ev.metadata_id);
    uint8_t *keyless = pe->em ? &p->keyless[pe->em - pl->event_meta] : NULL;
    if (!keyless || *keyless) return 1;
    uint32_t matched;
    rc = read_stats_except(pl, &p->keys, jp_stats_of_event_meta(p->xs, pe->em), &pe->info, pe->info.has, &matched, err);
    *keyless = matched == 0;
    return rc < 0 ? rc : 1;
}

/* Parses the next chunk: up to CHUNK events of the current line. Returns 0 when nothing is left
 * to parse after it (the end of the plan, or an error in it), else 1. */
static int fill(parser *p, chunk *c) {
    c->n = 0;
    c->last = 0;
    c->rc = JP_OK;
    c->line = NULL;
    if (p->failed) return 0;
    if (!p->in_line) {
        int rc = next_line(p);
        if (rc <= 0) {
            c->last = 1;
            c->rc = rc ? jp_error_set(&c->err, rc, 0, "out of memory reading events") : JP_OK;
            return 0;
        }
        p->reader = jp_line_event_reader(p->xs, &p->planes[p->plane].lines[p->line]);
        p->in_line = 1;
    }
    const jp_plane *pl = &p->planes[p->plane];
    c->line = &pl->lines[p->line];
    while (c->n < CHUNK) {
        int rc = parse_event(p, pl, &c->ev[c->n], &c->err);
        if (rc == 0) {
            c->last = 1;
            p->in_line = 0;
            p->line++;
            break;
        }
        if (rc < 0) {
            c->rc = rc;
            p->failed = 1;
            return 0;
        }
        c->n++;
    }
    return 1;
}

/* ---- the stream: a ring of chunks between the parser and the model ----------------------------- */

struct jp_stream {
    parser p;
    chunk *ring;
    size_t n_ring;
    int threaded;           /* a second thread fills the ring */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t filled, freed;
    size_t head, tail;      /* chunks handed to the model / filled: ring[head % n_ring] is next */
    int cancel;             /* the model is done: the parser stops */
    chunk *cur;             /* the chunk the model is reading, or NULL */
    const jp_line *done_line;         /* the line of the run below */
    const uint8_t *done_lo, *done_hi; /* its input the model is done with, not yet released */
    int broken;             /* the model asked for a line out of the plan's order */
    size_t pos;             /* its next event */
};

static void *parse_ahead(void *arg) {
    jp_stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->tail - s->head == s->n_ring && !s->cancel) pthread_cond_wait(&s->freed, &s->mu);
        if (s->cancel) break;
        chunk *c = &s->ring[s->tail % s->n_ring];
        pthread_mutex_unlock(&s->mu);
        int more = fill(&s->p, c);
        pthread_mutex_lock(&s->mu);
        s->tail++;
        pthread_cond_signal(&s->filled);
        if (!more) break;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int jp_stream_open(jp_stream **out, jp_xspace *xs, const jp_load_options *opt, int threads, jp_error *err) {
    jp_stream *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    s->p = (parser){.xs = xs, .opt = opt, .keyed = SIZE_MAX};
    s->p.planes = jp_xspace_planes(xs, &s->p.n_planes);
    s->n_ring = threads > 1 ? RING : 1;
    if (!(s->ring = malloc(s->n_ring * sizeof *s->ring))) {
        free(s);
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    if (threads > 1) {
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->filled, NULL);
        pthread_cond_init(&s->freed, NULL);
        s->threaded = pthread_create(&s->thread, NULL, parse_ahead, s) == 0;
        if (!s->threaded) { /* no thread to be had: parse on this one */
            pthread_mutex_destroy(&s->mu);
            pthread_cond_destroy(&s->filled);
            pthread_cond_destroy(&s->freed);
        }
    }
    *out = s;
    return JP_OK;
}

static chunk *take(jp_stream *s) {
    if (!s->threaded) {
        fill(&s->p, &s->ring[0]);
        return &s->ring[0];
    }
    pthread_mutex_lock(&s->mu);
    while (s->tail == s->head) pthread_cond_wait(&s->filled, &s->mu);
    chunk *c = &s->ring[s->head % s->n_ring];
    pthread_mutex_unlock(&s->mu);
    return c;
}

/* Input the model is done with leaves memory in runs of RELEASE_BYTES or more: one madvise per
 * chunk would release little (pages straddle chunks) and, with a second thread, make the kernel
 * flush both CPUs' TLBs each time. A run never leaves its line: between two lines lie the next
 * one's name and, between planes, a plane's metadata, which the model still reads. */
enum { RELEASE_BYTES = 4 << 20 };
static void release_done(jp_stream *s, const jp_line *line, const uint8_t *lo, const uint8_t *hi, int flush) {
    if (line != s->done_line || flush) { /* a new line, or the end: release the run and start anew */
        if (s->done_lo) jp_xspace_discard(s->p.xs, s->done_lo, (size_t)(s->done_hi - s->done_lo));
        s->done_line = line;
        s->done_lo = lo;
        s->done_hi = hi;
        return;
    }
    s->done_hi = hi; /* a line's events come in input order */
    if ((size_t)(s->done_hi - s->done_lo) >= RELEASE_BYTES) {
        jp_xspace_discard(s->p.xs, s->done_lo, (size_t)(s->done_hi - s->done_lo));
        s->done_lo = s->done_hi;
    }
}

/* The model is done with the current chunk: its input bytes may leave memory and its slot refills. */
static void give_back(jp_stream *s) {
    const chunk *c = s->cur;
    if (c->n) release_done(s, c->line, c->ev[0].ev.raw.ptr, c->ev[c->n - 1].ev.raw.ptr + c->ev[c->n - 1].ev.raw.len, 0);
    s->cur = NULL;
    if (!s->threaded) return;
    pthread_mutex_lock(&s->mu);
    s->head++;
    pthread_cond_signal(&s->freed);
    pthread_mutex_unlock(&s->mu);
}

int jp_stream_next(jp_stream *s, const jp_line *line, jp_parsed **out, jp_error *err) {
    for (;;) {
        if (!s->cur && !s->broken) {
            s->cur = take(s);
            s->pos = 0;
            s->broken = s->cur->line != line && !s->cur->rc; /* a bug: the parser may be done */
        }
        if (s->broken) return jp_error_set(err, JP_ERR_ARG, 0, "internal error: events asked for out of order");
        if (s->pos < s->cur->n) {
            *out = &s->cur->ev[s->pos++];
            return 1;
        }
        if (s->cur->rc) { /* stays: every later call reports it again */
            if (err) *err = s->cur->err;
            return s->cur->rc;
        }
        int last = s->cur->last;
        give_back(s);
        if (last) return 0;
    }
}

void jp_stream_close(jp_stream *s) {
    if (!s) return;
    release_done(s, NULL, NULL, NULL, 1);
    if (s->threaded) {
        pthread_mutex_lock(&s->mu);
        s->cancel = 1;
        pthread_cond_signal(&s->freed);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->filled);
        pthread_cond_destroy(&s->freed);
    }
    free(s->p.keyless);
    free(s->ring);
    free(s);
}
