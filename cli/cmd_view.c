/* cmd_view.c - `jaxprof view` (being written). */
#include <stdio.h>
#include <stdint.h>

#include "commands.h"

int cmd_view(int argc, char **argv) { (void)argc; (void)argv; fputs("jaxprof: view: not built yet\n", stderr); return EXIT_USAGE; }
