/* fuzz_profile.c - fuzz target for the whole load path: decode, model (HLO metadata included),
 * every analysis, then every section rendered as text and JSON. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jaxprof/jaxprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w"))) return 0;
    jp_profile *p;
    jp_error err;
    jp_load_options opt = {.op_spread = 1}; /* every analysis, the diff's spread too */
    if (jp_profile_parse(&p, data, size, "fuzz", &opt, &err) != JP_OK) return 0;
    const jp_analysis *a = jp_profile_analysis(p);
    jp_view view = {0};
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        (void)jp_render(a, s, JP_FORMAT_TEXT, &view, sink, &err);
        (void)jp_render(a, s, JP_FORMAT_JSON, &view, sink, &err);
    }
    jp_profile_free(p);
    return 0;
}
