"""The context of each stack of plugins, and where it is kept.

A stack of plugins (one plugin, or a composition's, outermost first) runs under one
``Context`` per configuration, made by ``context_of`` on first use and kept in the splice
state of one of its plugins (``splice.runtime.plugin_state``).

Why the state sits on the plugin and not in a table of splice's: a context holds its
plugins (its hooks call them), so a table of splice's holding contexts would keep every
plugin ever run alive, and one holding them weakly would lose a context between two runs.
What is needed is "the context lives as long as its plugins do", which a weak-keyed table
cannot express without ephemerons (CPython has none). A context kept in one plugin's state
is a reference cycle (plugin → state → context → plugin), freed by the collector once
nothing else refers to the plugin or to the context.

Which plugin keeps a stack's context: its newest (``keeper_of``), the one expected to go
first. ``compose(long_lived, Plugin()).run(f)`` then leaves nothing on ``long_lived``, and
the new plugin and the context are freed together after the call, however many times it is
made. (An older plugin the program dropped lives on, with the context, as long as the
newest plugin of the stack does.) A context is keyed by the ids of its plugins, which
cannot be reused while the entry exists, since the context holds those plugins.

A plugin's configuration is read at each ``context_of`` (``cache_token``, and the
generation ``Plugin.invalidate`` counts for a plugin without a token): a stack whose
configuration changed gets a new context with the code of its new configuration (shared
with equally configured stacks through their owner, ``splice.cache.owners``, when every
plugin has a token), never the stale one.
"""

from __future__ import annotations

from collections.abc import Hashable

from splice.forks import fork_safe_lock
from splice.hooks import Hooks
from splice.pristine import BUILTINS
from splice.runtime.context import Context
from splice.runtime.plugin_state import made, state_of

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["context_of", "keeper_of"]

_contexts_lock = fork_safe_lock()


def keeper_of(plugins: tuple[Hooks, ...]) -> Hooks:
    """The plugin of a stack that keeps the stack's context: its newest."""
    if len(plugins) == 1:
        return plugins[0]
    return max(plugins, key=made)


def context_of(plugins: tuple[Hooks, ...]) -> Context:
    """The context of a stack of plugins (outermost first): one per stack and
    configuration, kept by the stack's newest plugin while it lives."""
    contexts = state_of(keeper_of(plugins)).contexts
    key = tuple(id(p) for p in plugins)
    tokens = tuple(_token(p) for p in plugins)
    configuration = (tokens, tuple(state_of(p).generation for p in plugins))
    found = contexts.get(key)
    if found is None or found[0] != configuration:
        with _contexts_lock:
            found = contexts.get(key)
            if found is None or found[0] != configuration:
                made_now = Context(plugins, tokens, context_of)
                found = contexts[key] = (configuration, made_now)
                if len(plugins) > 1:  # every member's explain reports the composition
                    name = f"compose({', '.join(type(p).__qualname__ for p in plugins)})"
                    for plugin in dict.fromkeys(plugins):
                        state_of(plugin).ran_in(made_now, name, made_now.reached_records)
    context: Context = found[1]
    return context


def _token(plugin: Hooks) -> Hashable:
    """``plugin.cache_token()``, checked: a hashable value or None."""
    token = plugin.cache_token()
    try:
        hash(token)
    except TypeError:
        raise TypeError(f"{type(plugin).__qualname__}.cache_token() must return a hashable "
                        f"value (or None), not {type(token).__name__}: {token!r} (use "
                        "tuples and frozensets instead of lists, sets and dicts)") from None
    return token
