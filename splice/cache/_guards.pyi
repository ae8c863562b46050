from typing import Any

class GuardCheck:
    """True while ``alive[0]`` is true and each check of ``items`` holds, evaluated with no
    Python frame (splice/cache/_guards.c)."""

    items: tuple[tuple[int, Any, Any, Any], ...]

    def __init__(self, alive: list[bool] | None, items: tuple[tuple[int, Any, Any, Any], ...],
                 missing: Any, /) -> None: ...
    def __call__(self) -> bool: ...
