/* Method calls under a context, the receiver on CPython's stack as natively.

   ``Methods(fast, slow)`` belongs to one dispatch table (``fast``: its exact dict of
   entries, ``slow``: its ``_slow_entry``). Generated code calls ``methods(obj, name)``
   where CPython would run ``LOAD_METHOD name``, and calls what it returns with the
   arguments alone: ``methods(obj, "m")(*args)``, one expression. The attribute is looked up
   exactly as LOAD_METHOD looks it up (``_PyObject_GetMethod``: the instance ``__dict__``,
   descriptors, ``__getattribute__`` and ``__getattr__`` all as natively). What it returns
   is a method object (``types.MethodType``) binding what to call to the receiver:

   - a Python function found on the class: its entry in the table, bound to ``obj``;
   - a C method descriptor (``list.append``): itself, bound to ``obj``, as natively,
     when no overlay or intercept takes its name (``routed``); else the entry of the
     builtin method bound as ``getattr`` binds it (``'{}'.format`` runs the overlay that
     enters ``__format__``), unbound;
   - a bound method: the entry of its function, bound to its ``__self__``;
   - anything else (a function from the instance ``__dict__``, a module's function, a
     callable object): the callable's entry (a C function itself), unbound; but when the
     callable would die before its call (its holders: the lookup alone, or the lookup and
     a receiver that only the caller's stack holds, as in ``Box().callback()``),
     ``SkipFirst(entry)`` bound to the callable, so it sits on the caller's stack until
     the call returns, as natively (reference counts: CPython-specific, as this module).

   CPython's ``CALL`` unpacks a method object onto its stack (receiver first) before the
   call, exactly the stack ``LOAD_METHOD`` leaves: a Python callee's frame takes over the
   references to its arguments as natively (a parameter deleted or rebound in the callee
   frees its object there), and the receiver is let go of at the same instruction as
   natively (a hidden local would keep it until overwritten). The method object costs an
   allocation per call, which ``LOAD_METHOD`` avoids.

   ``methods.receiver_first`` is the same lookup for a receiver that a fast local holds
   (``self.m(x)``): generated code reads the local again after the lookup and passes it
   first, ``methods.receiver_first(obj, "m")(obj, *args)``, and a Python function's entry
   or a C method descriptor found on the class is returned as itself: the call is then the
   one ``LOAD_METHOD``'s stack makes, with no method object. Anything else is bound to it
   through ``PassOver`` (called as ``pass_over(callee, obj, *args)``, it calls
   ``callee(*args)``). The compiler uses it only where nothing between the two reads can
   rebind the local (splice/compiler/route_calls.py); since the local holds the receiver
   anyway, the second read keeps nothing alive that the caller's frame does not.

   A callable object of a Python class whose ``__call__`` is a Python function
   (``spline(t)``, ``table["cb"](x)``) gets its entry here, as
   ``Context.callable_object`` makes it (``objects(entry of __call__, obj)``, a
   ``SlotCall``), when the table's context intercepts nothing and ``__call__`` has an
   entry already: no Python frame of splice's per call.

   ``methods(callee)`` is the table's entry for ``callee`` (resolved when missing, on
   every call when ``callee`` cannot be a key; for a Python bound method, its function's
   entry bound to the same object), bound through ``SkipFirst`` to ``callee``
   when only the caller's stack holds it (``methods(make())()``: natively the call keeps
   it alive until it returns). It is the lookup of code that must stay one expression,
   where a subscript of the table would raise ``TypeError`` for an unhashable callee (a
   callable object whose class defines ``__eq__`` only), of callees that only a temporary
   holds, and of callees that are not functions or classes: callable objects, never
   hashed here when their class defines its own ``__hash__`` (CPython never hashes what
   it calls; such a callee is resolved on every call), and builtin methods bound to an
   object (``append = out.append; append(x)``). Such a method is a new object each time it
   is bound, never kept in the table (it would keep its receiver alive); when the table's
   context calls builtin methods directly (no per-call hook), ``routed`` is the set of
   names that an overlay or an intercept takes, and a builtin method bound to an object
   other than a module, whose name is not in it, is its own entry: returned here at once,
   as the table's ``__missing__`` would return it after a raised ``KeyError`` and two
   Python calls.

   The entry of a Python function is looked up in the table once per function while the
   table is unchanged: ``entries`` (below) keeps the last ones found, borrowed, each with
   the table's version when it was read; any change of the table (an entry made, dropped
   or replaced) gives it a version it never had, so a kept entry is used only while the
   table still holds it, and the function, which the table holds or keys weakly (and drops
   when it dies), is alive. It keeps nothing alive. A method-wrapper bound to an object
   (``super().__init__`` of a class whose base is ``object``) whose name no overlay or
   intercept takes is its own entry here too, as ``_bound_builtin_entry`` would answer.

   What ``_PyObject_GetMethod`` finds for a class and a name is kept too (``LookupSlot``):
   a Python function or a C method descriptor on the class, with the class's version tag,
   which CPython changes whenever the class or one of its bases changes (an attribute set
   or deleted, ``__getattribute__`` or ``__getattr__`` defined, its bases or MRO
   replaced) and never gives another class. While the tag is the same, what the lookup
   returns depends only on the receiver's own attributes, which are read where and as
   ``_PyObject_GetMethod`` reads them (splice/runtime/_cstack.h,
   ``splice_instance_attribute``: the instance's values beside its class's shared keys, seen
   lacking the name, or the dict made for it, looked up as natively); anything else takes
   ``_PyObject_GetMethod``. So the lookup of a method of an unchanged class on an instance
   that does not shadow it costs a few comparisons, like ``LOAD_METHOD``'s specialised
   forms; the slot keeps nothing alive (the class and what it found are compared and read
   only while the receiver holds the class and the tag says its MRO still holds them) but
   the name, a str.

   Generated code calls ``methods.builtin``, the same lookup as a builtin function (a
   ``METH_FASTCALL`` function bound to it, made once): CPython specialises calls of
   builtin functions (3.11 ``PRECALL_NO_KW_BUILTIN_FAST``, 3.12 and 3.13
   ``CALL_BUILTIN_FAST``), not calls of other C objects. Its name is ``Methods``, so
   generated code reads ``@Methods(obj, 'm')`` as before, and sharing names it by its path
   (splice/runtime/sharing.py).

   Optional: splice falls back to the Python form of method calls (splice/compiler/
   route_calls.py, ``_method_dispatch``) when this module is not built. Version-specific:
   from 3.13 the declaration of _PyObject_GetMethod (still exported) left the public
   headers; the instance reads are in _cstack.h. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <string.h>

#include "_cstack.h"

#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(int) _PyObject_GetMethod(PyObject *obj, PyObject *name, PyObject **method);
#endif

/* The entries of Python functions found last, one per slot (chosen by the function's
   address): borrowed references, each valid while the table is unchanged since it was
   read (its ``ma_version_tag``, which CPython changes on every mutation of the dict, to a
   value the dict never had before). A function in the table is held by it (or keyed
   weakly, and removed from it when it dies, before its memory can be reused), so a slot
   whose version is the table's current one names a live function and its live entry. */
#define ENTRY_WAYS 128
typedef struct {
    PyObject *fn;
    PyObject *entry;
    uint64_t version;
} EntrySlot;

/* What the lookup found last for a class and a name, one per slot (chosen by both
   addresses): a Python function or a C method descriptor on the class, which
   ``_PyObject_GetMethod`` returns unbound for any instance lacking the name (``found``,
   borrowed: the class's MRO holds it while the class's version tag is ``version``, a tag
   CPython changes on any change of the class or of its bases and never gives another
   class), with the function's entry (borrowed, valid while the table is at
   ``entry_version``, as ``EntrySlot``) and the shared keys seen lacking the name
   (_cstack.h, ``splice_instance_attribute``). ``name`` is held (a str: its lifetime cannot
   be seen); ``type`` is only compared with the receiver's class, which the receiver keeps
   alive, before the version is read. */
#define LOOKUP_WAYS 128
#define FOUND_FUNCTION 1   /* a Python function: its entry is called */
#define FOUND_C_METHOD 2   /* a C method descriptor whose name nothing routes: itself */
typedef struct {
    PyTypeObject *type;
    unsigned int version;
    int kind;
    PyObject *name;
    PyObject *found;
    PyObject *entry;
    uint64_t entry_version;
    void *keys;
    Py_ssize_t nentries;
} LookupSlot;

/* Method lookup of one dispatch table: lookup(obj, name) -> what to call with (obj, *args) */
typedef struct {
    PyObject_HEAD
    PyObject *fast;   /* exact dict */
    PyObject *slow;   /* slow_entry(callee) */
    PyObject *routed; /* frozenset of names, or NULL: no builtin method is its own entry */
    PyObject *last_name;  /* the name ``direct_builtin`` answered for last, or NULL */
    int last_direct;      /* its answer */
    vectorcallfunc vectorcall;
    PyObject *objects;    /* objects(entry, obj): a callable object's entry, or NULL */
    PyObject *natives;    /* dict: C classes whose objects are their own entries, or NULL */
    int receiver_first;   /* what it returns is called with the receiver first */
    PyObject *twin;       /* the ``receiver_first`` lookup of the same table, or NULL */
    EntrySlot entries[ENTRY_WAYS];  /* borrowed: see EntrySlot */
    PyObject *builtin;    /* this lookup as a builtin function (``builtin``), or NULL */
    LookupSlot lookups[LOOKUP_WAYS];
} Methods;

/* the table's version: deprecated as a public field from 3.12, still changed on every
   mutation of the dict up to 3.13 (it carries the dict watchers' bits with the counter) */
static inline uint64_t
table_version(PyObject *fast)
{
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    return ((PyDictObject *)fast)->ma_version_tag;
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

/* 1 when ``callee`` is a builtin method bound to an object other than a module, whose name
   no overlay or intercept takes: its own entry; 0 when not; -1 on error. The answer for
   the last name asked is kept (names of one call site repeat), compared by content. */
static int
direct_builtin(Methods *m, PyObject *callee)
{
    if (m->routed == NULL || !PyCFunction_Check(callee)) return 0;
    PyObject *self = PyCFunction_GET_SELF(callee);
    if (self == NULL || Py_IS_TYPE(self, &PyModule_Type)) return 0;
    const char *name = ((PyCFunctionObject *)callee)->m_ml->ml_name;
    if (m->last_name != NULL && strcmp(name, PyUnicode_AsUTF8(m->last_name)) == 0)
        return m->last_direct;
    PyObject *text = PyUnicode_FromString(name);
    if (text == NULL) return -1;
    int routed = PySet_Contains(m->routed, text);
    if (routed < 0) { Py_DECREF(text); return -1; }
    Py_XSETREF(m->last_name, text);
    m->last_direct = !routed;
    return m->last_direct;
}

static PyTypeObject *method_wrapper_type;  /* type((0).__add__), read at import */
static PyObject *SELF_NAME, *NAME_NAME;   /* "__self__", "__name__", interned */
static PyObject *MODULE_NAME;  /* "splice.runtime._methods" */

/* 1 when ``callee`` is a method-wrapper (a slot wrapper bound to an object, as
   ``super().__init__`` gives ``object.__init__`` bound) bound to an object other than a
   module, whose name no overlay or intercept takes: its own entry, as the table's
   ``_bound_builtin_entry`` answers, without a raised KeyError and its Python frames (which
   ``super().__init__()`` of a class whose base is ``object`` paid on every call); 0 when
   not; -1 on error. Its ``__self__`` and ``__name__`` are C getters: no Python code. */
static int
direct_wrapper(Methods *m, PyObject *callee)
{
    if (m->routed == NULL || !Py_IS_TYPE(callee, method_wrapper_type)) return 0;
    PyObject *self = PyObject_GetAttr(callee, SELF_NAME);
    if (self == NULL) return -1;
    int module = PyModule_Check(self) && Py_IS_TYPE(self, &PyModule_Type);
    Py_DECREF(self);
    if (module) return 0;
    PyObject *name = PyObject_GetAttr(callee, NAME_NAME);
    if (name == NULL) return -1;
    int routed = PySet_Contains(m->routed, name);
    Py_DECREF(name);
    return routed < 0 ? -1 : !routed;
}

/* 1 when hashing ``callee`` runs no Python code (its class keeps an identity hash: the
   kinds of splice/keys.py's IDENTITY_HASHES); a callable object with a ``__hash__``
   of its own is never hashed, since CPython never hashes what it calls */
static int
hashed_by_identity(PyObject *callee)
{
    hashfunc hash = Py_TYPE(callee)->tp_hash;
    return hash == PyBaseObject_Type.tp_hash || hash == PyCFunction_Type.tp_hash ||
        hash == PyMethod_Type.tp_hash;
}

/* the table's Python resolution of ``callee`` (a builtin method bound to an object, made
   for each call, takes it on every call): splice's own frames, with units of the recursion
   limit of their own (_cstack.h), so a call at the program's deepest point resolves where
   natively the callee would simply run */
static PyObject *
slow_entry(Methods *m, PyObject *callee)
{
    splice_own_units(1);
    PyObject *entry = PyObject_CallOneArg(m->slow, callee);
    splice_own_units(-1);
    return entry;
}

static PyObject *CALL_NAME;  /* "__call__", interned */

/* The entry of a callable object whose class is a Python class with a Python ``__call__``
   (found on its MRO as the type's call slot finds it), for a table whose context
   intercepts nothing: ``objects(entry of __call__, callee)``, what
   ``Context.callable_object`` makes, without its Python frames. NULL, without an error,
   for other callees and when ``__call__`` has no entry yet (the Python path makes it). */
static PyObject *
callable_object(Methods *m, PyObject *callee)
{
    PyTypeObject *kind = Py_TYPE(callee);
    if (m->objects == NULL || !PyType_HasFeature(kind, Py_TPFLAGS_HEAPTYPE) ||
            PyType_Check(callee))
        return NULL;
    PyObject *call = _PyType_Lookup(kind, CALL_NAME);  /* borrowed */
    if (call == NULL || !PyFunction_Check(call)) return NULL;
    /* the entry kept for the function (``EntrySlot``), else the table's */
    EntrySlot *kept = &m->entries[((uintptr_t)call >> 4) % ENTRY_WAYS];
    uint64_t version = table_version(m->fast);
    PyObject *entry;
    if (kept->fn == call && kept->version == version) {
        entry = kept->entry;
    } else {
        entry = PyDict_GetItemWithError(m->fast, call);
        if (entry == NULL) return NULL;
        kept->fn = call;
        kept->entry = entry;
        kept->version = version;
    }
    Py_INCREF(entry);
    PyObject *const args[2] = {entry, callee};
    PyObject *made = PyObject_Vectorcall(m->objects, args, 2, NULL);
    Py_DECREF(entry);
    return made;
}

static PyObject *
entry_of(Methods *m, PyObject *callee)   /* new reference */
{
    /* a Python function (the common case: a method found on its class) is no builtin
       method and is hashed by identity: straight to the table */
    if (PyFunction_Check(callee)) {
        /* (the version read before the lookup: a mutation during it invalidates the slot) */
        uint64_t version = table_version(m->fast);
        EntrySlot *slot = &m->entries[((uintptr_t)callee >> 4) % ENTRY_WAYS];
        if (slot->fn == callee && slot->version == version)
            return Py_NewRef(slot->entry);
        PyObject *entry = PyDict_GetItemWithError(m->fast, callee);
        if (entry != NULL) {
            slot->fn = callee;
            slot->entry = entry;
            slot->version = version;
            return Py_NewRef(entry);
        }
        if (PyErr_Occurred()) return NULL;
        return slow_entry(m, callee);
    }
    PyObject *object_entry = callable_object(m, callee);
    if (object_entry != NULL || PyErr_Occurred()) return object_entry;
    /* an object of a C class the table found to be its own entry (``natives``, keyed by
       classes whose metaclass is ``type``: hashed by identity, no code of the program's) */
    PyTypeObject *kind = Py_TYPE(callee);
    if (m->natives != NULL && Py_IS_TYPE((PyObject *)kind, &PyType_Type)) {
        PyObject *known = PyDict_GetItemWithError(m->natives, (PyObject *)kind);
        if (known != NULL) return Py_NewRef(callee);
        if (PyErr_Occurred()) return NULL;
    }
    /* first: a builtin method bound to an object is never in the table */
    int direct = direct_builtin(m, callee);
    if (direct < 0) return NULL;
    if (direct) { Py_INCREF(callee); return callee; }
    direct = direct_wrapper(m, callee);
    if (direct < 0) return NULL;
    if (direct) { Py_INCREF(callee); return callee; }
    if (!hashed_by_identity(callee)) return slow_entry(m, callee);
    PyObject *entry = PyDict_GetItemWithError(m->fast, callee);
    if (entry != NULL) { Py_INCREF(entry); return entry; }
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();
    }
    return slow_entry(m, callee);
}

/* ``SkipFirst(entry)``: calls ``entry(*args[1:], **kwargs)``. Bound as a method to a
   callable, it keeps that callable on the caller's stack as the call's first argument:
   CPython's ``CALL`` unpacks a method object onto its stack, and lets go of it right after
   the call, before the other arguments. */
typedef struct {
    PyObject_HEAD
    PyObject *entry;
    vectorcallfunc vectorcall;
} SkipFirst;

static PyObject *
skip_first_vectorcall(SkipFirst *s, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "splice: SkipFirst takes the held callable first");
        return NULL;
    }
    return PyObject_Vectorcall(s->entry, args + 1, (size_t)(nargs - 1), kwnames);
}

static int
skip_first_traverse(SkipFirst *s, visitproc visit, void *arg)
{
    Py_VISIT(s->entry);
    return 0;
}

static int
skip_first_clear(SkipFirst *s)
{
    Py_CLEAR(s->entry);
    return 0;
}

static void
skip_first_dealloc(SkipFirst *s)
{
    PyObject_GC_UnTrack(s);
    skip_first_clear(s);
    PyObject_GC_Del(s);
}

static PyTypeObject SkipFirstType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.SkipFirst",
    .tp_basicsize = sizeof(SkipFirst),
    .tp_dealloc = (destructor)skip_first_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(SkipFirst, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)skip_first_traverse,
    .tp_clear = (inquiry)skip_first_clear,
};

/* ``SkipFirst(entry)`` bound to ``callee``: what to call instead of ``entry`` so that the
   call holds ``callee`` (``entry`` is stolen) */
static PyObject *
held_by_the_call(PyObject *entry, PyObject *callee)
{
    SkipFirst *skip = PyObject_GC_New(SkipFirst, &SkipFirstType);
    if (skip == NULL) { Py_DECREF(entry); return NULL; }
    skip->entry = entry;
    skip->vectorcall = (vectorcallfunc)skip_first_vectorcall;
    PyObject_GC_Track(skip);
    PyObject *bound = PyMethod_New((PyObject *)skip, callee);
    Py_DECREF(skip);
    return bound;
}

/* ``PassOver``: one object, called as ``pass_over(callee, receiver, *args, **kwargs)``,
   calls ``callee(*args, **kwargs)``. Bound as a method to ``callee``, it is what a lookup
   with ``receiver_first`` returns for anything but a function or method descriptor found
   on the class: the call keeps ``callee`` on the caller's stack until it returns. */
static PyObject *
pass_over_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                     PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "splice: PassOver takes a callee and a receiver");
        return NULL;
    }
    return PyObject_Vectorcall(args[0], args + 2, (size_t)(nargs - 2), kwnames);
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} PassOver;

static PyTypeObject PassOverType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.PassOver",
    .tp_basicsize = sizeof(PassOver),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(PassOver, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static PassOver pass_over = {
    PyObject_HEAD_INIT(&PassOverType)
    .vectorcall = pass_over_vectorcall,
};
#define PASS_OVER ((PyObject *)&pass_over)

static PyObject *method_of(Methods *m, PyObject *obj, PyObject *name, int *takes_receiver);

static PyObject *
methods_vectorcall(Methods *m, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 1 && kwnames == NULL) {
        /* the entry of a callee, hashable or not */
        PyObject *callee = args[0];
        if (PyMethod_Check(callee)) {
            /* a Python method bound to an object (a callback held in a name): its
               function's entry bound to the same object, as the table would make it,
               without hashing the method (its ``__self__``'s ``__hash__``) */
            PyObject *target = entry_of(m, PyMethod_GET_FUNCTION(callee));
            if (target == NULL) return NULL;
            PyObject *bound = PyMethod_New(target, PyMethod_GET_SELF(callee));
            Py_DECREF(target);
            return bound;
        }
        PyObject *entry = entry_of(m, callee);
        if (entry == NULL || entry == callee || Py_REFCNT(callee) > 1) return entry;
        /* only the caller's stack holds it (``make()()``): it would die before its call */
        return held_by_the_call(entry, callee);
    }
    if (nargs != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "splice: method lookup takes (receiver, name) or (callee)");
        return NULL;
    }
    int takes_receiver = 0;
    PyObject *found = method_of(m, args[0], args[1], &takes_receiver);
    if (found == NULL || !m->receiver_first || takes_receiver) return found;
    /* called as ``found(obj, *args)``: ``PassOver`` bound to what to call lets the
       receiver go by */
    PyObject *over = PyMethod_New(PASS_OVER, found);
    Py_DECREF(found);
    return over;
}

/* What ``methods(obj, name)`` returns. With ``receiver_first`` set (``m``'s twin), a
   Python function's entry or a C method descriptor found on the class is returned as
   itself, to be called with ``obj`` first (``*takes_receiver`` set): no method object. */
static inline LookupSlot *
lookup_slot(Methods *m, PyTypeObject *type, PyObject *name)
{
    uintptr_t way = (((uintptr_t)type >> 4) * 31u) ^ ((uintptr_t)name >> 4);
    return &m->lookups[way % LOOKUP_WAYS];
}

/* ``_PyObject_GetMethod(obj, name, meth)``, and what it found kept in ``slot`` when it is a
   Python function or a C method descriptor the class gives (not routed: a lookup
   without a set of names routes every builtin method) that the instance lacked. Nothing
   runs between the lookup and the slot's filling. */
static int
get_method(Methods *m, PyObject *obj, PyObject *name, LookupSlot *slot, PyObject **meth)
{
    int unbound = _PyObject_GetMethod(obj, name, meth);
    if (*meth == NULL || !unbound) return unbound;
    PyTypeObject *tp = Py_TYPE(obj);
    if (tp->tp_getattro != PyObject_GenericGetAttr || !PyUnicode_CheckExact(name) ||
            tp->tp_version_tag == 0 || _PyType_Lookup(tp, name) != *meth)
        return unbound;
    int kind = FOUND_FUNCTION;
    if (!PyFunction_Check(*meth)) {
        int routed = m->routed == NULL ? 1 : PySet_Contains(m->routed, name);
        if (routed != 0) {
            if (routed < 0) PyErr_Clear();  /* (a str in a frozenset of str: no error) */
            return unbound;
        }
        kind = FOUND_C_METHOD;
    }
    void *keys;
    Py_ssize_t nentries;
    splice_shared_keys_lack(tp, name, &keys, &nentries);
    slot->type = tp;
    slot->version = tp->tp_version_tag;
    slot->kind = kind;
    Py_XSETREF(slot->name, Py_NewRef(name));
    slot->found = *meth;
    slot->keys = keys;
    slot->nentries = nentries;
    return unbound;
}

static PyObject *
method_of(Methods *m, PyObject *obj, PyObject *name, int *takes_receiver)
{
    PyObject *meth = NULL;
    int unbound;
    PyTypeObject *tp = Py_TYPE(obj);
    LookupSlot *slot = lookup_slot(m, tp, name);
    if (slot->type == tp && slot->name == name && slot->version == tp->tp_version_tag) {
        /* the class gives what it gave (its version tag is the same): what
           ``_PyObject_GetMethod`` returns depends on the instance's own attributes alone */
        int own = splice_instance_attribute(obj, name, slot->keys, slot->nentries, &meth);
        if (own < 0) return NULL;
        if (own == SPLICE_ABSENT) {
            PyObject *target;
            if (slot->kind == FOUND_FUNCTION) {
                PyObject *fn = slot->found;
                uint64_t version = table_version(m->fast);
                EntrySlot *kept = &m->entries[((uintptr_t)fn >> 4) % ENTRY_WAYS];
                if (kept->fn == fn && kept->version == version) {
                    target = Py_NewRef(kept->entry);
                } else {
                    /* (held: resolving it runs Python code, which may change the class) */
                    Py_INCREF(fn);
                    target = entry_of(m, fn);
                    Py_DECREF(fn);
                    if (target == NULL) return NULL;
                }
            } else {
                target = Py_NewRef(slot->found);
            }
            if (m->receiver_first) {
                *takes_receiver = 1;
                return target;
            }
            PyObject *bound = PyMethod_New(target, obj);
            Py_DECREF(target);
            return bound;
        }
        unbound = own == SPLICE_PRESENT ? 0 : get_method(m, obj, name, slot, &meth);
    } else {
        unbound = get_method(m, obj, name, slot, &meth);
    }
    if (meth == NULL) return NULL;
    /* whether an overlay or an intercept takes the name (every name, without a set of
       them): asked of builtin methods alone, the only ones whose way depends on it */
    int routed = 0;
    if (!PyFunction_Check(meth) && (unbound || PyCFunction_Check(meth))) {
        routed = m->routed == NULL ? 1 : PySet_Contains(m->routed, name);
        if (routed < 0) { Py_DECREF(meth); return NULL; }
    }
    if (unbound && routed && !PyFunction_Check(meth)) {
        /* a builtin method whose name an overlay or an intercept takes ('{}'.format):
           bound as ``getattr`` binds it, and the bound method's entry is what runs */
        descrgetfunc get = Py_TYPE(meth)->tp_descr_get;
        PyObject *bound = get == NULL ? Py_NewRef(meth) :
            get(meth, obj, (PyObject *)Py_TYPE(obj));
        Py_DECREF(meth);
        if (bound == NULL) return NULL;
        meth = bound;
        unbound = 0;
    }
    PyObject *target, *self;
    if (unbound) {
        if (PyFunction_Check(meth)) {
            target = entry_of(m, meth);
            Py_DECREF(meth);
            if (target == NULL) return NULL;
        } else {
            target = meth;  /* a C method descriptor: called with the receiver first */
        }
        self = obj;
    } else if (PyMethod_Check(meth)) {
        target = entry_of(m, PyMethod_GET_FUNCTION(meth));
        if (target == NULL) { Py_DECREF(meth); return NULL; }
        PyMethodObject *made = (PyMethodObject *)meth;
        if (Py_REFCNT(meth) == 1 && made->im_weakreflist == NULL) {
            /* made by this lookup (a classmethod bound to its class): nothing else can
               see it, so it binds the entry instead of a second method object */
            Py_SETREF(made->im_func, target);
            return meth;
        }
        PyObject *bound = PyMethod_New(target, PyMethod_GET_SELF(meth));
        Py_DECREF(target);
        Py_DECREF(meth);
        return bound;
    } else if (PyCFunction_Check(meth) && !routed) {
        return meth;
    } else {
        target = entry_of(m, meth);
        /* held here alone, or here and by a receiver only the caller's stack holds (its
           ``__dict__``, say): the callable would die before its call runs */
        int last = Py_REFCNT(meth) == 1 || (Py_REFCNT(meth) == 2 && Py_REFCNT(obj) == 1);
        if (target == NULL || target == meth || !last) {
            Py_DECREF(meth);
            return target;
        }
        PyObject *bound = held_by_the_call(target, meth);
        Py_DECREF(meth);
        return bound;
    }
    if (m->receiver_first) {
        *takes_receiver = 1;
        return target;
    }
    PyObject *bound = PyMethod_New(target, self);
    Py_DECREF(target);
    return bound;
}

static int
methods_traverse(Methods *m, visitproc visit, void *arg)
{
    Py_VISIT(m->fast);
    Py_VISIT(m->slow);
    Py_VISIT(m->routed);
    Py_VISIT(m->twin);
    Py_VISIT(m->objects);
    Py_VISIT(m->natives);
    Py_VISIT(m->builtin);
    return 0;
}

static int
methods_clear(Methods *m)
{
    Py_CLEAR(m->builtin);
    Py_CLEAR(m->fast);
    Py_CLEAR(m->slow);
    Py_CLEAR(m->routed);
    Py_CLEAR(m->last_name);
    Py_CLEAR(m->twin);
    Py_CLEAR(m->objects);
    Py_CLEAR(m->natives);
    return 0;
}

static void
methods_dealloc(Methods *m)
{
    PyObject_GC_UnTrack(m);
    methods_clear(m);
    for (int i = 0; i < LOOKUP_WAYS; i++) Py_CLEAR(m->lookups[i].name);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *
methods_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast, *slow, *routed = Py_None, *objects = Py_None, *natives = Py_None;
    if (!PyArg_ParseTuple(args, "O!O|OOO:Methods", &PyDict_Type, &fast, &slow, &routed,
                          &objects, &natives))
        return NULL;
    if (natives != Py_None && !PyDict_CheckExact(natives)) {
        PyErr_SetString(PyExc_TypeError, "Methods: natives must be a dict or None");
        return NULL;
    }
    if (routed != Py_None && !PyFrozenSet_Check(routed)) {
        PyErr_SetString(PyExc_TypeError, "Methods: routed must be a frozenset or None");
        return NULL;
    }
    Methods *m = (Methods *)type->tp_alloc(type, 0);
    if (m == NULL) return NULL;
    Py_INCREF(fast); m->fast = fast;
    Py_INCREF(slow); m->slow = slow;
    if (routed != Py_None) { Py_INCREF(routed); m->routed = routed; }
    if (objects != Py_None) { Py_INCREF(objects); m->objects = objects; }
    if (natives != Py_None) m->natives = Py_NewRef(natives);
    m->vectorcall = (vectorcallfunc)methods_vectorcall;
    return (PyObject *)m;
}

static PyTypeObject MethodsType;

/* ``methods.receiver_first``: the same lookup, for calls that pass the receiver again,
   first: ``methods.receiver_first(obj, 'm')(obj, *args)`` (one per table, made once) */
static PyObject *
methods_receiver_first(Methods *m, void *closure)
{
    if (m->receiver_first) return Py_NewRef(m);
    if (m->twin == NULL) {
        Methods *twin = (Methods *)MethodsType.tp_alloc(&MethodsType, 0);
        if (twin == NULL) return NULL;
        twin->fast = Py_NewRef(m->fast);
        twin->slow = Py_NewRef(m->slow);
        twin->routed = Py_XNewRef(m->routed);
        twin->objects = Py_XNewRef(m->objects);
        twin->natives = Py_XNewRef(m->natives);
        twin->vectorcall = (vectorcallfunc)methods_vectorcall;
        twin->receiver_first = 1;
        m->twin = (PyObject *)twin;
    }
    return Py_NewRef(m->twin);
}

/* ``methods.builtin``: the same lookup as a builtin function (METH_FASTCALL, bound to
   ``methods``), one per lookup. Generated code calls this one: CPython specialises the
   call of a builtin function (3.11 ``PRECALL_NO_KW_BUILTIN_FAST``, 3.12 and 3.13
   ``CALL_BUILTIN_FAST``), calling it with no generic vectorcall and result check. Its name
   is the lookup's (``@Methods`` in generated code). */
static PyObject *
methods_fastcall(Methods *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 2 && m->receiver_first) {  /* the common call: ``self.m(x)`` */
        int takes_receiver = 0;
        PyObject *found = method_of(m, args[0], args[1], &takes_receiver);
        if (found == NULL || takes_receiver) return found;
        PyObject *over = PyMethod_New(PASS_OVER, found);
        Py_DECREF(found);
        return over;
    }
    return methods_vectorcall(m, args, (size_t)nargs, NULL);
}

static PyMethodDef builtin_def = {
    "Methods", (PyCFunction)(void (*)(void))methods_fastcall, METH_FASTCALL, NULL,
};

static PyObject *
methods_builtin(Methods *m, void *closure)
{
    if (m->builtin == NULL) {
        /* (its ``__module__`` is this module's: splice's own call, never routed) */
        m->builtin = PyCFunction_NewEx(&builtin_def, (PyObject *)m, MODULE_NAME);
        if (m->builtin == NULL) return NULL;
    }
    return Py_NewRef(m->builtin);
}

static PyGetSetDef methods_getset[] = {
    {"receiver_first", (getter)methods_receiver_first, NULL, NULL, NULL},
    {"builtin", (getter)methods_builtin, NULL, NULL, NULL},
    {NULL},
};

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
    .tp_getset = methods_getset,
};

/* ``WeakKey(fn, callback)``: a weak reference to ``fn`` that a dict takes for ``fn``
   itself. It hashes as ``fn`` (``weakref.ref`` does) and compares equal to ``fn`` (and to
   itself), so ``table[fn]`` finds the entry stored under ``table[WeakKey(fn, cb)]``. A
   dispatch table keys the entries of nested functions (closures, lambdas: new objects each
   time their ``def`` runs) this way, so it does not keep them (and their cells) alive:
   when ``fn`` dies, ``callback(key)`` drops the entry, as natively nothing refers to the
   function any more. A dead key equals only itself. */
static PyObject *
weakkey_richcompare(PyObject *self, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    PyObject *referent = PyWeakref_GET_OBJECT(self);  /* borrowed; None once dead */
    int equal = self == other || (referent != Py_None && referent == other);
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyTypeObject WeakKeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.WeakKey",
    .tp_basicsize = sizeof(PyWeakReference),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_richcompare = weakkey_richcompare,
};

/* ``Renewals(table, fast, instantiate)``: the dispatch table's entries of new function
   objects of code compiled already, made without a Python frame.

   A closure or lambda made in a loop is a new function object each time its ``def`` runs,
   so each call of it misses the table. Once ``Context.recompiled`` has decided a nested
   function's code (compiled, plain: no hook, no intercept; not splice's, not a process
   starter; recorded for ``explain``), it ``add``s the code here, and from then on a miss
   of a function object of that code (and module) is answered by ``renew``, exactly as
   ``recompiled`` and ``DispatchTable.__missing__`` would answer it: the function made by
   ``instantiate`` (``splice.ir.compiled.instantiate``, its C form), keyed in both dicts by
   a ``WeakKey`` whose callback (``drop``) removes both entries when the function dies.
   Anything else (a code not added, a code object since freed whose address another
   reuses, a function of another module, a table due for a sweep: ``sweep_at``) returns
   None and the Python path decides. Codes are held weakly; the entries' decision depends
   on the code alone for such contexts (a plain function's transformed code reads no
   global), so nothing added goes stale while its code lives, except where the plugins
   decide by the function object (a ``recurse`` hook): then ``add`` is given ``keeps``,
   called with each new function object, and a false answer returns None. */
typedef struct {
    PyObject_HEAD
    PyObject *table;        /* the DispatchTable (a dict subclass) */
    PyObject *fast;         /* its exact dict */
    PyObject *instantiate;  /* splice._functions.instantiate */
    PyObject *codes;        /* id(code) -> (weakref(code), compiled code, module, plan) */
    PyObject *drop;         /* this object's ``drop``, bound: the keys' callback */
    Py_ssize_t sweep_at;    /* the table's size at which the Python path sweeps it */
    Py_ssize_t renewed;     /* how many entries ``renew`` made */
} Renewals;

static PyTypeObject RenewalsType;

static int
renewals_traverse(Renewals *r, visitproc visit, void *arg)
{
    Py_VISIT(r->table);
    Py_VISIT(r->fast);
    Py_VISIT(r->instantiate);
    Py_VISIT(r->codes);
    Py_VISIT(r->drop);
    return 0;
}

static int
renewals_clear(Renewals *r)
{
    Py_CLEAR(r->table);
    Py_CLEAR(r->fast);
    Py_CLEAR(r->instantiate);
    Py_CLEAR(r->codes);
    Py_CLEAR(r->drop);
    return 0;
}

static void
renewals_dealloc(Renewals *r)
{
    PyObject_GC_UnTrack(r);
    renewals_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
renewals_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *table, *fast, *instantiate;
    if (!PyArg_ParseTuple(args, "O!O!O:Renewals", &PyDict_Type, &table, &PyDict_Type,
                          &fast, &instantiate))
        return NULL;
    Renewals *r = (Renewals *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    r->table = Py_NewRef(table);
    r->fast = Py_NewRef(fast);
    r->instantiate = Py_NewRef(instantiate);
    r->sweep_at = PY_SSIZE_T_MAX;
    r->codes = PyDict_New();
    r->drop = PyObject_GetAttrString((PyObject *)r, "drop");
    if (r->codes == NULL || r->drop == NULL) { Py_DECREF(r); return NULL; }
    return (PyObject *)r;
}

/* ``add(code, compiled, module, plan[, keeps])``: renew functions of ``code`` from now on
   (those for which ``keeps(fn)`` is true, if given and not None) */
static PyObject *
renewals_add(Renewals *r, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 4 || nargs > 5 || !PyCode_Check(args[0]) || !PyCode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "add(code, compiled code, module, closure plan[, keeps])");
        return NULL;
    }
    PyObject *ref = PyWeakref_NewRef(args[0], NULL);
    if (ref == NULL) return NULL;
    PyObject *known = PyTuple_Pack(5, ref, args[1], args[2], args[3],
                                   nargs == 5 ? args[4] : Py_None);
    Py_DECREF(ref);
    if (known == NULL) return NULL;
    PyObject *key = PyLong_FromVoidPtr(args[0]);
    if (key == NULL) { Py_DECREF(known); return NULL; }
    int failed = PyDict_SetItem(r->codes, key, known);
    Py_DECREF(key);
    Py_DECREF(known);
    if (failed < 0) return NULL;
    Py_RETURN_NONE;
}

/* ``renew(fn)``: the entry of ``fn`` (made, and stored in both dicts), or None */
static PyObject *
renew(Renewals *r, PyObject *fn)
{
    PyFunctionObject *function = (PyFunctionObject *)fn;
    if (PyDict_GET_SIZE(r->table) >= r->sweep_at) Py_RETURN_NONE;
    PyObject *key = PyLong_FromVoidPtr(function->func_code);
    if (key == NULL) return NULL;
    PyObject *known = PyDict_GetItemWithError(r->codes, key);  /* borrowed */
    Py_DECREF(key);
    if (known == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    Py_INCREF(known);  /* (the dict may change while this runs) */
    PyObject *entry = NULL;
    if (PyWeakref_GET_OBJECT(PyTuple_GET_ITEM(known, 0)) != function->func_code) goto none;
    PyObject *module = PyTuple_GET_ITEM(known, 2);
    if (function->func_module != module) {
        if (function->func_module == NULL) goto none;
        int same = PyObject_RichCompareBool(function->func_module, module, Py_EQ);
        if (same < 0) { Py_DECREF(known); return NULL; }
        if (!same) goto none;
    }
    PyObject *keeps = PyTuple_GET_ITEM(known, 4);
    if (keeps != Py_None) {
        PyObject *kept = PyObject_CallOneArg(keeps, fn);
        if (kept == NULL) { Py_DECREF(known); return NULL; }
        int yes = PyObject_IsTrue(kept);
        Py_DECREF(kept);
        if (yes < 0) { Py_DECREF(known); return NULL; }
        if (!yes) goto none;
    }
    PyObject *const made_args[4] = {PyTuple_GET_ITEM(known, 1), fn,
                                    PyTuple_GET_ITEM(known, 3), Py_True};
    PyObject *made = PyObject_Vectorcall(r->instantiate, made_args, 4, NULL);
    if (made == NULL) { Py_DECREF(known); return NULL; }
    PyObject *weak = PyObject_CallFunctionObjArgs((PyObject *)&WeakKeyType, fn, r->drop, NULL);
    if (weak == NULL) { Py_DECREF(made); Py_DECREF(known); return NULL; }
    entry = Py_XNewRef(PyDict_SetDefault(r->table, weak, made));
    Py_DECREF(made);
    if (entry == NULL || PyDict_SetItem(r->fast, weak, entry) < 0) {
        Py_XDECREF(entry);
        Py_DECREF(weak);
        Py_DECREF(known);
        return NULL;
    }
    Py_DECREF(weak);
    Py_DECREF(known);
    r->renewed++;
    return entry;
none:
    Py_DECREF(known);
    Py_RETURN_NONE;
}

static PyObject *
renewals_renew(Renewals *r, PyObject *fn)
{
    if (!PyFunction_Check(fn)) Py_RETURN_NONE;
    return renew(r, fn);
}

/* ``drop(key)``: a weakly keyed function died: its entries go with it (both dicts) */
static PyObject *
renewals_drop(Renewals *r, PyObject *key)
{
    if (r->table == NULL) Py_RETURN_NONE;  /* (cleared by the collector) */
    if (PyDict_DelItem(r->table, key) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
        PyErr_Clear();
    }
    if (PyDict_DelItem(r->fast, key) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyObject *
renewals_clear_codes(Renewals *r, PyObject *unused)
{
    PyDict_Clear(r->codes);
    Py_RETURN_NONE;
}

static PyMethodDef renewals_methods[] = {
    {"add", (PyCFunction)(void (*)(void))renewals_add, METH_FASTCALL,
     "add(code, compiled code, module, closure plan[, keeps]): renew functions of code"},
    {"renew", (PyCFunction)renewals_renew, METH_O,
     "renew(fn): fn's entry, made and stored, or None"},
    {"drop", (PyCFunction)renewals_drop, METH_O,
     "drop(key): remove the entries of a dead weakly keyed function"},
    {"clear", (PyCFunction)renewals_clear_codes, METH_NOARGS, "clear(): renew nothing"},
    {NULL},
};

static PyMemberDef renewals_members[] = {
    {"sweep_at", T_PYSSIZET, offsetof(Renewals, sweep_at), 0,
     "the table's size from which misses take the Python path (which sweeps)"},
    {"renewed", T_PYSSIZET, offsetof(Renewals, renewed), READONLY,
     "how many entries renew made"},
    {NULL},
};

static PyTypeObject RenewalsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.Renewals",
    .tp_basicsize = sizeof(Renewals),
    .tp_dealloc = (destructor)renewals_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)renewals_traverse,
    .tp_clear = (inquiry)renewals_clear,
    .tp_new = renewals_new,
    .tp_methods = renewals_methods,
    .tp_members = renewals_members,
};

/* ``Missing(fallback)``: a dispatch table's ``__missing__`` (a class attribute, bound to
   the table as a method is). A miss of a Python function is first answered by the table's
   ``_renewals`` (``Renewals.renew``), without a Python frame; anything else, and a function
   it does not renew, by ``fallback(table, callee)``, the Python method. */
typedef struct {
    PyObject_HEAD
    PyObject *fallback;
    vectorcallfunc vectorcall;
} Missing;

static PyObject *RENEWALS_NAME;  /* "_renewals", interned */

static PyObject *
missing_vectorcall(Missing *m, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 2 && kwnames == NULL && PyFunction_Check(args[1])) {
        PyObject *renewals = PyObject_GetAttr(args[0], RENEWALS_NAME);
        if (renewals == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
            PyErr_Clear();  /* (a table still being made) */
        } else if (Py_IS_TYPE(renewals, &RenewalsType)) {
            PyObject *entry = renew((Renewals *)renewals, args[1]);
            Py_DECREF(renewals);
            if (entry != Py_None) return entry;  /* (NULL: an error) */
            Py_DECREF(entry);
        } else {
            Py_DECREF(renewals);
        }
    }
    return PyObject_Vectorcall(m->fallback, args, nargsf, kwnames);
}

static PyObject *
missing_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *fallback;
    if (!PyArg_ParseTuple(args, "O:Missing", &fallback)) return NULL;
    Missing *m = (Missing *)type->tp_alloc(type, 0);
    if (m == NULL) return NULL;
    m->fallback = Py_NewRef(fallback);
    m->vectorcall = (vectorcallfunc)missing_vectorcall;
    return (PyObject *)m;
}

static PyObject *
missing_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int
missing_traverse(Missing *m, visitproc visit, void *arg)
{
    Py_VISIT(m->fallback);
    return 0;
}

static int
missing_clear(Missing *m)
{
    Py_CLEAR(m->fallback);
    return 0;
}

static void
missing_dealloc(Missing *m)
{
    PyObject_GC_UnTrack(m);
    missing_clear(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyTypeObject MissingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "splice.runtime._methods.Missing",
    .tp_basicsize = sizeof(Missing),
    .tp_dealloc = (destructor)missing_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Missing, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)missing_traverse,
    .tp_clear = (inquiry)missing_clear,
    .tp_new = missing_new,
    .tp_descr_get = missing_get,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "splice.runtime._methods", NULL, -1, NULL,
};

PyMODINIT_FUNC
PyInit__methods(void)
{
    if (PyType_Ready(&MethodsType) < 0) return NULL;
    if (PyType_Ready(&SkipFirstType) < 0) return NULL;
    if (PyType_Ready(&PassOverType) < 0) return NULL;
    CALL_NAME = PyUnicode_InternFromString("__call__");
    if (CALL_NAME == NULL) return NULL;
    SELF_NAME = PyUnicode_InternFromString("__self__");
    NAME_NAME = PyUnicode_InternFromString("__name__");
    MODULE_NAME = PyUnicode_InternFromString("splice.runtime._methods");
    if (SELF_NAME == NULL || NAME_NAME == NULL || MODULE_NAME == NULL) return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) return NULL;
    PyObject *wrapper = PyObject_GetAttrString(zero, "__add__");
    Py_DECREF(zero);
    if (wrapper == NULL) return NULL;
    method_wrapper_type = Py_TYPE(wrapper);  /* a static type: never freed */
    Py_DECREF(wrapper);
    WeakKeyType.tp_base = &_PyWeakref_RefType;
    /* the base's hash (the referent's, cached) with our comparison: set explicitly, as
       a type defining tp_richcompare alone inherits no tp_hash */
    WeakKeyType.tp_hash = _PyWeakref_RefType.tp_hash;
    WeakKeyType.tp_traverse = _PyWeakref_RefType.tp_traverse;
    WeakKeyType.tp_clear = _PyWeakref_RefType.tp_clear;
    if (PyType_Ready(&WeakKeyType) < 0) return NULL;
    if (PyType_Ready(&RenewalsType) < 0) return NULL;
    if (PyType_Ready(&MissingType) < 0) return NULL;
    RENEWALS_NAME = PyUnicode_InternFromString("_renewals");
    if (RENEWALS_NAME == NULL) return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    Py_INCREF(&MethodsType);
    if (PyModule_AddObject(mod, "Methods", (PyObject *)&MethodsType) < 0) return NULL;
    Py_INCREF(&WeakKeyType);
    if (PyModule_AddObject(mod, "WeakKey", (PyObject *)&WeakKeyType) < 0) return NULL;
    Py_INCREF(&RenewalsType);
    if (PyModule_AddObject(mod, "Renewals", (PyObject *)&RenewalsType) < 0) return NULL;
    Py_INCREF(&MissingType);
    if (PyModule_AddObject(mod, "Missing", (PyObject *)&MissingType) < 0) return NULL;
    return mod;
}
