/* Method calls under a context at the cost of CPython's own LOAD_METHOD.

   ``Methods(fast, slow)`` belongs to one dispatch table (``fast``: its exact dict of
   entries, ``slow``: its ``_slow_entry``). Generated code calls ``methods(obj, name)``
   where CPython would run ``LOAD_METHOD name`` and then calls what it returns with the
   receiver first: ``methods(obj, "m")(obj, *args)``. The attribute is looked up exactly as
   LOAD_METHOD looks it up (``_PyObject_GetMethod``: the instance ``__dict__``, descriptors,
   ``__getattribute__`` and ``__getattr__`` all as natively) and, unlike ``obj.m``, no bound
   method is made for a function found on the class:

   - a Python function found on the class: its entry in the table (called with ``obj``
     first, as the function would be);
   - a C method descriptor (``list.append``): itself, called with ``obj`` first as natively
     (generated code only takes this path for names no intercept or overlay takes);
   - anything else the lookup gives (a bound method, a function from the instance
     ``__dict__``, a module's function, a callable object): a small ``Rebound`` object that
     calls the entry of the bound method's function with its ``__self__``, or the callable's
     entry (a C function itself), in place of the receiver.

   Optional: splice falls back to the Python form of method calls (splice/runtime/
   callsites.py) when this module is not built. Version-specific: from 3.13 the
   declaration of _PyObject_GetMethod (still exported) left the public headers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(int) _PyObject_GetMethod(PyObject *obj, PyObject *name, PyObject **method);
#endif

/* A call target taking the receiver first: target(self, *args) or target(*args). */
typedef struct {
    PyObject_HEAD
    PyObject *target;
    PyObject *self;   /* NULL: drop the receiver */
    vectorcallfunc vectorcall;
} Rebound;

static PyTypeObject ReboundType;

static PyObject *
rebound_vectorcall(Rebound *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "splice: a method call without its receiver");
        return NULL;
    }
    if (r->self == NULL) {
        /* (no PY_VECTORCALL_ARGUMENTS_OFFSET: args[0] is not ours to overwrite) */
        return PyObject_Vectorcall(r->target, args + 1, nargs - 1, kwnames);
    }
    /* the same arguments with self in the receiver's place */
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[9];
    PyObject **stack = small + 1;
    if (total > 8) {
        stack = PyMem_Malloc((total + 1) * sizeof(PyObject *));
        if (stack == NULL) return PyErr_NoMemory();
        stack += 1;
    }
    stack[0] = r->self;
    for (Py_ssize_t i = 1; i < total; i++) stack[i] = args[i];
    PyObject *result = PyObject_Vectorcall(r->target, stack, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    if (total > 8) PyMem_Free(stack - 1);
    return result;
}

static int
rebound_traverse(Rebound *r, visitproc visit, void *arg)
{
    Py_VISIT(r->target);
    Py_VISIT(r->self);
    return 0;
}

static int
rebound_clear(Rebound *r)
{
    Py_CLEAR(r->target);
    Py_CLEAR(r->self);
    return 0;
}

static void
rebound_dealloc(Rebound *r)
{
    PyObject_GC_UnTrack(r);
    rebound_clear(r);
    PyObject_GC_Del(r);
}

static PyTypeObject ReboundType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.Rebound",
    .tp_basicsize = sizeof(Rebound),
    .tp_dealloc = (destructor)rebound_dealloc,
    /* tracked: a frame may keep one (a hidden local) in a cycle through its receiver */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Rebound, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)rebound_traverse,
    .tp_clear = (inquiry)rebound_clear,
};

static PyObject *
rebound_new(PyObject *target, PyObject *self)
{
    Rebound *r = PyObject_GC_New(Rebound, &ReboundType);
    if (r == NULL) return NULL;
    r->target = target;  /* steals */
    r->self = self;      /* new ref or NULL */
    r->vectorcall = (vectorcallfunc)rebound_vectorcall;
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

/* Method lookup of one dispatch table: lookup(obj, name) -> what to call with (obj, *args) */
typedef struct {
    PyObject_HEAD
    PyObject *fast;   /* exact dict */
    PyObject *slow;   /* slow_entry(callee) */
    vectorcallfunc vectorcall;
} Methods;

static PyObject *
entry_of(Methods *m, PyObject *callee)   /* new reference */
{
    PyObject *entry = PyDict_GetItemWithError(m->fast, callee);
    if (entry != NULL) { Py_INCREF(entry); return entry; }
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
    }
    return PyObject_CallOneArg(m->slow, callee);
}

static PyObject *
methods_vectorcall(Methods *m, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "splice: method lookup takes (receiver, name)");
        return NULL;
    }
    PyObject *obj = args[0];
    PyObject *meth = NULL;
    int unbound = _PyObject_GetMethod(obj, args[1], &meth);
    if (meth == NULL) return NULL;
    if (unbound) {
        if (PyFunction_Check(meth)) {
            PyObject *entry = entry_of(m, meth);
            Py_DECREF(meth);
            return entry;
        }
        return meth;  /* a C method descriptor: called with the receiver first, as natively */
    }
    if (PyMethod_Check(meth)) {
        PyObject *self = PyMethod_GET_SELF(meth);
        PyObject *entry = entry_of(m, PyMethod_GET_FUNCTION(meth));
        if (entry == NULL) { Py_DECREF(meth); return NULL; }
        Py_INCREF(self);
        Py_DECREF(meth);
        PyObject *r = rebound_new(entry, self);
        if (r == NULL) { Py_DECREF(entry); Py_DECREF(self); }
        return r;
    }
    PyObject *target;
    if (PyCFunction_Check(meth)) {
        target = meth;
    } else {
        target = entry_of(m, meth);
        Py_DECREF(meth);
        if (target == NULL) return NULL;
    }
    PyObject *r = rebound_new(target, NULL);
    if (r == NULL) Py_DECREF(target);
    return r;
}

static int
methods_traverse(Methods *m, visitproc visit, void *arg)
{
    Py_VISIT(m->fast);
    Py_VISIT(m->slow);
    return 0;
}

static int
methods_clear(Methods *m)
{
    Py_CLEAR(m->fast);
    Py_CLEAR(m->slow);
    return 0;
}

static void
methods_dealloc(Methods *m)
{
    PyObject_GC_UnTrack(m);
    methods_clear(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *
methods_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast, *slow;
    if (!PyArg_ParseTuple(args, "O!O:Methods", &PyDict_Type, &fast, &slow)) return NULL;
    Methods *m = (Methods *)type->tp_alloc(type, 0);
    if (m == NULL) return NULL;
    Py_INCREF(fast); m->fast = fast;
    Py_INCREF(slow); m->slow = slow;
    m->vectorcall = (vectorcallfunc)methods_vectorcall;
    return (PyObject *)m;
}

static PyTypeObject MethodsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.Methods",
    .tp_basicsize = sizeof(Methods),
    .tp_dealloc = (destructor)methods_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Methods, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)methods_traverse,
    .tp_clear = (inquiry)methods_clear,
    .tp_new = methods_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice.runtime._methods", NULL, -1, NULL,
};

PyMODINIT_FUNC
PyInit__methods(void)
{
    if (PyType_Ready(&ReboundType) < 0 || PyType_Ready(&MethodsType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    Py_INCREF(&MethodsType);
    if (PyModule_AddObject(mod, "Methods", (PyObject *)&MethodsType) < 0) return NULL;
    return mod;
}
