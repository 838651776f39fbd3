"""A costly result built once per test session and shared by every pytest-xdist worker.

A module fixture is built once per worker that runs one of its tests: two workers, two
builds.  :func:`once_per_session` builds it under a lock in the session's temporary
folder, which the workers share, and keeps its JSON result there: the first worker to
ask builds it, the others wait and read it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole session (shared by xdist's workers)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_session(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]
) -> Any:
    """``build(folder)``'s JSON-able result, built once per session in its own ``folder``."""
    from filelock import FileLock

    shared = session_folder(tmp_path_factory)
    results = shared / f"{name}.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not results.exists():
            folder = shared / name
            folder.mkdir()
            results.write_text(json.dumps(build(folder)), encoding="utf-8")
    return json.loads(results.read_text(encoding="utf-8"))
