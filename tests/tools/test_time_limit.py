"""``splice.tools.common.time_limit``: the per-program limit of the corpus and fuzz tools
counts the process's CPU time (a busy machine does not make a slow run fail), with a
wall-clock limit behind it (a block that waits still ends)."""

from __future__ import annotations

import signal
import time

import pytest

from splice.tools.common import WALL_FACTOR, time_limit

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")


class Limit(Exception):
    pass


def test_a_busy_loop_is_stopped() -> None:
    with pytest.raises(Limit, match="CPU time"), time_limit(0.2, Limit):
        while True:
            pass


def test_a_limit_swallowed_once_fires_again() -> None:
    """As when the first one is raised in a weak reference's callback, which Python
    ignores after printing it."""
    caught = 0
    with pytest.raises(Limit), time_limit(0.1, Limit):
        try:
            while True:
                pass
        except Limit:
            caught += 1
        while True:
            pass
    assert caught == 1


def test_waiting_counts_against_the_wall_clock_limit_only() -> None:
    with time_limit(0.05, Limit):
        time.sleep(0.05 * WALL_FACTOR / 2)  # no CPU time: within both limits
    with pytest.raises(Limit), time_limit(0.05, Limit):
        time.sleep(0.05 * WALL_FACTOR * 4)


def test_the_timers_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGPROF), signal.getsignal(signal.SIGALRM)
    with time_limit(1.0, Limit):
        pass
    assert (signal.getsignal(signal.SIGPROF), signal.getsignal(signal.SIGALRM)) == before
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
