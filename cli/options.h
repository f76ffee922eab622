/* options.h - the CLI's one option parser: each command declares its options once, in a table of
 * cli_opt, and that table both parses argv and prints the command's --help. */
#ifndef JP_CLI_OPTIONS_H
#define JP_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli_opt cli_opt;

/* Stores value (NULL for a flag) into the command's argument struct args, as opt says; 0, or -1
 * after printing why on stderr. flag is the spelling the user typed. */
typedef int (*cli_set_fn)(const cli_opt *opt, const char *flag, const char *value, void *args);

struct cli_opt {
    const char *name;    /* the long spelling: "--output" */
    const char *alias;   /* a short spelling ("-o"), or NULL */
    const char *old;     /* a deprecated spelling, accepted with a warning for one release, or NULL */
    const char *metavar; /* its value's name ("FILE"), or NULL: a flag without a value */
    cli_set_fn set;      /* stores the value */
    size_t off;          /* offsetof the field set writes in the command's argument struct */
    int64_t aux;         /* set's parameter: the flag's value, the unit of a bare number, a bound */
    int only_section;    /* jp_section this option is for, or -1: every command that lists it */
    unsigned only_flags; /* or: the jp_section_flag a section needs to take it; 0: any */
    const char *help;    /* its help, lines after the first indented by 21; NULL: not listed */
};

/* One command: its synopsis, help and options (the tables end with an entry whose name is NULL). */
typedef struct cli_command {
    const char *name;
    const char *args;         /* the positionals in its synopsis: "[PATH]", "BASE NEW" */
    const char *synopsis;     /* what follows in jaxprof help's list: "[-o FILE] [--format ...]", or "" */
    const char *summary;      /* jaxprof help's lines about it (each line ends with \n) */
    const char *text;         /* --help: what it does */
    const cli_opt *opts;      /* its own options */
    const cli_opt *shared;    /* options shared with other commands, listed after its own, or NULL */
    const char *shared_head;  /* a paragraph before the shared options, or NULL */
    size_t pos_off, max_pos;  /* positionals go to the const char *[max_pos] at pos_off */
    size_t min_pos;           /* fewer is an error */
} cli_command;

/* Parses argv[1..] (argv[0] is the command's name) into args by cmd's tables. section: the
 * jp_section this command is (options restricted to other sections are refused), or -1. Returns
 * the number of positionals, or -1 after saying why on stderr. */
int cli_parse(const cli_command *cmd, int section, int argc, char **argv, void *args);
/* cmd's --help from its tables. section: as for cli_parse (options for other sections are left out). */
void cli_print_help(const cli_command *cmd, int section, FILE *out);
/* "  NAME ARGS SYNOPSIS" and its summary, as jaxprof help lists commands. */
void cli_print_summary(const char *name, const char *args, const char *synopsis, const char *summary, FILE *out);

/* Setters for cli_opt.set. */
int cli_set_flag(const cli_opt *o, const char *flag, const char *v, void *args);     /* int = aux */
int cli_set_string(const cli_opt *o, const char *flag, const char *v, void *args);   /* const char *; aux 1: non-empty */
int cli_set_count(const cli_opt *o, const char *flag, const char *v, void *args);    /* size_t, at most aux (0: any) */
int cli_set_bounded(const cli_opt *o, const char *flag, const char *v, void *args);  /* size_t from 1 to aux */
int cli_set_width(const cli_opt *o, const char *flag, const char *v, void *args);    /* int, capped at 400 */
int cli_set_threads(const cli_opt *o, const char *flag, const char *v, void *args);  /* int 1 or 2 */
int cli_set_positive(const cli_opt *o, const char *flag, const char *v, void *args); /* double > 0, at most 1e9 */
int cli_set_percent(const cli_opt *o, const char *flag, const char *v, void *args);  /* double >= 0 */
int cli_set_duration(const cli_opt *o, const char *flag, const char *v, void *args); /* int64_t ps; bare: aux ps */

enum { PS_PER_US = 1000000, PS_PER_MS = 1000000000 };
#define PS_PER_S INT64_C(1000000000000)

#endif
