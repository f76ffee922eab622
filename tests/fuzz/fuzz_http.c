/* fuzz_http.c - fuzz target for the HTTP request head parser: the bytes, copied into a buffer of
 * exactly their size (so ASan sees any read past it), parsed without and with token mode; an
 * accepted request must hold a path the server promises (no dot segment, NUL or control byte) and
 * header fields as sent: no NUL anywhere in the head (it would cut a value short unseen), names of
 * token characters, values trimmed and free of control bytes but tab. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts when a header field of an accepted request is not one the server promises the handler. */
static void check_field(const jp_http_header *h) {
    if (!h->name[0]) __builtin_trap();
    for (const char *c = h->name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *c)))
            __builtin_trap();
    size_t n = strlen(h->value);
    if (n && (h->value[0] == ' ' || h->value[0] == '\t' || h->value[n - 1] == ' ' || h->value[n - 1] == '\t'))
        __builtin_trap();
    for (const char *c = h->value; *c; c++)
        if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) __builtin_trap();
}

/* Aborts when an accepted request breaks what jp_http_request promises the handler. head[0, len)
 * is what the parser was given, as sent. */
static void check_request(const jp_http_exchange *ex, const uint8_t *head, size_t len) {
    const jp_http_request *req = &ex->req;
    if (memchr(head, 0, len)) __builtin_trap(); /* a NUL anywhere in the head gets 400 */
    for (size_t i = 0; i < req->n_headers; i++) check_field(&req->headers[i]);
    if (req->path[0] != '/' || !req->query || !req->host) __builtin_trap();
    for (const char *c = req->path; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\') __builtin_trap();
    for (const char *seg = req->path; seg; seg = strchr(seg + 1, '/')) {
        size_t n = strcspn(seg + 1, "/");
        if ((n == 1 && seg[1] == '.') || (n == 2 && seg[1] == '.' && seg[2] == '.')) __builtin_trap();
    }
    (void)jp_http_request_header(req, "Range");
}

static void parse_once(const uint8_t *data, size_t size, const jp_http_rules *rules) {
    char *buf = malloc(size ? size : 1);
    if (!buf) return;
    memcpy(buf, data, size);
    size_t end = jp_http_head_end(buf, size);
    jp_http_header headers[JP_HTTP_MAX_HEADERS];
    jp_http_exchange ex;
    memset(&ex, 0, sizeof ex);
    size_t len = end ? end : size;
    jp_http_parse_head(rules, headers, buf, len, &ex); /* the server passes end only */
    if (ex.status == 0) check_request(&ex, data, len);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const allowed[] = {"viewer.example", NULL};
    static const char token[] = "0123456789abcdef0123456789abcdef";
    jp_http_rules plain = {8080, NULL, 0, allowed};
    jp_http_rules with_token = {8080, token, sizeof token - 1, NULL};
    parse_once(data, size, &plain);
    parse_once(data, size, &with_token);
    return 0;
}
