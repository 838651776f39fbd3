"""Crater reports (``crater-report/1``) merged and rendered: ``python -m reports --crater``.

Each CI job of the crater's matrix writes one report (a plugin, or a vLLM release);
this reads them all (files, or folders searched for them), keeps one record per
plugin release, vLLM and role (a later file's wins, the repeat is named), and writes
``crater.json`` (the merged report), ``crater.md`` and ``crater.html``: the matrix
first, plugins by vLLM (their pin, then each target), each red cell naming its first
cause with every finding one click away, and a section per broken record (anchors
``crater-PLUGIN-VERSION-VLLM``) listing the findings at the plugin's file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.conformance_schema import suite_json
from reports.document import Bullets, Grid, GridCell, Paragraph, Report, Section
from reports.errors import ConformanceInputError

# The writer's file, found without importing the suite (DESIGN section 2).
_SCHEMA = suite_json("crater", "schema.json")

#: Findings shown behind a cell; the rest are in the record's section, linked.
_DETAILS = 8
SCHEMA: str = _SCHEMA["schema"]
RECORD_KEYS: tuple[str, ...] = tuple(_SCHEMA["record_keys"])


@dataclass(frozen=True)
class CraterReports:
    """The records of every crater report read, merged."""

    targets: tuple[str, ...]
    records: tuple[dict[str, Any], ...]
    repeats: tuple[str, ...]

    def data(self) -> dict[str, object]:
        return {"schema": SCHEMA, "target": ", ".join(self.targets), "records": list(self.records)}


def load_crater(paths: list[str]) -> CraterReports:
    """Crater reports from files or folders; :class:`ConformanceInputError` (one line
    naming the file) for one that is not a crater report."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.json") if _is_crater(p))
        elif path.is_file():
            files.append(path)
        else:
            raise ConformanceInputError(
                "no such file or folder",
                path=given,
                fix="give crater reports or folders holding them",
            )
    if not files:
        raise ConformanceInputError(
            f"no crater report ({SCHEMA}) here",
            path=", ".join(paths),
            fix="give the --report of python -m conformance crater",
        )
    targets: list[str] = []
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    repeats = []
    for path in files:
        data = _read(path)
        targets.append(str(data["target"]))
        for record in data["records"]:
            # An edited checkout beside its release is other code: its source tells them apart.
            key: tuple[str, ...] = (
                *(str(record[k]) for k in ("plugin", "version", "vllm", "role")),
                str(record.get("source") or ""),
            )
            if key in merged and merged[key] != record:
                repeats.append(f"{' · '.join(k for k in key if k)} (kept {path})")
            merged[key] = record
    return CraterReports(tuple(dict.fromkeys(targets)), tuple(merged.values()), tuple(repeats))


def _is_crater(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            return SCHEMA in handle.read(200)
    except (OSError, UnicodeDecodeError):
        return False


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConformanceInputError(
            f"not a JSON crater report ({error})",
            path=path,
            fix="rewrite it with python -m conformance crater --report",
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConformanceInputError(
            f"not a crater report (schema is not {SCHEMA})",
            path=path,
            fix="give the --report of python -m conformance crater",
        )
    records = data.get("records")
    if not isinstance(records, list) or any(
        not isinstance(r, dict) or set(RECORD_KEYS) - set(r) for r in records
    ):
        raise ConformanceInputError(
            f"a crater record lacks one of {', '.join(RECORD_KEYS)}",
            path=path,
            fix="rewrite it with python -m conformance crater --report",
        )
    return data


def anchor(record: dict[str, Any], shared: Collection[tuple[str, str]] = ()) -> str:
    """The id of a record's section: ``crater-vllm-rbln-0.12.0-0.34.0``; with where its
    code was read from where that release was read from elsewhere too (``shared``)."""
    raw = f"crater-{record['plugin']}-{record['version']}-{record['vllm']}-{record['role']}"
    if (record["plugin"], record["version"]) in shared:
        raw += "-" + str(record.get("source") or "package-index")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw)


def _release(record: dict[str, Any], shared: set[tuple[str, str]]) -> str:
    """A record's release as a row names it: with where its code was read from where
    another of the same name and version was read elsewhere."""
    if (record["plugin"], record["version"]) not in shared:
        return str(record["version"])
    return f"{record['version']} ({record.get('source') or 'package index'})"


def crater_report(reports: CraterReports) -> Report:
    """The matrix, then a section per record that breaks or is unknown."""
    by_plugin: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    pins: dict[tuple[str, str], dict[str, Any]] = {}
    columns: list[str] = []
    sources: dict[tuple[str, str], set[str]] = {}
    for record in reports.records:
        release = (record["plugin"], record["version"])
        sources.setdefault(release, set()).add(str(record.get("source") or ""))
    shared = {release for release, found in sources.items() if len(found) > 1}
    for record in reports.records:
        row = (record["plugin"], _release(record, shared))
        if record["role"] == "pin":
            pins[row] = record
            by_plugin.setdefault(row, {})
            continue
        by_plugin.setdefault(row, {})[record["vllm"]] = record
        if record["vllm"] not in columns:
            columns.append(record["vllm"])
    rows = []
    for row in sorted(by_plugin):
        cells: list[GridCell | None] = [_cell(pins.get(row), shared, with_vllm=True)]
        cells += [_cell(by_plugin[row].get(column), shared) for column in columns]
        rows.append((row, tuple(cells)))
    grid = Grid(
        ("plugin", "release"),
        ("vLLM",),
        (("its pin",), *((c,) for c in columns)),
        tuple(rows),
    )
    regressed = [
        f"{plugin} {version}"
        for (plugin, version), at in sorted(by_plugin.items())
        if any(_new_breaks(pins.get((plugin, version)), record) for record in at.values())
    ]
    headline = (
        f"{len(by_plugin)} plugin releases against {', '.join(columns) or 'no target'}: "
        f"{len(regressed)} with a break at a target their pin does not have"
        + (f" ({', '.join(regressed)})" if regressed else "")
    )
    sections = [Section("crater", "Plugins by vLLM", [Paragraph(headline), grid])]
    for record in reports.records:
        if record["verdict"] == "holds":
            continue
        lines = [
            f"`{f['file']}:{f['line']}` {f['kind']} `{f['member']}` ({f['vllm_change']})"
            for f in record["findings"]
        ]
        lines += [f"not judged: {why}" for why in record["not_judged"]]
        title = (
            f"{record['plugin']} {_release(record, shared)} at vLLM {record['vllm']} "
            f"({record['role']}): {record['verdict']}"
        )
        sections.append(Section(anchor(record, shared), title, [Bullets(tuple(lines))]))
    if reports.repeats:
        sections.append(Section("crater-repeats", "Records read twice", [Bullets(reports.repeats)]))
    return Report("vLLM plugins crater", sections)


def _cell(
    record: dict[str, Any] | None,
    shared: Collection[tuple[str, str]] = (),
    with_vllm: bool = False,
) -> GridCell | None:
    if record is None:
        return None
    text = f"{record['vllm']}: {record['verdict']}" if with_vllm else record["verdict"]
    findings = record["findings"]
    if findings:
        first = findings[0]
        breaks = _breaks(findings)
        more = f" +{breaks - 1}" if breaks > 1 else ""
        text += f": {first['kind']} {first['member']}{more}"
    details = tuple(
        f"{f['file']}:{f['line']} {f['kind']} {f['member']} ({f['vllm_change']})"
        for f in findings[:_DETAILS]
    )

    if not details and record["verdict"] == "unknown":
        details = tuple(record["not_judged"])
    details = (*details, f"[all findings](#{anchor(record, shared)})") if findings else details
    return GridCell(text, failing=record["verdict"] == "breaks", details=details)


def _new_breaks(pin: dict | None, target: dict) -> bool:
    """A break at the target the pin's record does not have (none where unpinned)."""
    if pin is None or target["verdict"] != "breaks" or pin["verdict"] not in ("holds", "breaks"):
        return False

    def places(record: dict) -> set[tuple]:
        return {(f["kind"], f["file"], f["line"], f["member"]) for f in record["findings"]}

    return bool(places(target) - places(pin))


def _breaks(findings: list[dict[str, Any]]) -> int:
    """How many breaks the findings are, as the crater's lines count them: one call's or
    one import line's several findings of a class (``AsyncOutput(...)`` missing two
    parameters) are one break."""
    places = {
        (f["file"], f["line"], f["kind"], str(f["member"]).rpartition(".")[0] or index)
        for index, f in enumerate(findings)
    }
    return len(places)
