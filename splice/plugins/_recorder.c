/* The Tracer's recording calls in C (splice/plugins/tracer_ir.py inserts them).

   ``Recorder(local)``: ``enter(info)`` appends ``info`` and the time (``perf_counter_ns``)
   to the running thread's event list, ``leave()`` appends the time negated: the same
   events as the Python form ``local.events += (info, perf_counter_ns())`` and
   ``local.events += (-perf_counter_ns(),)``, at about a third of its cost per call (one
   call of a builtin method instead of an attribute read of a ``threading.local``, a clock
   call, a tuple and ``operator.iadd``), which is what the Tracer's bias correction has to
   take out of every caller's time.

   The thread's list is ``local.events`` (a ``threading.local``, so each thread's first
   read makes its list and registers it with the Tracer): read once per thread and kept
   with the thread state's ``id``, which CPython never gives to another thread of the
   process, so a thread that ended cannot pass its list on. ``reset`` empties the lists in
   place, so the kept one stays the thread's.

   The lists are untracked by the garbage collector (a full collection visited every event
   of a long run: 100 ms at 3 million). Sound because a list of events cannot be part of a
   reference cycle: its items are ints, strings, tuples of strings and atomic builtins (an
   exception's record), marker objects without attributes, and ``FunctionInfo`` objects,
   which hold a code object and strings; none of them can refer to the list. What the list
   keeps alive it keeps alive by reference count, as before.

   Soundness of the append: both items are appended with no Python code in between. The
   only allocation between them is the time's int, which is not a tracked object and so
   cannot start a collection (whose finalisers could record events of their own). */

#include <Python.h>
#include <stdint.h>

typedef struct {
    PyObject_HEAD
    PyObject *local;        /* the Tracer's threading.local */
    PyObject *events;       /* the list of the thread last seen, or NULL */
    uint64_t thread;        /* that thread's PyThreadState id */
} Recorder;

static PyObject *str_events = NULL;

static inline int64_t
now_ns(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t t;
    (void)PyTime_PerfCounterRaw(&t);
    return (int64_t)t;
#else
    return (int64_t)_PyTime_GetPerfCounter();
#endif
}

/* the running thread's list (borrowed), or NULL with an exception set */
static inline PyObject *
thread_events(Recorder *r)
{
    PyThreadState *tstate = PyThreadState_Get();
    if (r->events != NULL && r->thread == tstate->id) return r->events;
    PyObject *events = PyObject_GetAttr(r->local, str_events);
    if (events == NULL) return NULL;
    if (!PyList_CheckExact(events)) {
        PyErr_Format(PyExc_TypeError, "splice Recorder: local.events must be a list, not %.100s",
                     Py_TYPE(events)->tp_name);
        Py_DECREF(events);
        return NULL;
    }
    /* Not traversed by the collector: every full collection would otherwise visit each of
       the millions of events a long run records (a 100 ms pause at 3 million). Sound
       because no item can lead back to the list (see the top of this file). */
    PyObject_GC_UnTrack(events);
    Py_XSETREF(r->events, events);
    r->thread = tstate->id;
    return events;
}

static PyObject *
recorder_enter(Recorder *r, PyObject *info)
{
    PyObject *events = thread_events(r);
    if (events == NULL) return NULL;
    PyObject *now = PyLong_FromLongLong(now_ns());
    if (now == NULL) return NULL;
    int failed = PyList_Append(events, info) < 0 || PyList_Append(events, now) < 0;
    Py_DECREF(now);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyObject *
recorder_leave(Recorder *r, PyObject *Py_UNUSED(ignored))
{
    PyObject *events = thread_events(r);
    if (events == NULL) return NULL;
    PyObject *now = PyLong_FromLongLong(-now_ns());
    if (now == NULL) return NULL;
    int failed = PyList_Append(events, now) < 0;
    Py_DECREF(now);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static int
recorder_traverse(Recorder *r, visitproc visit, void *arg)
{
    Py_VISIT(r->local);
    Py_VISIT(r->events);
    return 0;
}

static int
recorder_clear(Recorder *r)
{
    Py_CLEAR(r->local);
    Py_CLEAR(r->events);
    return 0;
}

static void
recorder_dealloc(Recorder *r)
{
    PyObject_GC_UnTrack(r);
    recorder_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
recorder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *local;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Recorder(local) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:Recorder", &local)) return NULL;
    Recorder *r = (Recorder *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    r->local = Py_NewRef(local);
    r->events = NULL;
    r->thread = 0;
    return (PyObject *)r;
}

static PyObject *
recorder_get_local(Recorder *r, void *closure)
{
    return Py_NewRef(r->local);
}

static PyMethodDef recorder_methods[] = {
    {"enter", (PyCFunction)recorder_enter, METH_O,
     "enter(info): a call starts: append info and the time to this thread's events"},
    {"leave", (PyCFunction)recorder_leave, METH_NOARGS,
     "leave(): a call ends: append the time, negated, to this thread's events"},
    {NULL},
};

static PyGetSetDef recorder_getset[] = {
    {"local", (getter)recorder_get_local, NULL, "the threading.local holding the lists", NULL},
    {NULL},
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.plugins._recorder.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_methods = recorder_methods,
    .tp_getset = recorder_getset,
    .tp_new = recorder_new,
    .tp_doc = "Recorder(local): the Tracer's recording calls (splice/plugins/_recorder.c)",
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice.plugins._recorder",
    "The Tracer's recording calls in C (splice/plugins/_recorder.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__recorder(void)
{
    str_events = PyUnicode_InternFromString("events");
    if (str_events == NULL) return NULL;
    if (PyType_Ready(&RecorderType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    Py_INCREF(&RecorderType);
    if (PyModule_AddObject(mod, "Recorder", (PyObject *)&RecorderType) < 0) return NULL;
    return mod;
}
