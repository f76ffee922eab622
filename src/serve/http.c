/* http.c - a small HTTP/1.1 server for local viewers: connections, responses, files with ranges,
 * CORS, and requests answered in worker processes (isolation); each request head is checked by
 * http_parse.c before a handler sees it. */
#define _GNU_SOURCE /* accept4 */
#include "base/error.h"
#include "base/text.h"
#include "serve/http_parse.h"
#include "serve/http_response.h"
#include "serve/http_worker.h"

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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum {
    DEFAULT_MAX_CONNS = 1024,  /* jp_http_options.max_conns when 0 */
    MIN_CONNS = 4,             /* fewest connection slots, whatever the open-file limit */
    FDS_PER_CONN = 2,          /* a connection's socket and its body file */
    FDS_RESERVED = 32,         /* descriptors left for everything else (logs, workers' sockets) */
    LISTEN_BACKLOG = 1024,     /* connections the kernel queues before we accept them */
    DEFAULT_WORKERS = 4,       /* jp_http_options.max_workers when 0 */
    MAX_WORKERS = 256,         /* most worker processes */
    DEFAULT_WORK_MS = 120000,  /* jp_http_options.work_timeout_ms when 0 */
    REAP_MS = 5,               /* poll period while a worker that ended is still to be reaped */
    KEY_MAX = 16448,           /* bytes of an isolation key, NUL included (two hex-encoded 4 kB paths) */
    WHY_MAX = 192,             /* bytes of the reason a worker's requests failed */
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

/* Every answer says this unless jp_http_options.content_security_policy does otherwise: nothing
 * may be loaded, run or framed (a file download or a JSON answer needs none of it). */
#define DEFAULT_CSP "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/* What a connection waits for. */
typedef enum conn_state {
    CONN_HEAD,  /* its request head (POLLIN) */
    CONN_WAIT,  /* its answer from a worker process; not polled but for errors */
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
    char *buf;           /* max_header_bytes + 1 bytes, then head's: allocated at accept, freed at close */
    char *head;          /* the response head, OUT_HEAD_MAX bytes inside buf's allocation */
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
    /* While it waits for a worker (CONN_WAIT): */
    char *key;           /* the isolation key naming the worker that answers it (heap), or NULL */
    char *raw;           /* the request head as received, for the worker to parse again (heap) */
    size_t raw_len;      /* bytes in raw */
    int worker;          /* index of the worker it is queued on, or -1 while no worker is free */
    int sent_to_worker;  /* 1 once the worker has its request */
    uint64_t seq;        /* arrival order: each worker answers its queue first come first served */
    int method;          /* jp_http_method of the request */
    const char *range;   /* its Range header (inside buf, which nothing overwrites while it waits) */
    int set_cookie;      /* 1: the answer sets the token cookie */
} conn;

/* A worker process answering the isolated requests of one key (see jp_http_options.isolate). */
typedef struct worker {
    jp_http_proc proc;   /* pid 0: a free slot; sock -1 while it ends (it is still to be reaped) */
    char *key;           /* the key it answers for (heap) */
    int busy;            /* 1 while it works on a request (whose connection may have gone since) */
    conn *job;           /* that request's connection, or NULL once it went */
    int64_t deadline_ms; /* when busy: it is killed then (work_timeout_ms) */
    int64_t used_ms;     /* when it last took a request: the least recently used idle one goes first */
    char why[WHY_MAX];   /* once it is ending, what its waiting connections are told; "" until known */
} worker;

/* What a worker sends back for each request, with the body's descriptor. */
typedef struct worker_reply {
    int32_t status;                   /* HTTP status code */
    int32_t ranges;                   /* 1: the body is a file that may be sent in byte ranges */
    uint32_t extra_len;               /* bytes used in extra */
    char content_type[TYPE_MAX];      /* NUL-terminated */
    char extra[EXTRA_HEADERS_MAX];    /* the handler's header lines, CRLF-terminated, NUL-terminated */
} worker_reply;

struct jp_http_response {
    int status;                          /* HTTP status code */
    char content_type[TYPE_MAX];         /* the Content-Type value (checked: no CR, LF or controls) */
    const char *static_body;             /* a static body (status pages), or NULL */
    char *body;                          /* owned copy of a bytes body, or NULL */
    size_t body_len;                     /* bytes in body or static_body */
    char *file;                          /* owned copy of the path of a file body, or NULL */
    int body_fd;                         /* an open body file (a worker's answer), owned, or -1 */
    int fd_ranges;                       /* 1: body_fd may be sent in byte ranges (it is a file) */
    size_t extra_len;                    /* bytes used in extra */
    char extra[EXTRA_HEADERS_MAX];       /* header lines added by the handler, CRLF-terminated */
};

typedef jp_http_exchange exchange;

struct jp_http_server {
    jp_http_options opt;                 /* as given, defaults applied */
    jp_http_rules rules;                 /* port bound, token and allowed hosts, for the parser */
    int listen_fd;                       /* the listening socket (non-blocking) */
    int64_t accept_resume_ms;            /* accepting pauses until then after EMFILE and the like */
    conn *conns;                         /* max_conns connection slots (heap) */
    size_t max_conns;                    /* slots, after the open-file limit */
    worker *workers;                     /* max_workers worker slots (heap), or NULL without isolation */
    struct pollfd *fds;                  /* one poll set: every slot, the listener, every worker (heap) */
    int *owner;                          /* for each fds entry: conn index, -1 listener, -2 - worker index */
    uint64_t seq;                        /* counts requests sent to isolation, for conn.seq */
    jp_http_header headers[JP_HTTP_MAX_HEADERS]; /* the fields of the request being answered */
    jp_http_response resp;               /* the response being built */
    char *io;                            /* IO_CHUNK bytes: file reads, drained input (heap) */
    char key[KEY_MAX];                   /* the isolation key of the request being routed */
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
    if (r->body_fd >= 0) close(r->body_fd);
    r->body_fd = -1;
    r->fd_ranges = 0;
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

jp_http_response *jp_http_response_new(void) {
    jp_http_response *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->body_fd = -1;
    resp_reset(r);
    return r;
}

void jp_http_response_free(jp_http_response *resp) {
    if (!resp) return;
    resp_clear_body(resp);
    free(resp);
}

int jp_http_response_status(const jp_http_response *resp) { return resp->status; }

const char *jp_http_response_type(const jp_http_response *resp) { return resp->content_type; }

size_t jp_http_response_body(const jp_http_response *resp, const char **data) {
    *data = resp->body ? resp->body : resp->static_body;
    return *data ? resp->body_len : 0;
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

/* Opens the response's file for reading (or takes its open body file); sets the status for what
 * cannot be sent. */
static int open_body_file(jp_http_response *r, span *sp) {
    int fd = r->body_fd;
    r->body_fd = -1;
    if (fd < 0) fd = open(r->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
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
                         int accept_ranges, char *head, size_t cap) {
    jp_text b = jp_text_make(head, cap);
    put(&b, "HTTP/1.1 %d %s\r\n", r->status, reason(r->status));
    if (r->status != 204)
        put(&b, "Content-Type: %s\r\nContent-Length: %llu\r\n", r->content_type, (unsigned long long)sp->len);
    put(&b, "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n");
    put(&b, "Content-Security-Policy: %s\r\nX-Frame-Options: DENY\r\n", s->opt.content_security_policy);
    if (r->status == 206)
        put(&b, "Accept-Ranges: bytes\r\nContent-Range: bytes %llu-%llu/%llu\r\n", (unsigned long long)sp->start,
            (unsigned long long)(sp->start + sp->len - 1), (unsigned long long)sp->total);
    else if (r->status == 416 && with_range)
        put(&b, "Content-Range: bytes */%llu\r\n", (unsigned long long)sp->total);
    else if (accept_ranges)
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
    int fd = -1, ranged = 0, ranges = r->file != NULL || r->fd_ranges;
    if ((r->file || r->body_fd >= 0) && (fd = open_body_file(r, &sp)) >= 0 && r->status == 200 && ranges) {
        ranged = parse_range(range, &sp);
        if (ranged == 1) r->status = 206;
        if (ranged < 0) { /* 416 keeps the file's size for Content-Range */
            uint64_t total = sp.total;
            jp_http_respond_status(r, 416);
            sp = (span){0, r->body_len, total};
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) sp.len = r->body_len;
    c->status = r->status;
    c->head_len = build_head(s, r, &sp, ranged < 0, fd >= 0 && ranges, c->head, OUT_HEAD_MAX);
    c->head_sent = 0;
    c->sent = 0;
    c->left = c->head_len && method != JP_HTTP_HEAD ? sp.len : 0;
    if (c->left && fd >= 0) {
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

/* Writes "METHOD target" into c->log; the status and byte count are added when the response ends. */
static void conn_log_start(const jp_http_server *s, conn *c, const exchange *ex) {
    char target[sizeof ex->target];
    memcpy(target, ex->target, sizeof target);
    if (s->opt.token) mask_tokens(target);
    snprintf(c->log, sizeof c->log, "%s %s", ex->method[0] ? ex->method : "-", target[0] ? target : "-");
}

/* Ends c's response, whole or cut short: logs it with the body bytes that went out and lets go of
 * its body. */
static void conn_end_response(jp_http_server *s, conn *c) {
    if (s->opt.log) {
        char line[LOG_MAX + 40];
        snprintf(line, sizeof line, "%s %d %llu", c->log, c->status, (unsigned long long)c->sent);
        s->opt.log(s->opt.ctx, line);
    }
    free(c->owned);
    c->owned = NULL;
    c->body = NULL;
    if (c->file_fd >= 0) close(c->file_fd);
    c->file_fd = -1;
    c->left = 0;
}

/* Lets go of what c held while it waited for a worker (its key, its copy of the head, its place
 * in a worker's queue). */
static void conn_leave_wait(jp_http_server *s, conn *c) {
    if (c->worker >= 0 && s->workers[c->worker].job == c) s->workers[c->worker].job = NULL;
    free(c->key);
    free(c->raw);
    c->key = c->raw = NULL;
    c->raw_len = 0;
    c->worker = -1;
    c->sent_to_worker = 0;
}

/* Closes c at once, ending a response it was sending or its wait for a worker. */
static void conn_close(jp_http_server *s, conn *c) {
    if (c->fd < 0) return;
    if (c->state == CONN_SEND) conn_end_response(s, c);
    if (c->state == CONN_WAIT) conn_leave_wait(s, c);
    close(c->fd);
    free(c->buf);
    c->buf = c->head = NULL;
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

/* Makes r, the answer to c's request, c's pending response and sends it as far as the socket
 * takes it; later ticks send the rest. */
static void respond(jp_http_server *s, conn *c, jp_http_response *r) {
    if (c->set_cookie) set_token_cookie(s, r);
    conn_take_response(s, c, r, c->method, c->range);
    resp_clear_body(r);
    c->state = CONN_SEND;
    c->since_ms = now_ms();
    c->deadline_ms = c->since_ms + s->opt.timeout_ms;
    conn_send(s, c);
}

/* ---- workers: isolated requests ---------------------------------------------------------------- */

/* Answers c, which waited for a worker, with status and why (the isolation's failure callback
 * words it; "<key> failed: <why>" as text without one). */
static void fail_wait(jp_http_server *s, conn *c, int status, const char *why) {
    jp_http_response *r = &s->resp;
    resp_reset(r);
    if (s->opt.isolated_failed) {
        s->opt.isolated_failed(s->opt.ctx, c->key, status, why, r);
    } else {
        char text[KEY_MAX + WHY_MAX + 16];
        int n = snprintf(text, sizeof text, "%s failed: %s\n", c->key, why);
        jp_http_respond_bytes(r, status, "text/plain; charset=utf-8", text, n > 0 ? strlen(text) : 0, NULL);
    }
    conn_leave_wait(s, c);
    respond(s, c, r);
}

static int worker_alive(const worker *w) { return w->proc.pid > 0 && w->proc.sock >= 0; }

/* Stops w (SIGKILL) with why for its waiting connections, unless a reason is known already; they
 * are answered once it is reaped. */
static void worker_stop(worker *w, const char *why) {
    if (why && !w->why[0]) snprintf(w->why, sizeof w->why, "%s", why);
    jp_http_proc_kill(&w->proc);
    w->busy = 0;
}

/* 1 when extra (NUL-terminated) is header lines as jp_http_response_header writes them: each
 * "Name: value" ending in CRLF, no bare CR or LF, no empty line (it would end the head early). */
static int is_header_block(const char *extra) {
    for (const char *p = extra; *p;) {
        const char *eol = strstr(p, "\r\n");
        if (!eol || eol == p || memchr(p, '\n', (size_t)(eol - p)) || memchr(p, '\r', (size_t)(eol - p))) return 0;
        p = eol + 2;
    }
    return 1;
}

/* The reply of a worker as a response in r (taking fd): 0, or -1 when it is malformed (the worker
 * is broken: it is stopped). */
static int reply_to_response(const worker_reply *rep, int fd, jp_http_response *r) {
    if (rep->status < 100 || rep->status > 599 || rep->ranges < 0 || rep->ranges > 1 ||
        rep->extra_len >= EXTRA_HEADERS_MAX || memchr(rep->content_type, 0, TYPE_MAX) == NULL ||
        strlen(rep->extra) != rep->extra_len || !is_header_block(rep->extra))
        return -1;
    if (fd < 0) return jp_http_respond_bytes(r, rep->status, rep->content_type, "", 0, NULL) == JP_OK ? 0 : -1;
    resp_clear_body(r);
    if (set_type(r, rep->content_type) != 0) return -1;
    r->status = rep->status;
    r->body_fd = fd;
    r->fd_ranges = rep->ranges;
    memcpy(r->extra, rep->extra, rep->extra_len + 1);
    r->extra_len = rep->extra_len;
    return 0;
}

static void schedule(jp_http_server *s);

/* Reads what worker w sent: an answer goes to the connection it was for (if it is still there); the
 * end of its stream or a malformed message stops it. */
static void worker_read(jp_http_server *s, worker *w) {
    worker_reply rep;
    int fd = -1;
    ssize_t n = jp_http_proc_recv(w->proc.sock, &rep, sizeof rep, &fd);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return worker_stop(w, NULL); /* it ended: why comes from its exit status */
    jp_http_response *r = &s->resp;
    resp_reset(r);
    if ((size_t)n != sizeof rep || !w->busy) {
        if (fd >= 0) close(fd);
        return worker_stop(w, "its process sent a malformed answer");
    }
    if (memchr(rep.extra, 0, sizeof rep.extra) == NULL || reply_to_response(&rep, fd, r) != 0) {
        if (r->body_fd != fd && fd >= 0) close(fd);
        resp_reset(r);
        return worker_stop(w, "its process sent a malformed answer");
    }
    conn *c = w->job;
    w->busy = 0;
    w->job = NULL;
    if (c) {
        conn_leave_wait(s, c);
        respond(s, c, r);
    } else {
        resp_reset(r); /* its client went away meanwhile */
    }
    schedule(s); /* it is free for the next request in its queue */
}

/* The child's side of a worker: closes what belongs to the parent, then answers one request at a
 * time: the head (in a memfd) is parsed again with the same rules, the handler answers it, and
 * the answer goes back as a worker_reply with its body in a memfd (or the file it names). Ends
 * when the parent closes its end or goes. */
static void worker_answer(jp_http_server *s, char *head, size_t len, worker_reply *rep, int *body_fd);

static void worker_main(void *arg, int sock) {
    jp_http_server *s = arg; /* the child's own copy */
    if (s->listen_fd >= 0) close(s->listen_fd);
    for (size_t i = 0; i < s->max_conns; i++) {
        if (s->conns[i].fd >= 0) close(s->conns[i].fd);
        if (s->conns[i].file_fd >= 0) close(s->conns[i].file_fd);
    }
    for (size_t i = 0; s->workers && i < s->opt.max_workers; i++)
        if (s->workers[i].proc.sock >= 0) close(s->workers[i].proc.sock);
    size_t cap = s->opt.max_header_bytes;
    char *head = malloc(cap + 1);
    worker_reply *rep = malloc(sizeof *rep);
    if (!head || !rep) _exit(1);
    for (;;) {
        char tag;
        int fd = -1, body = -1;
        if (jp_http_proc_recv(sock, &tag, 1, &fd) <= 0) _exit(0);
        ssize_t len = fd >= 0 ? pread(fd, head, cap, 0) : 0;
        if (fd >= 0) close(fd);
        worker_answer(s, head, len > 0 ? (size_t)len : 0, rep, &body);
        int sent = jp_http_proc_send(sock, rep, sizeof *rep, body);
        if (body >= 0) close(body);
        if (sent != 0) _exit(0);
    }
}

static void worker_answer(jp_http_server *s, char *head, size_t len, worker_reply *rep, int *body_fd) {
    exchange ex;
    memset(&ex, 0, sizeof ex);
    jp_http_response *r = &s->resp;
    resp_reset(r);
    jp_http_parse_head(&s->rules, s->headers, head, len, &ex);
    if (ex.status != 0) jp_http_respond_status(r, ex.status);
    else if (!s->opt.handler || s->opt.handler(s->opt.ctx, &ex.req, r) < 0) jp_http_respond_status(r, 500);
    span sp;
    int ranges = r->file != NULL, fd = r->file ? open_body_file(r, &sp) : -1;
    if (fd < 0) {
        ranges = 0;
        fd = jp_http_proc_memfd(r->body ? r->body : r->static_body ? r->static_body : "", r->body_len);
        if (fd < 0) jp_http_respond_status(r, 500); /* sent without a body */
    }
    memset(rep, 0, sizeof *rep);
    rep->status = r->status;
    rep->ranges = ranges;
    memcpy(rep->content_type, r->content_type, sizeof rep->content_type);
    memcpy(rep->extra, r->extra, r->extra_len + 1);
    rep->extra_len = (uint32_t)r->extra_len;
    *body_fd = fd;
    resp_reset(r);
}

/* Starts a worker for key in the free slot w; 0, or -1 with why filled. */
static int worker_start(jp_http_server *s, worker *w, const char *key, char *why, size_t cap) {
    jp_error err = {0};
    memset(w, 0, sizeof *w);
    w->proc.sock = -1;
    if (!(w->key = strdup(key))) return snprintf(why, cap, "out of memory"), -1;
    if (jp_http_proc_start(&w->proc, worker_main, s, &err) != JP_OK) {
        snprintf(why, cap, "%.160s", err.msg);
        free(w->key);
        w->key = NULL;
        return -1;
    }
    w->used_ms = now_ms();
    return 0;
}

/* Sends c's request to the idle worker w. A request that cannot be passed on is answered 503; a
 * worker that cannot take it is stopped (c is answered with the others once it is reaped). */
static void worker_give(jp_http_server *s, worker *w, conn *c) {
    int fd = jp_http_proc_memfd(c->raw, c->raw_len);
    if (fd < 0) {
        char why[WHY_MAX];
        snprintf(why, sizeof why, "the request could not be passed on: %s", strerror(errno));
        return fail_wait(s, c, 503, why);
    }
    int sent = jp_http_proc_send(w->proc.sock, "R", 1, fd);
    close(fd);
    w->busy = 1; /* set either way: a stopped worker's job is answered when it is reaped */
    w->job = c;
    c->sent_to_worker = 1;
    free(c->raw);
    c->raw = NULL;
    w->used_ms = now_ms();
    w->deadline_ms = w->used_ms + s->opt.work_timeout_ms;
    c->deadline_ms = INT64_MAX; /* the worker's deadline bounds it now */
    if (sent != 0) worker_stop(w, "its process stopped taking requests");
}

/* The alive worker answering key, or NULL. */
static worker *worker_for(jp_http_server *s, const char *key) {
    for (size_t i = 0; i < s->opt.max_workers; i++)
        if (worker_alive(&s->workers[i]) && strcmp(s->workers[i].key, key) == 0) return &s->workers[i];
    return NULL;
}

/* 1 when a connection waits in worker index i's queue. */
static int worker_has_queue(const jp_http_server *s, size_t i) {
    for (size_t k = 0; k < s->max_conns; k++)
        if (s->conns[k].fd >= 0 && s->conns[k].state == CONN_WAIT && s->conns[k].worker == (int)i) return 1;
    return 0;
}

/* A worker slot for a new key: a free slot (NULL when none), after stopping the least recently
 * used idle worker when every slot is taken (its slot frees once it is reaped: NULL until then). */
static worker *worker_slot(jp_http_server *s) {
    worker *lru = NULL;
    for (size_t i = 0; i < s->opt.max_workers; i++) {
        worker *w = &s->workers[i];
        if (w->proc.pid == 0) return w;
        if (worker_alive(w) && !w->busy && !worker_has_queue(s, i) && (!lru || w->used_ms < lru->used_ms)) lru = w;
    }
    if (lru) worker_stop(lru, "replaced by another run's worker");
    return NULL;
}

/* Finds each waiting connection its worker (starting one when a slot is free), then gives every
 * idle worker the oldest request in its queue. */
static void schedule(jp_http_server *s) {
    for (size_t i = 0; i < s->max_conns; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0 || c->state != CONN_WAIT || c->worker >= 0) continue;
        worker *w = worker_for(s, c->key);
        char why[WHY_MAX];
        if (!w && (w = worker_slot(s)) && worker_start(s, w, c->key, why, sizeof why) != 0) {
            fail_wait(s, c, 503, why);
            continue;
        }
        if (w) c->worker = (int)(w - s->workers);
    }
    for (size_t i = 0; i < s->opt.max_workers; i++) {
        worker *w = &s->workers[i];
        if (!worker_alive(w) || w->busy) continue;
        conn *next = NULL;
        for (size_t k = 0; k < s->max_conns; k++) {
            conn *c = &s->conns[k];
            if (c->fd >= 0 && c->state == CONN_WAIT && c->worker == (int)i && !c->sent_to_worker &&
                (!next || c->seq < next->seq))
                next = c;
        }
        if (next) worker_give(s, w, next);
    }
}

/* Reaps workers that ended; each one's waiting connections (the request it was answering and
 * those queued behind it, which would most likely meet the same fate) are answered 500 with why.
 * Kills a busy worker past its deadline. */
static void tend_workers(jp_http_server *s, int64_t now) {
    int changed = 0;
    for (size_t i = 0; i < s->opt.max_workers; i++) {
        worker *w = &s->workers[i];
        if (worker_alive(w) && w->busy && now >= w->deadline_ms) {
            char why[WHY_MAX];
            snprintf(why, sizeof why, "it took longer than %u s (the time limit) and was stopped",
                     (unsigned)(s->opt.work_timeout_ms / 1000));
            worker_stop(w, why);
        }
        char ended[WHY_MAX];
        if (w->proc.pid == 0 || worker_alive(w) || !jp_http_proc_reap(&w->proc, 0, ended, sizeof ended)) continue;
        if (!w->why[0]) snprintf(w->why, sizeof w->why, "%s", ended);
        for (size_t k = 0; k < s->max_conns; k++) {
            conn *c = &s->conns[k];
            if (c->fd >= 0 && c->state == CONN_WAIT && c->worker == (int)i) fail_wait(s, c, 500, w->why);
        }
        free(w->key);
        memset(w, 0, sizeof *w);
        w->proc.sock = -1;
        changed = 1;
    }
    if (changed) schedule(s);
}

/* Stops every worker and waits for each (at the end of serving). */
static void stop_workers(jp_http_server *s) {
    for (size_t i = 0; s->workers && i < s->opt.max_workers; i++) {
        worker *w = &s->workers[i];
        if (w->proc.pid == 0) continue;
        char why[WHY_MAX];
        jp_http_proc_kill(&w->proc);
        jp_http_proc_reap(&w->proc, 1, why, sizeof why);
        free(w->key);
        memset(w, 0, sizeof *w);
        w->proc.sock = -1;
    }
}

/* Puts c (its request head copied into raw, len bytes; its key in s->key) in line for the worker
 * that answers its key. 0, or -1 when memory runs out (raw is freed). */
static int conn_wait(jp_http_server *s, conn *c, char *raw, size_t len) {
    if (!(c->key = strdup(s->key))) {
        free(raw);
        return -1;
    }
    c->raw = raw;
    c->raw_len = len;
    c->worker = -1;
    c->sent_to_worker = 0;
    c->seq = ++s->seq;
    c->state = CONN_WAIT;
    c->since_ms = now_ms();
    c->deadline_ms = c->since_ms + s->opt.work_timeout_ms; /* to be sent to a worker */
    schedule(s);
    return 0;
}

/* Answers the request whose head is c->buf[0, len) (status: a reply decided before parsing, or 0).
 * A request the isolation claims waits for its worker; anything else is answered by the handler
 * now, and the response goes out as far as the socket takes it; the rest is sent by later ticks. */
static void answer(jp_http_server *s, conn *c, size_t len, int status) {
    exchange ex;
    memset(&ex, 0, sizeof ex);
    jp_http_response *r = &s->resp;
    resp_reset(r);
    char *raw = status == 0 && s->workers ? malloc(len) : NULL; /* the head as sent: parsing cuts it */
    if (raw) memcpy(raw, c->buf, len);
    if (status == 0) jp_http_parse_head(&s->rules, s->headers, c->buf, len, &ex);
    else ex.status = status;
    c->method = ex.req.method;
    c->range = ex.range;
    c->set_cookie = ex.set_cookie;
    conn_log_start(s, c, &ex);
    if (ex.status != 0) jp_http_respond_status(r, ex.status);
    else if (ex.req.method == JP_HTTP_OPTIONS) respond_preflight(s, r);
    else if (s->workers && s->opt.isolate(s->opt.ctx, &ex.req, s->key, sizeof s->key) == 1) {
        s->key[sizeof s->key - 1] = '\0';
        if (raw && conn_wait(s, c, raw, len) == 0) return;
        raw = NULL;
        jp_http_respond_status(r, 503);
    } else if (s->opt.handler && s->opt.handler(s->opt.ctx, &ex.req, r) < 0) {
        resp_reset(r);
        jp_http_respond_status(r, 500);
    }
    free(raw);
    respond(s, c, r);
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
 * that stopped). A connection just accepted, whose head is on its way, a response that is flowing
 * or a request waiting for its worker keeps its slot: under a burst of clients newcomers wait in
 * the backlog instead. */
static int can_give_way(const conn *c, int64_t now) {
    return c->state == CONN_DRAIN || (c->state != CONN_WAIT && now - c->since_ms >= STALL_MS);
}

/* The slot for a new connection: a free one, else that of the connection that has waited longest
 * among those that may give way (the caller closes it), else NULL: the newcomer waits in the
 * listen backlog until a slot frees. Idle pre-connects and stalled readers never lock the others
 * out for longer than STALL_MS; connections being served are never cut for a newcomer. */
static conn *slot_for_new(jp_http_server *s, int64_t now) {
    conn *oldest = NULL;
    for (size_t i = 0; i < s->max_conns; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0) return c;
        if (can_give_way(c, now) && (!oldest || c->since_ms < oldest->since_ms)) oldest = c;
    }
    return oldest;
}

/* Accepts what is waiting while there are slots for it, at most max_conns per call. Each
 * connection gets its own buffers (the request head and the response head) while it is open. */
static void accept_clients(jp_http_server *s) {
    for (size_t i = 0; i < s->max_conns; i++) {
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
        if (!(c->buf = malloc(s->opt.max_header_bytes + 1 + OUT_HEAD_MAX))) {
            close(fd);
            s->accept_resume_ms = now + TICK_MS;
            return;
        }
        c->head = c->buf + s->opt.max_header_bytes + 1;
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
 * browser pre-connect), 408 otherwise. Waiting for a worker that never became free: 503. Sending:
 * the client stopped reading, closed (only its own response is lost). Draining: closed. */
static void expire_conns(jp_http_server *s, int64_t now) {
    for (size_t i = 0; i < s->max_conns; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0 || now < c->deadline_ms) continue;
        if (c->state == CONN_HEAD && c->len > 0) answer(s, c, 0, 408);
        else if (c->state == CONN_WAIT) {
            char why[WHY_MAX];
            snprintf(why, sizeof why, "no worker process became free within %u s (all busy); try again",
                     (unsigned)(s->opt.work_timeout_ms / 1000));
            fail_wait(s, c, 503, why);
        } else conn_close(s, c);
    }
}

/* Adds the workers' sockets to the poll set; lowers *timeout to the nearest worker deadline, or to
 * REAP_MS while a worker that ended is still to be reaped. */
static size_t poll_workers(jp_http_server *s, size_t n, int64_t now, int64_t *timeout) {
    for (size_t i = 0; s->workers && i < s->opt.max_workers; i++) {
        worker *w = &s->workers[i];
        if (w->proc.pid == 0) continue;
        if (!worker_alive(w)) {
            if (*timeout > REAP_MS) *timeout = REAP_MS;
            continue;
        }
        s->fds[n] = (struct pollfd){.fd = w->proc.sock, .events = POLLIN};
        s->owner[n++] = -2 - (int)i;
        if (w->busy && w->deadline_ms - now < *timeout) *timeout = w->deadline_ms > now ? w->deadline_ms - now : 0;
    }
    return n;
}

/* One wait for activity and the work it brings. Every connection is in poll at once: for its
 * request head (POLLIN), for room to send its response (POLLOUT) or draining after an error
 * (POLLIN); one waiting for a worker only for errors; so is every worker's socket, and the
 * listening socket while a newcomer would find a slot (else newcomers wait in the backlog); the
 * wait is at most TICK_MS, less when a deadline is nearer. A complete head is answered at once:
 * a request the isolation claims goes to its worker process (the loop never waits for one), any
 * other is answered by the handler now; the response goes out as far as the socket takes it, the
 * rest as the client reads, at most TURN_CHUNKS sends per wake-up. A client that stops reading
 * holds only its own connection, until its write deadline (timeout_ms without progress) or,
 * STALL_MS without progress, a newcomer needs its slot. Then newcomers are accepted, workers that
 * ended are reaped, and workers and connections past their deadline expire. Memory stays
 * bounded: one response per connection, and nothing more is read from a connection while its
 * response is pending. */
static int serve_tick(jp_http_server *s, jp_error *err) {
    size_t n = 0;
    int64_t now = now_ms(), timeout = TICK_MS;
    for (size_t i = 0; i < s->max_conns; i++) {
        conn *c = &s->conns[i];
        if (c->fd < 0) continue;
        short events = c->state == CONN_SEND ? POLLOUT : c->state == CONN_WAIT ? 0 : POLLIN;
        s->fds[n] = (struct pollfd){.fd = c->fd, .events = events};
        s->owner[n++] = (int)i;
        if (c->deadline_ms - now < timeout) timeout = c->deadline_ms - now > 0 ? c->deadline_ms - now : 0;
    }
    if (now >= s->accept_resume_ms && has_room(s, now)) {
        s->fds[n] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
        s->owner[n++] = -1;
    }
    n = poll_workers(s, n, now, &timeout);
    int r = poll(s->fds, (nfds_t)n, (int)timeout);
    if (r < 0 && errno != EINTR) return jp_error_set(err, JP_ERR_IO, 0, "http: poll: %s", strerror(errno));
    for (size_t i = 0; r > 0 && i < n; i++) {
        int who = s->owner[i];
        if (!s->fds[i].revents) continue;
        if (who == -1) {
            accept_clients(s);
        } else if (who <= -2) {
            worker *w = &s->workers[-2 - who];
            if (w->proc.sock == s->fds[i].fd) worker_read(s, w);
        } else {
            conn *c = &s->conns[who];
            if (c->fd != s->fds[i].fd) continue; /* closed (or replaced) earlier in this tick */
            if (c->state == CONN_HEAD) conn_read(s, c);
            else if (c->state == CONN_SEND) conn_send(s, c);
            else if (c->state == CONN_WAIT) conn_close(s, c); /* an error: the client is gone */
            else conn_drain(s, c);
        }
    }
    now = now_ms();
    if (s->workers) tend_workers(s, now);
    expire_conns(s, now);
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
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
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

/* How many connections the open-file limit leaves room for besides the workers' sockets: each
 * connection may hold its socket and a body file. */
static size_t conns_for_fd_limit(size_t wanted, unsigned workers) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return wanted;
    rlim_t reserved = FDS_RESERVED + 2 * (rlim_t)workers;
    size_t room = rl.rlim_cur > reserved ? (size_t)((rl.rlim_cur - reserved) / FDS_PER_CONN) : 0;
    if (room < MIN_CONNS) room = MIN_CONNS;
    return wanted < room ? wanted : room;
}

/* The connection slots, the poll set, the I/O buffer and, with isolation, the worker slots. A
 * connection's own buffers are allocated when it is accepted. */
static int alloc_buffers(jp_http_server *s, jp_error *err) {
    unsigned workers = s->opt.isolate ? s->opt.max_workers : 0;
    size_t polled = s->max_conns + 1 + workers;
    s->io = malloc(IO_CHUNK);
    s->conns = calloc(s->max_conns, sizeof *s->conns);
    s->fds = calloc(polled, sizeof *s->fds);
    s->owner = calloc(polled, sizeof *s->owner);
    if (workers) s->workers = calloc(workers, sizeof *s->workers);
    if (!s->io || !s->conns || !s->fds || !s->owner || (workers && !s->workers))
        return jp_error_set(err, JP_ERR_NOMEM, 0, "http: out of memory");
    for (size_t i = 0; i < s->max_conns; i++) {
        s->conns[i].fd = s->conns[i].file_fd = -1;
        s->conns[i].worker = -1;
    }
    for (size_t i = 0; i < workers; i++) s->workers[i].proc.sock = -1;
    return JP_OK;
}

/* A Content-Security-Policy goes into every answer's head: printable ASCII, and short enough to
 * leave room for the rest. */
static int check_csp_option(const char *csp, jp_error *err) {
    size_t n = strlen(csp);
    int ok = n > 0 && n <= 1024;
    for (size_t i = 0; ok && i < n; i++) ok = csp[i] >= 0x20 && csp[i] < 0x7f;
    return ok ? JP_OK : jp_error_set(err, JP_ERR_ARG, 0, "http: the Content-Security-Policy needs 1 to 1024 printable bytes");
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
    if (!s->opt.content_security_policy) s->opt.content_security_policy = DEFAULT_CSP;
    if (check_csp_option(s->opt.content_security_policy, err) != JP_OK) {
        free(s);
        return JP_ERR_ARG;
    }
    if (!s->opt.max_workers) s->opt.max_workers = DEFAULT_WORKERS;
    if (s->opt.max_workers > MAX_WORKERS) s->opt.max_workers = MAX_WORKERS;
    if (!s->opt.work_timeout_ms) s->opt.work_timeout_ms = DEFAULT_WORK_MS;
    if (s->opt.work_timeout_ms > 86400000u) s->opt.work_timeout_ms = 86400000u;
    s->max_conns = conns_for_fd_limit(s->opt.max_conns ? s->opt.max_conns : DEFAULT_MAX_CONNS,
                                      s->opt.isolate ? s->opt.max_workers : 0);
    s->resp.body_fd = -1;
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
    for (size_t i = 0; i < srv->max_conns; i++) conn_close(srv, &srv->conns[i]);
    stop_workers(srv);
    return rc;
}

void jp_http_server_close(jp_http_server *srv) {
    if (!srv) return;
    for (size_t i = 0; srv->conns && i < srv->max_conns; i++) conn_close(srv, &srv->conns[i]);
    stop_workers(srv);
    if (srv->listen_fd >= 0) close(srv->listen_fd);
    resp_clear_body(&srv->resp);
    free(srv->conns);
    free(srv->workers);
    free(srv->fds);
    free(srv->owner);
    free(srv->io);
    free(srv);
}
