"""Type-aware compiler tools, for ``typed`` and ``optimized`` plugin passes.

After inference every ``Temp`` carries its abstract value in ``Temp.annotation`` (a
``splice.infer.lattice.Abstract``); these helpers read it and match calls by callee and
argument types::

    def typed(self, ir):
        for call in match_calls(ir, math.sin, float):     # math.sin(x) with x: float
            call.callee = fast_sin
        for call in typed_calls(ir):
            print(call.callee, call.arg_types, call.result_type)

A callee is what inference resolved: the call op's ``callee`` when inference set one, else
the abstract value of the called operand when it is a constant. Inference proves that for
the instance's argument types, under its edges (a global or attribute it read, checked
when the instance is entered), so a rewrite based on it holds for every execution of the
instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from splice.infer.lattice import ANY, Abstract, Const, abstract
from splice.ir.nodes import Assign, Call, FunctionIR, Starred, Temp
from splice.ir.nodes import Const as ConstOperand
from splice.ir.tools import CallSite, Location, definitions, locations
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Speculation", "TypedCall", "match_calls", "type_of", "typed_calls"]


def type_of(operand: Any) -> Abstract:
    """The abstract value of an operand: a temp's inferred annotation (``Any`` if it has
    none), a constant's value, ``Any`` for a name read when the op runs."""
    if isinstance(operand, Starred):
        return ANY
    if isinstance(operand, Temp):
        annotation = operand.annotation
        return annotation if isinstance(annotation, Abstract) else ANY
    if isinstance(operand, ConstOperand):
        return Const(operand.value)
    return ANY


@dataclass(frozen=True)
class Speculation:
    """What a ``typed`` hook's speculated replacement expects (``TypedCall.speculate``):
    the callee, and the exact class of each positional argument (None: as inferred)."""

    expected: Any
    argtypes: tuple[type, ...] | None


class TypedCall(CallSite):
    """A call statement with its types: ``%r = call f(a, b, k=c)``. What it shares with
    ``splice.ir.tools.CallSite`` (the statement, its op, arguments) comes from there; the
    callee is inference's."""

    def __init__(self, ir: FunctionIR, location: Location,
                 defs: dict[Temp, Assign] | None = None) -> None:
        super().__init__(ir, location, definitions(ir) if defs is None else defs)

    @property
    def callee(self) -> Any:
        """The object called, if inference resolved it (None if not)."""
        resolved = getattr(self.op, "callee", None)
        if type(resolved) is Speculation:
            return resolved.expected
        if resolved is not None:
            return resolved
        func = type_of(self.op.func)
        return func.value if func.is_const else None

    @callee.setter
    def callee(self, value: Any) -> None:
        self.op.func = ConstOperand(value, self.stmt.pos)
        if hasattr(self.op, "callee"):
            self.op.callee = value

    def speculate(self, expected: Any, replacement: Any,
                  argtypes: tuple[type, ...] | None = None) -> None:
        """Call ``replacement`` instead where the value called turns out to be ``expected``
        and each positional argument is of exactly the class ``argtypes`` names for it
        (None: of the abstract value inference gave it), else the call as the program
        wrote it. For what inference did not resolve: a callee taken from a container or
        a parameter, arguments read from a list. Compiled as a check at the call, also
        under world age (no guard at the instance's entry covers a value computed while
        it runs)."""
        if argtypes is not None and (len(argtypes) != len(self.op.args) or not all(
                isinstance(t, type) for t in argtypes)):
            raise TypeError(f"speculate: argtypes must name one class per positional "
                            f"argument ({len(self.op.args)}), got {argtypes!r}")
        self.op.func = ConstOperand(replacement, self.stmt.pos)
        # (read by the checks, splice.compiler.checks, which then make the callee the
        # replacement)
        self.op.callee = Speculation(expected, argtypes)

    @property
    def arg_types(self) -> list[Abstract]:
        """The abstract value of each positional argument (``Any`` for ``*args``)."""
        return [type_of(a) for a in self.op.args]

    @property
    def keyword_types(self) -> dict[str | None, Abstract]:
        """The abstract value of each keyword argument (key None: ``**mapping``)."""
        return {k.name: type_of(k.value) for k in self.op.keywords}

    @property
    def result_type(self) -> Abstract:
        """The abstract value of the call's result."""
        result = self.stmt.result
        return ANY if result is None else type_of(result)

    @property
    def simple(self) -> bool:
        """No ``*args``, no keywords."""
        return not self.op.keywords and not any(isinstance(a, Starred) for a in self.op.args)

    def __repr__(self) -> str:
        callee = self.callee
        name = getattr(callee, "__qualname__", None) or repr(self.op.func)
        types_ = ", ".join(str(t) for t in self.arg_types)
        return f"<TypedCall {name}({types_})::{self.result_type} at line " \
               f"{self.stmt.pos.lineno}>"


def typed_calls(ir: FunctionIR) -> list[TypedCall]:
    """Every call statement of ``ir`` (nested scopes excluded), in source order."""
    defs = definitions(ir)
    return [TypedCall(ir, loc, defs) for loc in locations(ir)
            if isinstance(loc.stmt, Assign) and isinstance(loc.stmt.op, Call)]


def match_calls(ir: FunctionIR, callee: Any, /, *argtypes: Any,
                keywords: bool = False) -> list[TypedCall]:
    """Calls of ``callee`` (by identity) whose positional arguments are exactly as many as
    ``argtypes`` and each inferred within its type (``type_of(arg) <= abstract(t)``; ``t``
    a class, a typing form or an abstract value). Calls with ``*args`` never match; calls
    with keywords match only when ``keywords`` is true."""
    wanted = [abstract(t) for t in argtypes]
    found = []
    for call in typed_calls(ir):
        if call.callee is not callee:
            continue
        if any(isinstance(a, Starred) for a in call.args):
            continue
        if call.op.keywords and not keywords:
            continue
        if len(call.args) != len(wanted):
            continue
        if all(have <= want for have, want in zip(call.arg_types, wanted, strict=True)):
            found.append(call)
    return found
