"""The package's modules import one another without a cycle.

Read from the sources (nothing is imported): each module's imports of other
aiokafka_lite modules outside functions, ``if TYPE_CHECKING:`` ones included (a cycle
through type hints is one a reader still has to go round).
A cycle makes the import order matter and the modules impossible to read one at a
time; an import inside a function (made when it is called) is how a module reaches one
that needs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aiokafka_lite

PACKAGE = Path(aiokafka_lite.__file__).parent


def module_files() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def module_level_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports outside its functions."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base] + [f"{base}.{alias.name}" for alias in child.names]
            for target in targets:
                while target and target not in known:  # a name in a module -> the module
                    target = target.rpartition(".")[0]
                # A package's own modules importing the package is Python's usual shape.
                if target and target != name and not name.startswith(target + "."):
                    found.add(target)
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as [a, b, ..., a], or None."""
    done: set[str] = set()
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for nxt in sorted(graph[node]):
            cycle = walk(nxt)
            if cycle is not None:
                return cycle
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = walk(start)
        if cycle is not None:
            return cycle
    return None


def test_no_import_cycle_among_the_modules() -> None:
    files = module_files()
    graph = {name: module_level_imports(name, path, set(files)) for name, path in files.items()}
    assert graph["aiokafka_lite._internal.sender"] >= {
        "aiokafka_lite._internal.batch_outcomes"
    }  # it reads imports
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
