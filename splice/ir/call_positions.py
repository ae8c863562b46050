"""Where CPython places a call of an attribute, ``obj.m(args)``, and the attribute read.

Tracebacks, ``pdb`` and coverage report an instruction's position, so code that splits a
call from its callee (code generation's hidden temporaries, the method lookups the call
router inserts) must give each part the position CPython's compiler gives it:

* the read of an attribute that spans several lines is placed at the attribute's own name
  (``update_start_location_to_match_attr``);
* a call CPython compiles as a method call (``LOAD_METHOD``/``CALL``,
  ``maybe_optimize_method_call``) starts there too when the call starts on another line;
  any other call of an attribute is a plain call (``LOAD_ATTR`` then ``CALL``), placed at the
  whole call's start. A method call needs: no ``*`` or ``**`` argument, fewer than 30
  stack items, and a receiver that is not a name the module binds by ``import`` at its top
  level (``is_import_originated``: it reads the module's symbol table by name only, so a
  local of that name in a function counts too).

The rules are the same on 3.11, 3.12 and 3.13. This module is the one place that states them;
``splice.ir.codegen`` and ``splice.compiler.route_calls`` both ask it.
"""

from __future__ import annotations

from splice.ir.nodes import Call, GetAttr, Pos, Starred, Var
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["attribute_position", "call_position", "is_method_call", "method_call_position"]


def is_method_call(get: GetAttr, call: Call, module_imports: frozenset[str]) -> bool:
    """Whether CPython compiles ``call`` of the attribute ``get`` as a method call.
    ``module_imports``: the names the module binds by ``import`` at top level."""
    keywords = len(call.keywords)
    return len(call.args) + keywords + (keywords != 0) < 30 and \
        not any(isinstance(arg, Starred) for arg in call.args) and \
        all(keyword.name is not None for keyword in call.keywords) and \
        not (isinstance(get.obj, Var) and get.obj.name in module_imports)


def method_call_position(call_pos: Pos, attribute: Pos, name: str) -> Pos:
    """Where CPython places a method call (``is_method_call``) of attribute ``name``
    spanning ``attribute``, made by a call spanning ``call_pos``: from the attribute's own
    name when the call starts on another line than the attribute ends, to the call's end."""
    if call_pos.lineno == attribute.end_lineno or len(name) > attribute.end_col_offset:
        return call_pos
    start_col = attribute.end_col_offset - len(name)
    end_col = call_pos.end_col_offset
    if call_pos.end_lineno == attribute.end_lineno:
        end_col = max(end_col, start_col)
    return Pos(attribute.end_lineno, start_col, max(call_pos.end_lineno, attribute.end_lineno),
               end_col)


def call_position(call_pos: Pos, attribute: Pos, get: GetAttr, call: Call,
                  module_imports: frozenset[str]) -> Pos:
    """Where CPython places ``call`` of the attribute ``get`` (spanning ``attribute``)."""
    if not is_method_call(get, call, module_imports):
        return call_pos
    return method_call_position(call_pos, attribute, get.name)


def attribute_position(pos: Pos, name: str) -> Pos:
    """Where CPython places the instruction reading attribute ``name`` of the expression
    spanning ``pos``: the attribute's own name when the expression spans several lines,
    else the whole span."""
    return method_call_position(pos, pos, name)
