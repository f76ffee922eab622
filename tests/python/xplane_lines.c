/* xplane_lines.c - the test-only module _xplane_lines: libjaxprof's decoder seen line by line, the
 * oracle tests/python/test_decode.py holds against JAX's own reader. Built beside jaxprof._core
 * (meson.build), never installed: the tests import it from the build directory. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "jaxprof/jaxprof_xspace.h"

PyDoc_STRVAR(xplane_lines_doc,
             "xplane_lines(path) -> list[tuple[plane, line, line_id, n_events, total_duration_ps]]\n\n"
             "Decodes an .xplane.pb[.gz] with libjaxprof and lists every line with its event count.");

/* One line as (plane, line, id, events, summed duration in ps), or NULL. */
static PyObject *line_tuple(const jp_plane *plane, const jp_line *line) {
    long long total = 0;
    for (size_t e = 0; e < line->n_events; e++) total += line->events[e].duration_ps;
    return Py_BuildValue("(s#s#LnL)", plane->name.ptr, (Py_ssize_t)plane->name.len, line->name.ptr,
                         (Py_ssize_t)line->name.len, (long long)line->id, (Py_ssize_t)line->n_events, total);
}

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
    if (rc != JP_OK) {
        PyObject *type = rc == JP_ERR_NOT_FOUND ? PyExc_FileNotFoundError
                         : rc == JP_ERR_IO      ? PyExc_OSError
                         : rc == JP_ERR_NOMEM   ? PyExc_MemoryError
                                                : PyExc_ValueError;
        PyErr_SetString(type, err.msg);
        return NULL;
    }
    PyObject *list = PyList_New(0);
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    for (size_t p = 0; list && p < n_planes; p++) {
        for (size_t l = 0; l < planes[p].n_lines; l++) {
            PyObject *item = line_tuple(&planes[p], &planes[p].lines[l]);
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

static PyMethodDef methods[] = {
    {"xplane_lines", xplane_lines, METH_VARARGS, xplane_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_xplane_lines", "Test oracle: libjaxprof's XSpace decoder, line by line.", 0, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__xplane_lines(void); /* the only exported symbol */
PyMODINIT_FUNC PyInit__xplane_lines(void) { return PyModule_Create(&module); }
