/* The Tracer's recording calls in C (splice/plugins/tracer_ir.py inserts them).

   ``Recorder(local, delegators, opcodes, wrap)``: ``enter(info)`` appends ``info`` and the time
   (``perf_counter_ns``) to the running thread's event list, ``leave()`` appends the time
   negated: the same events as the Python form ``local.events += (info, perf_counter_ns())`` and
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

   Generators that delegate (``yield from``): ``resume(info)`` records a generator's resume
   (or start) as ``enter`` does a call, and ``leave`` its end. ``delegate(info)`` ends the
   span before a ``yield from`` and notes the delegating generator's code (the compiled one
   its frame runs) in ``delegators``, by its address (the entry holds the code, which keeps
   the address its own, and its ``FunctionInfo``). While a generator delegates, each resume
   of its subgenerator runs in a frame whose caller is the delegating generator's frame,
   stopped at the ``yield from``: ``resume`` walks those callers outwards (a chain of
   delegations) and starts a span of each delegating generator before the subgenerator's,
   outermost first, after the marker ``wrap`` and their count. The reader of the events
   (``_read_events`` in splice/plugins/tracer.py) ends those spans where the
   subgenerator's span ends, so nothing has to walk again at the end. So the delegating
   generator's time is the time its subgenerators run for it, as in ``cProfile``, where
   each ``next()`` resumes the delegating frame, which resumes the subgenerator. Whether a
   caller frame is stopped at a ``yield from`` is read from its last instruction
   (``splice.compat.frame_delegates`` states the rule and why it differs between versions;
   the opcodes come from there). The walk materialises the caller's frame object (kept by
   the interpreter frame, as ``sys._getframe`` does; it changes no object's lifetime), and
   it runs only while some generator is in a ``yield from``: ``delegate`` counts one more,
   and ``delegated(info)``, the resume where the ``yield from`` ended (returned or raised:
   it sits in a ``finally``), one fewer. The count is above zero whenever a frame the walk
   could find is in a ``yield from`` (that frame's ``delegate`` ran and its ``delegated``
   did not), so skipping the walk at zero loses nothing.

   Soundness of the append: both items are appended with no Python code in between. The
   only allocation between them is the time's int, which is not a tracked object and so
   cannot start a collection (whose finalisers could record events of their own). */

#include <Python.h>
#include <stdint.h>

typedef struct {
    PyObject_HEAD
    PyObject *local;        /* the Tracer's threading.local */
    PyObject *delegators;   /* dict: id(compiled code of a delegating generator) ->
                               (that code, its info); by address, since hashing a code
                               object hashes its constants, on every lookup */
    int op_cache, op_send, op_yield_value, op_resume;  /* splice.compat.DELEGATION_OPCODES */
    PyObject *wrap;         /* the marker before the spans of delegating generators */
    Py_ssize_t active;      /* yield froms begun (delegate) and not yet ended (delegated) */
    void *not_delegating;   /* a code last found not to be in delegators (a miss memo,
                               forgotten when delegators grows) */
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

/* 1 if the instruction at byte offset ``lasti`` of ``code`` is where a generator waits in a
   ``yield from`` (see splice.compat.frame_delegates for the three forms) */
static int
at_yield_from(Recorder *r, const unsigned char *code, Py_ssize_t size, int lasti)
{
    if (lasti < 0 || lasti + 1 >= size) return 0;
    int op = code[lasti], arg = code[lasti + 1];
    Py_ssize_t owner = lasti;
    while (owner >= 2 && code[owner] == r->op_cache) owner -= 2;
    if (code[owner] == r->op_send) return 1;
    if (op == r->op_yield_value && lasti + 3 < size && code[lasti + 2] == r->op_resume
            && (code[lasti + 3] & 3) >= 2) return 1;
    return op == r->op_resume && (arg & 3) >= 2;
}

/* the FunctionInfo (borrowed from ``delegators``, which only grows) if ``frame`` is a
   delegating generator's stopped at a ``yield from``, else NULL; -1 in *error on failure */
static PyObject *
delegating_info(Recorder *r, PyFrameObject *frame, int *error)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    if ((void *)code == r->not_delegating) {
        Py_DECREF(code);
        return NULL;
    }
    PyObject *key = PyLong_FromVoidPtr(code);
    PyObject *entry = key == NULL ? NULL : PyDict_GetItemWithError(r->delegators, key);
    Py_XDECREF(key);
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
        *error = PyErr_Occurred() != NULL;
        if (!*error) r->not_delegating = code;
        Py_DECREF(code);
        return NULL;
    }
    PyObject *info = PyTuple_GET_ITEM(entry, 1);
    PyObject *bytes = PyCode_GetCode(code);
    Py_DECREF(code);
    if (bytes == NULL) {
        *error = 1;
        return NULL;
    }
    int waits = at_yield_from(r, (const unsigned char *)PyBytes_AS_STRING(bytes),
                              PyBytes_GET_SIZE(bytes), PyFrame_GetLasti(frame));
    Py_DECREF(bytes);
    return waits ? info : NULL;
}

#define MAX_DELEGATION 64

/* The delegating generators the running generator's resume goes through, innermost first,
   into ``infos`` (borrowed); their count, or -1 with an exception set. */
static int
delegations(Recorder *r, PyObject **infos)
{
    if (r->active <= 0) return 0;  /* no generator is in a yield from */
    PyFrameObject *frame = PyEval_GetFrame();  /* borrowed: the generator's own */
    if (frame == NULL) return 0;
    PyFrameObject *back = PyFrame_GetBack(frame);
    int count = 0, error = 0;
    while (back != NULL && count < MAX_DELEGATION) {
        PyObject *info = delegating_info(r, back, &error);
        if (info == NULL) break;
        infos[count++] = info;
        PyFrameObject *next = PyFrame_GetBack(back);
        Py_DECREF(back);
        back = next;
    }
    Py_XDECREF(back);
    return error ? -1 : count;
}

static PyObject *
recorder_resume(Recorder *r, PyObject *info)
{
    PyObject *infos[MAX_DELEGATION];
    PyObject *events = thread_events(r);
    if (events == NULL) return NULL;
    int count = delegations(r, infos);  /* before the time: the walk is not the span's */
    if (count < 0) return NULL;
    PyObject *now = PyLong_FromLongLong(now_ns());
    if (now == NULL) return NULL;
    int failed = 0;
    if (count > 0) {
        PyObject *wrapped = PyLong_FromLong(count);
        failed = wrapped == NULL || PyList_Append(events, r->wrap) < 0
                 || PyList_Append(events, wrapped) < 0;
        Py_XDECREF(wrapped);
    }
    for (int i = count - 1; i >= 0 && !failed; i--)
        failed = PyList_Append(events, infos[i]) < 0 || PyList_Append(events, now) < 0;
    failed = failed || PyList_Append(events, info) < 0 || PyList_Append(events, now) < 0;
    Py_DECREF(now);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyObject *
recorder_delegate(Recorder *r, PyObject *info)
{
    PyFrameObject *frame = PyEval_GetFrame();  /* borrowed: the delegating generator's */
    if (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        PyObject *key = PyLong_FromVoidPtr(code);
        int known = key == NULL ? -1 : PyDict_Contains(r->delegators, key);
        int failed = known < 0;
        if (known == 0) {
            PyObject *entry = PyTuple_Pack(2, (PyObject *)code, info);
            failed = entry == NULL || PyDict_SetItem(r->delegators, key, entry) < 0;
            Py_XDECREF(entry);
            r->not_delegating = NULL;
        }
        Py_XDECREF(key);
        Py_DECREF(code);
        if (failed) return NULL;
    }
    r->active++;
    return recorder_leave(r, NULL);
}

static PyObject *
recorder_delegated(Recorder *r, PyObject *info)
{
    if (r->active > 0) r->active--;
    return recorder_resume(r, info);
}

static int
recorder_traverse(Recorder *r, visitproc visit, void *arg)
{
    Py_VISIT(r->local);
    Py_VISIT(r->delegators);
    Py_VISIT(r->wrap);
    Py_VISIT(r->events);
    return 0;
}

static int
recorder_clear(Recorder *r)
{
    Py_CLEAR(r->local);
    Py_CLEAR(r->delegators);
    Py_CLEAR(r->wrap);
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
    PyObject *local, *delegators, *wrap;
    int cache, send, yield_value, resume;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "Recorder(local, delegators, opcodes, wrap) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!(iiii)O:Recorder", &local, &PyDict_Type, &delegators,
                          &cache, &send, &yield_value, &resume, &wrap)) return NULL;
    Recorder *r = (Recorder *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    r->local = Py_NewRef(local);
    r->delegators = Py_NewRef(delegators);
    r->wrap = Py_NewRef(wrap);
    r->op_cache = cache;
    r->op_send = send;
    r->op_yield_value = yield_value;
    r->op_resume = resume;
    r->active = 0;
    r->not_delegating = NULL;
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
    {"resume", (PyCFunction)recorder_resume, METH_O,
     "resume(info): a generator resumes: enter() it, after the generators delegating to it"},
    {"delegate", (PyCFunction)recorder_delegate, METH_O,
     "delegate(info): leave() before a yield from, noting the generator as delegating"},
    {"delegated", (PyCFunction)recorder_delegated, METH_O,
     "delegated(info): resume(info) where a yield from ended (returned or raised)"},
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
    .tp_doc = "Recorder(local, delegators, opcodes, wrap): the Tracer's recording calls "
              "(splice/plugins/_recorder.c)",
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
