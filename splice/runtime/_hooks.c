/* Calls under a context without a frame of splice's on the program's stack: per-call hooks
   (``Hooked``), class instantiation (``Instantiator``), a specializing entry's choice of
   code (``Chosen``), implicit-call protocols written as generators (``Driven``) and
   calls through a type's call slot: constructors (``Constructor``; ``SlotCall`` without
   it), callable objects (``SlotCall``). Each guards the C stack (_cstack.h).

   ``Hooked(fn, target, prehooks, posthooks, overdub, continuation, pending, anywhere,
   failed)`` is what the dispatch table gives for ``fn`` under a context with per-call
   hooks (splice/runtime/context.py's ``Context._wrap``, whose Python form it follows step
   for step and which stays the reference when this module is not built). A call of it:

   1. packs the arguments as the hooks see them (a tuple and a dict);
   2. calls each ``prehook(fn, args, kwargs)`` of ``prehooks`` (plugins, outermost first);
   3. calls ``target(*args, **kwargs)`` (with no posthook and no overdub, and keywords the
      prehooks left as passed, with the caller's own arguments, handed over to the callee's
      frame as natively: ``call_handing_over``), or, with an ``overdub`` (the outermost plugin's
      bound method), pushes ``(fn, continuation)`` on this thread's ``pending.stack`` (and
      an item on ``anywhere``), calls ``overdub(fn, args, kwargs)`` and pops both, whatever
      happened;
   4. calls each ``posthook(result, fn, args, kwargs)`` of ``posthooks``.

   With ``weak=True`` (a nested function, which the dispatch table then keys weakly:
   splice/runtime/table.py) the entry holds ``fn`` by a weak reference and a call holds it
   only while it runs, so the entry does not keep alive a function the program dropped.
   Call sites keep a callee they computed alive through its call (``held_call`` below);
   should one reach the entry after the program let go of ``fn`` anyway, ``target`` stands
   in for it (the hooks see the function rebuilt from ``fn``'s code, with its cells).

   Being C, it is no frame: tracebacks, ``sys._getframe``, ``warnings.warn(stacklevel=)``,
   logging's caller and the recursion depth see the program's frames only (the hooks' own
   frames exist while a hook runs, not while the callee does). An exception a hook raises
   (an ``Exception`` other than ``RecursionError``) becomes ``failed(plugin, hook, fn,
   exc)``, a ``splice.PluginError``, raised with ``exc`` as its cause; what the callee or
   an overdub raises passes untouched. Optional: without a compiler splice uses the Python
   ``splice_call``. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include "_cstack.h"

typedef struct {
    PyObject_HEAD
    PyObject *fn;            /* the callee the program called (a weak reference: ``weak``) */
    PyObject *target;        /* what runs it (its entry) */
    PyObject *prehooks;      /* tuple of plugins */
    PyObject *posthooks;     /* tuple of plugins */
    PyObject *overdub;       /* bound overdub of the outermost overdubbing plugin, or None */
    PyObject *continuation;  /* what that overdub's recurse_call goes on with */
    PyObject *pending;       /* thread-local: .stack = [(fn, continuation), ...] */
    PyObject *anywhere;      /* list: one item per entry of any thread's stack */
    PyObject *failed;        /* failed(plugin, hook, fn, exc) -> PluginError */
    int weak;                /* ``fn`` is a weak reference to the callee */
    PyObject *weakreflist;
    vectorcallfunc vectorcall;
} Hooked;

/* the referent of weak reference ``ref`` (a new reference), or NULL when it died */
static PyObject *
referent_of(PyObject *ref)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *obj;
    if (PyWeakref_GetRef(ref, &obj) < 0) PyErr_Clear();
    return obj;
#else
    PyObject *obj = PyWeakref_GetObject(ref);  /* borrowed */
    if (obj == NULL) { PyErr_Clear(); return NULL; }
    if (obj == Py_None) return NULL;
    Py_INCREF(obj);
    return obj;
#endif
}

/* what an entry keeps of its callee ``obj`` (a new reference): a weak reference to it with
   ``weak``, else ``obj`` itself */
static PyObject *
kept(PyObject *obj, int weak)
{
    if (weak) return PyWeakref_NewRef(obj, NULL);
    Py_INCREF(obj);
    return obj;
}

/* the callee an entry keeps as ``held`` (a new reference), or NULL with no error set once
   a weakly held one died */
static PyObject *
callee_kept(PyObject *held, int weak)
{
    if (!weak) { Py_INCREF(held); return held; }
    return referent_of(held);
}

/* the callee a call of ``h`` passes to the hooks (a new reference): ``fn``, or with
   ``weak`` its referent, or ``target`` when it died */
static PyObject *
hooked_callee(Hooked *h)
{
    PyObject *fn = callee_kept(h->fn, h->weak);
    if (fn == NULL) { Py_INCREF(h->target); fn = h->target; }
    return fn;
}

/* ``fn(*args)`` for a call ``entry`` received: the arguments handed over to ``fn``'s frame
   when the interpreter's CALL made the call and ``fn`` is a Python function (_cstack.h:
   a parameter the callee deletes then frees its object there, as natively), else lent as
   they are */
static vectorcallfunc function_vectorcall;  /* every Python function's (module init) */

static PyObject *
call_handing_over(PyObject *entry, PyObject *fn, PyObject *const *args, size_t nargsf,
                  PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    if (!splice_frame_callee(fn, function_vectorcall) || !splice_args_on_stack(entry, args, n))
        return PyObject_Vectorcall(fn, args, nargsf, kwnames);
    PyObject *moved[SPLICE_HAND_OVER_MAX];
    splice_take_slots(args, n, moved);
    return PyObject_Vectorcall(fn, moved, (size_t)nargs, kwnames);
}

static PyObject *str_prehook, *str_posthook, *str_stack;

/* Turn the pending exception of ``plugin``'s ``hook`` into its PluginError (an Exception
   other than RecursionError; anything else passes as it is). Returns NULL. */
static PyObject *
hook_failed(Hooked *h, PyObject *fn, PyObject *plugin, PyObject *hook)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_RecursionError))
        return NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL) PyException_SetTraceback(value, tb);
    PyObject *error = PyObject_CallFunctionObjArgs(h->failed, plugin, hook, fn, value, NULL);
    if (error == NULL) {
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
        return NULL;
    }
    /* raise error from value */
    Py_INCREF(value);
    PyException_SetCause(error, value);          /* steals; sets __suppress_context__ */
    PyException_SetContext(error, value);        /* steals the reference of the fetch */
    Py_XDECREF(type); Py_XDECREF(tb);
    /* (PyErr_SetObject would make the exception being handled its context instead) */
    PyObject *error_type = (PyObject *)Py_TYPE(error);
    Py_INCREF(error_type);
    PyErr_Restore(error_type, error, NULL);  /* steals both */
    return NULL;
}

/* Call ``hook`` of every plugin of ``plugins`` with ``arguments``; -1 on an error. */
static int
run_hooks(Hooked *h, PyObject *fn, PyObject *plugins, PyObject *hook,
          PyObject *const *arguments, size_t n)
{
    Py_ssize_t count = PyTuple_GET_SIZE(plugins);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *plugin = PyTuple_GET_ITEM(plugins, i);
        PyObject *method = PyObject_GetAttr(plugin, hook);
        if (method == NULL) { hook_failed(h, fn, plugin, hook); return -1; }
        splice_own_units(1);
        PyObject *result = PyObject_Vectorcall(method, arguments, n, NULL);
        splice_own_units(-1);
        Py_DECREF(method);
        if (result == NULL) { hook_failed(h, fn, plugin, hook); return -1; }
        Py_DECREF(result);
    }
    return 0;
}

/* overdub(fn, args, kwargs) with (fn, continuation) on this thread's pending stack */
static PyObject *
call_overdub(Hooked *h, PyObject *fn, PyObject *args, PyObject *kwargs)
{
    PyObject *stack = PyObject_GetAttr(h->pending, str_stack);
    if (stack == NULL) return NULL;
    if (!PyList_Check(stack)) {
        Py_DECREF(stack);
        PyErr_SetString(PyExc_TypeError, "splice: the pending stack is not a list");
        return NULL;
    }
    PyObject *item = PyTuple_Pack(2, fn, h->continuation);
    if (item == NULL || PyList_Append(h->anywhere, Py_None) < 0) {
        Py_XDECREF(item); Py_DECREF(stack);
        return NULL;
    }
    if (PyList_Append(stack, item) < 0) {
        Py_DECREF(item); Py_DECREF(stack);
        PySequence_DelItem(h->anywhere, -1);
        return NULL;
    }
    Py_DECREF(item);
    PyObject *arguments[3] = {fn, args, kwargs};
    PyObject *result = PyObject_Vectorcall(h->overdub, arguments, 3, NULL);
    /* pop both, keeping the exception the overdub raised (as ``finally`` does) */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int failed = 0;
    Py_ssize_t size = PyList_GET_SIZE(stack);
    if (size > 0) failed |= PyList_SetSlice(stack, size - 1, size, NULL) < 0;
    size = PyList_GET_SIZE(h->anywhere);
    if (size > 0) failed |= PyList_SetSlice(h->anywhere, size - 1, size, NULL) < 0;
    Py_DECREF(stack);
    if (failed) {
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
        Py_XDECREF(result);
        return NULL;
    }
    PyErr_Restore(type, value, tb);
    return result;
}

/* whether the hooks left ``kwargs`` as the call passed its keywords (``kwnames``, their
   values ``values``): the same names, each bound to the same object */
static int
keywords_as_passed(PyObject *kwargs, PyObject *const *values, PyObject *kwnames)
{
    Py_ssize_t count = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (!PyDict_CheckExact(kwargs) || PyDict_GET_SIZE(kwargs) != count) return 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyDict_GetItemWithError(kwargs, PyTuple_GET_ITEM(kwnames, i));
        if (value != values[i]) {
            PyErr_Clear();  /* (a lookup error: then not as passed) */
            return 0;
        }
    }
    return 1;
}

static PyObject *
hooked_vectorcall_body(Hooked *h, PyObject *const *stack, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *args = PyTuple_New(nargs);
    if (args == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(stack[i]);
        PyTuple_SET_ITEM(args, i, stack[i]);
    }
    PyObject *kwargs = PyDict_New();
    if (kwargs == NULL) { Py_DECREF(args); return NULL; }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), stack[nargs + i]) < 0) {
                Py_DECREF(args); Py_DECREF(kwargs);
                return NULL;
            }
        }
    }
    PyObject *result = NULL;
    PyObject *fn = hooked_callee(h);  /* held while the call runs */
    PyObject *pre[3] = {fn, args, kwargs};
    if (run_hooks(h, fn, h->prehooks, str_prehook, pre, 3) < 0) goto done;
    if (h->overdub == Py_None && PyTuple_GET_SIZE(h->posthooks) == 0 &&
            keywords_as_passed(kwargs, stack + nargs, kwnames)) {
        /* nothing asks for the arguments after the call: the hooks' packing goes before
           it, and the callee gets the caller's arguments as natively */
        Py_CLEAR(args);
        Py_CLEAR(kwargs);
        result = call_handing_over((PyObject *)h, h->target, stack, nargsf, kwnames);
        goto done;
    }
    if (h->overdub != Py_None) {
        result = call_overdub(h, fn, args, kwargs);
    } else {
        result = PyObject_Call(h->target, args, kwargs);
    }
    if (result == NULL) goto done;
    PyObject *post[4] = {result, fn, args, kwargs};
    if (run_hooks(h, fn, h->posthooks, str_posthook, post, 4) < 0) Py_CLEAR(result);
done:
    Py_DECREF(fn);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return result;
}

/* the C stack guard and the C budget around each call (_cstack.h) */
static PyObject *
hooked_vectorcall(Hooked *h, PyObject *const *stack, size_t nargsf, PyObject *kwnames)
{
    int units;
    if (splice_enter_call(&units) < 0) return NULL;
    PyObject *result = hooked_vectorcall_body(h, stack, nargsf, kwnames);
    splice_leave_call(units);
    return result;
}

static int
hooked_traverse(Hooked *h, visitproc visit, void *arg)
{
    Py_VISIT(h->fn); Py_VISIT(h->target); Py_VISIT(h->prehooks); Py_VISIT(h->posthooks);
    Py_VISIT(h->overdub); Py_VISIT(h->continuation); Py_VISIT(h->pending);
    Py_VISIT(h->anywhere); Py_VISIT(h->failed);
    return 0;
}

static int
hooked_clear(Hooked *h)
{
    Py_CLEAR(h->fn); Py_CLEAR(h->target); Py_CLEAR(h->prehooks); Py_CLEAR(h->posthooks);
    Py_CLEAR(h->overdub); Py_CLEAR(h->continuation); Py_CLEAR(h->pending);
    Py_CLEAR(h->anywhere); Py_CLEAR(h->failed);
    return 0;
}

static void
hooked_dealloc(Hooked *h)
{
    PyObject_GC_UnTrack(h);
    if (h->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)h);
    hooked_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *
hooked_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fn, *target, *prehooks, *posthooks, *overdub, *continuation, *pending,
        *anywhere, *failed;
    int weak = 0;
    static char *keywords[] = {"", "", "", "", "", "", "", "", "", "weak", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!O!OOOO!O|p:Hooked", keywords, &fn,
                                     &target, &PyTuple_Type, &prehooks, &PyTuple_Type,
                                     &posthooks, &overdub, &continuation, &pending,
                                     &PyList_Type, &anywhere, &failed, &weak))
        return NULL;
    Hooked *h = (Hooked *)type->tp_alloc(type, 0);
    if (h == NULL) return NULL;
    h->fn = kept(fn, weak);
    if (h->fn == NULL) { Py_DECREF(h); return NULL; }
    h->weak = weak;
    Py_INCREF(target); h->target = target;
    Py_INCREF(prehooks); h->prehooks = prehooks;
    Py_INCREF(posthooks); h->posthooks = posthooks;
    Py_INCREF(overdub); h->overdub = overdub;
    Py_INCREF(continuation); h->continuation = continuation;
    Py_INCREF(pending); h->pending = pending;
    Py_INCREF(anywhere); h->anywhere = anywhere;
    Py_INCREF(failed); h->failed = failed;
    h->vectorcall = (vectorcallfunc)hooked_vectorcall;
    return (PyObject *)h;
}

static PyObject *
hooked_get_fn(Hooked *h, void *closure)
{
    return hooked_callee(h);
}

static PyObject *
hooked_get_weak(Hooked *h, void *closure)
{
    return PyBool_FromLong(h->weak);
}

static PyObject *
hooked_get_target(Hooked *h, void *closure)
{
    Py_INCREF(h->target);
    return h->target;
}

static PyObject *
hooked_get_continuation(Hooked *h, void *closure)
{
    Py_INCREF(h->continuation);
    return h->continuation;
}

/* __name__, __qualname__, __module__: the callee's, so that errors CPython raises about
   the call (an argument after * that is not iterable, a duplicate keyword) name it */
static PyObject *
hooked_get_callee_attribute(Hooked *h, void *name)
{
    PyObject *fn = hooked_callee(h);
    PyObject *value = PyObject_GetAttrString(fn, (const char *)name);
    Py_DECREF(fn);
    return value;
}

static PyGetSetDef hooked_getset[] = {
    {"callee", (getter)hooked_get_fn, NULL, "the callee the program called", NULL},
    {"weak", (getter)hooked_get_weak, NULL, "whether the callee is held weakly", NULL},
    {"target", (getter)hooked_get_target, NULL, "what runs the callee (its entry)", NULL},
    {"continuation", (getter)hooked_get_continuation, NULL,
     "what the overdub's recurse_call goes on with (None: no overdub)", NULL},
    {"__name__", (getter)hooked_get_callee_attribute, NULL, "the callee's", "__name__"},
    {"__qualname__", (getter)hooked_get_callee_attribute, NULL, "the callee's", "__qualname__"},
    {"__module__", (getter)hooked_get_callee_attribute, NULL, "the callee's", "__module__"},
    {NULL},
};

static PyObject *
hooked_repr(Hooked *h)
{
    PyObject *fn = hooked_callee(h);
    PyObject *repr = PyUnicode_FromFormat("<splice hooks around %R>", fn);
    Py_DECREF(fn);
    return repr;
}

static PyTypeObject HookedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Hooked",
    .tp_basicsize = sizeof(Hooked),
    .tp_dealloc = (destructor)hooked_dealloc,
    .tp_repr = (reprfunc)hooked_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Hooked, vectorcall),
    .tp_weaklistoffset = offsetof(Hooked, weakreflist),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)hooked_traverse,
    .tp_clear = (inquiry)hooked_clear,
    .tp_getset = hooked_getset,
    .tp_new = hooked_new,
};

/* ``Instantiator(cls, table, general)``: calling ``cls`` under a context, without a frame
   (splice/runtime/context.py's ``Context._instantiator``, whose Python ``instance`` it
   follows for the common case and calls, as ``general``, for every other one): when
   ``cls.__init__`` is a Python function and ``cls.__new__`` is not (``object.__new__``, a
   builtin base's), ``obj = cls.__new__(cls, *args, **kwargs)``, then the table's entry
   of the ``__init__`` of ``type(obj)`` with ``(obj, *args, **kwargs)``, as
   ``type.__call__`` does; ``__init__`` returning anything but None is the same TypeError.
   When neither is a Python function (a subclass of ``list`` adding none), ``cls`` itself is
   called, as the general path would call it. Code that looks at its caller from ``__init__`` (``typing.TypeVar``, ``ParamSpec``
   finding their module) sees the program's frame. */
typedef struct {
    PyObject_HEAD
    PyObject *cls;
    PyObject *table;     /* the dispatch table: table[init] -> its entry */
    PyObject *general;   /* the Python instantiation, for every other case */
    vectorcallfunc vectorcall;
} Instantiator;

static PyObject *str_init, *str_new;

/* fn(first, *args) with the call's own arguments and keywords */
static PyObject *
call_with_first(PyObject *fn, PyObject *first, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8];
    PyObject **stack = small;
    if (total + 1 > 8) {
        stack = PyMem_Malloc((total + 1) * sizeof(PyObject *));
        if (stack == NULL) return PyErr_NoMemory();
    }
    stack[0] = first;
    for (Py_ssize_t i = 0; i < total; i++) stack[i + 1] = args[i];
    PyObject *result = PyObject_Vectorcall(fn, stack, nargs + 1, kwnames);
    if (stack != small) PyMem_Free(stack);
    return result;
}

/* ``fn(first, *args)`` (``first`` NULL: ``fn(*args)``) spending the unit ``type.__call__``
   spends natively on top of it */
static PyObject *
counted_call(PyObject *fn, PyObject *first, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
#if SPLICE_COUNT_INSTANTIATION
    if (Py_EnterRecursiveCall(" while calling a Python object")) return NULL;
#endif
    PyObject *result = first == NULL ? PyObject_Vectorcall(fn, args, nargs, kwnames) :
        call_with_first(fn, first, args, nargs, kwnames);
#if SPLICE_COUNT_INSTANTIATION
    Py_LeaveRecursiveCall();
#endif
    return result;
}

/* The Python units the interpreter's own instantiation of ``kind`` spends below
   ``__init__``'s frame (_cstack.h): where it would specialise the call (``object.__new__``,
   no keywords). */
static inline int
init_shim_units(PyTypeObject *kind, PyObject *kwnames)
{
    return kind->tp_new == PyBaseObject_Type.tp_new && kwnames == NULL ?
        SPLICE_INIT_SHIM_UNITS : 0;
}

static PyObject *
instantiator_vectorcall_body(Instantiator *in, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    /* __init__ as type's slot finds it: unbound, so a staticmethod is not a function */
    PyObject *init = PyType_Check(in->cls) ?
        _PyType_Lookup((PyTypeObject *)in->cls, str_init) : NULL;
    if (init == NULL) return counted_call(in->general, NULL, args, nargs, kwnames);
    Py_INCREF(init);
    PyObject *new = PyObject_GetAttr(in->cls, str_new);
    if (new == NULL) { Py_DECREF(init); return NULL; }
    if (!PyFunction_Check(init) && !PyFunction_Check(new)) {
        /* no Python __new__ or __init__ to enter (a subclass of list or dict that adds
           none): the class's own call, as the general path would make it, without it */
        Py_DECREF(init); Py_DECREF(new);
        return PyObject_Vectorcall(in->cls, args, nargsf, kwnames);
    }
    if (!PyFunction_Check(init) || PyFunction_Check(new)) {
        Py_DECREF(init); Py_DECREF(new);
        return counted_call(in->general, NULL, args, nargs, kwnames);
    }
    PyObject *obj = call_with_first(new, in->cls, args, nargs, kwnames);
    Py_DECREF(new);
    if (obj == NULL) { Py_DECREF(init); return NULL; }
    PyTypeObject *kind = Py_TYPE(obj);
    if ((PyObject *)kind != in->cls) {
        if (!PyType_IsSubtype(kind, (PyTypeObject *)in->cls)) {
            Py_DECREF(init);
            return obj;
        }
        Py_SETREF(init, _PyType_Lookup(kind, str_init));
        if (init == NULL) { Py_DECREF(obj); return PyErr_Format(PyExc_TypeError,
            "splice: %.200s has no __init__", kind->tp_name); }
        Py_INCREF(init);
        if (!PyFunction_Check(init)) {
            /* bound through its descriptor, as type's slot calls it */
            descrgetfunc get = Py_TYPE(init)->tp_descr_get;
            if (get != NULL) {
                Py_SETREF(init, get(init, obj, (PyObject *)kind));
                if (init == NULL) { Py_DECREF(obj); return NULL; }
            }
            PyObject *result = counted_call(init, NULL, args, nargs, kwnames);
            Py_DECREF(init);
            if (result == NULL) { Py_DECREF(obj); return NULL; }
            Py_DECREF(result);
            return obj;
        }
    }
    PyObject *entry = PyObject_GetItem(in->table, init);
    Py_DECREF(init);
    if (entry == NULL) { Py_DECREF(obj); return NULL; }
    int shim = init_shim_units(kind, kwnames);
    splice_spend_py_units(shim);
    PyObject *result = counted_call(entry, obj, args, nargs, kwnames);
    splice_spend_py_units(-shim);
    Py_DECREF(entry);
    if (result == NULL) { Py_DECREF(obj); return NULL; }
    if (result != Py_None) {
        PyErr_Format(PyExc_TypeError, "__init__() should return None, not '%.200s'",
                     Py_TYPE(result)->tp_name);
        Py_DECREF(result); Py_DECREF(obj);
        return NULL;
    }
    Py_DECREF(result);
    return obj;
}

/* the C stack guard; the unit ``type.__call__`` spends natively (_cstack.h) is counted
   where the body calls Python code, since what else it calls counts for itself as
   natively (the class's own call; on 3.11 ``object.__new__``, a builtin's call, where
   ``type.__call__`` spends its unit while ``tp_new`` runs) */
static PyObject *
instantiator_vectorcall(Instantiator *in, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames)
{
    if (splice_check_stack() < 0) return NULL;
    return instantiator_vectorcall_body(in, args, nargsf, kwnames);
}

static int
instantiator_traverse(Instantiator *in, visitproc visit, void *arg)
{
    Py_VISIT(in->cls); Py_VISIT(in->table); Py_VISIT(in->general);
    return 0;
}

static int
instantiator_clear(Instantiator *in)
{
    Py_CLEAR(in->cls); Py_CLEAR(in->table); Py_CLEAR(in->general);
    return 0;
}

static void
instantiator_dealloc(Instantiator *in)
{
    PyObject_GC_UnTrack(in);
    instantiator_clear(in);
    Py_TYPE(in)->tp_free((PyObject *)in);
}

static PyObject *
instantiator_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *cls, *table, *general;
    if (!PyArg_ParseTuple(args, "O!OO:Instantiator", &PyType_Type, &cls, &table, &general))
        return NULL;
    Instantiator *in = (Instantiator *)type->tp_alloc(type, 0);
    if (in == NULL) return NULL;
    Py_INCREF(cls); in->cls = cls;
    Py_INCREF(table); in->table = table;
    Py_INCREF(general); in->general = general;
    in->vectorcall = (vectorcallfunc)instantiator_vectorcall;
    return (PyObject *)in;
}

static PyObject *
instantiator_get_cls(Instantiator *in, void *closure)
{
    Py_INCREF(in->cls);
    return in->cls;
}

static PyObject *
instantiator_get_attribute(Instantiator *in, void *name)
{
    return PyObject_GetAttrString(in->cls, (const char *)name);
}

static PyGetSetDef instantiator_getset[] = {
    {"cls", (getter)instantiator_get_cls, NULL, "the class it instantiates", NULL},
    {"__name__", (getter)instantiator_get_attribute, NULL, "the class's", "__name__"},
    {"__qualname__", (getter)instantiator_get_attribute, NULL, "the class's", "__qualname__"},
    {NULL},
};

static PyTypeObject InstantiatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Instantiator",
    .tp_basicsize = sizeof(Instantiator),
    .tp_dealloc = (destructor)instantiator_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Instantiator, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)instantiator_traverse,
    .tp_clear = (inquiry)instantiator_clear,
    .tp_getset = instantiator_getset,
    .tp_new = instantiator_new,
};

/* ``Chosen(choose, callee, skip=0, runners=None)``: ``choose(*args, **kwargs)`` gives what
   runs the call, which is then called with the same arguments but the first ``skip``
   positional ones (splice/runtime/specializing.py's specializing entry: ``choose`` picks
   the code instance for the arguments' classes; splice/program.py's top-level calls
   ``call(fn, *args)``, skip 1). ``choose`` has returned before the callee starts, so no
   frame of splice's is on the stack while it runs, and an error binding the arguments is
   raised from the caller's line alone. The callee's frame is handed the caller's
   arguments where CPython's own call would move them (``call_handing_over``).

   ``runners``, when given, is the specializing entry's own choice made before: a dict from
   the tuple of the positional arguments' exact classes to ``(instance, function, check)``.
   A call without keywords whose classes are there and whose ``check()`` (a
   ``splice.cache._guards.GuardCheck``: the instance is valid and its guards hold) returns
   True runs ``function`` at once, with no Python code of splice's; any other call asks
   ``choose``, which checks again in Python, rebuilds what must be rebuilt and updates the
   dict. The dict's tuples are read, never changed, here. The last ``CHOSEN_WAYS`` runners
   that ran are kept with their classes (the oldest replaced first), so calls whose classes
   are among them skip the tuple and the lookup, at a polymorphic call site too (a method
   called on instances of a few subclasses); a runner's check still runs on every call,
   and a runner the dict no longer holds is one whose check fails (the entry drops a runner
   only once it is unusable), so it is never run stale.

   ``weak=True``: ``callee`` (read for its names only) is held by a weak reference, as
   ``Hooked`` holds a nested function; once it died, its names are ``choose.__self__``'s
   (the specializing entry keeps them). */
#define CHOSEN_WAYS 4

/* ``generic``, when given, is a list of one item the specializing entry keeps up to date:
   its generic runner ``(instance, function, check)`` (or None before a call needed it). A
   call with keywords runs its function at once while its check holds; otherwise it asks
   ``choose``, which (re)builds it. */
typedef struct {
    PyObject_HEAD
    PyObject *choose;
    PyObject *callee;    /* a weak reference to it with ``weak`` */
    int weak;
    Py_ssize_t skip;
    PyObject *runners;   /* dict or NULL */
    PyObject *generic;   /* list of one runner (or None), or NULL */
    /* the classes of the last calls run from ``runners`` (or NULL), and their runners */
    PyObject *last_key[CHOSEN_WAYS];
    PyObject *last_runner[CHOSEN_WAYS];
    int next_way;  /* the way replaced next */
    PyObject *weakreflist;
    vectorcallfunc vectorcall;
} Chosen;

/* which of the last calls' ways has these arguments' classes (-1: none), so a call site that
   passes the same few classes pays no tuple and no dict lookup */
static int
chosen_way(Chosen *c, PyObject *const *args, Py_ssize_t nargs)
{
    for (int way = 0; way < CHOSEN_WAYS; way++) {
        PyObject *key = c->last_key[way];
        if (key == NULL || PyTuple_GET_SIZE(key) != nargs) continue;
        Py_ssize_t i = 0;
        while (i < nargs && (PyObject *)Py_TYPE(args[i]) == PyTuple_GET_ITEM(key, i)) i++;
        if (i == nargs) return way;
    }
    return -1;
}

/* keep ``runner`` (for ``classes``, both new references, stolen) in a way, or forget the
   way's runner (both NULL) */
static void
chosen_remember(Chosen *c, int way, PyObject *classes, PyObject *runner)
{
    PyObject *old_key = c->last_key[way], *old_runner = c->last_runner[way];
    c->last_key[way] = classes;
    c->last_runner[way] = runner;
    Py_XDECREF(old_key);
    Py_XDECREF(old_runner);
}

/* whether ``cls`` can key the runners without running code of the program's: its metaclass
   hashes and compares it as ``type`` does (splice/keys.py, ``keyable_class``) */
static inline int
keyable_class(PyTypeObject *cls)
{
    PyTypeObject *meta = Py_TYPE(cls);
    return meta == &PyType_Type || (meta->tp_hash == PyType_Type.tp_hash
                                    && meta->tp_richcompare == PyType_Type.tp_richcompare);
}

/* a runner's function (a new reference) if its check holds, else NULL (with an error set
   if the check failed to run) */
static PyObject *
runner_function(PyObject *runner)
{
    PyObject *check = PyTuple_GET_ITEM(runner, 2);
    if (check == Py_None) return NULL;
    PyObject *holds = PyObject_CallNoArgs(check);
    if (holds == NULL) return NULL;
    PyObject *function = NULL;
    if (holds == Py_True) {
        function = PyTuple_GET_ITEM(runner, 1);
        Py_INCREF(function);
    }
    Py_DECREF(holds);
    return function;
}

/* the generic runner's function (a new reference) for a call with keywords, or NULL (with
   an error set on failure) */
static PyObject *
chosen_generic(Chosen *c)
{
    PyObject *runner = PyList_GET_ITEM(c->generic, 0);
    if (!PyTuple_CheckExact(runner) || PyTuple_GET_SIZE(runner) != 3) return NULL;
    Py_INCREF(runner);  /* the check may let other threads replace it */
    PyObject *function = runner_function(runner);
    Py_DECREF(runner);
    return function;
}

/* the function a runner chosen before gives for these arguments (a new reference), or
   NULL with no error set when ``choose`` must decide (NULL with an error set on failure) */
static PyObject *
chosen_before(Chosen *c, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *classes = NULL;
    PyObject *runner;
    int way = chosen_way(c, args, nargs);
    if (way >= 0) {
        runner = c->last_runner[way];
        Py_INCREF(runner);
    }
    else {
        for (Py_ssize_t i = 0; i < nargs; i++) {
            /* not a key: ``choose`` picks the generic runner */
            if (!keyable_class(Py_TYPE(args[i]))) return NULL;
        }
        classes = PyTuple_New(nargs);
        if (classes == NULL) return NULL;
        for (Py_ssize_t i = 0; i < nargs; i++) {
            PyObject *cls = (PyObject *)Py_TYPE(args[i]);
            Py_INCREF(cls);
            PyTuple_SET_ITEM(classes, i, cls);
        }
        runner = PyDict_GetItemWithError(c->runners, classes);
        if (runner == NULL || !PyTuple_CheckExact(runner) || PyTuple_GET_SIZE(runner) != 3) {
            Py_DECREF(classes);
            return NULL;
        }
        Py_INCREF(runner);  /* the check may let other threads change the dict */
    }
    PyObject *function = runner_function(runner);
    if (function == NULL && PyErr_Occurred()) {
        Py_XDECREF(classes);
        Py_DECREF(runner);
        return NULL;
    }
    if (function == NULL && way >= 0 && c->last_runner[way] == runner) {
        /* unusable: ``choose`` replaces it in the dict, where the next call looks */
        chosen_remember(c, way, NULL, NULL);
    }
    else if (classes != NULL && function != NULL) {
        /* remember it (a runner whose check fails later sends calls to the dict again) */
        int next = c->next_way;
        c->next_way = (next + 1) % CHOSEN_WAYS;
        Py_INCREF(runner);
        chosen_remember(c, next, classes, runner);
        classes = NULL;
    }
    Py_XDECREF(classes);
    Py_DECREF(runner);
    return function;
}

static PyObject *
chosen_vectorcall_body(Chosen *c, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (c->runners != NULL && kwnames == NULL && c->skip == 0) {
        PyObject *target = chosen_before(c, args, nargs);
        if (target != NULL) {
            PyObject *result = call_handing_over((PyObject *)c, target, args, nargsf, NULL);
            Py_DECREF(target);
            return result;
        }
        if (PyErr_Occurred()) return NULL;
    }
    else if (c->generic != NULL && kwnames != NULL && c->skip == 0) {
        PyObject *target = chosen_generic(c);
        if (target != NULL) {
            PyObject *result = call_handing_over((PyObject *)c, target, args, nargsf, kwnames);
            Py_DECREF(target);
            return result;
        }
        if (PyErr_Occurred()) return NULL;
    }
    if (nargs < c->skip) {
        PyErr_Format(PyExc_TypeError, "splice: a chosen call takes at least %zd arguments",
                     c->skip);
        return NULL;
    }
    PyObject *target = PyObject_Vectorcall(c->choose, args, nargsf, kwnames);
    if (target == NULL) return NULL;
    PyObject *result = c->skip == 0 ?
        call_handing_over((PyObject *)c, target, args, nargsf, kwnames) :
        PyObject_Vectorcall(target, args + c->skip, nargs - c->skip, kwnames);
    Py_DECREF(target);
    return result;
}

/* the C stack guard and the C budget around each call (_cstack.h) */
static PyObject *
chosen_vectorcall(Chosen *c, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int units;
    if (splice_enter_call(&units) < 0) return NULL;
    PyObject *result = chosen_vectorcall_body(c, args, nargsf, kwnames);
    splice_leave_call(units);
    return result;
}

static int
chosen_traverse(Chosen *c, visitproc visit, void *arg)
{
    Py_VISIT(c->choose); Py_VISIT(c->callee); Py_VISIT(c->runners); Py_VISIT(c->generic);
    for (int way = 0; way < CHOSEN_WAYS; way++) {
        Py_VISIT(c->last_key[way]); Py_VISIT(c->last_runner[way]);
    }
    return 0;
}

static int
chosen_clear(Chosen *c)
{
    Py_CLEAR(c->choose); Py_CLEAR(c->callee); Py_CLEAR(c->runners); Py_CLEAR(c->generic);
    for (int way = 0; way < CHOSEN_WAYS; way++) {
        Py_CLEAR(c->last_key[way]); Py_CLEAR(c->last_runner[way]);
    }
    return 0;
}

static void
chosen_dealloc(Chosen *c)
{
    PyObject_GC_UnTrack(c);
    if (c->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)c);
    chosen_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *
chosen_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *choose, *callee, *runners = Py_None, *generic = Py_None;
    Py_ssize_t skip = 0;
    int weak = 0;
    static char *keywords[] = {"", "", "skip", "runners", "generic", "weak", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|nOOp:Chosen", keywords, &choose, &callee,
                                     &skip, &runners, &generic, &weak))
        return NULL;
    if (generic != Py_None && !(PyList_CheckExact(generic) && PyList_GET_SIZE(generic) == 1)) {
        PyErr_SetString(PyExc_TypeError, "Chosen: generic must be a list of one item or None");
        return NULL;
    }
    if (skip < 0) {
        PyErr_SetString(PyExc_ValueError, "Chosen: skip must not be negative");
        return NULL;
    }
    if (runners != Py_None && !PyDict_CheckExact(runners)) {
        PyErr_SetString(PyExc_TypeError, "Chosen: runners must be a dict or None");
        return NULL;
    }
    Chosen *c = (Chosen *)type->tp_alloc(type, 0);
    if (c == NULL) return NULL;
    Py_INCREF(choose); c->choose = choose;
    c->callee = kept(callee, weak);
    if (c->callee == NULL) { Py_DECREF(c); return NULL; }
    c->weak = weak;
    c->skip = skip;
    if (runners != Py_None) { Py_INCREF(runners); c->runners = runners; }
    if (generic != Py_None) { Py_INCREF(generic); c->generic = generic; }
    c->vectorcall = (vectorcallfunc)chosen_vectorcall;
    return (PyObject *)c;
}

static PyObject *
chosen_get_choose(Chosen *c, void *closure)
{
    Py_INCREF(c->choose);
    return c->choose;
}

/* the callee (a new reference), or NULL with no error set once a weakly held one died */
static PyObject *
chosen_callee(Chosen *c)
{
    return callee_kept(c->callee, c->weak);
}

static PyObject *
chosen_get_callee(Chosen *c, void *closure)
{
    PyObject *callee = chosen_callee(c);
    if (callee == NULL) Py_RETURN_NONE;
    return callee;
}

static PyObject *
chosen_get_weak(Chosen *c, void *closure)
{
    return PyBool_FromLong(c->weak);
}

static PyObject *
chosen_get_callee_attribute(Chosen *c, void *name)
{
    PyObject *callee = chosen_callee(c);
    if (callee == NULL) {
        PyObject *owner = PyObject_GetAttrString(c->choose, "__self__");
        if (owner == NULL) return NULL;
        PyObject *value = PyObject_GetAttrString(owner, (const char *)name);
        Py_DECREF(owner);
        return value;
    }
    PyObject *value = PyObject_GetAttrString(callee, (const char *)name);
    Py_DECREF(callee);
    return value;
}

static PyObject *
chosen_repr(Chosen *c)
{
    PyObject *callee = chosen_get_callee(c, NULL);
    PyObject *repr = PyUnicode_FromFormat("<splice entry of %R chosen by %R>", callee,
                                          c->choose);
    Py_DECREF(callee);
    return repr;
}

static PyGetSetDef chosen_getset[] = {
    {"choose", (getter)chosen_get_choose, NULL, "gives what runs a call", NULL},
    {"callee", (getter)chosen_get_callee, NULL,
     "the callee the program called (None once a weakly held one died)", NULL},
    {"weak", (getter)chosen_get_weak, NULL, "whether the callee is held weakly", NULL},
    {"__name__", (getter)chosen_get_callee_attribute, NULL, "the callee's", "__name__"},
    {"__qualname__", (getter)chosen_get_callee_attribute, NULL, "the callee's", "__qualname__"},
    {"__module__", (getter)chosen_get_callee_attribute, NULL, "the callee's", "__module__"},
    {NULL},
};

static PyTypeObject ChosenType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Chosen",
    .tp_basicsize = sizeof(Chosen),
    .tp_dealloc = (destructor)chosen_dealloc,
    .tp_repr = (reprfunc)chosen_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Chosen, vectorcall),
    .tp_weaklistoffset = offsetof(Chosen, weakreflist),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)chosen_traverse,
    .tp_clear = (inquiry)chosen_clear,
    .tp_getset = chosen_getset,
    .tp_new = chosen_new,
};

/* ``SlotCall(fn, first)``: ``fn(first, *args, **kwargs)`` called the way CPython calls a
   type's ``tp_call`` slot, as two entries need it:
   - a class's entry when its ``__init__`` is compiled as a constructor
     (splice/runtime/constructors.py's ``constructor_for``): ``first`` is the constructor's
     spec, and the call spends the recursion unit ``type.__call__`` spends natively;
   - a callable object's entry: ``fn`` is its class's ``__call__`` as the table enters it,
     ``first`` the object. Unlike a bound method, which the interpreter unpacks and whose
     callee's frame then takes over the caller's argument references, the caller's stack
     keeps its arguments to the end of the call, as it does natively through the slot (so
     arguments a ``*args`` tuple also held die first to last, as natively).
   Behind the C stack guard (_cstack.h). ``func`` and ``args`` read as a partial's. */
typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *first;
    vectorcallfunc vectorcall;
} SlotCall;

static PyObject *
slot_call_vectorcall(SlotCall *c, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    if (splice_check_stack() < 0) return NULL;
    return counted_call(c->fn, c->first, args, PyVectorcall_NARGS(nargsf), kwnames);
}

static int
slot_call_traverse(SlotCall *c, visitproc visit, void *arg)
{
    Py_VISIT(c->fn); Py_VISIT(c->first);
    return 0;
}

static int
slot_call_clear(SlotCall *c)
{
    Py_CLEAR(c->fn); Py_CLEAR(c->first);
    return 0;
}

static void
slot_call_dealloc(SlotCall *c)
{
    PyObject_GC_UnTrack(c);
    slot_call_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *
slot_call_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fn, *first;
    if (!PyArg_ParseTuple(args, "OO:SlotCall", &fn, &first)) return NULL;
    SlotCall *c = (SlotCall *)type->tp_alloc(type, 0);
    if (c == NULL) return NULL;
    Py_INCREF(fn); c->fn = fn;
    Py_INCREF(first); c->first = first;
    c->vectorcall = (vectorcallfunc)slot_call_vectorcall;
    return (PyObject *)c;
}

static PyTypeObject SlotCallType;

/* ``SlotCall(fn, first)`` called from C with two positional arguments (a callable
   object's entry, made on each of its calls by the C method lookup, splice/runtime/
   _methods.c): made without an argument tuple */
static PyObject *
slot_call_make(PyTypeObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        PyErr_Format(PyExc_TypeError, "SlotCall() takes 2 positional arguments (%zd given)",
                     nargs);
        return NULL;
    }
    SlotCall *c = PyObject_GC_New(SlotCall, &SlotCallType);
    if (c == NULL) return NULL;
    c->fn = Py_NewRef(args[0]);
    c->first = Py_NewRef(args[1]);
    c->vectorcall = (vectorcallfunc)slot_call_vectorcall;
    PyObject_GC_Track(c);
    return (PyObject *)c;
}

static PyObject *
slot_call_get_func(SlotCall *c, void *closure)
{
    Py_INCREF(c->fn);
    return c->fn;
}

static PyObject *
slot_call_get_args(SlotCall *c, void *closure)
{
    return PyTuple_Pack(1, c->first);
}

static PyGetSetDef slot_call_getset[] = {
    {"func", (getter)slot_call_get_func, NULL, "what is called", NULL},
    {"args", (getter)slot_call_get_args, NULL, "(first,): what it is called with first",
     NULL},
    {NULL},
};

static PyTypeObject SlotCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.SlotCall",
    .tp_basicsize = sizeof(SlotCall),
    .tp_dealloc = (destructor)slot_call_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(SlotCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)slot_call_traverse,
    .tp_clear = (inquiry)slot_call_clear,
    .tp_getset = slot_call_getset,
    .tp_new = slot_call_new,
    .tp_vectorcall = (vectorcallfunc)slot_call_make,
};

/* ``Constructor(cls, init, entry, changed)``: a class's entry under a context without
   per-call hooks, when ``cls`` instantiates as ``object.__new__`` then a Python ``__init__``
   (splice/runtime/constructors.py's ``eligible_init``). A call does what ``type.__call__``
   does for such a class, with ``init``'s entry (``entry``, its transformed code) in place of
   ``init``: ``obj = cls.__new__`` through the class's ``tp_new`` slot (``object.__new__``:
   the abstract-class error is CPython's own), then ``entry(obj, *args, **kwargs)``, the
   caller's arguments passed as they are (argument errors name ``__init__`` and are raised
   before its frame exists, as natively), ``__init__`` returning anything but None the same
   TypeError, and ``obj`` returned. Nothing else runs: no frame of splice's, no sentinel
   defaults, no line of the ``def`` seen by a tracer.

   Before that it checks, in C, that the class still instantiates that way: its metaclass
   is the one seen when the entry was made and still calls through ``type.__call__``'s
   slot, its ``tp_new`` slot is ``object.__new__``'s (the slot, not the attribute: a
   ``__new__`` assigned and deleted again leaves a Python-level slot, which this sees), its
   ``tp_init`` slot is the one seen and ``__init__`` found on its MRO (as the slot finds
   it) is still ``init``. If not, ``changed()`` (the context drops this entry and makes the
   class's entry anew) gives what to call instead, which this calls with the caller's
   arguments: the instantiation then runs under the context as it would have from the start.

   The call spends the recursion unit ``type.__call__`` spends (``counted_call``), and on
   3.13 the Python unit of the interpreter's shim frame (_cstack.h), behind the C stack
   guard. Holds ``cls``, ``init`` and ``entry`` (what the class holds anyway,
   and the transformed copy sharing ``init``'s cells). */
typedef struct {
    PyObject_HEAD
    PyObject *cls;
    PyObject *init;
    PyObject *entry;
    PyObject *changed;
    PyTypeObject *meta;
    initproc tp_init;
    vectorcallfunc vectorcall;
} Constructor;

static PyObject *empty_tuple;

static PyObject *
constructor_vectorcall(Constructor *c, PyObject *const *args, size_t nargsf,
                       PyObject *kwnames)
{
    if (splice_check_stack() < 0) return NULL;
    PyTypeObject *cls = (PyTypeObject *)c->cls;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (Py_TYPE(cls) != c->meta || c->meta->tp_call != PyType_Type.tp_call ||
            cls->tp_new != PyBaseObject_Type.tp_new || cls->tp_init != c->tp_init ||
            _PyType_Lookup(cls, str_init) != c->init) {
        PyObject *instead = PyObject_CallNoArgs(c->changed);
        if (instead == NULL) return NULL;
        PyObject *made = PyObject_Vectorcall(instead, args, nargs, kwnames);
        Py_DECREF(instead);
        return made;
    }
    PyObject *obj = cls->tp_new(cls, empty_tuple, NULL);
    if (obj == NULL) return NULL;
    int shim = init_shim_units(cls, kwnames);
    splice_spend_py_units(shim);
    PyObject *result = counted_call(c->entry, obj, args, nargs, kwnames);
    splice_spend_py_units(-shim);
    if (result == NULL) { Py_DECREF(obj); return NULL; }
    if (result != Py_None) {
        PyErr_Format(PyExc_TypeError, "__init__() should return None, not '%.200s'",
                     Py_TYPE(result)->tp_name);
        Py_DECREF(result); Py_DECREF(obj);
        return NULL;
    }
    Py_DECREF(result);
    return obj;
}

static int
constructor_traverse(Constructor *c, visitproc visit, void *arg)
{
    Py_VISIT(c->cls); Py_VISIT(c->init); Py_VISIT(c->entry); Py_VISIT(c->changed);
    Py_VISIT(c->meta);
    return 0;
}

static int
constructor_clear(Constructor *c)
{
    Py_CLEAR(c->cls); Py_CLEAR(c->init); Py_CLEAR(c->entry); Py_CLEAR(c->changed);
    Py_CLEAR(c->meta);
    return 0;
}

static void
constructor_dealloc(Constructor *c)
{
    PyObject_GC_UnTrack(c);
    constructor_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *
constructor_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *cls, *init, *entry, *changed;
    if (!PyArg_ParseTuple(args, "O!O!OO:Constructor", &PyType_Type, &cls, &PyFunction_Type,
                          &init, &entry, &changed))
        return NULL;
    Constructor *c = (Constructor *)type->tp_alloc(type, 0);
    if (c == NULL) return NULL;
    c->cls = Py_NewRef(cls);
    c->init = Py_NewRef(init);
    c->entry = Py_NewRef(entry);
    c->changed = Py_NewRef(changed);
    c->meta = (PyTypeObject *)Py_NewRef((PyObject *)Py_TYPE(cls));
    c->tp_init = ((PyTypeObject *)cls)->tp_init;
    c->vectorcall = (vectorcallfunc)constructor_vectorcall;
    return (PyObject *)c;
}

static PyObject *
constructor_get(Constructor *c, void *which)
{
    PyObject *value = which == NULL ? c->cls : which == (void *)1 ? c->init : c->entry;
    return Py_NewRef(value);
}

static PyObject *
constructor_get_attribute(Constructor *c, void *name)
{
    return PyObject_GetAttrString(c->cls, (const char *)name);
}

static PyGetSetDef constructor_getset[] = {
    {"cls", (getter)constructor_get, NULL, "the class it instantiates", NULL},
    {"init", (getter)constructor_get, NULL, "the class's __init__ it relies on", (void *)1},
    {"entry", (getter)constructor_get, NULL, "what runs in place of __init__", (void *)2},
    {"__name__", (getter)constructor_get_attribute, NULL, "the class's", "__name__"},
    {"__qualname__", (getter)constructor_get_attribute, NULL, "the class's", "__qualname__"},
    {NULL},
};

static PyTypeObject ConstructorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Constructor",
    .tp_basicsize = sizeof(Constructor),
    .tp_dealloc = (destructor)constructor_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Constructor, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)constructor_traverse,
    .tp_clear = (inquiry)constructor_clear,
    .tp_getset = constructor_getset,
    .tp_new = constructor_new,
};

/* ``Driven(plan)``: a protocol written as a generator, run with no frame of its own on the
   stack while the code it reaches runs (splice/runtime/implicit.py's operators, truth,
   subscripts, formatting). A call makes the generator ``plan(*args, **kwargs)`` and steps
   it: each value it yields is a step, a tuple ``(fn, *arguments)``; the driver calls
   ``fn(*arguments)`` and sends the result back; what the generator returns is the call's
   result. The generator is suspended while a step runs, so the step's frames link to the
   program's frame (``sys._getframe(1)``, ``traceback.extract_stack``,
   ``warnings.warn(stacklevel=2)`` see the program's line, as natively).

   An exception a step raises is thrown into the generator (a protocol may catch it); if
   it comes back out, it leaves with the traceback it had (the generator's entry taken
   off). An exception the generator raises itself (a protocol's TypeError) leaves with no
   traceback: the program's frame is its first entry, as when CPython's C code raises. */
typedef struct {
    PyObject_HEAD
    PyObject *plan;
    PyObject *weakreflist;
    vectorcallfunc vectorcall;
} Driven;

static PyObject *str_throw, *str_value;

static PyObject *
call_step(PyObject *step)
{
    if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 1) {
        PyErr_Format(PyExc_SystemError, "splice: a protocol step must be (fn, *args), not %R",
                     step);
        return NULL;
    }
    return PyObject_Vectorcall(PyTuple_GET_ITEM(step, 0), &PyTuple_GET_ITEM(step, 1),
                               PyTuple_GET_SIZE(step) - 1, NULL);
}

static PyObject *
driven_vectorcall_body(Driven *d, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* the protocol's own frames run beside the program, with units of their own
       (_cstack.h); the steps are the program's calls and spend the program's. (Making the
       generator starts its frame too: it runs to its first instruction.) */
    splice_own_units(1);
    PyObject *gen = PyObject_Vectorcall(d->plan, args, nargsf, kwnames);
    splice_own_units(-1);
    if (gen == NULL) return NULL;
    if (!PyGen_Check(gen)) {
        Py_DECREF(gen);
        PyErr_SetString(PyExc_SystemError, "splice: a driven protocol must be a generator");
        return NULL;
    }
    PyObject *item = NULL;                 /* the step yielded, or the value returned */
    PyObject *thrown = NULL, *thrown_tb = NULL;  /* the step's error thrown in, its tb */
    splice_own_units(1);
    PySendResult how = PyIter_Send(gen, Py_None, &item);
    splice_own_units(-1);
    while (how == PYGEN_NEXT) {
        PyObject *result = call_step(item);
        Py_DECREF(item);
        item = NULL;
        Py_CLEAR(thrown);
        Py_CLEAR(thrown_tb);
        if (result != NULL) {
            splice_own_units(1);
            how = PyIter_Send(gen, result, &item);
            splice_own_units(-1);
            Py_DECREF(result);
            continue;
        }
        PyObject *type, *tb;
        PyErr_Fetch(&type, &thrown, &tb);
        PyErr_NormalizeException(&type, &thrown, &tb);
        Py_XDECREF(type);
        if (thrown == NULL) { how = PYGEN_ERROR; break; }
        if (tb != NULL) PyException_SetTraceback(thrown, tb);
        thrown_tb = tb;  /* owned */
        splice_own_units(1);
        item = PyObject_CallMethodOneArg(gen, str_throw, thrown);
        splice_own_units(-1);
        if (item != NULL) {
            how = PYGEN_NEXT;
        } else if (PyErr_ExceptionMatches(PyExc_StopIteration)) {
            PyObject *t, *v, *b;
            PyErr_Fetch(&t, &v, &b);
            PyErr_NormalizeException(&t, &v, &b);
            item = v != NULL ? PyObject_GetAttr(v, str_value) : NULL;
            Py_XDECREF(t); Py_XDECREF(v); Py_XDECREF(b);
            how = item != NULL ? PYGEN_RETURN : PYGEN_ERROR;
        } else {
            how = PYGEN_ERROR;
        }
    }
    Py_DECREF(gen);
    if (how == PYGEN_RETURN) {
        Py_XDECREF(thrown); Py_XDECREF(thrown_tb);
        return item;
    }
    /* an error out of the generator: the step's own (its traceback as it was) or the
       protocol's (no traceback of splice's frames) */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XDECREF(tb);
    tb = NULL;
    if (value != NULL && value == thrown && thrown_tb != NULL) {
        tb = thrown_tb;
        thrown_tb = NULL;
    }
    if (value != NULL) PyException_SetTraceback(value, tb != NULL ? tb : Py_None);
    PyErr_Restore(type, value, tb);
    Py_XDECREF(thrown); Py_XDECREF(thrown_tb);
    return NULL;
}

/* the C stack guard around each call (_cstack.h): the protocol's native form (a slot
   calling a Python method) spends the budget as this does */
static PyObject *
driven_vectorcall(Driven *d, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (splice_check_stack() < 0) return NULL;
    return driven_vectorcall_body(d, args, nargsf, kwnames);
}

static int
driven_traverse(Driven *d, visitproc visit, void *arg)
{
    Py_VISIT(d->plan);
    return 0;
}

static int
driven_clear(Driven *d)
{
    Py_CLEAR(d->plan);
    return 0;
}

static void
driven_dealloc(Driven *d)
{
    PyObject_GC_UnTrack(d);
    if (d->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)d);
    driven_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyObject *
driven_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *plan;
    if (!PyArg_ParseTuple(args, "O:Driven", &plan)) return NULL;
    Driven *d = (Driven *)type->tp_alloc(type, 0);
    if (d == NULL) return NULL;
    Py_INCREF(plan); d->plan = plan;
    d->vectorcall = (vectorcallfunc)driven_vectorcall;
    return (PyObject *)d;
}

static PyObject *
driven_get_plan(Driven *d, void *closure)
{
    Py_INCREF(d->plan);
    return d->plan;
}

static PyObject *
driven_repr(Driven *d)
{
    return PyUnicode_FromFormat("<splice protocol %R>", d->plan);
}

static PyGetSetDef driven_getset[] = {
    {"plan", (getter)driven_get_plan, NULL, "the protocol's generator function", NULL},
    {NULL},
};

static PyTypeObject DrivenType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Driven",
    .tp_basicsize = sizeof(Driven),
    .tp_dealloc = (destructor)driven_dealloc,
    .tp_repr = (reprfunc)driven_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Driven, vectorcall),
    .tp_weaklistoffset = offsetof(Driven, weakreflist),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)driven_traverse,
    .tp_clear = (inquiry)driven_clear,
    .tp_getset = driven_getset,
    .tp_new = driven_new,
};

/* ``Beside(fn)``: ``fn(*args, **kwargs)`` for a function of splice's that the program's
   code calls where native code runs only C (whether an attribute access runs Python code:
   splice/runtime/attributes.py), with units of the recursion limit of its own
   (_cstack.h): its frames are not the program's, so at the program's deepest point it does
   not bring the program's RecursionError earlier than natively. For functions that call
   no code of the program's (their units would be given to it too). */
typedef struct {
    PyObject_HEAD
    PyObject *fn;
    vectorcallfunc vectorcall;
} Beside;

static PyObject *
beside_vectorcall(Beside *b, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    splice_own_units(1);
    PyObject *result = PyObject_Vectorcall(b->fn, args, nargsf, kwnames);
    splice_own_units(-1);
    return result;
}

static int
beside_traverse(Beside *b, visitproc visit, void *arg)
{
    Py_VISIT(b->fn);
    return 0;
}

static int
beside_clear(Beside *b)
{
    Py_CLEAR(b->fn);
    return 0;
}

static void
beside_dealloc(Beside *b)
{
    PyObject_GC_UnTrack(b);
    beside_clear(b);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyObject *
beside_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fn;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Beside(fn) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:Beside", &fn)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "Beside(fn): fn must be callable");
        return NULL;
    }
    Beside *b = (Beside *)type->tp_alloc(type, 0);
    if (b == NULL) return NULL;
    b->fn = Py_NewRef(fn);
    b->vectorcall = (vectorcallfunc)beside_vectorcall;
    return (PyObject *)b;
}

static PyObject *
beside_get_fn(Beside *b, void *closure)
{
    return Py_NewRef(b->fn);
}

static PyObject *
beside_repr(Beside *b)
{
    return PyUnicode_FromFormat("<splice beside %R>", b->fn);
}

static PyGetSetDef beside_getset[] = {
    {"fn", (getter)beside_get_fn, NULL, "the function called", NULL},
    {NULL},
};

static PyTypeObject BesideType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Beside",
    .tp_basicsize = sizeof(Beside),
    .tp_dealloc = (destructor)beside_dealloc,
    .tp_repr = (reprfunc)beside_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Beside, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)beside_traverse,
    .tp_clear = (inquiry)beside_clear,
    .tp_getset = beside_getset,
    .tp_new = beside_new,
};

/* ``Overlaid(prepare)``: an overlay (splice/runtime/overlays.py) of a native function that
   calls back into Python code, such as ``sorted(xs, key=f)``. ``prepare(*args, **kwargs)``
   runs beside the program (units of its own, as ``Beside``: it enters the callbacks, which
   may compile them) and gives ``(native, args, kwargs)``; the native function is then called
   from here, so while it runs and calls the program's callbacks no frame of splice's is on
   the stack: ``sys._getframe(1)`` in a key function, a traceback through ``sorted`` and the
   recursion depth at which a key function recursing through ``max`` fails are as native. */
typedef struct {
    PyObject_HEAD
    PyObject *prepare;
    vectorcallfunc vectorcall;
} Overlaid;

static PyObject *
overlaid_vectorcall(Overlaid *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    splice_own_units(1);
    PyObject *prepared = PyObject_Vectorcall(o->prepare, args, nargsf, kwnames);
    splice_own_units(-1);
    if (prepared == NULL) return NULL;
    if (!PyTuple_CheckExact(prepared) || PyTuple_GET_SIZE(prepared) != 3 ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(prepared, 1)) ||
        !(PyTuple_GET_ITEM(prepared, 2) == Py_None ||
          PyDict_CheckExact(PyTuple_GET_ITEM(prepared, 2)))) {
        PyErr_Format(PyExc_TypeError,
                     "splice: an overlay's prepare %R must return (callable, tuple, dict "
                     "or None), not %R", o->prepare, prepared);
        Py_DECREF(prepared);
        return NULL;
    }
    if (splice_check_stack() < 0) {
        Py_DECREF(prepared);
        return NULL;
    }
    PyObject *native = PyTuple_GET_ITEM(prepared, 0);
    PyObject *kwargs = PyTuple_GET_ITEM(prepared, 2);
    /* the unit a specialised native call site does not spend (_cstack.h) */
    int units = splice_fastcall_units(native);
    splice_give_c_units(units);
    PyObject *result = PyObject_Call(native, PyTuple_GET_ITEM(prepared, 1),
                                     kwargs == Py_None ? NULL : kwargs);
    splice_give_c_units(-units);
    Py_DECREF(prepared);
    return result;
}

static int
overlaid_traverse(Overlaid *o, visitproc visit, void *arg)
{
    Py_VISIT(o->prepare);
    return 0;
}

static int
overlaid_clear(Overlaid *o)
{
    Py_CLEAR(o->prepare);
    return 0;
}

static void
overlaid_dealloc(Overlaid *o)
{
    PyObject_GC_UnTrack(o);
    overlaid_clear(o);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *
overlaid_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *prepare;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Overlaid(prepare) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:Overlaid", &prepare)) return NULL;
    if (!PyCallable_Check(prepare)) {
        PyErr_SetString(PyExc_TypeError, "Overlaid(prepare): prepare must be callable");
        return NULL;
    }
    Overlaid *o = (Overlaid *)type->tp_alloc(type, 0);
    if (o == NULL) return NULL;
    o->prepare = Py_NewRef(prepare);
    o->vectorcall = (vectorcallfunc)overlaid_vectorcall;
    return (PyObject *)o;
}

static PyObject *
overlaid_get_prepare(Overlaid *o, void *closure)
{
    return Py_NewRef(o->prepare);
}

static PyObject *
overlaid_repr(Overlaid *o)
{
    return PyUnicode_FromFormat("<splice overlay %R>", o->prepare);
}

static PyGetSetDef overlaid_getset[] = {
    {"prepare", (getter)overlaid_get_prepare, NULL, "gives (native, args, kwargs)", NULL},
    {NULL},
};

static PyTypeObject OverlaidType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._hooks.Overlaid",
    .tp_basicsize = sizeof(Overlaid),
    .tp_dealloc = (destructor)overlaid_dealloc,
    .tp_repr = (reprfunc)overlaid_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Overlaid, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)overlaid_traverse,
    .tp_clear = (inquiry)overlaid_clear,
    .tp_getset = overlaid_getset,
    .tp_new = overlaid_new,
};

/* ``watch_compiles(record)``: an audit hook (installed once; audit hooks cannot be removed)
   that pairs each ``compile`` event whose source is text (``exec``/``eval``/``compile``
   of a string: the source and file name) with the next ``exec`` event of a code object of
   that file name on the same thread, and calls ``record(code, source)`` for the pair (splice/ir/
   exec_sources.py keeps the text, so that functions made by ``exec`` have a source). In C
   because audit hooks run on every audited event (``sys._getframe``, reads of
   ``__code__``): the common event costs two character compares. */
static PyObject *record_compiled = NULL;   /* record(code, source) */
static PyObject *str_pending_compile;      /* the thread-state dict's key of the pair */

/* The last text compiled on this thread and its file name, kept in the thread state's dict
   (another thread may compile between a thread's compile and its exec). */
static int
audit_compiles(const char *event, PyObject *args, void *data)
{
    if (record_compiled == NULL || (event[0] != 'c' && event[0] != 'e')) return 0;
    int compiling = strcmp(event, "compile") == 0;
    if (!compiling && strcmp(event, "exec") != 0) return 0;
    PyObject *state = PyThreadState_GetDict();
    if (state == NULL || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1) return 0;
    if (compiling) {
        PyObject *source = PyTuple_GET_ITEM(args, 0);
        PyObject *filename = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
        if ((PyUnicode_Check(source) || PyBytes_Check(source)) && filename != NULL &&
                PyUnicode_Check(filename)) {
            PyObject *pair = PyTuple_Pack(2, source, filename);
            if (pair == NULL) return -1;
            int failed = PyDict_SetItem(state, str_pending_compile, pair);
            Py_DECREF(pair);
            return failed;
        }
        if (PyDict_DelItem(state, str_pending_compile) < 0) PyErr_Clear();  /* absent */
        return 0;
    }
    PyObject *pair = PyDict_GetItemWithError(state, str_pending_compile);
    if (pair == NULL) return PyErr_Occurred() ? -1 : 0;
    PyObject *code = PyTuple_GET_ITEM(args, 0);
    if (!PyCode_Check(code)) return 0;
    Py_INCREF(pair);
    if (PyDict_DelItem(state, str_pending_compile) < 0) {
        Py_DECREF(pair);
        return -1;
    }
    PyObject *source = PyTuple_GET_ITEM(pair, 0), *filename = PyTuple_GET_ITEM(pair, 1);
    int same = PyUnicode_Compare(((PyCodeObject *)code)->co_filename, filename);
    if (same == -1 && PyErr_Occurred()) {
        Py_DECREF(pair);
        return -1;
    }
    PyObject *result = same != 0 ? Py_NewRef(Py_None) :
        PyObject_CallFunctionObjArgs(record_compiled, code, source, NULL);
    Py_DECREF(pair);
    if (result == NULL) {
        /* recording is best effort: the program's exec must not fail because of it */
        PyErr_WriteUnraisable(record_compiled);
        return 0;
    }
    Py_DECREF(result);
    return 0;
}

static PyObject *
watch_compiles(PyObject *module, PyObject *record)
{
    if (!PyCallable_Check(record)) {
        PyErr_SetString(PyExc_TypeError, "watch_compiles(record): record must be callable");
        return NULL;
    }
    int first = record_compiled == NULL;
    Py_INCREF(record);
    Py_XSETREF(record_compiled, record);
    if (first && PySys_AddAuditHook(audit_compiles, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ``held_call(entry, callee, *args, **kwargs)``: ``entry(*args, **kwargs)``, where
   generated code calls the entry of a callee that only a temporary holds (``make()()``,
   ``handlers[key](event)``). Natively the callee stays on the caller's stack until its
   call returns and is let go of before the arguments; here it is an argument of this call,
   so the caller's stack holds it just as long, and frees it right after ``entry`` (the
   table's) and before the arguments. An entry holding its callee weakly (``Hooked``,
   ``Chosen``) then finds it alive for the whole call. No frame: the entry's own frame
   (if any) is the one after the caller's. */
static PyObject *
held_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "held_call(entry, callee, *args): too few arguments");
        return NULL;
    }
    /* (no PY_VECTORCALL_ARGUMENTS_OFFSET: the callee's slot must hold it throughout) */
    return PyObject_Vectorcall(args[0], args + 2, (size_t)(nargs - 2), kwnames);
}

static PyMethodDef module_methods[] = {
    {"held_call", (PyCFunction)(void (*)(void))held_call, METH_FASTCALL | METH_KEYWORDS,
     "held_call(entry, callee, *args, **kwargs): entry(*args, **kwargs), with callee held "
     "on the caller's stack through the call."},
    {"watch_compiles", (PyCFunction)watch_compiles, METH_O,
     "watch_compiles(record): call record(code, source) for each code object made from "
     "text by exec, eval or compile and then executed (an audit hook, installed once)."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice.runtime._hooks", NULL, -1, module_methods,
};

PyMODINIT_FUNC
PyInit__hooks(void)
{
    str_prehook = PyUnicode_InternFromString("prehook");
    str_posthook = PyUnicode_InternFromString("posthook");
    str_stack = PyUnicode_InternFromString("stack");
    if (str_prehook == NULL || str_posthook == NULL || str_stack == NULL) return NULL;
    str_init = PyUnicode_InternFromString("__init__");
    str_new = PyUnicode_InternFromString("__new__");
    if (str_init == NULL || str_new == NULL) return NULL;
    str_pending_compile = PyUnicode_InternFromString("splice.pending_compile");
    if (str_pending_compile == NULL) return NULL;
    str_throw = PyUnicode_InternFromString("throw");
    str_value = PyUnicode_InternFromString("value");
    if (str_throw == NULL || str_value == NULL) return NULL;
    if (PyType_Ready(&HookedType) < 0 || PyType_Ready(&InstantiatorType) < 0 ||
        PyType_Ready(&ChosenType) < 0 || PyType_Ready(&DrivenType) < 0 ||
        PyType_Ready(&SlotCallType) < 0 || PyType_Ready(&ConstructorType) < 0 ||
        PyType_Ready(&BesideType) < 0 || PyType_Ready(&OverlaidType) < 0) return NULL;
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL) return NULL;
    /* the vectorcall the interpreter gives every function, read from one */
    PyObject *globals = PyDict_New();
    if (globals == NULL) return NULL;
    PyObject *sample = PyRun_String("lambda: None", Py_eval_input, globals, globals);
    Py_DECREF(globals);
    if (sample == NULL) return NULL;
    if (PyFunction_Check(sample)) function_vectorcall = PyVectorcall_Function(sample);
    Py_DECREF(sample);
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    Py_INCREF(&HookedType);
    if (PyModule_AddObject(mod, "Hooked", (PyObject *)&HookedType) < 0) return NULL;
    Py_INCREF(&InstantiatorType);
    if (PyModule_AddObject(mod, "Instantiator", (PyObject *)&InstantiatorType) < 0) return NULL;
    Py_INCREF(&ChosenType);
    if (PyModule_AddObject(mod, "Chosen", (PyObject *)&ChosenType) < 0) return NULL;
    Py_INCREF(&DrivenType);
    if (PyModule_AddObject(mod, "Driven", (PyObject *)&DrivenType) < 0) return NULL;
    Py_INCREF(&BesideType);
    if (PyModule_AddObject(mod, "Beside", (PyObject *)&BesideType) < 0) return NULL;
    Py_INCREF(&OverlaidType);
    if (PyModule_AddObject(mod, "Overlaid", (PyObject *)&OverlaidType) < 0) return NULL;
    /* whether calls hand the caller's arguments over to the callee's frame (_cstack.h) */
    if (PyModule_AddObject(mod, "HANDS_OVER", PyBool_FromLong(SPLICE_HAND_OVER)) < 0)
        return NULL;
    Py_INCREF(&ConstructorType);
    if (PyModule_AddObject(mod, "Constructor", (PyObject *)&ConstructorType) < 0)
        return NULL;
    Py_INCREF(&SlotCallType);
    if (PyModule_AddObject(mod, "SlotCall", (PyObject *)&SlotCallType) < 0)
        return NULL;
    return mod;
}
