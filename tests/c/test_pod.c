/* test_pod.c - host summaries and runs merged from them (src/pod/, src/profile/pod.c), on the
 * committed real capture tests/data/cpu_small.xplane.pb.gz filed as two hosts of one run: a merge
 * from summaries equals the merge of the files, a summary read back holds the values written, and a
 * bad summary is named and replaced by its file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jaxprof/jaxprof.h"
#include "jaxprof/jaxprof_results.h"
#include "analyses/analyses.h"
#include "base/arena.h"
#include "pod/summary.h"

static char run[1024];

static void path_of(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", run, name); }

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;) assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* A run of two hosts, a and b, each the fixture, each summarised. */
static int make_run(void **state) {
    (void)state;
    snprintf(run, sizeof run, "%s/pod-XXXXXX", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(run));
    char to[1100];
    for (int h = 'a'; h <= 'b'; h++) {
        snprintf(to, sizeof to, "%s/%c.xplane.pb.gz", run, h);
        copy_file(JP_TEST_DATA "/cpu_small.xplane.pb.gz", to);
    }
    jp_error err;
    assert_int_equal(jp_summarize(run, NULL, NULL, NULL, NULL, NULL, &err), JP_OK);
    return 0;
}

static jp_profile *load(int summaries) {
    jp_load_options opt = {.use_summaries = summaries, .threads = 1};
    jp_profile *p;
    jp_error err;
    int rc = jp_profile_load(&p, run, &opt, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, JP_OK);
    return p;
}

static void equal_steps(const jp_step *x, const jp_step *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(x[i].step_num, y[i].step_num);
        assert_int_equal(x[i].start_ps, y[i].start_ps);
        assert_int_equal(x[i].dur_ps, y[i].dur_ps);
        assert_int_equal(x[i].sync_ps, y[i].sync_ps);
        assert_memory_equal(x[i].part_ps, y[i].part_ps, sizeof x[i].part_ps);
    }
}

static void merged_from_summaries_equals_merged_from_files(void **state) {
    (void)state;
    jp_profile *pod = load(1), *raw = load(0);
    const jp_analysis *s = jp_profile_analysis(pod), *r = jp_profile_analysis(raw);
    assert_int_equal(s->n_summarized, 2);
    assert_int_equal(r->n_summarized, 0);
    assert_string_equal(s->clock_method, r->clock_method);
    assert_int_equal(s->n_host_stats, 2);
    assert_int_equal(r->n_host_stats, 2);
    for (size_t h = 0; h < 2; h++) {
        const jp_host_stat *x = &s->host_stats[h], *y = &r->host_stats[h];
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->clock, y->clock);
        assert_int_equal(x->offset_ps, y->offset_ps);
        assert_int_equal(x->n_steps, y->n_steps);
        equal_steps(x->steps, y->steps, x->n_steps);
        assert_int_equal(x->op_self_ps, y->op_self_ps);
        assert_int_equal(x->n_ops, y->n_ops); /* the fixture has fewer ops than a summary keeps */
        for (size_t i = 0; i < x->n_ops; i++) assert_int_equal(x->ops[i].self_ps, y->ops[i].self_ps);
        assert_int_equal(x->wait_ps, y->wait_ps);
    }
    assert_int_equal(s->n_stragglers, r->n_stragglers);
    assert_int_equal(s->n_events, r->n_events);
    assert_int_equal(s->span_ps, r->span_ps);
    assert_int_equal(s->op_busy_ps, r->op_busy_ps);
    jp_profile_free(pod);
    jp_profile_free(raw);
}

/* The text a file holds, malloc'd. */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void expect_refused(const char *text, const char *words) {
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_host_summary s;
    jp_error err;
    assert_int_not_equal(jp_summary_parse(&arena, text, strlen(text), "x.json", &s, &err), JP_OK);
    if (!strstr(err.msg, words)) fail_msg("'%s' does not say '%s'", err.msg, words);
    jp_arena_deinit(&arena);
}

/* An edit of the summary text: the first `from` after `after` replaced by `to`. */
static char *edited(const char *text, const char *after, const char *from, const char *to) {
    const char *at = strstr(text, after);
    assert_non_null(at);
    at = strstr(at, from);
    assert_non_null(at);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* The summaries alone, copied into a log directory's run as a pod's user does (rsync): a run of
 * n_files 0 that lists, loads merged from them (the same hosts as the files give), stamps (a
 * rewritten summary changes it), and that a load needing the files refuses by saying so. */
static void a_run_of_summaries_alone_is_found_and_merged(void **state) {
    (void)state;
    char logs[1100], dir[1200], from[1200], to[1300];
    snprintf(logs, sizeof logs, "%s/logs", run);
    snprintf(dir, sizeof dir, "%s/plugins", logs);
    assert_int_equal(mkdir(logs, 0755) | mkdir(dir, 0755), 0);
    snprintf(dir, sizeof dir, "%s/plugins/r", logs);
    assert_int_equal(mkdir(dir, 0755), 0);
    for (int h = 'a'; h <= 'b'; h++) {
        snprintf(from, sizeof from, "%s/%c.jaxprof-summary.json", run, h);
        snprintf(to, sizeof to, "%s/%c.jaxprof-summary.json", dir, h);
        copy_file(from, to);
    }
    jp_runs runs;
    jp_error err;
    assert_int_equal(jp_runs_find(&runs, logs, &err), JP_OK);
    assert_int_equal(runs.count, 1);
    assert_string_equal(runs.runs[0].path, dir);
    assert_int_equal(runs.runs[0].n_files, 0);
    assert_int_equal(runs.runs[0].n_summarized, 2);
    assert_string_equal(runs.runs[0].summarized[0], "a");
    assert_string_equal(runs.runs[0].summarized[1], "b");
    jp_runs_deinit(&runs);

    jp_profile *p, *raw = load(0);
    assert_int_equal(jp_profile_load(&p, logs, &(jp_load_options){.use_summaries = 1, .threads = 1}, &err), JP_OK);
    const jp_analysis *a = jp_profile_analysis(p), *r = jp_profile_analysis(raw);
    assert_string_equal(a->path, dir);
    assert_int_equal(a->n_summarized, 2);
    assert_int_equal(a->n_host_stats, r->n_host_stats);
    for (size_t h = 0; h < a->n_host_stats; h++) assert_int_equal(a->host_stats[h].offset_ps, r->host_stats[h].offset_ps);
    jp_profile_free(p);
    jp_profile_free(raw);

    assert_int_equal(jp_profile_load(&p, logs, NULL, &err), JP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "holds host summaries alone, no *.xplane.pb"));
    uint64_t before, after;
    assert_int_equal(jp_profile_stamp(logs, &before, &err), JP_OK);
    assert_int_equal(jp_profile_stamp(dir, &after, &err), JP_OK);
    assert_true(before == after);
    FILE *f = fopen(to, "a"); /* b's summary written anew */
    fputc('\n', f);
    fclose(f);
    assert_int_equal(jp_profile_stamp(logs, &after, &err), JP_OK);
    assert_true(before != after);
}

static void bad_summaries_are_refused_naming_the_field(void **state) {
    (void)state;
    char path[1100];
    size_t len;
    path_of(path, sizeof path, "b.jaxprof-summary.json");
    char *text = slurp(path, &len);
    text[len] = '\0';
    char *e[] = {edited(text, "", "\"jaxprof_host_summary\":1", "\"jaxprof_host_summary\":7"),
                 edited(text, "\"steps\":", "\"dur_ps\":", "\"dur_ps\":-"),
                 edited(text, "\"steps\":", "\"idle\":", "\"idle\":1"),
                 edited(text, "\"steps\":", "\"sync_ps\":null", "\"sync_ps\":2305843009213693953"),
                 edited(text, "\"ops\":", "\"device\":0", "\"device\":9"),
                 edited(text, "\"step_summary\":", "\"median_ps\":", "\"median_ps\":5e128,\"was\":")};
    expect_refused(e[0], "schema version 7; this jaxprof reads version 1");
    expect_refused(e[1], "steps[0].dur_ps is negative");
    expect_refused(e[2], "steps[0].parts_ps do not sum to dur_ps");
    expect_refused(e[3], "steps[0].sync_ps is beyond +-2^61 ps");
    expect_refused(e[4], "ops[0].device names no device");
    expect_refused(e[5], "median_ps is not a duration within 2^61 ps"); /* found by fuzz_summary: int64 cast */
    char cut[64];
    memcpy(cut, text, sizeof cut - 1);
    cut[sizeof cut - 1] = '\0';
    expect_refused(cut, "bad host summary at byte");
    /* on disk: named in a warning, and the file read instead */
    FILE *f = fopen(path, "w");
    fputs(e[1], f);
    fclose(f);
    jp_profile *p = load(1);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_summarized, 1);
    assert_int_equal(a->n_host_stats, 2);
    assert_int_equal(a->n_warnings, 1);
    assert_non_null(strstr(a->warnings[0], path));
    assert_non_null(strstr(a->warnings[0], "its file is read instead"));
    jp_profile_free(p);
    for (size_t i = 0; i < sizeof e / sizeof *e; i++) free(e[i]);
    free(text);
}

/* Three hosts, six 10 ms steps, 5 ms of collectives each. Host a reaches them 1.5 ms early in
 * steps 0-2 (the scheduling noise of a busy machine: a straggler three times, 4.5 ms in all);
 * host b sleeps 80 ms before them in steps 3 and 4 (twice, 160 ms). The finding names b. */
static void the_straggler_is_the_host_that_held_the_others_longest(void **state) {
    (void)state;
    enum { HOSTS = 3, STEPS = 6 };
    const int64_t MS = 1000000000;
    jp_step steps[HOSTS][STEPS];
    jp_host_input in[HOSTS];
    const char *names[HOSTS] = {"a", "b", "c"};
    for (int h = 0; h < HOSTS; h++) {
        int64_t t = 0;
        for (int i = 0; i < STEPS; i++) {
            jp_step *s = &steps[h][i];
            int b_late = i == 3 || i == 4, a_early = h == 0 && i < 3;
            int64_t collective = b_late ? (h == 1 ? 5 * MS : 85 * MS) : a_early ? 7 * MS / 2 : 5 * MS;
            *s = (jp_step){.step_num = i, .start_ps = t, .dur_ps = b_late ? 90 * MS : 10 * MS};
            s->part_ps[JP_PART_COLLECTIVE] = collective;
            s->part_ps[JP_PART_IDLE] = s->dur_ps - collective;
            s->sync_ps = t + s->dur_ps;
            t += s->dur_ps;
        }
        in[h] = (jp_host_input){.name = names[h], .steps = steps[h], .n_steps = STEPS};
    }
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_analysis a = {0};
    assert_int_equal(jp_hosts_merge(in, HOSTS, &arena, &a), JP_OK);
    assert_int_equal(a.n_stragglers, 5);
    assert_int_equal(a.host_stats[0].n_straggling, 3);
    assert_int_equal(a.host_stats[1].n_straggling, 2);
    assert_int_equal(jp_findings_hosts_analyze(&arena, &a, (double)(2 * 90 * MS + 4 * 10 * MS)), JP_OK);
    assert_int_equal(a.n_findings, 1);
    assert_string_equal(a.findings[0].id, "straggler");
    assert_non_null(strstr(a.findings[0].evidence, "b was the straggler in 2 of 6 steps (3-4): the other hosts "
                                                   "waited 80.0 ms per step for it"));
    jp_arena_deinit(&arena);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merged_from_summaries_equals_merged_from_files),
        cmocka_unit_test(a_run_of_summaries_alone_is_found_and_merged),
        cmocka_unit_test(bad_summaries_are_refused_naming_the_field),
        cmocka_unit_test(the_straggler_is_the_host_that_held_the_others_longest),
    };
    return cmocka_run_group_tests(tests, make_run, NULL);
}
