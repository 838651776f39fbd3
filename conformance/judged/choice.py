"""Which revision a run judges against, and why: ``given``, ``declared``, ``detected``
or ``default`` (``--revision``, else what the backend declares or detected, else
2025.10); a path names a vLLM text, judged as its nearest release plus its changes."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.backends.backend import Backend
    from conformance.releases.text_revision import TextRevision


class JudgedError(ValueError):
    """Nothing can be judged against what was named: one line saying why and the fix."""


@dataclass(frozen=True)
class RevisionChoice:
    """The revision judged and why: ``given``, ``declared``, ``detected`` or ``default``.

    ``text`` is the vLLM text judged when the revision was a path, or a release some
    of whose members its own code judges: ``name`` is then the revision of its nearest
    known release, whose rules judge what the text did not change.
    """

    name: str
    source: str
    detail: str
    text: TextRevision | None = None
    #: The vLLM release named (``0.15.1`` judges as revision 0.14.0), where one was.
    release: str | None = None

    def describe(self) -> str:
        return f"{self.name} ({self.source}: {self.detail})"

    def label(self) -> str:
        """As people name it: the text, the release, or the revision."""
        if self.text is not None:
            return self.text.headline()
        return self.release or self.name


def choose_revision(
    option: str | None, backend: Backend, spelled: str = "--revision"
) -> RevisionChoice:
    """``option`` (the option ``spelled`` so on the user's command line), else what the
    backend declares (or detected), else 2025.10.  Any of them may be a path to a vLLM
    text, tree or wheel (:func:`text_choice`)."""
    from conformance.oracle.revisions import DEFAULT_REVISION, UnknownRevisionError, canonical_name
    from conformance.oracle.revisions import names_a_path as looks_like_path

    try:
        if option:
            given = f"{spelled} {option}"
            if looks_like_path(option):
                return text_choice(option, "given", given)
            try:
                name = canonical_name(option)
            except UnknownRevisionError as error:
                raise JudgedError(f"{spelled}: {error}") from None
            alias = f", the revision of release {option}" if name != option.strip() else ""
            return RevisionChoice(name, "given", f"{given}{alias}", release=_release(option, name))
        if backend.revision_undetectable is not None:
            raise JudgedError(backend.revision_undetectable)
        if backend.spec_revision is not None:
            detected = backend.revision_detected_from
            if looks_like_path(backend.spec_revision):
                source = "detected" if detected else "declared"
                why = detected or f"the backend targets {backend.spec_revision}"
                return text_choice(backend.spec_revision, source, why)
            name = canonical_name(backend.spec_revision)
            release = _release(backend.spec_revision, name)
            if detected:
                return RevisionChoice(name, "detected", detected, release=release)
            return RevisionChoice(
                name, "declared", f"the backend targets {backend.spec_revision}", release=release
            )
    except UnknownRevisionError as error:
        raise JudgedError(str(error)) from None
    return RevisionChoice(DEFAULT_REVISION, "default", "no revision given or declared")


def _release(asked: str, name: str) -> str | None:
    """The release a revision option names: itself if a release, else its revision's first."""
    from conformance.oracle.revisions import known_releases

    releases = known_releases()
    return asked.strip() if asked.strip() in releases else name if name in releases else None


def text_choice(path: str, source: str, why: str) -> RevisionChoice:
    """A path as the revision: the vLLM text there, judged as its nearest known release
    plus its changes; a path that holds none is refused naming it."""
    from conformance.releases.text_revision import text_revision
    from conformance.releases.texts import ReleaseTextError

    try:
        judged = text_revision(path)
    except ReleaseTextError as error:
        raise JudgedError(str(error)) from None
    return RevisionChoice(
        judged.base, source, f"{why}; judged against {judged.headline()}", judged, judged.nearest
    )


def release_judged_by_its_own_code(choice: RevisionChoice) -> RevisionChoice:
    """A release revision some of whose members vLLM's own code judges
    (``SpecRevision.judged_by_vllm``): the release's text attached, judged as a text is.
    vLLM's own text judged in its self-run is held to the revision's rules alone."""
    from conformance.judged.superseding import SELF_RUN_ENV
    from conformance.oracle.revisions import revision
    from conformance.releases.text_revision import judged_by_its_own_code
    from conformance.releases.texts import ReleaseTextError

    if choice.text is not None or os.environ.get(SELF_RUN_ENV):
        return choice
    judged = revision(choice.name)
    try:
        text = judged_by_its_own_code(judged)
    except ReleaseTextError as error:
        raise JudgedError(
            f"revision {judged.name} judges {', '.join(judged.judged_by_vllm)} against vLLM's "
            f"own code of {judged.releases[0]}, whose text is needed: {error}"
        ) from None
    if text is None:
        return choice
    return replace(choice, text=text, detail=f"{choice.detail}; {text.headline()}")
