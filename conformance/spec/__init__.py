"""Spec revisions as data.  Add a revision by adding a module and a line to ``_MODULES``."""

from __future__ import annotations

import importlib

from conformance.spec.model import (
    NO_DEFAULT,
    FieldSpec,
    MethodSpec,
    ParameterSpec,
    SpecRevision,
    TypeSpec,
)

# revision -> module holding its ``REVISION`` (backend.KNOWN_SPEC_REVISIONS derives from it).
_MODULES = {"2025.10": "conformance.spec.rev_2025_10"}


def revision(name: str) -> SpecRevision:
    """The description of spec revision ``name`` (e.g. ``"2025.10"``)."""
    try:
        module = _MODULES[name]
    except KeyError:
        raise KeyError(
            f"unknown spec revision {name!r}; known: {', '.join(sorted(_MODULES))}"
        ) from None
    return importlib.import_module(module).REVISION


def known_revisions() -> tuple[str, ...]:
    return tuple(sorted(_MODULES))


__all__ = [
    "NO_DEFAULT",
    "FieldSpec",
    "MethodSpec",
    "ParameterSpec",
    "SpecRevision",
    "TypeSpec",
    "known_revisions",
    "revision",
]
