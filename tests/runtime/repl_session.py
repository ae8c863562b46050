"""What an interactive session of tests/runtime/test_repl_source.py imports at its prompt.

``check(label, fn, *args)`` calls ``fn`` natively, then under each plugin of ``PLUGINS``,
and appends one JSON line to the file named by ``SPLICE_REPL_OUT``: the results (their
``repr``, or the exception's type and text) and, per plugin, whether ``fn`` (and each of
``callees``) was entered and the reasons ``splice.explain`` gives, and for the typed
plugin the functions whose typed IR it saw. It writes to a file, not
to the terminal, so that what the session prints cannot mix with what the test types.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import splice
from splice.plugins import Tracer
from tests.differential import HookedIdentityPlugin, IdentityPlugin


class Typed(splice.Plugin):
    """A typed-stage plugin that changes nothing (its code runs as code instances); it
    keeps the qualified names of the functions whose typed IR it saw (a callee that typed
    code calls directly is not in ``splice.explain``)."""

    def __init__(self) -> None:
        self.typed_names: set[str] = set()

    def typed(self, ir: Any) -> None:
        self.typed_names.add(getattr(ir.function, "__qualname__", "?"))


PLUGINS: dict[str, Callable[[], splice.Plugin]] = {
    "identity": IdentityPlugin,
    "hooked": HookedIdentityPlugin,
    "tracer": Tracer,
    "typed": Typed,
}


def _outcome(call: Callable[..., Any], *args: Any) -> str:
    try:
        return repr(call(*args))
    except Exception as exc:  # noqa: BLE001 - compared as text with the native outcome
        return f"{type(exc).__name__}: {exc}"


def check(label: str, fn: Any, *args: Any, callees: Sequence[Any] = ()) -> None:
    """Run ``fn(*args)`` natively and under every plugin; record what happened."""
    report: dict[str, Any] = {"label": label, "native": _outcome(fn, *args),
                              "runs": {}}
    for mode, make in PLUGINS.items():
        plugin = make()
        result = _outcome(plugin.run, fn, *args)
        seen: dict[str, Any] = {}
        for which in (fn, *callees):
            records = list(splice.explain(plugin, which))
            seen[getattr(which, "__qualname__", repr(which))] = {
                "entered": bool(records) and all(r.entered for r in records),
                "reasons": sorted({r.reason for r in records})}
        report["runs"][mode] = {"result": result, "reached": seen,
                                "typed": sorted(getattr(plugin, "typed_names", ()))}
    with open(os.environ["SPLICE_REPL_OUT"], "a", encoding="utf-8") as out:
        out.write(json.dumps(report) + "\n")
