/* The C stack under splice's C calls, and the recursion budget they spend.

   Natively a Python function calling a Python function costs no C stack (3.11 on: the
   interpreter pushes the callee's frame and goes on in the same C loop), so a program that
   raises ``sys.setrecursionlimit`` to 20000 recurses 20000 deep. Through one of splice's C
   callables (per-call hooks, a specializing entry's choice, ``recurse_call``) each level
   re-enters the interpreter from C: it costs C stack, and from 3.12 on it also spends
   CPython's C recursion budget (about 1500 units on 3.12.1, 10000 on 3.13), which a native
   Python recursion never touches. Unchecked, the first ends in a segmentation fault (3.11
   has no C budget) and the second stops a recursion of a few hundred levels, that runs
   natively, with a ``RecursionError``.

   ``splice_enter_call`` and ``splice_leave_call`` bracket each such C call:

   - **The stack guard.** When less than a margin (an eighth of this thread's stack, kept
     between 64 KiB and 1 MiB) is left below the current stack pointer, the call raises
     ``RecursionError`` instead of going on: the program sees the exception it would see at
     its recursion limit, never a crash. The stack's bounds come from the thread's
     attributes (Linux, macOS); where they are unknown no guard is made, as before.
   - **The C budget (3.12 on).** While less than half of the stack is used, the call gives
     back the units its own re-entry spends (``SPLICE_C_UNITS_PER_CALL``), so a recursion
     through the hooks stops at ``sys.getrecursionlimit()`` as natively. Past half, nothing
     is given back: the deeper levels spend the budget as CPython counts it, and what the
     shallow levels did not spend still protects the C code below them. Sound because the
     guard above bounds the levels that were given units back by the stack they really use.

   Everything here that depends on the Python version is in this file. */

#ifndef SPLICE_CSTACK_H
#define SPLICE_CSTACK_H

#include <Python.h>

#if defined(__linux__) || defined(__APPLE__)
#include <pthread.h>
#define SPLICE_STACK_BOUNDS 1
#endif

#if PY_VERSION_HEX >= 0x030C0000
/* what one re-entry of the interpreter from splice's C costs on 3.12 and 3.13: the
   frame's entry and the vectorcall from C each count one unit */
#define SPLICE_C_UNITS_PER_CALL 2
#else
#define SPLICE_C_UNITS_PER_CALL 0   /* 3.11: one budget, the recursion limit, for both */
#endif

/* Natively ``type.__call__`` spends a unit of the recursion limit (3.11) or of the C budget
   (3.12) on top of what the ``__init__`` it calls spends; splice's instantiation, a
   vectorcall, spends the same by counting it itself. (On 3.13 it already spends more C
   budget than natively, and no Python unit can be spent from C.) */
#if PY_VERSION_HEX < 0x030D0000
#define SPLICE_COUNT_INSTANTIATION 1
#else
#define SPLICE_COUNT_INSTANTIATION 0
#endif

/* From 3.13 on, natively an instantiation the interpreter has specialised (a class with a
   Python ``__init__`` and ``object.__new__``: ``CALL_ALLOC_AND_ENTER_INIT``) runs ``__init__``
   below a shim frame, which spends a unit of the Python frames' limit besides
   ``__init__``'s own; splice's constructor entries, which call ``__init__`` from C, spend it
   too (``splice_spend_py_units``). */
#if PY_VERSION_HEX >= 0x030D0000
#define SPLICE_INIT_SHIM_UNITS 1
#else
#define SPLICE_INIT_SHIM_UNITS 0
#endif

static inline void
splice_spend_py_units(int units)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (units) PyThreadState_Get()->py_recursion_remaining -= units;
#else
    (void)units;
#endif
}

/* ---------------------------------------------------------------------------------------
   Handing a call's arguments over to the callee's frame.

   Natively, when Python code calls a Python function, the interpreter moves the arguments
   from the caller's value stack into the callee's frame: the frame holds the only
   references the call made, so a parameter the callee deletes or rebinds frees its object
   there (a file closed by its finaliser, a weak reference cleared, a ``*args`` tuple
   freeing its items last to first). A C callable between the two (a specializing entry,
   per-call hooks) is lent the caller's stack slots instead: they hold the arguments until
   the call returns, and so would the interpreter frame made for the callee from C, which
   takes references of its own.

   ``splice_args_on_stack(entry, args, n)`` tells whether ``entry`` was called by the
   interpreter's own CALL instruction of the frame running now, with ``args`` (``n``
   arguments, keyword values included) being that frame's value stack slots: they lie in
   its value stack, and the slot below them (3.12 on: below the NULL of a call without
   ``self``) holds ``entry`` itself, the callable the instruction calls. Anything that
   forwards a call's arguments (``functools.partial``, a bound method) sits in that slot
   instead, or writes the receiver into it while it calls. Only then may ``entry`` take the
   slots' references, leaving ``None`` in them (the instruction releases whatever the slots
   hold after the call, and reads nothing else from them), and give them to the callee's
   frame: ``_PyEval_Vector`` takes a reference to each argument before anything else runs
   (3.11 to 3.13; with at most ``SPLICE_HAND_OVER_MAX`` arguments 3.13 allocates nothing
   first), so releasing ours right before the call, without freeing an object whose count
   reaches zero there, leaves the frame as the only holder, as natively. Only on the
   versions whose layouts and calls are these (3.14's stack may hold borrowed references),
   not in a free-threaded build (its reference counts are split), and only where the
   interpreter's internal headers are installed (they are with CPython's own install). */
#if !defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 \
    && defined(__has_include)
#if __has_include("internal/pycore_frame.h")
#define SPLICE_HAND_OVER 1
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#endif
#endif
#ifndef SPLICE_HAND_OVER
#define SPLICE_HAND_OVER 0  /* (no internal headers installed: arguments are lent) */
#endif
#define SPLICE_HAND_OVER_MAX 8

static inline int
splice_args_on_stack(PyObject *entry, PyObject *const *args, Py_ssize_t n)
{
#if SPLICE_HAND_OVER
    if (n <= 0 || n > SPLICE_HAND_OVER_MAX) return 0;
    PyThreadState *ts = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *frame = ts->current_frame;
    if (frame == NULL || !PyCode_Check(frame->f_executable)) return 0;
    PyCodeObject *code = (PyCodeObject *)frame->f_executable;
#else
    _PyInterpreterFrame *frame = ts->cframe->current_frame;
    if (frame == NULL) return 0;
    PyCodeObject *code = frame->f_code;
#endif
    PyObject **base = frame->localsplus + code->co_nlocalsplus;
    PyObject **start = (PyObject **)args;
    if (start - 1 < base || start + n > base + code->co_stacksize) return 0;
#if PY_VERSION_HEX >= 0x030C0000
    /* [callable, self or NULL, args...]: ``args`` starts at self when there is one */
    return start[-1] == entry || (start[-1] == NULL && start - 2 >= base && start[-2] == entry);
#else
    /* [NULL or method, callable or self, args...] */
    return start[-1] == entry;
#endif
#else
    (void)entry; (void)args; (void)n;
    return 0;
#endif
}

/* Whether ``fn`` is a plain Python function, whose call from C makes its frame through
   ``_PyEval_Vector``: its vectorcall is ``functions``', the interpreter's own that every
   function gets (``_PyFunction_Vectorcall``, which 3.13 no longer exports: the caller reads
   it from a function it made) */
static inline int
splice_frame_callee(PyObject *fn, vectorcallfunc functions)
{
#if SPLICE_HAND_OVER
    return functions != NULL && PyFunction_Check(fn) && PyVectorcall_Function(fn) == functions
        && (((PyCodeObject *)PyFunction_GET_CODE(fn))->co_flags & CO_OPTIMIZED);
#else
    (void)fn; (void)functions;
    return 0;
#endif
}

/* Take the ``n`` references of the caller's slots ``args`` into ``moved`` (``None`` left in
   each slot), then release them so that the frame the next call makes holds them alone:
   call ``fn`` with ``moved`` right after, nothing in between. */
static inline void
splice_take_slots(PyObject *const *args, Py_ssize_t n, PyObject **moved)
{
    PyObject **slots = (PyObject **)args;
    for (Py_ssize_t i = 0; i < n; i++) {
        moved[i] = slots[i];
        slots[i] = Py_NewRef(Py_None);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = moved[i];
#if PY_VERSION_HEX >= 0x030C0000
        if (_Py_IsImmortal(obj)) continue;
#endif
        /* (a count reaching zero here is the callee frame's one as soon as it is made) */
        Py_SET_REFCNT(obj, Py_REFCNT(obj) - 1);
    }
}

#ifdef SPLICE_STACK_BOUNDS
static _Thread_local char *splice_stack_margin;  /* below this: RecursionError */
static _Thread_local char *splice_stack_half;    /* below this: no budget given back */
static _Thread_local int splice_stack_known;     /* 0 unknown, 1 known, -1 unavailable */

static void
splice_find_stack(void)
{
    char *low = NULL, *high = NULL;
#if defined(__linux__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *address;
        size_t size;
        if (pthread_attr_getstack(&attr, &address, &size) == 0) {
            low = (char *)address;
            high = low + size;
        }
        pthread_attr_destroy(&attr);
    }
#else
    high = (char *)pthread_get_stackaddr_np(pthread_self());
    low = high - pthread_get_stacksize_np(pthread_self());
#endif
    char here;
    if (low == NULL || high <= low || &here <= low || &here > high) {
        splice_stack_known = -1;
        return;
    }
    size_t size = (size_t)(high - low);
    size_t margin = size / 8;
    if (margin < 64 * 1024) margin = 64 * 1024;
    if (margin > 1024 * 1024) margin = 1024 * 1024;
    if (margin > size / 2) margin = size / 2;
    splice_stack_margin = low + margin;
    splice_stack_half = low + size / 2;
    splice_stack_known = 1;
}
#endif

/* Natively, once the interpreter has specialised a call site, a call of a builtin function
   or method that takes ``METH_FASTCALL`` (``sorted``, ``list.sort``: CALL_BUILTIN_FAST*,
   CALL_METHOD_DESCRIPTOR_FAST* and their 3.11 PRECALL forms) spends no unit of the recursion
   budget; called from C through its vectorcall it spends one (the limit on 3.11, the C
   budget from 3.12). ``splice_fastcall_units`` is what a call of ``callable`` from C spends
   that the native call would not, to be given back around the call with
   ``splice_give_c_units``. */
static inline int
splice_fastcall_units(PyObject *callable)
{
    if (!PyCFunction_CheckExact(callable)) return 0;
    int flags = PyCFunction_GET_FLAGS(callable);
    return (flags & METH_FASTCALL) && !(flags & METH_METHOD) ? 1 : 0;
}

static inline void
splice_give_c_units(int units)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyThreadState_Get()->c_recursion_remaining += units;
#else
    PyThreadState_Get()->recursion_remaining += units;
#endif
}

/* -1 with RecursionError set when the stack is nearly used up, else 0 */
static inline int
splice_check_stack(void)
{
#ifdef SPLICE_STACK_BOUNDS
    if (splice_stack_known == 0) splice_find_stack();
    char here;
    if (splice_stack_known > 0 && &here < splice_stack_margin) {
        PyErr_SetString(PyExc_RecursionError,
                        "maximum recursion depth exceeded (the C stack is nearly full: under "
                        "splice each Python call through its C calls also uses C stack; "
                        "lower sys.setrecursionlimit)");
        return -1;
    }
#endif
    return 0;
}

/* Before a C call that re-enters the interpreter where native code would not: -1 with
   RecursionError set when the stack is nearly used up; otherwise 0, and ``*units`` is what
   to hand to ``splice_leave_call``. */
static inline int
splice_enter_call(int *units)
{
    *units = 0;
    if (splice_check_stack() < 0) return -1;
#if defined(SPLICE_STACK_BOUNDS) && SPLICE_C_UNITS_PER_CALL > 0
    char here;
    if (splice_stack_known > 0 && &here >= splice_stack_half) {
        *units = SPLICE_C_UNITS_PER_CALL;
        PyThreadState_Get()->c_recursion_remaining += *units;
    }
#endif
    return 0;
}

static inline void
splice_leave_call(int units)
{
#if SPLICE_C_UNITS_PER_CALL > 0
    if (units) PyThreadState_Get()->c_recursion_remaining -= units;
#else
    (void)units;
#endif
}

/* Python code of splice's or a plugin's that runs beside the program, not inside it (a
   prehook or posthook, the table resolving a callee, an implicit call's protocol between
   its steps, the check before an attribute access): while it runs it gets
   ``SPLICE_OWN_UNITS`` units of the recursion limit on top of what the program has left, so
   running it at the program's deepest point does not bring the program's RecursionError
   earlier than natively. It still stops at a limit, that many units deeper (3.11: the one
   limit; 3.12 on: the Python frames' limit), and the C stack guard above still holds. */
#define SPLICE_OWN_UNITS 50

static inline void
splice_own_units(int sign)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyThreadState_Get()->py_recursion_remaining += sign * SPLICE_OWN_UNITS;
#else
    PyThreadState_Get()->recursion_remaining += sign * SPLICE_OWN_UNITS;
#endif
}

/* ---------------------------------------------------------------------------------------
   An instance's own attributes, read as ``_PyObject_GetMethod`` reads them but without its
   calls (the method lookup's cache, splice/runtime/_methods.c). CPython keeps the
   attributes of an instance of a class with a managed dict as values beside the class's
   *shared keys* (``ht_cached_keys``: one keys table for the class's instances, which only
   ever grows: no key is ever removed, a deleted attribute leaves its value NULL) until a
   dict is made for the instance (``__dict__`` read, too many attributes, ...). The layouts
   below are the interpreter's own (Include/internal/pycore_dict.h and pycore_object.h of
   each version) in the default build; in a free-threaded build nothing is read
   (``SPLICE_INSTANCE_READS`` 0: every lookup asks ``_PyObject_GetMethod``). */

#if !defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define SPLICE_INSTANCE_READS 1
#else
#define SPLICE_INSTANCE_READS 0
#endif

#define SPLICE_ABSENT 0    /* the instance has no attribute of that name */
#define SPLICE_PRESENT 1   /* it has: ``*attr`` (a new reference) */
#define SPLICE_UNKNOWN 2   /* not told here: ask ``_PyObject_GetMethod`` */

#if SPLICE_INSTANCE_READS
typedef struct {             /* struct _dictkeysobject, 3.11 to 3.13 (GIL build) */
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind;
    uint32_t dk_version;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} splice_dict_keys;

typedef struct {             /* PyDictUnicodeEntry */
    PyObject *me_key;
    PyObject *me_value;
} splice_unicode_entry;

#define SPLICE_DICT_KEYS_SPLIT 2

static inline splice_dict_keys *
splice_shared_keys(PyTypeObject *tp)
{
    return (splice_dict_keys *)((PyHeapTypeObject *)tp)->ht_cached_keys;
}

/* the instance's values are beside ``keys``, still with ``nentries`` keys */
static inline int
splice_same_keys(PyTypeObject *tp, void *keys, Py_ssize_t nentries)
{
    return keys != NULL && splice_shared_keys(tp) == keys &&
        ((splice_dict_keys *)keys)->dk_nentries == nentries;
}
#endif

/* Whether the shared keys of ``tp`` (a class whose instances have a managed dict) lack
   ``name`` (an exact str): 1, with ``*keys`` and ``*nentries`` for
   ``splice_instance_attribute``; 0 when they hold it or the class has none. */
static inline int
splice_shared_keys_lack(PyTypeObject *tp, PyObject *name, void **keys, Py_ssize_t *nentries)
{
    *keys = NULL;
    *nentries = 0;
#if SPLICE_INSTANCE_READS
    if (!PyType_HasFeature(tp, Py_TPFLAGS_HEAPTYPE) ||
            !PyType_HasFeature(tp, Py_TPFLAGS_MANAGED_DICT))
        return 0;
    splice_dict_keys *shared = splice_shared_keys(tp);
    if (shared == NULL || shared->dk_kind != SPLICE_DICT_KEYS_SPLIT) return 0;
    splice_unicode_entry *entries = (splice_unicode_entry *)(
        shared->dk_indices + ((size_t)1 << shared->dk_log2_index_bytes));
    Py_ssize_t count = shared->dk_nentries;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key = entries[i].me_key;  /* exact str: a split table holds no other */
        if (key == name) return 0;
        if (key != NULL && PyUnicode_GET_LENGTH(key) == PyUnicode_GET_LENGTH(name) &&
                PyUnicode_Compare(key, name) == 0)
            return 0;
    }
    *keys = shared;
    *nentries = count;
    return 1;
#else
    (void)tp; (void)name;
    return 0;
#endif
}

/* ``obj``'s own attribute ``name``, looked up where and as ``_PyObject_GetMethod`` looks
   it up once it has found a method on the class (whose ``tp_getattro`` is the generic
   one): SPLICE_ABSENT, SPLICE_PRESENT (``*attr`` set), SPLICE_UNKNOWN, or -1 with an error
   set (a dict's lookup may run a key's ``__eq__``, as natively). Values beside the shared
   keys tell absent when the keys are still ``keys``, with the ``nentries`` seen lacking the
   name (``splice_shared_keys_lack``: they only grow); a dict made for the instance is
   looked up, as natively; an instance of a class without ``__dict__`` has no attributes of
   its own. */
static inline int
splice_instance_attribute(PyObject *obj, PyObject *name, void *keys, Py_ssize_t nentries,
                          PyObject **attr)
{
    *attr = NULL;
#if SPLICE_INSTANCE_READS
    PyTypeObject *tp = Py_TYPE(obj);
    PyObject *dict;
    if (!PyType_HasFeature(tp, Py_TPFLAGS_MANAGED_DICT))
        return tp->tp_dictoffset == 0 ? SPLICE_ABSENT : SPLICE_UNKNOWN;
#if PY_VERSION_HEX >= 0x030D0000
    /* 3.13: values inline after the header (``valid`` their fourth byte) while the
       instance's dict, if any, still uses them; then the dict, 3 words before */
    if (PyType_HasFeature(tp, Py_TPFLAGS_INLINE_VALUES)) {
        if (tp->tp_basicsize != sizeof(PyObject)) return SPLICE_UNKNOWN;
        if (((uint8_t *)obj)[sizeof(PyObject) + 3])
            return splice_same_keys(tp, keys, nentries) ? SPLICE_ABSENT : SPLICE_UNKNOWN;
    }
    dict = ((PyObject **)obj)[-3];
#elif PY_VERSION_HEX >= 0x030C0000
    /* 3.12: one word, 3 before the object: the values' address minus one (odd), or the
       dict */
    PyObject *either = ((PyObject **)obj)[-3];
    if (((uintptr_t)either) & 1)
        return splice_same_keys(tp, keys, nentries) ? SPLICE_ABSENT : SPLICE_UNKNOWN;
    dict = either;
#else
    /* 3.11: the values 4 words before the object, the dict 3 before (at most one set) */
    if (((void **)obj)[-4] != NULL)
        return splice_same_keys(tp, keys, nentries) ? SPLICE_ABSENT : SPLICE_UNKNOWN;
    dict = ((PyObject **)obj)[-3];
#endif
    if (dict == NULL) return SPLICE_ABSENT;
    Py_INCREF(dict);
    PyObject *found = PyDict_GetItemWithError(dict, name);
    Py_XINCREF(found);
    Py_DECREF(dict);
    if (found != NULL) { *attr = found; return SPLICE_PRESENT; }
    return PyErr_Occurred() ? -1 : SPLICE_ABSENT;
#else
    (void)obj; (void)name; (void)keys; (void)nentries;
    return SPLICE_UNKNOWN;
#endif
}

#endif
