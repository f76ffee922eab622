/* messages.c - the library's messages in the CLI's words: the library names the options a message
 * is about as its callers set them (jp_view.columns: "columns", jp_load_options.max_inflate:
 * "max_inflate"), which is what Python and viewer users see; the CLI prints its flags instead. */
#include <string.h>

#include "commands.h"

/* One neutral phrase of the library's and the CLI's words for it. */
typedef struct wording {
    const char *lib;  /* as the library writes it */
    const char *cli;  /* as the CLI prints it */
    int at_start;     /* 1: only where the message begins with it (the option names the message) */
} wording;

static const wording WORDS[] = {
    {"columns: ", "--columns: ", 1},
    {"columns picks ", "--columns picks ", 1},
    {"sort: ", "--sort: ", 1},
    {"sort ", "--sort ", 1},
    {"module ", "--module ", 1},
    {"group '", "--group '", 1},
    {"group: ", "--group: ", 1},
    {"table '", "--table '", 1},
    {"CSV needs a table section (ops, steps, ...)", "--csv needs a table command (ops, steps, ...)", 1},
    {"bad filter regex '", "bad --filter regex '", 0},
    {"bad library_frames regex '", "bad --library-frames regex '", 0},
    {"raise the max_inflate limit", "raise it with --max-inflate SIZE or JAXPROF_MAX_INFLATE", 0},
    {"(the limit: max_inflate)", "(the limit: JAXPROF_MAX_INFLATE)", 0},
    {"extract with the force option)", "extract with --force)", 0},
};

/* The wording that msg + at begins with, or NULL. */
static const wording *wording_at(const char *msg, size_t at) {
    for (size_t i = 0; i < sizeof WORDS / sizeof WORDS[0]; i++)
        if ((at == 0 || !WORDS[i].at_start) && strncmp(msg + at, WORDS[i].lib, strlen(WORDS[i].lib)) == 0)
            return &WORDS[i];
    return NULL;
}

const char *cli_flag_words(const char *msg, char *buf, size_t cap) {
    if (cap == 0) return msg;
    size_t len = 0, at = 0;
    while (msg[at] && len + 1 < cap) {
        const wording *w = wording_at(msg, at);
        const char *from = w ? w->cli : msg + at;
        size_t n = w ? strlen(w->cli) : 1;
        if (n > cap - 1 - len) n = cap - 1 - len; /* cut short rather than overflow */
        memcpy(buf + len, from, n);
        len += n;
        at += w ? strlen(w->lib) : 1;
    }
    buf[len] = '\0';
    return buf;
}
