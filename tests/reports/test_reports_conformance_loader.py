"""load_conformance: conformance-report/1 JSON -> one row per test.

``fixtures/conformance-report.json`` is a real run of the reference backend
with a few records edited into failures, an error, an xfail and the other
skip causes; ``fixtures/make_conformance_report.py`` lists the edits.
"""

from __future__ import annotations

import json

import pytest

from reports import ReportInputError, load_conformance
from reports.conformance_loader import COLUMNS
from reports.conformance_schema import SUMMARY_KEYS


def test_one_row_per_test_with_the_report_context(conformance_report):
    frame = load_conformance(conformance_report)
    data = json.loads(conformance_report.read_text())
    assert len(frame) == len(data["tests"])
    assert list(frame.columns) == list(COLUMNS)
    assert set(frame["backend"]) == {"reference"}
    assert set(frame["spec_revision"]) == {"2025.10"}
    counts = frame["outcome"].value_counts().to_dict()
    # The fixture's own summary block, which its writer counted.
    assert counts == {o: data["summary"][key] for o, key in SUMMARY_KEYS.items()}
    assert counts["failed"] == 2 and counts["error"] == 1 and counts["xfailed"] == 1
    failed = frame[frame["check"] == "slice_with_cu_takes_rows_of_requests_start_to_end[2:4]"]
    failed = failed.iloc[0]
    assert failed["outcome"] == "failed"
    assert failed["spec_type"] == "LogprobsLists" and failed["device"] == "any"
    assert "rows 2:5" in failed["message"]
    assert set(frame["devices_declared"]) == {"cpu, cuda, mps"}


def test_module_level_checks_get_a_placeholder_device(conformance_report):
    frame = load_conformance([conformance_report])
    module = frame[frame["spec_type"] == "module"]
    assert set(module["device"]) == {"any"}


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


def test_a_crater_report_given_as_a_conformance_one_is_sent_to_crater(tmp_path):
    path = tmp_path / "crater.json"
    path.write_text('{"schema": "crater-report/1", "target": "0.34.0", "records": []}')
    with pytest.raises(ReportInputError, match="not a conformance report") as info:
        load_conformance(path)
    assert str(info.value).endswith("a crater report renders with --crater")


def test_missing_report(tmp_path):
    with pytest.raises(ReportInputError, match="not found"):
        load_conformance(tmp_path / "absent.json")


def test_skip_causes_are_read_and_only_skips_have_one(conformance_report):
    frame = load_conformance(conformance_report)
    skipped = frame[frame["outcome"] == "skipped"]
    assert set(skipped["skip_cause"]) == {
        "device-not-present",
        "device-not-declared",
        "producer-not-declared",
    }
    assert set(skipped.loc[skipped["device"] == "xpu", "skip_cause"]) == {"device-not-declared"}
    assert frame.loc[frame["outcome"] != "skipped", "skip_cause"].isna().all()


def test_newer_keys_behaviour_and_revision_source_are_read(conformance_report, tmp_path):
    data = json.loads(conformance_report.read_text())
    data["spec_revision_source"] = "--revision"
    data["tests"][0]["behaviour"] = "slice-with-cu"
    data["tests"][1].update(
        outcome="skipped",
        skip_cause="not-run",
        message="behaviour slice-with-cu: not in revision 0.10.2",
    )
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data))
    frame = load_conformance(path)
    assert set(frame["spec_revision_source"]) == {"--revision"}
    assert frame.loc[0, "behaviour"] == "slice-with-cu"
    assert frame.loc[1, "skip_cause"] == "not-run"


def test_an_older_report_without_the_newer_keys_still_loads(conformance_report, tmp_path):
    data = json.loads(conformance_report.read_text())
    del data["backend"]["devices_declared"]
    data["duration_s"] = 4.2  # an older writer's key, ignored
    for test in data["tests"]:
        test.pop("skip_cause", None)
    path = tmp_path / "older.json"
    path.write_text(json.dumps(data))
    frame = load_conformance(path)
    assert len(frame) == len(data["tests"])
    for column in ("skip_cause", "behaviour", "spec_revision_source", "devices_declared"):
        assert frame[column].isna().all(), column
