"""The allocation sites a join or widening forgets reach the inference running in the same
thread, and that one only (``splice.infer.lattice.LOST_SITE_HOOK``): not an inference
running in another thread, nor one an inference runs inside its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from splice.infer import Abstract, AbstractInterpreter
from splice.infer.lattice import LOST_SITE_HOOK, Alloc


def calls_a_builtin() -> int:
    return len(())


class Probing(AbstractInterpreter):
    """Runs ``during`` at the first builtin call it infers: while its inference is under
    way."""

    def __init__(self, during: Callable[[], None]) -> None:
        super().__init__()
        self.during: Callable[[], None] | None = during

    def call_builtin(self, fn: Any, args: list[Abstract], kwargs: dict[str, Abstract]
                     ) -> Abstract:
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().call_builtin(fn, args, kwargs)


def forget(site: str) -> None:
    """A widening that forgets the lists made at ``site``."""
    Alloc(list, (site,)).widen()


def test_the_running_inference_hears_of_the_sites_it_forgets() -> None:
    probing = Probing(lambda: forget("own"))
    probing.infer(calls_a_builtin, [])
    assert "own" in probing.escaped


def test_an_inference_in_another_thread_hears_nothing() -> None:
    entered, release = threading.Event(), threading.Event()

    def pause() -> None:
        entered.set()
        assert release.wait(30)

    paused = Probing(pause)
    thread = threading.Thread(target=paused.infer, args=(calls_a_builtin, []))
    thread.start()
    try:
        assert entered.wait(30)
        here = Probing(lambda: forget("here"))
        here.infer(calls_a_builtin, [])
        forget("no inference")
    finally:
        release.set()
        thread.join()
    assert "here" in here.escaped
    assert "here" not in paused.escaped and "no inference" not in paused.escaped


def test_an_inner_inference_keeps_its_sites_and_gives_the_outer_one_back_its_own() -> None:
    inner = Probing(lambda: forget("inner"))

    def run_inner() -> None:
        inner.infer(calls_a_builtin, [])
        forget("outer")

    outer = Probing(run_inner)
    outer.infer(calls_a_builtin, [])
    assert "inner" in inner.escaped and "inner" not in outer.escaped
    assert "outer" in outer.escaped and "outer" not in inner.escaped


def test_an_inference_that_raises_stops_hearing() -> None:
    def fail() -> None:
        raise KeyboardInterrupt

    failed = Probing(fail)
    with pytest.raises(KeyboardInterrupt):
        failed.infer(calls_a_builtin, [])
    assert LOST_SITE_HOOK.get() is None
    forget("after")
    assert "after" not in failed.escaped
