"""Call sites of global names: an inline cache instead of a dispatch-table lookup.

Most calls name a module-level function, a class or a builtin: ``fib(n - 1)``,
``Vec(x, y)``, ``len(s)``. Such a site gets a ``Site``, and the call becomes one expression::

    (@site.entry if fib is @site.callee else @site.miss(fib))(n - 1)

``site.callee`` is the object the name was bound to when the site last looked it up, and
``site.entry`` what the context calls instead. A site starts empty (its callee a value no
name is ever bound to); a miss looks the callee up in the context's dispatch table and, when
the table keeps the entry, caches it and registers the site with the table, which empties
it again whenever it drops that entry (the callee's code or defaults changed, a sweep, a
full collection for classes). So a rebound name misses at once, and a changed definition
empties the site before the next call: the site never calls an entry the table would not.

Being one expression, the call's arguments nest in it as they do natively, so no argument
lives in a hidden local (objects are freed when the callee lets go of them).

Threads: the test and the read of ``site.entry`` are a few instructions none of which lets
CPython 3.11 switch threads (it does so only at calls, backward jumps and function starts),
and neither do the two stores of ``miss``; so a thread never pairs one callee with another's
entry. Emptying a site happens between such instructions too (no allocation among them can
start a collection, whose callback empties sites), so it also lets go of the entry: an
empty site holding its last entry would keep what the entry holds alive (a class the
program dropped, freed natively by the next full collection) until the site runs again.
"""

from __future__ import annotations

import weakref
from typing import Any

from splice.keys import hashed_by_identity
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["EMPTY", "Site"]


class _Empty:
    """The callee of an empty site: no name is ever bound to it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<empty site>"


EMPTY: Any = _Empty()


class Site:
    """The inline cache of one call site (or of one global name in one function)."""

    __slots__ = ("callee", "entry", "table", "__weakref__")
    #: the name of the hidden cell in generated code: ``@site``
    __name__ = "site"

    def __init__(self, table: Any) -> None:
        self.callee: Any = EMPTY
        self.entry: Any = None
        #: the dispatch table (weakly: the table's registry holds sites weakly too)
        self.table: weakref.ref[Any] = weakref.ref(table)

    def miss(self, callee: Any) -> Any:
        """The entry for ``callee`` (the site's name is bound to something else than its
        cached callee, or it is empty), cached when the table keeps it."""
        table = self.table()
        if table is None:  # pragma: no cover - code outliving its context
            raise RuntimeError("splice: a call site outlived its context")
        entry = table.unkept_entry(callee)
        if entry is not None:
            # never kept (it would keep the object alive), and not hashed (a Python
            # ``__hash__`` would run where CPython runs none)
            return entry
        if not hashed_by_identity(callee):  # (or unhashable): resolved on every call
            return table.slow_entry(callee)
        try:
            entry = table.fast[callee]
        except KeyError:
            entry = table[callee]  # resolves it (cached by the table if it can be)
        self._cache(table, callee, entry)
        return entry

    def fill(self, callee: Any) -> None:
        """Cache ``callee``'s entry if the table has one already (a site made while a
        function is compiled, for the value its name has then)."""
        table = self.table()
        if table is None or table.unkept(callee) or not hashed_by_identity(callee):
            return  # (never kept, and not hashed)
        entry = table.fast.get(callee)
        if entry is not None:
            self._cache(table, callee, entry)

    def _cache(self, table: Any, callee: Any, entry: Any) -> None:
        """Cache ``entry`` for ``callee`` while the table keeps it as ``callee``'s entry."""
        fast = table.fast
        if fast.get(callee) is entry:
            # register first: a drop between here and the check below empties the site
            table.register_site(callee, self)
            self.entry = entry
            self.callee = callee
            if fast.get(callee) is not entry:
                self.empty()

    def empty(self) -> None:
        """Forget the cached callee and its entry (the table dropped it); the next call
        misses."""
        self.callee = EMPTY
        self.entry = None

    def __repr__(self) -> str:
        return f"<site {self.callee!r} -> {self.entry!r}>"
