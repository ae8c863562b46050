"""splice's layers import one way (docs/architecture.md, "Packages and layers").

Every import in ``splice/`` is read from the source: module-level and function-level
``import``/``from`` statements, and ``sys.modules["splice..."]`` lookups (how a module
reaches one above it without an import statement). An import from a higher layer, or one
that closes a cycle between modules, fails the test unless ``KNOWN`` lists it; an entry of
``KNOWN`` that no longer happens fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import splice

ROOT = Path(splice.__file__).parent

#: lowest first; a module may import from its own layer and the ones before it
LAYERS: list[tuple[str, ...]] = [
    ("splice.pristine", "splice.errors", "splice.compat", "splice._version", "splice.forks",
     "splice._classes",
     "splice.world_age", "splice.keys", "splice.lazy", "splice.exec_sources"),
    ("splice.ir",),
    ("splice.infer",),
    # the tools over typed IR read the abstract values inference leaves on temps; they sit
    # with the other IR tools, where a plugin author looks for them
    ("splice.ir.typed_tools",),
    ("splice.hooks",),
    ("splice.cache",),
    ("splice.compiler",),
    ("splice.runtime",),
    ("splice.plugin", "splice.reflection"),
    ("splice.plugins", "splice.program", "splice.cli", "splice.__main__", "splice"),
    ("splice.tools", "splice.integrations"),
]

#: (importing module, imported module) -> why it still goes against the order
KNOWN: dict[tuple[str, str], str] = {
    ("splice", "splice.integrations.ipython"): "%load_ext splice finds its function on the "
                                               "package itself (imported only when IPython "
                                               "loads the extension)",
}


#: cycles between modules of one layer (sorted), each closed by imports inside functions
KNOWN_CYCLES: list[list[str]] = []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str) -> Iterator[str]:
    package = module if module == "splice" else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            # ``from package import name``: the submodule ``name`` if it is one (see _graph)
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "modules" and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, str):
            yield node.slice.value


def _layer(module: str) -> int:
    found = -1
    for index, group in enumerate(LAYERS):
        for prefix in group:
            if module == prefix or (prefix != "splice" and module.startswith(prefix + ".")):
                found = index
    assert found >= 0, f"{module} is in no layer: add it to LAYERS"
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        graph[module] = {name for name in _imports(ast.parse(path.read_text()), module)
                         if name == "splice" or name.startswith("splice.")}
    modules = set(graph)
    for module, names in graph.items():
        # ``from package import name``: the submodule when ``name`` is one, else the package
        found = {name if name in modules else name.rsplit(".", 1)[0] for name in names}
        graph[module] = {name for name in found if name in modules} - {module}
    return graph


def test_imports_follow_the_layers() -> None:
    graph = _graph()
    assert len(graph) > 60
    against = {(module, name) for module, names in graph.items() for name in names
               if _layer(name) > _layer(module)}
    assert against - KNOWN.keys() == set(), "imports against docs/architecture.md's order"
    assert KNOWN.keys() - against == set(), "fixed: remove these entries from KNOWN"


def test_no_cycles_but_the_known_ones() -> None:
    """Cycles between modules (within a layer too) other than those the known imports
    against the order close."""
    graph = _graph()
    pruned = {module: {name for name in names if (module, name) not in KNOWN
                       and name in graph}
              for module, names in graph.items()}
    cycles = [component for component in _components(pruned) if len(component) > 1]
    assert [c for c in cycles if c not in KNOWN_CYCLES] == [], f"import cycles: {cycles}"
    assert [c for c in KNOWN_CYCLES if c not in cycles] == [], "fixed: update KNOWN_CYCLES"


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
