from typing import Any

class Recorder:
    """The Tracer's recording calls (splice/plugins/_recorder.c)."""

    local: Any

    def __init__(self, local: Any, /) -> None: ...
    def enter(self, info: Any, /) -> None: ...
    def leave(self) -> None: ...
