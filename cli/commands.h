/* commands.h - the jaxprof subcommands that live outside main.c, each a thin client of libjaxprof.
 * Every command takes argv as main's argv + 1 (argv[0] is the command name) and returns the exit
 * code: 0 ok, 1 "nothing found" or a failed gate, 2 bad input or options. */
#ifndef JP_CLI_COMMANDS_H
#define JP_CLI_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jaxprof/jaxprof.h"

enum { EXIT_USAGE = 2 };

/* Where every command looks for runs, and `jaxprof run`/`demo`/`capture` write them, by default. */
#define CLI_DEFAULT_DIR "profiles"

struct cli_command;
/* The commands' option tables (options.h), each beside its command. */
extern const struct cli_command CLI_EXPORT, CLI_LIST, CLI_EXTRACT, CLI_VIEW, CLI_DIFF, CLI_LATEST, CLI_SQL, CLI_SUMMARIZE;

int cmd_export(int argc, char **argv);  /* cmd_export.c */
int cmd_list(int argc, char **argv);    /* cmd_runs.c */
int cmd_extract(int argc, char **argv); /* cmd_runs.c */
int cmd_view(int argc, char **argv);    /* cmd_view.c */
int cmd_diff(int argc, char **argv);    /* cmd_diff.c */
int cmd_sql(int argc, char **argv);     /* cmd_sql.c */
int cmd_summarize(int argc, char **argv); /* cmd_summarize.c */

/* Parses a non-negative decimal for option `flag`; prints the error and returns -1 when bad. */
int cli_parse_count(const char *flag, const char *value, size_t *out);
/* --threads N (1 or 2) into *out; prints the error and returns -1 when bad. */
int cli_parse_threads(const char *flag, const char *value, int *out);
/* JAXPROF_THREADS as a jp_load_options.threads value: 1 to JP_LOAD_THREADS_MAX, or 0 (the library decides). */
int cli_env_threads(void);
/* --max-inflate or JAXPROF_MAX_INFLATE as a jp_load_options.max_inflate value (0: the defaults). */
uint64_t cli_max_inflate(void);
/* The CPU calibration file `jaxprof calibrate` writes, into buf; NULL when no home is known. */
const char *cli_cpu_peaks_file(char *buf, size_t cap);
/* "812 B", "87.3 KiB", "1.2 MiB", ... (powers of 1024, as every jaxprof output writes sizes). */
void cli_human_size(char *buf, size_t cap, uint64_t bytes);
/* "jaxprof: MSG" and a newline on stderr, MSG's control characters neutralised (jp_text_fput_safe):
 * messages name files and ops, whose names are anyone's bytes. */
void cli_error(const char *msg);
/* msg with the library's neutral option names ("columns", "max_inflate", ...) put as this CLI's
 * flags ("--columns", "--max-inflate SIZE or JAXPROF_MAX_INFLATE"), into buf (cap bytes, cut short
 * when longer); returns buf (msg when cap is 0). cli/messages.c. */
const char *cli_flag_words(const char *msg, char *buf, size_t cap);
/* A name from disk (a run, a file) on stdout and a newline: as is for a script, neutralised when
 * stdout is a terminal (as ls does). */
void cli_put_name(const char *name);
/* The text width when --width is not given: the terminal's, else 100. */
int cli_text_width(void);
/* A progress line on stderr for files of 64 MiB or more (use as jp_load_options.on_file on a tty). */
void cli_show_progress(void *ctx, const char *file, uint64_t bytes);

/* For a command about to write an output file (cleanup.c): from now on SIGINT, SIGTERM and SIGHUP
 * (unless ignored) remove the temporary file the returned hook is told of, then end the process
 * by that signal. Pass the hook to the library's writer. */
jp_temp_hook cli_cleanup_on_signal(void);

/* Runs work(argc, argv) in a forked child (isolate.c) and returns its exit code; a child killed by a
 * crash signal (SEGV, ABRT, ...) is exit 2 with "internal error" on stderr, one killed by HUP, INT,
 * QUIT, TERM or PIPE ends this process by the same signal (forwarded to the child meanwhile). */
int cli_isolated(int (*work)(int, char **), int argc, char **argv);

/* Prints CMD's usage and options (help.c); -1 when CMD is not one of the C commands. */
int cli_help(const char *cmd, FILE *out);
/* A section command's own options after "NAME [PATH]" in its synopsis, into buf: "[--html FILE]"
 * or "" (main.c, from the options that only some sections take). */
void cli_section_synopsis(int section, char *buf, size_t cap);
/* 1 when Python runs cmd (demo, capture, calibrate, run). */
int cli_is_python_command(const char *cmd);
/* A section command's --help (main.c: its options are the analysis options). */
void cli_section_help(int section, FILE *out);
/* `jaxprof help`: every command, from the same tables. */
void cli_usage(FILE *out);
/* 1 when an argument is --help or -h. */
int cli_wants_help(int argc, char **argv);

#endif
