/* _core.c - the Python extension jaxprof._core: converts between Python objects and libjaxprof
 * calls; no logic of its own. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A run as (path, name, mtime_ns, bytes, hosts): jp_run_write_json's members (runs.py). */
static PyObject *run_to_tuple(const jp_run *run) {
    PyObject *hosts = PyTuple_New((Py_ssize_t)run->n_files);
    for (uint32_t i = 0; hosts && i < run->n_files; i++) {
        PyObject *h = PyUnicode_DecodeFSDefault(run->hosts[i]);
        if (!h) {
            Py_CLEAR(hosts);
            break;
        }
        PyTuple_SET_ITEM(hosts, (Py_ssize_t)i, h);
    }
    return hosts ? Py_BuildValue("(ssLKN)", run->path, run->name, (long long)run->mtime_ns,
                                 (unsigned long long)run->bytes, hosts)
                 : NULL;
}

PyDoc_STRVAR(find_runs_doc,
             "find_runs(log_dir) -> list[tuple[path, name, mtime_ns, bytes, hosts]]\n\n"
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

PyDoc_STRVAR(xplane_lines_doc,
             "xplane_lines(path) -> list[tuple[plane, line, line_id, n_events, total_duration_ps]]\n\n"
             "Decodes an .xplane.pb[.gz] with libjaxprof and lists every line with its event count.");

static PyObject *xplane_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj)) return NULL;
    jp_xspace *xs;
    jp_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jp_xspace_open(&xs, PyBytes_AS_STRING(path_obj), &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc != JP_OK) return raise_jp_error(&err);
    PyObject *list = PyList_New(0);
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    for (size_t p = 0; list && p < n_planes; p++) {
        for (size_t l = 0; l < planes[p].n_lines; l++) {
            const jp_line *line = &planes[p].lines[l];
            long long total = 0;
            for (size_t e = 0; e < line->n_events; e++) total += line->events[e].duration_ps;
            PyObject *item = Py_BuildValue("(s#s#LnL)", planes[p].name.ptr, (Py_ssize_t)planes[p].name.len,
                                           line->name.ptr, (Py_ssize_t)line->name.len, (long long)line->id,
                                           (Py_ssize_t)line->n_events, total);
            if (!item || PyList_Append(list, item) != 0) {
                Py_XDECREF(item);
                Py_CLEAR(list);
                break;
            }
            Py_DECREF(item);
        }
    }
    jp_xspace_close(xs);
    return list;
}

/* ---- Profile: a loaded, analysed profile; every view is rendered by the library ------------- */

typedef struct {
    PyObject_HEAD
    jp_profile *profile;
} ProfileObject;

static int profile_init(ProfileObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path", "host", "device", "cpu_peaks_file", NULL};
    PyObject *path_obj;
    const char *host = NULL, *device = NULL, *peaks = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|zzz", kwlist, PyUnicode_FSConverter, &path_obj, &host, &device,
                                     &peaks))
        return -1;
    jp_load_options opt = {.host = host, .device = device, .cpu_peaks_file = peaks};
    jp_error err;
    jp_profile *p = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = jp_profile_load(&p, PyBytes_AS_STRING(path_obj), &opt, &err);
    Py_END_ALLOW_THREADS
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
    return -1;
}

PyDoc_STRVAR(profile_render_doc,
             "render(section, format='text', top=0, sort=None, filter=None, width=0, columns=None) -> str\n\n"
             "One section ('report', 'ops', 'steps', ...) as text, 'json' or 'csv', exactly as the\n"
             "jaxprof command prints it.");

static PyObject *profile_render(ProfileObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"section", "format", "top", "sort", "filter", "width", "columns", NULL};
    const char *section_name, *format_name = "text", *sort = NULL, *filter = NULL, *columns = NULL;
    Py_ssize_t top = 0;
    int width = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|snzziz", kwlist, &section_name, &format_name, &top, &sort,
                                     &filter, &width, &columns))
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
    jp_view view = {(size_t)top, sort, filter, width, columns};
    jp_error err;
    int rc = jp_render(jp_profile_analysis(self->profile), section, format, &view, out, &err);
    fclose(out);
    PyObject *result = rc == JP_OK ? PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace") : raise_jp_error(&err);
    free(buf);
    return result;
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
    diff_job job = {0};
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

/* ---- annotate: a host TraceMe plus a jax.named_scope, with no Python on the fast path -------
 *
 * jaxprof.annotate is this type. Entering one asks two cheap questions:
 *   - is a profiler trace recording TraceMe events? jaxlib's TraceMe.is_enabled() (a C++ atomic
 *     read behind one nanobind call, ~15 ns), so traces started by jax.profiler directly, by
 *     jaxprof, or by a remote profiler client are all noticed;
 *   - is JAX tracing (jit/grad/vmap)? jax's trace_state_strong_ref.value is not an EvalTrace.
 * Only a yes costs anything: a TraceMe(name, **stats) entered on the host, and/or a
 * jax.named_scope(name) entered so traced ops carry the name. With both no, entering and exiting
 * allocate nothing and call no Python. annotate.py supplies the JAX objects (_annotate_setup). */

static struct {
    PyObject *traceme;     /* jaxlib's TraceMe type (what jax.profiler.TraceAnnotation subclasses) */
    PyObject *is_enabled;  /* TraceMe.is_enabled, or NULL: always emit the TraceMe */
    PyObject *named_scope; /* jax.named_scope */
    PyObject *trace_state; /* jax's trace_state_strong_ref (.value = the current trace), or NULL */
    PyObject *trace_get;   /* the getter of trace_state's value property, or NULL: getattr */
    PyObject *eval_trace;  /* jax's EvalTrace type: the current trace when JAX is not tracing */
    PyObject *wrap;        /* annotate.py's _wrap(fn, name, stats): the decorator */
    PyObject *str_value, *str_enter, *str_exit;
} ann;

/* 1 when the profiler records TraceMe events, 0 when not, -1 on error. */
static int ann_profiling(void) {
    if (!ann.is_enabled) return 1;
    PyObject *r = PyObject_CallNoArgs(ann.is_enabled);
    if (!r) return -1;
    int on = r == Py_True ? 1 : r == Py_False ? 0 : PyObject_IsTrue(r);
    Py_DECREF(r);
    return on;
}

/* 1 when JAX is tracing (a named scope names ops), 0 when not, -1 on error. */
static int ann_jax_tracing(void) {
    if (!ann.trace_state) return 1;
    PyObject *trace = ann.trace_get ? PyObject_Vectorcall(ann.trace_get, &ann.trace_state, 1, NULL)
                                    : PyObject_GetAttr(ann.trace_state, ann.str_value);
    if (!trace) return -1;
    int eval = Py_IS_TYPE(trace, (PyTypeObject *)ann.eval_trace) ? 1 : PyObject_IsInstance(trace, ann.eval_trace);
    Py_DECREF(trace);
    return eval < 0 ? -1 : !eval;
}

/* The exception in flight, taken out and put back (PyErr_Fetch is deprecated from 3.12). */
typedef struct {
    PyObject *type, *value, *tb;
} ann_exc;

static void ann_exc_fetch(ann_exc *e) {
#if PY_VERSION_HEX >= 0x030C0000
    e->value = PyErr_GetRaisedException();
    e->type = e->value ? Py_NewRef(Py_TYPE(e->value)) : NULL;
    e->tb = e->value ? PyException_GetTraceback(e->value) : NULL;
#else
    PyErr_Fetch(&e->type, &e->value, &e->tb);
    PyErr_NormalizeException(&e->type, &e->value, &e->tb);
    if (e->tb && e->value) PyException_SetTraceback(e->value, e->tb);
#endif
}

static void ann_exc_restore(ann_exc *e) {
#if PY_VERSION_HEX >= 0x030C0000
    Py_XDECREF(e->type);
    Py_XDECREF(e->tb);
    PyErr_SetRaisedException(e->value);
#else
    PyErr_Restore(e->type, e->value, e->tb);
#endif
}

/* Calls scope.__exit__(*exc), then tm.__exit__(*exc) (as nested `with`s would), either may be
 * NULL; steals both references. On error returns -1 with the first error set. */
static int ann_exit_both(PyObject *tm, PyObject *scope, PyObject *const exc[3]) {
    PyObject *objs[2] = {scope, tm};
    int rc = 0;
    ann_exc first = {NULL, NULL, NULL};
    for (int i = 0; i < 2; i++) {
        if (!objs[i]) continue;
        PyObject *call[5] = {NULL, objs[i], exc[0], exc[1], exc[2]};
        PyObject *r = PyObject_VectorcallMethod(ann.str_exit, call + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (r) {
            Py_DECREF(r);
        } else if (rc < 0) {
            PyErr_WriteUnraisable(objs[i]); /* keep the first error */
        } else {
            rc = -1;
            ann_exc_fetch(&first);
        }
        Py_DECREF(objs[i]);
    }
    if (rc < 0) ann_exc_restore(&first);
    return rc;
}

/* Exits what ann_begin entered, passing on the exception in flight (if any) and leaving it in
 * flight; an error from the exits then goes to sys.unraisablehook. Steals both references. */
static int ann_end(PyObject *tm, PyObject *scope) {
    if (!tm && !scope) return 0;
    if (!PyErr_Occurred()) {
        PyObject *none[3] = {Py_None, Py_None, Py_None};
        return ann_exit_both(tm, scope, none);
    }
    ann_exc e;
    ann_exc_fetch(&e);
    PyObject *exc[3] = {e.type ? e.type : Py_None, e.value ? e.value : Py_None, e.tb ? e.tb : Py_None};
    if (ann_exit_both(tm, scope, exc) < 0) PyErr_WriteUnraisable(NULL);
    ann_exc_restore(&e);
    return 0;
}

/* Enters a TraceMe when profiling and a named scope when JAX traces; returns new references (or
 * NULL) in *tm and *scope. On error nothing stays entered. */
static int ann_begin(PyObject *name, PyObject *stats, PyObject **tm, PyObject **scope) {
    *tm = *scope = NULL;
    if (!ann.traceme) {
        PyErr_SetString(PyExc_RuntimeError, "jaxprof._core: annotate is not set up (import jaxprof)");
        return -1;
    }
    int on = ann_profiling();
    if (on < 0) return -1;
    if (on) {
        PyObject *t = PyObject_VectorcallDict(ann.traceme, &name, 1, stats);
        if (!t) return -1;
        PyObject *r = PyObject_CallMethodNoArgs(t, ann.str_enter);
        if (!r) {
            Py_DECREF(t);
            return -1;
        }
        Py_DECREF(r);
        *tm = t;
    }
    int tracing = ann_jax_tracing();
    if (tracing > 0) {
        PyObject *s = PyObject_Vectorcall(ann.named_scope, &name, 1, NULL);
        PyObject *r = s ? PyObject_CallMethodNoArgs(s, ann.str_enter) : NULL;
        if (r) {
            Py_DECREF(r);
            *scope = s;
            return 0;
        }
        Py_XDECREF(s);
        tracing = -1;
    }
    if (tracing < 0) {
        ann_end(*tm, NULL);
        *tm = NULL;
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(annotate_setup_doc,
             "_annotate_setup(traceme, is_enabled, named_scope, trace_state, eval_trace, wrap)\n\n"
             "Gives annotate the JAX objects it uses (annotate.py calls this once at import).\n"
             "is_enabled None: always emit; trace_state None: always enter the named scope.");

static PyObject *annotate_setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "_annotate_setup takes 6 arguments");
        return NULL;
    }
    if (args[4] != Py_None && !PyType_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "_annotate_setup: eval_trace must be a type");
        return NULL;
    }
    PyObject **slots[] = {&ann.traceme, &ann.is_enabled, &ann.named_scope, &ann.trace_state, &ann.eval_trace, &ann.wrap};
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *v = args[i] == Py_None ? NULL : args[i];
        Py_XINCREF(v);
        Py_XSETREF(*slots[i], v);
    }
    if (!ann.eval_trace) Py_CLEAR(ann.trace_state);
    /* trace_state.value is a property: calling its getter skips the attribute lookup */
    Py_CLEAR(ann.trace_get);
    if (ann.trace_state) {
        PyObject *prop = PyObject_GetAttr((PyObject *)Py_TYPE(ann.trace_state), ann.str_value);
        if (prop && PyObject_TypeCheck(prop, &PyProperty_Type)) {
            ann.trace_get = PyObject_GetAttrString(prop, "fget");
            if (ann.trace_get == Py_None || (ann.trace_get && !PyCallable_Check(ann.trace_get))) Py_CLEAR(ann.trace_get);
        }
        Py_XDECREF(prop);
        PyErr_Clear(); /* no getter: plain getattr per call */
    }
    Py_RETURN_NONE;
}

/* ---- annotate objects: context managers (and decorator factories) ---------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *name;   /* str, or Py_None for annotate() */
    PyObject *stats;  /* dict, or NULL for none */
    PyObject *tm;     /* what the outermost __enter__ entered (NULL: nothing) */
    PyObject *scope;
    PyObject *nested; /* list of (tm, scope) of nested __enter__s of this object, or NULL */
    Py_ssize_t depth;
    vectorcallfunc vectorcall; /* annotate_vectorcall */
} AnnotateObject;

static PyTypeObject AnnotateType;
static PyObject *annotate_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* Freed annotate objects kept for reuse (untracked, fields cleared): `with annotate("x"):` then
 * allocates nothing. Guarded by the GIL. */
#define ANN_FREE_MAX 16
static AnnotateObject *ann_free[ANN_FREE_MAX];
static int ann_nfree;

static PyObject *call_wrap(PyObject *fn, PyObject *name, PyObject *stats) {
    if (!ann.wrap) {
        PyErr_SetString(PyExc_RuntimeError, "jaxprof._core: annotate is not set up (import jaxprof)");
        return NULL;
    }
    PyObject *empty = NULL;
    if (!stats && !(stats = empty = PyDict_New())) return NULL;
    PyObject *r = PyObject_CallFunctionObjArgs(ann.wrap, fn, name, stats, NULL);
    Py_XDECREF(empty);
    return r;
}

/* annotate(name=None, **stats); annotate(fn) decorates fn. Takes a reference to stats. */
static PyObject *annotate_make(PyObject *name, PyObject *stats) {
    if (name != Py_None && !PyUnicode_Check(name)) {
        if (PyCallable_Check(name)) {
            PyObject *r = call_wrap(name, Py_None, stats);
            Py_XDECREF(stats);
            return r;
        }
        Py_XDECREF(stats);
        PyErr_SetString(PyExc_TypeError, "annotate(name): name must be a string (use @annotate or @annotate('name'))");
        return NULL;
    }
    AnnotateObject *self;
    if (ann_nfree > 0) {
        self = ann_free[--ann_nfree];
        (void)PyObject_Init((PyObject *)self, &AnnotateType);
    } else {
        self = PyObject_GC_New(AnnotateObject, &AnnotateType);
    }
    if (!self) {
        Py_XDECREF(stats);
        return NULL;
    }
    Py_INCREF(name);
    self->name = name;
    self->stats = stats;
    self->tm = self->scope = self->nested = NULL;
    self->depth = 0;
    self->vectorcall = annotate_vectorcall;
    if (stats) PyObject_GC_Track(self); /* only stats can make a cycle; untracked objects are cheaper */
    return (PyObject *)self;
}

static PyObject *annotate_vectorcall_new(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    (void)type;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "annotate() takes at most 1 positional argument (%zd given)", nargs);
        return NULL;
    }
    PyObject *name = nargs ? args[0] : NULL, *stats = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i), *value = args[nargs + i];
        if (PyUnicode_CompareWithASCIIString(key, "name") == 0) {
            if (name) {
                Py_XDECREF(stats);
                PyErr_SetString(PyExc_TypeError, "annotate() got multiple values for argument 'name'");
                return NULL;
            }
            name = value;
            continue;
        }
        if ((!stats && !(stats = PyDict_New())) || PyDict_SetItem(stats, key, value) < 0) {
            Py_XDECREF(stats);
            return NULL;
        }
    }
    return annotate_make(name ? name : Py_None, stats);
}

static PyObject *annotate_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "annotate() takes at most 1 positional argument (%zd given)", nargs);
        return NULL;
    }
    PyObject *name = nargs ? PyTuple_GET_ITEM(args, 0) : NULL;
    PyObject *stats = kwds && PyDict_GET_SIZE(kwds) ? PyDict_Copy(kwds) : NULL;
    if (kwds && PyDict_GET_SIZE(kwds) && !stats) return NULL;
    (void)type;
    if (stats) {
        PyObject *kwname = PyDict_GetItemString(stats, "name");
        if (kwname) {
            if (name) {
                Py_DECREF(stats);
                PyErr_SetString(PyExc_TypeError, "annotate() got multiple values for argument 'name'");
                return NULL;
            }
            name = kwname;
            Py_INCREF(name);
            PyObject *made = PyDict_DelItemString(stats, "name") < 0 ? NULL : annotate_make(name, stats);
            Py_DECREF(name);
            return made;
        }
    }
    return annotate_make(name ? name : Py_None, stats);
}

static int annotate_traverse(AnnotateObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->stats);
    Py_VISIT(self->tm);
    Py_VISIT(self->scope);
    Py_VISIT(self->nested);
    return 0;
}

static int annotate_clear(AnnotateObject *self) {
    Py_CLEAR(self->stats);
    Py_CLEAR(self->tm);
    Py_CLEAR(self->scope);
    Py_CLEAR(self->nested);
    return 0;
}

static void annotate_dealloc(AnnotateObject *self) {
    PyObject_GC_UnTrack(self);
    annotate_clear(self);
    Py_CLEAR(self->name);
    if (Py_IS_TYPE(self, &AnnotateType) && ann_nfree < ANN_FREE_MAX) {
        ann_free[ann_nfree++] = self;
        return;
    }
    PyObject_GC_Del(self);
}

static PyObject *annotate_enter(AnnotateObject *self, PyObject *unused) {
    (void)unused;
    if (self->name == Py_None) {
        PyErr_SetString(PyExc_TypeError, "annotate() used as a context manager needs a name");
        return NULL;
    }
    PyObject *tm, *scope;
    if (ann_begin(self->name, self->stats, &tm, &scope) < 0) return NULL;
    if (self->depth == 0) {
        self->tm = tm;
        self->scope = scope;
        if ((tm || scope) && !PyObject_GC_IsTracked((PyObject *)self)) PyObject_GC_Track(self);
    } else {
        /* the same object entered again inside itself (or from another thread) */
        PyObject *entry = PyTuple_Pack(2, tm ? tm : Py_None, scope ? scope : Py_None);
        if (!entry || ((!self->nested && !(self->nested = PyList_New(0))) || PyList_Append(self->nested, entry) < 0)) {
            Py_XDECREF(entry);
            ann_end(tm, scope);
            return NULL;
        }
        Py_DECREF(entry);
        Py_XDECREF(tm);
        Py_XDECREF(scope);
    }
    self->depth++;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *annotate_exit(AnnotateObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (self->depth == 0) {
        PyErr_SetString(PyExc_RuntimeError, "annotate.__exit__ without __enter__");
        return NULL;
    }
    PyObject *tm, *scope;
    if (--self->depth == 0) {
        tm = self->tm;
        scope = self->scope;
        self->tm = self->scope = NULL;
    } else {
        Py_ssize_t last = PyList_GET_SIZE(self->nested) - 1;
        PyObject *entry = PyList_GET_ITEM(self->nested, last);
        tm = PyTuple_GET_ITEM(entry, 0);
        scope = PyTuple_GET_ITEM(entry, 1);
        tm = tm == Py_None ? NULL : (Py_INCREF(tm), tm);
        scope = scope == Py_None ? NULL : (Py_INCREF(scope), scope);
        if (PyList_SetSlice(self->nested, last, last + 1, NULL) < 0) {
            Py_XDECREF(tm);
            Py_XDECREF(scope);
            return NULL;
        }
    }
    if (!tm && !scope) Py_RETURN_NONE;
    /* the with statement passes its exception as arguments; nothing is in flight here */
    PyObject *exc[3] = {Py_None, Py_None, Py_None};
    for (Py_ssize_t k = 0; k < nargs && k < 3; k++) exc[k] = args[k];
    if (ann_exit_both(tm, scope, exc) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Calling an annotate object: (fn) decorates fn; () enters and (type, value, tb) exits, because
 * a.__enter__ and a.__exit__ are a itself (see AnnotateSlotType). */
static PyObject *annotate_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    AnnotateObject *self = (AnnotateObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) {
        if (nargs == 0) return annotate_enter(self, NULL);
        if (nargs == 3) return annotate_exit(self, args, 3);
        if (nargs == 1) return call_wrap(args[0], self->name, self->stats);
    }
    PyErr_SetString(PyExc_TypeError, "annotate(...)(fn) takes exactly one function");
    return NULL;
}

/* ---- __enter__ / __exit__ without a bound method per `with` ---------------------------------
 * The with statement looks __enter__ and __exit__ up through the descriptor protocol; methods
 * would allocate two bound-method objects per `with` (~30 ns of the ~100 ns budget). These
 * descriptors instead return the annotate object itself, whose call dispatches on the argument
 * count (annotate_vectorcall). Looked up on the class (ExitStack does), they are plain unbound
 * callables: annotate.__enter__(a), annotate.__exit__(a, type, value, tb). */

typedef struct {
    PyObject_HEAD
    int exit;
    vectorcallfunc vectorcall;
} AnnotateSlotObject;

static PyObject *annotate_slot_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    AnnotateSlotObject *slot = (AnnotateSlotObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int ok = (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) && nargs >= 1 && Py_IS_TYPE(args[0], &AnnotateType) &&
             (slot->exit ? nargs <= 4 : nargs == 1);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "annotate.%s(self%s) needs an annotate object", slot->exit ? "__exit__" : "__enter__",
                     slot->exit ? ", type, value, traceback" : "");
        return NULL;
    }
    AnnotateObject *self = (AnnotateObject *)args[0];
    return slot->exit ? annotate_exit(self, args + 1, nargs - 1) : annotate_enter(self, NULL);
}

static PyObject *annotate_slot_get(PyObject *op, PyObject *obj, PyObject *type) {
    (void)type;
    PyObject *r = obj && Py_IS_TYPE(obj, &AnnotateType) ? obj : op;
    Py_INCREF(r);
    return r;
}

static PyObject *annotate_slot_repr(AnnotateSlotObject *slot) {
    return PyUnicode_FromFormat("<slot '%s' of 'jaxprof.annotate' objects>", slot->exit ? "__exit__" : "__enter__");
}

static PyTypeObject AnnotateSlotType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "jaxprof._core.annotate_slot",
    .tp_basicsize = sizeof(AnnotateSlotObject),
    .tp_vectorcall_offset = offsetof(AnnotateSlotObject, vectorcall),
    .tp_repr = (reprfunc)annotate_slot_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_descr_get = annotate_slot_get,
};

static AnnotateSlotObject annotate_enter_slot = {PyObject_HEAD_INIT(&AnnotateSlotType) 0, annotate_slot_vectorcall};
static AnnotateSlotObject annotate_exit_slot = {PyObject_HEAD_INIT(&AnnotateSlotType) 1, annotate_slot_vectorcall};

static PyObject *annotate_get_stats(AnnotateObject *self, void *closure) {
    (void)closure;
    if (!self->stats) {
        if (!(self->stats = PyDict_New())) return NULL;
        if (!PyObject_GC_IsTracked((PyObject *)self)) PyObject_GC_Track(self);
    }
    Py_INCREF(self->stats);
    return self->stats;
}

static PyObject *annotate_get_name(AnnotateObject *self, void *closure) {
    (void)closure;
    Py_INCREF(self->name);
    return self->name;
}

static PyObject *annotate_repr(AnnotateObject *self) {
    return PyUnicode_FromFormat("annotate(%R)", self->name);
}


static PyGetSetDef annotate_getset[] = {
    {"name", (getter)annotate_get_name, NULL, "The region's name (None for a bare annotate()).", NULL},
    {"stats", (getter)annotate_get_stats, NULL, "The event arguments (a dict).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(annotate_doc,
             "annotate(name=None, **stats)\n--\n\n"
             "Marks a region or function in the profile, on the host timeline and in device op names.\n\n"
             "As a context manager or decorator it emits a host TraceMe event named ``name`` (what\n"
             "``jax.profiler.TraceAnnotation(name, **stats)`` emits: ``stats`` become event arguments)\n"
             "and, while JAX traces (jit, grad, vmap...), enters ``jax.named_scope(name)``, so XLA ops\n"
             "traced inside carry ``name`` in their HLO ``op_name`` (``jit(step)/name/dot_general``) and\n"
             "device time can be attributed to it.\n\n"
             ">>> with annotate(\"data\", batch=3): ...\n"
             ">>> @annotate\n"
             "... def loss(params, x): ...\n"
             ">>> @annotate(\"update\")\n"
             "... def update(params, grads): ...\n\n"
             "Cost: with no profiler trace recording and outside JAX tracing, entering and leaving do\n"
             "no more than two checks in C (tens of ns). The host event is emitted only while a trace\n"
             "records (one started by jaxprof, jax.profiler or a remote profiler client alike); the\n"
             "named scope is entered only while JAX traces, where it names ops at no run-time cost.\n\n"
             "A decorated function keeps its name, docstring, signature and ``__wrapped__``. Decorating a\n"
             "function that is itself ``jax.jit``-ed names its host dispatch; its device ops carry the\n"
             "scope when it is called from inside another jitted function.");

static PyTypeObject AnnotateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "jaxprof.annotate",
    .tp_basicsize = sizeof(AnnotateObject),
    .tp_dealloc = (destructor)annotate_dealloc,
    .tp_repr = (reprfunc)annotate_repr,
    .tp_vectorcall_offset = offsetof(AnnotateObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = annotate_doc,
    .tp_traverse = (traverseproc)annotate_traverse,
    .tp_clear = (inquiry)annotate_clear,
    .tp_getset = annotate_getset,
    .tp_new = annotate_new,
    .tp_vectorcall = annotate_vectorcall_new,
};

/* ---- annotated functions: what @annotate returns ---------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *name;
    PyObject *stats; /* dict or NULL */
    PyObject *dict;  /* __dict__: functools.update_wrapper's __name__, __doc__, __wrapped__... */
    PyObject *weaklist;
    vectorcallfunc vectorcall;
} AnnotatedFunctionObject;

static PyObject *annfn_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    AnnotatedFunctionObject *self = (AnnotatedFunctionObject *)op;
    PyObject *tm, *scope;
    if (ann_begin(self->name, self->stats, &tm, &scope) < 0) return NULL;
    PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    if (ann_end(tm, scope) < 0) Py_CLEAR(result);
    return result;
}

static PyObject *annfn_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fn, *name, *stats = NULL;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "annotated_function takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OU|O!:annotated_function", &fn, &name, &PyDict_Type, &stats)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "annotated_function: fn must be callable");
        return NULL;
    }
    AnnotatedFunctionObject *self = (AnnotatedFunctionObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_INCREF(fn);
    Py_INCREF(name);
    self->fn = fn;
    self->name = name;
    self->stats = stats && PyDict_GET_SIZE(stats) ? PyDict_Copy(stats) : NULL;
    self->vectorcall = annfn_vectorcall;
    if (stats && PyDict_GET_SIZE(stats) && !self->stats) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int annfn_traverse(AnnotatedFunctionObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->stats);
    Py_VISIT(self->dict);
    return 0;
}

static int annfn_clear(AnnotatedFunctionObject *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->stats);
    Py_CLEAR(self->dict);
    return 0;
}

static void annfn_dealloc(AnnotatedFunctionObject *self) {
    PyObject_GC_UnTrack(self);
    if (self->weaklist) PyObject_ClearWeakRefs((PyObject *)self);
    annfn_clear(self);
    Py_CLEAR(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A method when looked up on an instance, like a function. */
static PyObject *annfn_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

/* Pickled by reference, like the function it replaces. */
static PyObject *annfn_reduce(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyObject *annfn_repr(AnnotatedFunctionObject *self) {
    return PyUnicode_FromFormat("<annotated %R>", self->fn);
}

static PyObject *annfn_get_name(AnnotatedFunctionObject *self, void *closure) {
    (void)closure;
    Py_INCREF(self->name);
    return self->name;
}

static PyMethodDef annfn_methods[] = {
    {"__reduce__", annfn_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef annfn_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"annotation_name", (getter)annfn_get_name, NULL, "The name of the event and scope.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(annfn_doc, "annotated_function(fn, name, stats=None)\n--\n\n"
                        "Calls fn inside annotate(name, **stats): what @annotate returns.");

static PyTypeObject AnnotatedFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "jaxprof._core.annotated_function",
    .tp_basicsize = sizeof(AnnotatedFunctionObject),
    .tp_dealloc = (destructor)annfn_dealloc,
    .tp_vectorcall_offset = offsetof(AnnotatedFunctionObject, vectorcall),
    .tp_repr = (reprfunc)annfn_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = annfn_doc,
    .tp_traverse = (traverseproc)annfn_traverse,
    .tp_clear = (inquiry)annfn_clear,
    .tp_weaklistoffset = offsetof(AnnotatedFunctionObject, weaklist),
    .tp_methods = annfn_methods,
    .tp_getset = annfn_getset,
    .tp_descr_get = annfn_descr_get,
    .tp_dictoffset = offsetof(AnnotatedFunctionObject, dict),
    .tp_new = annfn_new,
};

/* Readies the annotate types and adds them to the module; 0 or -1. */
static int annotate_init_module(PyObject *m) {
    if (!(ann.str_value = PyUnicode_InternFromString("value")) ||
        !(ann.str_enter = PyUnicode_InternFromString("__enter__")) ||
        !(ann.str_exit = PyUnicode_InternFromString("__exit__")))
        return -1;
    if (PyType_Ready(&AnnotateSlotType) < 0 || PyType_Ready(&AnnotateType) < 0 ||
        PyType_Ready(&AnnotatedFunctionType) < 0)
        return -1;
    if (PyDict_SetItemString(AnnotateType.tp_dict, "__enter__", (PyObject *)&annotate_enter_slot) < 0 ||
        PyDict_SetItemString(AnnotateType.tp_dict, "__exit__", (PyObject *)&annotate_exit_slot) < 0)
        return -1;
    PyType_Modified(&AnnotateType);
    Py_INCREF(&AnnotateType);
    if (PyModule_AddObject(m, "annotate", (PyObject *)&AnnotateType) != 0) {
        Py_DECREF(&AnnotateType);
        return -1;
    }
    Py_INCREF(&AnnotatedFunctionType);
    if (PyModule_AddObject(m, "annotated_function", (PyObject *)&AnnotatedFunctionType) != 0) {
        Py_DECREF(&AnnotatedFunctionType);
        return -1;
    }
    return 0;
}

static PyMethodDef core_methods[] = {
    {"_annotate_setup", (PyCFunction)(void (*)(void))annotate_setup, METH_FASTCALL, annotate_setup_doc},
    {"default_trace_path", default_trace_path, METH_VARARGS, default_trace_path_doc},
    {"diff", (PyCFunction)(void (*)(void))diff, METH_VARARGS | METH_KEYWORDS, diff_doc},
    {"export_trace", (PyCFunction)(void (*)(void))export_trace, METH_VARARGS | METH_KEYWORDS, export_trace_doc},
    {"xplane_lines", xplane_lines, METH_VARARGS, xplane_lines_doc},
    {"find_runs", find_runs, METH_VARARGS, find_runs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "jaxprof._core", "The C core of jaxprof (libjaxprof).", -1, core_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void); /* the only exported symbol */
PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&ProfileType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m && PyModule_AddStringConstant(m, "__version__", JP_VERSION) != 0) Py_CLEAR(m);
    if (m && PyModule_AddIntConstant(m, "JSON_SCHEMA_VERSION", JP_JSON_SCHEMA_VERSION) != 0) Py_CLEAR(m);
    Py_INCREF(&ProfileType);
    if (m && PyModule_AddObject(m, "Profile", (PyObject *)&ProfileType) != 0) {
        Py_DECREF(&ProfileType);
        Py_CLEAR(m);
    }
    if (m && annotate_init_module(m) != 0) Py_CLEAR(m);
    return m;
}
