"""The vLLM text a conformance report judged, and its bump: the keys the frame leaves out.

``vllm_text``, ``vllm_changes`` and ``bump`` (a newer suite's keys, DESIGN section 3:
readers ignore what they do not know) are read as they are, one :class:`VllmChanges`
per report that has any; a report without them gives none.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class VllmChanges:
    """What one report says about vLLM's changes: the text judged and the bump."""

    report: str
    backend: str
    text: dict[str, Any] | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    bump: dict[str, Any] | None = None


def load_vllm_changes(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> list[VllmChanges]:
    """The reports (already read by :func:`reports.load_conformance`) that judged a vLLM
    text or a bump."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found = []
    for path in map(Path, paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        text = data.get("vllm_text") if isinstance(data.get("vllm_text"), dict) else None
        changes = data.get("vllm_changes") if isinstance(data.get("vllm_changes"), list) else []
        bump = data.get("bump") if isinstance(data.get("bump"), dict) else None
        if text is None and bump is None:
            continue
        backend = (
            data.get("backend", {}).get("name") if isinstance(data.get("backend"), dict) else None
        )
        found.append(VllmChanges(str(path), str(backend), text, changes, bump))
    return found
