/* test_comm.c - the communication analysis (src/analyses/comm.c) on a hand-built 4-chip TPU
 * XSpace whose numbers are known by construction: an asynchronous all-reduce (start and done
 * halves) over groups of 4, a compute op inside each instance, one chip arriving 30 us late in
 * the first instance. Real captures are tested in tests/python/test_comm.py; this one covers what
 * they lack: async pairs, a straggler, and the wait across devices with exact values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jaxprof/jaxprof_results.h"
#include "pbwrite.h"

enum { S_HLO_MODULE = 1, S_HLO_PROTO, S_PROGRAM, S_N };
static const char *const STAT_NAMES[S_N] = {"", "hlo_module", "Hlo Proto", "program_id"};
enum { US = 1000000 }; /* ps per microsecond */

static void stat_meta(pbw *plane) {
    for (uint64_t id = 1; id < S_N; id++) pbw_stat_meta(plane, id, STAT_NAMES[id]);
}

static void shape(pbw *instr, const int64_t *dims, size_t n) {
    pbw s = {0}, d = {0};
    pbw_uint(&s, 2, 11); /* F32 */
    for (size_t i = 0; i < n; i++) pbw_varint(&d, (uint64_t)dims[i]);
    pbw_msg(&s, 3, &d);
    pbw_msg(instr, 3, &s);
}

static void instr(pbw *comp, const char *name, const char *opcode, int64_t id, int64_t operand, pbw *groups) {
    static const int64_t dims[] = {8, 16}; /* 512 bytes */
    pbw in = {0}, ops = {0};
    pbw_str(&in, 1, name);
    pbw_str(&in, 2, opcode);
    shape(&in, dims, 2);
    pbw_uint(&in, 35, (uint64_t)id);
    if (operand) pbw_varint(&ops, (uint64_t)operand), pbw_msg(&in, 36, &ops);
    if (groups) pbw_msg(&in, 87, groups);
    pbw_msg(comp, 2, &in);
}

/* /host:metadata: jit_step (program 7): p, all-reduce-start.1 (iota groups of 4), its done, add.1. */
static void metadata_plane(pbw *space) {
    pbw comp = {0}, module = {0}, proto = {0}, iota = {0}, list = {0}, plane = {0}, st = {0}, stb = {0};
    pbw_str(&comp, 1, "main");
    instr(&comp, "p", "parameter", 1, 0, NULL);
    pbw_uint(&iota, 1, 1);
    pbw_uint(&iota, 2, 4);
    pbw_msg(&list, 2, &iota);
    instr(&comp, "all-reduce-start.1", "all-reduce-start", 2, 1, &list);
    instr(&comp, "all-reduce-done.1", "all-reduce-done", 3, 2, NULL);
    instr(&comp, "add.1", "add", 4, 1, NULL);
    pbw_uint(&comp, 5, 1);
    pbw_str(&module, 1, "jit_step");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&proto, 1, &module);
    pbw_uint(&stb, 1, S_HLO_PROTO);
    pbw_bytes(&stb, 6, proto.buf, proto.len);
    free(proto.buf);
    pbw_msg(&st, 5, &stb);
    pbw_uint(&stb, 1, S_PROGRAM);
    pbw_uint(&stb, 4, 7);
    pbw_msg(&st, 5, &stb);
    pbw_event_meta(&plane, 1, "jit_step", &st);
    stat_meta(&plane);
    pbw_str(&plane, 2, "/host:metadata");
    pbw_msg(space, 1, &plane);
}

static void event(pbw *line, uint64_t meta, int64_t start_us, int64_t dur_us) {
    pbw ev = {0};
    pbw_uint(&ev, 1, meta);
    pbw_uint(&ev, 2, (uint64_t)(start_us * US));
    pbw_uint(&ev, 3, (uint64_t)(dur_us * US));
    pbw_msg(line, 4, &ev);
}

/* Arrival (start) of chip d in instance k, in us after the instance's base (k x 100 us). */
static int64_t arrival(int d, int k) { return k == 0 ? (d == 3 ? 30 : d) : d; }

/* Chip d: per instance, start (1 us), add.1 (4 us, 2 us after the start), done ending at 42 us. */
static void chip(pbw *space, int d) {
    pbw plane = {0}, ops = {0}, st = {0};
    for (int k = 0; k < 2; k++) {
        int64_t base = 100 * k, s = base + arrival(d, k);
        event(&ops, 1, s, 1);
        event(&ops, 3, s + 2, 4);
        event(&ops, 2, base + 40, 2);
    }
    pbw_uint(&ops, 1, 1);
    pbw_str(&ops, 2, "XLA Ops");
    pbw_uint(&ops, 3, 1000); /* line timestamp, ns */
    pbw_msg(&plane, 3, &ops);
    const char *names[] = {"all-reduce-start.1", "all-reduce-done.1", "add.1"};
    for (int i = 0; i < 3; i++) {
        pbw one = {0}, val = {0};
        pbw_uint(&val, 1, S_HLO_MODULE);
        pbw_str(&val, 5, "jit_step");
        pbw_msg(&one, 5, &val);
        st = one;
        pbw_event_meta(&plane, (uint64_t)i + 1, names[i], &st);
    }
    stat_meta(&plane);
    char name[32];
    snprintf(name, sizeof name, "/device:TPU:%d", d);
    pbw_uint(&plane, 1, 2 + (uint64_t)d);
    pbw_str(&plane, 2, name);
    pbw_msg(space, 1, &plane);
}

static jp_profile *load(void) {
    pbw space = {0};
    metadata_plane(&space);
    for (int d = 0; d < 4; d++) chip(&space, d);
    jp_profile *p = NULL;
    jp_error err;
    int rc = jp_profile_parse(&p, space.buf, space.len, "comm.xplane.pb", NULL, &err);
    free(space.buf);
    if (rc != JP_OK) fail_msg("parse: %s", err.msg);
    return p;
}

/* Two instances on 4 chips; each chip's instance spans its start to the common done end (42 us),
 * 4 us of it under add.1. Chip 3 starts 30 us late in the first: its exposed time is 30 us less
 * than chip 0's, it arrives last twice, and is the one robust straggler (z = 0.6745 x 28.5 / 1). */
static void async_pairs_wait_and_straggler(void **state) {
    (void)state;
    jp_profile *p = load();
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_comms, 1);
    const jp_comm_stat *c = &a->comms[0];
    assert_string_equal(c->name, "all-reduce-start.1");
    assert_string_equal(c->type, "all-reduce");
    assert_int_equal(c->n_devices, 4);
    assert_int_equal(c->count, 8);
    int64_t total = 0;
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < 4; d++) total += (42 - arrival(d, k)) * US;
    assert_int_equal(c->total_ps, total); /* 297 us */
    assert_int_equal(c->hidden_ps, 8 * 4 * US);
    assert_int_equal(c->exposed_ps, total - 32 * US);
    assert_true(c->bytes == 512 && c->group_size == 4);
    double algbw = 512.0 * 8 / ((double)total / 1e12);
    assert_true(c->algbw > algbw * (1 - 1e-12) && c->algbw < algbw * (1 + 1e-12));
    assert_true(c->busbw > 1.5 * algbw * (1 - 1e-12) && c->busbw < 1.5 * algbw * (1 + 1e-12)); /* 2(n-1)/n */
    assert_int_equal(c->wait_ps, (30 + 3) * US); /* exposed 38,37,36,8 then 38,37,36,35 */
    assert_int_equal(c->wait_max_ps, 30 * US);
    assert_string_equal(c->last_device, "/device:TPU:3");
    assert_int_equal(c->n_late, 2);
    assert_int_equal(c->n_straggler, 1);
    assert_string_equal(c->straggler, "/device:TPU:3");
    for (size_t i = 0; i < a->n_devices; i++) { /* per chip: the union of its two instances */
        const jp_device *dv = &a->devices[i];
        int d = dv->name[strlen(dv->name) - 1] - '0';
        assert_int_equal(dv->comm_ps, (42 - arrival(d, 0) + 42 - arrival(d, 1)) * US);
        assert_int_equal(dv->comm_hidden_ps, 8 * US);
        static const int64_t wait_us[] = {30 + 3, 29 + 2, 28 + 1, 0}; /* exposed minus the instance's least */
        assert_int_equal(dv->comm_wait_ps, wait_us[d] * US);
    }
    assert_int_equal(a->comm_hidden_ps, 32 * US);
    /* the two instances, by start: the late chip 3 and its z-score, then a spread of 3 us */
    assert_int_equal(a->n_comm_instances, 2);
    const jp_comm_instance *i0 = &a->comm_instances[0], *i1 = &a->comm_instances[1];
    assert_true(i0->index == 0 && i1->index == 1 && i0->n_devices == 4 && i1->n_devices == 4);
    assert_string_equal(i0->name, "all-reduce-start.1");
    assert_string_equal(i0->type, "all-reduce");
    assert_int_equal(i1->start_ps - i0->start_ps, 100 * US);
    assert_int_equal(i0->last_start_ps - i0->start_ps, 30 * US);
    assert_int_equal(i0->exposed_min_ps, 8 * US);
    assert_int_equal(i0->exposed_max_ps, 38 * US);
    assert_int_equal(i0->wait_ps, 30 * US);
    assert_int_equal(i1->wait_ps, 3 * US);
    assert_string_equal(i0->last_device, "/device:TPU:3");
    assert_string_equal(i1->last_device, "/device:TPU:3");
    /* starts 0, 1, 2, 30: median 1.5, MAD 1; then 0..3: median 1.5, MAD 1, no outlier */
    assert_true(i0->z_max > 0.6745 * 28.5 - 1e-9 && i0->z_max < 0.6745 * 28.5 + 1e-9);
    assert_int_equal(i0->n_straggler, 1);
    assert_string_equal(i0->straggler, "/device:TPU:3");
    assert_true(i1->z_max > 0.6745 * 1.5 - 1e-9 && i1->z_max < 0.6745 * 1.5 + 1e-9);
    assert_int_equal(i1->n_straggler, 0);
    assert_string_equal(i1->straggler, "");
    jp_profile_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(async_pairs_wait_and_straggler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
