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

A generator's resume is recorded by other statements than a call (the span starts where
the generator resumes and ends at its ``yield``; the caller's part is ``next()`` reaching
it), so its cost is measured apart (``resume_inside``, ``resume_outside``): a loop
resuming an empty generator, natively and traced, the same way.

An exception leaving a recorded call costs more: the Tracer's handler catches it, records
it and raises it again. That extra (``raised``) is measured natively, as the difference
between a function raising through such a handler and one raising plainly, each called in
a loop that catches the exception.

How it is applied (:meth:`Bias.self_time`): a call's self time less ``inside``, less
``outside`` per recorded callee, and less ``raised`` if an exception left it, never below
zero; its total time is its corrected self time plus its recorded callees' corrected totals
(``splice.plugins.tracer._corrected_times``). Unclamped, that total is the measured one
less ``inside`` for the call, ``inside + outside`` for each recorded call below it and
``raised`` for each of those calls (itself included) that an exception left
(:meth:`Bias.time`); built from the clamped self times, the corrected figures keep the
invariants of the measured ones: no self time below zero, a total at least its self time,
and a caller's total the sum of its callees' totals and its own self time (so the tree, the
``pstats`` table, where a function's cumulative time includes its self time, and the
collapsed stacks agree, and a thread's total in the tree's header is its calls' totals).

Soundness, as far as a correction can have it: the cost subtracted is work the native
program does not do (the native loop's own call is left in the caller's time), and it is
much the same for every call of a given Tracer: the same statements are inserted in every
function. Where the cost differs, the correction is off by that difference: a method call
costs the caller about 60 ns more than the plain call measured (another path to the
callee); a call that misses the processor's caches costs more. The cost is measured once, at one
moment: on a machine whose speed drifts, ``Tracer.bias`` can be set from a measure taken
at a quieter one. The raw times stay available.
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

__all__ = ["Bias", "calibration_functions", "calibration_generator", "measure_bias"]


@dataclass(frozen=True)
class Bias:
    """The Tracer's own cost per recorded call, in nanoseconds: ``inside`` the call's span,
    and ``outside`` it, in the caller's self time."""

    inside: float
    outside: float
    #: the extra inside a call that an exception left
    raised: float = 0.0
    #: the cost per recorded resume of a generator, inside its span and in the caller's
    #: self time (None: as a call's)
    resume_inside: float | None = None
    resume_outside: float | None = None

    def self_time(self, raw: int, callees: int, raised: bool = False, *,
                  resumes: int = 0, resumed: bool = False) -> float:
        """A call's self time (``raw`` ns, with ``callees`` recorded callees, ``resumes``
        of them resumes of generators; ``raised``: an exception left it; ``resumed``: it is
        a generator's resume) without the Tracer's cost."""
        inside = self.inside if not resumed or self.resume_inside is None \
            else self.resume_inside
        outside = self.outside if self.resume_outside is None else self.resume_outside
        return max(0.0, raw - inside - self.outside * (callees - resumes) -
                   outside * resumes - self.raised * raised)

    def time(self, raw: int, below: int, raised: int = 0) -> float:
        """A call's total time (``raw`` ns, with ``below`` recorded calls under it at any
        depth, and ``raised`` calls, itself included, that an exception left) without the
        Tracer's cost (every call costing a call's)."""
        return max(0.0, raw - self.inside - (self.inside + self.outside) * below -
                   self.raised * raised)


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


def _resumed() -> Iterator[None]:
    while True:
        yield


def _resuming(n: int) -> None:
    # ten resumes per iteration, as ``_calling``
    resumed = _resumed()
    for _ in range(n // 10):
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)
        next(resumed)


def _copies(callee: Callable[..., Any], caller: Callable[..., Any]
            ) -> tuple[types.FunctionType, types.FunctionType]:
    """Copies of this module's ``callee`` and ``caller`` that splice transforms: splice's own
    modules run natively, so the copies' globals name another module (their source is this
    file's), where ``caller`` finds the copy of ``callee``."""
    namespace: dict[str, Any] = {"__name__": "splice_tracer_calibration",
                                 "__builtins__": builtins}
    copies = tuple(types.FunctionType(f.__code__, namespace, f.__name__)
                   for f in (callee, caller))
    namespace[callee.__name__] = copies[0]
    return copies[0], copies[1]


def calibration_functions() -> tuple[types.FunctionType, types.FunctionType]:
    """An empty function and ``calling(n)``, which calls it ``n`` times (a multiple of
    ten), for measuring what a profiler costs per call (copies: :func:`_copies`)."""
    return _copies(_empty, _calling)


def calibration_generator() -> tuple[types.FunctionType, types.FunctionType]:
    """An empty endless generator function and ``resuming(n)``, which resumes one of its
    generators ``n`` times (a multiple of ten), for measuring what a profiler costs per
    resume (copies: :func:`_copies`)."""
    return _copies(_resumed, _resuming)


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


def _per_call(tracer: Any, caller: types.FunctionType, calls: int, runs: int
              ) -> tuple[float, float]:
    """The lowest averages, over ``runs`` runs of ``caller(calls)`` under ``tracer`` (which
    ran it once, compiling), of its recorded callees' spans and of its self time per callee,
    and ``caller``'s native time per callee, subtracted from the latter."""
    native = traced_inside = traced_caller = float("inf")
    for _ in range(runs):
        start = time.perf_counter_ns()
        caller(calls)
        native = min(native, (time.perf_counter_ns() - start) / calls)
        tracer.reset()
        tracer.run(caller, calls)
        roots = [call for call in tracer.calls() if call.code is caller.__code__]
        if len(roots) != 1 or len(roots[0].children) != calls:
            raise RuntimeError("the Tracer's calibration recorded another call tree than "
                               "it made: no bias measured")
        root = roots[0]
        inside = sum(c.duration or 0 for c in root.children) / calls
        traced_inside = min(traced_inside, inside)
        traced_caller = min(traced_caller, (root.self_time or 0) / calls)
    tracer.reset()
    return traced_inside, max(0.0, traced_caller - native)


def measure_bias(make_tracer: Callable[[], Any], record_exception: Callable[[], None], *,
                 calls: int = 2000, runs: int = 7) -> Bias:
    """The cost per recorded call of Tracers made by ``make_tracer`` (a Tracer with the
    options of the one to correct and no module filter): ``runs`` runs of ``calls`` calls
    (a multiple of ten) each way, natively and traced, the lowest average of each kept;
    the same for resumes of a generator. ``record_exception`` records an exception as the
    Tracer's handler does (into a log of its own)."""
    _, calling = calibration_functions()
    _, resuming = calibration_generator()
    tracer = make_tracer()
    tracer.run(calling, 10)  # compiles
    tracer.run(resuming, 10)
    inside, outside = _per_call(tracer, calling, calls, runs)
    resume_inside, resume_outside = _per_call(tracer, resuming, calls, runs)
    return Bias(inside=inside, outside=outside,
                raised=_raise_cost(record_exception, calls // 4, runs),
                resume_inside=resume_inside, resume_outside=resume_outside)
