"""What one vLLM text changed against another: the differences of their surfaces.

:func:`changes_between` lists each difference once: a type added or removed (its
members come with it), a type's kind or bases changed, a field added, removed,
retyped, re-defaulted, or the fields reordered, a method added or removed, a
signature changed, a body changed (a method's or a module function's), a class
attribute or a module constant added, removed or changed.  Surfaces are normalised
(:mod:`conformance.oracle.text_surface`), so comments, docstrings and formatting never
count.  The number of changes is the distance :func:`nearest` ranks known releases by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from conformance.oracle.text_surface import Member, Surface


@dataclass(frozen=True)
class Change:
    """One difference: ``change`` of ``type.member`` in ``module``, known form -> new form."""

    module: str
    type: str
    member: str
    change: str
    known: str | None
    new: str | None

    @property
    def where(self) -> str:
        """``ModelRunnerOutput.foo``; a type itself is its name."""
        return f"{self.type}.{self.member}" if self.member else self.type

    def describe(self) -> str:
        return f"{self.change} {self.where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "member": self.member,
            "change": self.change,
            "known": self.known,
            "new": self.new,
            "module": self.module,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Change:
        return cls(
            data["module"], data["type"], data["member"], data["change"], data["known"], data["new"]
        )


def changes_between(
    known: Surface, new: Surface, modules: Iterable[str] | None = None
) -> list[Change]:
    """Every difference from ``known`` to ``new``, in the order of the new text (removals
    where the known text had them, after).  ``modules`` limits the comparison to those
    modules (default: every module either surface has)."""
    wanted = (
        set(modules)
        if modules is not None
        else {m.module for m in (*known.values(), *new.values())}
    )
    known = {k: m for k, m in known.items() if m.module in wanted}
    new = {k: m for k, m in new.items() if m.module in wanted}
    known_classes = {(m.module, m.owner) for m in known.values() if m.kind == "class"}
    new_classes = {(m.module, m.owner) for m in new.values() if m.kind == "class"}
    found: list[Change] = []
    for key, member in new.items():
        before = known.get(key)
        if member.kind == "class":
            if before is None:
                found.append(_change(member, "type added", None, member.form))
            elif before.shape != member.shape:
                found.append(_change(member, "kind changed", before.form, member.form))
            else:
                found += _reordered(known, new, member)
            continue
        if member.owner and (member.module, member.owner) not in known_classes:
            continue  # comes with its type
        if before is None:
            found.append(_change(member, f"{member.kind} added", None, member.form))
        else:
            found += _member_changes(before, member)
    for key, member in known.items():
        if key in new:
            continue
        if member.kind == "class":
            found.append(_change(member, "type removed", member.form, None))
        elif not member.owner or (member.module, member.owner) in new_classes:
            found.append(_change(member, f"{member.kind} removed", member.form, None))
    return found


def _change(member: Member, change: str, known: str | None, new: str | None) -> Change:
    return Change(member.module, member.owner or member.module, member.name, change, known, new)


def _member_changes(before: Member, after: Member) -> list[Change]:
    if before.kind != after.kind:
        return [_change(after, f"{after.kind} replaces {before.kind}", before.form, after.form)]
    if after.kind == "field":
        found = []
        if before.shape != after.shape:
            found.append(_change(after, "field retyped", before.form, after.form))
        if before.value != after.value:
            found.append(_change(after, "field re-defaulted", before.form, after.form))
        return found
    if after.kind in ("method", "function"):
        found = []
        if before.shape != after.shape:
            found.append(_change(after, "signature changed", before.form, after.form))
        if before.value != after.value:
            found.append(
                _change(after, "body changed", f"body {before.value}", f"body {after.value}")
            )
        return found
    if before.shape != after.shape or before.value != after.value:
        return [_change(after, f"{after.kind} changed", before.form, after.form)]
    return []


def _reordered(known: Surface, new: Surface, cls: Member) -> list[Change]:
    """One change when the fields both texts have come in another order."""

    def fields(surface: Surface) -> list[str]:
        own = [
            m
            for m in surface.values()
            if m.module == cls.module and m.owner == cls.owner and m.kind == "field"
        ]
        return [m.name for m in sorted(own, key=lambda m: m.position)]

    before, after = fields(known), fields(new)
    common = set(before) & set(after)
    kept_before = [n for n in before if n in common]
    kept_after = [n for n in after if n in common]
    if kept_before == kept_after:
        return []
    return [_change(cls, "fields reordered", ", ".join(kept_before), ", ".join(kept_after))]


@dataclass(frozen=True)
class Nearest:
    """The known release nearest a text, and what the text changed against it."""

    release: str
    changes: tuple[Change, ...]


def nearest(
    new: Surface,
    known: dict[str, Surface],
    newer_first: Callable[[str], Any],
    modules: Iterable[str] | None = None,
    prefer: str | None = None,
) -> Nearest:
    """The release of ``known`` with the fewest changes to ``new``; ties go to the newer
    (``newer_first`` is a sort key of release names, oldest first), except that a tie
    including ``prefer`` (the version the text says it is) goes to it."""
    if not known:
        raise ValueError("no known release to compare with")
    wanted = list(modules) if modules is not None else None
    ranked = []
    for release, surface in known.items():
        changes = changes_between(surface, new, wanted)
        ranked.append((len(changes), release == prefer, newer_first(release), release, changes))
    ranked.sort(key=lambda entry: (entry[0], not entry[1], _negated(entry[2])))
    _, _, _, release, changes = ranked[0]
    return Nearest(release, tuple(changes))


class _negated:
    """Sorts its key in reverse (the newer release first among equals)."""

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: _negated) -> bool:
        return bool(other.key < self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _negated) and bool(self.key == other.key)
