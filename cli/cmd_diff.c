/* cmd_diff.c - jaxprof diff BASE NEW: being written. */
#include <stdio.h>

#include "commands.h"

int cmd_diff(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "jaxprof: diff is not built yet\n");
    return EXIT_USAGE;
}
