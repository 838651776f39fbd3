"""Node ids as the report writes them, whatever the rootdir and install location."""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1]
CHECKS_DIR = PACKAGE_DIR / "checks"


def in_checks(path: Path | str) -> bool:
    return CHECKS_DIR in Path(path).resolve().parents


def canonical_nodeid(item: pytest.Item) -> str:
    """``conformance/checks/<module>::<test>``."""
    relative = Path(item.path).resolve().relative_to(PACKAGE_DIR).as_posix()
    _, _, rest = item.nodeid.partition("::")
    return f"conformance/{relative}::{rest}"


def shown_nodeid(config: pytest.Config) -> Callable[[Any], Any]:
    """``config.cwd_relative_nodeid`` that gives a check's canonical id (others unchanged).

    pytest before 9.2 passes node ids as strings, from 9.2 as ``NodeId`` values
    (``path``, ``names``, ``params``); either is answered in kind.  Anything else
    goes to pytest's own, so a later change of pytest costs the canonical form only.
    """
    cwd_relative = config.cwd_relative_nodeid

    def shown(nodeid: Any) -> Any:
        if isinstance(nodeid, str):
            path, separator, rest = nodeid.partition("::")
            module = canonical_module_id(path)
            if module is not None:
                return f"{module}{separator}{rest}"
        elif dataclasses.is_dataclass(nodeid) and not isinstance(nodeid, type):
            where = getattr(nodeid, "path", None)
            module = canonical_module_id(where) if isinstance(where, str) else None
            if module is not None:
                return dataclasses.replace(nodeid, path=module)
        return cwd_relative(nodeid)

    return shown


def canonical_module_id(path: str) -> str | None:
    """``conformance/checks/<module>`` for a report path naming one of the checks.

    Report paths are relative to wherever pytest counted from (rootdir, or the
    initial ``--pyargs`` path), so they are matched by their tail: the check modules
    all live directly in ``conformance/checks``.
    """
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if not name.startswith("test_") or not (CHECKS_DIR / name).is_file():
        return None
    if len(parts) > 1 and parts[-2] != "checks":
        return None
    return f"conformance/checks/{name}"


def without_device(callspec_id: str, device: str | None) -> str:
    """The parameter id of a check minus its device part (the device has its own field)."""
    if device is None:
        return callspec_id
    if callspec_id == device:
        return ""
    return callspec_id.removeprefix(f"{device}-").removesuffix(f"-{device}")


@functools.cache
def check_functions() -> dict[str, set[str]]:
    """``{"test_x.py": {"test_a", ...}}`` for every check module, read without importing it."""
    found = {}
    for path in sorted(CHECKS_DIR.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[path.name] = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        }
    return found
