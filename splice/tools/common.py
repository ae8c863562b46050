"""Small helpers shared by the corpus, rebuild and generated-program tools."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import types
from collections.abc import Iterator


def module_filenames(module: types.ModuleType) -> set[str]:
    """The ``co_filename`` values the module's own code objects can have."""
    names = {f"<frozen {module.__name__}>"}
    path = getattr(module, "__file__", None)
    if isinstance(path, str):
        names.add(path)
        names.add(os.path.realpath(path))
    return names


@contextlib.contextmanager
def time_limit(seconds: float, error: type[BaseException]) -> Iterator[None]:
    """Raise ``error`` inside the block after ``seconds`` (main thread, POSIX only; a
    no-op elsewhere or for ``seconds <= 0``)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is \
        threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def alarm(signum: int, frame: object) -> None:
        raise error(f"took longer than {seconds:g} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
