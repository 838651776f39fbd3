"""The header a conformance run prints: the backend, what it is judged against, where."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from conformance.version import suite_version

if TYPE_CHECKING:
    import pytest

    from conformance.backends.backend import Backend
    from conformance.judged import RevisionChoice
    from conformance.producers.warm_up import WarmUp
    from conformance.releases.text_revision import TextRevision
    from conformance.report.provenance import Provenance
    from conformance.run.bump import Bump
    from reference.revisions.model import SpecRevision


class ConformanceRun(Protocol):
    """What the header reads of a run (:class:`conformance.run.session.ConformanceRun`)."""

    config: pytest.Config
    backend: Backend
    revision: SpecRevision
    choice: RevisionChoice
    devices_available: list[str]
    provenance: Provenance
    warm_up: WarmUp | None
    bump: Bump | None
    xfails: list[Any]
    superseded: dict[str, Any]

    @property
    def text_revision(self) -> TextRevision | None: ...


def header_lines(run: ConformanceRun) -> list[str]:
    """The lines pytest prints above a run: what is judged, where, and how."""
    import platform

    import torch

    b = run.backend
    lines = [
        f"conformance: backend {b.name} {b.version or '(no version)'} "
        f"(module {b.module_name}, from {b.source!r})",
        f"conformance: spec revision {run.choice.describe()}, "
        f"suite {suite_version() or '(unknown)'}",
        f"conformance: devices declared {', '.join(b.devices)}; "
        f"present here {', '.join(run.devices_available)}",
    ]
    where = f"Python {platform.python_version()}, torch {torch.__version__}"
    lines += [f"conformance: {line}" for line in run.provenance.header(where)]
    from conformance.producers.runtime import producer_devices

    if b.make_async_output is not None:
        judged = [d.value for d in producer_devices(b) if d.skip is None]
        lines.append(
            f"conformance: async output judged on {', '.join(judged) or 'no device'}"
            + (
                " (a simulated runtime: the device is not on this machine)"
                if any(v.endswith("-simulated") for v in judged)
                else ""
            )
        )
    from conformance.run.selection import steps_not_declared_line

    if b.make_async_output is not None and (unsupported := steps_not_declared_line(b)):
        lines.append(f"conformance: {unsupported}")
    from conformance.run.fitting_revision import fitting_revision_line

    if run.bump is None and (fitting := fitting_revision_line(b.module, run.revision)):
        lines.append(f"conformance: {fitting}")
    lines += _runners_header(run)
    lines += _text_header(run)
    if run.bump is not None:
        summary = run.bump.from_report.get("summary") or {}
        counts = ", ".join(
            f"{summary[key]} {key}"
            for key in ("passed", "failed", "errors", "xfailed")
            if summary.get(key)
        )
        lines.append(
            f"conformance: bump from {run.bump.from_label} to {run.bump.to_label} "
            f"(judged at {run.bump.from_label} too: {counts or 'nothing ran'})"
        )
    warmed = run.warm_up.header() if run.warm_up is not None else None
    if warmed:
        lines.append(f"conformance: {warmed}")
    if run.xfails:
        path = run.config.getoption("conformance_xfails")
        lines.append(f"conformance: {len(run.xfails)} known deviation(s) from {path}")
    lines += [f"conformance: note: {note}" for note in b.notes]
    return lines


def _text_header(run: ConformanceRun) -> list[str]:
    """The vLLM text judged: its nearest release, and each change once."""
    judged = run.text_revision
    if judged is None:
        return []
    lines = [f"conformance: judged against {judged.headline()}"]
    for change in judged.changes:
        forms = f"{change.known or '-'} -> {change.new or '-'}"
        lines.append(f"conformance:   {change.describe()}: {forms}")
    if run.superseded:
        lines.append(
            f"conformance: {len(run.superseded)} check(s) of {judged.base} that vLLM's own "
            "text fails are judged against its own code instead (vllm-change behaviours)"
        )
    return lines


def _runners_header(run: ConformanceRun) -> list[str]:
    """The release's default GPU runner and each async output class judged."""
    from conformance.producers.runners import async_outputs_key

    key = async_outputs_key(run.backend, run.revision)
    lines = []
    default = key["default_runner"]
    release = run.backend.version if run.backend.name == "vllm" else None
    if default is not None:
        of = f"vLLM {release}" if release else f"revision {run.revision.name}"
        lines.append(
            f"conformance: {of}'s default GPU runner: {default['runner']} ({default['why']})"
        )
    if len(key["judged"]) > 1:
        lines.append(f"conformance: async outputs judged: {'; '.join(key['judged'])}")
    if run.backend.name == "vllm":
        from conformance.backends.vllm_producers import gatherings_found

        if gatherings := gatherings_found():
            lines.append(f"conformance: gatherings found: {'; '.join(gatherings)}")
    return lines
