"""The optimisation stage of a code instance (between ``plugin.typed`` and
``plugin.optimized``).

What exists:

* folding of operators whose operands are all literal constants of builtin value types
  (``2 * 3``, ``-1.5``, ``"a" + "b"``), repeated as folded results feed others. Such an
  operation runs no user code and depends on no binding, so the fold is valid for every
  execution; an operation that raises (``1 / 0``) or would build a large value is left alone;
* removal of dead reads of guarded definitions: an unused ``load`` of a global, or an unused
  attribute read on a plain module, whose value inference resolved to a constant through a
  ``global`` edge (what is left behind when a ``typed`` pass replaced the callee of
  ``math.sin(x)``). Such a read is a dict lookup that runs no user code, and the instance's
  guard checks on entry that the binding is still there. (If another thread deleted the
  binding while the instance runs, the removed read would not raise ``NameError`` or
  ``AttributeError``; nothing else can differ.)

Everything else DESIGN.md lists for this stage (guarded direct calls, inlining, general dead
code removal) is not done yet.
"""

from __future__ import annotations

import operator
import types
from typing import Any

from splice.cache.guards import MISSING, lookup_global
from splice.ir.nodes import (
    Assign,
    BinOp,
    Compare,
    Const,
    Copy,
    FunctionIR,
    GetAttr,
    Load,
    Temp,
    UnaryOp,
    Var,
)
from splice.ir.tools import local_names, locations, replace_uses, walk
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["optimize"]

_VALUE_TYPES = (bool, int, float, complex, str, bytes)
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


def optimize(ir: FunctionIR, inference: Any = None) -> list[str]:
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
    if inference is not None and ir.function is not None:
        done.extend(remove_dead_reads(ir, inference))
    return done


def _global_edges(inference: Any) -> set[tuple[int, str]]:
    return {(id(e.target), e.name) for e in getattr(inference, "edges", ())
            if e.kind == "global" and isinstance(e.name, str)}


def _guarded_module(ir: FunctionIR, operand: Any, edges: set[tuple[int, str]],
                    local: set[str]) -> types.ModuleType | None:
    """The plain module ``operand`` denotes through a guarded global (or as a constant)."""
    value: Any = MISSING
    if isinstance(operand, Const):
        value = operand.value
    elif isinstance(operand, Temp) and getattr(operand.annotation, "is_const", False):
        value = operand.annotation.value
    elif isinstance(operand, Var) and operand.name not in local:
        namespace = ir.function.__globals__
        if (id(namespace), operand.name) in edges:
            value = lookup_global(namespace, operand.name)
    return value if type(value) is types.ModuleType else None


def remove_dead_reads(ir: FunctionIR, inference: Any) -> list[str]:
    """Remove unused reads of guarded globals and module attributes (see the module
    docstring); returns one line per removal."""
    edges = _global_edges(inference)
    local = local_names(ir)
    done: list[str] = []
    changed = True
    while changed:
        changed = False
        used: set[Temp] = set()
        for stmt in walk(ir):
            used.update(o for o in stmt.operands() if isinstance(o, Temp))
            used.update(r.value for r in stmt.regions() if isinstance(r.value, Temp))
        for loc in list(locations(ir)):
            stmt = loc.stmt
            if not isinstance(stmt, Assign) or len(stmt.results) != 1:
                continue
            result = stmt.results[0]
            if result in used or not getattr(result.annotation, "is_const", False):
                continue
            op = stmt.op
            if isinstance(op, Load):
                namespace = ir.function.__globals__
                removable = op.var.name not in local and \
                    (id(namespace), op.var.name) in edges and \
                    lookup_global(namespace, op.var.name) is not MISSING
            elif isinstance(op, GetAttr):
                module = _guarded_module(ir, op.obj, edges, local)
                removable = module is not None and op.name in module.__dict__ and \
                    (id(module.__dict__), op.name) in edges
            else:
                continue
            if removable:
                loc.block.remove(stmt)
                done.append(f"line {stmt.pos.lineno}: removed unused {result!r}")
                changed = True
    return done
