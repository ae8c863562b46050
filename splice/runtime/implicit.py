"""Implicit calls: operators, subscripts and formatting, routed under a context.

CPython reaches a Python-level dunder (``Vector.__add__``) through a C slot, outside any call
site splice rewrites. Where some plugin needs to see every call (per-call hooks), each such
operation is compiled as ``native op if both operand types are builtin, else
implicit.<op>(operands)``; the functions here then apply CPython's protocol (``NotImplemented``,
reflected operands, subclass priority, in-place fallbacks, default ``==``) and call
Python-level dunders through the context's dispatch table. C-level dunders are called as
they are, so the result, the error and its message are the native ones.

``str()``, ``repr()``, ``format()``, ``iter()`` and ``bool()`` called explicitly go through
the same protocols, and so do truth tests (``if``, ``while``, ``not``, conditional
expressions). ``for`` loops, comprehensions and unpacking iterate ``loop(x)``, ``async for``
iterates ``aloop(x)``, and ``with`` enters ``managed(x)``: C-level stand-ins whose steps call
the Python dunders through the table, so no splice frame appears between the user's frames.
Attribute access is in ``splice.runtime.attributes``, class statements (``__set_name__``) in
``splice.runtime.classes``.

Out of reach (they run natively): truth tests of ``and``/``or`` operands and ``assert``,
``yield from``, the sequence protocol and builtins consuming iterables (``list(x)``,
``sum(x)``), and dunders that C code calls on its own (``__hash__``/``__eq__`` in dict
lookups, ``__eq__`` in ``list.index`` and ``in`` over builtin containers, ``__ne__``'s
default call of ``__eq__``, ``__init_subclass__``).
"""

from __future__ import annotations

import array
import builtins
import collections
import functools
import itertools
import operator
import types
from collections.abc import Callable
from typing import Any

from splice.pristine import BUILTINS
from splice.runtime.attributes import Attributes
from splice.runtime.classes import ClassCreation
from splice.runtime.dunders import NATIVE_TYPES, Dunders, Steps, drive, special, type_name

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["NATIVE_TYPES", "Implicit", "special"]

_FunctionType = types.FunctionType
_partial = functools.partial
#: what no dunder returns: the sentinel of the call iterators ``loop`` makes
_END = object()
_OBJECT_STR = object.__dict__["__str__"]
_OBJECT_FORMAT = object.__dict__["__format__"]


class _Managed:
    """A context manager whose ``__enter__``/``__exit__`` (and async pair) are C code: the
    ``with`` statement looks each up on the type, the property gives the partial stored on
    the instance, and the partial calls the manager's own method under the context, with no
    Python frame in between."""

    __slots__ = ("enter", "exit")
    enter: Any
    exit: Any
    __enter__ = __aenter__ = property(operator.attrgetter("enter"))
    __exit__ = __aexit__ = property(operator.attrgetter("exit"))


class _AsyncLoop:
    """What ``async for`` iterates instead of an object with a Python ``__aiter__`` or
    ``__anext__``: its ``__aiter__`` (C code, as ``_Managed``'s methods) gives the steps."""

    __slots__ = ("aiter",)
    aiter: Any
    __aiter__ = property(operator.attrgetter("aiter"))


class _AsyncSteps:
    """The iterator ``_AsyncLoop`` gives: its ``__anext__`` calls the iterator's own
    ``__anext__`` (a Python one entered under the context) with no Python frame in between."""

    __slots__ = ("anext",)
    anext: Any
    __anext__ = property(operator.attrgetter("anext"))

BINARY_SYMBOLS = {
    "add": "+", "sub": "-", "mul": "*", "matmul": "@", "truediv": "/", "floordiv": "//",
    "mod": "%", "pow": "** or pow()", "lshift": "<<", "rshift": ">>", "or_": "|", "xor": "^",
    "and_": "&",
}
#: the ``__add__``, ``__mul__`` (and in-place forms) of builtin sequences: CPython's
#: ``sq_concat``/``sq_repeat`` (``sq_inplace_*``), which it tries only after both operands'
#: numeric slots (so a right operand's Python ``__radd__`` comes first) and which raise
#: TypeError instead of returning NotImplemented
SEQUENCE_SLOTS: frozenset[Any] = frozenset(
    method for kind in (str, bytes, bytearray, list, tuple, collections.deque, array.array)
    for name in ("__add__", "__mul__", "__iadd__", "__imul__")
    if (method := vars(kind).get(name)) is not None)
_WrapperDescriptor = type(str.__add__)


def _sequence_slot(method: Any) -> bool:
    # the type test first: a class attribute may be unhashable
    return type(method) is _WrapperDescriptor and method in SEQUENCE_SLOTS


UNARY_SYMBOLS = {"neg": "-", "pos": "+", "invert": "~"}
COMPARE_SYMBOLS = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}
REFLECTED_COMPARE = {"lt": "gt", "le": "ge", "eq": "eq", "ne": "ne", "gt": "lt", "ge": "le"}


def _dunder(op: str) -> str:
    return f"__{op.rstrip('_')}__"


class Implicit(Dunders):
    """The implicit-call protocols of one context (Python dunders are entered through its
    dispatch table): operators, truth, iteration, ``with``, formatting here, attribute access
    in ``attributes``, class statements in ``classes``.

    Each protocol that can reach a Python dunder is a generator (``*_steps``) that yields
    the calls to make as steps ``(fn, *args)`` and returns the result; the public attribute
    is that generator driven by C code (``splice.runtime._hooks.Driven``), so while a
    dunder runs the generator is suspended and no frame of splice's is between the dunder
    and the program's frame: ``sys._getframe(1)``, ``traceback.extract_stack``,
    ``warnings.warn(stacklevel=2)`` and tracebacks see what they see natively. A
    protocol's own error (an unsupported operand) is raised with no splice frame in its
    traceback, as CPython's C code raises it."""

    binary: Callable[[str, Any, Any], Any]
    inplace: Callable[[str, Any, Any], Any]
    unary: Callable[[str, Any], Any]
    compare: Callable[[str, Any, Any], Any]
    contains: Callable[[Any, Any], bool]
    not_contains: Callable[[Any, Any], bool]
    truth: Callable[[Any], bool]
    negation: Callable[[Any], bool]
    getitem: Callable[[Any, Any], Any]
    setitem: Callable[[Any, Any, Any], None]
    delitem: Callable[[Any, Any], None]
    iter: Callable[[Any], Any]
    loop: Callable[[Any], Any]
    unpacked: Callable[..., Any]
    aloop: Callable[[Any], Any]
    str: Callable[[Any], Any]
    repr: Callable[[Any], Any]
    format: Callable[..., Any]
    formatted: Callable[..., Any]

    #: the protocols written as generators: ``name`` is ``drive(self.<name>_steps)``
    DRIVEN = ("binary", "inplace", "unary", "compare", "contains", "not_contains", "truth",
              "negation", "getitem", "setitem", "delitem", "iter", "loop", "unpacked",
              "aloop", "str", "repr", "format", "formatted")

    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.attributes = Attributes(table)
        self.classes = ClassCreation(table)
        for name in self.DRIVEN:
            setattr(self, name, drive(getattr(self, f"{name}_steps")))

    # ------------------------------------------------------------------------ operators

    def binary_steps(self, op: builtins.str, a: Any, b: Any) -> Steps:
        """``a <op> b`` (``op`` an ``operator`` name: "add", "or_", ...)."""
        left_type, right_type = type(a), type(b)
        name = _dunder(op)
        rname = "__r" + name[2:]
        left = special(left_type, name)
        right = special(right_type, rname) if right_type is not left_type else None
        if type(left) is not _FunctionType and type(right) is not _FunctionType:
            return (yield (getattr(operator, op), a, b))
        result = yield from self._binary_steps(left_type, right_type, left, right, rname,
                                               a, b)
        if result is NotImplemented and _sequence_slot(left):
            return (yield self._step(left, a, b))
        if result is NotImplemented:
            raise TypeError(f"unsupported operand type(s) for {BINARY_SYMBOLS[op]}: "
                            f"'{left_type.__name__}' and '{right_type.__name__}'")
        return result

    def _binary_steps(self, left_type: type, right_type: type, left: Any, right: Any,
                      rname: builtins.str, a: Any, b: Any) -> Steps:
        """CPython's ``binary_op1``: the operands' numeric slots, a subclass's reflected
        one first; a builtin sequence's concatenation or repetition is not one of them
        (the caller tries it last)."""
        if _sequence_slot(left):
            left = None
        if right is not None and issubclass(right_type, left_type) and \
                right is not special(left_type, rname):
            result = yield self._step(right, b, a)
            if result is not NotImplemented:
                return result
            right = None
        if left is not None:
            result = yield self._step(left, a, b)
            if result is not NotImplemented:
                return result
        if right is not None:
            return (yield self._step(right, b, a))
        return NotImplemented

    def inplace_steps(self, op: builtins.str, a: Any, b: Any) -> Steps:
        """``a <op>= b`` without the store (``op``: "iadd", "ior", "iand", ...)."""
        base = op[1:] if op[1:] in BINARY_SYMBOLS else f"{op[1:]}_"  # "iand": "and_"
        left_type, right_type = type(a), type(b)
        name = _dunder(op)
        binary_name = _dunder(base)
        rname = "__r" + binary_name[2:]
        own = special(left_type, name)
        left = special(left_type, binary_name)
        right = special(right_type, rname) if right_type is not left_type else None
        if all(type(f) is not _FunctionType for f in (own, left, right)):
            return (yield (getattr(operator, op), a, b))
        if own is not None and not _sequence_slot(own):
            result = yield self._step(own, a, b)
            if result is not NotImplemented:
                return result
        result = yield from self._binary_steps(left_type, right_type, left, right, rname,
                                               a, b)
        if result is NotImplemented:
            # a builtin sequence's in-place concatenation, else its concatenation
            if _sequence_slot(own):
                return (yield self._step(own, a, b))
            if _sequence_slot(left):
                return (yield self._step(left, a, b))
            raise TypeError(f"unsupported operand type(s) for {BINARY_SYMBOLS[base]}=: "
                            f"'{left_type.__name__}' and '{right_type.__name__}'")
        return result

    def unary_steps(self, op: builtins.str, a: Any) -> Steps:
        """``-a``, ``+a``, ``~a``."""
        method = special(type(a), _dunder(op))
        if type(method) is not _FunctionType:
            return (yield (getattr(operator, op), a))
        return (yield self._step(method, a))

    def compare_steps(self, op: builtins.str, a: Any, b: Any) -> Steps:
        """``a <op> b`` for the rich comparisons ("lt", "eq", ...)."""
        left_type, right_type = type(a), type(b)
        reflected = REFLECTED_COMPARE[op]
        left = special(left_type, _dunder(op))
        right = special(right_type, _dunder(reflected))
        if type(left) is not _FunctionType and type(right) is not _FunctionType:
            return (yield (getattr(operator, op), a, b))
        tried_reflected = False
        if right_type is not left_type and issubclass(right_type, left_type) and \
                right is not None:
            tried_reflected = True
            result = yield self._step(right, b, a)
            if result is not NotImplemented:
                return result
        if left is not None:
            result = yield self._step(left, a, b)
            if result is not NotImplemented:
                return result
        if not tried_reflected and right is not None:
            result = yield self._step(right, b, a)
            if result is not NotImplemented:
                return result
        if op == "eq":
            return a is b
        if op == "ne":
            return a is not b
        raise TypeError(f"'{COMPARE_SYMBOLS[op]}' not supported between instances of "
                        f"'{left_type.__name__}' and '{right_type.__name__}'")

    def contains_steps(self, item: Any, container: Any) -> Steps:
        """``item in container`` (arguments in the order they are evaluated)."""
        method = special(type(container), "__contains__")
        if type(method) is not _FunctionType:
            return (yield (operator.contains, container, item))
        return bool((yield self._step(method, container, item)))

    def not_contains_steps(self, item: Any, container: Any) -> Steps:
        """``item not in container``."""
        return not (yield from self.contains_steps(item, container))

    def truth_steps(self, obj: Any) -> Steps:
        """``bool(obj)`` as an ``if`` tests it: ``__bool__``, else ``__len__``."""
        kind = type(obj)
        method = special(kind, "__bool__")
        if type(method) is _FunctionType:
            result = yield self._step(method, obj)
            if type(result) is not bool:
                raise TypeError(f"__bool__ should return bool, returned "
                                f"{type(result).__name__}")
            return result
        if method is None:
            length = special(kind, "__len__")
            if type(length) is _FunctionType:
                size = yield self._step(length, obj)
                if not isinstance(size, int):
                    raise TypeError(f"'{type(size).__name__}' object cannot be interpreted "
                                    "as an integer")
                if size < 0:
                    raise ValueError("__len__() should return >= 0")
                return bool(size)
        return (yield (bool, obj))

    def negation_steps(self, obj: Any) -> Steps:
        """``not obj``."""
        return not (yield from self.truth_steps(obj))

    # ----------------------------------------------------------------------- subscripts

    def getitem_steps(self, obj: Any, index: Any) -> Steps:
        method = special(type(obj), "__getitem__")
        if type(method) is not _FunctionType:
            return (yield (operator.getitem, obj, index))
        return (yield self._step(method, obj, index))

    def setitem_steps(self, value: Any, obj: Any, index: Any) -> Steps:
        method = special(type(obj), "__setitem__")
        if type(method) is not _FunctionType:
            yield (operator.setitem, obj, index, value)
            return None
        yield self._step(method, obj, index, value)
        return None

    def delitem_steps(self, obj: Any, index: Any) -> Steps:
        method = special(type(obj), "__delitem__")
        if type(method) is not _FunctionType:
            yield (operator.delitem, obj, index)
            return None
        yield self._step(method, obj, index)
        return None

    # ---------------------------------------------------------------- iteration, format

    def iter_steps(self, obj: Any) -> Steps:
        found = yield from self._iterator_steps(obj, special(type(obj), "__iter__"))
        if found is not None:
            return found[0]
        return (yield (builtins.iter, obj))

    def _iterator_steps(self, obj: Any, method: Any) -> Steps:
        """``iter(obj)`` given ``obj``'s ``__iter__`` (``method``), a Python one entered under
        the context: the iterator, whether ``__iter__`` was Python code, and the iterator's
        ``__next__``. None when ``obj`` has no ``__iter__`` (not iterable, or the sequence
        protocol: the native operation then does what it does)."""
        if method is None:
            return None
        python_iter = type(method) is _FunctionType
        it = yield (self._step(method, obj) if python_iter else (builtins.iter, obj))
        kind = type(it)
        step = special(kind, "__next__")
        if step is None:
            raise TypeError(f"iter() returned non-iterator of type '{kind.__name__}'")
        return it, python_iter, step

    def _stepper(self, it: Any, step: Any) -> Any:
        """A callable that advances ``it`` (whose ``__next__`` is ``step``), with no Python
        frame of splice's in between, or None when nothing Python runs in a loop over ``it``
        (its ``__next__`` and its own ``__iter__`` are C code)."""
        if type(step) is _FunctionType:
            return _partial(self.table[step], it)
        if type(special(type(it), "__iter__")) is _FunctionType:
            # a loop over ``it`` would call its Python __iter__ once more
            return _partial(builtins.next, it)
        return None

    def loop_steps(self, obj: Any) -> Steps:
        """What a ``for`` loop, a comprehension or an unpacking iterates instead of ``obj``
        when Python code takes part: an iterator whose ``__iter__`` and ``__next__`` are C
        code and whose steps call the Python ``__next__`` under the context (``obj`` itself
        when no Python dunder is involved, so errors keep their native messages)."""
        if type(obj) in NATIVE_TYPES:
            return obj
        found = yield from self._iterator_steps(obj, special(type(obj), "__iter__"))
        if found is None:
            return obj
        it, python_iter, step = found
        stepper = self._stepper(it, step)
        if stepper is not None:
            return builtins.iter(stepper, _END)
        return it if python_iter else obj

    def unpacked_steps(self, obj: Any, *, before: int, after: int) -> Steps:
        """The values of a starred unpacking (``a, *b, c = obj``) collected as CPython does
        (``before`` values by ``__next__``, then ``list(iterator)``, which calls the
        iterator's ``__iter__``), as a tuple the native unpacking then splits; ``obj``
        itself when no Python dunder is involved."""
        if type(obj) in NATIVE_TYPES:
            return obj
        found = yield from self._iterator_steps(obj, special(type(obj), "__iter__"))
        if found is None:
            return obj
        it, python_iter, step = found
        stepper = self._stepper(it, step)
        if stepper is None and not python_iter:
            return obj
        advance = stepper or _partial(builtins.next, it)
        first = []
        short = False
        for _ in range(before):
            try:
                first.append((yield (advance,)))
            except StopIteration:
                short = True
                break
        if short:  # raised outside the handler: the native error has no context
            raise ValueError(f"not enough values to unpack (expected at least "
                             f"{before + after}, got {len(first)})")
        rest = yield (list, (yield from self.loop_steps(it)))
        if len(rest) < after:
            raise ValueError(f"not enough values to unpack (expected at least "
                             f"{before + after}, got {before + len(rest)})")
        return (*first, *rest)

    def managed(self, manager: Any) -> Any:
        """What ``with manager`` enters instead, when its ``__enter__`` or ``__exit__`` is
        Python code (``manager`` itself otherwise)."""
        return self._managed(manager, "__enter__", "__exit__")

    def managed_async(self, manager: Any) -> Any:
        """The same for ``async with`` (``__aenter__``/``__aexit__``)."""
        return self._managed(manager, "__aenter__", "__aexit__")

    def _managed(self, manager: Any, enter_name: builtins.str, exit_name: builtins.str) -> Any:
        if type(manager) in NATIVE_TYPES:
            return manager
        kind = type(manager)
        enter = special(kind, enter_name)
        leave = special(kind, exit_name)
        if enter is None or leave is None or (type(enter) is not _FunctionType
                                              and type(leave) is not _FunctionType):
            return manager  # the native statement raises its own errors
        wrapper = _Managed()
        wrapper.enter = self._bound(enter, manager)
        wrapper.exit = self._bound(leave, manager)
        return wrapper

    def aloop_steps(self, obj: Any) -> Steps:
        """What ``async for`` iterates instead of ``obj`` when its ``__aiter__`` or the
        iterator's ``__anext__`` is Python code: a stand-in whose ``__aiter__`` gives steps
        calling that ``__anext__`` under the context (``obj`` itself otherwise, so errors keep
        their native messages and async generators run as they are)."""
        kind = type(obj)
        if kind in NATIVE_TYPES:
            return obj
        make = special(kind, "__aiter__")
        if make is None:
            return obj  # the native statement raises its own error
        python_aiter = type(make) is _FunctionType
        it = yield self._step(make, obj)
        step = special(type(it), "__anext__")
        if step is None:
            raise TypeError("'async for' received an object from __aiter__ that does not "
                            f"implement __anext__: {type_name(type(it), 100)}")
        if not python_aiter and type(step) is not _FunctionType and it is obj:
            return obj  # __aiter__ (C code) gives obj itself again: nothing Python to enter
        steps = _AsyncSteps()
        steps.anext = self._bound(step, it)
        loop = _AsyncLoop()
        loop.aiter = itertools.repeat(steps).__next__
        return loop

    def str_steps(self, obj: Any) -> Steps:
        method = special(type(obj), "__str__")
        if method is _OBJECT_STR:
            return (yield from self.repr_steps(obj))  # object.__str__ calls __repr__
        if type(method) is not _FunctionType:
            return (yield (builtins.str, obj))
        return _checked_str((yield self._step(method, obj)), "__str__")

    def repr_steps(self, obj: Any) -> Steps:
        method = special(type(obj), "__repr__")
        if type(method) is not _FunctionType:
            return (yield (builtins.repr, obj))
        return _checked_str((yield self._step(method, obj)), "__repr__")

    def format_steps(self, value: Any, spec: Any = "") -> Steps:
        if not isinstance(spec, builtins.str):
            # the builtin's argument check, before any __format__ runs
            kind = "None" if spec is None else type(spec).__name__
            raise TypeError(f"format() argument 2 must be str, not {kind}")
        method = special(type(value), "__format__")
        if method is _OBJECT_FORMAT and type(spec) is builtins.str and not spec:
            return (yield from self.str_steps(value))  # object.__format__(x, "") is str(x)
        if type(method) is not _FunctionType:
            return (yield (builtins.format, value, spec))
        result = yield self._step(method, value, spec)
        if not isinstance(result, builtins.str):
            raise TypeError(f"__format__ must return a str, not {type(result).__name__}")
        return result

    def formatted_steps(self, value: Any, conversion: int, spec: Any = "") -> Steps:
        """An f-string field: ``{value!conversion:spec}``."""
        if conversion == ord("s"):
            value = yield from self.str_steps(value)
        elif conversion == ord("r"):
            value = yield from self.repr_steps(value)
        elif conversion == ord("a"):
            value = yield (builtins.ascii, value)
        return (yield from self.format_steps(value, spec))


def _checked_str(result: Any, name: str) -> Any:
    if not isinstance(result, str):
        raise TypeError(f"{name} returned non-string (type {type(result).__name__})")
    return result
