/* _core.c - the Python extension jaxprof._core: converts between Python objects and libjaxprof
 * calls; no logic of its own. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

static PyObject *run_to_tuple(const jp_run *run) {
    return Py_BuildValue("(ssLIK)", run->path, run->name, (long long)run->mtime_ns, run->n_files,
                         (unsigned long long)run->bytes);
}

PyDoc_STRVAR(find_runs_doc,
             "find_runs(log_dir) -> list[tuple[path, name, mtime_ns, n_files, bytes]]\n\n"
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

static PyMethodDef core_methods[] = {
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
    PyObject *m = PyModule_Create(&core_module);
    if (m && PyModule_AddStringConstant(m, "__version__", JP_VERSION) != 0) Py_CLEAR(m);
    return m;
}
