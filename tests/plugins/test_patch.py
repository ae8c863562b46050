"""splice.plugins.Patch: replacements only inside the call graph run under the patch."""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

import pytest

import splice
from splice.plugins import Patch, Tracer
from tests.plugins import patchee, patchee_config


def fake_fetch(key: str) -> str:
    return f"fake:{key}"


def test_replaces_a_function_deep_in_the_call_graph_only_inside_run() -> None:
    patch = Patch().replace(patchee.fetch, fake_fetch)
    assert patch.run(patchee.service, ["a", "b"]) == ["FAKE:A", "FAKE:B"]
    assert patchee.service(["a"]) == ["REAL:A"]
    assert patchee.fetch is not fake_fetch and patchee.fetch("x") == "real:x"
    assert patch.run(patchee.service, ["c"]) == ["FAKE:C"]


def test_the_entry_itself_can_be_replaced() -> None:
    assert Patch({patchee.service: lambda keys: "whole"}).run(patchee.service, []) == "whole"


def test_mapping_constructor_and_chaining() -> None:
    patch = Patch({patchee.fetch: fake_fetch}).replace(patchee.load, lambda key: key * 2)
    assert patch.run(patchee.service, ["ab"]) == ["abab"]
    assert patch.replacements == {patchee.fetch: fake_fetch,
                                  patchee.load: patch.replacements[patchee.load]}


def test_thread_isolation() -> None:
    """Two threads run the same code at the same time; only the patched one sees the fake."""
    patch = Patch().replace(patchee.fetch, fake_fetch)
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}

    def patched() -> None:
        results["patched"] = patch.run(patchee.wait_and_load, barrier, "k")

    def native() -> None:
        results["native"] = patchee.wait_and_load(barrier, "k")

    threads = [threading.Thread(target=patched), threading.Thread(target=native)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"patched": "FAKE:K", "native": "REAL:K"}


def test_two_patches_in_two_threads() -> None:
    first = Patch().replace(patchee.fetch, lambda key: "one")
    second = Patch().replace(patchee.fetch, lambda key: "two")
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}

    def run(name: str, patch: Patch) -> None:
        for _ in range(50):
            results[name] = patch.run(patchee.wait_and_load, barrier, "k")
            assert results[name] == name.upper()

    threads = [threading.Thread(target=run, args=("one", first)),
               threading.Thread(target=run, args=("two", second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"one": "ONE", "two": "TWO"}


def test_methods() -> None:
    calls: list[tuple[Any, str]] = []

    def fake_get(self: patchee.Store, key: str) -> str:
        calls.append((self, key))
        return f"fake-{self.name}:{key}"

    patch = Patch().replace(patchee.Store.get, fake_get)
    got, default, cached, version = patch.run(patchee.use_store, "k")
    assert got == "fake-db:k" and default == "fake-default:k"
    # the subclass's override is another function: itself not replaced, but its super() call is
    assert cached == "cached-fake-c:k"
    assert version == 1
    assert [type(s).__name__ for s, _ in calls] == ["Store", "Store", "CachedStore"]
    assert patchee.use_store("k")[0] == "db:k"


def test_classmethod_staticmethod_and_bound_method_targets() -> None:
    patch = Patch()
    patch.replace(patchee.Store.default, lambda cls: cls("patched-default"))
    patch.replace(patchee.Store.version, lambda: 2)
    got = patch.run(patchee.use_store, "k")
    assert got[1] == "patched-default:k" and got[3] == 2
    # a bound method names its function: every instance's method is replaced
    store = patchee.Store("one")
    other = Patch().replace(store.get, lambda self, key: "bound")
    assert other.run(patchee.use_store, "k")[0] == "bound"
    # the class-level objects work too
    raw = Patch().replace(vars(patchee.Store)["version"], lambda: 3)
    assert raw.run(patchee.use_store, "k")[3] == 3


def test_class_instantiation() -> None:
    patch = Patch().replace(patchee.Store, lambda name: f"not a store: {name}")
    assert patch.run(patchee.make_store) == "not a store: x"
    assert isinstance(patchee.make_store(), patchee.Store)


def test_builtins_called_through_modules() -> None:
    patch = Patch().replace(time.time, lambda: 1234.5).replace(os.getcwd, lambda: "/fake")
    assert patch.run(patchee.clock) == (1234.5, "/fake")
    now, cwd = patchee.clock()
    assert now != 1234.5 and cwd == os.getcwd()


def test_call_original_and_restore() -> None:
    def wrapping(key: str) -> str:
        return "<" + patch.call_original(patchee.fetch, key) + ">"

    patch = Patch().replace(patchee.fetch, wrapping)
    assert patch.run(patchee.load, "k") == "<REAL:K>"
    patch.replace(patchee.fetch, fake_fetch)  # replaced again: at once
    assert patch.run(patchee.load, "k") == "FAKE:K"
    patch.restore(patchee.fetch)
    assert patch.run(patchee.load, "k") == "REAL:K"
    with pytest.raises(KeyError):
        patch.restore(patchee.fetch)


def test_replacement_added_after_a_run() -> None:
    patch = Patch().replace(patchee.fetch, fake_fetch)
    assert patch.run(patchee.service, ["a"]) == ["FAKE:A"]
    patch.replace(patchee.load, lambda key: "late")
    assert patch.run(patchee.service, ["a"]) == ["late"]


def test_module_attributes() -> None:
    patch = Patch().setattr(patchee, "RATE", 10)
    assert patch.run(patchee.price, 3) == 30
    assert patchee.price(3) == 6 and patchee.RATE == 2
    config = Patch().setattr(patchee_config, "URL", "http://test").setattr(
        patchee_config, "TIMEOUT", 1)
    assert config.run(patchee.uses_config) == ("http://test", 1)
    assert patchee.uses_config() == ("https://production.example", 30)
    config.setattr(patchee_config, "TIMEOUT", 2)  # set again: at once
    assert config.run(patchee.uses_config) == ("http://test", 2)


def test_names_imported_from_a_module_are_the_importers_globals() -> None:
    assert Patch().setattr(patchee_config, "GREETING", "hi").run(patchee.greet) == "hello"
    assert Patch().setattr(patchee, "GREETING", "hi").run(patchee.greet) == "hi"


def test_class_attribute_read_through_the_class() -> None:
    class Limits:
        LIMIT = 5

        @classmethod
        def limit(cls) -> int:
            return cls.LIMIT

        def through_instance(self) -> int:
            return self.LIMIT

    def read() -> tuple[int, int, int]:
        return Limits.LIMIT, Limits.limit(), Limits().through_instance()

    patch = Patch().setattr(Limits, "LIMIT", 50)
    # documented: reads through instances keep the real value
    assert patch.run(read) == (50, 50, 5)
    assert read() == (5, 5, 5)


def test_attribute_errors() -> None:
    with pytest.raises(AttributeError):
        Patch().setattr(patchee_config, "NO_SUCH_NAME", 1)
    with pytest.raises(ValueError):
        Patch().setattr(patchee_config, "not a name", 1)


@pytest.mark.parametrize("target", [dict.get, [].append, "x".upper, 42,
                                    property(lambda self: 1)],
                         ids=["method-descriptor", "builtin-method", "str-method", "int",
                              "property"])
def test_unreachable_targets_are_refused(target: Any) -> None:
    with pytest.raises(TypeError):
        Patch().replace(target, lambda *a: None)


def test_replacement_must_be_callable() -> None:
    with pytest.raises(TypeError):
        Patch().replace(patchee.fetch, 42)  # type: ignore[arg-type]


def test_partial_and_callback_reach() -> None:
    patch = Patch().replace(patchee.fetch, fake_fetch)

    def through_partial() -> str:
        return functools.partial(patchee.fetch, "p")()

    def through_map() -> list[str]:
        return list(map(patchee.fetch, ["m"]))

    assert patch.run(through_partial) == "fake:p"
    assert patch.run(through_map) == ["fake:m"]


def test_no_global_state_changes() -> None:
    before = (patchee.fetch, patchee.Store.get, patchee.RATE, dict(vars(patchee_config)))
    patch = Patch().replace(patchee.fetch, fake_fetch).replace(
        patchee.Store.get, lambda self, key: "x").setattr(patchee, "RATE", 9)
    patch.run(patchee.service, ["a"])
    patch.run(patchee.price, 1)
    assert before == (patchee.fetch, patchee.Store.get, patchee.RATE,
                      dict(vars(patchee_config)))


def test_composes_with_the_tracer() -> None:
    tracer = Tracer()
    patch = Patch().replace(patchee.fetch, fake_fetch)
    assert splice.compose(tracer, patch).run(patchee.service, ["a"]) == ["FAKE:A"]
    [root] = tracer.threads()[0].calls
    assert root.name == "service"
    assert [c.name for c in root.walk()] == ["service", "load"]  # the fake ran natively


def test_each_patch_has_its_own_class() -> None:
    first, second = Patch(), Patch()
    first.replace(patchee.fetch, fake_fetch)
    assert type(first) is not type(second)
    assert isinstance(first, Patch) and type(first).__name__ == "Patch"
    assert second.run(patchee.load, "k") == "REAL:K"
    assert "fetch" in repr(first) and repr(second) == "<Patch (nothing)>"
