/* http_parse.h - the request head parser (http_parse.c), without sockets (internal: the server in
 * http.c and tests/fuzz/fuzz_http.c use it). */
#ifndef JP_SERVE_HTTP_PARSE_H
#define JP_SERVE_HTTP_PARSE_H

#include "jaxprof/jaxprof_serve.h"

enum { JP_HTTP_MAX_HEADERS = 64 }; /* header fields per request; more gets 431 */

/* What a request must satisfy besides its syntax: the Host guard and token mode. */
typedef struct jp_http_rules {
    uint16_t port;                    /* the bound port a Host header must name */
    const char *token;                /* token mode's secret, or NULL */
    size_t token_len;                 /* strlen(token), 0 without a token */
    const char *const *allowed_hosts; /* extra accepted Host names, NULL-terminated; may be NULL */
} jp_http_rules;

/* What the server knows about the request it is answering, beyond jp_http_request. */
typedef struct jp_http_exchange {
    jp_http_request req;              /* the parsed request (valid when status is 0) */
    int status;                       /* 0 while the request is acceptable, else the error to send */
    const char *range;                /* the Range header, or NULL */
    char target[128];                 /* the raw request target, printable, cut: for the log */
    char method[16];                  /* the method token as sent, for the log */
    int set_cookie;                   /* 1: the token came in the query, answer with the cookie */
} jp_http_exchange;

/* 1 when c may appear in a method, a header field name or a token (RFC 9110's tchar). */
int jp_http_is_tchar(unsigned char c);

/* Index just past the blank line ending the head in buf[0, len) ("\r\n\r\n" or "\n\n"), or 0 when
 * it has not arrived yet. */
size_t jp_http_head_end(const char *buf, size_t len);

/* Parses the head buf[0, len) in place (NULs are written into it) into ex, which the caller
 * zeroed; headers has room for JP_HTTP_MAX_HEADERS fields and ex->req points into it and into
 * buf. Never reads outside buf[0, len). Leaves ex->status 0 or the HTTP status to answer; a NUL
 * or a stray CR anywhere in a line of the head is 400, so every field reaches the handler whole. */
void jp_http_parse_head(const jp_http_rules *rules, jp_http_header *headers, char *buf, size_t len,
                        jp_http_exchange *ex);

#endif /* JP_SERVE_HTTP_PARSE_H */
