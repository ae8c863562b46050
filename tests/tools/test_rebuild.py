"""rebuild_module: every slot kind is replaced by the round trip, identities among aliases are
kept, behaviour is native, and restore() puts back exactly the original objects."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import splice.ir
from splice.tools.rebuild import rebuild_module

SAMPLE = Path(__file__).with_name("rebuild_sample.py")
NAME = "splice_rebuild_sample"


@pytest.fixture
def sample() -> Iterator[Any]:
    spec = importlib.util.spec_from_file_location(NAME, SAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[NAME]


def snapshot(module: Any) -> dict[str, object]:
    """Every slot rebuild may touch, by identity."""
    slots: dict[str, object] = dict(vars(module))
    for cls in (module.Base, module.Child, module.Point, module.Base.Inner):
        slots.update({f"{cls.__qualname__}.{k}": v for k, v in vars(cls).items()})
    slots["dispatch.m"] = module.Base.dispatch["m"]
    slots["dispatch.pair"] = module.Base.dispatch["pair"]
    slots["TABLE.0"] = module.TABLE[0]
    slots["cached_prop.func"] = vars(module.Base)["cached_prop"].func
    slots["managed.cells"] = [c.cell_contents for c in module.managed.__closure__]
    slots["decorated.cells"] = [c.cell_contents for c in module.decorated.__closure__]
    return slots


def rebuilt(new: object, old: object) -> bool:
    return (isinstance(new, types.FunctionType) and isinstance(old, types.FunctionType)
            and new is not old and new.__code__ is not old.__code__
            and new.__code__.co_qualname == old.__code__.co_qualname)


def test_replaces_every_kind_of_slot_and_restores(sample: Any) -> None:
    before = snapshot(sample)
    base = dict(vars(sample.Base))
    restore = rebuild_module(sample)
    stats = restore.stats
    try:
        assert rebuilt(sample.plain, before["plain"])
        assert rebuilt(vars(sample.Base)["method"], base["method"])
        assert rebuilt(vars(sample.Base)["static"].__func__, base["static"].__func__)
        assert rebuilt(vars(sample.Base)["klass"].__func__, base["klass"].__func__)
        assert rebuilt(vars(sample.Base)["prop"].fget, base["prop"].fget)
        assert rebuilt(vars(sample.Base)["prop"].fset, base["prop"].fset)
        assert rebuilt(vars(sample.Base)["cached_prop"].func, before["cached_prop.func"])
        assert rebuilt(vars(sample.Base.Inner)["inner_method"],
                       before["Base.Inner.inner_method"])
        assert rebuilt(vars(sample.Child)["method"], before["Child.method"])
        assert rebuilt(vars(sample.Point)["norm1"], before["Point.norm1"])
        assert rebuilt(sample.gen, before["gen"])
        assert rebuilt(sample.uses_lambda, before["uses_lambda"])
        assert rebuilt(sample.decorator, before["decorator"])
        # aliases stay aliases
        assert sample.alias is sample.plain
        assert vars(sample.Base)["__call__"] is vars(sample.Base)["method"]
        assert sample.Base.dispatch["m"] is vars(sample.Base)["method"]
        assert sample.Base.dispatch["pair"][0] is vars(sample.Base)["method"]
        assert sample.TABLE[0][1] is sample.plain
        assert sample.TABLE[1][1] is sample.decorated
        # bound methods and partials are rebuilt around the new function
        assert sample.bound.__func__ is vars(sample.Base)["method"]
        assert sample.bound.__self__ is sample._inst
        assert sample.partial_plain.func is sample.plain
        # not the module's: another module's function, dataclass-generated methods
        assert sample.dedent is textwrap.dedent
        assert vars(sample.Point)["__init__"] is before["Point.__init__"]
        assert stats.replaced == 21  # every function of the sample but no_source
        assert stats.failed == []
        # behaviour is native
        assert sample.plain(1, 2, 3, z=4, w=5) == (1, 2, (3,), 4, {"w": 5})
        b = sample.Base(2)
        assert (b.method(), b(), sample.Base.static(2), sample.Base.klass()) == (3, 3, 6, "Base")
        assert b.prop == 20
        b.prop = 7
        assert (b.v, b.cached_prop, sample.Base.Inner().inner_method()) == (7, [7], "inner")
        assert sample.Child(2).method() == 6  # zero-argument super() through the shared cell
        assert sample.Point(3, -4).norm1() == 7
        assert sample.bound() == 6 and sample.partial_plain(y=0)[:2] == (1, 0)
        g = sample.gen(3)
        assert list(g) == [0, 1, 2]
        assert sample.uses_lambda([1, 3, 2]) == [3, 2, 1]
    finally:
        restore()
    after = snapshot(sample)
    assert after.keys() == before.keys()
    changed = [k for k in before if after[k] is not before[k]
               and not (isinstance(before[k], list) and all(
                   x is y for x, y in zip(before[k], after[k], strict=True)))]  # type: ignore[call-overload]
    assert changed == []
    restore()  # a second call does nothing


def test_wraps_wrapper_and_inner_function_are_both_rebuilt(sample: Any) -> None:
    inner = sample.decorated.__wrapped__
    wrapper = sample.decorated
    restore = rebuild_module(sample)
    try:
        assert rebuilt(sample.decorated, wrapper)
        assert rebuilt(sample.decorated.__wrapped__, inner)
        assert inspect.unwrap(sample.decorated) is sample.decorated.__wrapped__
        # the wrapper's closure cell now holds the rebuilt inner function
        cells = [c.cell_contents for c in sample.decorated.__closure__]
        assert sample.decorated.__wrapped__ in cells
        sample.CALLS.clear()
        assert sample.decorated(21) == 42 and sample.CALLS == ["decorated"]
    finally:
        restore()
    assert sample.decorated is wrapper
    assert [c.cell_contents for c in wrapper.__closure__].count(inner) == 1


def test_dict_keyed_by_a_function_gets_the_rebuilt_function_as_a_key(sample: Any) -> None:
    inner = sample.squared.__wrapped__
    restore = rebuild_module(sample)
    try:
        new_inner = sample.squared.__wrapped__
        assert rebuilt(new_inner, inner)
        assert sample._CACHES[new_inner] is sample._CACHES[inner]  # one cache, two keys
        assert [sample.squared(3), sample.squared(3)] == [9, 9]
    finally:
        restore()
    assert list(sample._CACHES) == [inner]  # the added key is gone
    assert sample.squared(4) == 16


def test_foreign_wrapper_keeps_its_object_and_runs_the_rebuilt_generator(sample: Any) -> None:
    helper = sample.managed
    generator = helper.__wrapped__
    restore = rebuild_module(sample)
    try:
        assert sample.managed is helper  # contextlib's helper is not the module's
        assert rebuilt(helper.__wrapped__, generator)
        func_cell = next(c for c in helper.__closure__ if callable(c.cell_contents))
        assert func_cell.cell_contents is helper.__wrapped__
        log: list[str] = []
        with sample.managed(log) as value:
            assert value == 42
        assert log == ["enter", "exit"]
    finally:
        restore()
    assert helper.__wrapped__ is generator
    assert any(c.cell_contents is generator for c in helper.__closure__)


def test_lru_cache_wrapper_is_rebuilt_with_the_same_parameters(sample: Any) -> None:
    old = sample.cached
    restore = rebuild_module(sample)
    try:
        assert sample.cached is not old
        assert sample.cached.cache_parameters() == old.cache_parameters()
        assert rebuilt(sample.cached.__wrapped__, old.__wrapped__)
        assert [sample.cached(4), sample.cached(4)] == [16, 16]
        assert sample.cached.cache_info().hits == 1
    finally:
        restore()
    assert sample.cached is old


def test_unsupported_is_kept_and_counted(sample: Any) -> None:
    original = sample.no_source
    restore = rebuild_module(sample)
    try:
        assert sample.no_source is original
        assert [name for name, _ in restore.stats.unsupported] == [f"{NAME}.no_source"]
        assert sample.no_source() == 1
    finally:
        restore()


def test_internal_errors_are_kept_and_counted_or_raised_when_strict(sample: Any) -> None:
    def broken(fn: Any, *, renest: bool = True) -> types.FunctionType:
        if fn.__name__ == "method":
            raise RuntimeError("boom")
        return splice.ir.roundtrip(fn, renest=renest)

    before = snapshot(sample)
    restore = rebuild_module(sample, roundtrip=broken)
    try:
        assert vars(sample.Base)["method"] is before["Base.method"]
        assert sorted(restore.stats.failed) == [
            (f"{NAME}.Base.method", "RuntimeError: boom"),
            (f"{NAME}.Child.method", "RuntimeError: boom")]
        assert rebuilt(sample.plain, before["plain"])
    finally:
        restore()
    with pytest.raises(RuntimeError, match="boom"):
        rebuild_module(sample, roundtrip=broken, strict=True)
    after = snapshot(sample)  # a strict failure undid what was already replaced
    assert all(after[k] is before[k] for k in before if not isinstance(before[k], list))


def test_facts_mismatch_keeps_the_original(sample: Any) -> None:
    def wrong_signature(fn: Any, *, renest: bool = True) -> types.FunctionType:
        new = splice.ir.roundtrip(fn, renest=renest)
        if fn.__name__ == "plain":
            return types.FunctionType((lambda x: x).__code__, fn.__globals__, "plain")
        return new

    original = sample.plain
    restore = rebuild_module(sample, roundtrip=wrong_signature)
    try:
        assert sample.plain is original
        assert [name for name, _ in restore.stats.failed] == [f"{NAME}.plain"]
    finally:
        restore()


def test_rebuilt_stdlib_module_behaves_natively() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 5
    native = (textwrap.wrap(text, 17), textwrap.fill(text, 30, initial_indent="> "),
              textwrap.dedent("   a\n     b\n"), textwrap.indent("a\n\nb", "+ "),
              textwrap.shorten(text, 40, placeholder="~"))
    old_wrap = textwrap.TextWrapper._wrap_chunks
    restore = rebuild_module(textwrap)
    try:
        assert rebuilt(textwrap.TextWrapper._wrap_chunks, old_wrap)
        assert restore.stats.failed == [] and restore.stats.unsupported == []
        again = (textwrap.wrap(text, 17), textwrap.fill(text, 30, initial_indent="> "),
                 textwrap.dedent("   a\n     b\n"), textwrap.indent("a\n\nb", "+ "),
                 textwrap.shorten(text, 40, placeholder="~"))
        assert again == native
    finally:
        restore()
    assert textwrap.TextWrapper._wrap_chunks is old_wrap
