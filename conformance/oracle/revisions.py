"""Spec revisions as data, as the conformance suite reads them.

The data and the behaviour catalogue live in :mod:`reference.revisions` (the
reference builds its implementation of each revision from the same data); this
module is the suite's view of it.
"""

from __future__ import annotations

import re
from pathlib import Path

from reference.revisions import (
    DEFAULT_REVISION,
    ReleaseTooOldError,
    UnknownRevisionError,
    UnsupportedReleaseError,
    all_revisions,
    canonical_name,
    known_releases,
    known_revisions,
    revision,
    revision_for_vllm_version,
)
from reference.revisions.behaviours import BEHAVIOURS, PRODUCER_BEHAVIOURS, is_known, rule
from reference.revisions.model import (
    NO_DEFAULT,
    FieldSpec,
    MethodSpec,
    ParameterSpec,
    SpecRevision,
    TypeSpec,
    surface_behaviour,
)


def names_a_path(text: str) -> bool:
    """Whether a revision option names a path (a vLLM text, tree or wheel) rather than a
    revision or release, which never has a slash nor ends in .py, .txt or .whl.  A
    version or revision name (``0.11.0``, ``2025.10``) is never read as a path, even
    where a folder of that name lies in the working directory."""
    text = text.strip()
    if "/" in text or "\\" in text or text.endswith((".py", ".txt", ".whl")):
        return True
    if _VERSION_LIKE.match(text.removeprefix("v")):
        return False
    return Path(text).expanduser().exists()


_VERSION_LIKE = re.compile(r"^\d+(\.\d+)*([.+\-]?[A-Za-z0-9.+\-]*)?$")


__all__ = [
    "BEHAVIOURS",
    "DEFAULT_REVISION",
    "NO_DEFAULT",
    "PRODUCER_BEHAVIOURS",
    "FieldSpec",
    "MethodSpec",
    "ParameterSpec",
    "ReleaseTooOldError",
    "SpecRevision",
    "TypeSpec",
    "UnknownRevisionError",
    "UnsupportedReleaseError",
    "all_revisions",
    "canonical_name",
    "is_known",
    "known_releases",
    "known_revisions",
    "names_a_path",
    "revision",
    "revision_for_vllm_version",
    "rule",
    "surface_behaviour",
]
