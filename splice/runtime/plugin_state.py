"""What splice keeps for each plugin object: one ``PluginState``, with declared fields.

It sits in the plugin's ``__dict__`` under ``_splice`` and holds the order the plugin was
made in, the contexts it keeps (``splice.runtime.registry`` says which and why they are
kept on the plugin), how many times it was invalidated, and the table of intercepted
originals its ``recurse_call`` reads (``Context._intercept`` fills it; the C form of
``recurse_call``, ``splice/runtime/_recurse.c``, reads ``_splice`` and ``bypass``).

A plugin's state is not part of what it pickles (``Plugin.__getstate__`` leaves it out): a
copy, in this process or another, starts with a state of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from splice.forks import fork_safe_lock
from splice.pristine import BUILTINS

if TYPE_CHECKING:
    from splice.hooks import Hooks

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["STATE", "PluginState", "made", "plugins_of", "state_of"]

#: the name of a plugin's state in its ``__dict__`` (left out when a plugin is pickled)
STATE = "_splice"

_serials = itertools.count(1)
_claims_lock = fork_safe_lock()

#: a stack's configuration: its plugins' tokens, and their invalidation counts
Configuration = tuple[tuple[Hashable, ...], tuple[int, ...]]


class PluginState:
    """What splice keeps for one plugin object."""

    __slots__ = ("bypass", "bypass_owner", "compositions", "contexts", "generation",
                 "serial", "was_reached")

    def __init__(self) -> None:
        #: the order plugins were made in: a stack's newest plugin keeps its context
        self.serial = next(_serials)
        #: the contexts this plugin keeps (as its stack's newest), by the ids of the
        #: stack's plugins: (configuration, context)
        self.contexts: dict[tuple[int, ...], tuple[Configuration, Any]] = {}
        #: how many times ``Plugin.invalidate`` was called: part of the configuration
        self.generation = 0
        #: intercepted target -> its original's entry, read by ``recurse_call`` (filled by
        #: ``bypass_owner``, the first context that intercepts for this plugin alone)
        self.bypass: dict[Any, Any] = {}
        #: a ``splice.runtime.context.Context`` (this module is below it)
        self.bypass_owner: Any = None
        #: the compositions this plugin ran in (``splice.explain`` reports them): their
        #: names and the records of what they reached, with a weak reference to their
        #: context; records of compositions whose context is gone fold into
        #: ``was_reached`` (by name: their size is bounded by the callees reached)
        self.compositions: list[tuple[Any, str, dict[Any, tuple[bool, str]]]] = []
        self.was_reached: dict[str, dict[Any, tuple[bool, str]]] = {}

    def ran_in(self, context: Any, name: str, records: dict[Any, tuple[bool, str]]
               ) -> None:
        """Keep the records of what the composition ``context`` (called ``name``)
        reaches, for ``splice.explain`` of this plugin (the context itself is kept
        weakly: a composition's context lives as long as its newest plugin)."""
        import weakref

        with _claims_lock:
            self._fold_gone()
            self.compositions.append((weakref.ref(context), name, records))

    def reached_in_compositions(self) -> list[tuple[str, dict[Any, tuple[bool, str]]]]:
        """(name, records) of each composition this plugin ran in, by name; compositions of
        the same name (a plugin made anew for each run) merged."""
        with _claims_lock:
            self._fold_gone()
            found: dict[str, dict[Any, tuple[bool, str]]] = {
                name: dict(records) for name, records in self.was_reached.items()}
            for _, name, records in self.compositions:
                found.setdefault(name, {}).update(records)
        return list(found.items())

    def _fold_gone(self) -> None:
        live = []
        for entry in self.compositions:
            if entry[0]() is None:
                self.was_reached.setdefault(entry[1], {}).update(entry[2])
            else:
                live.append(entry)
        self.compositions = live

    def claim_bypass(self, context: Any) -> bool:
        """Make ``context`` the one that fills ``bypass``, unless another one was first;
        whether it is the one."""
        with _claims_lock:
            if self.bypass_owner is None:
                self.bypass_owner = context
            return self.bypass_owner is context

    def invalidate(self) -> None:
        """Forget the code compiled under this plugin: its contexts, and the table of
        originals its first intercepting context filled."""
        self.generation += 1
        self.contexts = {}
        self.bypass = {}
        self.bypass_owner = None
        self.compositions = []
        self.was_reached = {}


def state_of(plugin: Hooks) -> PluginState:
    """``plugin``'s splice state, made on first use (``Plugin.__new__`` makes it, so that
    serials follow the order plugins are made in; a plugin made some other way gets one
    when first seen here)."""
    owned = plugin.__dict__
    state: PluginState | None = owned.get(STATE)
    if state is None:
        state = owned.setdefault(STATE, PluginState())
    return state


def made(plugin: Hooks) -> int:
    """``plugin``'s serial: it grows with each plugin made."""
    return state_of(plugin).serial


def plugins_of(plugin: Hooks) -> tuple[Hooks, ...]:
    """The plugins a plugin stands for (a composition stands for several)."""
    plugins: tuple[Hooks, ...] | None = getattr(plugin, "plugins", None)
    return plugins if isinstance(plugins, tuple) else (plugin,)
