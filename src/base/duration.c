/* duration.c - jp_duration_parse: the one spelling of a duration every jaxprof option takes
 * ("500us", "10ms", "2s"), shared by the CLI and the Python package. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jaxprof/jaxprof.h"

/* The units a duration may name, in picoseconds. */
static const struct {
    const char *suffix;
    double ps;
} UNITS[] = {{"ns", 1e3}, {"us", 1e6}, {"\xc2\xb5s", 1e6}, {"ms", 1e9}, {"s", 1e12}, {"min", 60e12}};

/* The digits and one optional '.' at the start of text: how many bytes, 0 when none. */
static size_t number_len(const char *text) {
    size_t n = strspn(text, "0123456789");
    if (text[n] == '.') n += 1 + strspn(text + n + 1, "0123456789");
    return n == 1 && text[0] == '.' ? 0 : n;
}

int jp_duration_parse(const char *text, int64_t bare_ps, int64_t *ps) {
    size_t n = text ? number_len(text) : 0;
    if (n == 0 || n > 32 || bare_ps <= 0) return -1;
    char num[33];
    memcpy(num, text, n);
    num[n] = '\0';
    double unit = (double)bare_ps;
    if (text[n]) {
        size_t k = 0;
        while (k < sizeof UNITS / sizeof UNITS[0] && strcmp(text + n, UNITS[k].suffix) != 0) k++;
        if (k == sizeof UNITS / sizeof UNITS[0]) return -1;
        unit = UNITS[k].ps;
    }
    errno = 0;
    double d = strtod(num, NULL) * unit;
    if (errno || !isfinite(d) || d > 9e18) return -1;
    *ps = (int64_t)llround(d);
    return 0;
}
