/* http.c - a small HTTP/1.1 server for local viewers: connections, responses, files with ranges,
 * CORS; each request head is checked by http_parse.c before a handler sees it. */
#define _GNU_SOURCE /* accept4 */
#include "base/error.h"
#include "base/text.h"
#include "serve/http_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_CONNS = 16,            /* connections at once, whether receiving their head or sending */
    TICK_MS = 200,             /* longest wait before should_stop is asked again */
    LINGER_MS = 200,           /* after an error reply, how long unread input is drained */
    DEFAULT_TIMEOUT_MS = 10000, /* jp_http_options.timeout_ms when 0 */
    DEFAULT_HEADER_MAX = 16384, /* jp_http_options.max_header_bytes when 0 */
    TYPE_MAX = 128,            /* bytes of a Content-Type value, NUL included */
    TOKEN_MIN = 16,            /* shortest jp_http_options.token accepted */
    TOKEN_MAX = 256,           /* longest one: it must fit in a Set-Cookie line */
    EXTRA_HEADERS_MAX = 2048,  /* bytes of header lines a handler may add */
    HEAD_MAX = 4096,           /* the status line and the server's own header lines */
    OUT_HEAD_MAX = HEAD_MAX + EXTRA_HEADERS_MAX, /* a whole response head */
    LOG_MAX = 192,             /* "METHOD target status" of a log line */
    IO_CHUNK = 1 << 16,        /* file bytes read and sent per step */
    TURN_CHUNKS = 16,          /* sends (or drain reads) per connection per wake-up: its fair share */
    STALL_MS = 1000            /* a connection this long without progress may lose its slot to a newcomer */
};

/* What a connection waits for. */
typedef enum conn_state {
    CONN_HEAD,  /* its request head (POLLIN) */
    CONN_SEND,  /* room to send its response (POLLOUT); nothing is read meanwhile */
    CONN_DRAIN  /* its error reply is out: what the client still sends is read and dropped */
} conn_state;

/* One client connection: its request head on the way in, then its one response on the way out. */
typedef struct conn {
    int fd;              /* the client socket (non-blocking); -1 when the slot is free */
    conn_state state;    /* what it waits for */
    int64_t deadline_ms; /* monotonic; HEAD: the whole head by then; SEND: the next progress; DRAIN: closed */
    int64_t since_ms;    /* HEAD: accepted then; SEND: its last progress; DRAIN: 0 (first to give way) */
    size_t len;          /* bytes of the request head received into buf */
    char *buf;           /* max_header_bytes + 1 bytes inside the server's one allocation */
    char *head;          /* the response head, OUT_HEAD_MAX bytes inside the server's one allocation */
    size_t head_len;     /* bytes in head */
    size_t head_sent;    /* of them, bytes sent */
    char *owned;         /* a bytes body taken over from the handler's response (freed here), or NULL */
    const char *body;    /* the next body byte to send from memory (owned, or a static page), or NULL */
    int file_fd;         /* the file the body is read from, or -1 */
    uint64_t file_off;   /* the next file byte to send */
    uint64_t left;       /* body bytes still to send */
    uint64_t sent;       /* body bytes sent, for the log */
    int status;          /* the status being sent */
    char log[LOG_MAX];   /* "METHOD target status", logged with the bytes sent when the response ends */
} conn;

struct jp_http_response {
    int status;                          /* HTTP status code */
    char content_type[TYPE_MAX];         /* the Content-Type value (checked: no CR, LF or controls) */
    const char *static_body;             /* a static body (status pages), or NULL */
    char *body;                          /* owned copy of a bytes body, or NULL */
    size_t body_len;                     /* bytes in body or static_body */
    char *file;                          /* owned copy of the path of a file body, or NULL */
    size_t extra_len;                    /* bytes used in extra */
    char extra[EXTRA_HEADERS_MAX];       /* header lines added by the handler, CRLF-terminated */
};

typedef jp_http_exchange exchange;

struct jp_http_server {
    jp_http_options opt;                 /* as given, defaults applied */
    jp_http_rules rules;                 /* port bound, token and allowed hosts, for the parser */
    int listen_fd;                       /* the listening socket (non-blocking) */
    int64_t accept_resume_ms;            /* accepting pauses until then after EMFILE and the like */
    conn conns[MAX_CONNS];               /* connection slots */
    jp_http_header headers[JP_HTTP_MAX_HEADERS]; /* the fields of the request being answered */
    jp_http_response resp;               /* the response being built */
    char *io;                            /* IO_CHUNK bytes: file reads, drained input */
    char *bufs;                          /* the one allocation behind io, every conn.buf and conn.head */
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stop_requested(const jp_http_server *s) {
    return s->opt.should_stop && s->opt.should_stop(s->opt.ctx);
}

/* ---- responses -------------------------------------------------------------------------------- */

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : "Error";
    }
}

/* "404 Not Found\n" for the status pages: one static string per status. */
static const char *status_page(int status) {
    switch (status) {
    case 400: return "400 Bad Request\n";
    case 403: return "403 Forbidden\n";
    case 404: return "404 Not Found\n";
    case 405: return "405 Method Not Allowed\n";
    case 408: return "408 Request Timeout\n";
    case 416: return "416 Range Not Satisfiable\n";
    case 431: return "431 Request Header Fields Too Large\n";
    case 500: return "500 Internal Server Error\n";
    case 503: return "503 Service Unavailable\n";
    case 505: return "505 HTTP Version Not Supported\n";
    default: return "";
    }
}

static void resp_clear_body(jp_http_response *r) {
    free(r->body);
    free(r->file);
    r->body = r->file = NULL;
    r->static_body = NULL;
    r->body_len = 0;
}

static void resp_reset(jp_http_response *r) {
    resp_clear_body(r);
    r->extra_len = 0;
    r->extra[0] = '\0';
    jp_http_respond_status(r, 404);
}

/* Copies a Content-Type value; 0, or -1 when it is too long or holds a control byte (which could
 * smuggle header lines). */
static int set_type(jp_http_response *r, const char *type) {
    size_t n = strlen(type);
    if (n >= sizeof r->content_type) return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)type[i] < 0x20 || type[i] == 0x7f) return -1;
    memcpy(r->content_type, type, n + 1);
    return 0;
}

int jp_http_respond_status(jp_http_response *resp, int status) {
    if (!resp || status < 100 || status > 599) return JP_ERR_ARG;
    resp_clear_body(resp);
    resp->status = status;
    set_type(resp, "text/plain; charset=utf-8");
    resp->static_body = status_page(status);
    resp->body_len = strlen(resp->static_body);
    return JP_OK;
}

int jp_http_respond_bytes(jp_http_response *resp, int status, const char *content_type, const void *data,
                          size_t len, jp_error *err) {
    if (!resp || status < 100 || status > 599 || (!data && len))
        return jp_error_set(err, JP_ERR_ARG, 0, "http: bad response arguments");
    char *copy = malloc(len ? len : 1);
    if (!copy) return jp_error_set(err, JP_ERR_NOMEM, 0, "http: out of memory for a %zu-byte response", len);
    if (len) memcpy(copy, data, len);
    resp_clear_body(resp);
    if (set_type(resp, content_type ? content_type : "application/octet-stream") != 0) {
        free(copy);
        jp_http_respond_status(resp, 500);
        return jp_error_set(err, JP_ERR_ARG, 0, "http: bad content type");
    }
    resp->status = status;
    resp->body = copy;
    resp->body_len = len;
    return JP_OK;
}

int jp_http_respond_file(jp_http_response *resp, const char *path, const char *content_type, jp_error *err) {
    if (!resp || !path) return jp_error_set(err, JP_ERR_ARG, 0, "http: bad response arguments");
    char *copy = strdup(path);
    if (!copy) return jp_error_set(err, JP_ERR_NOMEM, 0, "http: out of memory");
    resp_clear_body(resp);
    if (set_type(resp, content_type ? content_type : "application/octet-stream") != 0) {
        free(copy);
        jp_http_respond_status(resp, 500);
        return jp_error_set(err, JP_ERR_ARG, 0, "http: bad content type");
    }
    resp->status = 200;
    resp->file = copy;
    return JP_OK;
}

int jp_http_response_header(jp_http_response *resp, const char *name, const char *value, jp_error *err) {
    if (!resp || !name || !*name || !value) return jp_error_set(err, JP_ERR_ARG, 0, "http: bad header");
    for (const char *p = name; *p; p++)
        if (!jp_http_is_tchar((unsigned char)*p)) return jp_error_set(err, JP_ERR_ARG, 0, "http: bad header name");
    if (strpbrk(value, "\r\n")) return jp_error_set(err, JP_ERR_ARG, 0, "http: header %s holds a line break", name);
    size_t room = sizeof resp->extra - resp->extra_len;
    int n = snprintf(resp->extra + resp->extra_len, room, "%s: %s\r\n", name, value);
    if (n < 0 || (size_t)n >= room) {
        resp->extra[resp->extra_len] = '\0';
        return jp_error_set(err, JP_ERR_LIMIT, 0, "http: more than %d bytes of added headers", EXTRA_HEADERS_MAX);
    }
    resp->extra_len += (size_t)n;
    return JP_OK;
}

/* ---- sending ---------------------------------------------------------------------------------- */

/* The byte range a file response sends. */
typedef struct span {
    uint64_t start;  /* first byte */
    uint64_t len;    /* bytes to send */
    uint64_t total;  /* file size */
} span;

/* Reads "bytes=a-b", "bytes=a-" or "bytes=-n" against the file size: 1 and the span when it
 * applies, 0 to send the whole file (absent, malformed or several ranges: RFC 9110 lets a server
 * ignore them), -1 when unsatisfiable (416). */
static int parse_range(const char *v, span *sp) {
    if (!v || strncasecmp(v, "bytes=", 6) != 0 || strchr(v, ',')) return 0;
    const char *p = v + 6;
    char *end;
    uint64_t a = 0, b = UINT64_MAX;
    int has_a = *p >= '0' && *p <= '9';
    if (has_a) {
        errno = 0;
        a = strtoull(p, &end, 10);
        if (errno) return 0;
        p = end;
    }
    if (*p++ != '-') return 0;
    if (*p) {
        if (*p < '0' || *p > '9') return 0;
        errno = 0;
        b = strtoull(p, &end, 10);
        if (errno || *end) return 0;
    } else if (!has_a) {
        return 0;
    }
    if (!has_a) { /* suffix: the last b bytes */
        if (b == 0) return -1;
        a = b >= sp->total ? 0 : sp->total - b;
        b = sp->total - 1;
    }
    if (b < a) return 0;
    if (a >= sp->total) return -1;
    if (b >= sp->total) b = sp->total - 1;
    sp->start = a;
    sp->len = b - a + 1;
    return 1;
}

/* Opens the response's file for reading; sets the status for what cannot be sent. */
static int open_body_file(jp_http_response *r, span *sp) {
    int fd = open(r->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int status = fd < 0 && errno != ELOOP ? 404 : 403;
        if (fd >= 0) close(fd);
        jp_http_respond_status(r, status);
        return -1;
    }
    sp->start = 0;
    sp->total = sp->len = (uint64_t)st.st_size;
    return fd;
}

/* The response head is a jp_text: one that does not fit whole is cut, and then refused. */
static void put(jp_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(jp_text *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jp_text_vprintf(b, fmt, ap);
    va_end(ap);
}

/* Writes the status line and headers for r into head; returns its length, or 0 if too long. */
static size_t build_head(const jp_http_server *s, const jp_http_response *r, const span *sp, int with_range,
                         char *head, size_t cap) {
    jp_text b = jp_text_make(head, cap);
    put(&b, "HTTP/1.1 %d %s\r\n", r->status, reason(r->status));
    if (r->status != 204)
        put(&b, "Content-Type: %s\r\nContent-Length: %llu\r\n", r->content_type, (unsigned long long)sp->len);
    put(&b, "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n");
    if (r->status == 206)
        put(&b, "Accept-Ranges: bytes\r\nContent-Range: bytes %llu-%llu/%llu\r\n", (unsigned long long)sp->start,
            (unsigned long long)(sp->start + sp->len - 1), (unsigned long long)sp->total);
    else if (r->status == 416 && with_range)
        put(&b, "Content-Range: bytes */%llu\r\n", (unsigned long long)sp->total);
    else if (r->file)
        put(&b, "Accept-Ranges: bytes\r\n");
    if (r->status == 405) put(&b, "Allow: GET, HEAD, OPTIONS\r\n");
    if (s->opt.token) put(&b, "Referrer-Policy: no-referrer\r\n"); /* the page's URL holds the token */
    if (s->opt.cors_origin)
        put(&b, "Access-Control-Allow-Origin: %s\r\n%sAccess-Control-Expose-Headers: Content-Length, "
            "Content-Range, Accept-Ranges\r\n", s->opt.cors_origin,
            strcmp(s->opt.cors_origin, "*") ? "Vary: Origin\r\n" : "");
    put(&b, "%s\r\n", r->extra);
    return b.cut ? 0 : b.len;
}

/* Makes r the pending response of c, for a request with the given method and Range header:
 * builds its head into c->head and takes over its bytes body or opens its file. Nothing is sent. */
static void conn_take_response(const jp_http_server *s, conn *c, jp_http_response *r, int method,
                               const char *range) {
    span sp = {0, r->body_len, r->body_len};
    int fd = -1, ranged = 0;
    if (r->file && (fd = open_body_file(r, &sp)) >= 0 && r->status == 200) {
        ranged = parse_range(range, &sp);
        if (ranged == 1) r->status = 206;
        if (ranged < 0) { /* 416 keeps the file's size for Content-Range */
            uint64_t total = sp.total;
            jp_http_respond_status(r, 416);
            sp = (span){0, r->body_len, total};
        }
    }
    if (!r->file) sp.len = r->body_len;
    c->status = r->status;
    c->head_len = build_head(s, r, &sp, ranged < 0, c->head, OUT_HEAD_MAX);
    c->head_sent = 0;
    c->sent = 0;
    c->left = c->head_len && method != JP_HTTP_HEAD ? sp.len : 0;
    if (c->left && fd >= 0 && r->file) {
        c->file_fd = fd;
        c->file_off = sp.start;
        fd = -1;
    } else if (c->left) {
        c->owned = r->body; /* the handler's copy now lives as long as the connection needs it */
        r->body = NULL;
        c->body = c->owned ? c->owned : r->static_body;
        if (!c->body) c->left = 0;
    }
    if (fd >= 0) close(fd);
}

/* Counts k more bytes as sent: the head's first, then the body's. */
static void conn_advance(conn *c, size_t k) {
    size_t h = c->head_len - c->head_sent;
    if (h > k) h = k;
    c->head_sent += h;
    k -= h;
    c->left -= k;
    c->sent += k;
    if (c->file_fd >= 0) c->file_off += k;
    else if (c->body) c->body += k;
}

/* Sends what the socket takes of c's response, at most TURN_CHUNKS sends so that one fast reader
 * of a large answer does not hold the others either. 1 when all of it is out, 0 while more is
 * left (the socket is full or the turn is over), -1 when the client is gone or the file failed.
 * MSG_NOSIGNAL: a client that hung up never raises SIGPIPE. */
static int conn_write(jp_http_server *s, conn *c) {
    for (int turn = 0; turn < TURN_CHUNKS; turn++) {
        struct iovec iov[2];
        size_t n = 0, want = c->left < IO_CHUNK ? (size_t)c->left : IO_CHUNK;
        if (c->head_sent < c->head_len)
            iov[n++] = (struct iovec){.iov_base = c->head + c->head_sent, .iov_len = c->head_len - c->head_sent};
        if (want && c->file_fd >= 0) { /* read again each time: what the socket refused is read next turn */
            ssize_t got = pread(c->file_fd, s->io, want, (off_t)c->file_off);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return -1; /* the file shrank or failed: the client sees a short body */
            iov[n++] = (struct iovec){.iov_base = s->io, .iov_len = (size_t)got};
        } else if (want) {
            iov[n++] = (struct iovec){.iov_base = (void *)(uintptr_t)c->body, .iov_len = want};
        }
        if (n == 0) return 1;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = n};
        ssize_t k = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (k <= 0) return -1;
        conn_advance(c, (size_t)k);
        c->since_ms = now_ms();
        c->deadline_ms = c->since_ms + s->opt.timeout_ms; /* progress: the write deadline starts again */
    }
    return c->head_sent == c->head_len && c->left == 0;
}

/* The answer to a CORS / Private Network Access preflight: 204 with what a page may send. */
static int respond_preflight(const jp_http_server *s, jp_http_response *r) {
    jp_http_respond_status(r, 204);
    r->static_body = "";
    r->body_len = 0;
    if (!s->opt.cors_origin) return 0;
    return jp_http_response_header(r, "Access-Control-Allow-Methods", "GET, HEAD, OPTIONS", NULL) ||
           jp_http_response_header(r, "Access-Control-Allow-Headers", "*", NULL) ||
           jp_http_response_header(r, "Access-Control-Allow-Private-Network", "true", NULL) ||
           jp_http_response_header(r, "Access-Control-Max-Age", "600", NULL);
}

/* ---- connections ------------------------------------------------------------------------------ */

/* Masks the value of every "token=" in target with '*': log lines end up in terminals and files
 * that may be shared, the token must not. */
static void mask_tokens(char *target) {
    for (char *p = strstr(target, "token="); p; p = strstr(p, "token="))
        for (p += 6; *p && *p != '&'; p++) *p = '*';
}

/* Writes "METHOD target status" into c->log; the byte count is added when the response ends. */
static void conn_log_start(const jp_http_server *s, conn *c, const exchange *ex) {
    char target[sizeof ex->target];
    memcpy(target, ex->target, sizeof target);
    if (s->opt.token) mask_tokens(target);
    snprintf(c->log, sizeof c->log, "%s %s %d", ex->method[0] ? ex->method : "-", target[0] ? target : "-",
             c->status);
}

/* Ends c's response, whole or cut short: logs it with the body bytes that went out and lets go of
 * its body. */
static void conn_end_response(jp_http_server *s, conn *c) {
    if (s->opt.log) {
        char line[LOG_MAX + 24];
        snprintf(line, sizeof line, "%s %llu", c->log, (unsigned long long)c->sent);
        s->opt.log(s->opt.ctx, line);
    }
    free(c->owned);
    c->owned = NULL;
    c->body = NULL;
    if (c->file_fd >= 0) close(c->file_fd);
    c->file_fd = -1;
    c->left = 0;
}

/* Closes c at once, ending a response it was sending. */
static void conn_close(jp_http_server *s, conn *c) {
    if (c->fd < 0) return;
    if (c->state == CONN_SEND) conn_end_response(s, c);
    close(c->fd);
    c->fd = -1;
    c->len = 0;
    c->state = CONN_HEAD;
}

/* After an error reply the client may still be sending (an oversized head): closing with its bytes
 * unread would make the kernel reset the connection before the client has read the reply. So the
 * sending side is shut and what still arrives is read and dropped for LINGER_MS, in the poll loop
 * like everything else (a client that neither sends nor closes holds nobody up). */
static void conn_start_drain(jp_http_server *s, conn *c) {
    conn_end_response(s, c);
    shutdown(c->fd, SHUT_WR);
    c->state = CONN_DRAIN;
    c->since_ms = 0;
    c->deadline_ms = now_ms() + LINGER_MS;
}

/* Reads and drops what a draining client sent; closes at its end of stream. */
static void conn_drain(jp_http_server *s, conn *c) {
    for (int turn = 0; turn < TURN_CHUNKS; turn++) {
        ssize_t n = recv(c->fd, s->io, IO_CHUNK, 0);
        if (n > 0 || (n < 0 && errno == EINTR)) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        return conn_close(s, c);
    }
}

/* Sends what the socket takes of c's response; once it is all out the connection drains (after an
 * error reply) or closes; a client that is gone is closed at once. */
static void conn_send(jp_http_server *s, conn *c) {
    int rc = conn_write(s, c);
    if (rc == 0) return;
    if (rc == 1 && c->status >= 400) conn_start_drain(s, c);
    else conn_close(s, c);
}

/* Lets the page that was opened with ?token= make its relative requests with the cookie alone. A
 * handler that filled the extra headers leaves no room: the request still succeeds, only the
 * cookie is missing (the token is at most TOKEN_MAX bytes, far below EXTRA_HEADERS_MAX). */
static void set_token_cookie(const jp_http_server *s, jp_http_response *r) {
    char cookie[TOKEN_MAX + 64];
    snprintf(cookie, sizeof cookie, "jaxprof_token=%s; HttpOnly; SameSite=Strict; Path=/", s->opt.token);
    jp_http_response_header(r, "Set-Cookie", cookie, NULL);
}

/* Answers the request whose head is c->buf[0, len) (status: a reply decided before parsing, or 0):
 * the handler runs now, the response becomes c's and goes out as far as the socket takes it; the
 * rest is sent by later ticks. */
static void answer(jp_http_server *s, conn *c, size_t len, int status) {
    exchange ex;
    memset(&ex, 0, sizeof ex);
    jp_http_response *r = &s->resp;
    resp_reset(r);
    if (status == 0) jp_http_parse_head(&s->rules, s->headers, c->buf, len, &ex);
    else ex.status = status;
    if (ex.status != 0) jp_http_respond_status(r, ex.status);
    else if (ex.req.method == JP_HTTP_OPTIONS) respond_preflight(s, r);
    else if (s->opt.handler && s->opt.handler(s->opt.ctx, &ex.req, r) < 0) {
        resp_reset(r);
        jp_http_respond_status(r, 500);
    }
    if (ex.set_cookie) set_token_cookie(s, r);
    conn_take_response(s, c, r, ex.req.method, ex.range);
    resp_clear_body(r);
    conn_log_start(s, c, &ex);
    c->state = CONN_SEND;
    c->since_ms = now_ms();
    c->deadline_ms = c->since_ms + s->opt.timeout_ms;
    conn_send(s, c);
}

/* Reads what c's client sent; answers once the head is complete (or too large). */
static void conn_read(jp_http_server *s, conn *c) {
    size_t cap = s->opt.max_header_bytes;
    ssize_t n = recv(c->fd, c->buf + c->len, cap - c->len, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return conn_close(s, c);
    c->len += (size_t)n;
    size_t end = jp_http_head_end(c->buf, c->len);
    if (end) return answer(s, c, end, 0);
    if (c->len == cap) answer(s, c, 0, 431);
}

/* 1 when c may give its slot to a newcomer: it is draining, or has waited STALL_MS for its head (a
 * browser pre-connect, a slow or silent sender) or since its response last made progress (a reader
 * that stopped). A connection just accepted, whose head is on its way, or a response that is
 * flowing keeps its slot: under a burst of clients newcomers wait in the backlog instead. */
static int can_give_way(const conn *c, int64_t now) {
    return c->state == CONN_DRAIN || now - c->since_ms >= STALL_MS;
}

/* The slot for a new connection: a free one, else that of the connection that has waited longest
 * among those that may give way (the caller closes it), else NULL: the newcomer waits in the
 * listen backlog until a slot frees. Idle pre-connects and stalled readers never lock the others
 * out for longer than STALL_MS; connections being served are never cut for a newcomer. */
static conn *slot_for_new(jp_http_server *s, int64_t now) {
    conn *oldest = NULL;
    for (size_t i = 0; i < MAX_CONNS; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0) return c;
        if (can_give_way(c, now) && (!oldest || c->since_ms < oldest->since_ms)) oldest = c;
    }
    return oldest;
}

/* Accepts what is waiting while there are slots for it, at most MAX_CONNS per call. */
static void accept_clients(jp_http_server *s) {
    for (size_t i = 0; i < MAX_CONNS; i++) {
        int64_t now = now_ms();
        conn *c = slot_for_new(s, now);
        if (!c) return;
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                s->accept_resume_ms = now + TICK_MS; /* out of descriptors: let some close */
            return;
        }
        conn_close(s, c); /* when the slot was taken from another connection */
        c->fd = fd;
        c->state = CONN_HEAD;
        c->len = 0;
        c->since_ms = now;
        c->deadline_ms = now + s->opt.timeout_ms;
    }
}

/* 1 when a newcomer would find a slot: only then is the listening socket polled (else its
 * pending connections would wake every poll at once). */
static int has_room(jp_http_server *s, int64_t now) {
    return slot_for_new(s, now) != NULL;
}

/* Connections past their deadline. Waiting for a head: a silent close when nothing came (an unused
 * browser pre-connect), 408 otherwise. Sending: the client stopped reading, closed (only its own
 * response is lost). Draining: closed. */
static void expire_conns(jp_http_server *s, int64_t now) {
    for (size_t i = 0; i < MAX_CONNS; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0 || now < c->deadline_ms) continue;
        if (c->state == CONN_HEAD && c->len > 0) answer(s, c, 0, 408);
        else conn_close(s, c);
    }
}

/* One wait for activity and the work it brings. Every connection is in poll at once: for its
 * request head (POLLIN), for room to send its response (POLLOUT) or draining after an error
 * (POLLIN); so is the listening socket while a newcomer would find a slot (else newcomers wait in
 * the backlog); the wait is at most TICK_MS, less when a deadline is nearer. A complete head is
 * answered at once: the handler runs (handlers run one at a time) and the response goes out as
 * far as the socket takes it; the rest is sent as the client reads, at most TURN_CHUNKS sends per
 * wake-up. A client that stops reading holds only its own connection, until its write deadline
 * (timeout_ms without progress) or, STALL_MS without progress, a newcomer needs its slot. Then
 * newcomers are accepted and connections past their deadline expire. Memory stays bounded: one
 * response per connection, and nothing more is read from a connection while its response is
 * pending. */
static int serve_tick(jp_http_server *s, jp_error *err) {
    struct pollfd fds[MAX_CONNS + 1];
    conn *owner[MAX_CONNS + 1];
    size_t n = 0;
    int64_t now = now_ms(), timeout = TICK_MS;
    for (size_t i = 0; i < MAX_CONNS; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0) continue;
        fds[n] = (struct pollfd){.fd = c->fd, .events = c->state == CONN_SEND ? POLLOUT : POLLIN};
        owner[n++] = c;
        if (c->deadline_ms - now < timeout) timeout = c->deadline_ms - now > 0 ? c->deadline_ms - now : 0;
    }
    if (now >= s->accept_resume_ms && has_room(s, now)) {
        fds[n] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
        owner[n++] = NULL;
    }
    int r = poll(fds, (nfds_t)n, (int)timeout);
    if (r < 0 && errno != EINTR) return jp_error_set(err, JP_ERR_IO, 0, "http: poll: %s", strerror(errno));
    for (size_t i = 0; r > 0 && i < n; i++) {
        conn *c = owner[i];
        if (!fds[i].revents) continue;
        if (!c) accept_clients(s);
        else if (c->state == CONN_HEAD) conn_read(s, c);
        else if (c->state == CONN_SEND) conn_send(s, c);
        else conn_drain(s, c);
    }
    expire_conns(s, now_ms());
    return JP_OK;
}

/* ---- the server ------------------------------------------------------------------------------- */

jp_http_options jp_http_options_default(void) {
    jp_http_options o;
    memset(&o, 0, sizeof o);
    o.host = "127.0.0.1";
    o.timeout_ms = DEFAULT_TIMEOUT_MS;
    o.max_header_bytes = DEFAULT_HEADER_MAX;
    return o;
}

/* The socket address for host:port; JP_ERR_ARG when host is not a numeric address. */
static int make_addr(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len, jp_error *err) {
    memset(ss, 0, sizeof *ss);
    if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *len = sizeof *v6;
    } else {
        return jp_error_set(err, JP_ERR_ARG, 0, "http: '%s' is not a numeric IP address", host);
    }
    return JP_OK;
}

/* listen_on's answer when host is no address at all (err says why): no other port can help. */
enum { LISTEN_BAD_HOST = -2 };

/* Binds and listens on host:port; returns the socket, -1 with errno set when it fails, or
 * LISTEN_BAD_HOST. */
static int listen_on(const char *host, uint16_t port, jp_error *err) {
    struct sockaddr_storage ss;
    socklen_t len = 0;
    if (make_addr(host, port, &ss, &len, err) != JP_OK) return LISTEN_BAD_HOST;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* restart while old sockets linger */
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Tries port, port+1, ... while they are taken; records the socket and the port bound. */
static int bind_first_free(jp_http_server *s, jp_error *err) {
    const jp_http_options *o = &s->opt;
    unsigned tries = o->port == 0 || o->port_tries == 0 ? 1u : o->port_tries;
    for (unsigned i = 0; i < tries && (unsigned)o->port + i <= 65535u; i++) {
        uint16_t port = (uint16_t)(o->port + i);
        int fd = listen_on(o->host, port, err);
        if (fd == LISTEN_BAD_HOST) return JP_ERR_ARG;
        if (fd >= 0) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof ss;
            getsockname(fd, (struct sockaddr *)&ss, &len);
            s->listen_fd = fd;
            s->rules.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                      : ((struct sockaddr_in *)&ss)->sin_port);
            return JP_OK;
        }
        if (errno != EADDRINUSE) return jp_error_set(err, JP_ERR_IO, 0, "http: cannot listen on %s:%u: %s",
                                                     o->host, (unsigned)port, strerror(errno));
    }
    return jp_error_set(err, JP_ERR_IO, 0, "http: %s: port%s %u%s in use", o->host, tries > 1 ? "s" : "",
                        (unsigned)o->port, tries > 1 ? " and the next ones are" : " is");
}

/* One allocation for the I/O buffer and every connection's request and response head buffers. */
static int alloc_buffers(jp_http_server *s, jp_error *err) {
    size_t per = s->opt.max_header_bytes + 1 + OUT_HEAD_MAX;
    s->bufs = malloc(IO_CHUNK + MAX_CONNS * per);
    if (!s->bufs) return jp_error_set(err, JP_ERR_NOMEM, 0, "http: out of memory");
    s->io = s->bufs;
    for (size_t i = 0; i < MAX_CONNS; i++) {
        s->conns[i].fd = s->conns[i].file_fd = -1;
        s->conns[i].buf = s->bufs + IO_CHUNK + i * per;
        s->conns[i].head = s->conns[i].buf + s->opt.max_header_bytes + 1;
    }
    return JP_OK;
}

/* A token goes into Set-Cookie lines and is compared raw with query text: only bytes that need no
 * escaping in either, and enough of them to be unguessable. */
static int check_token_option(jp_http_server *s, jp_error *err) {
    const char *t = s->opt.token;
    if (!t) return JP_OK;
    size_t n = strlen(t);
    int ok = n >= TOKEN_MIN && n <= TOKEN_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char c = t[i];
        ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
    }
    if (!ok) return jp_error_set(err, JP_ERR_ARG, 0, "http: the token needs %d to %d bytes of [0-9A-Za-z_-]",
                                 TOKEN_MIN, TOKEN_MAX);
    s->rules.token_len = n;
    return JP_OK;
}

int jp_http_server_open(jp_http_server **out, const jp_http_options *opt, jp_error *err) {
    jp_error_clear(err);
    if (!out) return jp_error_set(err, JP_ERR_ARG, 0, "http: no output");
    *out = NULL;
    jp_http_server *s = calloc(1, sizeof *s);
    if (!s) return jp_error_set(err, JP_ERR_NOMEM, 0, "http: out of memory");
    s->opt = opt ? *opt : jp_http_options_default();
    if (!s->opt.host) s->opt.host = "127.0.0.1";
    if (!s->opt.timeout_ms) s->opt.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (s->opt.timeout_ms > 3600000u) s->opt.timeout_ms = 3600000u;
    if (!s->opt.max_header_bytes) s->opt.max_header_bytes = DEFAULT_HEADER_MAX;
    if (s->opt.max_header_bytes < 256 || s->opt.max_header_bytes > (1u << 20)) {
        free(s);
        return jp_error_set(err, JP_ERR_ARG, 0, "http: max_header_bytes must be 256..1048576");
    }
    if (check_token_option(s, err) != JP_OK) {
        free(s);
        return JP_ERR_ARG;
    }
    s->rules.token = s->opt.token;
    s->rules.allowed_hosts = s->opt.allowed_hosts;
    s->listen_fd = -1;
    int rc = alloc_buffers(s, err);
    if (rc == JP_OK) rc = bind_first_free(s, err);
    if (rc != JP_OK) {
        jp_http_server_close(s);
        return rc;
    }
    resp_reset(&s->resp);
    *out = s;
    return JP_OK;
}

uint16_t jp_http_server_port(const jp_http_server *srv) { return srv ? srv->rules.port : 0; }

int jp_http_server_run(jp_http_server *srv, jp_error *err) {
    jp_error_clear(err);
    if (!srv) return jp_error_set(err, JP_ERR_ARG, 0, "http: no server");
    int rc = JP_OK;
    while (rc == JP_OK && !stop_requested(srv)) rc = serve_tick(srv, err);
    for (size_t i = 0; i < MAX_CONNS; i++) conn_close(srv, &srv->conns[i]);
    return rc;
}

void jp_http_server_close(jp_http_server *srv) {
    if (!srv) return;
    if (srv->bufs)
        for (size_t i = 0; i < MAX_CONNS; i++) conn_close(srv, &srv->conns[i]);
    if (srv->listen_fd >= 0) close(srv->listen_fd);
    resp_clear_body(&srv->resp);
    free(srv->bufs);
    free(srv);
}
