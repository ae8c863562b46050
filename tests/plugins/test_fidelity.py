"""The per-construct differential cases (tests/ir/cases) run under the shipped plugins: the
Tracer (its instrumentation around every function body and ``yield``) and a
Patch that replaces an unrelated function and attribute. Results, exceptions with the
user's traceback frames, side effects and generator protocols must be exactly native."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from splice.plugins import Patch, Tracer
from tests import differential as d
from tests.ir.cases import (
    rt_arguments,
    rt_assignments,
    rt_async,
    rt_classes,
    rt_control,
    rt_expressions,
    rt_generators,
    rt_scoping,
)
from tests.plugins import patchee

MODULES = [rt_arguments, rt_assignments, rt_async, rt_classes, rt_control, rt_expressions,
           rt_generators, rt_scoping]
CASES = [case for module in MODULES for case in d.collect(module)]


def unrelated() -> None:
    """Replaced by the Patch below; no case calls it."""


PLUGINS = {
    # (argument summaries call repr() on the arguments: a side effect the cases would see)
    "tracer": Tracer(),
    "tracer-implicit": Tracer(implicit_calls=True),
    "patch": Patch().replace(unrelated, lambda: None).setattr(patchee, "RATE", 0),
}


@pytest.fixture(params=sorted(PLUGINS))
def plugin_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
                ) -> Iterator[str]:
    name = str(request.param)
    monkeypatch.setitem(d.PLUGINS, "context", PLUGINS[name])
    yield name


@pytest.mark.parametrize("case", CASES,
                         ids=lambda c: f"{c.fn.__module__.rsplit('.', 1)[-1]}-{c.id}")
def test_case_under_plugin(case: d.Case, plugin_name: str) -> None:
    reason = case.xfail.get("context")
    if plugin_name == "tracer-implicit":  # routes implicit calls, as per-call hooks do
        reason = reason or case.xfail.get("hooked")
    if reason:
        pytest.xfail(reason)
    d.check(case, "context")


def test_the_tracer_records_the_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    tracer = Tracer()
    monkeypatch.setitem(d.PLUGINS, "context", tracer)
    case = next(c for c in d.collect(rt_control) if not c.xfail.get("context")
                and c.rebuild is None)
    d.check(case, "context")
    assert tracer.counts().get(case.fn.__code__, 0) >= 1
