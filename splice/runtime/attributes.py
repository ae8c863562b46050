"""Attribute access under a context: ``obj.name``, ``obj.name = v``, ``del obj.name``.

Where some plugin needs to see every call, attribute access on an operand whose type is not
in ``ATTRIBUTE_NATIVE_TYPES`` goes through ``Attributes``, which follows CPython's protocols
step by step and calls the Python code they reach (property accessors, ``__get__``,
``__set__`` and ``__delete__`` of descriptors, ``__getattr__``, ``__getattribute__``,
``__setattr__``, ``__delattr__``, a module's ``__getattr__``) through the context's dispatch
table:

* instances (``PyObject_GenericGetAttr``): a data descriptor on the type wins over the
  instance ``__dict__``, which wins over a non-data descriptor or class attribute;
  ``__getattr__`` runs when that raises ``AttributeError`` (``slot_tp_getattr_hook``);
* classes (``type.__getattribute__``): a data descriptor of the metaclass, then the class's
  MRO (``__get__(None, cls)``), then the metaclass's attribute;
* ``super()`` objects, modules (their ``__getattr__``) and bound methods (which read the
  function's attributes) by their own rules.

Each step that runs only C code is left to CPython itself, by calling the same C function
CPython would (so results, messages and exception attributes are the native ones); nothing
found on a class is cached, since a class can change at any time (lookups on builtin and C
types, which cannot, are). An ``AttributeError`` leaving a read gets ``name`` and ``obj`` as
``PyObject_GetAttr`` gives them. A C ``__getattribute__``/``__setattr__`` that splice does not
model (a C extension type's own) runs natively, and with it what it reaches.
"""

from __future__ import annotations

import builtins
import types
from collections import defaultdict, deque
from collections.abc import Callable
from functools import partial
from typing import Any

from splice.compat import CLASSMETHOD_WRAPS_DESCRIPTORS
from splice.keys import ClassSet, keyable_class
from splice.pristine import BUILTINS
from splice.runtime.dunders import (
    MISSING,
    NATIVE_TYPES,
    Dunders,
    Steps,
    drive,
    find,
    find3,
    frozen_namespace,
    immutable,
    mro_of,
    type_dict,
)
from splice.runtime.native import BESIDE

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

_FunctionType = types.FunctionType
_ModuleType = types.ModuleType
_MethodType = types.MethodType
_WrapperDescriptorType = types.WrapperDescriptorType
_GetSetDescriptorType = types.GetSetDescriptorType
_MemberDescriptorType = types.MemberDescriptorType
_dict_get = dict.get
_dict_contains = dict.__contains__

#: types on whose instances attribute access runs no Python code (builtin types with the
#: generic protocol and only C descriptors, whose instance ``__dict__`` values, if any, are
#: returned as they are): compiled to the native access behind a type test
ATTRIBUTE_NATIVE_TYPES: ClassSet = NATIVE_TYPES | frozenset({
    _FunctionType, types.BuiltinFunctionType, types.CodeType, types.FrameType,
    types.TracebackType, types.CellType, types.GeneratorType, types.CoroutineType,
    types.AsyncGeneratorType, types.MethodDescriptorType, _WrapperDescriptorType,
    types.MethodWrapperType, property, staticmethod, classmethod,
}) | frozenset(kind for kind in vars(builtins).values()
               if isinstance(kind, type) and issubclass(kind, BaseException))

#: descriptor types whose ``__get__``/``__set__``/``__delete__`` run no Python code
_INERT_DESCRIPTORS: ClassSet = NATIVE_TYPES | frozenset({
    _FunctionType, staticmethod, _MemberDescriptorType, _GetSetDescriptorType,
    types.MethodDescriptorType, _WrapperDescriptorType, types.BuiltinFunctionType,
    types.ClassMethodDescriptorType,
})

OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
OBJECT_SETATTR = object.__dict__["__setattr__"]
OBJECT_DELATTR = object.__dict__["__delattr__"]
_TYPE_GETATTRIBUTE = type.__dict__["__getattribute__"]
_MODULE_GETATTRIBUTE = vars(_ModuleType)["__getattribute__"]

_PROPERTY_GET = property.__dict__["__get__"]
_PROPERTY_SET = property.__dict__["__set__"]
_PROPERTY_DELETE = property.__dict__["__delete__"]
_CLASSMETHOD_GET = classmethod.__dict__["__get__"]
_property_fget = property.__dict__["fget"].__get__
_property_fset = property.__dict__["fset"].__get__
_property_fdel = property.__dict__["fdel"].__get__
_classmethod_function = classmethod.__dict__["__func__"].__get__
_super_thisclass = super.__dict__["__thisclass__"].__get__
_super_self = super.__dict__["__self__"].__get__
_super_self_class = super.__dict__["__self_class__"].__get__
_method_function = _MethodType.__dict__["__func__"].__get__
_module_namespace = vars(_ModuleType)["__dict__"].__get__
_SUPER_GETATTRIBUTE = super.__dict__["__getattribute__"]
_error_name = AttributeError.__dict__["name"].__get__
_error_obj = AttributeError.__dict__["obj"].__get__

# how a ``__getattribute__``/``__setattr__``/``__delattr__`` found on a type behaves
_GENERIC, _TYPE, _MODULE, _SUPER, _METHOD = "generic", "type", "module", "super", "method"

#: builtin types whose ``tp_getattro`` is ``PyObject_GenericGetAttr`` (each has a slot
#: wrapper of its own, found before ``object``'s on the MRO of its subclasses)
_GENERIC_GETATTR_TYPES = (
    object, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset,
    BaseException, property, enumerate, filter, map, zip, reversed, memoryview, range, slice,
    types.SimpleNamespace, deque, defaultdict, partial,
)
_GETTERS: dict[Any, str] = {
    vars(kind)["__getattribute__"]: _GENERIC
    for kind in _GENERIC_GETATTR_TYPES if "__getattribute__" in vars(kind)}
_GETTERS.update({_TYPE_GETATTRIBUTE: _TYPE, _MODULE_GETATTRIBUTE: _MODULE,
                 _SUPER_GETATTRIBUTE: _SUPER,
                 _MethodType.__dict__["__getattribute__"]: _METHOD})
#: builtin types whose ``tp_setattro`` is ``PyObject_GenericSetAttr`` (from 3.13 only
#: ``object`` has slot wrappers of its own, the others inherit them: see
#: ``splice.compat``, "inherited slot wrappers")
_GENERIC_SETATTR_TYPES = (object, BaseException, types.SimpleNamespace, _ModuleType)
_SETTERS: dict[Any, str] = {vars(kind)[name]: _GENERIC
                            for kind in _GENERIC_SETATTR_TYPES
                            for name in ("__setattr__", "__delattr__") if name in vars(kind)}
_SETTERS.update({type.__dict__["__setattr__"]: _TYPE, type.__dict__["__delattr__"]: _TYPE})

#: a bound on each cache of lookups on immutable types (names can be computed)
_CACHE_LIMIT = 4096


def _beside(check: Callable[[Any, str], bool]) -> Callable[[Any, str], bool]:
    return check if BESIDE is None else BESIDE(check)


def _behaviour(table: dict[Any, str], found: Any) -> str | None:
    """How the slot wrapper ``found`` behaves (None: not one splice models)."""
    return table.get(found) if type(found) is _WrapperDescriptorType else None


def add_error_context(exc: AttributeError, name: str, obj: Any) -> None:
    """What ``PyObject_GetAttr`` adds to an ``AttributeError`` leaving a read that does not
    carry a name or object yet."""
    if _error_name(exc) is None and _error_obj(exc) is None:
        exc.name = name
        exc.obj = obj


#: a read that runs Python code: ``descr.__get__(obj, owner)`` with ``get`` found on the
#: descriptor's type (``obj`` None: the descriptor was found on the class read)
Step = tuple[Any, Any, Any, Any]


class Attributes(Dunders):
    """The attribute protocols of one context. Generated code asks ``readable``,
    ``writable`` or ``deletable`` first and makes the access natively when they say no
    Python code would run (so errors raised by C code are exactly the native ones, raised
    in the user's frame); else it calls ``get``, ``set`` or ``delete``."""

    get: Callable[[Any, str], Any]
    set: Callable[[Any, Any, str], None]
    delete: Callable[[Any, str], None]
    builtin_getattr: Callable[..., Any]
    builtin_hasattr: Callable[[Any, Any], bool]
    builtin_setattr: Callable[[Any, Any, Any], None]
    builtin_delattr: Callable[[Any, Any], None]
    object_getattribute: Callable[[Any, Any], Any]
    object_setattr: Callable[[Any, Any, Any], None]
    object_delattr: Callable[[Any, Any], None]

    #: the protocols written as generators (``splice.runtime.dunders.drive``): ``name`` is
    #: ``drive(self.<name>_steps)``, so no frame of splice's is between a Python accessor
    #: (``__getattr__``, a property's getter, ``__set__``) and the program's frame
    DRIVEN = ("get", "set", "delete", "builtin_getattr", "builtin_hasattr",
              "builtin_setattr", "builtin_delattr", "object_getattribute", "object_setattr",
              "object_delattr")

    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self._reads: dict[tuple[type, str], tuple[Any, Any, Any]] = {}
        self._slots: dict[type, tuple[Any, Any, Any]] = {}
        for name in self.DRIVEN:
            setattr(self, name, drive(getattr(self, f"{name}_steps")))
        # the checks generated code makes before an access, where natively only C code runs:
        # with recursion units of their own (``native.BESIDE``), so that their frames do not
        # bring the program's RecursionError earlier; they call none of the program's code
        self.read_check = _beside(self.readable)
        self.write_check = _beside(self.writable)
        self.delete_check = _beside(self.deletable)

    # -------------------------------------------------------------------------- reading

    def readable(self, obj: Any, name: str) -> bool:
        """Whether ``obj.name`` runs only C code."""
        kind = type(obj)
        if kind in ATTRIBUTE_NATIVE_TYPES:
            return True
        if kind is _ModuleType:
            return "__getattr__" not in _module_namespace(obj)
        if frozen_namespace(kind) is not None:
            getattribute, hook, descr = self._read_lookup(kind, name)
        else:
            getattribute, hook, descr = find3(kind, "__getattribute__", "__getattr__", name)
        if hook is not MISSING or type(getattribute) is _FunctionType:
            return False
        if getattribute is OBJECT_GETATTRIBUTE and (
                descr is MISSING or type(descr) in _INERT_DESCRIPTORS):
            return True  # the common case, without calls
        how = _behaviour(_GETTERS, getattribute)
        if how is _GENERIC:
            # the instance __dict__ is left to ``get``: it is read once, as natively (a key
            # whose __eq__ is Python code would see a second lookup)
            return self._generic_step(obj, name, kind, descr, read_instance=False) is None
        if how is _TYPE:
            return self._type_step(obj, name, kind, descr) is None
        if how is _SUPER:
            return self._super_step(obj, name) is None
        if how is _METHOD:
            return descr is not MISSING or self.readable(_method_function(obj), name)
        # a ModuleType subclass takes the slow path; a C __getattribute__ splice does not
        # model runs natively either way
        return how is not _MODULE

    def get_steps(self, obj: Any, name: str) -> Steps:
        """``obj.name``."""
        try:
            return (yield from self._get_steps(obj, name))
        except AttributeError as exc:
            add_error_context(exc, name, obj)
            raise

    def _get_steps(self, obj: Any, name: str) -> Steps:
        kind = type(obj)
        if kind in ATTRIBUTE_NATIVE_TYPES:
            return (yield (getattr, obj, name))
        if kind is _ModuleType:
            return (yield from self._module_get_steps(obj, name, kind, MISSING))
        getattribute, hook, descr = self._read_lookup(kind, name)
        if hook is MISSING:
            return (yield from self._get_by_steps(getattribute, obj, name, kind, descr))
        try:
            return (yield from self._get_by_steps(getattribute, obj, name, kind, descr))
        except AttributeError:
            pass
        # out of the handler: the AttributeError is not the context of what __getattr__ raises
        return (yield self._step(hook, obj, name))

    def _read_lookup(self, kind: type, name: str) -> tuple[Any, Any, Any]:
        """``kind``'s ``__getattribute__``, ``__getattr__`` and ``name``, in one walk of its
        MRO (cached for builtin types, which cannot change)."""
        if frozen_namespace(kind) is None:
            return find3(kind, "__getattribute__", "__getattr__", name)
        key = (kind, name)
        found = self._reads.get(key)
        if found is None:
            if len(self._reads) >= _CACHE_LIMIT:
                self._reads.clear()
            found = self._reads[key] = find3(kind, "__getattribute__", "__getattr__", name)
        return found

    def _get_by_steps(self, getattribute: Any, obj: Any, name: str, kind: type, descr: Any
                      ) -> Steps:
        """``obj.name`` by the ``__getattribute__`` found on ``kind``."""
        how = _behaviour(_GETTERS, getattribute)
        if how is _GENERIC:
            return (yield from self._generic_get_steps(obj, name, kind, descr, getattribute))
        if type(getattribute) is _FunctionType:
            return (yield (self.table[getattribute], obj, name))
        if how is _TYPE:
            step = self._type_step(obj, name, kind, descr)
            if step is None:
                return (yield (_TYPE_GETATTRIBUTE, obj, name))
            return (yield from self._routed_get_steps(*step))
        if how is _MODULE:
            return (yield from self._module_get_steps(obj, name, kind, descr))
        if how is _SUPER:
            step = self._super_step(obj, name)
            if step is None:
                return (yield (_SUPER_GETATTRIBUTE, obj, name))
            return (yield from self._routed_get_steps(*step))
        if how is _METHOD:
            if descr is not MISSING:
                return (yield (getattr, obj, name))  # C descriptors of the method type
            # the function's attribute
            return (yield from self.get_steps(_method_function(obj), name))
        return (yield self._step(getattribute, obj, name))

    def _generic_get_steps(self, obj: Any, name: str, kind: type, descr: Any,
                           native: Any = OBJECT_GETATTRIBUTE) -> Steps:
        """``PyObject_GenericGetAttr(obj, name)``, ``descr`` being ``name`` found on
        ``kind``; ``native`` the C function to leave the lookup to when no Python code is
        involved."""
        step = self._generic_step(obj, name, kind, descr)
        if step is None:
            return (yield (native, obj, name))
        return (yield from self._routed_get_steps(*step))

    def _generic_step(self, obj: Any, name: str, kind: type, descr: Any, *,
                      read_instance: bool = True) -> Step | None:
        """The Python step of ``PyObject_GenericGetAttr``: a data descriptor's ``__get__``
        (which wins over the instance ``__dict__``), else, unless the instance ``__dict__``
        has ``name`` (``read_instance`` False: not looked at), a non-data descriptor's."""
        if descr is MISSING or type(descr) in _INERT_DESCRIPTORS:
            return None
        get, setter, deleter = self._descriptor_slots(type(descr))
        if get is MISSING or not self._python_get(descr, get):
            return None
        if setter is MISSING and deleter is MISSING and read_instance:
            namespace = _instance_dict(obj, kind)
            if namespace is not None and (not isinstance(namespace, dict)
                                          or _dict_contains(namespace, name)):
                return None
        return descr, get, obj, kind

    def _type_step(self, cls: type, name: str, meta: type, meta_attribute: Any
                   ) -> Step | None:
        """The Python step of ``type.__getattribute__(cls, name)``: a data descriptor of the
        metaclass ``meta`` (``meta_attribute``, ``name`` found on it), else ``name`` found on
        ``cls``'s MRO, bound with ``__get__(None, cls)``, else the metaclass's descriptor."""
        meta_get = MISSING
        if meta_attribute is not MISSING:
            kind = type(meta_attribute)
            if kind is _GetSetDescriptorType or kind is _MemberDescriptorType:
                return None  # type's own data descriptors (__name__, __doc__, ...) win
            if kind not in _INERT_DESCRIPTORS:
                get, setter, deleter = self._descriptor_slots(kind)
                if get is not MISSING:
                    if setter is not MISSING or deleter is not MISSING:
                        if self._python_get(meta_attribute, get):
                            return meta_attribute, get, cls, meta
                        return None
                    meta_get = get
        attribute = find(cls, name)
        if attribute is not MISSING:
            if type(attribute) not in _INERT_DESCRIPTORS:
                get = self._descriptor_slots(type(attribute))[0]
                if get is not MISSING and self._python_get(attribute, get):
                    return attribute, get, None, cls
        elif meta_get is not MISSING and self._python_get(meta_attribute, meta_get):
            return meta_attribute, meta_get, cls, meta
        return None

    def _module_get_steps(self, module: Any, name: str, kind: type, descr: Any) -> Steps:
        """A module's attribute: the generic lookup, then the module's ``__getattr__``."""
        try:
            if kind is _ModuleType:
                # ModuleType's descriptors are C
                return (yield (OBJECT_GETATTRIBUTE, module, name))
            return (yield from self._generic_get_steps(module, name, kind, descr))
        except AttributeError:
            pass
        hook = _dict_get(_module_namespace(module), "__getattr__", MISSING)
        if hook is not MISSING:
            return (yield self._call_step(hook, name))
        # the native lookup again, for its message (only C code ran the first time, unless
        # a Python descriptor of a ModuleType subclass raised, which it would then raise again)
        return (yield (_MODULE_GETATTRIBUTE, module, name))

    def _super_step(self, proxy: Any, name: str) -> Step | None:
        """The Python step of ``super_getattro``: ``name`` on the MRO of the object's class
        after the class ``super`` was given, bound to the object."""
        start = _super_self_class(proxy)
        if start is None or name == "__class__":
            return None
        mro = mro_of(start)
        this = _super_thisclass(proxy)
        index = 0
        while index + 1 < len(mro) and mro[index] is not this:
            index += 1
        for klass in mro[index + 1:]:
            namespace = frozen_namespace(klass) or type_dict(klass)
            if name in namespace:
                found = namespace[name]
                if type(found) in _INERT_DESCRIPTORS:
                    return None
                get = self._descriptor_slots(type(found))[0]
                if get is MISSING or not self._python_get(found, get):
                    return None
                obj = _super_self(proxy)
                return found, get, None if obj is start else obj, start
        return None

    # ---------------------------------------------------------------------- descriptors

    def _descriptor_slots(self, kind: type) -> tuple[Any, Any, Any]:
        """``__get__``, ``__set__`` and ``__delete__`` found on a descriptor's type."""
        keyable = type(kind) is type or keyable_class(kind)
        found = self._slots.get(kind) if keyable else None
        if found is not None:
            return found
        found = find3(kind, "__get__", "__set__", "__delete__")
        if keyable and immutable(kind):
            if len(self._slots) >= _CACHE_LIMIT:
                self._slots.clear()
            self._slots[kind] = found
        return found

    def _python_get(self, descr: Any, get: Any) -> bool:
        """Whether ``descr.__get__`` (``get``, found on its type) runs Python code that the
        context can enter: a Python ``__get__``, a property's Python getter, a classmethod
        around such a descriptor."""
        if type(get) is _FunctionType:
            return True
        if get is _PROPERTY_GET:
            return type(_property_fget(descr)) is _FunctionType
        if get is _CLASSMETHOD_GET and CLASSMETHOD_WRAPS_DESCRIPTORS:
            inner = _classmethod_function(descr)
            if type(inner) in _INERT_DESCRIPTORS:
                return False
            inner_get = self._descriptor_slots(type(inner))[0]
            return inner_get is not MISSING and self._python_get(inner, inner_get)
        return False

    def _routed_get_steps(self, descr: Any, get: Any, obj: Any, owner: Any) -> Steps:
        """``descr.__get__(obj, owner)`` with its Python code entered (``obj`` None: looked up
        on the class itself). Only for what ``_python_get`` accepted."""
        if type(get) is _FunctionType:
            return (yield (self.table[get], descr, obj, owner))
        if get is _PROPERTY_GET:
            if obj is None:
                return descr
            return (yield (self.table[_property_fget(descr)], obj))
        # a classmethod chains to its function's __get__, with the class as the object
        # (before 3.13: splice.compat.CLASSMETHOD_WRAPS_DESCRIPTORS)
        inner = _classmethod_function(descr)
        if owner is None:
            owner = type(obj)
        return (yield from self._routed_get_steps(
            inner, self._descriptor_slots(type(inner))[0], owner, owner))

    # -------------------------------------------------------------------------- writing

    def writable(self, obj: Any, name: str) -> bool:
        """Whether ``obj.name = value`` runs only C code."""
        return self._write_step(obj, name, 1) is None

    def deletable(self, obj: Any, name: str) -> bool:
        """Whether ``del obj.name`` runs only C code."""
        return self._write_step(obj, name, 2) is None

    def set_steps(self, value: Any, obj: Any, name: str) -> Steps:
        """``obj.name = value`` (operands in the order they are evaluated)."""
        step = self._write_step(obj, name, 1)
        if step is None:
            yield (setattr, obj, name, value)
        elif type(step) is _FunctionType:
            yield (self.table[step], obj, name, value)  # a Python __setattr__
        else:
            yield self._routed_write(step, obj, value)

    def delete_steps(self, obj: Any, name: str) -> Steps:
        """``del obj.name``."""
        step = self._write_step(obj, name, 2)
        if step is None:
            yield (delattr, obj, name)
        elif type(step) is _FunctionType:
            yield (self.table[step], obj, name)  # a Python __delattr__
        else:
            yield self._routed_write(step, obj)

    def _write_step(self, obj: Any, name: str, which: int) -> Any:
        """What runs Python code when ``obj.name`` is set (``which`` 1) or deleted (2):
        None if nothing does, a Python ``__setattr__``/``__delattr__`` found on the type,
        or (descriptor, method) for a data descriptor's ``__set__``/``__delete__``."""
        kind = type(obj)
        if kind in ATTRIBUTE_NATIVE_TYPES or kind is _ModuleType:
            return None
        setter, descr, deleter = find3(kind, "__setattr__", name, "__delattr__")
        method = setter if which == 1 else deleter
        if type(method) is _FunctionType:
            return method
        if method is OBJECT_SETATTR or method is OBJECT_DELATTR:  # the common case
            return self._descriptor_write(descr, which)
        how = _behaviour(_SETTERS, method)
        if how is _GENERIC or (how is _TYPE and not immutable(obj)):
            # PyObject_GenericSetAttr, on the metaclass's descriptors for a class
            return self._descriptor_write(descr, which)
        return None  # a C __setattr__ splice does not model: as CPython calls it

    def _descriptor_write(self, descr: Any, which: int) -> tuple[Any, Any] | None:
        """``descr`` (found on the type) with its ``__set__`` (``which`` 1) or
        ``__delete__`` (2) when it is a data descriptor whose method runs Python code."""
        if descr is MISSING or type(descr) in _INERT_DESCRIPTORS:
            return None
        method = self._descriptor_slots(type(descr))[which]
        if type(method) is _FunctionType:
            return descr, method
        if method is _PROPERTY_SET or method is _PROPERTY_DELETE:
            accessor = _property_fset if which == 1 else _property_fdel
            if type(accessor(descr)) is _FunctionType:
                return descr, method
        return None

    def _routed_write(self, step: tuple[Any, Any], obj: Any, *value: Any) -> tuple[Any, ...]:
        """The protocol step of a data descriptor's ``__set__(obj, value)`` or
        ``__delete__(obj)`` (no ``value``), its Python code entered."""
        descr, method = step
        if type(method) is _FunctionType:
            return (self.table[method], descr, obj, *value)
        if value:
            return (self.table[_property_fset(descr)], obj, *value)
        return (self.table[_property_fdel(descr)], obj)

    # ------------------------------------------------------------- builtins and wrappers

    def builtin_getattr_steps(self, obj: Any, name: Any, *default: Any) -> Steps:
        """``getattr(obj, name[, default])``."""
        if type(name) is not str or len(default) > 1 or self.readable(obj, name):
            return (yield (getattr, obj, name, *default))
        if not default:
            return (yield from self.get_steps(obj, name))
        try:
            return (yield from self._get_steps(obj, name))
        except AttributeError:
            return default[0]

    def builtin_hasattr_steps(self, obj: Any, name: Any) -> Steps:
        """``hasattr(obj, name)``."""
        if type(name) is not str or self.readable(obj, name):
            return (yield (hasattr, obj, name))
        try:
            yield from self._get_steps(obj, name)
        except AttributeError:
            return False
        return True

    def builtin_setattr_steps(self, obj: Any, name: Any, value: Any) -> Steps:
        """``setattr(obj, name, value)``."""
        if type(name) is not str:
            yield (setattr, obj, name, value)
        else:
            yield from self.set_steps(value, obj, name)

    def builtin_delattr_steps(self, obj: Any, name: Any) -> Steps:
        """``delattr(obj, name)``."""
        if type(name) is not str:
            yield (delattr, obj, name)
        else:
            yield from self.delete_steps(obj, name)

    def object_getattribute_steps(self, obj: Any, name: Any) -> Steps:
        """``object.__getattribute__(obj, name)`` (no context added to its errors)."""
        if type(name) is not str:
            return (yield (OBJECT_GETATTRIBUTE, obj, name))
        kind = type(obj)
        return (yield from self._generic_get_steps(obj, name, kind, find(kind, name)))

    def object_setattr_steps(self, obj: Any, name: Any, value: Any) -> Steps:
        """``object.__setattr__(obj, name, value)``: ``PyObject_GenericSetAttr``."""
        step = None
        if type(name) is str and _generic_setattr_applies(type(obj)):
            step = self._descriptor_write(find(type(obj), name), 1)
        # else: its own checks and errors
        yield (OBJECT_SETATTR, obj, name, value) if step is None else \
            self._routed_write(step, obj, value)

    def object_delattr_steps(self, obj: Any, name: Any) -> Steps:
        """``object.__delattr__(obj, name)``: ``PyObject_GenericSetAttr(obj, name, NULL)``."""
        step = None
        if type(name) is str and _generic_setattr_applies(type(obj)):
            step = self._descriptor_write(find(type(obj), name), 2)
        yield (OBJECT_DELATTR, obj, name) if step is None else self._routed_write(step, obj)


def _generic_setattr_applies(kind: type) -> bool:
    """Whether ``object.__setattr__`` may be applied to instances of ``kind``: no builtin or
    C class on its MRO sets attributes its own way (CPython's ``hackcheck`` refuses it then)."""
    for klass in mro_of(kind):
        if immutable(klass):
            setter = type_dict(klass).get("__setattr__", MISSING)
            if setter is not MISSING and _behaviour(_SETTERS, setter) is not _GENERIC:
                return False
    return True


def _instance_dict(obj: Any, kind: type) -> Any:
    """``obj``'s own ``__dict__`` (None if it has none), by the C descriptor that gives it,
    past any class attribute named ``__dict__``."""
    for klass in mro_of(kind):
        found = type_dict(klass).get("__dict__", MISSING)
        if type(found) is _GetSetDescriptorType or type(found) is _MemberDescriptorType:
            return found.__get__(obj, kind)
    return None
