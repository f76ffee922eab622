/* http_parse.c - the HTTP request head parser: request line, header fields, percent-decoded path,
 * the Host guard and token mode, all in the caller's buffer and without sockets (see http_parse.h). */
#include "serve/http_parse.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef jp_http_exchange exchange;

int jp_http_is_tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Index just past the blank line ending the head ("\r\n\r\n" or "\n\n"), or 0 when not there yet. */
size_t jp_http_head_end(const char *buf, size_t len) {
    for (size_t i = 1; i < len; i++) {
        if (buf[i] != '\n') continue;
        if (buf[i - 1] == '\n') return i + 1;
        if (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n') return i + 1;
    }
    return 0;
}

/* Cuts the next line out of [*p, end): NUL-terminates it (dropping CR LF) and advances *p. A CR
 * anywhere but before the LF makes the line invalid: returns NULL. So does a NUL byte: the line
 * would be read as cut there, and a field such as "Host: 127.0.0.1:8791<NUL>evil" would pass as
 * the part before it. */
static char *next_line(char **p, char *end) {
    char *line = *p, *lf = memchr(line, '\n', (size_t)(end - line));
    if (!lf) return NULL;
    char *stop = lf > line && lf[-1] == '\r' ? lf - 1 : lf;
    size_t n = (size_t)(stop - line);
    int bad = memchr(line, '\r', n) || memchr(line, '\0', n);
    *stop = '\0';
    *lf = '\0';
    *p = lf + 1;
    return bad ? NULL : line;
}

/* Copies s into out (cap bytes) with anything unprintable as '?', for log lines. */
static void printable_copy(char *out, size_t cap, const char *s) {
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) out[i] = (s[i] > 0x20 && s[i] < 0x7f) ? s[i] : '?';
    out[i] = '\0';
}

/* "GET /path HTTP/1.1": fills method and target; returns 0, 400, 405 or 505. */
static int parse_request_line(char *line, exchange *ex, char **target) {
    char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 || strchr(sp2 + 1, ' ')) return 400;
    *sp1 = *sp2 = '\0';
    for (char *c = line; *c; c++)
        if (!jp_http_is_tchar((unsigned char)*c)) return 400;
    for (char *c = sp1 + 1; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f) return 400;
    printable_copy(ex->method, sizeof ex->method, line);
    printable_copy(ex->target, sizeof ex->target, sp1 + 1);
    const char *ver = sp2 + 1;
    if (strncmp(ver, "HTTP/", 5) != 0 || strlen(ver) != 8 || ver[6] != '.') return 400;
    if (ver[5] != '1' || (ver[7] != '0' && ver[7] != '1')) return 505;
    *target = sp1 + 1;
    if (strcmp(line, "GET") == 0) ex->req.method = JP_HTTP_GET;
    else if (strcmp(line, "HEAD") == 0) ex->req.method = JP_HTTP_HEAD;
    else if (strcmp(line, "OPTIONS") == 0) ex->req.method = JP_HTTP_OPTIONS;
    else return 405;
    return 0;
}

/* Splits "Name: value" in place; returns 0, 400 for a malformed field. */
static int parse_header(char *line, jp_http_header *h) {
    char *colon = strchr(line, ':');
    if (!colon || colon == line) return 400;
    for (char *c = line; c < colon; c++)
        if (!jp_http_is_tchar((unsigned char)*c)) return 400; /* also refuses obs-fold and "Name :" */
    *colon = '\0';
    char *v = colon + 1, *e = v + strlen(v);
    while (*v == ' ' || *v == '\t') v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t')) e--;
    *e = '\0';
    for (char *c = v; *c; c++)
        if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) return 400;
    h->name = line;
    h->value = v;
    return 0;
}

const char *jp_http_request_header(const jp_http_request *req, const char *name) {
    if (!req || !name) return NULL;
    for (size_t i = 0; i < req->n_headers; i++)
        if (strcasecmp(req->headers[i].name, name) == 0) return req->headers[i].value;
    return NULL;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes path in place. 400 for a bad escape, NUL, backslash or control byte; 403 for a
 * "." or ".." segment (checked after decoding, so "%2e%2e" and "%2F" are caught too). */
static int decode_path(char *path) {
    char *out = path;
    for (const char *in = path; *in; in++) {
        int c = (unsigned char)*in;
        if (c == '%') {
            int hi = hex_value(in[1]), lo = hi < 0 ? -1 : hex_value(in[2]);
            if (lo < 0) return 400;
            c = hi * 16 + lo;
            in += 2;
        }
        if (c == 0 || c == '\\' || c < 0x20 || c == 0x7f) return 400;
        *out++ = (char)c;
    }
    *out = '\0';
    for (const char *seg = path; seg; seg = strchr(seg + 1, '/')) {
        const char *s = seg + 1;
        size_t n = strcspn(s, "/");
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 403;
    }
    return 0;
}

/* Splits the target into path and query and checks the path; returns 0, 400 or 403. */
static int parse_target(char *target, jp_http_request *req) {
    if (target[0] != '/' || strchr(target, '#')) return 400;
    char *q = strchr(target, '?');
    req->query = "";
    if (q) {
        *q = '\0';
        req->query = q + 1;
    }
    req->path = target;
    return decode_path(target);
}

static int is_loopback_name(const char *name, size_t len) {
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0) return 1;
    return 0;
}

/* Accepts "name[:port]" when name is a loopback name or an allowed one and the port is the bound
 * one (no port: 80). A browser sends the name it resolved, so a DNS-rebinding page fails here. In
 * token mode any name is accepted: the machine is reached by names we cannot know, and a
 * rebinding page fails the token check instead. */
static int host_allowed(const jp_http_rules *rules, const char *host) {
    const char *colon = host[0] == '[' ? strchr(host, ']') : host;
    if (!colon) return 0;
    colon = strchr(colon, ':');
    size_t name_len = colon ? (size_t)(colon - host) : strlen(host);
    unsigned long port = 80;
    if (colon) {
        char *end;
        if (colon[1] < '0' || colon[1] > '9' || strlen(colon + 1) > 5) return 0;
        port = strtoul(colon + 1, &end, 10);
        if (*end) return 0;
    }
    if (port != rules->port || name_len == 0) return 0;
    if (rules->token || is_loopback_name(host, name_len)) return 1;
    for (const char *const *a = rules->allowed_hosts; a && *a; a++)
        if (strlen(*a) == name_len && strncasecmp(host, *a, name_len) == 0) return 1;
    return 0;
}

/* Checks the fields that decide whether the request may be answered; returns 0 or a status. */
static int check_fields(const jp_http_rules *rules, exchange *ex) {
    const char *host = NULL;
    for (size_t i = 0; i < ex->req.n_headers; i++) {
        if (strcasecmp(ex->req.headers[i].name, "Host") != 0) continue;
        if (host) return 400; /* two Host fields */
        host = ex->req.headers[i].value;
    }
    if (!host) return 400;
    if (!host_allowed(rules, host)) return 403;
    ex->req.host = host;
    ex->range = jp_http_request_header(&ex->req, "Range");
    return 0;
}

/* 1 when got[0, got_len) is the token. The time taken depends on the token's length only, never
 * on where a guess first differs, so the token cannot be found a byte at a time. */
static int token_equal(const jp_http_rules *rules, const char *got, size_t got_len) {
    unsigned diff = got_len != rules->token_len;
    for (size_t i = 0; i < rules->token_len; i++)
        diff |= (unsigned char)rules->token[i] ^ (unsigned char)(i < got_len ? got[i] : 0);
    return diff == 0;
}

/* 1 when one "key=value" item of list (items split by sep, blanks around them skipped) is
 * key=<token>. The value is compared raw: a token never needs percent-encoding. */
static int list_has_token(const jp_http_rules *rules, const char *list, char sep, const char *key) {
    size_t key_len = strlen(key);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        const char *end = strchr(p, sep);
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (n > key_len && strncmp(p, key, key_len) == 0 && p[key_len] == '=' &&
            token_equal(rules, p + key_len + 1, n - key_len - 1))
            return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

/* In token mode: 0 when the raw target's query or a Cookie field shows the token (noting in ex
 * whether the cookie must be set), else 403. Without a token: 0. */
static int check_token(const jp_http_rules *rules, const char *target, exchange *ex) {
    if (!rules->token) return 0;
    const char *q = strchr(target, '?');
    if (q && list_has_token(rules, q + 1, '&', "token")) {
        ex->set_cookie = 1;
        return 0;
    }
    for (size_t i = 0; i < ex->req.n_headers; i++)
        if (strcasecmp(ex->req.headers[i].name, "Cookie") == 0 &&
            list_has_token(rules, ex->req.headers[i].value, ';', "jaxprof_token"))
            return 0;
    return 403;
}

/* GET, HEAD and OPTIONS carry no body here: one announced is refused rather than left unread. */
static int check_no_body(const jp_http_request *req) {
    const char *cl = jp_http_request_header(req, "Content-Length");
    return jp_http_request_header(req, "Transfer-Encoding") || (cl && strcmp(cl, "0") != 0) ? 400 : 0;
}

/* Parses the head buf[0, len) in place into ex (see http_parse.h). The method is known before the
 * fields are checked, but 405 is only sent to a well-formed request with an accepted Host (and
 * token), so nothing is learnt from a forged one. */
void jp_http_parse_head(const jp_http_rules *rules, jp_http_header *headers, char *buf, size_t len, exchange *ex) {
    char *p = buf, *end = buf + len, *line, *target = NULL;
    while (p < end && (*p == '\r' || *p == '\n')) p++; /* blank lines before the request line */
    if (!(line = next_line(&p, end))) return (void)(ex->status = 400);
    int method_status = parse_request_line(line, ex, &target);
    if (method_status != 0 && method_status != 405) return (void)(ex->status = method_status);
    size_t n = 0;
    while ((line = next_line(&p, end)) != NULL && *line) {
        if (n == JP_HTTP_MAX_HEADERS) return (void)(ex->status = 431);
        if ((ex->status = parse_header(line, &headers[n++])) != 0) return;
    }
    if (!line) return (void)(ex->status = 400);
    ex->req.headers = headers;
    ex->req.n_headers = n;
    if ((ex->status = check_fields(rules, ex)) != 0) return;
    if ((ex->status = check_token(rules, target, ex)) != 0) return;
    if (method_status) return (void)(ex->status = method_status);
    if ((ex->status = check_no_body(&ex->req)) != 0) return;
    ex->status = parse_target(target, &ex->req);
}
