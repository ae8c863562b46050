/* ``ClassSet``: a set of classes whose membership test never runs the program's code.

   ``cls in frozenset_of_classes`` hashes ``cls``, which calls its metaclass's ``__hash__``
   (and, on a collision, ``__eq__``): a metaclass of the program's that defines them runs
   where CPython runs nothing, and one that defines ``__eq__`` alone makes its classes
   unhashable, so the test raises ``TypeError``. splice tests the class of nearly every
   object it routes (is it a builtin type whose operations run no Python code?), so the
   test must compare identities only. ``cls in ClassSet(...)`` does: the set is an open
   addressing table of the classes' addresses, probed with ``cls``'s address (the
   ``sq_contains`` slot, so ``in`` costs no call frame). The set holds its classes, so an
   address in it cannot be reused by another object while the set lives.

   Immutable; iterates in the order the classes were given (duplicates by identity
   dropped); ``a | b`` (either a ClassSet, the other any iterable of classes) makes a new
   one. ``__splice_persist__`` lets the code cache store one (splice/cache/references.py).
   Optional: splice/keys.py has the pure-Python form used when this is not built. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *classes;    /* tuple of the classes, unique by identity */
    Py_ssize_t mask;      /* table size - 1 (a power of two minus one) */
    PyObject **table;     /* addresses of the classes, NULL where empty */
} ClassSet;

static PyTypeObject ClassSetType;

static inline Py_ssize_t
slot_of(PyObject *cls, Py_ssize_t mask)
{
    size_t address = (size_t)cls;
    return (Py_ssize_t)((address >> 4) ^ (address >> 12)) & mask;
}

/* 1 if ``cls`` is in the table, 0 if not */
static inline int
table_holds(ClassSet *s, PyObject *cls)
{
    Py_ssize_t i = slot_of(cls, s->mask);
    for (;;) {
        PyObject *held = s->table[i];
        if (held == cls) return 1;
        if (held == NULL) return 0;
        i = (i + 1) & s->mask;
    }
}

/* a new ClassSet of the classes of ``items`` (a list, owned by the caller) */
static PyObject *
classset_from_list(PyTypeObject *type, PyObject *items)
{
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyType_Check(item)) {
            PyErr_Format(PyExc_TypeError, "ClassSet holds classes only, not %R (of class %s)",
                         item, Py_TYPE(item)->tp_name);
            return NULL;
        }
    }
    Py_ssize_t size = 8;
    while (size < 4 * n) size *= 2;  /* at most a quarter full: probes stay short */
    ClassSet *s = (ClassSet *)type->tp_alloc(type, 0);
    if (s == NULL) return NULL;
    s->mask = size - 1;
    s->table = PyMem_Calloc((size_t)size, sizeof(PyObject *));
    if (s->table == NULL) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    PyObject *unique = PyList_New(0);
    if (unique == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *cls = PyList_GET_ITEM(items, i);
        if (table_holds(s, cls)) continue;
        Py_ssize_t slot = slot_of(cls, s->mask);
        while (s->table[slot] != NULL) slot = (slot + 1) & s->mask;
        s->table[slot] = cls;
        if (PyList_Append(unique, cls) < 0) {
            Py_DECREF(unique);
            Py_DECREF(s);
            return NULL;
        }
    }
    s->classes = PyList_AsTuple(unique);
    Py_DECREF(unique);
    if (s->classes == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static PyObject *
classset_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *iterable = NULL;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "ClassSet() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "ClassSet", 0, 1, &iterable)) return NULL;
    PyObject *items = iterable == NULL ? PyList_New(0) : PySequence_List(iterable);
    if (items == NULL) return NULL;
    PyObject *made = classset_from_list(type, items);
    Py_DECREF(items);
    return made;
}

static int
classset_contains(ClassSet *s, PyObject *cls)
{
    return table_holds(s, cls);
}

static Py_ssize_t
classset_length(ClassSet *s)
{
    return PyTuple_GET_SIZE(s->classes);
}

static PyObject *
classset_iter(ClassSet *s)
{
    return PyObject_GetIter(s->classes);
}

/* ``a | b``: the classes of both, ``a``'s first */
static PyObject *
classset_or(PyObject *a, PyObject *b)
{
    PyObject *items = PySequence_List(a);
    if (items == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *more = PySequence_List(b);
    if (more == NULL) {
        Py_DECREF(items);
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    int failed = PyList_SetSlice(items, n, n, more);
    Py_DECREF(more);
    if (failed) {
        Py_DECREF(items);
        return NULL;
    }
    PyObject *made = classset_from_list(&ClassSetType, items);
    Py_DECREF(items);
    return made;
}

static PyObject *
classset_repr(ClassSet *s)
{
    if (PyTuple_GET_SIZE(s->classes) == 0) return PyUnicode_FromString("ClassSet()");
    return PyUnicode_FromFormat("ClassSet(%R)", s->classes);
}

static PyObject *
classset_persist(ClassSet *s, PyObject *Py_UNUSED(ignored))
{
    return PyTuple_Pack(1, s->classes);
}

static PyObject *
classset_reduce(ClassSet *s, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("(O(O))", Py_TYPE(s), s->classes);
}

static int
classset_traverse(ClassSet *s, visitproc visit, void *arg)
{
    Py_VISIT(s->classes);
    return 0;
}

static int
classset_clear(ClassSet *s)
{
    /* the table only borrows from ``classes``: empty it with them */
    if (s->table != NULL) memset(s->table, 0, (size_t)(s->mask + 1) * sizeof(PyObject *));
    Py_CLEAR(s->classes);
    return 0;
}

static void
classset_dealloc(ClassSet *s)
{
    PyObject_GC_UnTrack(s);
    classset_clear(s);
    PyMem_Free(s->table);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PySequenceMethods classset_as_sequence = {
    .sq_length = (lenfunc)classset_length,
    .sq_contains = (objobjproc)classset_contains,
};

static PyNumberMethods classset_as_number = {
    .nb_or = classset_or,
};

static PyMethodDef classset_methods[] = {
    {"__splice_persist__", (PyCFunction)classset_persist, METH_NOARGS,
     "The arguments that make this set again (splice's code cache)."},
    {"__reduce__", (PyCFunction)classset_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ClassSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice._classes.ClassSet",
    .tp_basicsize = sizeof(ClassSet),
    .tp_dealloc = (destructor)classset_dealloc,
    .tp_repr = (reprfunc)classset_repr,
    .tp_as_number = &classset_as_number,
    .tp_as_sequence = &classset_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "ClassSet(classes=()): an immutable set of classes tested by identity.",
    .tp_traverse = (traverseproc)classset_traverse,
    .tp_clear = (inquiry)classset_clear,
    .tp_iter = (getiterfunc)classset_iter,
    .tp_methods = classset_methods,
    .tp_new = classset_new,
};

static struct PyModuleDef classes_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "splice._classes",
    .m_doc = "Sets of classes tested by identity (see splice/keys.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__classes(void)
{
    if (PyType_Ready(&ClassSetType) < 0) return NULL;
    PyObject *module = PyModule_Create(&classes_module);
    if (module == NULL) return NULL;
    Py_INCREF(&ClassSetType);
    if (PyModule_AddObject(module, "ClassSet", (PyObject *)&ClassSetType) < 0) {
        Py_DECREF(&ClassSetType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
