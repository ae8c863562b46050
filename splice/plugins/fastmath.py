"""FastMath: replace math functions by cheaper ones where inference proves a float argument.

::

    def fast_sin(x):                      # good enough for this program
        ...

    plugin = FastMath({math.sin: fast_sin, math.sqrt: fast_sqrt})
    ci = splice.compile(plugin, simulate, float, int)
    splice.invoke(ci, 0.5, 1000)          # simulate with math.sin(x) -> fast_sin(x)

By default each rewritten call checks, where it is made, that the program would still call
the mapped function there with a float (a callee may rebind ``math.sin`` while the caller
runs); ``FastMath(..., world_age=True)`` checks that only when a call starts, as Julia's
world age does (see ``splice.Plugin.world_age``).

The rewrite happens in the ``typed`` stage: a call is rewritten only when inference
resolved its callee to a mapped function and inferred *every* positional argument to be
exactly ``float`` (so never for ``int | float``, ``Any``, a float subclass, or calls with
``*args`` or keywords). ``FastMath(..., speculate=True)`` also rewrites a call whose
arguments may each be a float (``Any``, ``int | float``: numbers read from lists, attributes
inference does not know), behind a check at the call that each one is exactly a float
(``splice.ir.typed_tools.TypedCall.speculate``; under world age too). The replacements
themselves are never entered under the plugin (``recurse``), so a replacement may call the
original (for a range reduction, say) without being rewritten into calling itself.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splice.plugin import Plugin
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.ir.nodes import FunctionIR

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["FastMath", "Rewrite"]


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One call rewritten by FastMath."""

    function: str
    line: int
    original: str
    replacement: str


class FastMath(Plugin):
    """Replace calls of mapped functions (``{math.sin: fast_sin}``) where every argument
    is inferred ``float``. ``rewrites`` lists what was rewritten."""

    def __init__(self, replacements: Mapping[Callable[..., Any], Callable[..., Any]], *,
                 world_age: bool = False, speculate: bool = False) -> None:
        #: True: a call keeps the definitions it started with (``splice.Plugin.world_age``):
        #: the replacements are checked when the call starts, not at each use
        self.world_age = world_age
        #: True: also rewrite calls whose arguments may be floats (read from a list, an
        #: attribute inference does not know), checking at the call that each one is
        self.speculate = speculate
        # by identity: a callable's own ``__eq__``/``__hash__`` must not decide
        self.replacements: dict[int, tuple[Callable[..., Any], Callable[..., Any]]] = {
            id(original): (original, replacement)
            for original, replacement in replacements.items()}
        self._replacement_ids = frozenset(id(r) for _, r in self.replacements.values())
        #: the rewrites this plugin's hooks made, as ``optimized`` found them (after splice
        #: checked them, or undid one it cannot check); the statements ``typed`` replaced
        #: the callee of, until then
        self._rewrites: list[Rewrite] = []
        self._replaced: set[int] = set()

    def cache_token(self) -> Hashable:
        """The mapping (by identity: a tuple compares functions by ``is``), ``world_age``
        and ``speculate``: what ``typed`` and ``recurse`` read. (``rewrites`` is a record.)"""
        return (tuple(self.replacements.values()), self.world_age, self.speculate)

    def recurse(self, fn: Callable[..., Any]) -> bool:
        """Every function is entered except the replacements (they stay as written)."""
        return id(fn) not in self._replacement_ids

    def typed(self, ir: FunctionIR) -> None:
        """Rewrite ``f(x, ...)`` to ``replacement(x, ...)`` where ``f`` is mapped and every
        argument is inferred exactly ``float`` (with ``speculate``: or may be one, checked
        at the call)."""
        # (loaded here: a run whose instances come from the cache runs no hook)
        from splice.infer.lattice import Exact
        from splice.ir.typed_tools import typed_calls

        exactly_float = Exact(float)
        for call in typed_calls(ir):
            callee = call.callee
            if callee is None:
                continue
            found = self.replacements.get(id(callee))
            if found is None or found[0] is not callee:
                continue
            if not call.simple or not call.args:
                continue
            types = call.arg_types
            if all(t <= exactly_float for t in types):
                call.callee = found[1]
            elif self.speculate and all(exactly_float <= t for t in types):
                call.speculate(callee, found[1], (float,) * len(types))
            else:
                continue
            self._replaced.add(call.stmt.id)

    def optimized(self, ir: FunctionIR) -> None:
        """Record the rewrites of ``typed`` that hold after splice's checks (a replacement
        it cannot check where the call is made is undone before this hook)."""
        if not self._replaced:
            return
        from splice.ir.tools import locations

        self._rewrites.extend(self._rewrites_in(ir, self._replaced))
        self._replaced.difference_update(loc.stmt.id for loc in locations(ir))

    @property
    def rewrites(self) -> list[Rewrite]:
        """Every call rewritten: by this plugin's hooks (those that hold after splice's
        checks), and in the instances its context took from what an equally configured
        ``FastMath`` built (their optimised IR holds the replacements: docs/cache.md)."""
        found = list(self._rewrites)
        for ci in self.context.instances:
            if ci.origin != "built":
                found.extend(self._rewrites_in(ci.optimized))
        return found

    def _rewrites_in(self, ir: FunctionIR, among: set[int] | None = None) -> list[Rewrite]:
        """The calls of optimised ``ir`` that call a replacement (``among``: only those
        statements)."""
        from splice.ir.typed_tools import typed_calls

        originals = {id(r): o for o, r in self.replacements.values()}
        return [Rewrite(ir.qualname, call.stmt.pos.lineno, _name(original), _name(call.callee))
                for call in typed_calls(ir)
                if (original := originals.get(id(call.callee))) is not None
                and (among is None or call.stmt.id in among)]


def _name(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{module}.{qualname}" if module and module != "builtins" else qualname
