/* test_health.c - capture health (jp_analysis.health): the XSpace's own errors and warnings, a
 * device plane left empty while the host dispatched, a module without HLO; in the report's text and
 * JSON and as the capture_health finding. Hand-built XSpaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jaxprof/jaxprof.h"
#include "jaxprof/jaxprof_results.h"
#include "pbwrite.h"

enum { S_HLO_OP = 1, S_HLO_MODULE = 2 };

static void stat_str(pbw *ev, uint64_t id, const char *v) {
    pbw st = {0};
    pbw_uint(&st, 1, id);
    pbw_str(&st, 5, v);
    pbw_msg(ev, 4, &st);
    free(st.buf);
}

/* /host:CPU: three dispatches of PjitFunction(step), 1 ms apart. */
static void host_plane(pbw *space) {
    pbw plane = {0}, line = {0}, ev = {0};
    for (uint64_t k = 0; k < 3; k++) {
        pbw_uint(&ev, 1, 1);
        pbw_uint(&ev, 2, k * 1000000000);
        pbw_uint(&ev, 3, 100000000);
        pbw_msg(&line, 4, &ev);
    }
    pbw_uint(&line, 1, 1);
    pbw_str(&line, 2, "python");
    pbw_uint(&line, 3, 1000);
    pbw_msg(&plane, 3, &line);
    pbw_event_meta(&plane, 1, "PjitFunction(step)", NULL);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(space, 1, &plane);
    free(plane.buf), free(line.buf), free(ev.buf);
}

/* /device:GPU:0, empty or with one kernel of jit_step's fusion.1 (and no HLO metadata anywhere). */
static void gpu_plane(pbw *space, int kernel) {
    pbw plane = {0}, line = {0}, ev = {0};
    if (kernel) {
        pbw_uint(&ev, 1, 1);
        pbw_uint(&ev, 2, 5000000);
        pbw_uint(&ev, 3, 2000000);
        stat_str(&ev, S_HLO_OP, "fusion.1");
        stat_str(&ev, S_HLO_MODULE, "jit_step");
        pbw_msg(&line, 4, &ev);
        pbw_uint(&line, 1, 7);
        pbw_str(&line, 2, "Stream #7");
        pbw_uint(&line, 3, 1000);
        pbw_msg(&plane, 3, &line);
        pbw_event_meta(&plane, 1, "fusion_1_kernel", NULL);
        pbw_stat_meta(&plane, S_HLO_OP, "hlo_op");
        pbw_stat_meta(&plane, S_HLO_MODULE, "hlo_module");
    }
    pbw_uint(&plane, 1, 2);
    pbw_str(&plane, 2, "/device:GPU:0");
    pbw_msg(space, 1, &plane);
    free(plane.buf), free(line.buf), free(ev.buf);
}

static const jp_finding *finding_of(const jp_analysis *a, const char *id) {
    for (size_t i = 0; i < a->n_findings; i++)
        if (strcmp(a->findings[i].id, id) == 0) return &a->findings[i];
    return NULL;
}

static char *render(const jp_analysis *a, int format) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    jp_error err;
    assert_int_equal(jp_render(a, JP_SECTION_REPORT, format, NULL, f, &err), JP_OK);
    fclose(f);
    return text;
}

/* The profiler's errors and warnings, quoted, and an empty device while the host dispatched. */
static void errors_warnings_and_an_empty_device(void **state) {
    (void)state;
    pbw space = {0};
    host_plane(&space);
    gpu_plane(&space, 0);
    pbw_str(&space, 2, "CUPTI buffer full: 1024 events dropped");
    pbw_str(&space, 3, "GPU events dropped");
    pbw_str(&space, 4, "h");
    jp_profile *p;
    jp_error err;
    assert_int_equal(jp_profile_parse(&p, space.buf, space.len, "h", NULL, &err), JP_OK);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_health, 3);
    assert_string_equal(a->health[0].kind, "error");
    assert_string_equal(a->health[0].host, "h");
    assert_string_equal(a->health[0].text, "CUPTI buffer full: 1024 events dropped");
    assert_string_equal(a->health[1].kind, "warning");
    assert_string_equal(a->health[1].text, "GPU events dropped");
    assert_string_equal(a->health[2].kind, "empty device");
    assert_string_equal(a->health[2].text, "/device:GPU:0 recorded no events while the host dispatched 3 programs: "
                                           "device tracing failed or was off (device_tracer_level 0), or its events "
                                           "were dropped");
    const jp_finding *f = finding_of(a, "capture_health");
    assert_non_null(f);
    assert_int_equal(f->severity, JP_RATING_BAD);
    assert_non_null(strstr(f->evidence, "error (h): \"CUPTI buffer full: 1024 events dropped\"; warning (h): \"GPU "
                                        "events dropped\"; empty device (h): /device:GPU:0 recorded no events"));
    assert_non_null(strstr(f->fix, "gpu_max_activity_api_events"));
    assert_non_null(strstr(f->fix, "device_tracer_level"));
    char *text = render(a, JP_FORMAT_TEXT);
    const char *second = strchr(text, '\n') + 1, *third = strchr(second, '\n') + 1; /* header: two lines */
    const char *want = "capture health: error (h): CUPTI buffer full: 1024 events dropped\n"
                       "capture health: warning (h): GPU events dropped\n"
                       "capture health: empty device (h): /device:GPU:0 recorded no events";
    assert_true(strncmp(third, want, strlen(want)) == 0);
    free(text);
    char *json = render(a, JP_FORMAT_JSON);
    assert_non_null(strstr(json, ",\"capture_health\":[{\"kind\":\"error\",\"host\":\"h\",\"text\":\"CUPTI buffer full: "
                                 "1024 events dropped\"},{\"kind\":\"warning\",\"host\":\"h\",\"text\":\"GPU events "
                                 "dropped\"},{\"kind\":\"empty device\""));
    free(json);
    jp_profile_free(p);
    free(space.buf);
}

/* A kernel of a module the metadata has no HloProto for: named; the device is not empty. */
static void module_without_hlo(void **state) {
    (void)state;
    pbw space = {0};
    host_plane(&space);
    gpu_plane(&space, 1);
    pbw_str(&space, 4, "h");
    jp_profile *p;
    jp_error err;
    assert_int_equal(jp_profile_parse(&p, space.buf, space.len, "h", NULL, &err), JP_OK);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_health, 1);
    assert_string_equal(a->health[0].kind, "no HLO");
    assert_string_equal(a->health[0].text, "module jit_step ran without an HloProto in the metadata: its ops have no "
                                           "FLOPs, bytes or memory (enable_hlo_proto)");
    const jp_finding *f = finding_of(a, "capture_health");
    assert_non_null(f);
    assert_int_equal(f->severity, JP_RATING_WARNING);
    assert_non_null(strstr(f->fix, "enable_hlo_proto=True"));
    jp_profile_free(p);
    free(space.buf);
}

/* No dispatch, no error: nothing to say (an empty device alone is an idle device). */
static void quiet_capture_has_no_health(void **state) {
    (void)state;
    pbw space = {0};
    gpu_plane(&space, 0);
    pbw plane = {0}, line = {0}, ev = {0};
    pbw_uint(&ev, 1, 1), pbw_uint(&ev, 2, 0), pbw_uint(&ev, 3, 1000);
    pbw_msg(&line, 4, &ev);
    pbw_uint(&line, 1, 1), pbw_str(&line, 2, "python"), pbw_uint(&line, 3, 1000);
    pbw_msg(&plane, 3, &line);
    pbw_event_meta(&plane, 1, "my_function", NULL);
    pbw_uint(&plane, 1, 1), pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, "h");
    jp_profile *p;
    jp_error err;
    assert_int_equal(jp_profile_parse(&p, space.buf, space.len, "h", NULL, &err), JP_OK);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_health, 0);
    assert_null(finding_of(a, "capture_health"));
    char *json = render(a, JP_FORMAT_JSON);
    assert_non_null(strstr(json, ",\"capture_health\":[],"));
    free(json);
    jp_profile_free(p);
    free(space.buf), free(plane.buf), free(line.buf), free(ev.buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errors_warnings_and_an_empty_device),
        cmocka_unit_test(module_without_hlo),
        cmocka_unit_test(quiet_capture_has_no_health),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
