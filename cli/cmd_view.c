/* cmd_view.c - `jaxprof view`: serves the newest run's trace to Perfetto UI, starts TensorBoard, or
 * serves the built-in viewer's JSON API over every run. */
#include "jaxprof/jaxprof_serve.h"
#include "commands.h"
#include "options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ui.perfetto.dev sets its Content-Security-Policy from ui/src/frontend/index.ts
 * (setupContentSecurityPolicy): connect-src allows 'self', a few Google hosts and, for local
 * servers, only http://127.0.0.1:9001 and ws://127.0.0.1:9001 (trace_processor_shell --httpd's
 * port; ws://127.0.0.1:8037 and :9167 are adb/device proxies). Its url= loader fetch()es the
 * trace, so the page can only load one served from http://127.0.0.1:9001 - not "localhost",
 * not another port. Perfetto's own tools/open_trace_in_ui serves on 9001 for that reason ("the
 * only one allowed by the CSP"). Hence the default port and the warning when it is taken. */
enum { PERFETTO_PORT = 9001, TENSORBOARD_PORT = 6006, BUILTIN_PORT = 8791, PORT_TRIES = 20, NAME_MAX_LEN = 200,
       TOKEN_BYTES = 16 /* 128 random bits behind a non-loopback builtin viewer */ };
#define PERFETTO_ORIGIN "https://ui.perfetto.dev"

enum { UI_PERFETTO = 0, UI_TENSORBOARD, UI_BUILTIN };

typedef struct view_args {
    const char *dir[1]; /* the log directory searched for runs */
    int ui;          /* UI_PERFETTO, UI_TENSORBOARD or UI_BUILTIN */
    size_t port;     /* the port asked for, or SIZE_MAX for the UI's default */
    const char *host; /* --bind: the address to bind (builtin UI only), or NULL for 127.0.0.1 */
    int no_browser;  /* 1: only print the link */
    int with_parent; /* 1: stop when the process that started us is gone (--exit-with-parent) */
    size_t workers;   /* --workers: analysis processes at once (builtin UI), 0 for the default */
    int64_t time_limit_ps; /* --time-limit: how long one analysis request may take, -1 for the default */
    size_t connections; /* --connections: connections at once, 0 for the default */
} view_args;

/* What the Perfetto server serves (one file under one path) and when it stops. */
typedef struct served_file {
    const char *file;                 /* the trace on disk */
    char url_path[NAME_MAX_LEN + 16]; /* "/<run name>.pftrace" */
    pid_t parent;                     /* stop once getppid() differs from it; 0: never */
} served_file;

/* Set by SIGINT/SIGTERM, read by the server between connections. The library keeps no state;
 * a signal handler can only reach a flag of static storage, so this one lives in the CLI. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static int should_stop(void *ctx) {
    const served_file *f = ctx;
    return stop_signal != 0 || (f->parent != 0 && getppid() != f->parent);
}

/* The port asked for, or -1 for the UI's default. */
static long port_asked(const view_args *a) { return a->port == SIZE_MAX ? -1 : (long)a->port; }

static int set_ui(const cli_opt *o, const char *flag, const char *v, void *args) {
    (void)o;
    int *ui = &((view_args *)args)->ui;
    if (strcmp(v, "builtin") == 0) *ui = UI_BUILTIN;
    else if (strcmp(v, "perfetto") == 0) *ui = UI_PERFETTO;
    else if (strcmp(v, "tensorboard") == 0) *ui = UI_TENSORBOARD;
    else return fprintf(stderr, "jaxprof: %s needs perfetto, tensorboard or builtin\n", flag), -1;
    return 0;
}

#define V(field) offsetof(view_args, field)

static const cli_opt VIEW_OPTS[] = {
    {"--ui", NULL, NULL, "builtin|perfetto|tensorboard", set_ui, V(ui), 0, -1, 0,
     "the built-in viewer (default, offline), Perfetto UI or TensorBoard"},
    {"--port", NULL, NULL, "N", cli_set_count, V(port), 65535, -1, 0, "port (default: a free one; Perfetto needs 9001)"},
    {"--bind", NULL, "--host", "ADDR", cli_set_string, V(host), 1, -1, 0,
     "address to listen on (built-in viewer only; default 127.0.0.1);\n"
     "0.0.0.0 shares it, guarded by an access token"},
    {"--no-browser", NULL, NULL, NULL, cli_set_flag, V(no_browser), 1, -1, 0, "print the link, open nothing"},
    {"--workers", NULL, NULL, "N", cli_set_bounded, V(workers), 256, -1, 0,
     "analysis processes at once (built-in viewer; default 4): each run is\n"
     "analysed in a process of its own, so a crash fails only that run"},
    {"--time-limit", NULL, NULL, "DUR", cli_set_duration, V(time_limit_ps), PS_PER_S, -1, 0,
     "how long one analysis request may take before its process is stopped\n"
     "(30s, 2min; bare numbers are seconds; default 120s)"},
    {"--connections", NULL, NULL, "N", cli_set_bounded, V(connections), 65536, -1, 0, "connections at once (default 1024)"},
    {"--exit-with-parent", NULL, NULL, NULL, cli_set_flag, V(with_parent), 1, -1, 0, NULL}, /* for jaxprof.viewers */
    {NULL},
};

const cli_command CLI_VIEW = {
    .name = "view", .args = "[DIR]", .synopsis = "[--ui builtin|perfetto|tensorboard] [--port N] [--bind ADDR] [--no-browser]",
    .summary = "serve the runs in a viewer until Ctrl-C: the built-in one (default,\n"
               "offline) on 127.0.0.1; --bind 0.0.0.0 shares it, guarded by a token",
    .text = "Serves the runs under DIR (default ./profiles) in a viewer until Ctrl-C: the built-in one\n"
            "(default, offline) on 127.0.0.1; --bind 0.0.0.0 shares it, guarded by a token.\n",
    .opts = VIEW_OPTS, .pos_off = V(dir), .max_pos = 1,
};

static int parse_view_args(int argc, char **argv, view_args *a) {
    *a = (view_args){{CLI_DEFAULT_DIR}, UI_BUILTIN, SIZE_MAX, NULL, 0, 0, 0, -1, 0};
    if (cli_parse(&CLI_VIEW, -1, argc, argv, a) < 0) return -1;
    if (a->time_limit_ps != -1 && (a->time_limit_ps < PS_PER_MS || a->time_limit_ps > 86400 * PS_PER_S)) {
        fprintf(stderr, "jaxprof: --time-limit needs a duration from 1ms to 86400s\n");
        return -1;
    }
    /* Perfetto UI's Content-Security-Policy only reaches http://127.0.0.1:9001 (see above), and
     * TensorBoard has no token to guard it with: only the built-in viewer may be exposed. */
    if ((a->workers || a->time_limit_ps != -1) && a->ui != UI_BUILTIN) {
        fprintf(stderr, "jaxprof: --workers and --time-limit are for --ui builtin only\n");
        return -1;
    }
    if (a->host && a->ui != UI_BUILTIN) {
        fprintf(stderr, "jaxprof: --bind is for --ui builtin only: ui.perfetto.dev can only load traces from "
                        "127.0.0.1, and TensorBoard has no access token (run tensorboard --host yourself to "
                        "expose it)\n");
        return -1;
    }
    return 0;
}

/* Finds the newest run under dir into *runs; returns 0, or the exit code (1 none, 2 error). */
static int find_latest(const char *dir, jp_runs *runs, const jp_run **run) {
    jp_error err;
    if (jp_runs_find(runs, dir, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    *run = jp_runs_latest_view(runs);
    if (*run) return 0;
    fprintf(stderr, "jaxprof: no profile (*.xplane.pb) under %s\n", dir);
    return 1;
}

/* Directory of this executable into buf (no trailing slash); 0, or -1 when unknown. */
static int exe_dir(char *buf, size_t cap) {
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash) return -1;
    *slash = '\0';
    return 0;
}

/* "<dir>/<name>" into buf when it is an executable file: 1, else 0. */
static int executable_at(char *buf, size_t cap, const char *dir, size_t dir_len, const char *name) {
    if (dir_len == 0 || (size_t)snprintf(buf, cap, "%.*s/%s", (int)dir_len, dir, name) >= cap) return 0;
    struct stat st;
    return stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0;
}

/* Finds name on $PATH, then beside this executable (the virtual environment we run from). */
static int find_tool(const char *name, char *buf, size_t cap) {
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t len = strcspn(p, ":");
        if (executable_at(buf, cap, p, len, name)) return 1;
        p += len + (p[len] == ':');
    }
    char dir[PATH_MAX];
    return exe_dir(dir, sizeof dir) == 0 && executable_at(buf, cap, dir, strlen(dir), name);
}

/* Starts xdg-open on url without waiting for it: the child forks the opener and exits at once,
 * so the opener is never our child and never a zombie. Output goes to /dev/null. */
static void open_browser(const char *url) {
    char opener[PATH_MAX];
    if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")) return;
    if (!find_tool("xdg-open", opener, sizeof opener)) return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (fork() == 0) {
            FILE *null = freopen("/dev/null", "w", stdout);
            (void)null;
            if (freopen("/dev/null", "w", stderr)) execl(opener, "xdg-open", url, (char *)NULL);
            _exit(127);
        }
        _exit(0);
    }
    if (pid > 0) waitpid(pid, NULL, 0); /* the intermediate child, which exits at once */
}

/* 1 when path is a regular file modified after every xplane of run. */
static int trace_is_fresh(const char *path, const jp_run *run) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return 0;
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + (int64_t)st.st_mtim.tv_nsec;
    return mtime > run->mtime_ns;
}

/* Writes <run>/perfetto_trace.pftrace unless a fresh one is there; the path goes into buf. */
static int ensure_trace(const jp_run *run, char *buf, size_t cap) {
    const char *name = jp_trace_default_name(JP_TRACE_PERFETTO);
    if ((size_t)snprintf(buf, cap, "%s/%s", run->path, name) >= cap) {
        fprintf(stderr, "jaxprof: %s: path too long\n", run->path);
        return EXIT_USAGE;
    }
    if (trace_is_fresh(buf, run)) return 0;
    fprintf(stderr, "jaxprof: exporting %s to %s\n", run->path, buf);
    jp_trace_options opt = jp_trace_options_default();
    opt.format = JP_TRACE_PERFETTO;
    opt.gzip_level = 0;
    opt.max_inflate = cli_max_inflate();
    opt.temp = cli_cleanup_on_signal(); /* until install_signals gives SIGINT/SIGTERM to the server */
    jp_error err;
    if (jp_trace_export(run->path, buf, &opt, NULL, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    return 0;
}

/* "/<name>.pftrace" with every byte outside [A-Za-z0-9._-] as '_': a link needing no escaping. */
static void url_path_for(const char *run_name, char *out, size_t cap) {
    char name[NAME_MAX_LEN + 1];
    size_t n = 0;
    for (; run_name[n] && n < NAME_MAX_LEN; n++) {
        char c = run_name[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("._-", c);
        name[n] = ok ? c : '_';
    }
    name[n] = '\0';
    snprintf(out, cap, "/%s.pftrace", n ? name : "trace");
}

static int serve_one_file(void *ctx, const jp_http_request *req, jp_http_response *resp) {
    const served_file *f = ctx;
    if (strcmp(req->path, f->url_path) != 0) return jp_http_respond_status(resp, 404);
    return jp_http_respond_file(resp, f->file, "application/octet-stream", NULL);
}

static void log_request(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "jaxprof: %s\n", line);
}

/* Raises the soft open-file limit to the hard one: each connection may hold two descriptors, and
 * a 1024 soft limit would cap the server at about 500 connections. */
static void raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the server's poll() returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Binds 127.0.0.1 on port (or the next free one) for Perfetto UI, allowing its origin. */
static int open_server(jp_http_server **srv, served_file *f, long port, size_t connections) {
    jp_http_options o = jp_http_options_default();
    o.port = (uint16_t)(port < 0 ? PERFETTO_PORT : port);
    o.port_tries = PORT_TRIES;
    o.cors_origin = PERFETTO_ORIGIN;
    o.max_conns = (unsigned)connections;
    o.handler = serve_one_file;
    o.ctx = f;
    o.should_stop = should_stop;
    o.log = log_request;
    jp_error err;
    if (jp_http_server_open(srv, &o, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    unsigned bound = jp_http_server_port(*srv);
    if (bound == PERFETTO_PORT) return 0;
    if (o.port == PERFETTO_PORT)
        fprintf(stderr, "jaxprof: port %d is taken; serving on %u instead\n", PERFETTO_PORT, bound);
    fprintf(stderr, "jaxprof: warning: ui.perfetto.dev only loads traces from http://127.0.0.1:%d (its "
                    "Content-Security-Policy) and may refuse this link; serve on %d, or open the file in the UI "
                    "with \"Open trace file\"\n", PERFETTO_PORT, PERFETTO_PORT);
    return 0;
}

static int view_perfetto(const view_args *a) {
    jp_runs runs;
    const jp_run *run;
    int rc = find_latest(a->dir[0], &runs, &run);
    served_file f;
    char trace[PATH_MAX];
    jp_http_server *srv = NULL;
    if (rc == 0) rc = ensure_trace(run, trace, sizeof trace);
    if (rc == 0) {
        f.file = trace;
        f.parent = a->with_parent ? getppid() : 0;
        url_path_for(run->name, f.url_path, sizeof f.url_path);
        install_signals();
        raise_fd_limit();
        rc = open_server(&srv, &f, port_asked(a), a->connections);
    }
    if (rc == 0) {
        char url[sizeof f.url_path + 32];
        snprintf(url, sizeof url, "http://127.0.0.1:%u%s", (unsigned)jp_http_server_port(srv), f.url_path);
        printf("Serving %s on %s (Ctrl-C to stop)\nOpen: %s/#!/?url=%s\n", trace, url, PERFETTO_ORIGIN, url);
        fflush(stdout);
        char link[sizeof url + 64];
        snprintf(link, sizeof link, "%s/#!/?url=%s", PERFETTO_ORIGIN, url);
        if (!a->no_browser) open_browser(link);
        jp_error err;
        if (jp_http_server_run(srv, &err) != JP_OK) {
            cli_error(err.msg);
            rc = EXIT_USAGE;
        }
    }
    jp_http_server_close(srv);
    jp_runs_deinit(&runs);
    return rc;
}

/* A free port on 127.0.0.1 from port on, found by binding it for a moment (the tool binds it
 * again right after: a race only with another program starting in the same instant). */
static int free_port(long port, unsigned *out) {
    jp_http_options o = jp_http_options_default();
    o.port = (uint16_t)port;
    o.port_tries = PORT_TRIES;
    jp_http_server *probe;
    jp_error err;
    if (jp_http_server_open(&probe, &o, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    *out = jp_http_server_port(probe);
    jp_http_server_close(probe);
    return 0;
}

static void print_install_hint(void) {
    char dir[PATH_MAX], python[PATH_MAX];
    const char *py = "python3";
    if (exe_dir(dir, sizeof dir) == 0 && executable_at(python, sizeof python, dir, strlen(dir), "python3"))
        py = python;
    fprintf(stderr, "jaxprof: TensorBoard is not installed. Install it with: %s -m pip install tensorboard "
                    "tensorboard-plugin-profile\n", py);
}

/* Replaces this process with TensorBoard (or the standalone xprof server) on dir. xprof's server
 * (openxla/xprof plugin/xprof/server.py) takes --logdir and --port only: it binds every interface
 * and also opens a gRPC port (50051), so it is the fallback, with a warning. */
static int view_tensorboard(const view_args *a) {
    jp_runs runs;
    const jp_run *run;
    int rc = find_latest(a->dir[0], &runs, &run);
    jp_runs_deinit(&runs);
    if (rc != 0) return rc;
    char tool[PATH_MAX];
    int is_tb = find_tool("tensorboard", tool, sizeof tool);
    if (!is_tb && !find_tool("xprof", tool, sizeof tool)) {
        print_install_hint();
        return 1;
    }
    unsigned port;
    long wanted = port_asked(a) < 0 ? TENSORBOARD_PORT : port_asked(a);
    if ((rc = free_port(wanted, &port)) != 0) return rc;
    if (wanted != 0 && port != (unsigned)wanted)
        fprintf(stderr, "jaxprof: port %ld is taken; using %u\n", wanted, port);
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%u", port);
    if (!is_tb) fprintf(stderr, "jaxprof: TensorBoard not found; starting %s, which listens on every network "
                                "interface\n", tool);
    printf("Starting %s --logdir %s on port %s (Ctrl-C to stop)\nOpen: http://127.0.0.1:%s/\n", tool, a->dir[0],
           port_s, port_s);
    fflush(stdout);
    if (is_tb) execl(tool, "tensorboard", "--logdir", a->dir[0], "--host", "127.0.0.1", "--port", port_s, (char *)NULL);
    else execl(tool, "xprof", "--logdir", a->dir[0], "--port", port_s, (char *)NULL);
    fprintf(stderr, "jaxprof: cannot run %s: %s\n", tool, strerror(errno));
    return EXIT_USAGE;
}

/* What the built-in viewer's server hands its callbacks. */
typedef struct builtin_ctx {
    jp_viewer *viewer; /* answers every request */
    pid_t parent;      /* stop once getppid() differs from it; 0: never */
} builtin_ctx;

static int builtin_handle(void *ctx, const jp_http_request *req, jp_http_response *resp) {
    return jp_viewer_handle(((builtin_ctx *)ctx)->viewer, req, resp);
}

/* Every request that needs a run's analysis is answered in that run's worker process: a crash,
 * a hang or running out of memory there fails only that run's requests. */
static int builtin_isolate(void *ctx, const jp_http_request *req, char *key, size_t cap) {
    return jp_viewer_route(((builtin_ctx *)ctx)->viewer, req, key, cap);
}

static void builtin_failed(void *ctx, const char *key, int status, const char *why, jp_http_response *resp) {
    jp_viewer_respond_failed(((builtin_ctx *)ctx)->viewer, key, status, why, resp);
}

static int builtin_should_stop(void *ctx) {
    const builtin_ctx *b = ctx;
    return stop_signal != 0 || (b->parent != 0 && getppid() != b->parent);
}

/* 1 when host is a loopback address ("localhost", 127.0.0.0/8, ::1): no token is needed there. */
static int is_loopback(const char *host) {
    unsigned char addr[16];
    if (strcmp(host, "localhost") == 0) return 1;
    if (inet_pton(AF_INET, host, addr) == 1) return addr[0] == 127;
    return inet_pton(AF_INET6, host, addr) == 1 && memcmp(addr, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0;
}

/* 1 when host is the any-address (0.0.0.0 or ::), which names no machine a link could use. */
static int is_wildcard(const char *host) {
    unsigned char addr[16], zero[16] = {0};
    if (inet_pton(AF_INET, host, addr) == 1) return memcmp(addr, zero, 4) == 0;
    return inet_pton(AF_INET6, host, addr) == 1 && memcmp(addr, zero, 16) == 0;
}

/* TOKEN_BYTES from getrandom(2) as lowercase hex into out (2 * TOKEN_BYTES + 1 bytes); 0 or -1. */
static int make_token(char *out) {
    unsigned char raw[TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* "http://<name>:<port>/" into buf: the bound address, this machine's name for the any-address,
 * brackets around an IPv6 literal. */
static void base_url(char *buf, size_t cap, const char *host, unsigned port) {
    char name[256];
    if (is_wildcard(host) && gethostname(name, sizeof name) == 0) name[sizeof name - 1] = '\0';
    else snprintf(name, sizeof name, "%s", host);
    snprintf(buf, cap, strchr(name, ':') ? "http://[%s]:%u/" : "http://%s:%u/", name, port);
}

/* The server's options for the built-in viewer on host; a non-loopback host gets a fresh token in
 * token (2 * TOKEN_BYTES + 1 bytes) and a warning. allowed (2 slots) lets a loopback address such
 * as 127.0.0.2 name itself in the Host field. 0, or the exit code. */
static int builtin_options(jp_http_options *o, const view_args *a, const char *host, char *token,
                           const char **allowed) {
    o->host = host;
    o->port = (uint16_t)(port_asked(a) < 0 ? BUILTIN_PORT : port_asked(a));
    o->port_tries = PORT_TRIES;
    allowed[0] = host;
    allowed[1] = NULL;
    o->allowed_hosts = allowed;
    if (is_loopback(host)) return 0;
    if (make_token(token) != 0) {
        fprintf(stderr, "jaxprof: getrandom: %s\n", strerror(errno));
        return EXIT_USAGE;
    }
    o->token = token;
    fprintf(stderr, "jaxprof: warning: serving on %s, not only on this machine: anyone who can reach the port "
                    "and has the link (it holds an access token) can read these profiles\n", host);
    return 0;
}

/* Serves the built-in viewer's API over every run under the directory on 127.0.0.1, or on --host
 * (with an access token when that is not a loopback address). */
static int view_builtin(const view_args *a) {
    jp_runs runs;
    const jp_run *latest;
    int found = find_latest(a->dir[0], &runs, &latest); /* like the other viewers: exit 1 with no run */
    jp_runs_deinit(&runs);
    if (found != 0) return found;
    jp_error err;
    builtin_ctx b = {NULL, a->with_parent ? getppid() : 0};
    if (jp_viewer_new(&b.viewer, a->dir[0], &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    char peaks[PATH_MAX];
    jp_viewer_set_max_inflate(b.viewer, cli_max_inflate());
    if (jp_viewer_set_cpu_peaks_file(b.viewer, cli_cpu_peaks_file(peaks, sizeof peaks)) != JP_OK) {
        fprintf(stderr, "jaxprof: out of memory\n");
        jp_viewer_free(b.viewer);
        return EXIT_USAGE;
    }
    jp_http_options o = jp_http_options_default();
    const char *host = a->host ? a->host : "127.0.0.1";
    char token[2 * TOKEN_BYTES + 1] = "";
    const char *allowed[2];
    if (builtin_options(&o, a, host, token, allowed) != 0) {
        jp_viewer_free(b.viewer);
        return EXIT_USAGE;
    }
    o.handler = builtin_handle;
    o.ctx = &b;
    o.should_stop = builtin_should_stop;
    o.log = log_request;
    o.content_security_policy = JP_VIEWER_CSP;
    o.isolate = builtin_isolate;
    o.isolated_failed = builtin_failed;
    o.max_workers = (unsigned)a->workers;
    o.work_timeout_ms = a->time_limit_ps < 0 ? 0 : (uint32_t)(a->time_limit_ps / PS_PER_MS);
    o.max_conns = (unsigned)a->connections;
    raise_fd_limit();
    install_signals();
    jp_http_server *srv = NULL;
    int rc = jp_http_server_open(&srv, &o, &err) == JP_OK ? 0 : EXIT_USAGE;
    if (rc == 0) {
        unsigned port = jp_http_server_port(srv);
        if (o.port != 0 && port != o.port) fprintf(stderr, "jaxprof: port %u is taken; serving on %u instead\n", o.port, port);
        char url[512], local[512];
        base_url(url, sizeof url, host, port);
        printf("Serving the jaxprof viewer for %s on %s (Ctrl-C to stop)\nOpen: %s%s%s\n", a->dir[0], url, url,
               token[0] ? "?token=" : "", token);
        fflush(stdout);
        /* The browser here reaches a wildcard bind on loopback: this machine's name may not resolve. */
        const char *here = !is_wildcard(host) ? host : strchr(host, ':') ? "::1" : "127.0.0.1";
        base_url(local, sizeof local, here, port);
        if (token[0]) snprintf(local + strlen(local), sizeof local - strlen(local), "?token=%s", token);
        if (!a->no_browser) open_browser(local);
        if (jp_http_server_run(srv, &err) != JP_OK) rc = EXIT_USAGE;
    }
    if (rc != 0) cli_error(err.msg);
    jp_http_server_close(srv);
    jp_viewer_free(b.viewer);
    return rc;
}

int cmd_view(int argc, char **argv) {
    view_args a;
    if (parse_view_args(argc, argv, &a) != 0) return EXIT_USAGE;
    if (a.ui == UI_BUILTIN) return view_builtin(&a);
    return a.ui == UI_TENSORBOARD ? view_tensorboard(&a) : view_perfetto(&a);
}
