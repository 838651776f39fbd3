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


def revision_changes(known: Any, new: Any) -> list[Change]:
    """The changes between two revisions' data (``SpecRevision``), for a side that has no
    text (2025.10): types, fields and methods as the revisions list them."""
    module = "vllm.v1.outputs"
    found: list[Change] = []
    for name, spec in new.types.items():
        before = known.types.get(name)
        if before is None:
            found.append(Change(module, name, "", "type added", None, f"{spec.kind} {name}"))
            continue
        if before.kind != spec.kind:
            found.append(Change(module, name, "", "kind changed", before.kind, spec.kind))
        old_fields = {f.name: f for f in before.fields}
        new_fields = {f.name: f for f in spec.fields}
        for field_name, f in new_fields.items():
            was = old_fields.get(field_name)
            if was is None:
                found.append(Change(module, name, field_name, "field added", None, _field_form(f)))
                continue
            if was.annotation != f.annotation:
                found.append(
                    Change(
                        module, name, field_name, "field retyped", _field_form(was), _field_form(f)
                    )
                )
            if (was.default, _factory_result(was)) != (f.default, _factory_result(f)):
                found.append(
                    Change(
                        module,
                        name,
                        field_name,
                        "field re-defaulted",
                        _field_form(was),
                        _field_form(f),
                    )
                )
        found += [
            Change(module, name, n, "field removed", _field_form(f), None)
            for n, f in old_fields.items()
            if n not in new_fields
        ]
        old_methods = {m.name: m for m in before.methods}
        new_methods = {m.name: m for m in spec.methods}
        for method_name, m in new_methods.items():
            was_method = old_methods.get(method_name)
            if was_method is None:
                found.append(Change(module, name, method_name, "method added", None, m.render()))
            elif was_method != m:
                found.append(
                    Change(
                        module,
                        name,
                        method_name,
                        "signature changed",
                        was_method.render(),
                        m.render(),
                    )
                )
        found += [
            Change(module, name, n, "method removed", m.render(), None)
            for n, m in old_methods.items()
            if n not in new_methods
        ]
    found += [
        Change(module, name, "", "type removed", f"{spec.kind} {name}", None)
        for name, spec in known.types.items()
        if name not in new.types
    ]
    return found


def _factory_result(f: Any) -> Any:
    return repr(f.default_factory()) if f.default_factory is not None else None


def _field_form(f: Any) -> str:
    if f.default_factory is not None:
        return f"{f.name}: {f.annotation} = field(default_factory=...) -> {f.default_factory()!r}"
    if f.has_default:
        return f"{f.name}: {f.annotation} = {f.default!r}"
    return f"{f.name}: {f.annotation}"
