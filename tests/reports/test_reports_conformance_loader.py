"""load_conformance: conformance-report/1 JSON -> one row per test."""

from __future__ import annotations

import json

import pytest

from reports import ReportInputError, load_conformance
from reports.conformance_loader import COLUMNS


def test_one_row_per_test_with_the_report_context(conformance_report):
    frame = load_conformance(conformance_report)
    data = json.loads(conformance_report.read_text())
    assert len(frame) == len(data["tests"])
    assert list(frame.columns) == list(COLUMNS)
    assert set(frame["backend"]) == {"reference"}
    assert set(frame["spec_revision"]) == {"2025.10"}
    counts = frame["outcome"].value_counts().to_dict()
    assert counts["passed"] == 6 and counts["failed"] == 1 and counts["skipped"] == 4
    failed = frame[frame["outcome"] == "failed"].iloc[0]
    assert failed["spec_type"] == "LogprobsLists" and failed["device"] == "cpu"
    assert "rows 2:5" in failed["message"]


def test_module_level_checks_get_a_placeholder_device(conformance_report):
    frame = load_conformance([conformance_report])
    module = frame[frame["spec_type"] == "module"]
    assert list(module["device"]) == ["any"]


def test_several_reports_concatenate_and_extra_keys_are_ignored(conformance_report, tmp_path):
    other = json.loads(conformance_report.read_text())
    other["backend"] = {"name": "my-npu", "module": "my_plugin.outputs", "version": "1.0"}
    other["something_new"] = {"nested": True}
    other["tests"][0]["duration"] = 0.1
    path = tmp_path / "npu.json"
    path.write_text(json.dumps(other))
    frame = load_conformance([conformance_report, path])
    assert set(frame["backend"]) == {"reference", "my-npu"}
    assert set(frame["report"]) == {str(conformance_report), str(path)}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"schema": "conformance-report/1", "tests": [', "corrupt or truncated"),
        ('{"schema": "junit", "tests": []}', "not a conformance report"),
        ("[1, 2]", "not a conformance report"),
        ('{"schema": "conformance-report/1"}', "no 'tests' list"),
        ('{"schema": "conformance-report/1", "tests": [{"outcome": "great"}]}', "no valid outcome"),
    ],
)
def test_bad_reports_name_the_file(tmp_path, content, message):
    path = tmp_path / "report.json"
    path.write_text(content)
    with pytest.raises(ReportInputError, match=message) as info:
        load_conformance(path)
    assert info.value.path == path
    assert "python -m conformance" in str(info.value) or "--report" in str(info.value)


def test_missing_report(tmp_path):
    with pytest.raises(ReportInputError, match="not found"):
        load_conformance(tmp_path / "absent.json")
