"""Walking a syntax tree from splice's own code: ``ast.walk`` without its import.

``ast.walk`` runs ``from collections import deque`` at each call, through the program's
``builtins.__import__`` (a program may replace it, or ``sys.modules['collections']``, as
CPython's test_ast does), and splice compiles functions while the program runs. These
need no import, and ``children`` returns a list (a pass that walks every node of
generated code several times pays for no generators: part of a first call's cost).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["children", "walk"]

_AST = ast.AST


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list."""
    found: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, _AST))
        elif isinstance(value, _AST):
            found.append(value)
    return found


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and every node under it (depth first; ``ast.walk``'s order is breadth
    first, which no caller needs)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))
