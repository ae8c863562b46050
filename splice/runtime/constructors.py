"""Instantiation without a splice frame, the run-time half: which classes get a constructor
(``eligible_init``), a class's entry (``constructor_for``) and the arguments a constructor
hands back to the general instantiation when its class changed (``reconstruct``).

With splice/runtime/_hooks.c built, a class's entry is a ``Constructor`` (C): it checks
the class's slots (metaclass, ``tp_new``, ``tp_init``) and the ``__init__`` its MRO gives,
makes the object through ``tp_new`` and calls ``__init__``'s entry with the caller's
arguments, which is ``type.__call__``'s own sequence for a class that passed
``eligible_init`` (sound for as long as the checks hold, and they are made on every call).
Without it, ``__init__``'s code is compiled as the constructor, which makes those checks
and the object itself (``splice.compiler.constructors``, which says why that is sound), and
a ``functools.partial`` binds its spec.
"""

from __future__ import annotations

import dis
import functools
import types
import weakref
from typing import Any

from splice.compiler.sentinels import CO_GENERATOR_LIKE, INIT, Sentinel
from splice.pristine import BUILTINS
from splice.runtime.dunders import special
from splice.runtime.native import CONSTRUCTOR, SLOT_CALL

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["COMPILED_ENTRY", "CONSTRUCTOR_ENTRIES", "CONSTRUCTOR_ENTRY", "constructor_for",
           "eligible_init", "reconstruct"]

COMPILED_ENTRY: Any = SLOT_CALL if SLOT_CALL is not None else functools.partial
"""The class of a compiled constructor's entry (``func`` and ``args`` as a partial's)."""
CONSTRUCTOR_ENTRY: Any = CONSTRUCTOR if CONSTRUCTOR is not None else COMPILED_ENTRY
"""The class of a constructor's entry: the C ``Constructor`` when built."""
CONSTRUCTOR_ENTRIES: tuple[Any, ...] = (CONSTRUCTOR_ENTRY, COMPILED_ENTRY)
"""Either kind (the compiled form also runs with the C extension when asked for)."""

_HEAPTYPE = 1 << 9
_ABSTRACT = 1 << 20
_object_new: Any = object.__new__
_type_call = type.__dict__["__call__"]
_type_getattribute = type.__dict__["__getattribute__"]


def eligible_init(cls: type) -> types.FunctionType | None:
    """``cls``'s ``__init__`` if ``cls`` instantiates as ``object.__new__`` then a Python
    ``__init__`` that a constructor can replace; else None."""
    meta = type(cls)
    if special(meta, "__call__") is not _type_call or \
            special(meta, "__getattribute__") is not _type_getattribute or \
            special(meta, "__getattr__") is not None:
        return None
    if not cls.__flags__ & _HEAPTYPE or cls.__flags__ & _ABSTRACT:
        return None
    if special(cls, "__new__") is not special(object, "__new__") or \
            special(cls, "__del__") is not None:
        return None
    try:
        # as type.__call__ calls it: this raises if the class's __new__ slot is not
        # object's own (once __new__ was assigned on the class, even if deleted since)
        _object_new(cls, None)
    except TypeError:
        return None
    init = special(cls, "__init__")
    if type(init) is not types.FunctionType:
        return None
    code = init.__code__
    if code.co_flags & CO_GENERATOR_LIKE or code.co_argcount == 0:
        return None
    if _rebinds_first(code):
        return None
    return init


#: code object -> whether it rebinds its first parameter: a memo of a function of the code's
#: contents alone (a class's entry is made again after each full collection, and reading
#: the bytecode was most of that), keyed weakly so that it keeps no code alive
_REBINDS_FIRST: weakref.WeakKeyDictionary[types.CodeType, bool] = weakref.WeakKeyDictionary()


def _rebinds_first(code: types.CodeType) -> bool:
    """``_rebinds(code, first parameter)``, remembered per code object."""
    found = _REBINDS_FIRST.get(code)
    if found is None:
        found = _REBINDS_FIRST[code] = _rebinds(code, code.co_varnames[0])
    return found


def _rebinds(code: types.CodeType, name: str) -> bool:
    """Whether ``code`` (or a function nested in it, through a cell) assigns or deletes the
    parameter ``name``: the constructor returns the object bound to it at the start."""
    stores = {"STORE_FAST", "DELETE_FAST", "STORE_DEREF", "DELETE_DEREF", "STORE_NAME",
              "DELETE_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"}
    for instruction in dis.get_instructions(code):
        if instruction.opname in stores and instruction.argval == name and \
                instruction.opname not in ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME",
                                           "DELETE_NAME"):
            return True
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and name in const.co_freevars and \
                _rebinds(const, name):
            return True
    return False


def constructor_for(constructor: types.FunctionType, cls: type, init: types.FunctionType,
                    defaults: tuple[Any, ...] | None, kwdefaults: dict[str, Any] | None
                    ) -> Any:
    """The entry of ``cls``: ``constructor`` (made for ``init``) with its spec bound (in C,
    counted in the recursion limit as ``type.__call__`` is, when built)."""
    spec = (cls, defaults or (), init, type(cls), kwdefaults or {})
    return COMPILED_ENTRY(constructor, spec)


def reconstruct(spec: tuple[Any, ...], positional: tuple[Any, ...], varargs: tuple[Any, ...],
                keywords: dict[str, Any], varkw: dict[str, Any] | None
                ) -> tuple[list[Any], dict[str, Any]]:
    """The arguments the caller passed, from a constructor's parameters (``positional`` in
    order, after the class): sentinels are parameters left out."""
    init = spec[INIT]
    names = init.__code__.co_varnames[1:init.__code__.co_argcount]
    posonly = init.__code__.co_posonlyargcount - 1
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    gap = False
    for index, (name, value) in enumerate(zip(names, positional, strict=True)):
        if type(value) is Sentinel:
            gap = True
        elif not gap:
            args.append(value)
        elif index >= posonly:
            kwargs[name] = value
    args.extend(varargs)
    kwargs.update({k: v for k, v in keywords.items() if type(v) is not Sentinel})
    if varkw:
        kwargs.update(varkw)
    return args, kwargs
