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


#: how many times ``seconds`` of wall-clock time ``time_limit`` allows as well (a block
#: waiting rather than computing still ends)
WALL_FACTOR = 6


@contextlib.contextmanager
def time_limit(seconds: float, error: type[BaseException]) -> Iterator[None]:
    """Raise ``error`` inside the block after ``seconds`` of this process's CPU time, or
    ``WALL_FACTOR`` times that of wall-clock time (main thread, POSIX only; a no-op
    elsewhere or for ``seconds <= 0``). CPU time, so that a busy machine (tests run in
    parallel next to other work) does not turn a slow run into a failure, while a program
    that loops for ever still stops, even if the first ``error`` was raised where Python
    ignores exceptions."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is \
        threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def alarm(signum: int, frame: object) -> None:
        raise error(f"took longer than {seconds:g} s of CPU time (or "
                    f"{seconds * WALL_FACTOR:g} s in all)")

    # the timers go on firing until the block is left: an exception raised where Python
    # ignores it (a weak reference's callback, a finaliser) is raised again soon after
    again = max(seconds / 4, 0.05)
    old_prof = signal.signal(signal.SIGPROF, alarm)
    old_alarm = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds, again)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR, again)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old_prof)
        signal.signal(signal.SIGALRM, old_alarm)
