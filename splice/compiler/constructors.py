"""Instantiation without a splice frame: a class's ``__init__`` compiled as its constructor.

``Vec(x, y)`` natively runs ``type.__call__`` (C): ``object.__new__(Vec)``, then
``Vec.__init__(obj, x, y)``. Under a context, ``__init__`` must run transformed, and a
Python-level instantiation function in between would be a frame that code inspecting its
caller sees (``typing.TypeVar`` finds its module with ``sys._getframe(1)``, ``warnings.warn``
counts ``stacklevel`` in frames). So for the common case, a class whose metaclass does not
override ``__call__``, whose ``__new__`` is ``object.__new__`` and whose ``__init__`` is a
plain Python function, the class's entry is ``functools.partial(constructor, spec)``: C code
calling *one* Python function, a transformed copy of ``__init__``'s code that

* receives ``spec`` (the class and what the entry relied on) in place of ``self`` and checks
  that the class still instantiates the same way (same metaclass, ``__init__`` and
  ``__new__``); if not, it makes the call through the context's general instantiation
  (forwarding exactly the arguments the caller passed: defaults are sentinels) and drops the
  class's entry;
* replaces the sentinels of parameters the caller left out by their defaults (read from
  ``spec``: the function's defaults tuple and its shared keyword-defaults dict);
* binds ``self = object.__new__(cls)``, runs the body, and returns ``self`` (an
  ``__init__`` with a ``return value`` gets no constructor: ``type.__call__`` raises its
  TypeError in the caller's frame, which no code in ``__init__`` can do).

Argument errors are raised before the frame exists and name ``Vec.__init__``, as natively.
What differs (documented in docs/runtime.md): a class that changed since its entry was made
is instantiated from inside the constructor, so an error raised then has the ``__init__``
frame in its traceback (once: the entry is dropped); an argument error takes precedence over
``object.__new__``'s abstract-class error (abstract classes get no constructor, so only a
class made abstract after its entry was made sees it).
"""

from __future__ import annotations

from typing import Any

from splice.compiler.sentinels import (
    CLASS,
    CO_GENERATOR_LIKE,
    DEFAULTS,
    INIT,
    KWDEFAULTS,
    META,
    Sentinel,
    sentinel_defaults,
)
from splice.errors import UnsupportedError
from splice.ir.nodes import (
    Assign,
    BuildDict,
    BuildTuple,
    Call,
    Compare,
    Const,
    FunctionIR,
    GetAttr,
    GetItem,
    If,
    Operand,
    Pos,
    Return,
    Stmt,
    Store,
    Var,
)
from splice.ir.tools import locations
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["CO_GENERATOR_LIKE", "Sentinel", "constructor_ir", "def_line",
           "sentinel_defaults"]

_object_new: Any = object.__new__
#: where a statement that must not get a line of its own goes: the compiler gives it the
#: line of the instruction before, as it does for the implicit ``return None``
NO_LINE = Pos(-1, -1, -1, -1)

def constructor_ir(ir: FunctionIR, fallback: Any) -> FunctionIR:
    """Rewrite ``ir`` (an ``__init__``, routed) in place into its constructor (module
    docstring). ``fallback(spec, positional, varargs, keywords, varkw)`` makes the call when
    the class changed. Raises ``UnsupportedError`` for an ``__init__`` that returns a value
    (or may: ``return x``)."""
    first = [*ir.args.posonly, *ir.args.args][0]
    # the ``def`` line: a tracer sees it once (before the body's first line, which sees
    # ``self`` bound to the object, as natively)
    pos = def_line(ir)
    positional = [*ir.args.posonly, *ir.args.args][1:]
    count = len(positional) + 1

    def assign(op: Any) -> tuple[Assign, Any]:
        temp = ir.new_temp()
        return Assign((temp,), op, pos), temp

    def spec(index: int) -> tuple[Assign, Any]:
        return assign(GetItem(Var(first, pos), Const(index, pos)))

    prologue: list[Stmt] = []
    # the class still instantiates as when the entry was made
    checks: list[tuple[list[Stmt], Any]] = []
    s1, cls = spec(CLASS)
    s2, meta = assign(Call(Const(type, pos), [cls], []))
    s3, expected = spec(META)
    s4, bad = assign(Compare("is_not", meta, expected))
    checks.append(([s1, s2, s3, s4], bad))
    s1, cls = spec(CLASS)
    s2, init = assign(GetAttr(cls, "__init__"))
    s3, expected = spec(INIT)
    s4, bad = assign(Compare("is_not", init, expected))
    checks.append(([s1, s2, s3, s4], bad))
    s1, cls = spec(CLASS)
    s2, new = assign(GetAttr(cls, "__new__"))
    s3, bad = assign(Compare("is_not", new, Const(_object_new, pos)))
    checks.append(([s1, s2, s3], bad))
    for statements, failed in checks:
        prologue.extend(statements)
        prologue.append(If(failed, _fallback_return(ir, fallback, first, positional), [], pos))
    # defaults the caller left out (a parameter's index from the end of the positional
    # ones is its index from the end of the defaults tuple, however long that is)
    for index, name in enumerate(positional, start=1):
        prologue.extend(_replace_sentinel(ir, first, name, pos, DEFAULTS, index - count))
    for name in ir.args.kwonly:
        prologue.extend(_replace_sentinel(ir, first, name, pos, KWDEFAULTS, name))
    s1, cls = spec(CLASS)
    s2, obj = assign(Call(Const(_object_new, pos), [cls], []))
    prologue.extend([s1, s2, Store(Var(first, pos), obj, pos)])
    _rewrite_returns(ir, first)
    ir.body[:0] = prologue
    ir.body.append(Return(Var(first, NO_LINE), NO_LINE))
    return ir


def def_line(ir: FunctionIR) -> Pos:
    """The position of ``ir``'s ``def`` line alone (``ir.pos`` spans the whole function:
    the compiler would put an attribute lookup on its last line)."""
    return Pos(ir.pos.lineno, ir.pos.col_offset, ir.pos.lineno, ir.pos.col_offset)


def _replace_sentinel(ir: FunctionIR, first: str, name: str, pos: Pos, where: int, key: Any
                      ) -> list[Stmt]:
    """``if name is <its sentinel>: name = spec[where][key]``."""
    left_out = ir.new_temp()
    table = ir.new_temp()
    value = ir.new_temp()
    return [
        Assign((left_out,), Compare("is_", Var(name, pos), Const(Sentinel.of(name), pos)), pos),
        If(left_out, [
            Assign((table,), GetItem(Var(first, pos), Const(where, pos)), pos),
            Assign((value,), GetItem(table, Const(key, pos)), pos),
            Store(Var(name, pos), value, pos),
        ], [], pos),
    ]


def _fallback_return(ir: FunctionIR, fallback: Any, first: str, positional: list[str]
                     ) -> list[Stmt]:
    """``return fallback(spec, (positional...), varargs, {kwonly...}, varkw)``."""
    pos = def_line(ir)
    stmts: list[Stmt] = []
    values = ir.new_temp()
    stmts.append(Assign((values,), BuildTuple([Var(n, pos) for n in positional]), pos))
    keywords = ir.new_temp()
    stmts.append(Assign((keywords,), BuildDict(
        [(Const(n, pos), Var(n, pos)) for n in ir.args.kwonly]), pos))
    varargs: Operand = Var(ir.args.vararg, pos) if ir.args.vararg else Const((), pos)
    varkw: Operand = Var(ir.args.kwarg, pos) if ir.args.kwarg else Const(None, pos)
    result = ir.new_temp()
    stmts.append(Assign((result,), Call(Const(fallback, pos), [
        Var(first, pos), values, varargs, keywords, varkw], []), pos))
    stmts.append(Return(result, pos))
    return stmts


def _rewrite_returns(ir: FunctionIR, first: str) -> None:
    """Every ``return`` of the function's own scope returns the object instead. An
    ``__init__`` that may return something else gets no constructor: ``type.__call__``
    raises its TypeError in the caller's frame, which no code in ``__init__`` can do."""
    for loc in list(locations(ir)):
        stmt = loc.stmt
        if not isinstance(stmt, Return):
            continue
        value = stmt.value
        if value is not None and not (isinstance(value, Const) and value.value is None):
            raise UnsupportedError(ir.qualname, "an __init__ returning a value gets no "
                                   "constructor", str(stmt.pos))
        loc.block[loc.block.index(stmt)] = Return(Var(first, stmt.pos), stmt.pos)
