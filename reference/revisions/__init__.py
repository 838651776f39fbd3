"""Every spec revision: its data, its behaviours, and the reference's implementation of it.

    >>> from reference import revisions
    >>> revisions.canonical_name("0.15.1")       # a release is an alias of its revision
    '0.14.0'
    >>> revisions.revision("0.12.0").has("LogprobsLists.slice_request")
    True
    >>> module = revisions.reference_module("0.12.0")   # the reference of 0.12.0 # doctest: +SKIP

``2025.10`` (the seed spec page) is the default; ``import reference`` is its
hand-written transcription.  Every other revision's reference is built from the
revision's data and behaviours (:mod:`reference.revisions.build`).
"""

from __future__ import annotations

import difflib
import functools
from types import ModuleType
from typing import Any

from packaging.version import InvalidVersion, Version

from reference.revisions.model import SpecRevision
from reference.revisions.releases import FIRST_SUPPORTED_RELEASE, RELEASE_REVISIONS
from reference.revisions.rev_2025_10 import REVISION as REVISION_2025_10

DEFAULT_REVISION = "2025.10"

# 2025.10 sits between 0.11.0 and 0.11.1, where vLLM's main branch was.
_ALL: tuple[SpecRevision, ...] = (*RELEASE_REVISIONS[:2], REVISION_2025_10, *RELEASE_REVISIONS[2:])
_BY_NAME = {r.name: r for r in _ALL}
_RELEASE_TO_REVISION = {release: r.name for r in RELEASE_REVISIONS for release in r.releases}


class UnknownRevisionError(ValueError):
    """A revision name that is neither a revision nor a known release."""


class UnsupportedReleaseError(ValueError):
    """A vLLM version this suite cannot judge (too old, too new, or unreadable)."""


class ReleaseTooOldError(UnsupportedReleaseError):
    """A vLLM older than 0.10.2: it lacks spec types, so no revision can judge it."""


def known_revisions() -> tuple[str, ...]:
    """Revision names in release order (2025.10 between 0.11.0 and 0.11.1)."""
    return tuple(r.name for r in _ALL)


def all_revisions() -> tuple[SpecRevision, ...]:
    return _ALL


def known_releases() -> tuple[str, ...]:
    """Every vLLM release this suite has a revision for, oldest first."""
    return tuple(_RELEASE_TO_REVISION)


def canonical_name(name: str) -> str:
    """The revision ``name`` denotes: itself, or the revision of the release ``name``."""
    name = name.strip()
    if name in _BY_NAME:
        return name
    if name in _RELEASE_TO_REVISION:
        return _RELEASE_TO_REVISION[name]
    raise UnknownRevisionError(f"unknown spec revision {name!r}; {_what_was_meant(name)}")


#: A spec revision is named by its year (``2025.10``); a vLLM release number is smaller.
CALENDAR_YEARS = 1000


def _what_was_meant(name: str) -> str:
    """The likely intended revision, or why none fits, and where to look."""
    listing = "python -m conformance --list-revisions lists them"
    try:
        parsed = Version(name)
    except InvalidVersion:
        parsed = None
    # A calendar name (2025.1) is a spec revision mistyped, not a vLLM release.
    if parsed is not None and parsed.release[0] < CALENDAR_YEARS:
        release = ".".join(map(str, (*parsed.release, 0, 0)[:3]))
        if release in _RELEASE_TO_REVISION:
            return f"did you mean {release}? ({listing})"
        if Version(release) < Version(FIRST_SUPPORTED_RELEASE):
            return (
                f"vLLM {release} lacks spec types (AsyncModelRunnerOutput and DraftTokenIds came "
                f"in {FIRST_SUPPORTED_RELEASE}); this suite judges {FIRST_SUPPORTED_RELEASE} and later"
            )
        return f"did you mean {_nearest_release(Version(release))}? ({listing})"
    close = difflib.get_close_matches(
        name, [*known_revisions(), *known_releases()], n=1, cutoff=0.8
    )
    return (
        f"known revisions: {', '.join(known_revisions())} (a vLLM release from "
        f"{FIRST_SUPPORTED_RELEASE} on names its revision too; {listing})"
        + (f"; did you mean {close[0]}?" if close else "")
    )


def _nearest_release(version: Version) -> str:
    """The known release nearest ``version`` by number, not by spelling (0.24.1 ->
    0.24.0, never 0.27.1): the newest of its minor series at or below it, else the newest
    release below it, else the oldest above."""
    known = sorted(map(Version, known_releases()))
    series = [r for r in known if r.release[:2] == version.release[:2]]
    below = [r for r in (series or known) if r <= version]
    if below:
        return str(below[-1])
    return str(min(series or known, key=lambda r: r))


def revision(name: str) -> SpecRevision:
    """The revision named ``name`` (a revision name or a release it covers)."""
    return _BY_NAME[canonical_name(name)]


def revision_for_vllm_version(version: str) -> str:
    """The revision that judges an installed vLLM of ``version``.

    A release the suite knows maps to its revision; a pre-release, dev or local
    build (``0.12.0rc1``, ``0.12.0+cu128``) to that of its release number; an
    unknown patch release to the newest known release before it.  Older than
    0.10.2 or newer than the newest known release raises
    :class:`UnsupportedReleaseError`.
    """
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise UnsupportedReleaseError(
            f"vLLM version {version!r} cannot be read; choose the revision with --revision"
        ) from None
    base = Version(".".join(map(str, parsed.release)))
    if base < Version(FIRST_SUPPORTED_RELEASE):
        raise ReleaseTooOldError(
            f"vLLM {version} lacks spec types (AsyncModelRunnerOutput and DraftTokenIds came in "
            f"{FIRST_SUPPORTED_RELEASE}); this suite judges vLLM {FIRST_SUPPORTED_RELEASE} and later"
        )
    newest = known_releases()[-1]
    if base > Version(newest):
        raise UnsupportedReleaseError(
            f"vLLM {version} is newer than the newest release this suite knows ({newest}); "
            f"judge it against that one explicitly with --revision {newest}, or update the suite"
        )
    known = [r for r in known_releases() if Version(r) <= base]
    return _RELEASE_TO_REVISION[known[-1]]


@functools.cache
def reference_module(name: str) -> ModuleType:
    """The reference implementation of revision ``name``, as a module of its spec names."""
    canonical = canonical_name(name)
    if canonical == DEFAULT_REVISION:
        import reference

        return reference
    from reference.revisions.build import build_module

    return build_module(_BY_NAME[canonical])


def __getattr__(attribute: str) -> Any:
    # Built classes are pickled by reference as ``reference.revisions.<r_X_Y_Z>.<Type>``:
    # this resolves that path, building the revision on first use in a new process.
    from reference.revisions.build import module_attribute_name, revision_of_attribute

    name = revision_of_attribute(attribute)
    if name is None:
        raise AttributeError(f"module 'reference.revisions' has no attribute {attribute!r}")
    module = reference_module(name)
    assert module_attribute_name(name) == attribute
    return module


__all__ = [
    "DEFAULT_REVISION",
    "ReleaseTooOldError",
    "SpecRevision",
    "UnknownRevisionError",
    "UnsupportedReleaseError",
    "all_revisions",
    "canonical_name",
    "known_releases",
    "known_revisions",
    "reference_module",
    "revision",
    "revision_for_vllm_version",
]
