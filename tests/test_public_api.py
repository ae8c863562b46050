"""The public surface explains itself: exceptions exported with one base, a version, an
``explain`` report that reads well, and misuse of the API caught where it happens."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import json
import types

import pytest

import splice
from splice.plugins import Tracer


def sample(items: list[int]) -> str:
    return json.dumps(sorted(items))


def test_version_is_the_packages() -> None:
    assert splice.__version__ == importlib.metadata.version("splice")


@pytest.mark.parametrize("name", ["SpliceError", "UnsupportedError", "PluginError",
                                  "InterpreterError", "InvalidatedError",
                                  "ArgumentTypeError", "VerifyError"])
def test_errors_are_exported_with_one_base(name: str) -> None:
    error = getattr(splice, name)
    assert name in splice.__all__ and issubclass(error, splice.SpliceError)


def test_explain_prints_grouped_by_what_happened() -> None:
    class Skipping(splice.Plugin):
        def recurse(self, fn: object) -> bool:
            return getattr(fn, "__module__", "") != "json.encoder"

    plugin = Skipping()
    assert plugin.run(sample, [2, 1]) == "[1, 2]"
    report = splice.explain(plugin)
    assert all(isinstance(r, type(report[0])) for r in report)  # still the records
    text = str(report)
    assert text.startswith(f"splice.explain(Skipping): {len(report)} callees")
    assert "entered (" in text and f"  {__name__}.sample" in text
    assert "run natively: recurse returned False (" in text
    assert str(splice.explain(plugin, sample)).startswith(
        f"splice.explain(Skipping, {__name__}.sample): 1 callees")
    assert str(splice.explain(splice.Plugin())) == "splice.explain(Plugin): nothing reached yet"


class _Counting(splice.Plugin):
    def __init__(self) -> None:
        self.calls = 0

    def prehook(self, fn: object, args: object, kwargs: object) -> None:
        self.calls += 1


class _NoDumps(splice.Plugin):
    @splice.intercept(json.dumps)
    def dumps(self, value: object) -> str:
        return "offline"


def test_explain_of_a_plugin_reports_its_compositions_too() -> None:
    """What a plugin reached in a composition (the README's ``compose(NoNetwork(),
    counter).run(...)``) is in its own ``explain``, after the composition is gone too."""
    import gc

    counter = _Counting()
    assert splice.compose(_NoDumps(), counter).run(sample, [2, 1]) == "offline"
    gc.collect()  # the composition's context went with its newest plugin, _NoDumps()
    report = splice.explain(counter)
    reasons = {r.name: r.reason for r in report}
    assert reasons[f"{__name__}.sample"] == "transformed"
    assert reasons["json.dumps"] == "intercepted by _NoDumps.dumps"
    assert str(report).startswith(
        f"splice.explain(_Counting) (in compose(_NoDumps, _Counting)): {len(report)} callees")
    # alone too; a callee reached the same way in both is listed once
    counter.run(sample, [3])
    report = splice.explain(counter)
    assert str(report).startswith("splice.explain(_Counting) (alone, in compose(_NoDumps, "
                                  "_Counting)):")
    assert [r.name for r in report].count(f"{__name__}.sample") == 1
    assert {(r.name, r.reason) for r in report} >= {("json.dumps", "transformed"),
                                                    ("json.dumps", "intercepted by "
                                                     "_NoDumps.dumps")}
    # a nested run is a composition as well
    other = _Counting()
    splice.Plugin().run(other.run, sample, [1])
    assert "in compose(Plugin, _Counting)" in str(splice.explain(other))
    # a composition made anew for each run is kept once, by name, not once per run
    for _ in range(20):
        splice.compose(_NoDumps(), counter).run(sample, [1])
    gc.collect()
    from splice.runtime.plugin_state import state_of

    assert "intercepted by _NoDumps.dumps" in str(splice.explain(counter))  # (folds them)
    state = state_of(counter)
    assert len(state.compositions) <= 1 and list(state.was_reached) == \
        ["compose(_NoDumps, _Counting)"]


def test_explain_of_something_else_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match=r"explain\(\) takes a plugin .* not function"):
        splice.explain(sample)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"fn is the callee to report on .* not int"):
        splice.explain(splice.Plugin(), 42)


def test_run_and_wrap_misuse_is_a_clear_error() -> None:
    # on the class: the function took the plugin's place (before: AttributeError
    # 'function' object has no attribute 'dynamic_scope', from deep inside)
    with pytest.raises(TypeError, match=r"Plugin.run\(\) is called on a plugin object, not "
                       r"on the class: .* here sample was given where the plugin goes"):
        splice.Plugin.run(sample, [1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Plugin.run\(\) is called on a plugin object"):
        Tracer.run(sample, [1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"wrap\(\) takes the function .* not int"):
        splice.Plugin().wrap(42)  # type: ignore[type-var]
    assert splice.Plugin().run(sample, [2, 1]) == "[1, 2]"  # the right way still runs


def test_compile_of_a_value_where_a_type_goes_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match=r"argument type 2 is 3, not a type: argtypes are the "
                       r"types of sample's leading positional parameters .* "
                       r"compile\(plugin, sample, int\); the values go to splice.invoke"):
        splice.compile(splice.Plugin(), sample, list, 3)
    assert splice.compile(None, sample, list[int]) is not None


def test_intercept_misuse_is_caught_where_it_happens() -> None:
    with pytest.raises(TypeError, match="not int"):
        splice.intercept(42)
    with pytest.raises(TypeError, match=r"needs the target it replaces"):
        class Bare(splice.Plugin):
            @splice.intercept  # type: ignore[arg-type]
            def dumps(self, obj: object) -> str:
                return "x"
    with pytest.raises((TypeError, RuntimeError)) as info:
        class NotAPlugin:
            @splice.intercept(json.dumps)
            def dumps(self, obj: object) -> str:
                return "x"
    error = info.value if isinstance(info.value, TypeError) else info.value.__cause__
    assert "NotAPlugin is not one" in str(error)

    @splice.intercept(json.dumps)
    def loose(obj: object) -> str:
        return "x"
    with pytest.raises(TypeError, match="outside a class"):
        loose(1)


def test_stacked_intercepts_still_work() -> None:
    class Both(splice.Plugin):
        @splice.intercept(json.dumps)
        @splice.intercept(json.loads)
        def replaced(self, value: object) -> str:
            return "replaced"
    assert Both().run(json.dumps, 1) == Both().run(json.loads, "1") == "replaced"


def test_classes_where_plugins_belong_are_named() -> None:
    with pytest.raises(TypeError, match=r"not the class Tracer: splice.compile\(Tracer\(\)"):
        splice.compile(Tracer, sample)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not the class Tracer: compose\(Tracer\(\)"):
        splice.compose(splice.Plugin(), Tracer)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="invoke\\(\\) takes a code instance"):
        splice.invoke(sample, [1])  # type: ignore[arg-type]


def test_listing_headers_show_the_real_signature() -> None:
    def shape(a, /, b, *rest, scale: float = 1.0, **kw):  # type: ignore[no-untyped-def]
        x, (y, z) = a
        return x, y, z, b, rest, scale, kw

    text = str(splice.code_lowered(shape))
    assert "def test_listing_headers_show_the_real_signature.<locals>.shape(a, /, b, *rest, " \
        "scale: float=1.0, **kw)" in text
    assert "Pos(" not in text


def _modules_loaded_by(code: str) -> set[str]:
    """The splice modules a fresh interpreter has loaded after running ``code``."""
    import subprocess
    import sys

    script = code + "\nimport sys\nprint(*(m for m in sys.modules if m[:6] == 'splice'))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    return set(result.stdout.split())


def test_import_loads_neither_the_compiler_nor_inference() -> None:
    # ``import splice`` is the cost every script using it pays: the rest loads on first use
    loaded = _modules_loaded_by("import splice")
    assert loaded <= {"splice", "splice._version", "splice.errors", "splice.pristine",
                      "splice.lazy", "splice.exec_sources", "splice.runtime",
                      "splice.runtime.exec_watch", "splice.runtime._hooks"}, loaded


def test_code_exec_made_after_import_splice_runs_under_plugins() -> None:
    # the texts of exec'd code are recorded from ``import splice`` on, not from the first
    # run: a dataclass defined in between has an __init__ (made by exec) that runs under
    # the plugin, so its __post_init__ and what that calls are reached
    _modules_loaded_by(
        "import dataclasses, splice\n"
        "def leaf(x):\n    return x + 1\n"
        "@dataclasses.dataclass\n"
        "class D:\n    a: int\n"
        "    def __post_init__(self):\n        self.b = leaf(self.a)\n"
        "seen = []\n"
        "class Sees(splice.Plugin):\n"
        "    @splice.intercept(leaf)\n"
        "    def leaf(self, x):\n"
        "        seen.append(x)\n"
        "        return self.recurse_call(leaf, x)\n"
        "assert Sees().run(lambda: D(1).b) == 2\n"
        "assert seen == [1], seen\n")


def test_a_plugin_without_typed_stages_never_loads_the_abstract_interpreter() -> None:
    loaded = _modules_loaded_by(
        "import splice\n"
        "def f(x):\n    return [i * x for i in range(3)]\n"
        "assert splice.Plugin().run(f, 2) == [0, 2, 4]\n")
    assert "splice.compiler.pipeline" in loaded  # (it did compile)
    assert "splice.infer.interpreter" not in loaded


def test_names_read_lazily_are_the_defining_modules_objects() -> None:
    from splice.plugin import Plugin, explain
    from splice.reflection import code_typed

    assert (splice.Plugin, splice.explain, splice.code_typed) == (Plugin, explain, code_typed)
    assert splice.ir.roundtrip is importlib.import_module("splice.ir").roundtrip
    assert set(splice.__all__) <= set(dir(splice))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        splice.nothing_here  # noqa: B018


def _imported_for_type_checkers(package: types.ModuleType) -> dict[str, str]:
    """name -> module of the imports a package makes under ``if TYPE_CHECKING:``."""
    tree = ast.parse(inspect.getsource(package))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
                found.update((alias.asname or alias.name, stmt.module) for alias in stmt.names)
    return found


@pytest.mark.parametrize("name", ["splice", "splice.infer"])
def test_lazy_names_agree_with_all_and_the_type_checkers_imports(name: str) -> None:
    # a package lists each lazily exported name three times (the table, ``__all__``, the
    # imports type checkers read): a name added to one and not the others fails here
    package = importlib.import_module(name)
    table = package._LAZY
    assert set(table) <= set(package.__all__)
    assert _imported_for_type_checkers(package) == table
    for exported in package.__all__:
        assert hasattr(package, exported), exported
