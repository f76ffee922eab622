/* cmd_export.c - `jaxprof export` (being written). */
#include <stdio.h>
#include <stdint.h>

#include "commands.h"

int cmd_export(int argc, char **argv) { (void)argc; (void)argv; fputs("jaxprof: export: not built yet\n", stderr); return EXIT_USAGE; }
