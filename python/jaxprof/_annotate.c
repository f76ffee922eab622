/* _annotate.c - jaxprof.annotate: a host TraceMe plus a jax.named_scope, with no Python on the
 * fast path; part of the jaxprof._core extension, its state in the module's state (ann_state). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include "structmember.h" /* PyMemberDef's T_PYSSIZET, READONLY (Python 3.11) */

#include "_annotate.h"

/* ---- how it works ------------------------------------------------------------------------------
 *
 * jaxprof.annotate is this type. Entering one asks two cheap questions:
 *   - is a profiler trace recording TraceMe events? jaxlib's TraceMe.is_enabled() (a C++ atomic
 *     read behind one nanobind call, ~15 ns), so traces started by jax.profiler directly, by
 *     jaxprof, or by a remote profiler client are all noticed;
 *   - is JAX tracing (jit/grad/vmap)? jax's trace_state_strong_ref.value is not an EvalTrace.
 * Only a yes costs anything: a TraceMe(name, **stats) entered on the host, and/or a
 * jax.named_scope(name) entered so traced ops carry the name. With both no, entering and exiting
 * allocate nothing and call no Python. annotate.py supplies the JAX objects (_annotate_setup). */

typedef struct AnnotateObject AnnotateObject;



/* 1 when the profiler records TraceMe events, 0 when not, -1 on error. */
static int ann_profiling(const ann_state *st) {
    if (!st->is_enabled) return 1;
    PyObject *r = PyObject_CallNoArgs(st->is_enabled);
    if (!r) return -1;
    int on = r == Py_True ? 1 : r == Py_False ? 0 : PyObject_IsTrue(r);
    Py_DECREF(r);
    return on;
}

/* 1 when JAX is tracing (a named scope names ops), 0 when not, -1 on error. */
static int ann_jax_tracing(ann_state *st) {
    if (!st->trace_state) return 1;
    PyObject *trace = st->trace_get ? PyObject_Vectorcall(st->trace_get, &st->trace_state, 1, NULL)
                                    : PyObject_GetAttr(st->trace_state, st->str_value);
    if (!trace) return -1;
    int eval = Py_IS_TYPE(trace, (PyTypeObject *)st->eval_trace) ? 1 : PyObject_IsInstance(trace, st->eval_trace);
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
static int ann_exit_both(const ann_state *st, PyObject *tm, PyObject *scope, PyObject *const exc[3]) {
    PyObject *objs[2] = {scope, tm};
    int rc = 0;
    ann_exc first = {NULL, NULL, NULL};
    for (int i = 0; i < 2; i++) {
        if (!objs[i]) continue;
        PyObject *call[5] = {NULL, objs[i], exc[0], exc[1], exc[2]};
        PyObject *r = PyObject_VectorcallMethod(st->str_exit, call + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
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
static int ann_end(const ann_state *st, PyObject *tm, PyObject *scope) {
    if (!tm && !scope) return 0;
    if (!PyErr_Occurred()) {
        PyObject *none[3] = {Py_None, Py_None, Py_None};
        return ann_exit_both(st, tm, scope, none);
    }
    ann_exc e;
    ann_exc_fetch(&e);
    PyObject *exc[3] = {e.type ? e.type : Py_None, e.value ? e.value : Py_None, e.tb ? e.tb : Py_None};
    if (ann_exit_both(st, tm, scope, exc) < 0) PyErr_WriteUnraisable(NULL);
    ann_exc_restore(&e);
    return 0;
}

/* Enters a TraceMe when profiling and a named scope when JAX traces; returns new references (or
 * NULL) in *tm and *scope. On error nothing stays entered. */
static int ann_begin(ann_state *st, PyObject *name, PyObject *stats, PyObject **tm, PyObject **scope) {
    *tm = *scope = NULL;
    if (!st->traceme) {
        PyErr_SetString(PyExc_RuntimeError, "jaxprof._core: annotate is not set up (import jaxprof)");
        return -1;
    }
    int on = ann_profiling(st);
    if (on < 0) return -1;
    if (on) {
        PyObject *t = PyObject_VectorcallDict(st->traceme, &name, 1, stats);
        if (!t) return -1;
        PyObject *r = PyObject_CallMethodNoArgs(t, st->str_enter);
        if (!r) {
            Py_DECREF(t);
            return -1;
        }
        Py_DECREF(r);
        *tm = t;
    }
    int tracing = ann_jax_tracing(st);
    if (tracing > 0) {
        PyObject *s = PyObject_Vectorcall(st->named_scope, &name, 1, NULL);
        PyObject *r = s ? PyObject_CallMethodNoArgs(s, st->str_enter) : NULL;
        if (r) {
            Py_DECREF(r);
            *scope = s;
            return 0;
        }
        Py_XDECREF(s);
        tracing = -1;
    }
    if (tracing < 0) {
        ann_end(st, *tm, NULL);
        *tm = NULL;
        return -1;
    }
    return 0;
}

const char ann_setup_doc[] =
             "_annotate_setup(traceme, is_enabled, named_scope, trace_state, eval_trace, wrap)\n\n"
             "Gives annotate the JAX objects it uses (annotate.py calls this once at import).\n"
             "is_enabled None: always emit; trace_state None: always enter the named scope.";

PyObject *ann_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    ann_state *st = PyModule_GetState(module);
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "_annotate_setup takes 6 arguments");
        return NULL;
    }
    if (args[4] != Py_None && !PyType_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "_annotate_setup: eval_trace must be a type");
        return NULL;
    }
    PyObject **slots[] = {&st->traceme, &st->is_enabled, &st->named_scope, &st->trace_state, &st->eval_trace, &st->wrap};
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *v = args[i] == Py_None ? NULL : args[i];
        Py_XINCREF(v);
        Py_XSETREF(*slots[i], v);
    }
    if (!st->eval_trace) Py_CLEAR(st->trace_state);
    /* trace_state.value is a property: calling its getter skips the attribute lookup */
    Py_CLEAR(st->trace_get);
    if (st->trace_state) {
        PyObject *prop = PyObject_GetAttr((PyObject *)Py_TYPE(st->trace_state), st->str_value);
        if (prop && PyObject_TypeCheck(prop, &PyProperty_Type)) {
            st->trace_get = PyObject_GetAttrString(prop, "fget");
            if (st->trace_get == Py_None || (st->trace_get && !PyCallable_Check(st->trace_get))) Py_CLEAR(st->trace_get);
        }
        Py_XDECREF(prop);
        PyErr_Clear(); /* no getter: plain getattr per call */
    }
    Py_RETURN_NONE;
}

/* ---- annotate objects: context managers (and decorator factories) ---------------------------- */

struct AnnotateObject {
    PyObject_HEAD
    ann_state *st;    /* the module state: JAX hooks, types, free list */
    PyObject *name;   /* str, or Py_None for annotate() */
    PyObject *stats;  /* dict, or NULL for none */
    PyObject *tm;     /* what the outermost __enter__ entered (NULL: nothing) */
    PyObject *scope;  /* the named scope it entered (NULL: none) */
    PyObject *nested; /* list of (tm, scope) of nested __enter__s of this object, or NULL */
    Py_ssize_t depth; /* how many times it is entered now */
    vectorcallfunc vectorcall; /* annotate_vectorcall */
};

static PyObject *annotate_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *call_wrap(const ann_state *st, PyObject *fn, PyObject *name, PyObject *stats) {
    if (!st->wrap) {
        PyErr_SetString(PyExc_RuntimeError, "jaxprof._core: annotate is not set up (import jaxprof)");
        return NULL;
    }
    PyObject *empty = NULL;
    if (!stats && !(stats = empty = PyDict_New())) return NULL;
    PyObject *r = PyObject_CallFunctionObjArgs(st->wrap, fn, name, stats, NULL);
    Py_XDECREF(empty);
    return r;
}

/* annotate(name=None, **stats); annotate(fn) decorates fn. Takes a reference to stats. */
static PyObject *annotate_make(ann_state *st, PyObject *name, PyObject *stats) {
    if (name != Py_None && !PyUnicode_Check(name)) {
        if (PyCallable_Check(name)) {
            PyObject *r = call_wrap(st, name, Py_None, stats);
            Py_XDECREF(stats);
            return r;
        }
        Py_XDECREF(stats);
        PyErr_SetString(PyExc_TypeError, "annotate(name): name must be a string (use @annotate or @annotate('name'))");
        return NULL;
    }
    AnnotateObject *self;
    if (st->nfree > 0) {
        self = (AnnotateObject *)st->free[--st->nfree];
        (void)PyObject_Init((PyObject *)self, st->annotate_type); /* takes a type reference again */
    } else {
        self = PyObject_GC_New(AnnotateObject, st->annotate_type);
    }
    if (!self) {
        Py_XDECREF(stats);
        return NULL;
    }
    Py_INCREF(name);
    self->st = st;
    self->name = name;
    self->stats = stats;
    self->tm = self->scope = self->nested = NULL;
    self->depth = 0;
    self->vectorcall = annotate_vectorcall;
    if (stats) PyObject_GC_Track(self); /* only stats can make a cycle; untracked objects are cheaper */
    return (PyObject *)self;
}

static PyObject *annotate_vectorcall_new(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    ann_state *st = PyType_GetModuleState((PyTypeObject *)type);
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
    return annotate_make(st, name ? name : Py_None, stats);
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
    ann_state *st = PyType_GetModuleState(type);
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
            PyObject *made = PyDict_DelItemString(stats, "name") < 0 ? NULL : annotate_make(st, name, stats);
            Py_DECREF(name);
            return made;
        }
    }
    return annotate_make(st, name ? name : Py_None, stats);
}

static int annotate_traverse(AnnotateObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self)); /* a heap type: its instances hold a reference */
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
    PyTypeObject *type = Py_TYPE(self);
    ann_state *st = self->st;
    PyObject_GC_UnTrack(self);
    annotate_clear(self);
    Py_CLEAR(self->name);
    if (st->nfree < ANN_FREE_MAX)
        st->free[st->nfree++] = (PyObject *)self;
    else
        PyObject_GC_Del(self);
    Py_DECREF(type);
}

static PyObject *annotate_enter(AnnotateObject *self, PyObject *unused) {
    (void)unused;
    if (self->name == Py_None) {
        PyErr_SetString(PyExc_TypeError, "annotate() used as a context manager needs a name");
        return NULL;
    }
    PyObject *tm, *scope;
    if (ann_begin(self->st, self->name, self->stats, &tm, &scope) < 0) return NULL;
    if (self->depth == 0) {
        self->tm = tm;
        self->scope = scope;
        if ((tm || scope) && !PyObject_GC_IsTracked((PyObject *)self)) PyObject_GC_Track(self);
    } else {
        /* the same object entered again inside itself (or from another thread) */
        PyObject *entry = PyTuple_Pack(2, tm ? tm : Py_None, scope ? scope : Py_None);
        if (!entry || ((!self->nested && !(self->nested = PyList_New(0))) || PyList_Append(self->nested, entry) < 0)) {
            Py_XDECREF(entry);
            ann_end(self->st, tm, scope);
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
    if (ann_exit_both(self->st, tm, scope, exc) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Calling an annotate object: (fn) decorates fn; () enters and (type, value, tb) exits, because
 * a.__enter__ and a.__exit__ are a itself (see annotate_slot_spec). */
static PyObject *annotate_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    AnnotateObject *self = (AnnotateObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) {
        if (nargs == 0) return annotate_enter(self, NULL);
        if (nargs == 3) return annotate_exit(self, args, 3);
        if (nargs == 1) return call_wrap(self->st, args[0], self->name, self->stats);
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
    ann_state *st;             /* the module state (for the annotate type) */
    int exit;                  /* 1: __exit__, 0: __enter__ */
    vectorcallfunc vectorcall; /* annotate_slot_vectorcall */
} AnnotateSlotObject;

static PyObject *annotate_slot_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    AnnotateSlotObject *slot = (AnnotateSlotObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int ok = (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) && nargs >= 1 && Py_IS_TYPE(args[0], slot->st->annotate_type) &&
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
    PyObject *r = obj && Py_IS_TYPE(obj, ((AnnotateSlotObject *)op)->st->annotate_type) ? obj : op;
    Py_INCREF(r);
    return r;
}

static PyObject *annotate_slot_repr(AnnotateSlotObject *slot) {
    return PyUnicode_FromFormat("<slot '%s' of 'jaxprof.annotate' objects>", slot->exit ? "__exit__" : "__enter__");
}

static void annotate_slot_dealloc(PyObject *op) {
    PyTypeObject *type = Py_TYPE(op);
    PyObject_Free(op);
    Py_DECREF(type);
}

static PyMemberDef annotate_slot_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(AnnotateSlotObject, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot annotate_slot_slots[] = {
    {Py_tp_repr, (void *)annotate_slot_repr},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_descr_get, (void *)annotate_slot_get},
    {Py_tp_dealloc, (void *)annotate_slot_dealloc},
    {Py_tp_members, annotate_slot_members},
    {0, NULL},
};

static PyType_Spec annotate_slot_spec = {
    "jaxprof._core.annotate_slot", sizeof(AnnotateSlotObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    annotate_slot_slots,
};

/* A new __enter__ (exit 0) or __exit__ (exit 1) descriptor, or NULL. */
static PyObject *annotate_slot_new(ann_state *st, int exit) {
    AnnotateSlotObject *slot = PyObject_New(AnnotateSlotObject, st->slot_type);
    if (!slot) return NULL;
    slot->st = st;
    slot->exit = exit;
    slot->vectorcall = annotate_slot_vectorcall;
    return (PyObject *)slot;
}

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

static PyMemberDef annotate_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(AnnotateObject, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot annotate_slots[] = {
    {Py_tp_dealloc, (void *)annotate_dealloc},
    {Py_tp_repr, (void *)annotate_repr},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_doc, (void *)annotate_doc},
    {Py_tp_traverse, (void *)annotate_traverse},
    {Py_tp_clear, (void *)annotate_clear},
    {Py_tp_getset, annotate_getset},
    {Py_tp_members, annotate_members},
    {Py_tp_new, (void *)annotate_new},
    {0, NULL},
};

static PyType_Spec annotate_spec = {
    "jaxprof.annotate", sizeof(AnnotateObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE, annotate_slots,
};

/* ---- annotated functions: what @annotate returns ---------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ann_state *st;   /* the module state: JAX hooks */
    PyObject *fn;    /* the function called */
    PyObject *name;  /* str: the event's and the scope's name */
    PyObject *stats; /* dict or NULL */
    PyObject *dict;  /* __dict__: functools.update_wrapper's __name__, __doc__, __wrapped__... */
    PyObject *weaklist;        /* weak references to it */
    vectorcallfunc vectorcall; /* annfn_vectorcall */
} AnnotatedFunctionObject;

static PyObject *annfn_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    AnnotatedFunctionObject *self = (AnnotatedFunctionObject *)op;
    PyObject *tm, *scope;
    if (ann_begin(self->st, self->name, self->stats, &tm, &scope) < 0) return NULL;
    PyObject *result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    if (ann_end(self->st, tm, scope) < 0) Py_CLEAR(result);
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
    self->st = PyType_GetModuleState(type);
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
    Py_VISIT(Py_TYPE(self)); /* a heap type: its instances hold a reference */
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
    PyTypeObject *type = Py_TYPE(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
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

static PyMemberDef annfn_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(AnnotatedFunctionObject, vectorcall), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(AnnotatedFunctionObject, weaklist), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(AnnotatedFunctionObject, dict), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot annfn_slots[] = {
    {Py_tp_dealloc, (void *)annfn_dealloc},
    {Py_tp_repr, (void *)annfn_repr},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_getattro, (void *)PyObject_GenericGetAttr},
    {Py_tp_setattro, (void *)PyObject_GenericSetAttr},
    {Py_tp_doc, (void *)annfn_doc},
    {Py_tp_traverse, (void *)annfn_traverse},
    {Py_tp_clear, (void *)annfn_clear},
    {Py_tp_methods, annfn_methods},
    {Py_tp_getset, annfn_getset},
    {Py_tp_members, annfn_members},
    {Py_tp_descr_get, (void *)annfn_descr_get},
    {Py_tp_new, (void *)annfn_new},
    {0, NULL},
};

static PyType_Spec annfn_spec = {
    "jaxprof._core.annotated_function", sizeof(AnnotatedFunctionObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR |
        Py_TPFLAGS_IMMUTABLETYPE,
    annfn_slots,
};

/* ---- the module's state ------------------------------------------------------------------------ */

/* A heap type of module m from spec, or NULL. */
static PyTypeObject *new_type(PyObject *m, PyType_Spec *spec) {
    return (PyTypeObject *)PyType_FromModuleAndSpec(m, spec, NULL);
}

/* Adds type to m under name (a new reference for the module); 0 or -1. */
static int add_type(PyObject *m, const char *name, PyTypeObject *type) {
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) == 0) return 0;
    Py_DECREF(type);
    return -1;
}

int ann_module_init(PyObject *m) {
    ann_state *st = PyModule_GetState(m);
    if (!(st->str_value = PyUnicode_InternFromString("value")) ||
        !(st->str_enter = PyUnicode_InternFromString("__enter__")) ||
        !(st->str_exit = PyUnicode_InternFromString("__exit__")))
        return -1;
    if (!(st->slot_type = new_type(m, &annotate_slot_spec)) || !(st->annotate_type = new_type(m, &annotate_spec)) ||
        !(st->function_type = new_type(m, &annfn_spec)))
        return -1;
    /* annotate(...) without building an args tuple: heap types have no spec slot for this before
     * Python 3.14, so it is set on the type directly, as CPython does for its own types */
    st->annotate_type->tp_vectorcall = annotate_vectorcall_new;
    PyObject *enter = annotate_slot_new(st, 0), *exit = annotate_slot_new(st, 1);
    int rc = enter && exit && PyDict_SetItem(st->annotate_type->tp_dict, st->str_enter, enter) == 0 &&
                     PyDict_SetItem(st->annotate_type->tp_dict, st->str_exit, exit) == 0
                 ? 0
                 : -1;
    Py_XDECREF(enter);
    Py_XDECREF(exit);
    if (rc < 0) return -1;
    PyType_Modified(st->annotate_type);
    if (add_type(m, "annotate", st->annotate_type) < 0) return -1;
    return add_type(m, "annotated_function", st->function_type);
}

int ann_module_traverse(PyObject *m, visitproc visit, void *arg) {
    ann_state *st = PyModule_GetState(m);
    if (!st) return 0;
    PyObject *refs[] = {st->traceme, st->is_enabled, st->named_scope, st->trace_state, st->trace_get, st->eval_trace,
                        st->wrap, (PyObject *)st->annotate_type, (PyObject *)st->slot_type,
                        (PyObject *)st->function_type};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) Py_VISIT(refs[i]);
    return 0;
}

/* Breaks the module <-> type cycles (the types hold the module). The interned names stay for
 * objects still alive: they hold their type, and so the module and this state, until they go. */
int ann_module_clear(PyObject *m) {
    ann_state *st = PyModule_GetState(m);
    if (!st) return 0;
    PyObject **refs[] = {&st->traceme, &st->is_enabled, &st->named_scope, &st->trace_state, &st->trace_get,
                         &st->eval_trace, &st->wrap, (PyObject **)&st->annotate_type,
                         (PyObject **)&st->slot_type, (PyObject **)&st->function_type};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) Py_CLEAR(*refs[i]);
    return 0;
}

/* The module is going: no annotate object is left (each would hold the module through its type). */
void ann_module_free(void *m) {
    ann_state *st = PyModule_GetState((PyObject *)m);
    if (!st) return;
    ann_module_clear((PyObject *)m);
    Py_CLEAR(st->str_value);
    Py_CLEAR(st->str_enter);
    Py_CLEAR(st->str_exit);
    while (st->nfree > 0) PyObject_GC_Del(st->free[--st->nfree]);
}
