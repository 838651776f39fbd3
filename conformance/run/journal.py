"""The supervisor's journal: a run so far, from which the parent finishes the report.

``python -m conformance`` runs the suite in a child process
(:mod:`conformance.run.supervisor`).  The child appends to
``$CONFORMANCE_SUPERVISOR_DIR/journal`` as it goes: the report's header and plan
once, then each check's start, finish and record, and the end.  Each entry is one
JSON line in one unbuffered write, so what was written survives ``os._exit`` and a
fatal signal.  :class:`Journal` writes the format and :func:`replay` reads it back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.report.records import TestRecord

JOURNAL_ENV = "CONFORMANCE_SUPERVISOR_DIR"
_FILE = "journal"


class Journal:
    """Writes the journal of the run in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fd = os.open(folder / _FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    @classmethod
    def of_supervisor(cls, folder: str | None, *, is_worker: bool) -> Journal | None:
        """The journal the supervisor asked for (``folder``: :func:`take_supervisor_folder`),
        in the process that runs the checks."""
        return cls(Path(folder)) if folder and not is_worker else None

    def planned(self, skeleton: dict[str, Any], plan: Iterable[TestRecord]) -> None:
        self._write(skeleton=skeleton, plan=[asdict(r) for r in plan])

    def started(self, nodeid: str) -> None:
        self._write(start=nodeid)

    def finished(self, nodeid: str) -> None:
        self._write(finish=nodeid)

    def recorded(self, record: TestRecord) -> None:
        self._write(record=asdict(record))

    def ended(self) -> None:
        self._write(finished=True)

    def warming(self, producer: str | None) -> None:
        """The producer whose first call (the warm-up, before any check) starts now; None
        once the warm-up is over.  A process that dies there leaves no other trace: no
        check started, and what it wrote may never have been flushed."""
        self._write(warming=producer)

    def _write(self, **entry: Any) -> None:
        os.write(self.fd, (json.dumps(entry) + "\n").encode())


def take_supervisor_folder() -> str | None:
    """The folder of the supervisor's journal, taken out of the environment as the run
    starts: a process this run starts (a bump's run at the pin) is not the one the
    supervisor watches, and must not write to its journal."""
    return os.environ.pop(JOURNAL_ENV, None) or None


@dataclass
class Replay:
    """What a journal says of the run."""

    #: The report without its records (None: the run died before its checks were collected).
    skeleton: dict[str, Any] | None = None
    #: Every check's record before it ran.
    plan: dict[str, TestRecord] = field(default_factory=dict)
    #: The records journaled as checks ended (the last one of a check wins).
    records: dict[str, TestRecord] = field(default_factory=dict)
    #: Checks started and not finished, in the order they started.
    running: list[str] = field(default_factory=list)
    #: Whether the run reached its end (it wrote its own report).
    ended: bool = False
    #: The producer being warmed up, where the run died in the warm-up.
    warming: str | None = None


def replay(folder: Path) -> Replay:
    """Read the journal in ``folder``; a line cut short by the death ends it."""
    found = Replay()
    for entry in _entries(folder / _FILE):
        if "skeleton" in entry:
            found.skeleton = entry["skeleton"]
            found.plan = {r["nodeid"]: TestRecord(**r) for r in entry["plan"]}
        elif "start" in entry:
            found.running.append(entry["start"])
        elif "finish" in entry and entry["finish"] in found.running:
            found.running.remove(entry["finish"])
        elif "record" in entry:
            found.records[entry["record"]["nodeid"]] = TestRecord(**entry["record"])
        elif entry.get("finished"):
            found.ended = True
        elif "warming" in entry:
            found.warming = entry["warming"]
    return found


def _entries(path: Path) -> Iterable[dict[str, Any]]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return
    for line in lines:
        try:
            yield json.loads(line)
        except ValueError:
            return
