"""What inference gives back: ``Inference`` (the typed IR, the types, the edges...), the
``Edge`` kinds, and the ``InferenceParams`` knobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from splice.infer.lattice import NEVER, Abstract
from splice.ir import nodes as N
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)


@dataclass(frozen=True)
class InferenceParams:
    """Knobs of inference.

    ``union_width``: members a union keeps before widening. ``const_prop``: "none" (no
    constant folding), "pure" (fold pure builtins and operators, specialise callees on
    classes only) or "aggressive" (also specialise callees on constant arguments).
    ``max_depth``: interprocedural call depth. ``max_specializations``: specialisations of
    one function before its arguments are widened to their classes, then to ``ANY``.
    ``max_rounds``: recursion fixpoint rounds before a recursive result becomes ``ANY``.
    ``attribute_rounds``: whole-graph rounds while attribute tables still grow (then the
    attributes are ``ANY``).
    ``loop_widen_after``: loop rounds before values are widened. ``max_statements``: callees
    larger than this are not entered. ``time_budget``: seconds for one top-level ``infer``;
    beyond it calls are no longer entered (results ``ANY``).
    """

    union_width: int = 4
    const_prop: str = "pure"
    max_depth: int = 12
    max_specializations: int = 6
    max_rounds: int = 4
    attribute_rounds: int = 12
    loop_widen_after: int = 3
    max_statements: int = 3000
    time_budget: float = 2.0


@dataclass(frozen=True, eq=False)
class Edge:
    """An assumption inference relied on: ``kind`` "callee" (target: a Python function whose
    inference was used), "global" (target: a module's globals dict, ``name``: the global
    name, whose object was relied on), "global class" (the same, whose class only was
    relied on: the class of the object, item by item for a short tuple), "attribute"
    (target: a class, ``name``: the attribute found along its MRO), "attribute class"
    (the same, whose class only was relied on) or "cell" (target: a function, ``name``:
    one of its free variables, whose cell holds the function or class inference read)."""

    kind: str
    target: Any
    name: str | None = None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Edge) and other.kind == self.kind
                and other.target is self.target and other.name == self.name)

    def __hash__(self) -> int:
        return hash((self.kind, id(self.target), self.name))

    def __repr__(self) -> str:
        target = getattr(self.target, "__qualname__", None) or type(self.target).__name__
        return f"Edge({self.kind}, {target}{', ' + self.name if self.name else ''})"


class Inference:
    """The result of inferring one function for given argument types.

    ``ir``: a copy of the lowered IR whose temps carry their abstract values
    (``Temp.annotation``) and whose call ops carry their resolved callee (``Call.callee``),
    made on first access; ``types``: every temp of ``ir`` with its abstract value;
    ``callees``: call statement id → callee object; ``edges``: the assumptions made;
    ``callee_inferences``: the callee specialisations used; ``time``: seconds spent
    (callees included); ``return_type``, and ``yield_type`` for generators.
    """

    def __init__(self, function: Any, argtypes: tuple[Abstract, ...],
                 base: N.FunctionIR) -> None:
        self.function = function
        self.argtypes = argtypes
        #: the lowered IR inference ran over (shared with other specialisations)
        self.base = base
        #: abstract values of ``base``'s temps
        self.base_types: dict[N.Temp, Abstract] = {}
        self.return_type: Abstract = NEVER
        self.yield_type: Abstract = NEVER
        self.edges: list[Edge] = []
        self.callees: dict[int, object] = {}
        self.callee_inferences: list[Inference] = []
        self.time = 0.0
        self._ir: N.FunctionIR | None = None
        self._types: dict[N.Temp, Abstract] = {}

    @property
    def ir(self) -> N.FunctionIR:
        """The typed IR (a copy of ``base`` with annotations and callees)."""
        if self._ir is None:
            self._materialize()
        assert self._ir is not None
        return self._ir

    @property
    def types(self) -> dict[N.Temp, Abstract]:
        """Every temp of ``ir`` with its abstract value."""
        if self._ir is None:
            self._materialize()
        return self._types

    def _materialize(self) -> None:
        # the structure is copied; constants, callees, origin and function are shared
        temps = list(self.base_types)
        ir, copies = N.copy_ir((self.base, temps))
        self._types = {}
        for temp, twin in zip(temps, copies, strict=True):
            value = self.base_types[temp]
            twin.annotation = value
            self._types[twin] = value
        for stmt in _walk_scopes(ir):
            if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.Call):
                stmt.op.callee = self.callees.get(stmt.id)
        self._ir = ir

    def all_edges(self) -> list[Edge]:
        """The edges of this inference and of every callee specialisation it used
        (transitively): everything its types rely on."""
        seen: dict[Edge, None] = {}
        done: set[int] = set()
        todo: list[Inference] = [self]
        while todo:
            inference = todo.pop()
            if id(inference) in done:
                continue
            done.add(id(inference))
            seen.update(dict.fromkeys(inference.edges))
            todo.extend(inference.callee_inferences)
        return list(seen)

    def __repr__(self) -> str:
        name = getattr(self.function, "__qualname__", self.function)
        args = ", ".join(map(str, self.argtypes))
        return f"<Inference {name}({args}) -> {self.return_type}>"

    def __str__(self) -> str:
        from splice.ir.printer import format_function
        return format_function(self.ir) + f"\n  ::{self.return_type}"


def _walk_scopes(ir: N.FunctionIR) -> Any:
    """Statements of ``ir`` and of its comprehensions (inferred inline)."""
    for stmt in ir.walk():
        yield stmt
        if isinstance(stmt, N.Assign) and isinstance(stmt.op, N.MakeComprehension):
            yield from _walk_scopes(stmt.op.fn)
