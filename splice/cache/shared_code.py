"""What an owner keeps of code built under one of its contexts, for all of them.

A ``SharedCode`` is a code object and a template of its hidden cells (``template``: how
each cell's value is found in the context the code is bound to; ``splice.runtime.sharing``
makes and follows it). A ``StoredIR`` is the IR a stage left, as data
(``splice.cache.stored_ir``) in which the objects of the building context and of the code
itself are markers the binding context resolves to its own (``splice.runtime.stored_code``):
what listings of bound code show, and what code is generated again from when a stored code
object cannot be used (curing). Neither holds anything of the context that built it: an
owner lives for the process and must not keep a plugin, or what it recorded, alive.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["SharedCode", "StoredIR"]


@dataclass(frozen=True, slots=True)
class SharedCode:
    """A code object as any context of its owner can run it.

    ``template`` maps each hidden cell's name to how a context gets its value: ``("value",
    v)`` (the same object in every context) or a path to follow from the binding context
    (``splice.runtime.sharing``); ``None`` when the code cannot be shared (each context
    builds its own). ``ir``: the routed IR it was generated from, if it could be kept."""

    code: types.CodeType
    original_freevars: tuple[str, ...]
    template: dict[str, tuple[Any, ...]] | None
    ir: StoredIR | None = None


@dataclass(frozen=True, slots=True)
class StoredIR:
    """A stage's IR as data (``splice.cache.stored_ir``): ``kept`` is None for data that
    another process can read, else the objects an in-memory table kept (decoded by
    ``ObjectTable.in_memory`` with them). Read from disk, the data is read from its entry's
    IR part when first needed (``section``, a ``splice.cache.disk.Section``, and the
    stage's name in it as ``data``)."""

    data: Any
    kept: list[Any] | None
    section: Any = None

    def read(self) -> Any:
        """The data (``ValueError`` or ``KeyError`` if the entry's IR part is corrupt)."""
        return self.data if self.section is None else self.section.get(self.data)
