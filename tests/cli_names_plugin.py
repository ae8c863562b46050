"""A plugin for ``splice run -p tests.cli_names_plugin:CalledNames`` (tests/test_cli_dropin.py):
its prehook records the names of the program's own functions (those of ``__main__``) as
they are called, and ``report()`` gives them one a line."""

from __future__ import annotations

from typing import Any

import splice


class CalledNames(splice.Plugin):
    def __init__(self) -> None:
        self.names: list[str] = []

    def prehook(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if getattr(fn, "__module__", None) == "__main__":
            self.names.append(fn.__qualname__)

    def report(self) -> str:
        return "\n".join(self.names)
