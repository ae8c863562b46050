/* Plugin.recurse_call and Plugin.run in C: an intercepting method's way on costs one C
   call, and a run adds no frame to the program's stack (``RunCall``, below).

   ``RecurseCall(function, pending, anywhere, active)`` replaces ``function`` (splice/plugin.py's
   ``Plugin.recurse_call``, which it follows step for step and which stays the reference
   when this module is not built) as a method: it is a method descriptor, so
   ``self.recurse_call(fn, *args)`` makes no bound method, and the arguments reach the callee
   as they came (no tuple or dict is made on the way to a continuation, a patched target's
   original body or an intercept's original). ``pending`` is the per-thread stack of calls
   received by an overdub or intercepting method (splice/runtime/context.py's ``PENDING``;
   ``anywhere``, its ``PENDING_ANYWHERE``, is empty when no thread has one), ``active`` the dynamic scope's map of patched functions (splice/runtime/dynamic.py's
   ``ACTIVE``). Optional: without a compiler splice uses the Python method. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include "_cstack.h"

typedef struct {
    PyObject_HEAD
    PyObject *function;   /* the Python method this one stands for */
    PyObject *pending;    /* thread-local: .stack = [(fn, continuation), ...] */
    PyObject *anywhere;   /* list: one item per entry of any thread's stack */
    PyObject *active;     /* dict: patched function -> target (.body) */
    vectorcallfunc vectorcall;
} RecurseCall;

static PyObject *str_stack, *str_body, *str_dynamic_scope, *str_splice, *str_bypass,
    *str_context, *str_recurse_call;

/* d[key] as a borrowed reference, or NULL with no error when absent or unhashable (the
   Python method's ``dict.get`` would raise for an unhashable callee; no entry is one) */
static PyObject *
lookup(PyObject *d, PyObject *key)
{
    PyObject *found = PyDict_GetItemWithError(d, key);
    if (found == NULL && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_TypeError))
        PyErr_Clear();
    return found;
}

/* the continuation for ``fn`` on this thread (new reference), NULL: none (or an error) */
static PyObject *
continuation_for(RecurseCall *r, PyObject *fn)
{
    if (PyList_GET_SIZE(r->anywhere) == 0) return NULL;
    PyObject *stack = PyObject_GetAttr(r->pending, str_stack);
    if (stack == NULL) return NULL;
    PyObject *continuation = NULL;
    Py_ssize_t size = PyList_Check(stack) ? PyList_GET_SIZE(stack) : 0;
    if (size) {
        PyObject *top = PyList_GET_ITEM(stack, size - 1);
        if (PyTuple_Check(top) && PyTuple_GET_SIZE(top) == 2 && PyTuple_GET_ITEM(top, 0) == fn) {
            continuation = PyTuple_GET_ITEM(top, 1);
            Py_INCREF(continuation);
        }
    }
    Py_DECREF(stack);
    return continuation;
}

/* whether ``plugin`` runs in dynamic-scope mode (its ``dynamic_scope``); -1 on an error */
static int
dynamic_scope(PyObject *plugin)
{
    PyObject *flag = PyObject_GetAttr(plugin, str_dynamic_scope);
    if (flag == NULL) return -1;
    int dynamic = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    return dynamic;
}

/* the call's own arguments as (args, kwargs) for the context's recurse_call */
static PyObject *
context_call(PyObject *self, PyObject *fn, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    PyObject *context = PyObject_GetAttr(self, str_context);
    if (context == NULL) return NULL;
    PyObject *positional = PyTuple_New(nargs);
    PyObject *keywords = PyDict_New();
    PyObject *result = NULL;
    if (positional == NULL || keywords == NULL) goto done;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(positional, i, args[i]);
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
            goto done;
    PyObject *call[4] = {context, fn, positional, keywords};
    result = PyObject_VectorcallMethod(str_recurse_call, call,
                                       4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
done:
    Py_DECREF(context);
    Py_XDECREF(positional);
    Py_XDECREF(keywords);
    return result;
}

static PyObject *
recurse_vectorcall_body(RecurseCall *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError,
                        "recurse_call() takes the plugin and the callee, then its arguments");
        return NULL;
    }
    PyObject *self = args[0], *fn = args[1];
    PyObject *const *rest = args + 2;
    Py_ssize_t nrest = nargs - 2;

    PyObject *continuation = continuation_for(r, fn);
    if (continuation != NULL) {
        PyObject *result = PyObject_Vectorcall(continuation, rest, nrest, kwnames);
        Py_DECREF(continuation);
        return result;
    }
    if (PyErr_Occurred()) return NULL;

    int dynamic = dynamic_scope(self);
    if (dynamic < 0) return NULL;
    if (dynamic) {  /* everything in a dynamic scope runs natively */
        PyObject *target = lookup(r->active, fn);
        if (target == NULL) {
            if (PyErr_Occurred()) return NULL;
            return PyObject_Vectorcall(fn, rest, nrest, kwnames);
        }
        Py_INCREF(target);  /* borrowed from a dict that other threads change */
        PyObject *body = PyObject_GetAttr(target, str_body);  /* a patched target's original */
        Py_DECREF(target);
        if (body == NULL) return NULL;
        PyObject *result = PyObject_Vectorcall(body, rest, nrest, kwnames);
        Py_DECREF(body);
        return result;
    }
    /* the plugin's state (splice.runtime.plugin_state; None on the class) and its table of
       intercepted originals */
    PyObject *state = PyObject_GetAttr(self, str_splice);
    if (state == NULL) return NULL;
    if (state == Py_None) {
        Py_DECREF(state);
        return context_call(self, fn, rest, nrest, kwnames);
    }
    PyObject *bypass = PyObject_GetAttr(state, str_bypass);
    Py_DECREF(state);
    if (bypass == NULL) return NULL;
    PyObject *original = PyDict_Check(bypass) ? lookup(bypass, fn) : NULL;
    if (original != NULL) {  /* an intercept of this plugin's first context */
        Py_INCREF(original);
        Py_DECREF(bypass);
        PyObject *result = PyObject_Vectorcall(original, rest, nrest, kwnames);
        Py_DECREF(original);
        return result;
    }
    Py_DECREF(bypass);
    if (PyErr_Occurred()) return NULL;
    return context_call(self, fn, rest, nrest, kwnames);
}

/* the C stack guard and the C budget around each call (_cstack.h) */
static PyObject *
recurse_vectorcall(RecurseCall *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int units;
    if (splice_enter_call(&units) < 0) return NULL;
    PyObject *result = recurse_vectorcall_body(r, args, nargsf, kwnames);
    splice_leave_call(units);
    return result;
}

static PyObject *
recurse_get(PyObject *r, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(r);
        return r;
    }
    return PyMethod_New(r, obj);
}

/* what introspection reads (help(), inspect.signature through __wrapped__) of an object
   standing for a Python method (``RecurseCall``, ``RunCall``: ``function`` first) is the
   Python method's */
typedef struct {
    PyObject_HEAD
    PyObject *function;
} StandsFor;

static PyObject *
stands_for_getattro(StandsFor *r, PyObject *name)
{
    PyObject *found = PyObject_GenericGetAttr((PyObject *)r, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
    PyErr_Clear();
    return PyObject_GetAttr(r->function, name);
}

static PyObject *
stands_for_wrapped(StandsFor *r, void *closure)
{
    Py_INCREF(r->function);
    return r->function;
}

static PyObject *
stands_for_doc(StandsFor *r, void *closure)
{
    return PyObject_GetAttrString(r->function, "__doc__");
}

static PyGetSetDef stands_for_getset[] = {
    {"__wrapped__", (getter)stands_for_wrapped, NULL, NULL, NULL},
    {"__doc__", (getter)stands_for_doc, NULL, NULL, NULL},
    {NULL},
};

static int
recurse_traverse(RecurseCall *r, visitproc visit, void *arg)
{
    Py_VISIT(r->function);
    Py_VISIT(r->pending);
    Py_VISIT(r->anywhere);
    Py_VISIT(r->active);
    return 0;
}

static int
recurse_clear(RecurseCall *r)
{
    Py_CLEAR(r->function);
    Py_CLEAR(r->pending);
    Py_CLEAR(r->anywhere);
    Py_CLEAR(r->active);
    return 0;
}

static void
recurse_dealloc(RecurseCall *r)
{
    PyObject_GC_UnTrack(r);
    recurse_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
recurse_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *function, *pending, *anywhere, *active;
    if (!PyArg_ParseTuple(args, "OOO!O!:RecurseCall", &function, &pending, &PyList_Type,
                          &anywhere, &PyDict_Type, &active))
        return NULL;
    RecurseCall *r = (RecurseCall *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    Py_INCREF(function); r->function = function;
    Py_INCREF(pending); r->pending = pending;
    Py_INCREF(anywhere); r->anywhere = anywhere;
    Py_INCREF(active); r->active = active;
    r->vectorcall = (vectorcallfunc)recurse_vectorcall;
    return (PyObject *)r;
}

static PyTypeObject RecurseCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._recurse.RecurseCall",
    .tp_basicsize = sizeof(RecurseCall),
    .tp_dealloc = (destructor)recurse_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(RecurseCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = recurse_get,
    .tp_getattro = (getattrofunc)stands_for_getattro,
    .tp_getset = stands_for_getset,
    .tp_traverse = (traverseproc)recurse_traverse,
    .tp_clear = (inquiry)recurse_clear,
    .tp_new = recurse_new,
};

/* ``RunCall(function, scopes)``: ``Plugin.run`` (``function``, the Python method it stands
   for and follows) with no frame of its own. ``plugin.run(fn, *args)`` looks up ``fn``'s
   entry in the plugin's context and calls it from C, so the program's frames sit where a
   direct call ``fn(*args)`` puts them: the same recursion depth is left, and a traceback
   out of the run shows no frame of splice's. A run that starts in a dynamic scope
   (``scopes``, a ``ContextVar`` of the scopes a run starts in) or of a plugin in
   dynamic-scope mode takes the Python method. Not a method descriptor: bound, it is a
   method object whose ``__func__`` is this object, which a context resolves as the
   Python method (``nests_plugins``: called under a context, it runs the composition). */

typedef struct {
    PyObject_HEAD
    PyObject *function;  /* the Python method this one stands for */
    PyObject *scopes;    /* ContextVar: the dynamic scopes (a tuple) a run starts in */
    vectorcallfunc vectorcall;
} RunCall;

static PyObject *str_table, *str_processes, *str_collect;

/* ``context._processes.collect()`` when the run started work in other processes, as the
   Python method's ``finally`` does: an exception it raises has the run's as its context */
static PyObject *
run_finish(PyObject *context, PyObject *result)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    if (result == NULL) PyErr_Fetch(&type, &value, &tb);
    PyObject *processes = PyObject_GetAttr(context, str_processes);
    int failed = processes == NULL;
    if (processes != NULL && processes != Py_None) {
        PyObject *collected = PyObject_CallMethodNoArgs(processes, str_collect);
        failed = collected == NULL;
        Py_XDECREF(collected);
    }
    Py_XDECREF(processes);
    if (!failed) {
        if (type != NULL) PyErr_Restore(type, value, tb);
        return result;
    }
    Py_XDECREF(result);
    if (type != NULL) {
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL) PyException_SetTraceback(value, tb);
        PyObject *ntype, *nvalue, *ntb;
        PyErr_Fetch(&ntype, &nvalue, &ntb);
        PyErr_NormalizeException(&ntype, &nvalue, &ntb);
        PyException_SetContext(nvalue, value);  /* steals value */
        Py_DECREF(type);
        Py_XDECREF(tb);
        PyErr_Restore(ntype, nvalue, ntb);
    }
    return NULL;
}

static PyObject *
run_vectorcall_body(RunCall *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2)  /* the Python method says what is missing */
        return PyObject_Vectorcall(r->function, args, nargs, kwnames);
    PyObject *self = args[0], *fn = args[1];
    int dynamic = dynamic_scope(self);
    if (dynamic < 0) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        /* not a plugin (``Plugin.run(f, x)``, called on the class): the Python method
           says what is wrong */
        PyErr_Clear();
        return PyObject_Vectorcall(r->function, args, nargs, kwnames);
    }
    PyObject *scopes = NULL;
    if (!dynamic && PyContextVar_Get(r->scopes, NULL, &scopes) < 0) return NULL;
    int scoped = 0;
    if (scopes != NULL) {
        scoped = PyObject_IsTrue(scopes);
        Py_DECREF(scopes);
        if (scoped < 0) return NULL;
    }
    if (dynamic || scoped)
        return PyObject_Vectorcall(r->function, args, nargs, kwnames);
    PyObject *context = PyObject_GetAttr(self, str_context);
    if (context == NULL) return NULL;
    PyObject *table = PyObject_GetAttr(context, str_table);
    PyObject *entry = table == NULL ? NULL : PyObject_GetItem(table, fn);
    Py_XDECREF(table);
    PyObject *result = NULL;
    if (entry != NULL) {
        result = PyObject_Vectorcall(entry, args + 2, nargs - 2, kwnames);
        Py_DECREF(entry);
    }
    result = run_finish(context, result);
    Py_DECREF(context);
    return result;
}

static PyObject *
run_vectorcall(RunCall *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int units;
    if (splice_enter_call(&units) < 0) return NULL;
    PyObject *result = run_vectorcall_body(r, args, nargsf, kwnames);
    splice_leave_call(units);
    return result;
}

static int
run_traverse(RunCall *r, visitproc visit, void *arg)
{
    Py_VISIT(r->function);
    Py_VISIT(r->scopes);
    return 0;
}

static int
run_clear(RunCall *r)
{
    Py_CLEAR(r->function);
    Py_CLEAR(r->scopes);
    return 0;
}

static void
run_dealloc(RunCall *r)
{
    PyObject_GC_UnTrack(r);
    run_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
run_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *function, *scopes;
    if (!PyArg_ParseTuple(args, "OO!:RunCall", &function, &PyContextVar_Type, &scopes))
        return NULL;
    RunCall *r = (RunCall *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    Py_INCREF(function); r->function = function;
    Py_INCREF(scopes); r->scopes = scopes;
    r->vectorcall = (vectorcallfunc)run_vectorcall;
    return (PyObject *)r;
}

static PyTypeObject RunCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._recurse.RunCall",
    .tp_basicsize = sizeof(RunCall),
    .tp_dealloc = (destructor)run_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(RunCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = recurse_get,
    .tp_getattro = (getattrofunc)stands_for_getattro,
    .tp_getset = stands_for_getset,
    .tp_traverse = (traverseproc)run_traverse,
    .tp_clear = (inquiry)run_clear,
    .tp_new = run_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice.runtime._recurse", NULL, -1, NULL,
};

PyMODINIT_FUNC
PyInit__recurse(void)
{
    if (!(str_stack = PyUnicode_InternFromString("stack"))
        || !(str_body = PyUnicode_InternFromString("body"))
        || !(str_dynamic_scope = PyUnicode_InternFromString("dynamic_scope"))
        || !(str_splice = PyUnicode_InternFromString("_splice"))
        || !(str_bypass = PyUnicode_InternFromString("bypass"))
        || !(str_context = PyUnicode_InternFromString("context"))
        || !(str_recurse_call = PyUnicode_InternFromString("recurse_call"))
        || !(str_table = PyUnicode_InternFromString("table"))
        || !(str_processes = PyUnicode_InternFromString("_processes"))
        || !(str_collect = PyUnicode_InternFromString("collect")))
        return NULL;
    if (PyType_Ready(&RecurseCallType) < 0 || PyType_Ready(&RunCallType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    Py_INCREF(&RecurseCallType);
    if (PyModule_AddObject(mod, "RecurseCall", (PyObject *)&RecurseCallType) < 0) return NULL;
    Py_INCREF(&RunCallType);
    if (PyModule_AddObject(mod, "RunCall", (PyObject *)&RunCallType) < 0) return NULL;
    return mod;
}
