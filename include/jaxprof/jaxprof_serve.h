/* jaxprof_serve.h - libjaxprof's HTTP server (jp_http_*) and the built-in viewer's JSON API over it
 * (jp_viewer_*), kept apart from the profile API of jaxprof.h as zstd keeps zdict.h. */
#ifndef JAXPROF_SERVE_H
#define JAXPROF_SERVE_H

#include "jaxprof.h" /* beside this header, in the tree and installed alike */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * HTTP serving (jp_http_*).
 * ------------------------------------------------------------------------------------------- */

/* A small HTTP/1.1 server for local viewers, reusable by any output that serves files or JSON.
 * GET, HEAD and OPTIONS only (anything else: 405). One thread polls every connection (up to
 * max_conns, 1024 by default) with deadlines of its own: the request head must come within
 * timeout_ms, each write must make progress within timeout_ms; when every slot is taken, a
 * newcomer takes the slot of one idle for a second (no head yet, or a reader that stopped), so
 * idle or slow clients never stall the others. Every response closes its connection. Requests are
 * checked before the handler sees them: head size (431), syntax and percent-encoding (400), dot
 * segments (403), and a Host header naming a loopback address or an allowed name with the bound
 * port (403: defeats DNS rebinding). OPTIONS is answered by the server (CORS and Private Network
 * Access preflight). Files are sent with Content-Length and a single "Range: bytes=" (206/416).
 * Token mode (jp_http_options.token set, for a server reachable from other machines): every
 * request, OPTIONS included, must carry "token=<token>" in its query or the cookie
 * "jaxprof_token=<token>" (compared in constant time), else 403 before the method is looked at;
 * an answer to a request that showed the token in its query sets that cookie (HttpOnly,
 * SameSite=Strict, Path=/) so a page's relative fetches need no token, and every answer says
 * "Referrer-Policy: no-referrer". The Host check then accepts any name, still with the bound port:
 * a DNS-rebinding page does not know the token.
 * Every answer carries "X-Content-Type-Options: nosniff", "X-Frame-Options: DENY" and a
 * Content-Security-Policy (content_security_policy, by default one that allows nothing).
 * Isolation (isolate set): a request for which isolate() names a key is answered by handler in a
 * worker process for that key, forked from the server's process (which must then be single-
 * threaded) and kept for the key's later requests, one request at a time, first come first
 * served; the poll loop never waits for a worker, so a slow or failing answer holds only the
 * requests of its own key. At most max_workers live at once (a key without one takes the slot of
 * the least recently used idle worker, else waits). A worker that crashes, exits or is killed (by
 * the system for memory, or by the server past work_timeout_ms on one request) fails the request
 * it was answering and those queued behind it: isolated_failed words the answer (500); the next
 * request of that key starts a new worker. A request that waits work_timeout_ms for a worker to
 * take it gets 503 the same way. The body comes back through a memfd and is sent like a file.
 * A server is not thread-safe: one thread opens, runs and closes it; distinct servers are
 * independent. No global state. */

typedef enum jp_http_method { JP_HTTP_GET = 0, JP_HTTP_HEAD, JP_HTTP_OPTIONS } jp_http_method;

typedef struct jp_http_header {
    const char *name;  /* as sent (compare case-insensitively), NUL-terminated */
    const char *value; /* without surrounding blanks, NUL-terminated */
} jp_http_header;

/* One checked request, borrowed by the handler for the duration of the call. */
typedef struct jp_http_request {
    int method;                    /* jp_http_method: GET or HEAD (the server answers OPTIONS) */
    const char *path;              /* percent-decoded, starts with '/'; never holds a "." or ".."
                                    * segment, NUL, backslash or control byte */
    const char *query;             /* the raw text after '?' (still encoded); "" when none */
    const char *host;              /* the Host header, already accepted */
    const jp_http_header *headers; /* every header field, in order */
    size_t n_headers;
} jp_http_request;

/* The value of header `name` (case-insensitive), or NULL. Borrowed from req. */
const char *jp_http_request_header(const jp_http_request *req, const char *name);

/* A response being built by a handler: opaque, filled with the functions below. It starts as
 * 404 Not Found; the last jp_http_respond_* call wins. */
typedef struct jp_http_response jp_http_response;

/* Answers status with a copy of len bytes of data. content_type is copied (NULL means
 * application/octet-stream); one with a control byte or over 127 bytes is JP_ERR_ARG (and 500). */
int jp_http_respond_bytes(jp_http_response *resp, int status, const char *content_type, const void *data,
                          size_t len, jp_error *err);
/* Answers with the regular file at path (copied; content_type as above), honouring a single byte
 * range. A file that cannot be opened gives 404, a link, directory or device 403 when sent. */
int jp_http_respond_file(jp_http_response *resp, const char *path, const char *content_type, jp_error *err);
/* Answers status with its reason phrase as a text/plain body ("404 Not Found\n"). */
int jp_http_respond_status(jp_http_response *resp, int status);
/* Adds the header line "name: value"; JP_ERR_ARG for CR, LF or a bad name, JP_ERR_LIMIT past 2 KiB
 * of added headers. */
int jp_http_response_header(jp_http_response *resp, const char *name, const char *value, jp_error *err);

/* Answers one GET or HEAD (HEAD gets the same headers without the body). A negative return sends
 * 500 whatever was filled in. */
typedef int (*jp_http_handler)(void *ctx, const jp_http_request *req, jp_http_response *resp);

typedef struct jp_http_options {
    const char *host;                 /* numeric address to bind, or "localhost"; NULL: 127.0.0.1 */
    uint16_t port;                    /* first port to try; 0 lets the system pick a free one */
    uint16_t port_tries;              /* ports port, port+1, ... tried while taken; 0 or 1: one */
    const char *cors_origin;          /* Access-Control-Allow-Origin: "*" or one origin; NULL: none */
    const char *const *allowed_hosts; /* Host names accepted besides 127.0.0.1, localhost and [::1]
                                       * (NULL-terminated; may be NULL); the port must match too */
    const char *token;                /* NULL: no token. Else the secret every request must show
                                       * (token mode above): 16 to 256 bytes of [0-9A-Za-z_-],
                                       * e.g. 32 hex digits from getrandom(2); else JP_ERR_ARG */
    uint32_t timeout_ms;              /* per connection: to send the request head, and for each write
                                       * to make progress; 0 means 10000 */
    size_t max_header_bytes;          /* request line + header fields; more gets 431; 0 means 16384 */
    jp_http_handler handler;          /* answers every accepted GET and HEAD */
    void *ctx;                        /* passed to handler, should_stop and log */
    int (*should_stop)(void *ctx);    /* nonzero ends jp_http_server_run; polled between connections
                                       * and at least every 200 ms; may be NULL */
    void (*log)(void *ctx, const char *line); /* one line per response ("GET /a 200 1234"); may be NULL */
    unsigned max_conns;               /* connections at once; 0 means 1024; fewer when the open-file
                                       * limit (RLIMIT_NOFILE) leaves no room for two descriptors each */
    const char *content_security_policy; /* sent with every answer; NULL: "default-src 'none'; ..." */
    /* Isolation (NULL: every request is answered in this process). 1 when req is to be answered in
     * the worker for the key written into key (cap bytes, NUL-terminated), else 0; called for each
     * accepted GET and HEAD in the server's process, so it must be quick. */
    int (*isolate)(void *ctx, const jp_http_request *req, char *key, size_t cap);
    /* Words the answer to an isolated request whose worker failed: status (500, or 503 when no
     * worker took it in time) and why ("killed by signal 11 (Segmentation fault)", "it took longer
     * than 120 s (the time limit) and was stopped"). NULL: text "<key> failed: <why>". */
    void (*isolated_failed)(void *ctx, const char *key, int status, const char *why, jp_http_response *resp);
    unsigned max_workers;             /* worker processes at once; 0 means 4 (at most 256) */
    uint32_t work_timeout_ms;         /* longest a worker may take over one request (it is killed
                                       * then), and longest a request waits for a worker; 0: 120000 */
} jp_http_options;

/* Options with every default (127.0.0.1, port 0, no CORS, no token, no handler: every GET gets 404). */
jp_http_options jp_http_options_default(void);

typedef struct jp_http_server jp_http_server;

/* Binds and listens (the port is taken when this returns, so a client may connect at once); opt
 * is copied, the strings it points to must outlive the server. JP_ERR_IO names the address when
 * every port tried is taken or the bind fails, JP_ERR_ARG for a host that is not an address or a
 * malformed token. */
int jp_http_server_open(jp_http_server **out, const jp_http_options *opt, jp_error *err);
/* The port actually bound. */
uint16_t jp_http_server_port(const jp_http_server *srv);
/* Serves until should_stop says so (JP_OK), or fails with JP_ERR_IO when the listening socket
 * does; every worker is stopped before it returns. Malformed requests get a 4xx and never end the loop. A signal handler that sets the flag
 * should_stop reads is enough: it interrupts the wait at once when installed without SA_RESTART. */
int jp_http_server_run(jp_http_server *srv, jp_error *err);
/* Closes the listening socket and every connection; frees srv. NULL is fine. */
void jp_http_server_close(jp_http_server *srv);

/* ---------------------------------------------------------------------------------------------
 * The built-in viewer (jp_viewer_*): a JSON API over jp_http for runs under a log directory, their
 * analyses, a level-of-detail timeline and the diff of two runs, each run decoded once and cached.
 * ------------------------------------------------------------------------------------------- */

/* The API's state: the log directory, the runs found there and a small LRU cache of decoded runs.
 * Not thread-safe: one jp_http server thread calls jp_viewer_handle. */

/* The Content-Security-Policy the viewer's pages satisfy (jp_http_options.content_security_policy):
 * scripts and styles from the server only (style attributes allowed: the pages set sizes and
 * colours inline), fetches to the server only, no frames, forms, plugins or other origins. */
#define JP_VIEWER_CSP                                                                                   \
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "        \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
typedef struct jp_viewer jp_viewer;

/* Lists the runs under log_dir (copied); JP_ERR_IO when it cannot be read. */
int jp_viewer_new(jp_viewer **out, const char *log_dir, jp_error *err);
void jp_viewer_free(jp_viewer *v);
/* The CPU calibration file runs are analysed with (jp_load_options.cpu_peaks_file; copied; NULL
 * for none). JP_ERR_NOMEM when the copy fails. */
int jp_viewer_set_cpu_peaks_file(jp_viewer *v, const char *path);
/* The inflate limit every run is read with (jp_load_options.max_inflate; 0: the defaults). */
void jp_viewer_set_max_inflate(jp_viewer *v, uint64_t max_inflate);

/* Answers one request of the API (a jp_http_handler body; v is the viewer):
 *   /                              {"api": [the endpoints]}
 *   /api/runs                      [{id, then jp_run_write_json's members: name, path, hosts (names),
 *                                  bytes, mtime_ms}] (path relative to log_dir)
 *   /api/run/<id>/<section>        jp_render(section, JSON); section: overview (= report), ops, steps,
 *                                  scopes, transfers, kernels, memory, compiles, findings
 *   /api/run/<id>/timeline         ?start_ms=&end_ms=&px=: jp_timeline_window
 *   /api/run/<id>/timeline/aggregate ?start_us=&end_us=[&tracks=3,5,8-12]: jp_timeline_aggregate
 *   /api/run/<id>/event            ?track=&index=: jp_timeline_event
 *   /api/diff                      ?base=<id>&new=<id>: jp_diff_render(JSON) of jp_diff_new over both
 *                                  cached analyses (the same id twice is allowed); the last answer
 *                                  is kept, as bytes, and sent again when asked the same
 * Every run endpoint and the diff take ?host=NAME (as jp_load_options.host). Ids are the hex of a
 * run's path relative to log_dir and only name runs jp_runs_find listed. Errors are {"error": "..."}
 * with 400, 404 or 500. Responses about a run carry "X-Jaxprof-Cache: hit" or "miss" (the diff: hit
 * when it is the kept answer). */
int jp_viewer_handle(jp_viewer *v, const jp_http_request *req, jp_http_response *resp);

/* Crash isolation (jp_http_options.isolate and isolated_failed, ctx the viewer): a request that
 * needs a run's analysis (a run endpoint of a listed run, a diff of two) names the worker that
 * holds it: "run <id>" or "diff <base id> <new id>" into key (cap bytes); returns 1, or 0 for what
 * this process answers itself at once (pages, /api, /api/runs, unknown runs, malformed ids). Lists
 * the runs again when the id is not known yet. A key longer than cap is cut (two runs may then
 * share a worker; each request still names its own run). */
int jp_viewer_route(jp_viewer *v, const jp_http_request *req, char *key, size_t cap);
/* The answer for a request of key whose worker failed: {"error": "analysis of RUN failed: WHY"}
 * (for a diff: "diff of BASE and NEW failed: WHY") with status. */
void jp_viewer_respond_failed(jp_viewer *v, const char *key, int status, const char *why, jp_http_response *resp);

#ifdef __cplusplus
}
#endif
#endif /* JAXPROF_SERVE_H */
