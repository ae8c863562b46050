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
   and comparison run no Python code.

   Stamps: a call whose checks all held records, for each dict a global or dict-item check
   read (the globals, and the builtins where the name was not a global) its version, and
   for each class a class-attribute check looked up on its version tag. While every one of
   them is unchanged, those checks are not evaluated again: only the cells and the calls
   are. Soundness: CPython gives a dict a new version (unique in the process) whenever a
   key is added, removed or bound to another object, and a class a new version tag (or
   none) whenever its dict, a base's dict or its bases change (``PyType_Modified``, which
   ``_PyType_Lookup``'s own method cache relies on). So unchanged stamps mean every such
   lookup finds what it found when they were taken; any change sends the call through
   every check, which stamps again if they still hold. A class without a valid tag (none
   was assigned, or CPython ran out of them) is never stamped. Version-specific reading of
   both is in ``dict_version`` and ``type_version``. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

enum { GLOBAL = 0, GLOBAL_CLASS = 1, CLASS_ATTR = 2, DICT_ITEM = 3, CELL = 4, CALL = 5,
       CLASS_ATTR_CLASS = 6 };

/* one item of ``items``, parsed once (its objects borrowed: the tuple holds them) */
typedef struct {
    int kind;
    PyObject *a, *b, *c;
} Check;

/* a dict's version or a class's version tag as the last call whose checks held saw it
   (``obj`` borrowed: an item holds it, or it is the builtins dict a global fell back to,
   which the globals dict holds while its version is unchanged) */
typedef struct {
    PyObject *obj;
    int is_type;
    uint64_t version;
} Stamp;

typedef struct {
    PyObject_HEAD
    PyObject *alive;    /* list of one bool, or None */
    PyObject *items;    /* tuple of (kind, a, b, c) */
    PyObject *missing;
    Check *checks;      /* the items, parsed */
    Py_ssize_t n_checks;
    Stamp *stamps;      /* NULL while not stamped */
    Py_ssize_t n_stamps;
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
check_holds(GuardCheck *g, const Check *check)
{
    PyObject *a = check->a, *b = check->b, *c = check->c;
    PyObject *found;
    switch (check->kind) {
    case GLOBAL:
    case GLOBAL_CLASS:
        if (!PyDict_CheckExact(a)) return 0;
        found = lookup_global(a, b);
        if (found == NULL) {
            if (PyErr_Occurred()) return -1;
            return c == g->missing;
        }
        if (check->kind == GLOBAL) return found == c;
        /* a short tuple's shape is a tuple of its items' shapes: left to Python */
        if (PyTuple_CheckExact(found) && PyTuple_GET_SIZE(found) <= 16) return 0;
        return (PyObject *)Py_TYPE(found) == c;
    case CLASS_ATTR:
        if (!PyType_Check(a) || !PyUnicode_CheckExact(b)) return 0;
        found = _PyType_Lookup((PyTypeObject *)a, b);
        return (found != NULL ? found : g->missing) == c;
    case CLASS_ATTR_CLASS:
        /* what the lookup finds is of the class ``c`` (a short tuple's shape is a tuple
           of its items' shapes, never a class: such a find does not hold) */
        if (!PyType_Check(a) || !PyUnicode_CheckExact(b)) return 0;
        found = _PyType_Lookup((PyTypeObject *)a, b);
        if (found == NULL) return c == g->missing;
        if (PyTuple_CheckExact(found) && PyTuple_GET_SIZE(found) <= 16) return 0;
        return (PyObject *)Py_TYPE(found) == c;
    case DICT_ITEM:
        if (!PyDict_CheckExact(a)) return 0;
        found = PyDict_GetItemWithError(a, b);
        if (found == NULL && PyErr_Occurred()) return -1;
        return (found != NULL ? found : g->missing) == c;
    case CELL:
        if (!PyCell_Check(a)) return 0;
        found = PyCell_GET(a);
        return (found != NULL ? found : g->missing) == b;
    default: {  /* CALL (kinds are checked when the GuardCheck is made) */
        PyObject *result = PyObject_CallNoArgs(a);
        if (result == NULL) return -1;
        int truth = PyObject_IsTrue(result);
        Py_DECREF(result);
        return truth;
    }
    }
}

/* --- stamps ------------------------------------------------------------------------------ */

/* a dict's version: changed by every insertion, deletion and rebinding (deprecated from 3.12
   on, where dict watchers exist, but kept up to date through 3.13) */
static uint64_t
dict_version(PyObject *dict)
{
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    return ((PyDictObject *)dict)->ma_version_tag;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
}

/* a class's version tag, 0 when it has none that is valid (3.11 also clears a flag) */
static uint64_t
type_version(PyObject *type)
{
    PyTypeObject *t = (PyTypeObject *)type;
#if PY_VERSION_HEX < 0x030C0000
    if (!PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG)) return 0;
#endif
    return t->tp_version_tag;
}

/* the builtins dict a global that is not in ``globals`` is looked up in (borrowed), or NULL */
static PyObject *
builtins_of(PyObject *globals)
{
    PyObject *builtins = PyDict_GetItemWithError(globals, str_builtins);
    if (builtins == NULL) return PyErr_Occurred() ? NULL : builtins_dict;
    if (PyModule_Check(builtins)) builtins = PyModule_GetDict(builtins);
    return builtins != NULL && PyDict_CheckExact(builtins) ? builtins : NULL;
}

/* add a stamp of ``obj`` unless there is one; 0, or -1 when it cannot be stamped */
static int
add_stamp(Stamp *stamps, Py_ssize_t *n, PyObject *obj, int is_type)
{
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (stamps[i].obj == obj) return 0;
    }
    uint64_t version = is_type ? type_version(obj) : dict_version(obj);
    if (version == 0) return -1;
    stamps[*n].obj = obj;
    stamps[*n].is_type = is_type;
    stamps[*n].version = version;
    (*n)++;
    return 0;
}

/* after every check held: stamp what the global, dict-item and class checks read (on
   failure, of memory or of a class without a tag, leave the GuardCheck unstamped) */
static void
stamp(GuardCheck *g)
{
    PyMem_Free(g->stamps);
    g->stamps = NULL;
    g->n_stamps = 0;
    Stamp *stamps = PyMem_Malloc(sizeof(Stamp) * (size_t)(2 * g->n_checks + 1));
    if (stamps == NULL) return;  /* stay unstamped: every check runs */
    Py_ssize_t n = 0;
    int ok = 0;
    for (Py_ssize_t i = 0; i < g->n_checks && ok == 0; i++) {
        const Check *check = &g->checks[i];
        switch (check->kind) {
        case GLOBAL:
            ok = add_stamp(stamps, &n, check->a, 0);
            if (ok == 0) {
                int in_globals = PyDict_Contains(check->a, check->b);
                if (in_globals < 0) { PyErr_Clear(); ok = -1; break; }
                if (!in_globals) {
                    PyObject *builtins = builtins_of(check->a);
                    if (builtins == NULL) { PyErr_Clear(); ok = -1; break; }
                    ok = add_stamp(stamps, &n, builtins, 0);
                }
            }
            break;
        case DICT_ITEM:
            ok = add_stamp(stamps, &n, check->a, 0);
            break;
        case CLASS_ATTR:
            ok = add_stamp(stamps, &n, check->a, 1);
            break;
        default:
            break;
        }
    }
    if (ok < 0 || n == 0) {
        PyMem_Free(stamps);
        return;
    }
    g->stamps = stamps;
    g->n_stamps = n;
}

/* whether every stamp is as it was taken */
static int
stamps_hold(GuardCheck *g)
{
    for (Py_ssize_t i = 0; i < g->n_stamps; i++) {
        const Stamp *s = &g->stamps[i];
        uint64_t now = s->is_type ? type_version(s->obj) : dict_version(s->obj);
        if (now != s->version) return 0;
    }
    return 1;
}

/* 1: every check holds, 0: one does not, -1: an error */
static int
guard_check_holds(GuardCheck *g)
{
    if (g->items == NULL) return 0;  /* cleared by the collector */
    if (g->alive != Py_None) {
        if (!PyList_CheckExact(g->alive) || PyList_GET_SIZE(g->alive) != 1 ||
                PyList_GET_ITEM(g->alive, 0) != Py_True)
            return 0;
    }
    if (g->stamps != NULL && stamps_hold(g)) {
        /* the stamped lookups find what they found: only the rest can have changed */
        for (Py_ssize_t i = 0; i < g->n_checks; i++) {
            int kind = g->checks[i].kind;
            if (kind == GLOBAL || kind == DICT_ITEM || kind == CLASS_ATTR) continue;
            int holds = check_holds(g, &g->checks[i]);
            if (holds != 1) return holds;
        }
        return 1;
    }
    for (Py_ssize_t i = 0; i < g->n_checks; i++) {
        int holds = check_holds(g, &g->checks[i]);
        if (holds != 1) {
            if (g->stamps != NULL) {
                PyMem_Free(g->stamps);
                g->stamps = NULL;
                g->n_stamps = 0;
            }
            return holds;
        }
    }
    stamp(g);
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
    PyMem_Free(g->checks);
    PyMem_Free(g->stamps);
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
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    Check *checks = PyMem_Malloc(sizeof(Check) * (size_t)(n + 1));
    if (checks == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4) {
            PyMem_Free(checks);
            PyErr_SetString(PyExc_TypeError, "GuardCheck: each item is (kind, a, b, c)");
            return NULL;
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        if (kind < GLOBAL || kind > CLASS_ATTR_CLASS) {
            PyMem_Free(checks);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "GuardCheck: unknown kind %ld", kind);
            return NULL;
        }
        checks[i].kind = (int)kind;
        checks[i].a = PyTuple_GET_ITEM(item, 1);
        checks[i].b = PyTuple_GET_ITEM(item, 2);
        checks[i].c = PyTuple_GET_ITEM(item, 3);
    }
    GuardCheck *g = (GuardCheck *)type->tp_alloc(type, 0);
    if (g == NULL) { PyMem_Free(checks); return NULL; }
    Py_INCREF(alive); g->alive = alive;
    Py_INCREF(items); g->items = items;
    Py_INCREF(missing); g->missing = missing;
    g->checks = checks;
    g->n_checks = n;
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
