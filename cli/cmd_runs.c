/* cmd_runs.c - `jaxprof list` and `jaxprof extract` (being written). */
#include <stdio.h>
#include <stdint.h>

#include "commands.h"

int cmd_list(int argc, char **argv) { (void)argc; (void)argv; fputs("jaxprof: list: not built yet\n", stderr); return EXIT_USAGE; }
int cmd_extract(int argc, char **argv) { (void)argc; (void)argv; fputs("jaxprof: extract: not built yet\n", stderr); return EXIT_USAGE; }
