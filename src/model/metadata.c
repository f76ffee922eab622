/* metadata.c - the /host:metadata plane: every module's HloProto, decoded for the ops to find. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "model/build_int.h"

/* Without the program id a recompiled module would be matched by name alone and get the first
 * compilation's instructions. */
int64_t jp_build_program_id_in_name(jp_str name) {
    if (name.len < 3 || name.ptr[name.len - 1] != ')') return -1;
    size_t open = name.len - 1;
    while (open > 0 && name.ptr[open - 1] >= '0' && name.ptr[open - 1] <= '9') open--;
    size_t digits = name.len - 1 - open;
    if (open == 0 || name.ptr[open - 1] != '(' || digits == 0 || digits > 18) return -1;
    int64_t id = 0;
    for (size_t i = open; i < name.len - 1; i++) id = id * 10 + (name.ptr[i] - '0');
    return id;
}

/* Every module's HloProto on the metadata plane; library marks the frames a source line skips. */
static int read_hlo_modules(jp_build_ctx *c, const regex_t *library) {
    jp_bytes input = jp_xspace_input(c->xs);
    for (size_t i = 0; i < c->plane->n_event_meta; i++) {
        const jp_event_meta *em = &c->plane->event_meta[i];
        jp_ev_info info = {0};
        int rc = jp_build_read_stats(c, jp_stats_of_event_meta(c->xs, em), &info);
        if (rc < 0) return rc;
        if (!jp_info_has(&info, K_HLO_PROTO) || !info.v[K_HLO_PROTO].b.len) continue;
        jp_hlo_module *hm = jp_vec_push(&c->m->hlo, sizeof *hm);
        if (!hm) return jp_build_nomem(c->err);
        rc = jp_hlo_decode(info.v[K_HLO_PROTO].b, input.ptr, library, &c->m->intern, c->m->arena, hm, c->err);
        if (rc) return rc;
        hm->program_id = jp_info_has(&info, K_PROGRAM_ID) ? info.v[K_PROGRAM_ID].i : jp_build_program_id_in_name(em->name);
        if (!hm->name) hm->name = jp_intern_view(&c->m->intern, em->name);
        /* XProf keys a module by this name, "jit_f(12190760917235803885)": a program id of 20
         * digits is no int64, so the name itself is the key */
        hm->key = jp_intern_view(&c->m->intern, em->name);
        hm->host = c->host_index;
        if (!hm->name || !hm->key) return jp_build_nomem(c->err);
    }
    return JP_OK;
}

/* The library-frame rule for source lines: opt's regex, the default one, or none for "". */
static int compile_library_rule(jp_build_ctx *c, const jp_load_options *opt, regex_t *re, int *have) {
    const char *rule = opt && opt->library_frames ? opt->library_frames : JP_HLO_LIBRARY_FRAMES;
    *have = 0;
    if (!*rule) return JP_OK;
    if (regcomp(re, rule, REG_EXTENDED | REG_NOSUB) != 0)
        return jp_error_set(c->err, JP_ERR_ARG, 0, "bad library_frames regex '%s'", rule);
    *have = 1;
    return JP_OK;
}

int jp_build_read_metadata(jp_build_ctx *c, const jp_load_options *opt) {
    regex_t library;
    int have_library, rc = compile_library_rule(c, opt, &library, &have_library);
    if (rc) return rc;
    rc = read_hlo_modules(c, have_library ? &library : NULL);
    if (have_library) regfree(&library);
    return rc;
}
