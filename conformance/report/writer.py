"""The JSON conformance report (schema ``conformance-report/1``, DESIGN.md section 3).

:func:`build` makes it from a finished run's records, :func:`write` writes it whole or
not at all, :func:`unwritable` says up front why a path cannot take it.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from conformance.backends.backend import Backend
from conformance.files import write_whole
from conformance.report.records import Results
from conformance.report.schema import SCHEMA
from conformance.report.vllm_changes import text_keys


class ReportedRun(Protocol):
    """What a report is built from: a conformance run (``conformance.run.session.ConformanceRun``).

    Named here, by the writer, so the run's modules import the report and never the
    other way round."""

    backend: Backend
    revision: Any
    choice: Any
    devices_available: list[str]
    results: Results
    #: ``conformance.report.provenance.Provenance``: the machine, the vLLM judged, the run.
    provenance: Any


def async_outputs_key(backend: Any, revision: Any) -> dict[str, Any]:
    from conformance.producers.runners import async_outputs_key as key

    return key(backend, revision)


def build(run: ReportedRun) -> dict[str, Any]:
    """The JSON report of DESIGN.md section 3, with where it ran (``machine``, ``vllm``, ``run``)."""
    import torch

    from conformance.version import suite_version

    backend = run.backend
    return {
        "schema": SCHEMA,
        "spec_revision": run.choice.name,
        "spec_revision_source": run.choice.source,
        "spec_revision_detail": run.choice.detail,
        "spec_revision_releases": list(run.revision.releases),
        "backend": {
            "name": backend.name,
            "module": backend.module_name,
            "version": backend.version,
            "devices_declared": list(backend.devices),
            # The step kinds its runner builds (None: all the revision's runner builds).
            "steps_declared": None if backend.steps is None else list(backend.steps),
        },
        # What the step declaration leaves unsupported, one entry per kind: its checks
        # are skipped as not applicable (skip_cause step-not-declared).
        "steps_not_declared": _steps_not_declared(backend),
        "suite": {"version": suite_version()},
        "platform": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "devices_available": run.devices_available,
            # Device types whose runtime was simulated for the async output checks.
            "simulated_devices": _simulated_devices(backend),
        },
        # Where it ran and which run it was (conformance.report.provenance): the only
        # part of the report that differs between two runs of the same checks.
        "machine": run.provenance.machine,
        "vllm": run.provenance.vllm,
        "run": run.provenance.stamp.as_json(),
        "async_outputs": async_outputs_key(backend, run.revision),
        "summary": run.results.summary(),
        "tests": [asdict(r) for r in run.results.sorted_records()],
        # The vLLM text judged and what it changed (conformance.report.vllm_changes).
        **text_keys(run),
    }


def _steps_not_declared(backend: Backend) -> list[dict[str, str]]:
    from conformance.backends.step import STEP_KINDS

    if backend.make_async_output is None:
        return []
    return [{"kind": k, "unsupported": STEP_KINDS[k]} for k in backend.steps_not_declared()]


def _simulated_devices(backend: Any) -> list[str]:
    if backend.make_async_output is None:
        return []
    from conformance.producers.runtime import SIMULATED, producer_devices

    return [
        d.value.removesuffix(SIMULATED)
        for d in producer_devices(backend)
        if d.value.endswith(SIMULATED)
    ]


@dataclass(frozen=True)
class Unwritable:
    """Why a file cannot be written where asked, and the fix that path alone allows."""

    reason: str
    fix: str | None = None  #: ``give a file name``; None: only another path will do

    def __str__(self) -> str:
        return f"{self.reason}; {self.fix}" if self.fix else self.reason

    def with_another_path(self) -> str:
        """Its fix, or the other one: one fix or the other, not two orders."""
        if self.fix:
            return f"{self.reason}; {self.fix}, or choose another path"
        return f"{self.reason}; choose another path"


def unwritable(path: Path, replaces: str | None = None) -> Unwritable | None:
    """Why the report cannot be written at ``path`` (checked before any check runs), or None.

    ``replaces``: the schema (``conformance-report/1``) of the only file the report may
    replace there, an earlier report of its kind; any other file is kept (a typo, or the
    xfails file given to the wrong option, would otherwise lose it).
    """
    try:
        path = path.resolve() if path.is_symlink() else path  # written where it points
    except (OSError, RuntimeError):  # a loop of links: Python 3.11 raises RuntimeError
        return Unwritable("it is a link that leads nowhere (a loop of links)", "give a file name")
    if path.is_dir():
        return Unwritable("it is a folder", "give a file name")
    if path.exists() and not path.is_file():
        return Unwritable("it is not a regular file (a device, a pipe)", "give a file name")
    existing = path.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return Unwritable(f"{existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK) or not _can_create_in(existing):
        return Unwritable(f"the folder {existing} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        return Unwritable("the file is not writable")
    if replaces is not None and path.is_file() and not _holds_report(path, replaces):
        return Unwritable(
            f"it exists and is no {replaces.partition('/')[0].replace('-', ' ')} (a run replaces only an "
            "earlier report)",
            "remove it if it may go",
        )
    return None


def _holds_report(path: Path, schema: str) -> bool:
    """Whether ``path`` is empty or a JSON report of ``schema``'s kind (any version)."""
    if path.stat().st_size == 0:
        return True
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    kind = schema.partition("/")[0] + "/"
    return isinstance(data, dict) and str(data.get("schema", "")).startswith(kind)


def _can_create_in(folder: Path) -> bool:
    """Whether a file can be made in ``folder``: asked of the file system itself, since
    permission bits say yes to root (and to nobody's /proc or read-only mounts)."""
    try:
        handle, probe = tempfile.mkstemp(prefix=".conformance-probe-", dir=folder)
    except OSError:
        return False
    os.close(handle)
    os.unlink(probe)
    return True


def write(report: dict[str, Any], path: str | Path) -> Path:
    """Write ``report`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    path = Path(path)
    write_whole(path, json.dumps(report, indent=2) + "\n")
    return path
