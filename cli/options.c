/* options.c - the CLI's one option parser (options.h): argv against a command's cli_opt tables,
 * the same tables printed as its --help, and the setters every command's tables use. */
#include "options.h"
#include "commands.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(args, o, type) ((type *)((char *)(args) + (o)->off))

/* ---- lookup ------------------------------------------------------------------------------------ */

static const cli_opt *find_in(const cli_opt *t, const char *arg, int *is_old) {
    for (; t && t->name; t++) {
        if (strcmp(arg, t->name) == 0 || (t->alias && strcmp(arg, t->alias) == 0)) return *is_old = 0, t;
        if (t->old && strcmp(arg, t->old) == 0) return *is_old = 1, t;
    }
    return NULL;
}

static const cli_opt *find_opt(const cli_command *cmd, const char *arg, int *is_old) {
    const cli_opt *o = find_in(cmd->opts, arg, is_old);
    return o ? o : find_in(cmd->shared, arg, is_old);
}

/* 1 when section may take o. */
static int option_fits(const cli_opt *o, int section) {
    if (o->only_section >= 0) return section == o->only_section;
    if (o->only_flags) return section >= 0 && (jp_section_get(section)->flags & o->only_flags) == o->only_flags;
    return 1;
}

/* "--module goes only with memory": the sections that take o. */
static void say_misplaced(const cli_opt *o, const char *flag) {
    fprintf(stderr, "jaxprof: %s goes only with", flag);
    for (int s = 0, n = 0; s < JP_SECTION_COUNT; s++)
        if (option_fits(o, s)) fprintf(stderr, "%s %s", n++ ? "," : "", jp_section_name(s));
    fputc('\n', stderr);
}

/* ---- parsing ----------------------------------------------------------------------------------- */

int cli_parse(const cli_command *cmd, int section, int argc, char **argv, void *args) {
    const char **pos = (const char **)((char *)args + cmd->pos_off);
    size_t n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == '\0') { /* a positional ("-" too: stdin/stdout names) */
            if (n_pos == cmd->max_pos) {
                fprintf(stderr, "jaxprof: %s takes %s; '%s' is one too many (see jaxprof %s --help)\n", cmd->name,
                        cmd->args, arg, cmd->name);
                return -1;
            }
            pos[n_pos++] = arg;
            continue;
        }
        int is_old = 0;
        const cli_opt *o = find_opt(cmd, arg, &is_old);
        if (!o) {
            fprintf(stderr, "jaxprof: bad option '%s' (see jaxprof %s --help)\n", arg, cmd->name);
            return -1;
        }
        if (!option_fits(o, section)) return say_misplaced(o, arg), -1;
        if (is_old)
            fprintf(stderr, "jaxprof: %s %s is deprecated and will be removed: use %s\n", cmd->name, arg, o->name);
        const char *value = NULL;
        if (o->metavar) {
            if (i + 1 >= argc) {
                fprintf(stderr, "jaxprof: %s needs a value (%s %s)\n", arg, arg, o->metavar);
                return -1;
            }
            value = argv[++i];
        }
        if (o->set(o, arg, value, args) != 0) return -1;
    }
    if (n_pos < cmd->min_pos) {
        fprintf(stderr, "jaxprof: usage: jaxprof %s %s [options] (see jaxprof %s --help)\n", cmd->name, cmd->args,
                cmd->name);
        return -1;
    }
    return (int)n_pos;
}

/* ---- help -------------------------------------------------------------------------------------- */

enum { HELP_COL = 21 }; /* where option and command descriptions start */

/* text's lines, the first after `used` columns of something else, the rest indented to HELP_COL. */
static void put_indented(const char *text, int used, FILE *out) {
    if (used >= HELP_COL - 1) fprintf(out, "\n%*s", HELP_COL, "");
    else fprintf(out, "%*s", HELP_COL - used, "");
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(out, "%.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
        if (*p) fprintf(out, "%*s", HELP_COL, "");
    }
}

static void print_options(const cli_opt *t, int section, FILE *out) {
    for (; t && t->name; t++) {
        if (!t->help || !option_fits(t, section)) continue;
        char head[96];
        int n = snprintf(head, sizeof head, "  %s%s%s%s%s", t->alias ? t->alias : "", t->alias ? ", " : "", t->name,
                         t->metavar ? " " : "", t->metavar ? t->metavar : "");
        fputs(head, out);
        put_indented(t->help, n, out);
    }
}

void cli_print_help(const cli_command *cmd, int section, FILE *out) {
    fprintf(out, "usage: jaxprof %s%s%s [options]\n\n%s", cmd->name, *cmd->args ? " " : "", cmd->args, cmd->text);
    if (cmd->shared_head) fprintf(out, "\n%s", cmd->shared_head);
    fputs("\noptions:\n", out);
    print_options(cmd->opts, section, out);
    print_options(cmd->shared, section, out);
    fputs("  -h, --help         this help\n", out);
}

void cli_print_summary(const char *name, const char *args, const char *synopsis, const char *summary, FILE *out) {
    int n = fprintf(out, "  %s%s%s%s", name, *args ? " " : "", args, *synopsis ? " " : "");
    int indent = 3 + (int)strlen(name); /* continuation lines of the synopsis line up under it */
    for (const char *p = synopsis; *p;) {
        size_t k = strcspn(p, "\n");
        n = (p == synopsis ? n : indent) + fprintf(out, "%.*s", (int)k, p);
        p += k;
        if (*p == '\n' && *++p) fprintf(out, "\n%*s", indent, "");
    }
    put_indented(summary, n, out);
}

/* ---- setters ----------------------------------------------------------------------------------- */

int cli_set_flag(const cli_opt *o, const char *flag, const char *v, void *args) {
    (void)flag, (void)v;
    *FIELD(args, o, int) = (int)o->aux;
    return 0;
}

int cli_set_string(const cli_opt *o, const char *flag, const char *v, void *args) {
    if (o->aux && !*v) {
        fprintf(stderr, "jaxprof: %s needs a non-empty %s\n", flag, o->metavar);
        return -1;
    }
    *FIELD(args, o, const char *) = v;
    return 0;
}

int cli_set_count(const cli_opt *o, const char *flag, const char *v, void *args) {
    size_t n;
    if (cli_parse_count(flag, v, &n) != 0) return -1;
    if (o->aux && n > (size_t)o->aux) {
        fprintf(stderr, "jaxprof: %s needs a number from 0 to %lld\n", flag, (long long)o->aux);
        return -1;
    }
    *FIELD(args, o, size_t) = n;
    return 0;
}

int cli_set_bounded(const cli_opt *o, const char *flag, const char *v, void *args) {
    size_t n;
    if (cli_parse_count(flag, v, &n) != 0) return -1;
    if (n < 1 || n > (size_t)o->aux) {
        fprintf(stderr, "jaxprof: %s needs a number from 1 to %lld\n", flag, (long long)o->aux);
        return -1;
    }
    *FIELD(args, o, size_t) = n;
    return 0;
}

int cli_set_width(const cli_opt *o, const char *flag, const char *v, void *args) {
    size_t n;
    if (cli_parse_count(flag, v, &n) != 0) return -1;
    *FIELD(args, o, int) = (int)(n > 400 ? 400 : n);
    return 0;
}

int cli_set_threads(const cli_opt *o, const char *flag, const char *v, void *args) {
    return cli_parse_threads(flag, v, FIELD(args, o, int));
}

int cli_set_positive(const cli_opt *o, const char *flag, const char *v, void *args) {
    char *end;
    double d = *v ? strtod(v, &end) : 0;
    if (!*v || *end || !(d > 0) || d > 1e9) {
        fprintf(stderr, "jaxprof: %s needs a positive number\n", flag);
        return -1;
    }
    *FIELD(args, o, double) = d;
    return 0;
}

int cli_set_percent(const cli_opt *o, const char *flag, const char *v, void *args) {
    char *end;
    errno = 0;
    double d = *v ? strtod(v, &end) : -1;
    if (!*v || *end || errno || !isfinite(d) || d < 0) {
        fprintf(stderr, "jaxprof: %s needs a non-negative percentage\n", flag);
        return -1;
    }
    *FIELD(args, o, double) = d;
    return 0;
}

int cli_set_duration(const cli_opt *o, const char *flag, const char *v, void *args) {
    if (jp_duration_parse(v, o->aux, FIELD(args, o, int64_t)) == 0) return 0;
    fprintf(stderr, "jaxprof: %s needs a duration: a number with a unit (500us, 10ms, 2s, 1min) or without one (%s)\n",
            flag, o->aux == PS_PER_S ? "seconds" : o->aux == PS_PER_MS ? "milliseconds" : "microseconds");
    return -1;
}
