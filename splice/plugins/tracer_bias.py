"""What recording one call costs the Tracer, measured, so that its profiles can leave it out.

Recording a call is work of the Tracer's own, and a profile counts it as the program's
time. Part of it falls inside the call's span (pushing the start event, entering the
``try``, the clock read that ends the span): the callee's self time. The rest falls in the
caller's self time (finding the callee's entry, reading the event list, the clock read that
starts the span; then pushing the end event and returning). A function that makes many
short calls is shown slower than it is, and its callees too. ``cProfile`` pays the same kind
of cost per event, in C; ``profile.Profile.calibrate`` measures the pure-Python profiler's,
and this module does the same for the Tracer.

How it is measured: a loop calling an empty function runs natively and under a Tracer with
the options of the one being corrected (arguments or return values recorded cost more). The
empty function's span is all cost (``inside``); the loop's self time per call, less the
native time of one iteration (loop and call), is the caller's part (``outside``). Each is
the lowest of several runs' averages, as timing benchmarks take it: noise only adds.

A generator's resume is recorded by the same statements placed around its ``yield``, which
splits the cost differently (more of it inside the span): it is measured the same way on a
loop consuming a generator (``resume_inside``, ``resume_outside``).

An exception leaving a recorded call costs more: the Tracer's handler catches it, records
it and raises it again. That extra (``raised``) is measured natively, as the difference
between a function raising through such a handler and one raising plainly, each called in
a loop that catches the exception.

How it is applied: a call's self time less its own cost (:meth:`Bias.own_cost`: the cost
inside its span, ``raised`` if an exception left it, and the cost in it of each recorded
callee), its total time less the own costs of itself and of every call below it; never
below zero. Soundness, as
far as a correction can have it: the cost subtracted is work the native program does not do
(the native loop's own call is left in the caller's time), and it is the same for every
call of a given Tracer: the same statements are inserted in every function. Where the cost
differs (a call that misses the processor's caches, the first call of a function), the
correction is off by that difference; the raw times stay available.
"""

from __future__ import annotations

import builtins
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from splice.pristine import BUILTINS

__builtins__ = BUILTINS  # the builtins of splice's own code (splice/pristine.py)

__all__ = ["Bias", "calibration_functions", "measure_bias"]


@dataclass(frozen=True)
class Bias:
    """The Tracer's own cost per recorded call, in nanoseconds: ``inside`` the call's span,
    and ``outside`` it, in the caller's self time; ``raised``, the extra inside a call an
    exception left; ``resume_inside`` and ``resume_outside``, the same for the resume of a
    generator (None: as for a call)."""

    inside: float
    outside: float
    raised: float = 0.0
    resume_inside: float | None = None
    resume_outside: float | None = None

    def own_cost(self, call: Any) -> float:
        """The Tracer's cost in ``call``'s self time (a ``splice.plugins.tracer.Call``):
        inside its span, and in it for each of its recorded callees."""
        cost = self._inside(call) + self.raised * (call.exception is not None)
        for callee in call.children:
            cost += self._outside(callee)
        return cost

    def _inside(self, call: Any) -> float:
        if self.resume_inside is not None and call.info.code.co_flags & _CO_GENERATOR:
            return self.resume_inside
        return self.inside

    def _outside(self, call: Any) -> float:
        if self.resume_outside is not None and call.info.code.co_flags & _CO_GENERATOR:
            return self.resume_outside
        return self.outside


_CO_GENERATOR = 0x20

#: no cost: the raw times
NO_BIAS = Bias(0.0, 0.0)

#: what the calibration raises (arguments of builtin types, as most exceptions have)
_ERROR = ValueError("calibration", 1)


def _empty() -> None:
    pass


def _calling(n: int) -> None:
    # ten calls per iteration: the loop's own cost (which implicit-call routing raises)
    # is not a call's
    callee = _empty
    for _ in range(n // 10):
        callee()
        callee()
        callee()
        callee()
        callee()
        callee()
        callee()
        callee()
        callee()
        callee()


def _counting(n: int) -> Iterator[int]:
    i = 0
    while i < n:
        yield i
        i += 1


def _consuming(n: int) -> None:
    for _ in _counting(n):
        pass


def _copies(*functions: Callable[..., Any]) -> list[types.FunctionType]:
    """Copies of ``functions`` (of this module) that splice transforms: splice's own
    modules run natively, so the copies' globals name another module (their source is
    this file's); they call each other by the names they have here."""
    namespace: dict[str, Any] = {"__name__": "splice_tracer_calibration",
                                 "__builtins__": builtins}
    copies = [types.FunctionType(fn.__code__, namespace, fn.__name__)
              for fn in functions]
    namespace.update((copy.__name__, copy) for copy in copies)
    return copies


def calibration_functions() -> tuple[types.FunctionType, types.FunctionType]:
    """An empty function and ``calling(n)``, which calls it ``n`` times (a multiple of
    ten), for measuring what a profiler costs per call. They are copies of this module's
    :func:`_empty` and :func:`_calling` that splice transforms: splice's own modules run
    natively, so the copies' globals name another module (their source is this file's)."""
    empty, calling = _copies(_empty, _calling)
    return empty, calling


def _raise_handled(record: Callable[[], None]) -> None:
    try:
        raise _ERROR
    except BaseException:
        record()
        raise


def _raise_plainly(record: Callable[[], None]) -> None:
    raise _ERROR


def _raise_cost(record: Callable[[], None], calls: int, runs: int) -> float:
    """What recording an exception leaving a call adds (``record`` records one), in ns:
    the lowest averages of raising through a handler that records and re-raises, and of
    raising plainly, subtracted."""
    best = {_raise_handled: float("inf"), _raise_plainly: float("inf")}
    for _ in range(runs):
        for raiser in best:
            start = time.perf_counter_ns()
            for _ in range(calls):
                try:  # noqa: SIM105 - a with-statement would cost more than the call
                    raiser(record)
                except ValueError:
                    pass
            best[raiser] = min(best[raiser], (time.perf_counter_ns() - start) / calls)
    return max(0.0, best[_raise_handled] - best[_raise_plainly])


def measure_bias(make_tracer: Callable[[], Any], record_exception: Callable[[], None], *,
                 calls: int = 2000, runs: int = 7) -> Bias:
    """The cost per recorded call of Tracers made by ``make_tracer`` (a Tracer with the
    options of the one to correct and no module filter): ``runs`` runs of ``calls`` calls
    (a multiple of ten) each way, natively and traced, the lowest average of each kept.
    ``record_exception`` records an exception as the Tracer's handler does (into a log of
    its own)."""
    empty, calling = calibration_functions()
    tracer = make_tracer()
    tracer.run(calling, 10)  # compiles
    native = traced_inside = traced_caller = float("inf")
    for _ in range(runs):
        start = time.perf_counter_ns()
        calling(calls)
        native = min(native, (time.perf_counter_ns() - start) / calls)
        tracer.reset()
        tracer.run(calling, calls)
        roots = [call for call in tracer.calls() if call.code is calling.__code__]
        if len(roots) != 1 or len(roots[0].children) != calls:
            raise RuntimeError("the Tracer's calibration recorded another call tree than "
                               "it made: no bias measured")
        root = roots[0]
        inside = sum(c.duration or 0 for c in root.children) / calls
        traced_inside = min(traced_inside, inside)
        traced_caller = min(traced_caller, (root.self_time or 0) / calls)
    tracer.reset()
    resume_inside, resume_outside = _resume_cost(make_tracer, calls, runs)
    return Bias(inside=traced_inside, outside=max(0.0, traced_caller - native),
                raised=_raise_cost(record_exception, calls // 4, runs),
                resume_inside=resume_inside, resume_outside=resume_outside)


def _resume_cost(make_tracer: Callable[[], Any], resumes: int, runs: int
                 ) -> tuple[float, float]:
    """The cost of recording a generator's resume, inside its span and in the consumer,
    measured as for a call (:func:`measure_bias`)."""
    counting, consuming = _copies(_counting, _consuming)
    tracer = make_tracer()
    tracer.run(consuming, 10)  # compiles
    native = inside = outside = float("inf")
    for _ in range(runs):
        start = time.perf_counter_ns()
        consuming(resumes)
        native = min(native, (time.perf_counter_ns() - start) / resumes)
        tracer.reset()
        tracer.run(consuming, resumes)
        roots = [call for call in tracer.calls() if call.code is consuming.__code__]
        if len(roots) != 1 or len(roots[0].children) != resumes + 1:
            raise RuntimeError("the Tracer's calibration recorded another call tree than "
                               "it made: no bias measured")
        spans = roots[0].children
        inside = min(inside, sum(c.duration or 0 for c in spans) / len(spans))
        outside = min(outside, (roots[0].self_time or 0) / len(spans))
    tracer.reset()
    return inside, max(0.0, outside - native)
