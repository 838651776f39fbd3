"""Conformance JSON reports (``schema: conformance-report/1``) -> a tidy DataFrame.

One row per test of each report: backend x spec type x device x outcome,
with the report's backend, spec revision and suite version repeated on every
row so reports of several backends or machines concatenate cleanly.
Keys the schema does not name are ignored, so a newer suite that adds some
still loads (DESIGN section 3).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

# The schema's names, read from the file the writer owns.
from reports.conformance_schema import (
    BAD_OUTCOMES,
    GOOD_OUTCOMES,
    OUTCOMES,
    SCHEMA,
    SKIP_CAUSES,
)
from reports.errors import ReportInputError

__all__ = ["BAD_OUTCOMES", "GOOD_OUTCOMES", "OUTCOMES", "SCHEMA", "SKIP_CAUSES", "load_conformance"]

#: Columns of the frame, in order.  The last four come from keys newer writers
#: add (``skip_cause``, ``behaviour``, ``spec_revision_source``,
#: ``backend.devices_declared``); they are empty for reports that lack them.
COLUMNS = (
    "backend",
    "backend_module",
    "backend_version",
    "spec_revision",
    "suite_version",
    "spec_type",
    "check",
    "device",
    "outcome",
    "message",
    "nodeid",
    "devices_available",
    "report",
    "skip_cause",
    "behaviour",
    "spec_revision_source",
    "devices_declared",
)

#: Device label of checks that run on no particular device (module-level,
#: pure-Python types): the report stores null there.
ANY_DEVICE = "any"

# --- end of the schema ---

FIX_RERUN = "re-run `python -m conformance --backend SPEC --report PATH` to write a fresh report"


def load_conformance(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> pd.DataFrame:
    """Read one or more conformance reports into one DataFrame (one row per test).

    Raises :class:`ReportInputError` naming the file for a missing, corrupt or
    non-conformance-report JSON file.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for path in map(Path, paths):
        rows.extend(_rows_of(path, _read(path)))
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["outcome"] = pd.Categorical(frame["outcome"], categories=OUTCOMES)
    return frame


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ReportInputError("conformance report not found", path=path, fix=FIX_RERUN)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportInputError(
            f"corrupt or truncated conformance report ({exc})", path=path, fix=FIX_RERUN
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportInputError(
            f"not a conformance report (schema {found!r}, expected {SCHEMA!r})",
            path=path,
            fix="pass the file written by `python -m conformance --report PATH`",
        )
    if not isinstance(data.get("tests"), list):
        raise ReportInputError("conformance report has no 'tests' list", path=path, fix=FIX_RERUN)
    return data


def _rows_of(path: Path, data: dict[str, Any]) -> Iterable[dict[str, Any]]:
    backend = _mapping(data.get("backend"))
    suite = _mapping(data.get("suite"))
    available = _mapping(data.get("platform")).get("devices_available")
    declared = backend.get("devices_declared")
    common = {
        "backend": backend.get("name"),
        "backend_module": backend.get("module"),
        "backend_version": backend.get("version"),
        "spec_revision": data.get("spec_revision"),
        "suite_version": suite.get("version"),
        "devices_available": _joined(available),
        "report": str(path),
        "spec_revision_source": data.get("spec_revision_source"),
        "devices_declared": _joined(declared),
    }
    for index, test in enumerate(data["tests"]):
        if not isinstance(test, dict) or test.get("outcome") not in OUTCOMES:
            raise ReportInputError(
                f"test #{index} has no valid outcome (one of {', '.join(OUTCOMES)})",
                path=path,
                fix=FIX_RERUN,
            )
        yield {
            **common,
            "spec_type": test.get("spec_type") or "module",
            "check": test.get("check"),
            "device": test.get("device") or ANY_DEVICE,
            "outcome": test["outcome"],
            "message": test.get("message") or "",
            "nodeid": test.get("nodeid"),
            "skip_cause": test.get("skip_cause"),
            "behaviour": test.get("behaviour"),
        }


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _joined(devices: Any) -> str | None:
    """A device list as one cell ("cpu, cuda"); None where the report has none."""
    return ", ".join(map(str, devices)) if isinstance(devices, list) else None
