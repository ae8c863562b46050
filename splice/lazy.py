"""Names a package exports without importing the modules defining them until first read.

``import splice`` loads neither the compiler nor inference (PEP 562: a module's
``__getattr__`` is called for a name its namespace lacks), so a script that imports splice
starts fast, and inference loads only when a typed stage first needs it. Each name is bound
in the package's namespace when first read, so later reads are plain attribute reads. The
package lists the same names under ``if TYPE_CHECKING:`` for type checkers.

A name the table lacks that names a module of the package (``splice.ir``) imports it,
as the eager package's imports made ``import splice; splice.ir.roundtrip(f)`` work.

Soundness: a name resolves to the object the defining module binds, the same object an
eager ``from module import name`` would have given; a name not in the table raises the
``AttributeError`` an eager package would.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["exports"]


def exports(namespace: dict[str, Any], defined_in: dict[str, str]
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose ``namespace`` (its
    ``globals()``) exports each name of ``defined_in`` from the module named there."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = defined_in.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            # a subpackage or module (``splice.ir``), as an eager package had imported it
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *defined_in})

    return __getattr__, __dir__
