/* ``versioned(fn)``: give a function made by ``types.FunctionType`` the version a ``def``
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

static PyObject *
versioned(PyObject *module, PyObject *fn)
{
    if (!PyFunction_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "versioned() takes a function, not %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
#if SPLICE_SETS_VERSION
    PyFunctionObject *function = (PyFunctionObject *)fn;
    if (function->func_version == 0) {
        _PyFunction_SetVersion(function, ((PyCodeObject *)function->func_code)->co_version);
    }
#endif
    return Py_NewRef(fn);
}

static PyMethodDef methods[] = {
    {"versioned", versioned, METH_O,
     "versioned(fn): fn, with the function version a def gives it (3.13)"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice._functions",
    "Function versions for functions splice makes (splice/_functions.c).", -1, methods,
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
