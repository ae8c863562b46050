/* Functions splice makes in the program's place (splice/ir/compiled.py).

   ``instantiate(code, original, closure_plan, share_kwdefaults)`` is
   ``splice.ir.compiled.instantiate`` without its Python frame: it runs for every new
   function object entered under a context (a closure made in a loop, a lambda per call),
   so its cost is paid per ``def`` the program runs. It reads the original's fields
   directly, so it raises none of the audit events that reading ``__code__``,
   ``__defaults__`` or ``__kwdefaults__`` in Python raises, and it leaves the original as it
   was (reading ``__annotations__`` in Python gives a function without annotations an empty
   dict).

   ``versioned(fn)``: give a function made by ``types.FunctionType`` the version a ``def``
   gives it, so that CPython specialises calls of it.

   CPython's specialising interpreter caches a Python callee by its function version. On
   3.13 a function gets one only from ``MAKE_FUNCTION`` (the version of its code,
   ``co_version``); ``types.FunctionType(code, ...)`` leaves it unset, so every call site of
   such a function stays the generic ``CALL`` (3.11 and 3.12 give a version on first use).
   Every function splice runs in the program's place (``splice/ir/compiled.py``) is made so.
   ``versioned`` sets the version ``MAKE_FUNCTION`` would have set, once the function's
   defaults and keyword defaults are in place (assigning those, or ``__code__``, clears the
   version again, as CPython does for any function). Sound because it is the state a
   ``def`` of that code leaves: the version names the code, and what a specialised call
   relies on beyond the code is checked at the call, as for ``def``-made functions.

   On other versions it returns ``fn`` unchanged. Optional: ``splice.compat`` has the
   Python form (which does nothing). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x030E0000
/* exported by the interpreter (Include/internal/pycore_function.h of 3.13) */
PyAPI_FUNC(void) _PyFunction_SetVersion(PyFunctionObject *func, uint32_t version);
#define SPLICE_SETS_VERSION 1
#else
#define SPLICE_SETS_VERSION 0
#endif

static void
set_version(PyFunctionObject *function)
{
#if SPLICE_SETS_VERSION
    if (function->func_version == 0) {
        _PyFunction_SetVersion(function, ((PyCodeObject *)function->func_code)->co_version);
    }
#else
    (void)function;
#endif
}

static PyObject *
versioned(PyObject *module, PyObject *fn)
{
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "versioned() takes a function, not %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    set_version((PyFunctionObject *)fn);
    return Py_NewRef(fn);
}

/* ``original``'s closure for code run with ``plan``: its cells, or those of its cells
   followed by the hidden cells that ``order`` picks (``CompiledCode.closure_plan``: hidden
   cells, order). New reference; Py_None for no closure. */
static PyObject *
closure_for(PyFunctionObject *original, PyObject *plan)
{
    PyObject *cells = original->func_closure;
    if (plan == Py_None) return Py_NewRef(cells != NULL ? cells : Py_None);
    if (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 2 ||
            !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 0)) ||
            !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 1))) {
        PyErr_SetString(PyExc_TypeError,
                        "instantiate(): a closure plan is (cells, order)");
        return NULL;
    }
    PyObject *hidden = PyTuple_GET_ITEM(plan, 0), *order = PyTuple_GET_ITEM(plan, 1);
    Py_ssize_t own = cells != NULL && PyTuple_Check(cells) ? PyTuple_GET_SIZE(cells) : 0;
    Py_ssize_t extra = PyTuple_GET_SIZE(hidden), size = PyTuple_GET_SIZE(order);
    if (size == 0) return Py_NewRef(Py_None);  /* a pass removed every free variable read */
    PyObject *picked = PyTuple_New(size);
    if (picked == NULL) return NULL;
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(order, i));
        if (at < 0 || at >= own + extra) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "instantiate(): a closure plan's index");
            Py_DECREF(picked);
            return NULL;
        }
        PyObject *cell = at < own ? PyTuple_GET_ITEM(cells, at)
                                  : PyTuple_GET_ITEM(hidden, at - own);
        PyTuple_SET_ITEM(picked, i, Py_NewRef(cell));
    }
    return picked;
}

static PyObject *
instantiate(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "instantiate(code, original, closure_plan, share_kwdefaults)");
        return NULL;
    }
    PyObject *code = args[0];
    if (!PyCode_Check(code) || !PyFunction_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "instantiate() takes a code object and a function");
        return NULL;
    }
    PyFunctionObject *original = (PyFunctionObject *)args[1];
    int share_kwdefaults = PyObject_IsTrue(args[3]);
    if (share_kwdefaults < 0) return NULL;
    PyCodeObject *own = (PyCodeObject *)original->func_code;
    PyObject *closure = closure_for(original, args[2]);
    if (closure == NULL) return NULL;
    Py_ssize_t cells = closure == Py_None ? 0 : PyTuple_GET_SIZE(closure);
    if (cells != ((PyCodeObject *)code)->co_nfreevars) {
        PyErr_Format(PyExc_ValueError, "%U requires closure of length %zd, not %zd",
                     ((PyCodeObject *)code)->co_name, ((PyCodeObject *)code)->co_nfreevars,
                     cells);
        Py_DECREF(closure);
        return NULL;
    }
    PyFunctionObject *made = (PyFunctionObject *)PyFunction_NewWithQualName(
        code, original->func_globals, original->func_qualname);
    if (made == NULL) { Py_DECREF(closure); return NULL; }
    if (closure != Py_None && PyFunction_SetClosure((PyObject *)made, closure) < 0)
        goto fail;
    Py_CLEAR(closure);
    /* what ``types.FunctionType(code, globals, name, defaults, closure)`` and the attribute
       copies of the Python form set; defaults only matter to a code with positional
       parameters, keyword defaults to one with keyword-only parameters */
    Py_XSETREF(made->func_name, Py_NewRef(original->func_name));
    if (own->co_argcount && original->func_defaults != NULL &&
            PyFunction_SetDefaults((PyObject *)made, original->func_defaults) < 0)
        goto fail;
    if (own->co_kwonlyargcount && original->func_kwdefaults != NULL) {
        PyObject *kwdefaults = share_kwdefaults ? Py_NewRef(original->func_kwdefaults)
                                                : PyDict_Copy(original->func_kwdefaults);
        if (kwdefaults == NULL) goto fail;
        int failed = PyFunction_SetKwDefaults((PyObject *)made, kwdefaults);
        Py_DECREF(kwdefaults);
        if (failed < 0) goto fail;
    }
    if (original->func_annotations != NULL) {
        /* (read through the getter: it may be stored as a tuple of pairs until first read) */
        PyObject *annotations = PyObject_GetAttrString((PyObject *)original, "__annotations__");
        if (annotations == NULL) goto fail;
        if (PyDict_Check(annotations) && PyDict_GET_SIZE(annotations)) {
            PyObject *copied = PyDict_Copy(annotations);
            Py_DECREF(annotations);
            if (copied == NULL) goto fail;
            int failed = PyFunction_SetAnnotations((PyObject *)made, copied);
            Py_DECREF(copied);
            if (failed < 0) goto fail;
        } else {
            Py_DECREF(annotations);
        }
    }
    Py_XSETREF(made->func_doc, Py_XNewRef(original->func_doc));
    Py_XSETREF(made->func_module, Py_XNewRef(original->func_module));
    if (original->func_dict != NULL && PyDict_GET_SIZE(original->func_dict)) {
        PyObject *attributes = PyObject_GenericGetDict((PyObject *)made, NULL);
        if (attributes == NULL) goto fail;
        int failed = PyDict_Update(attributes, original->func_dict);
        Py_DECREF(attributes);
        if (failed < 0) goto fail;
    }
    set_version(made);  /* (after the defaults: assigning them clears the version) */
    return (PyObject *)made;
fail:
    Py_XDECREF(closure);
    Py_DECREF(made);
    return NULL;
}

static PyMethodDef methods[] = {
    {"versioned", versioned, METH_O,
     "versioned(fn): fn, with the function version a def gives it (3.13)"},
    {"instantiate", (PyCFunction)(void (*)(void))instantiate, METH_FASTCALL,
     "instantiate(code, original, closure_plan, share_kwdefaults): a function running "
     "code in original's place (splice.ir.compiled.instantiate)"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice._functions",
    "Functions splice makes in the program's place (splice/_functions.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__functions(void)
{
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    if (PyModule_AddObject(mod, "SETS_VERSION", PyBool_FromLong(SPLICE_SETS_VERSION)) < 0)
        return NULL;
    return mod;
}
