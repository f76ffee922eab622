/* cmd_view.c - `jaxprof view`: serves the newest run's trace to Perfetto UI, starts TensorBoard, or
 * serves the built-in viewer's JSON API over every run. */
#include "jaxprof/jaxprof_serve.h"
#include "commands.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
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
    const char *dir; /* the log directory searched for runs */
    int ui;          /* UI_PERFETTO, UI_TENSORBOARD or UI_BUILTIN */
    long port;       /* the port asked for, or -1 for the UI's default */
    const char *host; /* --host: the address to bind (builtin UI only), or NULL for 127.0.0.1 */
    int no_browser;  /* 1: only print the link */
    int with_parent; /* 1: stop when the process that started us is gone (--exit-with-parent) */
    size_t workers;   /* --workers: analysis processes at once (builtin UI), 0 for the default */
    size_t time_limit_s; /* --time-limit: seconds one analysis request may take, 0 for the default */
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

static int parse_view_args(int argc, char **argv, view_args *a) {
    *a = (view_args){".", UI_BUILTIN, -1, NULL, 0, 0, 0, 0, 0};
    int have_dir = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        size_t n;
        if (strcmp(arg, "--no-browser") == 0) a->no_browser = 1;
        else if (strcmp(arg, "--exit-with-parent") == 0) a->with_parent = 1; /* for jaxprof.viewers */
        else if (strcmp(arg, "--ui") == 0) {
            if (!next || (strcmp(next, "perfetto") != 0 && strcmp(next, "tensorboard") != 0 &&
                          strcmp(next, "builtin") != 0)) {
                fprintf(stderr, "jaxprof: --ui needs perfetto, tensorboard or builtin\n");
                return -1;
            }
            a->ui = strcmp(next, "tensorboard") == 0 ? UI_TENSORBOARD
                    : strcmp(next, "builtin") == 0  ? UI_BUILTIN
                                                    : UI_PERFETTO;
            i++;
        } else if (strcmp(arg, "--port") == 0) {
            if (cli_parse_count(arg, next, &n) != 0) return -1;
            if (n > 65535) {
                fprintf(stderr, "jaxprof: --port needs a number from 0 to 65535\n");
                return -1;
            }
            a->port = (long)n;
            i++;
        } else if (strcmp(arg, "--workers") == 0 || strcmp(arg, "--time-limit") == 0 ||
                   strcmp(arg, "--connections") == 0) {
            size_t *to = arg[2] == 'w' ? &a->workers : arg[2] == 't' ? &a->time_limit_s : &a->connections;
            size_t most = arg[2] == 'w' ? 256 : arg[2] == 't' ? 86400 : 65536;
            if (cli_parse_count(arg, next, &n) != 0) return -1;
            if (n < 1 || n > most) {
                fprintf(stderr, "jaxprof: %s needs a number from 1 to %zu\n", arg, most);
                return -1;
            }
            *to = n;
            i++;
        } else if (strcmp(arg, "--host") == 0) {
            if (!next || !*next) {
                fprintf(stderr, "jaxprof: --host needs an address (e.g. 0.0.0.0)\n");
                return -1;
            }
            a->host = next;
            i++;
        } else if (arg[0] != '-' && !have_dir) a->dir = arg, have_dir = 1;
        else {
            fprintf(stderr, "jaxprof: bad option '%s' (view [DIR] [--ui perfetto|tensorboard|builtin] [--port N] "
                            "[--host ADDR] [--no-browser] [--workers N] [--time-limit S] [--connections N])\n", arg);
            return -1;
        }
    }
    /* Perfetto UI's Content-Security-Policy only reaches http://127.0.0.1:9001 (see above), and
     * TensorBoard has no token to guard it with: only the built-in viewer may be exposed. */
    if ((a->workers || a->time_limit_s) && a->ui != UI_BUILTIN) {
        fprintf(stderr, "jaxprof: --workers and --time-limit are for --ui builtin only\n");
        return -1;
    }
    if (a->host && a->ui != UI_BUILTIN) {
        fprintf(stderr, "jaxprof: --host is for --ui builtin only: ui.perfetto.dev can only load traces from "
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
    int rc = find_latest(a->dir, &runs, &run);
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
        rc = open_server(&srv, &f, a->port, a->connections);
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
    int rc = find_latest(a->dir, &runs, &run);
    jp_runs_deinit(&runs);
    if (rc != 0) return rc;
    char tool[PATH_MAX];
    int is_tb = find_tool("tensorboard", tool, sizeof tool);
    if (!is_tb && !find_tool("xprof", tool, sizeof tool)) {
        print_install_hint();
        return 1;
    }
    unsigned port;
    long wanted = a->port < 0 ? TENSORBOARD_PORT : a->port;
    if ((rc = free_port(wanted, &port)) != 0) return rc;
    if (wanted != 0 && port != (unsigned)wanted)
        fprintf(stderr, "jaxprof: port %ld is taken; using %u\n", wanted, port);
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%u", port);
    if (!is_tb) fprintf(stderr, "jaxprof: TensorBoard not found; starting %s, which listens on every network "
                                "interface\n", tool);
    printf("Starting %s --logdir %s on port %s (Ctrl-C to stop)\nOpen: http://127.0.0.1:%s/\n", tool, a->dir,
           port_s, port_s);
    fflush(stdout);
    if (is_tb) execl(tool, "tensorboard", "--logdir", a->dir, "--host", "127.0.0.1", "--port", port_s, (char *)NULL);
    else execl(tool, "xprof", "--logdir", a->dir, "--port", port_s, (char *)NULL);
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
    o->port = (uint16_t)(a->port < 0 ? BUILTIN_PORT : a->port);
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
    int found = find_latest(a->dir, &runs, &latest); /* like the other viewers: exit 1 with no run */
    jp_runs_deinit(&runs);
    if (found != 0) return found;
    jp_error err;
    builtin_ctx b = {NULL, a->with_parent ? getppid() : 0};
    if (jp_viewer_new(&b.viewer, a->dir, &err) != JP_OK) {
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
    o.work_timeout_ms = (uint32_t)(a->time_limit_s * 1000);
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
        printf("Serving the jaxprof viewer for %s on %s (Ctrl-C to stop)\nOpen: %s%s%s\n", a->dir, url, url,
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
