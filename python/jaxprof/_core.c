/* _core.c - the Python extension jaxprof._core: converts between Python objects and libjaxprof
 * calls; no logic of its own (jaxprof.annotate, the one part with state, is _annotate.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_annotate.h"
#include "jaxprof/jaxprof.h"

/* Raises the Python exception that matches a jp_status, with the library's message. */
static PyObject *raise_jp_error(const jp_error *err) {
    PyObject *type = PyExc_RuntimeError;
    switch (err->code) {
    case JP_ERR_NOT_FOUND: type = PyExc_FileNotFoundError; break;
    case JP_ERR_IO: type = PyExc_OSError; break;
    case JP_ERR_NOMEM: return PyErr_NoMemory();
    case JP_ERR_ARG: type = PyExc_ValueError; break;
    case JP_ERR_TRUNCATED:
    case JP_ERR_CORRUPT: type = PyExc_ValueError; break;
    default: break;
    }
    PyErr_SetString(type, err->msg);
    return NULL;
}

/* JAXPROF_MAX_INFLATE as jp_load_options.max_inflate (0: the library's defaults, also for a value
 * jp_size_parse refuses). Read with the GIL held, before a load lets it go: os.environ changes the
 * environment under the GIL too, so a Python thread setting it never races a load (the library
 * itself reads no environment). */
static uint64_t env_max_inflate(void) {
    const char *v = getenv("JAXPROF_MAX_INFLATE");
    uint64_t size;
    return v && jp_size_parse(v, &size) == 0 ? size : 0;
}

/* A tuple of n file-system names (host names, file names). */
static PyObject *fs_names(const char *const *names, uint32_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (uint32_t i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(names[i]);
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
    }
    return t;
}

/* A run as (path, name, mtime_ns, bytes, hosts, files, summarized_hosts): jp_run_write_json's
 * members and the xplane file names (runs.py). */
static PyObject *run_to_tuple(const jp_run *run) {
    PyObject *hosts = fs_names(run->hosts, run->n_files);
    PyObject *files = hosts ? fs_names(run->files, run->n_files) : NULL;
    PyObject *summarized = files ? fs_names(run->summarized, run->n_summarized) : NULL;
    if (!summarized) {
        Py_XDECREF(hosts);
        Py_XDECREF(files);
        return NULL;
    }
    return Py_BuildValue("(ssLKNNN)", run->path, run->name, (long long)run->mtime_ns,
                         (unsigned long long)run->bytes, hosts, files, summarized);
}

PyDoc_STRVAR(find_runs_doc,
             "find_runs(log_dir) -> list[tuple[path, name, mtime_ns, bytes, hosts, files, summarized_hosts]]\n\n"
             "Every directory under log_dir holding *.xplane.pb[.gz] files, oldest first.");

static PyObject *find_runs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj)) return NULL;
    jp_runs runs;
    jp_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jp_runs_find(&runs, PyBytes_AS_STRING(path_obj), &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc != JP_OK) {
        jp_runs_deinit(&runs);
        return raise_jp_error(&err);
    }
    PyObject *list = PyList_New((Py_ssize_t)runs.count);
    for (size_t i = 0; list && i < runs.count; i++) {
        PyObject *item = run_to_tuple(&runs.runs[i]);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    jp_runs_deinit(&runs);
    return list;
}

/* What a library call wrote to an open_memstream(buf, len) stream, as str (rc JP_OK), else the
 * call's error raised; closes the stream and frees its buffer either way. */
static PyObject *written_text(FILE *out, char **buf, size_t *len, int rc, jp_error *err) {
    fclose(out); /* only now are *buf and *len final */
    PyObject *result = rc == JP_OK ? PyUnicode_DecodeUTF8(*buf, (Py_ssize_t)*len, "replace") : raise_jp_error(err);
    free(*buf);
    return result;
}

/* ---- Profile: a loaded, analysed profile; every view is rendered by the library ------------- */

typedef struct {
    PyObject_HEAD
    jp_profile *profile;
} ProfileObject;

static int profile_init(ProfileObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path", "host", "device", "cpu_peaks_file", "data", "summaries", NULL};
    PyObject *path_obj;
    const char *host = NULL, *device = NULL, *peaks = NULL;
    Py_buffer data = {0}; /* data: a serialized XSpace in memory; path then only names it */
    int summaries = 0;    /* jp_load_options.use_summaries */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|zzzy*p", kwlist, PyUnicode_FSConverter, &path_obj, &host, &device,
                                     &peaks, &data, &summaries))
        return -1;
    jp_load_options opt = {.host = host, .device = device, .cpu_peaks_file = peaks, .max_inflate = env_max_inflate(),
                           .use_summaries = summaries};
    jp_error err;
    jp_profile *p = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = data.buf ? jp_profile_parse(&p, data.buf, (size_t)data.len, NULL, &opt, &err)
                  : jp_profile_load(&p, PyBytes_AS_STRING(path_obj), &opt, &err);
    Py_END_ALLOW_THREADS
    if (data.buf) PyBuffer_Release(&data);
    Py_DECREF(path_obj);
    if (rc != JP_OK) {
        raise_jp_error(&err);
        return -1;
    }
    jp_profile_free(self->profile);
    self->profile = p;
    return 0;
}

static void profile_dealloc(ProfileObject *self) {
    jp_profile_free(self->profile);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int format_from_name(const char *name) {
    if (strcmp(name, "text") == 0) return JP_FORMAT_TEXT;
    if (strcmp(name, "json") == 0) return JP_FORMAT_JSON;
    if (strcmp(name, "csv") == 0) return JP_FORMAT_CSV;
    if (strcmp(name, "summary") == 0) return JP_FORMAT_SUMMARY;
    return -1;
}

PyDoc_STRVAR(profile_render_doc,
             "render(section, format='text', top=0, sort=None, filter=None, width=0, columns=None,\n"
             "       module=None, group=None, table=None) -> str\n\n"
             "One section ('report', 'ops', 'steps', ...) as text, 'json' or 'csv', exactly as the\n"
             "jaxprof command prints it; module: memory's one module in detail (jaxprof memory --module);\n"
             "group: the ops summed by 'category', 'module', 'scope' or 'source'; table: comm's or\n"
             "launch's second table alone ('comm_instances', 'launch_streams'; jaxprof CMD --table).");

static PyObject *profile_render(ProfileObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"section", "format", "top", "sort", "filter", "width", "columns", "module", "group",
                             "table", NULL};
    const char *section_name, *format_name = "text", *sort = NULL, *filter = NULL, *columns = NULL, *module = NULL;
    const char *group = NULL, *table = NULL;
    Py_ssize_t top = 0;
    int width = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|snzzizzzz", kwlist, &section_name, &format_name, &top, &sort,
                                     &filter, &width, &columns, &module, &group, &table))
        return NULL;
    int section = jp_section_from_name(section_name), format = format_from_name(format_name);
    if (section < 0 || format < 0 || top < 0 || width < 0) {
        PyErr_Format(PyExc_ValueError, "unknown section '%s' or format '%s'", section_name, format_name);
        return NULL;
    }
    if (!self->profile) {
        PyErr_SetString(PyExc_RuntimeError, "Profile was not initialised");
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) return PyErr_NoMemory();
    jp_view view = {.top = (size_t)top, .sort = sort, .filter = filter, .width = width, .columns = columns,
                   .module = module, .group = group, .table = table};
    jp_error err;
    int rc = jp_render(jp_profile_analysis(self->profile), section, format, &view, out, &err);
    return written_text(out, &buf, &len, rc, &err);
}

static PyMethodDef profile_methods[] = {
    {"render", (PyCFunction)(void (*)(void))profile_render, METH_VARARGS | METH_KEYWORDS, profile_render_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProfileType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jaxprof._core.Profile",
    .tp_doc = PyDoc_STR("Profile(path, host=None, device=None): a profile loaded and analysed by libjaxprof."),
    .tp_basicsize = sizeof(ProfileObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)profile_init,
    .tp_dealloc = (destructor)profile_dealloc,
    .tp_methods = profile_methods,
};

/* ---- Sql: SQL over a profile or an exported database (jp_sql) -------------------------------- */

typedef struct {
    PyObject_HEAD
    jp_sql *sql;
} SqlObject;

static int sql_init(SqlObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path", "host", "device", NULL};
    PyObject *path_obj;
    const char *host = NULL, *device = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|zz", kwlist, PyUnicode_FSConverter, &path_obj, &host, &device))
        return -1;
    jp_load_options opt = {.host = host, .device = device, .max_inflate = env_max_inflate()};
    jp_error err;
    jp_sql *q = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jp_sql_open(&q, PyBytes_AS_STRING(path_obj), &opt, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc != JP_OK) {
        raise_jp_error(&err);
        return -1;
    }
    jp_sql_close(self->sql);
    self->sql = q;
    return 0;
}

static void sql_dealloc(SqlObject *self) {
    jp_sql_close(self->sql);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(sql_run_doc, "run(query, format='json') -> str: every statement's rows as jaxprof sql writes them.");

static PyObject *sql_run(SqlObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"query", "format", NULL};
    const char *query, *format_name = "json";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|s", kwlist, &query, &format_name)) return NULL;
    int format = format_from_name(format_name);
    if (format < 0 || format == JP_FORMAT_SUMMARY) {
        PyErr_Format(PyExc_ValueError, "unknown format '%s'", format_name);
        return NULL;
    }
    if (!self->sql) {
        PyErr_SetString(PyExc_RuntimeError, "Sql was not initialised");
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) return PyErr_NoMemory();
    jp_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jp_sql_run(self->sql, query, format, 0, out, &err);
    Py_END_ALLOW_THREADS
    return written_text(out, &buf, &len, rc, &err);
}

static PyMethodDef sql_methods[] = {
    {"run", (PyCFunction)(void (*)(void))sql_run, METH_VARARGS | METH_KEYWORDS, sql_run_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SqlType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jaxprof._core.Sql",
    .tp_doc = PyDoc_STR("Sql(path, host=None, device=None): SQL over a profile or a database jaxprof exported."),
    .tp_basicsize = sizeof(SqlObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sql_init,
    .tp_dealloc = (destructor)sql_dealloc,
    .tp_methods = sql_methods,
};

/* ---- trace export --------------------------------------------------------------------------- */

PyDoc_STRVAR(export_trace_doc,
             "export_trace(path, out, format='chrome', gzip_level=-1, window_ps=(0, 0), steps=(0, -1),\n"
             "             min_duration_ps=0, host=None) -> dict\n\n"
             "Writes the profile's timeline with libjaxprof's exporter; returns its counts.");

static PyObject *export_trace(PyObject *self, PyObject *args, PyObject *kwds) {
    (void)self;
    static char *kwlist[] = {"path", "out", "format", "gzip_level", "window_ps", "steps", "min_duration_ps",
                             "host", NULL};
    PyObject *path_obj, *out_obj;
    const char *format = "chrome", *host = NULL;
    jp_trace_options opt = jp_trace_options_default();
    long long w0 = 0, w1 = 0, s0 = 0, s1 = -1, min_dur = 0;
    int level = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O&|si(LL)(LL)Lz", kwlist, PyUnicode_FSConverter, &path_obj,
                                     PyUnicode_FSConverter, &out_obj, &format, &level, &w0, &w1, &s0, &s1, &min_dur,
                                     &host))
        return NULL;
    PyObject *result = NULL;
    if (strcmp(format, "chrome") != 0 && strcmp(format, "perfetto") != 0) {
        PyErr_Format(PyExc_ValueError, "format must be 'chrome' or 'perfetto', not '%s'", format);
        goto done;
    }
    opt.format = strcmp(format, "perfetto") == 0 ? JP_TRACE_PERFETTO : JP_TRACE_CHROME;
    opt.gzip_level = level;
    opt.window_start_ps = w0, opt.window_end_ps = w1;
    opt.first_step = s0, opt.last_step = s1;
    opt.min_duration_ps = min_dur;
    opt.host = host;
    opt.max_inflate = env_max_inflate();
    jp_trace_stats st;
    jp_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jp_trace_export(PyBytes_AS_STRING(path_obj), PyBytes_AS_STRING(out_obj), &opt, &st, &err);
    Py_END_ALLOW_THREADS
    if (rc != JP_OK) {
        raise_jp_error(&err);
        goto done;
    }
    result = Py_BuildValue("{sKsKsKsKsKsKsK}", "events_in", (unsigned long long)st.events_in, "events_out",
                           (unsigned long long)st.events_out, "events_cut", (unsigned long long)st.events_cut,
                           "derived", (unsigned long long)st.derived, "flows", (unsigned long long)st.flows,
                           "overlap_tracks", (unsigned long long)st.overlap_tracks, "bytes",
                           (unsigned long long)st.bytes);
done:
    Py_DECREF(path_obj);
    Py_DECREF(out_obj);
    return result;
}

PyDoc_STRVAR(default_trace_path_doc,
             "default_trace_path(path, format='chrome') -> str\n\n"
             "Where export_trace writes by default: a fixed name in the run directory path resolves to.");

static PyObject *default_trace_path(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj;
    const char *format = "chrome";
    if (!PyArg_ParseTuple(args, "O&|s", PyUnicode_FSConverter, &path_obj, &format)) return NULL;
    char buf[4096];
    jp_error err;
    int rc = jp_trace_default_path(PyBytes_AS_STRING(path_obj),
                                   strcmp(format, "perfetto") == 0 ? JP_TRACE_PERFETTO : JP_TRACE_CHROME, buf,
                                   sizeof buf, &err);
    Py_DECREF(path_obj);
    return rc == JP_OK ? PyUnicode_DecodeFSDefault(buf) : raise_jp_error(&err);
}

PyDoc_STRVAR(xplane_host_len_doc,
             "xplane_host_len(name) -> int\n\n"
             "Length of the host name in an xplane file's name (<host>.xplane.pb[.gz]), 0 when name is not one.");

static PyObject *xplane_host_len(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *name_obj;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &name_obj)) return NULL;
    size_t n = jp_xplane_host_len(PyBytes_AS_STRING(name_obj));
    Py_DECREF(name_obj);
    return PyLong_FromSize_t(n);
}

PyDoc_STRVAR(cpu_peaks_path_doc,
             "cpu_peaks_path(cache_dir, xdg_cache_home, home) -> str\n\n"
             "The CPU calibration file (an empty argument is skipped): FileNotFoundError when all are empty.");

static PyObject *cpu_peaks_path(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *dirs[3] = {NULL, NULL, NULL};
    if (!PyArg_ParseTuple(args, "O&O&O&", PyUnicode_FSConverter, &dirs[0], PyUnicode_FSConverter, &dirs[1],
                          PyUnicode_FSConverter, &dirs[2]))
        return NULL;
    char buf[4096];
    jp_error err;
    int rc = jp_cpu_peaks_path(PyBytes_AS_STRING(dirs[0]), PyBytes_AS_STRING(dirs[1]), PyBytes_AS_STRING(dirs[2]),
                               buf, sizeof buf, &err);
    for (int i = 0; i < 3; i++) Py_DECREF(dirs[i]);
    return rc == JP_OK ? PyUnicode_DecodeFSDefault(buf) : raise_jp_error(&err);
}

/* ---- diff: two profiles compared by the library --------------------------------------------- */

/* One comparison, run without the GIL: inputs, then the JSON document it produced. */
typedef struct {
    const char *base_path, *new_path; /* borrowed from the caller's bytes objects */
    jp_load_options load;             /* host filter for both runs */
    jp_diff_options opt;              /* row thresholds (0: the library's defaults) */
    jp_diff_gate gate;                /* both < 0: no gate object in the document */
    char *json;                       /* the document (open_memstream's buffer, free()d by the caller) */
    size_t len;
    jp_error err;
} diff_job;

/* Renders the diff as JSON into job->json (with the gate object when a limit is set), byte for
 * byte what `jaxprof diff --json [--fail-if-...]` prints. */
static int render_diff(diff_job *job, const jp_diff *d) {
    FILE *out = open_memstream(&job->json, &job->len);
    if (!out) {
        job->err.code = JP_ERR_NOMEM;
        snprintf(job->err.msg, sizeof job->err.msg, "out of memory writing the diff");
        return JP_ERR_NOMEM;
    }
    int gated = job->gate.max_step_slowdown_pct >= 0 || job->gate.max_op_slowdown_pct >= 0;
    jp_view view = {0};
    int rc = jp_diff_render_gated(d, gated ? &job->gate : NULL, JP_FORMAT_JSON, &view, out, &job->err);
    if (fclose(out) != 0 && rc == JP_OK) {
        job->err.code = JP_ERR_NOMEM;
        snprintf(job->err.msg, sizeof job->err.msg, "out of memory writing the diff");
        rc = JP_ERR_NOMEM;
    }
    return rc;
}

/* Loads both profiles, compares them and renders the result; frees everything but job->json. */
static int run_diff(diff_job *job) {
    jp_profile *base = NULL, *new_run = NULL;
    jp_diff *d = NULL;
    int rc = jp_profile_load(&base, job->base_path, &job->load, &job->err);
    if (rc == JP_OK) rc = jp_profile_load(&new_run, job->new_path, &job->load, &job->err);
    if (rc == JP_OK)
        rc = jp_diff_new(&d, jp_profile_analysis(base), jp_profile_analysis(new_run), &job->opt, &job->err);
    if (rc == JP_OK) rc = render_diff(job, d);
    if (d) jp_diff_free(d);
    jp_profile_free(new_run);
    jp_profile_free(base);
    return rc;
}

PyDoc_STRVAR(diff_doc,
             "diff(base_path, new_path, host=None, min_change_pct=0, min_share_pct=0,\n"
             "     max_step_slowdown_pct=-1, max_op_slowdown_pct=-1) -> str\n\n"
             "Compares two profiles (log dir, run dir or xplane each) and returns the JSON document of\n"
             "`jaxprof diff --json`; with a gate limit >= 0 (percent) it carries the \"gate\" object too.");

static PyObject *diff(PyObject *self, PyObject *args, PyObject *kwds) {
    (void)self;
    static char *kwlist[] = {"base_path", "new_path", "host", "min_change_pct", "min_share_pct",
                             "max_step_slowdown_pct", "max_op_slowdown_pct", NULL};
    PyObject *base_obj, *new_obj;
    diff_job job = {.load.op_spread = 1}; /* each op's noise comes from its spread across the steps */
    job.gate.max_step_slowdown_pct = -1, job.gate.max_op_slowdown_pct = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O&|zdddd", kwlist, PyUnicode_FSConverter, &base_obj,
                                     PyUnicode_FSConverter, &new_obj, &job.load.host, &job.opt.min_change_pct,
                                     &job.opt.min_share_pct, &job.gate.max_step_slowdown_pct,
                                     &job.gate.max_op_slowdown_pct))
        return NULL;
    PyObject *result = NULL;
    if (!isfinite(job.opt.min_change_pct) || !isfinite(job.opt.min_share_pct) || job.opt.min_change_pct < 0 ||
        job.opt.min_share_pct < 0 || !isfinite(job.gate.max_step_slowdown_pct) ||
        !isfinite(job.gate.max_op_slowdown_pct)) {
        PyErr_SetString(PyExc_ValueError, "diff thresholds must be finite and min_* must be >= 0");
        goto done;
    }
    job.base_path = PyBytes_AS_STRING(base_obj), job.new_path = PyBytes_AS_STRING(new_obj);
    job.load.max_inflate = env_max_inflate();
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run_diff(&job);
    Py_END_ALLOW_THREADS
    result = rc == JP_OK ? PyUnicode_DecodeUTF8(job.json, (Py_ssize_t)job.len, "replace") : raise_jp_error(&job.err);
done:
    free(job.json);
    Py_DECREF(base_obj);
    Py_DECREF(new_obj);
    return result;
}

PyDoc_STRVAR(sections_doc,
             "sections() -> list[tuple[name, summary, flags]]\n\n"
             "The section registry in order (jp_section_get): each section's name, one-line summary and\n"
             "its set of flags: 'in_report', 'report_all', 'whole_run', 'takes_module', 'tables',\n"
             "'no_csv', 'split_note'.");

static PyObject *sections(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    static const struct { unsigned bit; const char *name; } FLAGS[] = {
        {JP_SECTION_IN_REPORT, "in_report"},       {JP_SECTION_REPORT_ALL, "report_all"},
        {JP_SECTION_WHOLE_RUN, "whole_run"},       {JP_SECTION_TAKES_MODULE, "takes_module"},
        {JP_SECTION_TABLES, "tables"},             {JP_SECTION_NO_CSV, "no_csv"},
        {JP_SECTION_SPLIT_NOTE, "split_note"},
    };
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < JP_SECTION_COUNT; i++) {
        const jp_section_def *d = jp_section_get(i);
        PyObject *flags = PyFrozenSet_New(NULL), *row = NULL;
        for (size_t k = 0; flags && k < sizeof FLAGS / sizeof FLAGS[0]; k++) {
            PyObject *name = (d->flags & FLAGS[k].bit) ? PyUnicode_FromString(FLAGS[k].name) : NULL;
            if ((d->flags & FLAGS[k].bit) && (!name || PySet_Add(flags, name) != 0)) Py_CLEAR(flags);
            Py_XDECREF(name);
        }
        if (flags) row = Py_BuildValue("(ssN)", d->name, d->summary, flags);
        if (!row || PyList_Append(list, row) != 0) Py_CLEAR(list);
        Py_XDECREF(row);
    }
    return list;
}

PyDoc_STRVAR(steps_parse_doc,
             "steps_parse(spec) -> tuple[first, last]\n\n"
             "A step range as every jaxprof command reads it (jp_steps_parse): 'N', 'A:B' (inclusive), 'A:' or\n"
             "':B' (an open end is None). ValueError says what is wrong.");

static PyObject *steps_parse(PyObject *self, PyObject *args) {
    (void)self;
    const char *spec;
    if (!PyArg_ParseTuple(args, "s", &spec)) return NULL;
    int64_t first, last;
    jp_error err;
    if (jp_steps_parse(spec, &first, &last, &err) != JP_OK) return raise_jp_error(&err);
    PyObject *a = first == INT64_MIN ? Py_NewRef(Py_None) : PyLong_FromLongLong((long long)first);
    PyObject *b = last == INT64_MAX ? Py_NewRef(Py_None) : PyLong_FromLongLong((long long)last);
    return a && b ? Py_BuildValue("(NN)", a, b) : (Py_XDECREF(a), Py_XDECREF(b), NULL);
}

PyDoc_STRVAR(duration_parse_doc,
             "duration_parse(text, bare_unit_s) -> float\n\n"
             "A duration as every jaxprof option reads it (jp_duration_parse): '500us', '10ms', '2s', '1min', or a\n"
             "bare number in units of bare_unit_s seconds; in seconds. ValueError when it is not one.");

static PyObject *duration_parse(PyObject *self, PyObject *args) {
    (void)self;
    const char *text;
    double bare_s;
    if (!PyArg_ParseTuple(args, "sd", &text, &bare_s)) return NULL;
    int64_t ps;
    if (!(bare_s > 0 && bare_s <= 60) || jp_duration_parse(text, (int64_t)llround(bare_s * 1e12), &ps) != 0) {
        PyErr_Format(PyExc_ValueError, "'%s' is not a duration (500us, 10ms, 2s, 1min)", text);
        return NULL;
    }
    return PyFloat_FromDouble((double)ps / 1e12);
}

static PyMethodDef core_methods[] = {
    {"_annotate_setup", (PyCFunction)(void (*)(void))ann_setup, METH_FASTCALL, ann_setup_doc},
    {"cpu_peaks_path", cpu_peaks_path, METH_VARARGS, cpu_peaks_path_doc},
    {"default_trace_path", default_trace_path, METH_VARARGS, default_trace_path_doc},
    {"diff", (PyCFunction)(void (*)(void))diff, METH_VARARGS | METH_KEYWORDS, diff_doc},
    {"export_trace", (PyCFunction)(void (*)(void))export_trace, METH_VARARGS | METH_KEYWORDS, export_trace_doc},
    {"find_runs", find_runs, METH_VARARGS, find_runs_doc},
    {"duration_parse", duration_parse, METH_VARARGS, duration_parse_doc},
    {"xplane_host_len", xplane_host_len, METH_VARARGS, xplane_host_len_doc},
    {"sections", sections, METH_NOARGS, sections_doc},
    {"steps_parse", steps_parse, METH_VARARGS, steps_parse_doc},
    {NULL, NULL, 0, NULL},
};

/* The module's state is annotate's (_annotate.c); the bindings here keep none. */
static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "jaxprof._core", "The C core of jaxprof (libjaxprof).", sizeof(ann_state), core_methods,
    NULL, ann_module_traverse, ann_module_clear, ann_module_free,
};

PyMODINIT_FUNC PyInit__core(void); /* the only exported symbol */
PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&ProfileType) < 0 || PyType_Ready(&SqlType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m && PyModule_AddStringConstant(m, "__version__", JP_VERSION) != 0) Py_CLEAR(m);
    if (m && PyModule_AddIntConstant(m, "JSON_SCHEMA_VERSION", JP_JSON_SCHEMA_VERSION) != 0) Py_CLEAR(m);
    Py_INCREF(&ProfileType);
    if (m && PyModule_AddObject(m, "Profile", (PyObject *)&ProfileType) != 0) {
        Py_DECREF(&ProfileType);
        Py_CLEAR(m);
    }
    Py_INCREF(&SqlType);
    if (m && PyModule_AddObject(m, "Sql", (PyObject *)&SqlType) != 0) {
        Py_DECREF(&SqlType);
        Py_CLEAR(m);
    }
    if (m && ann_module_init(m) != 0) Py_CLEAR(m);
    return m;
}
