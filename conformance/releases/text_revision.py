"""Any vLLM text as a revision: its nearest known release, and what it changed.

``--revision PATH`` (and ``--vllm-outputs FILE``, an installed vLLM the suite does not
know, ``--bump-to PATH``) names a :class:`~conformance.releases.sources.VllmSource`.
:func:`text_revision` compares its surface with every known release's
(:mod:`conformance.releases.known_surfaces`) and keeps the nearest: the fewest
changes, ties to the newer (or to the release the text names itself).  The text is
then judged as that release's revision plus one behaviour per thing it changed that a
backend must match (:class:`JudgedChange`, named ``vllm-change:<Type>.<member>``),
judged against the text's own code (``conformance/checks/test_vllm_changes.py``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from packaging.version import Version

from conformance.oracle.revisions import SpecRevision, canonical_name, known_releases, revision
from conformance.oracle.text_surface import OUTPUTS_MODULE, Surface
from conformance.oracle.vllm_changes import Change, nearest
from conformance.releases.known_surfaces import known_surfaces
from conformance.releases.sources import VllmSource, read_source
from conformance.releases.texts import ReleaseTextError, load_text_module
from conformance.spec_names import SPEC_NAMES
from reference.revisions.behaviours import CHANGE_PREFIX

#: Producer modules, and the backend producer vLLM's code there is judged against.
PRODUCER_OF_MODULE = {
    "vllm.v1.sample.sampler": ("gather_logprobs", "LogprobsTensors"),
    "vllm.v1.sample.ops.logprobs": ("gather_logprobs", "LogprobsTensors"),
    "vllm.v1.sample.rejection_sampler": ("unpad_sampled_token_ids", "SamplerOutput"),
}
#: The async output class of vLLM's runner the suite judges a backend's against.
ASYNC_OUTPUT_CLASS = ("vllm.v1.worker.gpu_model_runner", "AsyncGPUModelRunnerOutput")

#: Changes that demand nothing of a backend: gone from vLLM (a backend may keep them),
#: or outside what a backend provides (module functions and constants of outputs.py).
_NOT_DEMANDED = ("type removed", "method removed", "function added", "function removed",
                 "constant added", "constant removed", "constant changed")  # fmt: skip


@dataclass(frozen=True)
class JudgedChange:
    """What a backend must match of one changed member: a behaviour of its own.

    ``subject`` says how it is judged: ``type`` (a new or redefined class: its shape
    and every method), ``fields`` (a field added, removed, retyped, re-defaulted, the
    fields reordered), ``method`` (added, its signature or body changed), ``producer``
    (vLLM's own producer changed: the backend's producer against it).
    """

    behaviour: str
    spec_type: str
    module: str
    type: str
    member: str
    subject: str
    changes: tuple[Change, ...]
    producer: str | None = None

    @property
    def id(self) -> str:
        """The check parameter id: ``ModelRunnerOutput.foo``, ``producer.gather_logprobs``."""
        return self.behaviour.removeprefix(CHANGE_PREFIX)

    def describe(self) -> str:
        return "; ".join(c.describe() for c in self.changes)


@dataclass(frozen=True)
class TextRevision:
    """A vLLM text judged as its nearest known release's revision plus its changes."""

    source: VllmSource
    nearest: str
    changes: tuple[Change, ...]
    judged: tuple[JudgedChange, ...]
    surface: Surface = field(default_factory=dict, compare=False, repr=False)

    @property
    def base(self) -> str:
        """The revision of the nearest release: its rules judge everything unchanged."""
        return canonical_name(self.nearest)

    @property
    def what(self) -> str:
        return self.source.what

    @property
    def types_removed(self) -> frozenset[str]:
        """The spec types the text does not define: their checks are not applicable."""
        return frozenset(
            c.type for c in self.changes if c.change == "type removed" and c.type in SPEC_NAMES
        )

    def headline(self, what: str | None = None) -> str:
        """``vLLM outputs-0.34.0.dev3.py.txt = nearest known 0.33.0 + 3 changes``
        (``what``: another name of the text, such as the path given)."""
        named = what or self.what
        return f"vLLM {named} = nearest known {self.nearest} + {changes_count(self.changes)}"

    def spec_revision(self) -> SpecRevision:
        """The base revision, with one behaviour per judged change."""
        base = revision(self.base)
        return replace(base, behaviours=base.behaviours | {j.behaviour for j in self.judged})

    def judged_change(self, behaviour: str) -> JudgedChange | None:
        return next((j for j in self.judged if j.behaviour == behaviour), None)

    def oracle_module(self) -> ModuleType:
        """The text's own outputs.py, loaded here under a module name of its own."""
        return _oracle_module(self.source)


@functools.cache
def _oracle_module(source: VllmSource) -> ModuleType:
    return load_text_module(source.outputs, f"vllm_text_{source.digest}", str(source.path))


def release_key(release: str) -> Version:
    return Version(release)


def text_revision(path: str | Path) -> TextRevision:
    """The revision ``path`` names (:class:`ReleaseTextError`, one line, when it names none)."""
    return of_source(read_source(path))


@functools.cache
def of_source(source: VllmSource) -> TextRevision:
    """``source`` judged: its nearest known release and its changes against it."""
    try:
        _oracle_module(source)
    except Exception as error:
        first = (str(error).splitlines() or [""])[0]
        raise ReleaseTextError(
            f"{source.path}: vLLM's outputs.py text does not import ({type(error).__name__}: "
            f"{first}); give vLLM's vllm/v1/outputs.py"
        ) from None
    surface = source.surface()
    supported = set(known_releases())
    known = {r: s for r, s in known_surfaces().items() if r in supported}
    modules = {m.module for m in surface.values()} if source.producers is not None else None
    if modules is None:
        modules = {OUTPUTS_MODULE}
    found = nearest(surface, known, release_key, sorted(modules), prefer=source.version)
    base = revision(canonical_name(found.release))
    judged = judged_changes(found.changes, surface, base)
    return TextRevision(source, found.release, found.changes, judged, surface)


def judged_by_its_own_code(base: SpecRevision) -> TextRevision | None:
    """A release revision whose ``judged_by_vllm`` members vLLM changed in a way no rule
    of the revision says: the release's own text, judged as the revision plus those
    changes (as a head text is), so a backend matches vLLM's own code of them.  None for a
    revision without such members.  Raises :class:`ReleaseTextError` (one line) when
    the release's text cannot be had."""
    if not base.judged_by_vllm or not base.releases:
        return None
    from conformance.releases.fetch import release_outputs

    release = base.releases[0]
    source = read_source(release_outputs(release))
    surface = source.surface()
    wanted = set(base.judged_by_vllm)
    earlier = [r for r in known_releases() if release_key(r) < release_key(release)]
    before = known_surfaces().get(earlier[-1]) if earlier else None
    from conformance.oracle.vllm_changes import changes_between

    found = [
        c for c in changes_between(before or {}, surface, [OUTPUTS_MODULE]) if c.where in wanted
    ]
    named = {c.where for c in found}
    for member in sorted(wanted - named):
        type_name, _, name = member.partition(".")
        found.append(Change(OUTPUTS_MODULE, type_name, name, "body changed", None, None))
    changes = tuple(found)
    return TextRevision(source, release, changes, judged_changes(changes, surface, base), surface)


def judged_changes(
    changes: tuple[Change, ...], surface: Surface, base: SpecRevision
) -> tuple[JudgedChange, ...]:
    """The behaviours judging ``changes``: one per changed member a backend must match."""
    groups: dict[str, JudgedChange] = {}
    for change in changes:
        made = _judging(change, surface, base)
        if made is None:
            continue
        if made.behaviour in groups:
            held = groups[made.behaviour]
            made = replace(held, changes=(*held.changes, change))
        groups[made.behaviour] = made
    return tuple(groups.values())


def _judging(change: Change, surface: Surface, base: SpecRevision) -> JudgedChange | None:
    if change.module in PRODUCER_OF_MODULE or change.module == ASYNC_OUTPUT_CLASS[0]:
        producer: str
        spec_type: str | None
        if change.module == ASYNC_OUTPUT_CLASS[0]:
            if change.type != ASYNC_OUTPUT_CLASS[1]:
                return None  # the pooling runner's output: no producer of a backend
            producer, spec_type = "make_async_output", "AsyncModelRunnerOutput"
        else:
            producer, spec_type = PRODUCER_OF_MODULE[change.module]
        return JudgedChange(
            f"{CHANGE_PREFIX}producer.{producer}", spec_type, change.module, change.type,
            "", "producer", (change,), producer,
        )  # fmt: skip
    if change.module != OUTPUTS_MODULE or change.change in _NOT_DEMANDED:
        return None
    if change.change.startswith("attribute"):
        return None
    spec_type = spec_type_of(change.type, surface, base)
    if spec_type is None:
        return None  # a class no spec type holds: not part of what a backend provides
    if change.change in ("type added", "kind changed", "fields reordered"):
        return JudgedChange(
            f"{CHANGE_PREFIX}{change.type}", spec_type, change.module, change.type, "",
            "type" if change.change != "fields reordered" else "fields", (change,),
        )  # fmt: skip
    subject = "fields" if change.change.startswith("field") else "method"
    return JudgedChange(
        f"{CHANGE_PREFIX}{change.type}.{change.member}", spec_type, change.module,
        change.type, change.member, subject, (change,),
    )  # fmt: skip


def spec_type_of(type_name: str, surface: Surface, base: SpecRevision) -> str | None:
    """The spec type a class is reported under: itself for the seven, the holder for a
    class a spec type's field (or method) names, None for a class none holds."""
    if type_name in SPEC_NAMES:
        return type_name
    known = base.types.get(type_name)
    if known is not None and known.held_by is not None:
        return known.held_by
    holders = _holders(surface)
    seen: set[str] = set()
    current = type_name
    while current not in SPEC_NAMES:
        if current in seen or current not in holders:
            return None
        seen.add(current)
        current = holders[current]
    return current


def _holders(surface: Surface) -> dict[str, str]:
    """``{class: a class whose fields or signatures name it}`` among outputs.py's classes."""
    classes = {
        m.owner for m in surface.values() if m.module == OUTPUTS_MODULE and m.kind == "class"
    }
    found: dict[str, str] = {}
    for member in surface.values():
        if member.module != OUTPUTS_MODULE or not member.owner or member.kind == "class":
            continue
        for word in set(re.findall(r"[A-Za-z_]\w*", member.shape)):
            # A spec type as holder wins over another held class.
            if (
                word in classes
                and word != member.owner
                and (word not in found or member.owner in SPEC_NAMES)
            ):
                found[word] = member.owner
    return found


def bump_changes(
    from_release: str | None,
    from_text: TextRevision | None,
    from_revision: SpecRevision,
    to_release: str | None,
    to_text: TextRevision | None,
    to_revision: SpecRevision,
) -> list[Change]:
    """The vLLM changes between two sides of a bump: their texts' (a path's own text, or
    a known release's shipped surface), else their revisions' data (2025.10 has no text)."""
    from conformance.oracle.vllm_changes import changes_between, revision_changes

    before = _side_surface(from_release, from_text)
    after = _side_surface(to_release, to_text)
    if before is None or after is None:
        return revision_changes(from_revision, to_revision)
    modules = {OUTPUTS_MODULE}
    if _has_producers(before) and _has_producers(after):
        modules |= {m.module for m in (*before.values(), *after.values())}
    return changes_between(before, after, sorted(modules))


def _side_surface(release: str | None, text: TextRevision | None) -> Surface | None:
    if text is not None:
        return text.surface
    if release is not None:
        return known_surfaces().get(release)
    return None


def _has_producers(surface: Surface) -> bool:
    return any(m.module != OUTPUTS_MODULE for m in surface.values())


def changes_count(changes: tuple[Change, ...]) -> str:
    """``1 change``, ``3 changes``: the headline's count of what vLLM changed."""
    return f"{len(changes)} change" + ("" if len(changes) == 1 else "s")
