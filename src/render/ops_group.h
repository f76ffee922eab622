/* ops_group.h - the ops table summed by one of its fields, a view of the ops (internal). */
#ifndef JP_RENDER_OPS_GROUP_H
#define JP_RENDER_OPS_GROUP_H

#include "jaxprof/jaxprof_results.h"

/* Sums the ops a->ops[pick[0..n)] by `by` ("category", "module", "scope" or "source") into *rows
 * (heap, *n_rows, free it; by key, "(none)" for an empty key): each row's name and that field are
 * the key, the other names ""; counts, times, FLOPs and bytes summed, min and max kept, devices the
 * most any op ran on; no roof. JP_ERR_ARG naming the choices for another `by`, JP_ERR_NOMEM. */
int jp_ops_group(const jp_analysis *a, const size_t *pick, size_t n, const char *by, jp_op_stat **rows,
                 size_t *n_rows, jp_error *err);

#endif
