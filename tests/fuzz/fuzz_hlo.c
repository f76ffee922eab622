/* fuzz_hlo.c - fuzz target for the HloProto decoder (jp_hlo_decode), fed the bytes directly. */
#include <stddef.h>
#include <stdint.h>

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
    }
    jp_intern_deinit(&intern);
    jp_arena_deinit(&arena);
    return 0;
}
