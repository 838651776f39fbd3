"""A plugin that writes producers, not types: its spec types are vLLM's own (the
installed vLLM's, or the suite's reference standing in for them).  Judged at another vLLM
than its pin (a bump's target, a neighbour leg's ``--revision``), it is imported again
with that vLLM's text as the ``vllm`` it imports, as moving its pin would give it that
vLLM's types: what breaks is then its own code's, never vLLM's classes'."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import linecache
import os
import sys
import textwrap
from typing import Any

import pytest

from conformance.backends.backend import Backend
from conformance.judged import Judged


def with_the_targets_vllm(
    config: pytest.Config, backend: Backend, judged: Judged, target: str
) -> Backend:
    """A plugin of vLLM's own types (:func:`~conformance.backends.known.borrows_types`)
    judged at another vLLM than its pin (``target``, a bump's or ``--revision``): imported
    again with the target's text as the ``vllm`` it imports, as moving its pin gives it
    the target's types.  What breaks is then its own code's, never vLLM's classes'.
    Where it cannot be imported so, it is judged as imported, the import path as it was."""
    from conformance.backends import known, resolve
    from conformance.releases.fetch import release_outputs
    from conformance.releases.runs import installed_as_vllm, source_installed_as_vllm
    from conformance.releases.texts import ReleaseTextError

    if not known.borrows_types(backend):
        return backend
    release = next((r for r in (target, judged.choice.name) if known.is_known_release(r)), None)
    try:
        if judged.text is not None:
            installing = source_installed_as_vllm(judged.text.source)
        elif release is not None:
            installing = installed_as_vllm(release, release_outputs(release))
        else:
            return backend  # 2025.10: no vLLM text to import
    except ReleaseTextError as error:
        return noted(backend, f"vLLM {target}'s text is not at hand ({error}): judged as imported")
    before = _ImportPath.now(_plugin_packages(config, backend))
    held = contextlib.ExitStack()
    try:
        held.enter_context(installing)
        before.forget_plugin()
        moved = resolve.load_backend(config.getoption("conformance_backend"))
    except Exception as error:
        held.close()
        before.restore()
        lacked = _module_the_target_lacks(error, release)
        if lacked is not None:
            # Its own code imports what the target lacks: that is what moving the pin
            # breaks, and vLLM's classes of the pin say nothing of the target.
            fails = f"its own code imports {lacked}, which vLLM {target} does not have"
            return dataclasses.replace(
                noted(backend, f"{fails}: its other checks are not judged at {target}"),
                import_fails=fails,
            )
        # Anything else (the texts cannot stand in for the rest of vLLM it imports):
        # judged as imported at its pin.
        return noted(
            backend, f"imported with {target} as its vllm, it raised ({error}): judged as imported"
        )
    # The run at the pin is started with the import path it had; this run's ends with it.
    config.stash[_PIN_IMPORT_PATH] = before.pythonpath
    config.add_cleanup(held.close)
    config.add_cleanup(before.restore_path)
    return noted(moved, f"its types are vLLM's: imported with {target} as its vllm")


def _module_the_target_lacks(error: BaseException, release: str | None) -> str | None:
    """``vllm.x.y (at worker.py:17: `from vllm.x.y import z`)``: where the backend's import
    failed on a module of vLLM that the release's wheel does not hold (its fetched list of
    modules says so); None where it holds it (the texts stand in for a few modules only)
    or nothing says."""
    from conformance.releases.fetch import release_modules
    from conformance.source_paths import module_path

    location = getattr(error, "location", None)
    if getattr(error, "vllm_missing", None) is None or location is None or release is None:
        return None
    modules = release_modules(release)
    statement = _statement_at(*location)
    if modules is None or statement is None:
        return None
    for imported in _modules_imported(statement):
        if imported.split(".")[0] == "vllm" and imported not in modules:
            source = " ".join(ast.unparse(statement).split())
            return f"{imported} (at {module_path(location[0])}:{location[1]}: `{source}`)"
    return None


def _statement_at(path: str, line: int) -> ast.stmt | None:
    """The statement starting at ``path``'s ``line`` (an import over several lines too)."""
    text = ""
    for number in range(line, line + 20):
        text += linecache.getline(path, number)
        try:
            parsed = ast.parse(textwrap.dedent(text))
        except SyntaxError:
            continue
        return parsed.body[0] if parsed.body else None
    return None


def _modules_imported(statement: ast.stmt) -> list[str]:
    """The modules an import statement needs: ``import a.b``'s ``a.b``, ``from a.b import
    c``'s ``a.b`` (``c`` may be a name of it, not a module)."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
        return [statement.module]
    return []


def noted(backend: Backend, note: str) -> Backend:
    """``backend`` with ``note`` added to what the header tells of it."""
    return dataclasses.replace(backend, notes=(*backend.notes, note))


#: ``PYTHONPATH`` as it was before a target's vLLM was put first (None: unset).
_PIN_IMPORT_PATH = pytest.StashKey["str | None"]()
#: Top-level packages that are never a plugin's own.
_NOT_THE_PLUGINS = frozenset({"conformance", "reference", "vllm", "torch", "numpy", "builtins"})


def _plugin_packages(config: pytest.Config, backend: Backend) -> frozenset[str]:
    """The top-level packages a re-import must load afresh: the spec's module and the
    backend's types module (an entry point's name is neither)."""
    from conformance.backends import resolve

    spec = resolve.selected_spec(config.getoption("conformance_backend"))
    tops = {spec.partition(":")[0].partition(".")[0]}
    tops.add(getattr(backend.module, "__name__", "").partition(".")[0])
    return frozenset(tops - _NOT_THE_PLUGINS - {""})


@dataclasses.dataclass
class _ImportPath:
    """What importing the target's vLLM changes: the import path, ``PYTHONPATH``, the
    ``vllm`` modules and the plugin's modules loaded; put back where it fails."""

    path: list[str]
    pythonpath: str | None
    modules: dict[str, Any]
    plugin: frozenset[str]

    @classmethod
    def now(cls, plugin: frozenset[str]) -> _ImportPath:
        wanted = {"vllm", *plugin}
        modules = {n: m for n, m in sys.modules.items() if n.partition(".")[0] in wanted}
        return cls(list(sys.path), os.environ.get("PYTHONPATH"), modules, plugin)

    def forget_plugin(self) -> None:
        for name in [n for n in sys.modules if n.partition(".")[0] in self.plugin]:
            del sys.modules[name]

    def restore_path(self) -> None:
        sys.path[:] = self.path
        if self.pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.pythonpath

    def restore(self) -> None:
        self.restore_path()
        wanted = {"vllm", *self.plugin}
        for name in [n for n in sys.modules if n.partition(".")[0] in wanted]:
            del sys.modules[name]
        sys.modules.update(self.modules)


def pin_pythonpath(config: pytest.Config) -> tuple[str | None] | None:
    """The ``PYTHONPATH`` the run at the pin starts with, where this run put the target's
    vLLM first on its own (one value, None: unset); None where it did not."""
    return (config.stash[_PIN_IMPORT_PATH],) if _PIN_IMPORT_PATH in config.stash else None
