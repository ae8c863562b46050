/* Run-time guards checked in C: the per-call check of a code instance (splice/cache/guards.py
   states what each guard means; this module only evaluates them faster).

   ``GuardCheck(alive, items, missing)`` is a callable taking no arguments that returns True
   while every binding an instance relied on still has the object it had, else False. It
   never invalidates anything and runs no code of the program: a False sends the caller to
   the Python path (``CodeInstance.check``), which finds the guard that failed, invalidates
   the instance and says why. So a GuardCheck may be stale only towards False, never towards
   True:

   - ``alive`` is the instance's validity flag, a list of one item that
     ``CodeInstance.invalidate`` sets to False (None: no flag);
   - ``items`` is a tuple of checks ``(kind, a, b, c)``, each the C form of one guard;
   - ``missing`` is ``splice.cache.guards.MISSING``, what a binding that does not exist is
     compared as.

   Kinds (the numbers are ``splice.cache.guards``'s ``_GLOBAL`` and the rest):

   0 global         ``a[b]`` (``a`` a module's globals), else the builtins of ``a`` as code
                    finds them (``a["__builtins__"]``, a module or a dict), is ``c``;
   1 global class   the same binding's class is ``c`` (the shape of a non-tuple value);
   2 class attr     ``b`` looked up on the MRO of class ``a`` (``_PyType_Lookup``: the class
                    dicts, no descriptor invoked) is ``c``;
   3 dict item      ``a[b]`` (a module's dict) is ``c``;
   4 cell           closure cell ``a`` holds ``b``;
   5 call           ``a()`` is true (a guard with no C form, checked by its Python method).

   Lookups use ``PyDict_GetItemWithError`` on exact dicts: the keys are ``str``, whose hash
   and comparison run no Python code. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

enum { GLOBAL = 0, GLOBAL_CLASS = 1, CLASS_ATTR = 2, DICT_ITEM = 3, CELL = 4, CALL = 5 };

typedef struct {
    PyObject_HEAD
    PyObject *alive;    /* list of one bool, or None */
    PyObject *items;    /* tuple of (kind, a, b, c) */
    PyObject *missing;
    vectorcallfunc vectorcall;
} GuardCheck;

static PyObject *str_builtins;
static PyObject *builtins_dict;  /* the builtins module's dict: lookup_global's default */

/* the object ``name`` is bound to for code running with ``globals`` (borrowed; NULL with no
   error set if unbound; NULL with an error set on failure) */
static PyObject *
lookup_global(PyObject *globals, PyObject *name)
{
    PyObject *found = PyDict_GetItemWithError(globals, name);
    if (found != NULL || PyErr_Occurred()) return found;
    PyObject *builtins = PyDict_GetItemWithError(globals, str_builtins);
    if (builtins == NULL) {
        if (PyErr_Occurred()) return NULL;
        builtins = builtins_dict;
    }
    else if (PyModule_Check(builtins)) {
        builtins = PyModule_GetDict(builtins);
    }
    if (builtins == NULL || !PyDict_Check(builtins)) return NULL;
    return PyDict_GetItemWithError(builtins, name);
}

/* 1: the check holds, 0: it does not, -1: an error (set) */
static int
item_holds(GuardCheck *g, PyObject *item)
{
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4) {
        PyErr_SetString(PyExc_TypeError, "GuardCheck: each item is (kind, a, b, c)");
        return -1;
    }
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
    PyObject *a = PyTuple_GET_ITEM(item, 1);
    PyObject *b = PyTuple_GET_ITEM(item, 2);
    PyObject *c = PyTuple_GET_ITEM(item, 3);
    PyObject *found;
    switch (kind) {
    case GLOBAL:
    case GLOBAL_CLASS:
        if (!PyDict_CheckExact(a)) return 0;
        found = lookup_global(a, b);
        if (found == NULL) {
            if (PyErr_Occurred()) return -1;
            return c == g->missing;
        }
        if (kind == GLOBAL) return found == c;
        /* a short tuple's shape is a tuple of its items' shapes: left to Python */
        if (PyTuple_CheckExact(found) && PyTuple_GET_SIZE(found) <= 16) return 0;
        return (PyObject *)Py_TYPE(found) == c;
    case CLASS_ATTR:
        if (!PyType_Check(a) || !PyUnicode_CheckExact(b)) return 0;
        found = _PyType_Lookup((PyTypeObject *)a, b);
        return (found != NULL ? found : g->missing) == c;
    case DICT_ITEM:
        if (!PyDict_CheckExact(a)) return 0;
        found = PyDict_GetItemWithError(a, b);
        if (found == NULL && PyErr_Occurred()) return -1;
        return (found != NULL ? found : g->missing) == c;
    case CELL:
        if (!PyCell_Check(a)) return 0;
        found = PyCell_GET(a);
        return (found != NULL ? found : g->missing) == b;
    case CALL: {
        PyObject *result = PyObject_CallNoArgs(a);
        if (result == NULL) return -1;
        int truth = PyObject_IsTrue(result);
        Py_DECREF(result);
        return truth;
    }
    default:
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "GuardCheck: unknown kind %ld", kind);
        return -1;
    }
}

/* 1: every check holds, 0: one does not, -1: an error */
static int
guard_check_holds(GuardCheck *g)
{
    if (g->alive != Py_None) {
        if (!PyList_CheckExact(g->alive) || PyList_GET_SIZE(g->alive) != 1 ||
                PyList_GET_ITEM(g->alive, 0) != Py_True)
            return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(g->items);
    for (Py_ssize_t i = 0; i < n; i++) {
        int holds = item_holds(g, PyTuple_GET_ITEM(g->items, i));
        if (holds != 1) return holds;
    }
    return 1;
}

static PyObject *
guard_check_vectorcall(GuardCheck *g, PyObject *const *args, size_t nargsf,
                       PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 0 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "GuardCheck() takes no arguments");
        return NULL;
    }
    int holds = guard_check_holds(g);
    if (holds < 0) return NULL;
    return PyBool_FromLong(holds);
}

static int
guard_check_traverse(GuardCheck *g, visitproc visit, void *arg)
{
    Py_VISIT(g->alive); Py_VISIT(g->items); Py_VISIT(g->missing);
    return 0;
}

static int
guard_check_clear(GuardCheck *g)
{
    Py_CLEAR(g->alive); Py_CLEAR(g->items); Py_CLEAR(g->missing);
    return 0;
}

static void
guard_check_dealloc(GuardCheck *g)
{
    PyObject_GC_UnTrack(g);
    guard_check_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *
guard_check_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *alive, *items, *missing;
    if (!PyArg_ParseTuple(args, "OO!O:GuardCheck", &alive, &PyTuple_Type, &items, &missing))
        return NULL;
    if (alive != Py_None && !(PyList_CheckExact(alive) && PyList_GET_SIZE(alive) == 1)) {
        PyErr_SetString(PyExc_TypeError, "GuardCheck: alive is a list of one item or None");
        return NULL;
    }
    GuardCheck *g = (GuardCheck *)type->tp_alloc(type, 0);
    if (g == NULL) return NULL;
    Py_INCREF(alive); g->alive = alive;
    Py_INCREF(items); g->items = items;
    Py_INCREF(missing); g->missing = missing;
    g->vectorcall = (vectorcallfunc)guard_check_vectorcall;
    return (PyObject *)g;
}

static PyObject *
guard_check_get_items(GuardCheck *g, void *closure)
{
    Py_INCREF(g->items);
    return g->items;
}

static PyGetSetDef guard_check_getset[] = {
    {"items", (getter)guard_check_get_items, NULL, "the checks, (kind, a, b, c) each", NULL},
    {NULL},
};

static PyTypeObject GuardCheckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.cache._guards.GuardCheck",
    .tp_basicsize = sizeof(GuardCheck),
    .tp_dealloc = (destructor)guard_check_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(GuardCheck, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)guard_check_traverse,
    .tp_clear = (inquiry)guard_check_clear,
    .tp_getset = guard_check_getset,
    .tp_new = guard_check_new,
};

static struct PyModuleDef guards_module = {
    PyModuleDef_HEAD_INIT, "splice.cache._guards",
    "Run-time guards of code instances checked in C (splice/cache/_guards.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__guards(void)
{
    str_builtins = PyUnicode_InternFromString("__builtins__");
    if (str_builtins == NULL || PyType_Ready(&GuardCheckType) < 0) return NULL;
    PyObject *builtins = PyImport_ImportModule("builtins");
    if (builtins == NULL) return NULL;
    builtins_dict = PyModule_GetDict(builtins);  /* the module lives as long as the process */
    Py_INCREF(builtins_dict);
    Py_DECREF(builtins);
    PyObject *mod = PyModule_Create(&guards_module);
    if (mod == NULL) return NULL;
    Py_INCREF(&GuardCheckType);
    if (PyModule_AddObject(mod, "GuardCheck", (PyObject *)&GuardCheckType) < 0) {
        Py_DECREF(&GuardCheckType);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
