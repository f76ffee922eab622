/* _annotate.h - what _core.c needs of _annotate.c: the annotate types and their module state. */
#ifndef JAXPROF_PY_ANNOTATE_H
#define JAXPROF_PY_ANNOTATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Freed annotate objects kept for reuse (untracked, fields cleared): `with annotate("x"):` then
 * allocates nothing. */
#define ANN_FREE_MAX 16

/* Everything annotate keeps: the whole of jaxprof._core's module state (PyModule_GetState,
 * m_size = sizeof(ann_state)), reached from each object through its st pointer, so none of it is a
 * C global. Guarded by the GIL. */
struct ann_state {
    PyObject *traceme;     /* jaxlib's TraceMe type (what jax.profiler.TraceAnnotation subclasses) */
    PyObject *is_enabled;  /* TraceMe.is_enabled, or NULL: always emit the TraceMe */
    PyObject *named_scope; /* jax.named_scope */
    PyObject *trace_state; /* jax's trace_state_strong_ref (.value = the current trace), or NULL */
    PyObject *trace_get;   /* the getter of trace_state's value property, or NULL: getattr */
    PyObject *eval_trace;  /* jax's EvalTrace type: the current trace when JAX is not tracing */
    PyObject *wrap;        /* annotate.py's _wrap(fn, name, stats): the decorator */
    PyObject *str_value;   /* interned "value", "__enter__", "__exit__": attribute lookups by name */
    PyObject *str_enter;
    PyObject *str_exit;
    PyTypeObject *annotate_type; /* jaxprof.annotate (a heap type of this module) */
    PyTypeObject *slot_type;     /* annotate.__enter__/__exit__'s type */
    PyTypeObject *function_type; /* annotated_function: what @annotate returns */
    PyObject *free[ANN_FREE_MAX]; /* freed annotate objects for reuse; they hold no type reference */
    int nfree;                    /* how many of free[] are set */
};
typedef struct ann_state ann_state;

/* Creates the annotate, annotated_function and slot types in module m's state and adds the first
 * two to m; 0, or -1 with an exception set. */
int ann_module_init(PyObject *m);

/* m_traverse, m_clear and m_free of the module whose state is an ann_state. */
int ann_module_traverse(PyObject *m, visitproc visit, void *arg);
int ann_module_clear(PyObject *m);
void ann_module_free(void *m);

/* _core._annotate_setup(traceme, is_enabled, named_scope, trace_state, eval_trace, wrap): gives
 * annotate the JAX objects it uses (METH_FASTCALL; annotate.py calls it once at import). */
PyObject *ann_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
extern const char ann_setup_doc[];

#endif
