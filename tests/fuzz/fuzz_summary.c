/* fuzz_summary.c - fuzz target for host summaries (src/pod/summary_read.c) and what a pod's merge
 * does with them: the bytes are read as a summary; one that passes the reader's checks is merged as
 * three hosts (a, b, c: the same summary, their clocks apart) and every section is rendered as text
 * and JSON. Whatever values a summary holds, the merge must stay within int64 and every index in
 * range. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pod/summary.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { HOSTS = 3 };

/* Copy i of s as host name: its own steps and ops (the merge moves them), its start later. */
static int copy_host(jp_arena *arena, const jp_host_summary *s, const char *name, size_t i, jp_host_summary *out) {
    *out = *s;
    out->in.name = name;
    out->in.start_ns = s->in.start_ns ? s->in.start_ns + (int64_t)i * 1000 : 0;
    out->in.steps = jp_arena_alloc(arena, (s->in.n_steps ? s->in.n_steps : 1) * sizeof *out->in.steps);
    out->in.ops = jp_arena_alloc(arena, (s->in.n_ops ? s->in.n_ops : 1) * sizeof *out->in.ops);
    if (!out->in.steps || !out->in.ops) return -1;
    if (s->in.n_steps) memcpy(out->in.steps, s->in.steps, s->in.n_steps * sizeof *out->in.steps);
    if (s->in.n_ops) memcpy(out->in.ops, s->in.ops, s->in.n_ops * sizeof *out->in.ops);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    static const char *const names[HOSTS] = {"a", "b", "c"};
    if (!sink && !(sink = fopen("/dev/null", "w"))) return 0;
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_host_summary s, hosts[HOSTS];
    jp_error err;
    int ok = jp_summary_parse(&arena, (const char *)data, size, "fuzz.jaxprof-summary.json", &s, &err) == JP_OK;
    for (size_t i = 0; ok && i < HOSTS; i++) ok = copy_host(&arena, &s, names[i], i, &hosts[i]) == 0;
    jp_profile *p = NULL;
    if (ok && jp_pod_from_summaries(&p, hosts, HOSTS, "fuzz", &err) == JP_OK) {
        jp_view view = {0};
        for (int sec = 0; sec < JP_SECTION_COUNT; sec++) {
            (void)jp_render(jp_profile_analysis(p), sec, JP_FORMAT_TEXT, &view, sink, &err);
            (void)jp_render(jp_profile_analysis(p), sec, JP_FORMAT_JSON, &view, sink, &err);
        }
        jp_profile_free(p);
    }
    jp_arena_deinit(&arena);
    return 0;
}
