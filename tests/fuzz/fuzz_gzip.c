/* fuzz_gzip.c - fuzz target for the gzip reader: the XSpace decoder on gzip input (the inflate
 * loop, its truncation and size checks, then the decoder on what came out). */
#include <stddef.h>
#include <stdint.h>

#include "jaxprof/jaxprof_xspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) return 0; /* only gzip: xspace has the rest */
    jp_xspace *xs;
    jp_error err;
    if (jp_xspace_parse(&xs, data, size, "fuzz.gz", &err) != JP_OK) return 0;
    jp_bytes in = jp_xspace_input(xs);
    if (in.len != jp_xspace_input_size(xs)) __builtin_trap();
    (void)jp_xspace_event_count(xs);
    jp_xspace_close(xs);
    return 0;
}
