"""Transfer functions: abstract results of operators and builtins on the builtin types.

Each function takes abstract operands and returns the abstract result, or ``None`` when it
has no rule (the interpreter then looks further: a user dunder method, a stub, or ``ANY``).
Constant folding runs pure operations on constant operands, within size limits, and turns
an operation that always raises into ``NEVER``.
"""

from __future__ import annotations

import math
import operator
import types
from collections.abc import Callable
from typing import Any

from splice.infer.lattice import (
    ANY,
    NEVER,
    Abstract,
    Const,
    Elements,
    Exact,
    PartialTuple,
    Sub,
    is_value_constant,
    join,
    join_all,
    truth_of,
)
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

#: largest constant (length of a str/bytes/tuple, bits of an int) folding may produce
MAX_CONST_SIZE = 256

_NUMERIC = (bool, int, float, complex)
_ARITH = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
          "and_", "or_", "xor", "matmul"}


def _rank(cls: type) -> int:
    return {bool: 0, int: 1, float: 2, complex: 3}[cls]


def _too_big(value: object) -> bool:
    if isinstance(value, int) and value.bit_length() > MAX_CONST_SIZE * 8:
        return True
    return isinstance(value, (str, bytes, tuple)) and len(value) > MAX_CONST_SIZE


def _safe_to_fold(op: str, x: object, y: object) -> bool:
    """Refuse folds that could take long or build huge values."""
    if op in ("pow", "lshift") and isinstance(y, (int, float)) and abs(y) > 256:
        return False
    if op == "pow" and isinstance(x, int) and isinstance(y, int) and x.bit_length() > 64:
        return False
    if op == "mul":
        for seq, n in ((x, y), (y, x)):
            if isinstance(seq, (str, bytes, tuple)) and isinstance(n, int):
                return len(seq) * max(n, 0) <= MAX_CONST_SIZE
    return True


def safe_call_fold(fn: Any, args: list[Any]) -> bool:
    """Refuse folding calls that could take long or build huge values."""
    if fn in (pow, math.pow) and len(args) >= 2:
        return _safe_to_fold("pow", args[0], args[1])
    if fn in (math.factorial, math.comb, math.perm):
        return all(isinstance(a, int) and abs(a) <= 1000 for a in args)
    if fn in (math.lcm, math.gcd, math.prod, sum, min, max, sorted, tuple, frozenset):
        return all(not hasattr(a, "__len__") or len(a) <= MAX_CONST_SIZE for a in args)
    return True


def fold(fn: Callable[..., Any], *args: object) -> Abstract | None:
    """``Const(fn(*args))`` (``NEVER`` if it raises); ``None`` when the result is not a
    constant worth keeping."""
    try:
        result = fn(*args)
    except Exception:
        return NEVER
    if not is_value_constant(result) or _too_big(result):
        return None
    return Const(result)


def _num_result(op: str, a: type, b: type, right_const: object = None) -> Abstract | None:
    """The result class of ``a <op> b`` for two builtin numeric classes."""
    hi = max(_rank(a), _rank(b))
    if op in ("and_", "or_", "xor"):
        if a is bool and b is bool:
            return Exact(bool)
        return Exact(int) if hi <= 1 else None
    if op in ("lshift", "rshift"):
        return Exact(int) if hi <= 1 else None
    if op == "matmul":
        return None
    if op == "truediv":
        return Exact(complex) if hi == 3 else Exact(float)
    if hi == 3:
        return None if op in ("floordiv", "mod") else Exact(complex)
    if op == "pow":
        if hi <= 1:
            if isinstance(right_const, int) and right_const >= 0:
                return Exact(int)
            return join(Exact(int), Exact(float))
        # a negative float to a fractional power is complex
        if isinstance(right_const, (int, bool)) or (
                isinstance(right_const, float) and right_const.is_integer()):
            return Exact(float)
        return join(Exact(float), Exact(complex))
    return Exact(float) if hi == 2 else Exact(int)


def _seq_binop(op: str, a: Abstract, b: Abstract) -> Abstract | None:
    ca, cb = a.exact_class, b.exact_class
    if op == "add" and ca is cb and ca in (str, bytes, list, bytearray):
        return Exact(ca)
    if op == "add" and ca is tuple and cb is tuple:
        ta, tb = _as_partial(a), _as_partial(b)
        if ta is not None and tb is not None:
            return PartialTuple(ta.items + tb.items)
        return Exact(tuple)
    if op == "mul" and ca in (str, bytes, list, tuple, bytearray) and cb in (int, bool):
        return Exact(ca)
    if op == "mul" and cb in (str, bytes, list, tuple, bytearray) and ca in (int, bool):
        return Exact(cb)
    if op == "mod" and ca in (str, bytes):
        return Exact(ca)
    if ca in (set, frozenset) and cb in (set, frozenset) and op in ("or_", "and_", "sub", "xor"):
        return Exact(ca)
    if ca is dict and cb is dict and op == "or_":
        return Exact(dict)
    return None


def _as_partial(a: Abstract) -> PartialTuple | None:
    if isinstance(a, Const) and type(a.value) is tuple:
        widened = a.widen()
        return widened if isinstance(widened, PartialTuple) else None
    return a if isinstance(a, PartialTuple) else None


def binop(op: str, a: Abstract, b: Abstract, fold_consts: bool = True) -> Abstract | None:
    """``a <op> b`` (``op`` names an ``operator`` function: "add", "truediv", ...) for
    builtin operand classes; ``None`` without a rule (user classes, unknown operands)."""
    if a is NEVER or b is NEVER:
        return NEVER
    if len(a.members()) > 1 or len(b.members()) > 1:
        parts = [binop(op, x, y, fold_consts) for x in a.members() for y in b.members()]
        if any(p is None for p in parts):
            return None
        return join_all(p for p in parts if p is not None)
    if (fold_consts and isinstance(a, Const) and isinstance(b, Const)
            and is_value_constant(a.value) and is_value_constant(b.value)
            and _safe_to_fold(op, a.value, b.value)):
        folded = fold(getattr(operator, op), a.value, b.value)
        if folded is not None:
            return folded
    ca, cb = a.exact_class, b.exact_class
    if ca is None or cb is None:
        return None
    if ca in _NUMERIC and cb in _NUMERIC:
        right = b.value if isinstance(b, Const) else None
        result = _num_result(op, ca, cb, right)
    else:
        result = _seq_binop(op, a, b)
    if result is None and ca in _CLOSED and cb in _CLOSED:
        return NEVER  # these classes support no other operator: a TypeError
    return result


#: builtin classes whose operators are all described above (anything else raises)
_CLOSED = frozenset({type(None), bool, int, float, complex, str, bytes})


def inplace_base(op: str) -> str:
    """The binary operator of an in-place one: "iadd" -> "add", "ior" -> "or_"."""
    base = op[1:]
    return base + "_" if base in ("and", "or") else base


def inplace(op: str, a: Abstract, b: Abstract, fold_consts: bool = True) -> Abstract | None:
    """``a <op>= b`` (``op`` is "iadd", ...): the binary rule for immutable builtins, the
    receiver's class for in-place updates of lists, sets, dicts."""
    base = inplace_base(op)
    ca = a.exact_class
    if ca is list and base in ("add", "mul"):
        return Exact(list) if base == "add" or b.exact_class in (int, bool) else None
    if ca in (set, dict, bytearray) and base in ("or_", "and_", "sub", "xor", "add"):
        return _seq_binop(base, a, b) if ca is not bytearray else Exact(bytearray)
    if ca in (list, set, dict, bytearray):
        return None
    return binop(base, a, b, fold_consts)


def unary(op: str, a: Abstract, fold_consts: bool = True) -> Abstract | None:
    """``-a``, ``+a``, ``~a``, ``not a``."""
    if a is NEVER:
        return NEVER
    if op == "not_":
        truth = truth_of(a)
        return Exact(bool) if truth is None else Const(not truth)
    if fold_consts and isinstance(a, Const) and is_value_constant(a.value):
        folded = fold(getattr(operator, op), a.value)
        if folded is not None:
            return folded
    if len(a.members()) > 1:
        parts = [unary(op, m, fold_consts) for m in a.members()]
        if any(p is None for p in parts):
            return None
        return join_all(p for p in parts if p is not None)
    cls = a.exact_class
    if cls in (int, bool):
        return Exact(int)
    if cls in (float, complex) and op != "invert":
        return Exact(cls)
    return None


_ORDER_TYPES = (bool, int, float, str, bytes, tuple, list)


def compare(op: str, a: Abstract, b: Abstract, fold_consts: bool = True) -> Abstract | None:
    """Comparisons: identity tests and ``in`` always give a bool; rich comparisons of builtin
    numbers and sequences give a bool; constants fold."""
    if a is NEVER or b is NEVER:
        return NEVER
    if op in ("is_", "is_not"):
        same = _identity(a, b)
        if same is None:
            return Exact(bool)
        return Const(same if op == "is_" else not same)
    if (fold_consts and isinstance(a, Const) and isinstance(b, Const)
            and is_value_constant(a.value) and is_value_constant(b.value)):
        folded = fold(getattr(operator, op if op not in ("in", "not_in") else "contains"),
                      *((b.value, a.value) if op in ("in", "not_in") else (a.value, b.value)))
        if folded is not None and op == "not_in" and folded is not NEVER:
            return Const(not folded.value)
        if folded is not None:
            return folded
    if op in ("in", "not_in"):
        return Exact(bool)  # the interpreter runs any __contains__; the result is a bool
    if all(m.exact_class in (*_NUMERIC, str, bytes) for m in (*a.members(), *b.members())):
        return Exact(bool)
    ca, cb = a.exact_class, b.exact_class
    if ca is not None and ca is cb and ca in (tuple, list, set, frozenset, dict, type(None)):
        return Exact(bool)  # element comparisons may run user code, but give a bool
    return None


def _identity(a: Abstract, b: Abstract) -> bool | None:
    if isinstance(a, Const) and isinstance(b, Const):
        x, y = a.value, b.value
        singletons = (type(None), bool, type(Ellipsis), type(NotImplemented))
        if ((not is_value_constant(x) or type(x) in singletons)
                and (not is_value_constant(y) or type(y) in singletons)):
            return x is y
    ca, cb = a.exact_class, b.exact_class
    if ca is not None and cb is not None and ca is not cb:
        return False
    return None


# ------------------------------------------------------------------------------- builtins

#: builtins and math functions without side effects, folded on constant arguments
PURE_BUILTINS: frozenset[Any] = frozenset(
    [abs, len, min, max, round, int, float, str, bool, chr, ord, divmod, pow, repr, complex,
     bin, hex, oct, isinstance, issubclass, callable, ascii, sum, any, all, tuple,
     frozenset, type]
    + [v for k, v in vars(math).items() if callable(v) and not k.startswith("_")])

_MATH_FLOAT = {name for name in dir(math) if not name.startswith("_")} - {
    "factorial", "gcd", "lcm", "isqrt", "comb", "perm", "floor", "ceil", "trunc", "isnan",
    "isinf", "isfinite", "isclose", "frexp", "modf", "prod", "fsum", "pi", "e", "tau", "inf",
    "nan", "dist", "sumprod"} | {"fsum", "dist"}
_MATH_INT = {"factorial", "gcd", "lcm", "isqrt", "comb", "perm"}
_MATH_BOOL = {"isnan", "isinf", "isfinite", "isclose"}
_BUILTIN_NUMBERS = (bool, int, float)


def _all_builtin_numbers(args: list[Abstract]) -> bool:
    return all(all(m.exact_class in _BUILTIN_NUMBERS for m in a.members()) for a in args)


def call_builtin(fn: Any, args: list[Abstract], kwargs: dict[str, Abstract],
                 fold_consts: bool = True) -> Abstract | None:
    """The result of calling the builtin (or ``math``) callable ``fn``; ``None`` without a
    rule. Pure builtins fold on constant arguments."""
    if any(a is NEVER for a in args) or any(a is NEVER for a in kwargs.values()):
        return NEVER
    if (fold_consts and fn in PURE_BUILTINS and not kwargs
            and all(isinstance(a, Const) and is_value_constant(a.value) for a in args)
            and fn is not type and safe_call_fold(fn, [a.value for a in args])):
        folded = fold(fn, *(a.value for a in args))
        if folded is not None:
            return folded
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__name__", "")
    if module == "math" and isinstance(fn, types.BuiltinFunctionType):
        if not _all_builtin_numbers(args) or kwargs:
            return None  # __float__/__index__ of user classes may raise anything
        if name in ("floor", "ceil", "trunc"):
            return Exact(int)
        if name in _MATH_INT:
            return Exact(int)
        if name in _MATH_BOOL:
            return Exact(bool)
        if name in _MATH_FLOAT:
            return Exact(float)
        return None
    return _builtin_rule(fn, args, kwargs)


def _elements(a: Abstract) -> Abstract | None:
    """What iterating ``a`` yields, when known."""
    if isinstance(a, Elements):
        return a.elem
    if isinstance(a, PartialTuple):
        return join_all(a.items, 8)
    if (isinstance(a, Const) and type(a.value) in (tuple, str, bytes, frozenset)
            and len(a.value) <= 8):
        if type(a.value) is bytes:
            return Exact(int)
        return join_all((Const(v) for v in a.value), 8)
    cls = a.exact_class
    if cls is str:
        return Exact(str)
    if cls in (bytes, bytearray):
        return Exact(int)
    if cls is range:
        return Exact(int)
    return None


def elements(a: Abstract) -> Abstract:
    """What iterating ``a`` yields (``ANY`` when unknown)."""
    result = _elements(a)
    return ANY if result is None else result


def iterate(a: Abstract) -> Abstract | None:
    """``iter(a)`` for builtin iterables, keeping what the iterator yields."""
    cls = a.exact_class
    elem = _elements(a)
    if cls is None:
        return None
    if isinstance(a, Elements) and cls in _ITERATOR_TYPES:
        return a
    if cls is range:
        return range_iterator(a)
    if cls is str:
        # an ASCII-only str gives a str_ascii_iterator, another one a str_iterator
        if isinstance(a, Const) and type(a.value) is str:
            return Elements(type(iter(a.value)), Exact(str))
        return join(Elements(_STR_ASCII_ITERATOR, Exact(str)),
                    Elements(_STR_ITERATOR, Exact(str)))
    iterator = _ITER_CLASS.get(cls)
    if iterator is None:
        return None
    return Elements(iterator, elem if elem is not None else ANY)


_RANGE_ITERATOR = type(iter(range(0)))
_STR_ASCII_ITERATOR = type(iter(""))
_STR_ITERATOR = type(iter("\u00e9"))
_LONG_RANGE_ITERATOR = type(iter(range(1 << 70)))


def range_iterator(a: Abstract) -> Abstract:
    """``iter(r)`` or ``reversed(r)`` for a range ``r``: a ``range_iterator`` when its
    bounds and length fit a C long, else a ``longrange_iterator`` (both yield ints)."""
    if isinstance(a, Const) and type(a.value) is range:
        return Elements(type(iter(a.value)), Exact(int))
    return join(Elements(_RANGE_ITERATOR, Exact(int)),
                Elements(_LONG_RANGE_ITERATOR, Exact(int)))


_ITER_CLASS: dict[type, type] = {
    range: type(iter(range(0))), tuple: type(iter(())), list: type(iter([])),
    str: type(iter("")), bytes: type(iter(b"")), dict: type(iter({})),
    set: type(iter(set())), frozenset: type(iter(frozenset())),
    type({}.keys()): type(iter({}.keys())), type({}.values()): type(iter({}.values())),
    type({}.items()): type(iter({}.items())),
}
_ITERATOR_TYPES: frozenset[type] = frozenset(
    {*_ITER_CLASS.values(), types.GeneratorType, enumerate, zip, map, filter, reversed,
     _LONG_RANGE_ITERATOR, _STR_ITERATOR})


def _builtin_rule(fn: Any, args: list[Abstract], kwargs: dict[str, Abstract]
                  ) -> Abstract | None:
    n = len(args)
    if fn is len:
        return Exact(int)
    if fn is isinstance or fn is issubclass or fn is callable or fn is bool:
        return Exact(bool)
    if fn is abs and n == 1 and _all_builtin_numbers(args):
        cls = args[0].exact_class
        return Exact(int if cls is bool else cls) if cls is not None else Exact(int) | Exact(float)
    if fn in (min, max) and n >= 2 and "key" not in kwargs and "default" not in kwargs:
        return join_all(args, 8)
    if fn in (min, max) and n == 1 and not kwargs:
        return _elements(args[0])
    if fn is round and _all_builtin_numbers(args):
        if n == 1:
            return Exact(int)
        cls = args[0].exact_class
        if n == 2 and cls is not None:
            return Exact(int if cls is bool else cls)
    if fn is divmod and n == 2 and _all_builtin_numbers(args):
        quotient = binop("floordiv", args[0], args[1], False)
        if quotient is not None:
            return PartialTuple((quotient, quotient))
    if fn is pow and n == 2:
        return binop("pow", args[0], args[1], False)
    if fn in (int, float, complex) and all(
            m.exact_class in (*_BUILTIN_NUMBERS, str, bytes)
            for a in args for m in a.members()):
        return Exact(fn)
    if fn is str and n <= 1 and not kwargs and all(
            m.exact_class in (*_BUILTIN_NUMBERS, str, type(None)) for a in args
            for m in a.members()):
        return Exact(str)
    if fn in (repr, ascii, chr, hex, oct, bin):
        return Exact(str) if fn is not repr else Sub(str)
    if fn is ord or fn is hash or fn is id:
        return Exact(int)
    if fn is type and n == 1:
        cls = args[0].exact_class
        return Const(cls) if cls is not None else Sub(type)
    if fn is range:
        return Elements(range, Exact(int))
    if fn is enumerate and n >= 1 and not kwargs:
        return Elements(enumerate, PartialTuple((Exact(int), elements(args[0]))))
    if fn is zip and not kwargs:
        return Elements(zip, PartialTuple(elements(a) for a in args))
    if fn is reversed and n == 1 and args[0].exact_class is range:
        return range_iterator(args[0])
    if fn is reversed and n == 1 and args[0].exact_class in (list, tuple, str):
        return Elements(_REVERSED[args[0].exact_class], elements(args[0]))
    if fn is iter and n == 1:
        return iterate(args[0])
    if fn is sum and n in (1, 2) and not kwargs:
        elem = _elements(args[0])
        start = args[1] if n == 2 else Const(0)
        if elem is not None and _all_builtin_numbers([elem, start]):
            if all(m.exact_class in (bool, int) for m in (*elem.members(), *start.members())):
                return Exact(int)
            total = binop("add", start.widen() if start.is_const else start, elem, False)
            if total is not None:
                return join(start, total)  # the start itself when the iterable is empty
    if fn in (any, all):
        return Exact(bool)
    if fn is sorted:
        return Exact(list)
    if fn is print:
        return Const(None)
    if isinstance(fn, type) and fn.__module__ == "builtins" and fn in _PLAIN_CONSTRUCTORS:
        return Exact(fn)
    return None


_REVERSED: dict[type, type] = {list: type(reversed([])), tuple: reversed, str: reversed}
#: builtin classes whose call always returns a new instance of exactly that class
_PLAIN_CONSTRUCTORS: frozenset[type] = frozenset(
    {list, dict, set, frozenset, tuple, bytearray, object, slice, map, filter, enumerate,
     zip, range, bool})

