/* fuzz_hlo.c - fuzz target for the HloProto decoder (jp_hlo_decode), fed the bytes directly, and
 * for the memory-at-the-peak walk over its buffer assignment (jp_buffers_module). */
#include <stddef.h>
#include <stdint.h>

#include "analyses/analyses.h"
#include "base/vec.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jp_arena arena;
    jp_intern intern;
    jp_hlo_module m;
    jp_error err;
    jp_arena_init(&arena, 0);
    jp_intern_init(&intern, &arena);
    jp_bytes proto = {data, size};
    if (jp_hlo_decode(proto, data, NULL, &intern, &arena, &m, &err) == JP_OK) {
        for (size_t i = 0; i < m.n_instrs; i++)
            if (jp_hlo_find(&m, m.instrs[i].name) == NULL) __builtin_trap(); /* every instruction is found */
        (void)jp_hlo_find(&m, jp_intern_str(&intern, "fusion", 6));
        jp_module_memory mm;
        if (m.memory && jp_buffers_module(m.memory, &arena, &mm) == JP_OK) {
            if (mm.peak_bytes < mm.always_live_bytes) __builtin_trap(); /* the peak holds the always-live part */
            for (size_t i = 0; i < mm.n_timeline; i++)
                if (mm.timeline[i] > mm.peak_bytes || mm.timeline[i] < 0) __builtin_trap(); /* the peak is the max */
            for (size_t i = 1; i < mm.n_buffers; i++) /* largest first, the small row last */
                if (mm.buffers[i].kind != JP_BUFFER_SMALL && mm.buffers[i].bytes > mm.buffers[i - 1].bytes) __builtin_trap();
        }
    }
    jp_intern_deinit(&intern);
    jp_arena_deinit(&arena);
    return 0;
}
