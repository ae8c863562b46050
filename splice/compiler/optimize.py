"""The optimisation stage of a code instance (between ``plugin.typed`` and
``plugin.optimized``).

What exists:

* folding of operators whose operands are all literal constants of builtin value types
  (``2 * 3``, ``-1.5``, ``"a" + "b"``), repeated as folded results feed others. Such an
  operation runs no user code and depends on no binding, so the fold is valid for every
  execution; an operation that raises (``1 / 0``) or would build a large value is left alone;

Reads of globals or module attributes are never removed, even when a ``typed`` pass made
them unused: a callee may delete the binding while the instance runs, and the program's
read would then raise. (Callee replacements keep such reads anyway: their use-site check
compares the value read with the callee the rewrite replaced, ``splice.compiler.checks``.)

Guarded direct calls are planned after this stage (``splice.compiler.direct``); inlining and
general dead code removal are not done yet.
"""

from __future__ import annotations

import operator
from typing import Any

from splice.ir.nodes import (
    Assign,
    BinOp,
    Compare,
    Const,
    Copy,
    FunctionIR,
    Temp,
    UnaryOp,
)
from splice.ir.tools import replace_uses, walk
from splice.keys import ClassSet
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["optimize"]

_VALUE_TYPES = ClassSet((bool, int, float, complex, str, bytes))
_FOLDABLE_COMPARE = frozenset({"lt", "le", "eq", "ne", "gt", "ge"})
_MAX_SIZE = 256  # longest str/bytes and widest int (in bits) a fold may create


def _foldable(value: Any) -> bool:
    return type(value) in _VALUE_TYPES


def _small(value: Any) -> bool:
    if type(value) is int:
        return value.bit_length() <= _MAX_SIZE
    if type(value) in (str, bytes):
        return len(value) <= _MAX_SIZE
    return True


def _fold(op: Any) -> tuple[bool, Any]:
    operands = list(op.operands())
    if not operands or not all(isinstance(o, Const) and _foldable(o.value) for o in operands):
        return False, None
    values = [o.value for o in operands]
    if isinstance(op, BinOp):
        if op.op == "pow" and type(values[1]) is int and abs(values[1]) > 64:
            return False, None
        if op.op in ("mul", "lshift") and any(type(v) in (str, bytes) for v in values):
            return False, None
        if op.op == "lshift" and type(values[1]) is int and values[1] > _MAX_SIZE:
            return False, None
        function = getattr(operator, op.op, None)
    elif isinstance(op, UnaryOp) or isinstance(op, Compare) and op.op in _FOLDABLE_COMPARE:
        function = getattr(operator, op.op, None)
    else:
        return False, None
    if function is None:
        return False, None
    try:
        result = function(*values)
    except Exception:
        return False, None  # the operation raises: it must raise at run time
    if not _foldable(result) or not _small(result):
        return False, None
    return True, result


def optimize(ir: FunctionIR) -> list[str]:
    """Optimise ``ir`` in place; returns one line per rewrite made."""
    done: list[str] = []
    changed = True
    while changed:
        changed = False
        for stmt in list(walk(ir)):
            if not isinstance(stmt, Assign) or len(stmt.results) != 1:
                continue
            if not isinstance(stmt.op, (BinOp, UnaryOp, Compare)):
                continue
            ok, value = _fold(stmt.op)
            if not ok:
                continue
            result = stmt.results[0]
            assert isinstance(result, Temp)
            constant = Const(value, stmt.pos)
            stmt.op = Copy(constant)
            replace_uses(ir, result, constant)
            done.append(f"line {stmt.pos.lineno}: folded {result!r} to {value!r}")
            changed = True
    return done
