"""The one value a run judges against: :class:`Judged`, made by :func:`judged_at`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.judged.choice import (
    JudgedError,
    RevisionChoice,
    choose_revision,
    release_judged_by_its_own_code,
)

if TYPE_CHECKING:
    from conformance.backends.backend import Backend
    from conformance.judged.superseding import Superseded
    from conformance.releases.text_revision import TextRevision
    from reference.revisions.model import SpecRevision


@dataclass(frozen=True)
class Judged:
    """What a run judges against: the revision (its rules, and a ``vllm-change:``
    behaviour per change a backend must match), why it was chosen, and the vLLM text
    judged, where there is one (its version, nearest release and changes)."""

    choice: RevisionChoice
    revision: SpecRevision

    @property
    def text(self) -> TextRevision | None:
        return self.choice.text

    @property
    def types_removed(self) -> frozenset[str]:
        """The spec types the judged vLLM text does not define: not applicable."""
        return self.text.types_removed if self.text is not None else frozenset()

    def label(self) -> str:
        return self.choice.label()

    def superseded(self, check_timeout: float | None) -> dict[str, Superseded]:
        """The nearest revision's checks the judged vLLM text fails itself (its self-run,
        cached); none without a text.  :class:`JudgedError` when the self-run fails."""
        from conformance.judged.superseding import SelfRunError, superseded_checks

        if self.text is None:
            return {}
        try:
            return superseded_checks(self.text, check_timeout)
        except SelfRunError as error:
            raise JudgedError(str(error)) from None


def judged_at(option: str | None, backend: Backend, spelled: str = "--revision") -> Judged:
    """What ``option`` (``spelled`` so on the command line; else the backend's
    declaration, else the default) names, judged: :class:`JudgedError` (one line) when
    it names nothing that can be."""
    from conformance.oracle import revisions

    choice = release_judged_by_its_own_code(choose_revision(option, backend, spelled))
    if choice.text is not None:
        return Judged(choice, choice.text.spec_revision())
    return Judged(choice, revisions.revision(choice.name))
