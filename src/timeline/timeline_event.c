/* timeline_event.c - jp_timeline_event: one event's details for the viewer's details panel: its
 * stats, self time, flows, and the HLO instruction it ran, decoded from the profile's metadata
 * plane on first need and kept. */
#include <stdlib.h>
#include <string.h>

#include "analyses/result_names.h"
#include "base/error.h"
#include "base/json.h"
#include "timeline/layout.h"
#include "timeline/timeline_int.h"

/* A program id: libtpu's are unsigned 64-bit hashes, so ids compare as their bits. */
typedef struct prog_id {
    uint64_t id; /* the id's bits */
    int known;   /* 0: none recorded */
} prog_id;

/* What names an event's HLO instruction: its hlo_module, hlo_op and program_id stats (a TPU op:
 * its program_id, and its name cut from the HLO text that names its metadata). */
typedef struct hlo_ref {
    jp_str module, op; /* hlo_module ("" on TPU), hlo_op */
    prog_id program;   /* program_id */
} hlo_ref;

/* ---- stats ------------------------------------------------------------------------------------- */

static void write_value(const jp_stat *st, FILE *out) {
    switch (st->kind) {
    case JP_STAT_INT: fprintf(out, "%lld", (long long)st->v.i); break;
    case JP_STAT_UINT: fprintf(out, "%llu", (unsigned long long)st->v.u); break;
    case JP_STAT_DOUBLE: fprintf(out, st->v.d == st->v.d && st->v.d - st->v.d == 0 ? "%.17g" : "null", st->v.d); break;
    case JP_STAT_BYTES: fprintf(out, "\"<%zu bytes>\"", st->v.s.len); break;
    default: fputs("\"\"", out); break;
    }
}

/* Notes the stats that name the HLO instruction. */
static void note_ref(jp_str name, const jp_stat *st, jp_str text, hlo_ref *ref) {
    if (jp_str_eq(name, "hlo_module")) ref->module = text;
    else if (jp_str_eq(name, "hlo_op")) ref->op = text;
    else if (jp_str_eq(name, "program_id") && (st->kind == JP_STAT_INT || st->kind == JP_STAT_UINT))
        ref->program = (prog_id){(uint64_t)jp_stat_int(st), 1};
}

/* libtpu names an XLA Ops event's metadata with the instruction's HLO text ("%copy.2 = f32[...]
 * copy(...)") and may give its name as the display name; else the name is the text's "%name"
 * (as the model reads it, build.c's tpu_op_name). */
static jp_str tpu_op(const jp_event_meta *em) {
    if (!em || em->name.len < 2 || em->name.ptr[0] != '%') return (jp_str){"", 0};
    if (em->display_name.len) return em->display_name;
    jp_str name = {em->name.ptr + 1, 0};
    while (name.len + 1 < em->name.len && name.ptr[name.len] != ' ') name.len++;
    return name;
}

/* Writes a stats message's stats as "name":value pairs; *first tracks the commas. */
static int write_stats(const tl_track *t, jp_stats_iter it, int *first, hlo_ref *ref, FILE *out, jp_error *err) {
    jp_stat st;
    int rc;
    while ((rc = jp_stats_next(&it, &st, err)) == 1) {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(t->plane, st.metadata_id);
        jp_str name = sm ? sm->name : (jp_str){"stat", 4}, text = {"", 0};
        if (!*first) fputc(',', out);
        *first = 0;
        jp_json_fput_str(out, name.ptr, name.len);
        fputc(':', out);
        if (st.kind == JP_STAT_STR || st.kind == JP_STAT_REF || st.kind == JP_STAT_COMPRESSED) {
            if ((rc = jp_stat_str(t->xs, t->plane, &st, &text, err)) < 0) return rc;
            jp_json_fput_str(out, text.ptr, text.len);
        } else {
            write_value(&st, out);
        }
        note_ref(name, &st, text, ref);
    }
    return rc;
}

static int write_source_args(const tl_track *t, uint32_t src, hlo_ref *ref, FILE *out, jp_error *err) {
    const jp_event *ev = &t->line->events[src];
    const jp_event_meta *em = jp_plane_event_meta_view(t->plane, ev->metadata_id);
    int first = 1, rc = em ? write_stats(t, jp_stats_of_event_meta(t->xs, em), &first, ref, out, err) : JP_OK;
    if (rc >= 0) rc = write_stats(t, jp_stats_of_event(t->xs, ev), &first, ref, out, err);
    if (!ref->op.len) ref->op = tpu_op(em);
    return rc < 0 ? rc : JP_OK;
}

/* A derived event's args: what the exporter writes for it, and a step's breakdown. A step also
 * names when the host issued it (its marker or dispatch), on the timeline's axis: the box itself
 * runs to the end of the step's device work, so in an asynchronous loop it lies after its marker. */
static void write_derived_args(const jp_layout_record *r, int kind, int64_t base_ps, hlo_ref *ref, FILE *out) {
    if (kind == JP_LAYOUT_ROW_STEPS) {
        const jp_step *s = r->step;
        fprintf(out, "\"step_num\":%lld,\"ops\":%llu,\"compiles\":%u,\"flops\":%.17g", (long long)s->step_num,
                (unsigned long long)s->n_ops, s->n_compiles, s->flops);
        if (s->host_dur_ps > 0)
            fprintf(out, ",\"issued_start_us\":%.3f,\"issued_us\":%.3f",
                    (double)jp_layout_ns(base_ps, s->host_start_ps) / 1e3, (double)s->host_dur_ps / 1e6);
        fprintf(out, ",\"no_device_work\":%s", s->no_device_work ? "true" : "false");
        for (int p = 0; p < JP_PART_COUNT; p++) fprintf(out, ",\"%s_us\":%.3f", jp_part_name(p), (double)s->part_ps[p] / 1e6);
    } else if (kind == JP_LAYOUT_ROW_XLA_OPS) {
        fputs("\"hlo_module\":", out);
        jp_json_fput_str(out, r->module.ptr, r->module.len);
        fprintf(out, ",\"kernels\":%lld", (long long)r->kernels);
        *ref = (hlo_ref){r->module, r->name, {0, 0}};
    } else if (kind == JP_LAYOUT_ROW_LAUNCH_DELAY && r->kernels) { /* launches merged: the queue ran deeper */
        fprintf(out, "\"launches\":%lld", (long long)r->kernels);
    } else if (kind == JP_LAYOUT_ROW_LAUNCH_DELAY) {
        fputs("\"call\":", out);
        jp_json_fput_str(out, r->call.ptr, r->call.len);
        fputs(",\"work\":", out);
        jp_json_fput_str(out, r->name.ptr, r->name.len);
        fprintf(out, ",\"launch_delay_us\":%.3f", (double)(r->end_ps - r->start_ps) / 1e6);
    } else if (kind == JP_LAYOUT_ROW_COMM_EXPOSED) {
        fprintf(out, "\"exposed_us\":%.3f", (double)(r->end_ps - r->start_ps) / 1e6);
    } else {
        fprintf(out, "\"kernels\":%lld,\"run_id\":%lld", (long long)r->kernels, (long long)r->run_id);
    }
}

/* ---- flows of one event --------------------------------------------------------------------------- */

/* The event at the other end of a flow, as {"dir","track","index","us","name","thread"}. */
static void write_flow_end(const jp_timeline *tl, const char *dir, uint32_t track, uint32_t index, int64_t ns,
                           int first, FILE *out) {
    const tl_track *t = &JP_VEC_AT(&tl->tracks, tl_track, track);
    const tl_level *lv = &t->levels[jp_timeline_depth_of(t, index)];
    const jp_str *name = &JP_VEC_AT(&tl->names, jp_str, lv->name[index - lv->first]);
    fprintf(out, "%s{\"dir\":\"%s\",\"track\":%u,\"index\":%u,\"us\":%.3f,\"name\":", first ? "" : ",", dir, track,
            index, (double)ns / 1e3);
    jp_json_fput_str(out, name->ptr, name->len);
    fputs(",\"thread\":", out);
    jp_json_fput_cstr(out, t->thread);
    fputc('}', out);
}

/* The flows leaving the event (they depart at its end) and reaching it (they arrive at its start):
 * a binary search for that instant, then the flows there that name the event. */
static void write_event_flows(const jp_timeline *tl, uint32_t track, uint32_t index, int64_t start, int64_t end,
                              FILE *out) {
    size_t lo = 0, hi = tl->n_flows, n = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tl->flows[mid].from_ns < end) lo = mid + 1;
        else hi = mid;
    }
    fputs(",\"flows\":[", out);
    for (size_t i = lo; i < tl->n_flows && tl->flows[i].from_ns == end; i++)
        if (tl->flows[i].from_track == track && tl->flows[i].from_index == index)
            write_flow_end(tl, "out", tl->flows[i].to_track, tl->flows[i].to_index, tl->flows[i].to_ns, n++ == 0, out);
    for (lo = 0, hi = tl->n_flows; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        if (tl->flows[tl->flows_by_to[mid]].to_ns < start) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < tl->n_flows && tl->flows[tl->flows_by_to[i]].to_ns == start; i++) {
        const tl_flow *f = &tl->flows[tl->flows_by_to[i]];
        if (f->to_track == track && f->to_index == index)
            write_flow_end(tl, "in", f->from_track, f->from_index, f->from_ns, n++ == 0, out);
    }
    fputc(']', out);
}

/* ---- the HLO instruction ---------------------------------------------------------------------------- */

/* A metadata entry's name with its program id stripped: newer JAX names them "jit_f(12)", with no
 * program_id stat, the id in parentheses; *program gets it when it knows none. */
static jp_str module_name(jp_str name, prog_id *program) {
    if (name.len < 3 || name.ptr[name.len - 1] != ')') return name;
    size_t open = name.len - 1; /* the first digit */
    while (open > 0 && name.ptr[open - 1] >= '0' && name.ptr[open - 1] <= '9') open--;
    if (open < 2 || open == name.len - 1 || name.ptr[open - 1] != '(') return name;
    uint64_t id = 0;
    for (size_t i = open; i + 1 < name.len; i++) {
        unsigned d = (unsigned)(name.ptr[i] - '0');
        if (id > (UINT64_MAX - d) / 10) return name; /* more than 64 bits: not an id */
        id = id * 10 + d;
    }
    if (!program->known) *program = (prog_id){id, 1};
    return (jp_str){name.ptr, open - 1};
}

/* The "Hlo Proto" bytes and program id of one module's metadata; 1 when it has the proto. */
static int module_meta(jp_xspace *xs, const jp_plane *pl, const jp_event_meta *em, jp_bytes *proto, prog_id *program,
                       jp_error *err) {
    jp_stats_iter it = jp_stats_of_event_meta(xs, em);
    jp_stat st;
    int rc;
    *proto = (jp_bytes){0};
    *program = (prog_id){0, 0};
    while ((rc = jp_stats_next(&it, &st, err)) == 1) {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(pl, st.metadata_id);
        if (!sm) continue;
        if (jp_str_eq(sm->name, "Hlo Proto") && st.kind == JP_STAT_BYTES)
            *proto = (jp_bytes){(const uint8_t *)st.v.s.ptr, st.v.s.len};
        else if (jp_str_eq(sm->name, "program_id")) *program = (prog_id){(uint64_t)jp_stat_int(&st), 1};
    }
    return rc < 0 ? rc : proto->len > 0;
}

/* The module decoded from metadata em of xs, decoding it on first need. */
static int decoded(jp_timeline *tl, jp_xspace *xs, const jp_event_meta *em, jp_bytes proto, prog_id program,
                   const tl_hlo **out, jp_error *err) {
    for (size_t i = 0; i < tl->hlo.n; i++) {
        const tl_hlo *h = &JP_VEC_AT(&tl->hlo, tl_hlo, i);
        if (h->xs == xs && h->meta_id == em->id) return *out = h, JP_OK;
    }
    if (!tl->have_library) {
        if (regcomp(&tl->library, JP_HLO_LIBRARY_FRAMES, REG_EXTENDED | REG_NOSUB) != 0)
            return jp_error_set(err, JP_ERR_NOMEM, 0, "cannot compile the library-frame rule");
        tl->have_library = 1;
    }
    tl_hlo *h = jp_vec_push(&tl->hlo, sizeof *h);
    if (!h) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    *h = (tl_hlo){.xs = xs, .meta_id = em->id, .program_id = program.id, .has_program_id = program.known};
    int rc = jp_hlo_decode_text(proto, jp_xspace_input(xs).ptr, &tl->library, &tl->hlo_intern, &tl->hlo_arena,
                                &h->module, err);
    if (rc) {
        tl->hlo.n--;
        return rc;
    }
    prog_id unused = {0, 0};
    if (!h->module.name) h->module.name = jp_intern_view(&tl->hlo_intern, module_name(em->name, &unused));
    *out = h;
    return JP_OK;
}

/* The module an event names: by program id when both the event and the metadata know one, else
 * by name. NULL when the metadata plane holds none. */
static int find_module(jp_timeline *tl, jp_xspace *xs, const hlo_ref *ref, const tl_hlo **out, jp_error *err) {
    size_t n;
    const jp_plane *planes = jp_xspace_planes(xs, &n);
    *out = NULL;
    for (size_t p = 0; p < n; p++) {
        if (!jp_str_eq(planes[p].name, "/host:metadata")) continue;
        for (size_t i = 0; i < planes[p].n_event_meta; i++) {
            const jp_event_meta *em = &planes[p].event_meta[i];
            jp_bytes proto;
            prog_id program;
            int rc = module_meta(xs, &planes[p], em, &proto, &program, err);
            if (rc <= 0) {
                if (rc < 0) return rc;
                continue;
            }
            jp_str name = module_name(em->name, &program);
            int same = ref->program.known && program.known ? ref->program.id == program.id
                       : ref->module.len == name.len && name.len && memcmp(name.ptr, ref->module.ptr, name.len) == 0;
            if (same) return decoded(tl, xs, em, proto, program, out, err);
        }
    }
    return JP_OK;
}

static void write_text_field(FILE *out, const char *key, const char *s) {
    fprintf(out, ",\"%s\":", key);
    jp_json_fput_cstr(out, s);
}

static void write_stack(const jp_hlo_frame *f, FILE *out) {
    fputs(",\"stack\":[", out);
    for (int k = 0; f && k < JP_HLO_MAX_STACK; f = f->parent, k++) {
        fputs(k ? ",{\"file\":" : "{\"file\":", out);
        jp_json_fput_cstr(out, f->file);
        fprintf(out, ",\"line\":%u,\"function\":", f->line);
        jp_json_fput_cstr(out, f->function);
        fprintf(out, ",\"library\":%s}", f->library ? "true" : "false");
    }
    fputc(']', out);
}

static void write_instr(jp_timeline *tl, const tl_hlo *h, const jp_hlo_instr *in, FILE *out) {
    fputs(",\"hlo\":{\"module\":", out);
    jp_json_fput_cstr(out, h->module.name);
    if (h->has_program_id) fprintf(out, ",\"program_id\":%llu", (unsigned long long)h->program_id);
    else fputs(",\"program_id\":null", out);
    write_text_field(out, "name", in->name);
    write_text_field(out, "opcode", in->opcode);
    write_text_field(out, "text", in->text);
    write_text_field(out, "category", in->category);
    write_text_field(out, "op_name", in->op_name);
    write_text_field(out, "scope", jp_hlo_scope_of(&tl->hlo_intern, in->op_name ? in->op_name : ""));
    write_text_field(out, "source", in->source);
    write_text_field(out, "function", in->function);
    write_stack(in->frame, out);
    fprintf(out, ",\"flops\":%.17g,\"bytes\":%.17g,\"transcendentals\":%.17g}", in->flops, in->bytes,
            in->transcendentals);
}

/* "hlo": the instruction ref names, or null (with "hlo_error" when its module would not decode). */
static void write_hlo(jp_timeline *tl, jp_xspace *xs, const hlo_ref *ref, FILE *out) {
    const tl_hlo *h = NULL;
    jp_error err = {0};
    int rc = (ref->module.len || ref->program.known) && ref->op.len ? find_module(tl, xs, ref, &h, &err) : JP_OK;
    const char *op = h ? jp_intern_lookup(&tl->hlo_intern, ref->op.ptr, ref->op.len) : NULL;
    const jp_hlo_instr *in = op ? jp_hlo_find(&h->module, op) : NULL;
    if (in) {
        write_instr(tl, h, in, out);
        return;
    }
    fputs(",\"hlo\":null", out);
    if (rc) write_text_field(out, "hlo_error", err.msg);
}

/* ---- the answer -------------------------------------------------------------------------------------- */

int jp_timeline_event(jp_timeline *tl, size_t track_id, size_t index, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!tl || !out) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: bad event query");
    if (track_id >= tl->tracks.n) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no track %zu", track_id);
    const tl_track *t = &JP_VEC_AT(&tl->tracks, tl_track, track_id);
    if (index >= t->n_events) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no event %zu on track %zu", index, track_id);
    uint32_t d = jp_timeline_depth_of(t, index);
    const tl_level *lv = &t->levels[d];
    size_t i = index - lv->first;
    const jp_str *name = &JP_VEC_AT(&tl->names, jp_str, lv->name[i]);
    fprintf(out, "{\"track\":%zu,\"index\":%zu,\"process\":", track_id, index);
    jp_json_fput_cstr(out, t->process);
    fputs(",\"thread\":", out);
    jp_json_fput_cstr(out, t->thread);
    fputs(",\"name\":", out);
    jp_json_fput_str(out, name->ptr, name->len);
    fprintf(out, ",\"start_us\":%.3f,\"dur_us\":%.3f,\"self_us\":%.3f,\"depth\":%u,\"args\":{",
            (double)lv->start_ns[i] / 1e3, (double)lv->dur_ns[i] / 1e3, (double)jp_timeline_self_ns(t, d, i) / 1e3, d);
    hlo_ref ref = {{"", 0}, {"", 0}, {0, 0}};
    if (t->line) {
        int rc = write_source_args(t, lv->src[i], &ref, out, err);
        if (rc < 0) return rc;
    } else {
        write_derived_args(&t->recs[lv->src[i]], t->kind, tl->base_ps, &ref, out);
    }
    fputc('}', out);
    write_event_flows(tl, (uint32_t)track_id, (uint32_t)index, lv->start_ns[i], lv->start_ns[i] + lv->dur_ns[i], out);
    write_hlo(tl, t->xs, &ref, out);
    fputs("}\n", out);
    return ferror(out) ? jp_error_set(err, JP_ERR_IO, 0, "timeline: write failed") : JP_OK;
}
