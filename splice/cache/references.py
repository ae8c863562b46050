"""Objects written to the code cache as data, never as pickles.

Code that splice stores refers to objects: the program's functions and classes, builtins,
splice's helpers, constants a plugin inserted. ``encode`` writes each as JSON-able data:

* a plain value (None, bool, int, float, str, bytes, tuples and frozensets of them) as it
  is: ``["const", ...]``;
* an object that a module holds under its qualified name (``json.dumps``,
  ``builtins.len``, ``time.perf_counter_ns``, a class) as that reference:
  ``["ref", module, qualname]``; the object found there must be the object itself (the
  interpreter's classes that only ``types`` names, such as ``builtin_function_or_method``,
  as ``["ref", "types", name]``); an object a module holds under another name, or only in
  a closure cell of a function it holds (the function a decorator without
  ``functools.wraps`` wrapped: ``fib = memoize(fib)``), as the path there
  (``"fib.<cell:fn>"``: the cell ``fn`` of the function ``fib``);
* an object whose class opts in with ``__splice_persist__`` (returning the arguments to
  make it again, themselves encodable), as the class's reference and the arguments; it is
  made again by the class's ``__splice_make__`` if it has one (to share an existing
  object), else by calling the class;
* the code object of the function being compiled as ``["own code"]``.

Anything else cannot be written, and the entry holding it is not stored. ``decode`` reverses
it: references are looked up in ``sys.modules`` only (loading never imports a module of the
program's, so it never runs the program's code; a module of splice's own that this process
has not needed yet is imported) and must resolve; a class is called with the arguments only if it
defines ``__splice_persist__``. Code objects are written with ``marshal`` after their
constants that ``marshal`` cannot write are replaced by placeholder strings
(``split_constants``; ``join_constants`` puts the decoded objects back).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from splice.keys import ClassSet
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["NotStorable", "decode", "encode", "join_constants", "lookup", "reference_of",
           "split_constants"]

_PLACEHOLDER = "\x00splice-stored-"
_PLAIN = ClassSet((type(None), bool, int, float, complex, str, bytes))


class NotStorable(Exception):
    """A value that cannot be written to (or read back from) the code cache."""


def encode(value: Any, own_code: types.CodeType | None = None) -> Any:
    """``value`` as JSON-able data (``NotStorable`` if it cannot be)."""
    if own_code is not None and _same_code(value, own_code):
        return ["own code"]
    kind = type(value)
    if kind in _PLAIN:
        if kind is bytes:
            return ["bytes", value.hex()]
        if kind is complex:
            return ["complex", value.real, value.imag]
        if kind is float and value != value:  # NaN: JSON has none
            return ["nan"]
        return ["const", value]
    if kind is tuple or kind is frozenset:
        items = [encode(v, own_code) for v in value]
        if kind is frozenset:
            items.sort(key=repr)
        return ["tuple" if kind is tuple else "frozenset", items]
    if value is Ellipsis:
        return ["ellipsis"]
    persist = getattr(kind, "__splice_persist__", None)
    if persist is not None and not isinstance(value, type):
        args = persist(value)
        return ["made", _reference(kind), [encode(a, own_code) for a in args]]
    return ["ref", *_reference(value)]


def _same_code(value: Any, own: types.CodeType) -> bool:
    """``value`` is the compiled function's code, or a copy of it (a constructor's builder
    runs a copy with other defaults)."""
    return value is own or (type(value) is types.CodeType and value == own
                            and value.co_filename == own.co_filename
                            and value.co_qualname == own.co_qualname
                            and value.co_firstlineno == own.co_firstlineno)


#: id -> name in ``types`` of the interpreter's own classes that no module holds under
#: their qualified name (``builtins.builtin_function_or_method`` does not exist)
_TYPES_NAMES: dict[int, str] = {}
for _name, _value in sorted(vars(types).items()):  # the first name of two: FunctionType
    if isinstance(_value, type) and _name[:1].isupper() and _value.__module__ == "builtins":
        _TYPES_NAMES.setdefault(id(_value), _name)


def _reference(value: Any) -> list[str]:
    alias = _TYPES_NAMES.get(id(value)) if isinstance(value, type) else None
    if alias is not None and getattr(types, alias) is value:
        return ["types", alias]
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(value, types.BuiltinFunctionType) and module is None:
        owner = getattr(value, "__self__", None)
        if isinstance(owner, types.ModuleType):
            module = owner.__name__
        elif isinstance(owner, type):  # ``object.__new__``
            module = owner.__module__
            qualname = f"{owner.__qualname__}.{value.__name__}"
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise NotStorable(f"{value!r} is not reachable by a module and a qualified name")
    try:
        found = None if "<" in qualname else _lookup(module, qualname)
    except NotStorable:
        found = None
    if found is not value:
        # bound in its module under another name: a decorator's wrapper without
        # functools.wraps (``fib = memoize(fib)``), a C class exported under an alias
        # (``_json.make_encoder`` is the class ``_json.Encoder``)
        alias = _path_to(module, value)
        if alias is None:
            raise NotStorable(f"{value!r} is not reachable by a module and a qualified name")
        return [module, alias]
    return [module, qualname]


#: how deep a reference looks into closure cells (a decorator of a decorated function)
_CELL_DEPTH = 3


def _path_to(module: str, value: Any) -> str | None:
    """The shortest path from a global of the imported module ``module`` to ``value``: a
    global name bound to it, else that name followed by closure cells of functions
    (``"fib.<cell:fn>"``); None if there is none."""
    namespace = getattr(sys.modules.get(module), "__dict__", None)
    if not isinstance(namespace, dict):
        return None
    level = [(name, bound) for name, bound in list(namespace.items())
             if type(name) is str and name.isidentifier()]
    for path, bound in level:
        if bound is value:
            return path
    for _ in range(_CELL_DEPTH):
        deeper = []
        for path, holder in level:
            if type(holder) is not types.FunctionType or not holder.__closure__:
                continue
            for name, cell in zip(holder.__code__.co_freevars, holder.__closure__,
                                  strict=True):
                try:
                    held = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if held is value:
                    return f"{path}.<cell:{name}>"
                deeper.append((f"{path}.<cell:{name}>", held))
        level = deeper
    return None


def _held_in_cell(function: Any, name: str) -> Any:
    """What the closure cell ``name`` of ``function`` holds (``NotStorable`` if it has no
    such cell, or it is empty)."""
    if type(function) is not types.FunctionType:
        raise NotStorable(f"{function!r} is not a function with cells")
    try:
        cells = function.__closure__ or ()
        return cells[function.__code__.co_freevars.index(name)].cell_contents
    except (ValueError, IndexError):
        raise NotStorable(f"{function.__qualname__} has no cell {name} that holds "
                          f"an object") from None


def reference_of(value: Any) -> list[str]:
    """``[module, qualified name]`` under which a module holds ``value`` itself
    (``NotStorable`` if none does)."""
    return _reference(value)


def lookup(module: str, qualname: str) -> Any:
    """The object ``["ref", module, qualname]`` names (``NotStorable`` if there is none):
    looked up in the imported modules only."""
    return _lookup(str(module), str(qualname))


def _lookup(module: str, qualname: str) -> Any:
    found: Any = sys.modules.get(module)
    if found is None and (module == "splice" or module.startswith("splice.")):
        # splice's own (a helper a process loads lazily): importing it runs no program code
        found = _import_own(module)
    if found is None:
        raise NotStorable(f"module {module} is not imported")
    if "." not in qualname and "<" not in qualname:
        # (the common case, a module's own name: no class to bind a class method to)
        try:
            return getattr(found, qualname)
        except AttributeError:
            raise NotStorable(f"{module}.{qualname} does not exist") from None
    parent = None
    for part in qualname.split("."):
        parent = found
        if part.startswith("<cell:") and part.endswith(">"):
            found = _held_in_cell(found, part[6:-1])
            continue
        try:
            found = getattr(found, part)
        except AttributeError:
            raise NotStorable(f"{module}.{qualname} does not exist") from None
    if isinstance(parent, type) and type(found) is types.MethodType and \
            found.__self__ is parent:
        # a class method's qualified name names its function (getattr binds it anew)
        for klass in parent.__mro__:
            raw = klass.__dict__.get(part)
            if raw is not None:
                if type(raw) is classmethod:
                    found = raw.__func__
                break
    return found


def _import_own(module: str) -> Any:
    import importlib.util

    try:
        if importlib.util.find_spec(module) is None:
            return None
        return importlib.import_module(module)
    except (ImportError, ValueError):
        return None


def decode(data: Any, own_code: types.CodeType | None = None) -> Any:
    """The object ``encode`` wrote as ``data`` (``NotStorable`` if it cannot be made)."""
    if type(data) is not list or not data or type(data[0]) is not str:
        raise NotStorable(f"malformed value {data!r}")
    kind = data[0]
    # (the kinds most data holds first: references, then constants)
    if kind == "ref" and len(data) == 3:
        return _lookup(str(data[1]), str(data[2]))
    if kind == "const" and len(data) == 2 and type(data[1]) in _PLAIN:
        return data[1]
    if kind == "own code" and own_code is not None:
        return own_code
    if kind == "bytes":
        return bytes.fromhex(data[1])
    if kind == "complex":
        return complex(data[1], data[2])
    if kind == "nan":
        return float("nan")
    if kind == "ellipsis":
        return Ellipsis
    if kind in ("tuple", "frozenset") and isinstance(data[1], list):
        items = [decode(item, own_code) for item in data[1]]
        return tuple(items) if kind == "tuple" else frozenset(items)
    if kind == "made" and len(data) == 3:
        cls = _lookup(*map(str, data[1]))
        if not isinstance(cls, type) or not hasattr(cls, "__splice_persist__"):
            raise NotStorable(f"{data[1]} does not opt in to being made from the cache")
        make = getattr(cls, "__splice_make__", cls)  # (a class may share its objects)
        return make(*(decode(a, own_code) for a in data[2]))
    raise NotStorable(f"malformed value {data!r}")


def _marshalable(value: Any) -> bool:
    kind = type(value)
    if kind in _PLAIN or value is Ellipsis or kind is types.CodeType:
        return True
    if kind is tuple or kind is frozenset:
        return all(_marshalable(v) for v in value)
    return False


def split_constants(code: types.CodeType, own_code: types.CodeType | None = None
                    ) -> tuple[types.CodeType, dict[str, Any]]:
    """``code`` with each constant ``marshal`` cannot write (in nested code too) replaced by
    a placeholder string, and the placeholders' encoded objects."""
    stored: dict[str, Any] = {}

    def split(code: types.CodeType) -> types.CodeType:
        consts = []
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                const = split(const)
            elif not _marshalable(const):
                placeholder = f"{_PLACEHOLDER}{len(stored)}"
                stored[placeholder] = encode(const, own_code)
                const = placeholder
            consts.append(const)
        return code.replace(co_consts=tuple(consts))
    return split(code), stored


def join_constants(code: types.CodeType, stored: dict[str, Any],
                   own_code: types.CodeType | None = None) -> types.CodeType:
    """``split_constants`` undone: the placeholders of ``code`` replaced by their objects."""
    objects = {name: decode(data, own_code) for name, data in stored.items()}

    def join(code: types.CodeType) -> types.CodeType:
        consts = tuple(join(c) if isinstance(c, types.CodeType)
                       else objects[c] if type(c) is str and c in objects else c
                       for c in code.co_consts)
        return code.replace(co_consts=consts)
    return join(code) if objects else code
