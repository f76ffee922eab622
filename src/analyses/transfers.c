/* transfers.c - host-to-device, device-to-host and device-to-device copies: count, bytes, time. */
#include "analyses/analyses.h"

int jp_transfers_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    static const char *const kinds[JP_XFER_COUNT] = {"H2D", "D2H", "D2D"};
    (void)arena;
    for (int k = 0; k < JP_XFER_COUNT; k++) a->transfers[k] = (jp_transfer_stat){kinds[k], 0, 0, 0, 0};
    for (size_t i = 0; i < m->xfers.n; i++) {
        const jp_xfer_ev *x = &JP_VEC_AT(&m->xfers, jp_xfer_ev, i);
        jp_transfer_stat *t = &a->transfers[x->kind];
        int64_t d = x->end_ps - x->start_ps;
        t->count++;
        t->bytes += x->bytes;
        t->total_ps += d;
        if (d > t->max_ps) t->max_ps = d;
    }
    return JP_OK;
}
