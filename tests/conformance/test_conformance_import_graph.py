"""The layering holds: no import cycle inside conformance/, and the plugin stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import conformance

PACKAGE = Path(conformance.__file__).resolve().parent


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Modules of conformance that ``path`` imports, at any depth, ``TYPE_CHECKING`` blocks
    included: a cycle hidden from the interpreter still tangles the layers for a reader."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("conformance")
        ):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("conformance"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {
        name: {m for m in _imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt == "conformance":
                continue  # the package's own lazy __getattr__ re-exports, not a layer
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_no_import_cycle_inside_conformance() -> None:
    assert _cycle(_graph()) is None


def test_loading_the_plugin_imports_neither_torch_nor_the_reference() -> None:
    code = (
        "import sys, conformance.run.plugin, conformance.backends.backend; "
        "print(sorted(m for m in ('torch', 'reference', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _package_of(module: str) -> str:
    """``conformance.run.session`` -> ``conformance.run``; top-level modules stay themselves."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_import_cycle_between_the_packages_of_conformance() -> None:
    # The rooms are layered too: backends and producers below the oracle and the
    # report, the run above them, the command line on top.
    packages: dict[str, set[str]] = {}
    for module, imported in _graph().items():
        own = _package_of(module)
        packages.setdefault(own, set()).update(
            _package_of(m) for m in imported if _package_of(m) != own
        )
    assert _cycle(packages) is None
