"""Owners: the compiled code of every plugin stack with the same configuration.

A context (``splice.runtime.context``) runs one stack of plugin objects; what it builds is
valid for any stack of plugins of the same classes whose compile-time hooks behave the same.
A plugin says so with ``Plugin.cache_token()``: a hashable value naming everything its
compile-time hooks read (``None``, the default: nothing is shared, the plugin object owns
its code). The contexts of stacks with equal ``OwnerKey``s share one ``Owner``, which keeps
the code they built, so a new ``Tracer()`` with the same options compiles nothing that an
earlier one compiled.

What an owner keeps is code *not bound to a context*: a ``SharedCode`` is a code object and a
template of its hidden cells (``splice.runtime.sharing`` makes it from a context's
``CompiledCode`` and binds it to another context: the table, call sites and plugin state
are the other context's). Code whose hidden values cannot all be told apart as shared or
belonging to the building context is not shared (``SharedCode.template`` is ``None``): each
context builds its own, as without a token.

Soundness: an owner is found by the plugins' classes, their tokens and the context's
compile switches derived from the plugin objects (``implicit_calls``, ``strict``, the
compile parameters), so two contexts share code only where their builds would take the same
decisions, given that each token names what its plugin's compile-time hooks read (the
plugin's promise, checked for the shipped plugins by tests). Owners live for the process:
a fresh plugin per run is the case they exist for. Entries are keyed weakly by code object,
as in every ``CodeCache``, so they go with the functions.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from splice.cache.code_cache import CodeCache
from splice.errors import UnsupportedError
from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Owner", "OwnerKey", "SharedCode", "owner_for"]

#: (the plugins' classes with their tokens, outermost first; the context's compile switches)
OwnerKey = tuple[tuple[tuple[type, Hashable], ...], Hashable]


@dataclass(frozen=True, slots=True)
class SharedCode:
    """A code object as any context of its owner can run it.

    ``template`` maps each hidden cell's name to how a context gets its value: ``("value",
    v)`` (the same object in every context) or a path to follow from the binding context
    (``splice.runtime.sharing``); ``None`` when the code cannot be shared (each context
    builds its own). Nothing here refers to the context that built the code: an owner
    lives for the process and must not keep a plugin (and what it recorded) alive."""

    code: types.CodeType
    original_freevars: tuple[str, ...]
    template: dict[str, tuple[Any, ...]] | None


class Owner:
    """The code shared by the contexts of one ``OwnerKey``."""

    def __init__(self, key: OwnerKey) -> None:
        self.key = key
        #: code object -> its transformed code (or why it cannot be transformed)
        self.code = CodeCache[SharedCode | UnsupportedError]()
        #: ``__init__`` code object -> its code compiled as a constructor
        self.constructors = CodeCache[SharedCode | UnsupportedError]()

    def __repr__(self) -> str:
        names = ", ".join(cls.__name__ for cls, _ in self.key[0])
        return f"<splice owner {names}: {len(self.code)} functions>"


class _Registry:
    """Every owner of the process, by key."""

    def __init__(self) -> None:
        self._owners: dict[OwnerKey, Owner] = {}
        self._lock = threading.Lock()

    def get(self, key: OwnerKey) -> Owner:
        owner = self._owners.get(key)
        if owner is None:
            with self._lock:
                owner = self._owners.setdefault(key, Owner(key))
        return owner

    def clear(self, classes: tuple[type, ...] = ()) -> None:
        """Forget the owners (of stacks holding any of ``classes``; all without)."""
        with self._lock:
            for key in list(self._owners):
                if not classes or any(cls in classes for cls, _ in key[0]):
                    del self._owners[key]

    def __len__(self) -> int:
        return len(self._owners)


_registry = _Registry()


def owner_for(key: OwnerKey) -> Owner:
    """The owner of ``key`` (made on first use; kept for the process)."""
    return _registry.get(key)


def forget_owners(classes: tuple[type, ...] = ()) -> None:
    """Drop the shared code of the owners of stacks holding any of ``classes`` (of every
    owner without), for example after a plugin class's hooks were changed at run time."""
    _registry.clear(classes)
