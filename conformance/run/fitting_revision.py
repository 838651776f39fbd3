"""The revision whose fields a backend's types have, where it is judged by another.

A module of one release's types judged at another fails dozens of checks, each a
consequence of the same fact: its types are the other release's.  The run's header says
so in one line, naming the revision they fit and how to judge or bump from there.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

from reference.revisions import all_revisions
from reference.revisions.model import SpecRevision


def field_names_of(cls: Any) -> tuple[str, ...] | None:
    """A dataclass's or NamedTuple's fields in order; None for any other class."""
    if dataclasses.is_dataclass(cls) and isinstance(cls, type):
        return tuple(f.name for f in dataclasses.fields(cls))
    fields = getattr(cls, "_fields", None)
    return fields if isinstance(fields, tuple) else None


def differing_types(module: ModuleType, revision: SpecRevision) -> int:
    """How many of ``revision``'s types ``module`` lacks or holds other fields in."""
    count = 0
    for name, spec in revision.types.items():
        cls = getattr(module, name, None)
        if cls is None or (spec.field_names and field_names_of(cls) != spec.field_names):
            count += 1
    return count


def fitting_revision_line(module: ModuleType, judged: SpecRevision) -> str | None:
    """One line naming the newest revision whose every type ``module`` holds with the
    same fields, where ``judged`` is not one; else None (a module no revision fits
    exactly, its own fields added, say, gets no guess)."""
    own = differing_types(module, judged)
    if own == 0:
        return None
    fitting = [r for r in all_revisions() if differing_types(module, r) == 0]
    if not fitting:
        return None
    best = fitting[-1]
    return (
        f"the module's types have the fields of revision {best.name}, not those of "
        f"{judged.name} ({own} type(s) differ): --revision {best.name} judges them by their "
        f"own, --bump-to {judged.name} from there lists what moving breaks"
    )
