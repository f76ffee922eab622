/* memory_render.c - memory at the peak (XLA's buffer assignment, jp_analysis.modules) as text, JSON
 * and CSV: the modules that ran, largest peak first, each with its top buffers; or one module
 * (jp_view.module) with every buffer live at its peak. The buffers go through the table module, so
 * --sort, --filter, --top and --columns apply to them as to any other table. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/text.h"
#include "decode/chrome.h"
#include "render/columns.h"
#include "render/memory_render.h"

/* Buffers per module without --module (and without --top), and how many modules the text shows
 * in detail: the largest, and others that come near it (at least half its peak). */
enum { DEFAULT_TOP = 10, DETAIL_MODULES = 3 };
/* Modules the text lists at most (a long-running service may compile hundreds). */
enum { MAX_LISTED = 64 };

static void set_str(cell *c, const char *s) { c->type = CELL_STR, c->s = s ? s : ""; }
static void set_int(cell *c, int64_t i) { c->type = CELL_INT, c->i = i; }
static void set_bytes(cell *c, int64_t b) { c->type = CELL_BYTES, c->i = b; }

/* The buffers table (columns.c): the module's columns, then the buffer's. */
#define ROW_COLS (jp_table_defs[JP_TABLE_BUFFERS].cols)
enum { N_MODULE_COLS = JP_BUFFER_FIRST_COL };
#define N_ROW_COLS (jp_table_defs[JP_TABLE_BUFFERS].n_cols)
enum { COL_BYTES = 6, COL_KIND = 8, COL_INSTRUCTION = 9, COL_SHAPE = 11, COL_OP_NAME = 12, COL_SOURCE = 13 };

/* Text names the small row and shows a source path without the directory every user frame
 * shares (a->source_prefix), as the lines table does; JSON and CSV keep the API's values. */
static void buffer_text_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const buffer_row *r = row;
    size_t n = a->source_prefix ? strlen(a->source_prefix) : 0;
    if (col + N_MODULE_COLS == COL_INSTRUCTION && r->b->kind == JP_BUFFER_SMALL)
        set_str(c, "(buffers under 16 KiB)");
    else if (col + N_MODULE_COLS == COL_SOURCE && n && strncmp(r->b->source, a->source_prefix, n) == 0)
        set_str(c, r->b->source + n);
    else
        ROW_COLS[col + N_MODULE_COLS].get(a, row, c);
}

/* A module's buffers as a table (text: size, kind, instruction, shape, line, op_name). */
static table buffer_table(const buffer_row *rows, size_t n, int text) {
    static const size_t text_cols[] = {COL_BYTES, COL_KIND, COL_INSTRUCTION, COL_SHAPE, COL_SOURCE, COL_OP_NAME};
    table t = {.name = "buffers", .cols = ROW_COLS + N_MODULE_COLS, .n_cols = N_ROW_COLS - N_MODULE_COLS, .rows = rows,
               .row_size = sizeof *rows, .n_rows = n, .cell = text ? buffer_text_cell : NULL};
    for (size_t i = 0; text && i < sizeof text_cols / sizeof text_cols[0]; i++) /* --columns replaces these */
        t.pick[t.n_pick++] = text_cols[i] - N_MODULE_COLS;
    return t;
}

/* A module's buffers as rows, in their order (largest first); *rows is malloc'd. */
static int module_rows(const jp_module_memory *m, buffer_row **rows, jp_error *err) {
    *rows = malloc((m->n_buffers ? m->n_buffers : 1) * sizeof **rows);
    if (!*rows) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < m->n_buffers; i++) (*rows)[i] = (buffer_row){m, &m->buffers[i]};
    return JP_OK;
}

/* The buffer view: the caller's sort, filter and columns; its --top, else DEFAULT_TOP buffers per
 * module in the list of modules and all of them for one module. */
static jp_view buffer_view(const jp_view *v) {
    jp_view bv = {0};
    if (v) bv = *v;
    if (!bv.top && !bv.module) bv.top = DEFAULT_TOP;
    return bv;
}

/* ---- which modules ------------------------------------------------------------------------------- */

/* 1 when module entry i is the first entry with its key (a multi-host profile repeats a key per host). */
static int first_of_key(const jp_analysis *a, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (strcmp(a->modules[j].name, a->modules[i].name) == 0) return 0;
    return 1;
}

/* 1 when name is the module's plain name: its key "jit_step(6)" without the "(6)". */
static int plain_name_of(const jp_module_memory *m, const char *name) {
    size_t n = strlen(name);
    return strncmp(m->name, name, n) == 0 && m->name[n] == '(';
}

/* "a, b, c" of the distinct keys of the entries that match (plain 0: every entry), then
 * ", ... (N more)" for those that did not fit whole in LIST_KEYS_ROOM bytes. */
enum { LIST_KEYS_MAX = 400, LIST_KEYS_ROOM = LIST_KEYS_MAX - 40 }; /* 40: room for the "more" */

static void list_keys(const jp_analysis *a, const char *plain, char (*buf)[LIST_KEYS_MAX]) {
    jp_text t = jp_text_make(*buf, sizeof *buf);
    size_t left = 0;
    for (size_t i = 0; i < a->n_modules; i++) {
        if ((plain && !plain_name_of(&a->modules[i], plain)) || !first_of_key(a, i)) continue;
        const char *k = a->modules[i].name;
        size_t need = (t.len ? 2 : 0) + strlen(k);
        if (need > LIST_KEYS_ROOM - t.len) { /* t.len <= LIST_KEYS_ROOM: only what fits is added */
            left++;
            continue;
        }
        jp_text_printf(&t, "%s%s", t.len ? ", " : "", k);
    }
    if (left) jp_text_printf(&t, ", ... (%zu more)", left);
}

/* The key (jp_module_memory.name) that --module NAME picks: NAME itself when a module has it as
 * its key; else the one key with NAME as its plain name, or of those the one that ran. */
static int resolve_module(const jp_analysis *a, const char *name, const char **key, jp_error *err) {
    const char *any = NULL, *ran = NULL;
    size_t n_any = 0, n_ran = 0;
    for (size_t i = 0; i < a->n_modules; i++) {
        const jp_module_memory *m = &a->modules[i];
        if (strcmp(m->name, name) == 0) {
            *key = m->name;
            return JP_OK;
        }
        if (!plain_name_of(m, name) || !first_of_key(a, i)) continue;
        n_any++, any = m->name;
        for (size_t j = i; j < a->n_modules; j++) /* did it run on any host */
            if (strcmp(a->modules[j].name, m->name) == 0 && a->modules[j].runs) {
                n_ran++, ran = m->name;
                break;
            }
    }
    *key = n_any == 1 ? any : n_ran == 1 ? ran : NULL;
    if (*key) return JP_OK;
    char known[LIST_KEYS_MAX];
    if (!a->n_modules)
        return jp_error_set(err, JP_ERR_ARG, 0, "module %.64s: this profile has no XLA buffer assignment (no HloProto "
                            "in its /host:metadata)", name);
    list_keys(a, n_any ? name : NULL, &known);
    if (n_any)
        return jp_error_set(err, JP_ERR_ARG, 0, "module %.64s names %zu modules (%zu of them ran): %s; give one of these",
                            name, n_any, n_ran, known);
    return jp_error_set(err, JP_ERR_ARG, 0, "module %.64s: no such module; the profile's modules: %s", name, known);
}

int jp_memory_pick(const jp_analysis *a, const jp_view *v, const jp_module_memory ***out, size_t *n, jp_error *err) {
    const char *key = NULL;
    *out = NULL, *n = 0;
    if (v && v->module) {
        int rc = resolve_module(a, v->module, &key, err);
        if (rc) return rc;
    }
    const jp_module_memory **pick = malloc((a->n_modules ? a->n_modules : 1) * sizeof *pick);
    if (!pick) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    int any_ran = 0;
    for (size_t i = 0; i < a->n_modules; i++) any_ran |= a->modules[i].runs > 0;
    for (size_t i = 0; i < a->n_modules; i++) {
        const jp_module_memory *m = &a->modules[i];
        if (key ? strcmp(m->name, key) == 0 : !any_ran || m->runs > 0) pick[(*n)++] = m;
    }
    *out = pick;
    return JP_OK;
}

/* ---- JSON --------------------------------------------------------------------------------------- */

/* A module's keys (columns.c's modules table) with kind_bytes{} after always_live_bytes. */
static void json_module_head(const jp_module_memory *m, FILE *out) {
    const jp_table_def *d = &jp_table_defs[JP_TABLE_MODULES];
    table t = {.name = d->name, .cols = d->cols, .n_cols = d->n_cols};
    size_t split = JP_MODULE_KIND_BYTES_AFTER + 1;
    fputc('{', out);
    jp_table_json_fields(NULL, &t, m, 0, split, 1, out);
    fprintf(out, ",\"kind_bytes\":{\"parameter\":%lld,\"output\":%lld,\"constant\":%lld}",
            (long long)m->kind_bytes[JP_BUFFER_PARAMETER], (long long)m->kind_bytes[JP_BUFFER_OUTPUT],
            (long long)m->kind_bytes[JP_BUFFER_CONSTANT]);
    jp_table_json_fields(NULL, &t, m, split, d->n_cols, 0, out);
}

static void json_timeline(const jp_module_memory *m, FILE *out) {
    fputs(",\"timeline\":[", out);
    for (size_t i = 0; i < m->n_timeline; i++) {
        fprintf(out, "%s{\"bytes\":%lld,\"instruction\":", i ? "," : "", (long long)m->timeline[i]);
        jp_json_fput_cstr(out, m->timeline_instructions && m->timeline_instructions[i] ? m->timeline_instructions[i] : "");
        fputc('}', out);
    }
    fputc(']', out);
}

/* A module's buffers under the caller's view: the text table, or the JSON array of rows. */
static int write_buffers(const jp_analysis *a, const jp_module_memory *m, const jp_view *bv, int text, FILE *out,
                         jp_error *err) {
    buffer_row *rows;
    size_t *order, n;
    int rc = module_rows(m, &rows, err);
    if (rc) return rc;
    table t = buffer_table(rows, m->n_buffers, text);
    rc = jp_table_select(a, &t, bv, &order, &n, err);
    if (!rc && text) jp_table_text(a, &t, order, n, bv->width ? bv->width : 100, out);
    if (!rc && !text) jp_table_json_rows(a, &t, order, n, out);
    if (!rc) free(order);
    free(rows);
    return rc;
}

static int json_module(const jp_analysis *a, const jp_module_memory *m, const jp_view *bv, FILE *out, jp_error *err) {
    json_module_head(m, out);
    fputs(",\"buffers\":", out);
    int rc = write_buffers(a, m, bv, 0, out, err);
    if (bv->module) json_timeline(m, out);
    fputc('}', out);
    return rc;
}

int jp_memory_json(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    const jp_module_memory **mods;
    size_t n;
    jp_view bv = buffer_view(v);
    int rc = jp_memory_pick(a, v, &mods, &n, err);
    if (rc) return rc;
    fputs(",\"modules\":[", out);
    for (size_t i = 0; !rc && i < n; i++) {
        fputs(i ? ",\n" : "\n", out);
        rc = json_module(a, mods[i], &bv, out, err);
    }
    fputc(']', out);
    free(mods);
    return rc;
}

/* ---- CSV ---------------------------------------------------------------------------------------- */

int jp_memory_csv(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    const jp_module_memory **mods;
    size_t n_mods, total = 0;
    jp_view bv = buffer_view(v);
    int rc = jp_memory_pick(a, v, &mods, &n_mods, err);
    if (rc) return rc;
    for (size_t i = 0; i < n_mods; i++) total += mods[i]->n_buffers;
    buffer_row *rows = malloc((total ? total : 1) * sizeof *rows);
    size_t *order = malloc((total ? total : 1) * sizeof *order), k = 0, n_rows = 0;
    if (!rows || !order) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < n_mods && !rc; i++) /* each module's rows selected apart: --top is per module */
        for (size_t b = 0; b < mods[i]->n_buffers; b++) rows[k++] = (buffer_row){mods[i], &mods[i]->buffers[b]};
    table all = {.name = "buffers", .cols = ROW_COLS, .n_cols = N_ROW_COLS, .rows = rows, .row_size = sizeof *rows,
                 .n_rows = k};
    for (size_t i = 0, first = 0; i < n_mods && !rc; first += mods[i++]->n_buffers) {
        table one = all;
        size_t *sel, n;
        one.rows = rows + first, one.n_rows = mods[i]->n_buffers;
        if ((rc = jp_table_select(a, &one, &bv, &sel, &n, err))) break;
        for (size_t r = 0; r < n; r++) order[n_rows++] = first + sel[r];
        all.n_pick = one.n_pick;
        memcpy(all.pick, one.pick, sizeof all.pick);
        free(sel);
    }
    if (!rc && !n_mods && bv.columns) { /* no rows: still check --columns and give the header it asks for */
        size_t *sel, n;
        if (!(rc = jp_table_select(a, &all, &bv, &sel, &n, err))) free(sel);
    }
    if (!rc) jp_table_csv(a, &all, order, n_rows, out);
    free(rows);
    free(order);
    free(mods);
    return rc;
}

/* ---- text --------------------------------------------------------------------------------------- */

/* The list of modules: one row each, a module being a pointer into jp_analysis.modules. */
/* A text-only table (the JSON's modules[] are written by memory_json): key, header, width. */
#define TEXT_COL(KEY, HEADER, WIDTH) {.key = KEY, .header = HEADER, .width = WIDTH}
static const column MODULE_COLS[] = {
    TEXT_COL("module", "module", 0), TEXT_COL("host", "host", 16), TEXT_COL("runs", "runs", 5),
    TEXT_COL("peak_bytes", "peak", 10), TEXT_COL("temporaries", "temporaries", 11),
    TEXT_COL("parameters", "parameters", 10), TEXT_COL("outputs", "outputs", 10),
    TEXT_COL("constants", "constants", 10), TEXT_COL("peak_instruction", "peak at", 16),
};
enum { COL_HOST = 1, COL_CONSTANTS = 7 };

static void module_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_module_memory *m = *(const jp_module_memory *const *)row;
    (void)a;
    switch (col) {
    case 0: set_str(c, m->name); break;
    case 1: set_str(c, m->host); break;
    case 2: set_int(c, (int64_t)m->runs); break;
    case 3: set_bytes(c, m->peak_bytes); break;
    case 4: set_bytes(c, m->peak_bytes - m->always_live_bytes); break; /* the heap at its peak */
    case 5: set_bytes(c, m->kind_bytes[JP_BUFFER_PARAMETER]); break;
    case 6: set_bytes(c, m->kind_bytes[JP_BUFFER_OUTPUT]); break;
    case 7: set_bytes(c, m->kind_bytes[JP_BUFFER_CONSTANT]); break;
    default: set_str(c, m->peak_index >= 0 && m->peak_instruction && *m->peak_instruction ? m->peak_instruction : "-"); break;
    }
}

/* The module table, with the host column only when the modules come from several hosts and the
 * constants column only when a module has constants. */
static void module_list_text(const jp_analysis *a, const jp_module_memory **mods, size_t n, int width, FILE *out) {
    table t = {.name = "modules", .cols = MODULE_COLS, .n_cols = sizeof MODULE_COLS / sizeof MODULE_COLS[0],
               .rows = mods, .row_size = sizeof *mods, .n_rows = n, .cell = module_cell};
    int hosts = 0, constants = 0;
    for (size_t i = 0; i < n; i++) {
        hosts |= strcmp(mods[i]->host ? mods[i]->host : "", mods[0]->host ? mods[0]->host : "") != 0;
        constants |= mods[i]->kind_bytes[JP_BUFFER_CONSTANT] != 0;
    }
    for (size_t c = 0; c < t.n_cols; c++)
        if ((c != COL_HOST || hosts) && (c != COL_CONSTANTS || constants)) t.pick[t.n_pick++] = c;
    size_t order[MAX_LISTED] = {0}, shown = n < MAX_LISTED ? n : MAX_LISTED;
    for (size_t i = 0; i < shown; i++) order[i] = i;
    jp_table_text(a, &t, order, shown, width, out);
    if (n > shown) fprintf(out, "  ... %zu more (jaxprof memory --json lists them all)\n", n - shown);
}

/* "heap event 3 of 8 (wrapped_slice, in main.4)", or why there is no heap, written to out. */
static void where_text(const jp_module_memory *m, jp_text *out) {
    size_t events = m->n_timeline ? m->n_timeline - 1 : 0;
    if (m->peak_index < 0 || !events) {
        jp_text_puts(out, "no heap temporaries: every buffer lives for the whole program");
        return;
    }
    jp_text_printf(out, "heap event %lld of %zu (counted from 0): %s", (long long)m->peak_index, events,
                   m->peak_instruction && *m->peak_instruction ? m->peak_instruction : "?");
    if (m->peak_computation && *m->peak_computation) jp_text_printf(out, ", in %s", m->peak_computation);
}

static void size_line(FILE *out, const char *label, int64_t bytes, const char *after) {
    char b[32];
    jp_format_bytes(b, sizeof b, bytes);
    fprintf(out, "  %-17s %10s (%lld bytes)%s\n", label, b, (long long)bytes, after);
}

/* --module NAME: the module's headline numbers, then every buffer live at its peak. */
static int one_module_text(const jp_analysis *a, const jp_module_memory *m, const jp_view *bv, FILE *out, jp_error *err) {
    char where_buf[256], b[3][32], tail[160];
    jp_text where = jp_text_make(where_buf, sizeof where_buf);
    where_text(m, &where);
    fprintf(out, "Module %s%s%s: %llu run%s\n", m->name, m->host && *m->host ? " on host " : "", m->host ? m->host : "",
            (unsigned long long)m->runs, m->runs == 1 ? "" : "s");
    jp_format_bytes(b[0], 32, m->peak_bytes);
    fprintf(out, "  peak              %10s (%lld bytes) at %s\n", b[0], (long long)m->peak_bytes, where.buf);
    size_line(out, "without padding", m->peak_unpadded_bytes, "");
    jp_format_bytes(b[0], 32, m->kind_bytes[JP_BUFFER_PARAMETER]);
    jp_format_bytes(b[1], 32, m->kind_bytes[JP_BUFFER_OUTPUT]);
    jp_format_bytes(b[2], 32, m->kind_bytes[JP_BUFFER_CONSTANT]);
    snprintf(tail, sizeof tail, ": parameters %s, outputs %s, constants %s", b[0], b[1], b[2]);
    size_line(out, "live all along", m->always_live_bytes, tail);
    size_line(out, "temporaries", m->peak_bytes - m->always_live_bytes, " at the peak");
    size_line(out, "temp allocation", m->temp_bytes, " with fragmentation (memory_analysis' temp size)");
    size_line(out, "total allocated", m->total_bytes, ": the peak with fragmentation");
    if (m->alias_bytes) size_line(out, "donated", m->alias_bytes, " (parameters aliased with an output)");
    if (m->note && *m->note) fprintf(out, "  note: %s\n", m->note);
    fprintf(out, "\nBuffers live at the peak (%zu rows, largest first)\n", m->n_buffers);
    return write_buffers(a, m, bv, 1, out, err);
}

/* The detail under the module list: the largest module's top buffers, and those of up to two more
 * modules whose peak comes within half of it (not the same module again on another host). */
static int top_modules_text(const jp_analysis *a, const jp_module_memory **mods, size_t n, const jp_view *bv, FILE *out,
                            jp_error *err) {
    int rc = JP_OK;
    const jp_module_memory *shown[DETAIL_MODULES];
    size_t n_shown = 0;
    for (size_t i = 0; i < n && n_shown < DETAIL_MODULES && !rc; i++) {
        const jp_module_memory *m = mods[i];
        int again = 0;
        for (size_t k = 0; k < n_shown; k++) again |= strcmp(shown[k]->name, m->name) == 0;
        if (again || (n_shown && m->peak_bytes * 2 < mods[0]->peak_bytes)) continue;
        shown[n_shown++] = m;
        char where_buf[256], peak[32];
        jp_text where = jp_text_make(where_buf, sizeof where_buf);
        where_text(m, &where);
        jp_format_bytes(peak, sizeof peak, m->peak_bytes);
        fprintf(out, "\n%s: peak %s at %s; its largest buffers there (of %zu rows)\n", m->name, peak, where.buf, m->n_buffers);
        if (m->note && *m->note) fprintf(out, "  note: %s\n", m->note);
        rc = write_buffers(a, m, bv, 1, out, err);
    }
    return rc;
}

/* 1 when a host was read from a Chrome trace (its capture note says so). */
static int from_chrome_trace(const jp_analysis *a) {
    for (size_t i = 0; i < a->n_health; i++)
        if (strncmp(a->health[i].text, JP_CHROME_NOTE_PREFIX, strlen(JP_CHROME_NOTE_PREFIX)) == 0) return 1;
    return 0;
}

int jp_memory_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    const jp_module_memory **mods;
    size_t n;
    jp_view bv = buffer_view(v);
    if (!bv.width) bv.width = 100;
    int rc = jp_memory_pick(a, v, &mods, &n, err);
    if (rc) return rc;
    if (v && v->module) {
        for (size_t i = 0; i < n && !rc; i++) {
            if (i) fputc('\n', out);
            rc = one_module_text(a, mods[i], &bv, out, err);
        }
    } else if (!n && from_chrome_trace(a)) {
        fputs("Memory at the peak: needs the .xplane.pb (a Chrome trace keeps no HLO protos, so no buffer\n"
              "assignment; give the .xplane.pb of the same capture)\n", out);
    } else if (!n) {
        fputs("Memory at the peak: no XLA buffer assignment in this profile (JAX stores one per compiled module\n"
              "in /host:metadata; this profile has none)\n", out);
    } else {
        fputs("Memory at the peak, per compiled module (XLA's buffer assignment; largest peak first)\n", out);
        module_list_text(a, mods, n, bv.width, out);
        if (n < a->n_modules)
            fprintf(out, "  (%zu more compiled but did not run; jaxprof memory --module NAME shows one)\n",
                    a->n_modules - n);
        rc = top_modules_text(a, mods, n, &bv, out, err);
    }
    free(mods);
    return rc;
}
