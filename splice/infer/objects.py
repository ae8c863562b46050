"""Python objects as inference sees them: the abstract value of a known object, class
lookups that run no code, binding abstract arguments to parameters, and which methods of
a class store which attributes.

What is found about a class (which of its methods store and read which attribute names,
what code outside them may store and read) is cached per class, and per module for the
attribute names its code uses. The caches hold their classes and modules weakly: an entry
is keyed by the object's identity with a weak reference alongside, so a class the program
dropped is freed (its entry goes with it, and is never found for another object that
reuses its id), and nothing an entry holds leads back to its class (its methods are held
by weak reference: a method's ``__class__`` cell holds the class). An entry of a class is
found again when the functions along its MRO are no longer those it was found from (a
method added, replaced or deleted, a changed ``__code__``, new bases), and every entry is
dropped when the world moves (``splice.world_age``), as when a function's code changes.
"""

from __future__ import annotations

import dis
import functools
import inspect
import sys
import types
import weakref
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import splice.ir as splice_ir
from splice.infer.lattice import (
    ANY,
    NEVER,
    Abstract,
    Const,
    Exact,
    PartialTuple,
    Sub,
    is_definition,
    is_value_constant,
    join,
    object_abstract,
)
from splice.ir import nodes as N
from splice.ir.tools import scopes
from splice.pristine import BUILTINS
from splice.world_age import world

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


def join_all_(values: Sequence[Abstract]) -> Abstract:
    result = NEVER
    for value in values:
        result = join(result, value)
    return result


def _drop_consts(a: Abstract) -> Abstract:
    """Constants of plain values become their class (callables stay constants)."""
    if isinstance(a, Const):
        return a.widen() if is_value_constant(a.value) else a
    if isinstance(a, PartialTuple):
        return PartialTuple(_drop_consts(x) for x in a.items)
    if len(a.members()) > 1:
        result = NEVER
        for m in a.members():
            result = join(result, _drop_consts(m))
        return result
    return a


def _class_of_object(value: object) -> Abstract:
    """What a binding that may be rebound to a value of the same class holds: the class
    (tuples item by item when short)."""
    if type(value) is tuple:
        items: tuple[object, ...] = value  # type: ignore[assignment,unused-ignore]
        if len(items) <= 16:
            return PartialTuple(_class_of_object(v) for v in items)
    if _is_definition(value):
        return Exact(type(value))
    return Exact(type(value))


_is_definition = is_definition
_object_abstract = object_abstract


def _is_python_class(cls: type) -> bool:
    """A class created by a class statement (a heap type), not a builtin."""
    return bool(cls.__flags__ & (1 << 9)) and cls.__module__ != "builtins"


def _lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


T = TypeVar("T")


class _ByIdentity(Generic[T]):
    """A cache keyed by objects' identities that holds them weakly: an entry goes when its
    object dies and is never found for another object given the same id; every entry goes
    when the world moves. (No user code runs: a metaclass's ``__eq__`` or ``__hash__`` is
    never called.) An object that cannot be weakly referenced is not cached."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], T]] = {}
        self._world = world()

    def get(self, obj: object) -> T | None:
        if self._world != world():
            # a new dict, not ``clear``: the references dropped with it run no callback
            self._entries = {}
            self._world = world()
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def put(self, obj: object, value: T) -> None:
        key = id(obj)
        try:
            ref = weakref.ref(obj, functools.partial(self._dead, key))
        except TypeError:
            return
        self._entries[key] = (ref, value)

    def _dead(self, key: int, ref: weakref.ref[Any]) -> None:
        """A weak reference's callback: drop the entry of ``key`` if it is still ``ref``'s
        (a lost race with a new entry for the same id only loses that entry)."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] is ref:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


_HEAPTYPE = 1 << 9


def _methods_of(cls: type) -> tuple[tuple[types.FunctionType, ...], tuple[object, ...]]:
    """The functions along ``cls``'s MRO that inference infers as its methods (functions,
    static and class methods, property setters, in MRO and definition order), and the
    ``__module__`` of each class with a ``__dict__`` of its own (heap types: the dict of a
    static type cannot change and holds no Python function)."""
    fns: list[types.FunctionType] = []
    modules: list[object] = []
    for klass in cls.__mro__:
        if not klass.__flags__ & _HEAPTYPE:
            continue
        modules.append(vars(klass).get("__module__"))
        for attr in vars(klass).values():
            fn = _method_function(attr)
            if isinstance(fn, types.FunctionType):
                fns.append(fn)
    return tuple(fns), tuple(modules)


def _method_function(attr: object) -> object:
    """The function a class attribute runs as a method: a property's setter, a static or
    class method's function, a bound method's function, else the attribute (reading no
    attribute that could run code)."""
    if isinstance(attr, property):
        return attr.fset
    if isinstance(attr, (staticmethod, classmethod, types.MethodType)):
        return attr.__func__
    return attr


class _ClassFacts:
    """What inference found about one class, from the methods ``_methods_of`` gave. It
    holds nothing that leads back to the class (a method's closure may hold it: methods are
    held by weak reference), so the class can be freed."""

    __slots__ = ("methods", "modules", "outside", "users")

    def __init__(self, fns: tuple[types.FunctionType, ...], modules: tuple[object, ...]
                 ) -> None:
        self.methods = tuple((weakref.ref(fn), fn.__code__) for fn in fns)
        self.modules = modules
        #: (writers, readers): attribute name -> indices into ``methods``
        self.users: tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]] | None = \
            None
        #: (outside stores, outside loads)
        self.outside: tuple[frozenset[str], frozenset[str]] | None = None

    def holds(self, fns: tuple[types.FunctionType, ...], modules: tuple[object, ...]
              ) -> bool:
        """Whether the class's MRO still has exactly the functions (and code) it had."""
        if modules != self.modules or len(fns) != len(self.methods):
            return False
        for fn, (ref, code) in zip(fns, self.methods, strict=True):
            if ref() is not fn or fn.__code__ is not code:
                return False
        return True


_CLASSES: _ByIdentity[_ClassFacts] = _ByIdentity()


def _facts(cls: type) -> tuple[_ClassFacts, tuple[types.FunctionType, ...]]:
    """The cached facts of ``cls`` (found again if its methods changed) and its methods."""
    fns, modules = _methods_of(cls)
    facts = _CLASSES.get(cls)
    if facts is None or not facts.holds(fns, modules):
        facts = _ClassFacts(fns, modules)
        _CLASSES.put(cls, facts)
    return facts, fns


#: what :func:`outside_stores` gives when any attribute name may be stored
ALL_NAMES: frozenset[str] = frozenset({"*"})
_MODULE_ATTRIBUTES: _ByIdentity[tuple[tuple[str, frozenset[str], frozenset[str]], ...]] = \
    _ByIdentity()
_DYNAMIC_STORES = frozenset({"setattr", "delattr", "__setattr__", "__delattr__", "__dict__",
                             "vars"})


def outside_stores(cls: type) -> frozenset[str]:
    """Attribute names that code other than the methods of ``cls``'s MRO (which inference
    infers as writers) may store on an instance of ``cls`` (``ALL_NAMES``: any): the
    stores of the code of the modules defining those classes (other functions, other
    classes' methods storing on something else than their own ``self``, nested functions,
    module-level code), names such code may store dynamically (``setattr``, ``__dict__``:
    any), and the stores of methods of the MRO without source (those made by ``exec``, such
    as a dataclass's ``__init__``). Stores made by other modules are not seen (a known
    limit)."""
    return _outside(cls)[0]


def outside_loads(cls: type) -> frozenset[str]:
    """Attribute names that code other than the methods of ``cls``'s MRO may read from an
    instance of ``cls`` (as :func:`outside_stores`; dynamic reads, ``getattr``: any): a
    container held in such an attribute may be changed by code inference does not see."""
    return _outside(cls)[1]


def _outside(cls: type) -> tuple[frozenset[str], frozenset[str]]:
    facts, _ = _facts(cls)
    if facts.outside is not None:
        return facts.outside
    stores: set[str] = set()
    loads: set[str] = set()
    methods: set[str] = set()
    for klass in cls.__mro__:
        if not _is_python_class(klass):
            continue
        for attr in vars(klass).values():
            fn = _method_function(attr)
            if isinstance(fn, types.FunctionType):
                methods.add(fn.__code__.co_qualname)
                if _unlowerable(fn):
                    own_stores, own_loads = _code_attributes(fn.__code__,
                                                             constants_only=True)
                    stores.update(own_stores)
                    loads.update(own_loads)
    for klass in cls.__mro__:
        if not _is_python_class(klass):
            continue
        for qualname, stored, loaded in _attributes_of_module(klass.__module__):
            if qualname not in methods:
                stores.update(stored)
                loads.update(loaded)
    result = (ALL_NAMES if "*" in stores else frozenset(stores),
              ALL_NAMES if "*" in loads else frozenset(loads))
    facts.outside = result
    return result


def _unlowerable(fn: types.FunctionType) -> bool:
    try:
        splice_ir.lower(fn)
    except Exception:
        return True
    return False


def _attributes_of_module(name: str
                          ) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """(code qualname, attribute names it may store, names it may read) for every code
    object of the module's source (``*``: any name)."""
    module = sys.modules.get(name)
    if module is None:
        return ()
    found = _MODULE_ATTRIBUTES.get(module)
    if found is not None:
        return found
    result: list[tuple[str, frozenset[str], frozenset[str]]] = []
    try:
        source = inspect.getsource(module)
        code = compile(source, getattr(module, "__file__", name), "exec") if source else None
    except Exception:  # no source: nothing known about what it does
        code = None
        if getattr(module, "__file__", None):
            result.append(("<module>", ALL_NAMES, ALL_NAMES))
    todo = [code] if code is not None else []
    while todo:
        current = todo.pop()
        stored, loaded = _code_attributes(current)
        result.append((current.co_qualname, frozenset(stored), frozenset(loaded)))
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    found = tuple(result)
    _MODULE_ATTRIBUTES.put(module, found)
    return found


def _code_attributes(code: types.CodeType, *, constants_only: bool = False
                     ) -> tuple[set[str], set[str]]:
    """Attribute names one code object (not its nested ones) may store (``STORE_ATTR``,
    ``DELETE_ATTR``) and read (``LOAD_ATTR``, ``LOAD_METHOD``), except on its own first
    argument in a method (an instance of its own class); with a dynamic store (``setattr``,
    ``__dict__``...) or read (``getattr``...), any name (``*``), or its string constants if
    ``constants_only``."""
    stores: set[str] = set()
    loads: set[str] = set()
    parts = code.co_qualname.split(".")
    # a method's ``self`` (by name: a static method's first argument is anything)
    method = len(parts) >= 2 and parts[-2] != "<locals>" and code.co_argcount > 0 \
        and code.co_varnames[0] == "self"
    instructions = [i for i in dis.get_instructions(code) if i.opname not in _NOISE]
    for index, instruction in enumerate(instructions):
        name = instruction.opname
        if name in _STORE_OPS or name in _LOAD_OPS:
            previous = instructions[index - 1] if index else None
            own = (method and previous is not None and previous.opname == "LOAD_FAST"
                   and previous.argval == "self")
            if own:
                continue
            if name in _STORE_OPS:
                stores.add(instruction.argval)
            elif not _only_read(instructions, index):
                loads.add(instruction.argval)
    names = set(code.co_names)
    constants = {c for c in code.co_consts if isinstance(c, str) and c.isidentifier()}
    for dynamic, found in ((_DYNAMIC_STORES, stores), (_DYNAMIC_LOADS, loads)):
        if dynamic & names:
            if constants_only:
                found.update(constants)
            else:
                found.add("*")
    return stores, loads


def _only_read(instructions: list[dis.Instruction], index: int) -> bool:
    """Whether the value the attribute read at ``index`` gives is only looked at right
    away (subscripted, iterated, compared, tested: ``obj.items[-1]``, ``x in obj.items``),
    not kept, passed on or called a method of (which could change it)."""
    following = [i.opname for i in instructions[index + 1:index + 3]]
    if following and following[0] in _READ_ONLY_USES:
        return True
    return len(following) == 2 and following[0] in _SIMPLE_LOADS and \
        following[1] in _READ_ONLY_BINARY


_READ_ONLY_USES = frozenset({"BINARY_SUBSCR", "GET_ITER", "COMPARE_OP", "CONTAINS_OP",
                             "IS_OP", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE",
                             "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
                             "UNARY_NOT", "POP_TOP", "FORMAT_VALUE"})
_SIMPLE_LOADS = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL",
                           "LOAD_NAME"})
_READ_ONLY_BINARY = frozenset({"BINARY_SUBSCR", "COMPARE_OP", "CONTAINS_OP", "IS_OP"})
#: instructions that do nothing to the values on the stack
_NOISE = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "RESUME"})
_STORE_OPS = frozenset({"STORE_ATTR", "DELETE_ATTR"})
_LOAD_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_DYNAMIC_LOADS = frozenset({"getattr", "__getattribute__", "__dict__", "vars"})


def _attribute_writers(cls: type, name: str) -> tuple[types.FunctionType, ...]:
    """The functions along ``cls``'s MRO that store an attribute named ``name`` (``x.name =
    ...`` on any object: a conservative superset of the self stores); empty if none."""
    facts, fns = _attribute_users(cls)
    assert facts.users is not None
    return tuple(fns[i] for i in facts.users[0].get(name, ()))


def _attribute_readers(cls: type, name: str) -> tuple[types.FunctionType, ...]:
    """The functions along ``cls``'s MRO that read an attribute named ``name`` (they may
    change a container it holds: ``self.items.append(x)``)."""
    facts, fns = _attribute_users(cls)
    assert facts.users is not None
    return tuple(fns[i] for i in facts.users[1].get(name, ()))


def _attribute_users(cls: type) -> tuple[_ClassFacts, tuple[types.FunctionType, ...]]:
    facts, fns = _facts(cls)
    if facts.users is not None:
        return facts, fns
    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    seen: set[int] = set()
    for index, fn in enumerate(fns):
        if id(fn) in seen:
            continue  # the same function again (an alias, or in two classes)
        seen.add(id(fn))
        try:
            ir = splice_ir.lower(fn)
        except Exception:
            continue
        for scope in scopes(ir):  # comprehensions run with the method
            for stmt in scope.walk():
                if isinstance(stmt, N.Assign) and isinstance(stmt.op, (N.SetAttr, N.GetAttr)):
                    table = writers if isinstance(stmt.op, N.SetAttr) else readers
                    users = table.setdefault(stmt.op.name, [])
                    if index not in users:
                        users.append(index)
    facts.users = ({k: tuple(v) for k, v in writers.items()},
                   {k: tuple(v) for k, v in readers.items()})
    return facts, fns


def _exception_of(exc: Abstract) -> Abstract:
    if isinstance(exc, Const) and isinstance(exc.value, type) and issubclass(
            exc.value, BaseException):
        return Sub(exc.value)
    return ANY


def _bind(fn: types.FunctionType, args: list[Abstract], kwargs: dict[str, Abstract], *,
          defaults: Sequence[Abstract] | None = None,
          kwdefaults: dict[str, Abstract] | None = None) -> tuple[Abstract, ...] | None:
    """Bind abstract arguments to ``fn``'s parameters (in ``ir.args.names()`` order);
    ``None`` when the binding is not simple (the call then gets ``ANY``). ``defaults`` and
    ``kwdefaults``: the abstract values of the defaults (default: ``fn``'s own)."""
    code = fn.__code__
    nargs = code.co_argcount
    nkw = code.co_kwonlyargcount
    names = code.co_varnames[:nargs + nkw]
    has_var = bool(code.co_flags & inspect.CO_VARARGS)
    has_kw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if has_kw and kwargs:
        return None
    bound: list[Abstract | None] = [None] * (nargs + nkw)
    for i, a in enumerate(args[:nargs]):
        bound[i] = a
    extra = args[nargs:]
    if extra and not has_var:
        return None
    posonly = code.co_posonlyargcount
    for name, value in kwargs.items():
        if name not in names or names.index(name) < posonly:
            return None
        index = names.index(name)
        if bound[index] is not None:
            return None
        bound[index] = value
    if defaults is None:
        defaults = [_object_abstract(d) for d in fn.__defaults__ or ()]
    for i in range(nargs):
        if bound[i] is None:
            j = i - (nargs - len(defaults))
            if j < 0:
                return None
            bound[i] = defaults[j]
    if kwdefaults is None:
        kwdefaults = {k: _object_abstract(v) for k, v in (fn.__kwdefaults__ or {}).items()}
    for i in range(nargs, nargs + nkw):
        if bound[i] is None:
            if names[i] not in kwdefaults:
                return None
            bound[i] = kwdefaults[names[i]]
    out: list[Abstract] = [b for b in bound if b is not None]
    if has_var:
        out.insert(nargs, PartialTuple(extra))
    if has_kw:
        out.append(Exact(dict))
    return tuple(out)
