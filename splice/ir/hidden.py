"""Objects inserted into generated code, loaded as constants instead of closure cells.

Codegen refers to an inserted object (a plugin's callee, splice's dispatch table) by a hidden
name ``@name``. Compiled as a closure cell, that name would show in ``locals()`` and
``vars()``; so wherever the compiler cannot fold it, the name is replaced by a unique
placeholder string constant, and after compilation the placeholder is swapped for the
object in ``co_consts``. Positions where CPython's optimiser folds or tests constants
(operators on constants, truth tests, displays) keep the cell, and so do objects that could
lead back to the function (see ``_inert``).
"""

from __future__ import annotations

import ast
import itertools
import types

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

_PREFIX = "\x00splice-hidden-"
_counter = itertools.count()


class _Replacer(ast.NodeTransformer):
    def __init__(self, cells: dict[str, object]) -> None:
        self.cells = cells
        self.placeholders: dict[str, object] = {}
        self.kept: set[str] = set()

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field, old in ast.iter_fields(node):
            if isinstance(old, list):
                new_list = []
                for item in old:
                    if isinstance(item, ast.AST):
                        item = self._child(node, field, item)
                    new_list.append(item)
                old[:] = new_list
            elif isinstance(old, ast.AST):
                setattr(node, field, self._child(node, field, old))
        return node

    def _child(self, parent: ast.AST, field: str, child: ast.AST) -> ast.AST:
        if (isinstance(child, ast.Name) and child.id in self.cells
                and isinstance(child.ctx, ast.Load)):
            if not _safe(parent, field) or not _inert(self.cells[child.id]):
                self.kept.add(child.id)
                return child
            placeholder = f"{_PREFIX}{next(_counter)}-{child.id}"
            self.placeholders[placeholder] = self.cells[child.id]
            return ast.copy_location(ast.Constant(placeholder), child)
        result: ast.AST = self.visit(child)
        return result


_INERT_ATOMS = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis))


def _inert(value: object) -> bool:
    """Whether ``value`` may live in a code object's constants. Code objects are not seen
    by the cycle collector, so a constant that leads back to the function (a dispatch
    table holding it, a plugin holding its tables) would keep everything alive for good:
    only classes, builtin functions and plain values qualify; the rest stay cells."""
    if isinstance(value, (type, *_INERT_ATOMS)):
        return True
    if isinstance(value, types.BuiltinFunctionType):
        return value.__self__ is None or isinstance(value.__self__, types.ModuleType)
    if type(value) is tuple or type(value) is frozenset:  # (no ``in``: no class's __eq__)
        return all(_inert(item) for item in value)
    return False


def _safe(parent: ast.AST, field: str) -> bool:
    """Whether a constant in ``parent.field`` is loaded as it is (never folded or tested)."""
    if isinstance(parent, (ast.Call, ast.keyword)):
        return True
    if isinstance(parent, ast.Compare | ast.Attribute | ast.ExceptHandler):
        return True
    if isinstance(parent, ast.Subscript):
        return field == "value" and not isinstance(parent.slice, ast.Constant | ast.Tuple
                                                   | ast.Slice)
    if isinstance(parent, ast.Assign | ast.Return | ast.AugAssign | ast.AnnAssign
                  | ast.NamedExpr):
        return field == "value"
    return False


def to_constants(tree: ast.AST, cells: dict[str, object]) -> tuple[dict[str, object], set[str]]:
    """Replace loads of the hidden names ``cells`` in ``tree`` (in place) by placeholder
    constants where that is safe. Returns (placeholder -> object, names still loaded as
    cells)."""
    replacer = _Replacer(cells)
    replacer.visit(tree)
    return replacer.placeholders, replacer.kept


def substitute(code: types.CodeType, placeholders: dict[str, object]) -> types.CodeType:
    """``code`` (and its nested code objects) with each placeholder constant swapped for its
    object."""
    if not placeholders:
        return code
    consts = []
    changed = False
    for const in code.co_consts:
        new = const
        if isinstance(const, str) and const in placeholders:
            new = placeholders[const]
        elif isinstance(const, types.CodeType):
            new = substitute(const, placeholders)
        changed = changed or new is not const
        consts.append(new)
    return code.replace(co_consts=tuple(consts)) if changed else code
