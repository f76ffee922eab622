/* runs.h - the one listing of a run directory's files, shared by run listing (jp_runs_find,
 * jp_run_summarize) and profile loading (jp_profile_files) (internal). */
#ifndef JP_FIND_RUNS_H
#define JP_FIND_RUNS_H

#include <sys/stat.h>

#include "jaxprof/jaxprof.h"

/* Called for one regular file of a directory: its name and what lstat saw. Non-zero stops the
 * listing and is returned. */
typedef int (*jp_run_dir_fn)(void *ctx, const char *name, const struct stat *st);

/* Calls each(ctx, name, st) for every regular file directly inside dir, in directory order. Links
 * are never followed (a link could pull in a file from outside the log directory), so they, like
 * subdirectories, are skipped. JP_ERR_IO "<dir>: cannot open directory" when dir cannot be read. */
int jp_run_dir_each(const char *dir, jp_run_dir_fn each, void *ctx, jp_error *err);

#endif
