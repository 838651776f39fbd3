"""A report the real plugin just wrote reads back through ``reports.load_conformance``."""

from __future__ import annotations

import suite_runner

import reports
from conformance.report.schema import RECORD_KEYS, SCHEMA, SUMMARY_DEVIATION_KEYS, SUMMARY_KEYS


def test_the_report_written_is_the_report_read(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_logprobs_lists_slice.py::test_slice_of_empty_batch"),
        suite_runner.check_path("test_kv_connector_output_is_empty.py::test_is_empty_truth_table"),
        suite_runner.check_path("test_logprobs_tensors.py::test_is_a_tuple_of_its_fields"),
        "--conformance-backend",
        "broken_backends.is_empty_ignores_invalid_block_ids",
    )
    report = run.report
    assert report["schema"] == SCHEMA
    assert set(report["summary"]) == {*SUMMARY_KEYS.values(), *SUMMARY_DEVIATION_KEYS}
    assert all(tuple(t) == RECORD_KEYS for t in report["tests"])

    frame = reports.load_conformance([tmp_path / "report.json"])
    assert len(frame) == len(report["tests"])
    counts = frame["outcome"].value_counts()
    for outcome, key in SUMMARY_KEYS.items():
        assert int(counts.get(outcome, 0)) == report["summary"][key]
    failed = frame[frame["outcome"] == "failed"]
    assert list(failed["behaviour"]) == ["KVConnectorOutput.is_empty"]
    assert failed["message"].iloc[0].startswith("[KVConnectorOutput.is_empty]")
    skipped = frame[frame["outcome"] == "skipped"]
    assert set(skipped["skip_cause"]) <= {"device-not-present", "device-not-declared"}
    assert not skipped.empty
    assert set(frame["spec_revision"]) == {"2025.10"}


def test_the_reader_takes_the_schema_from_the_writers_file() -> None:
    # One file, owned by the writer; reports reads it without importing the suite.
    import reports.conformance_schema as reader
    from conformance.report import schema as writer

    assert (reader.SCHEMA, reader.OUTCOMES, reader.SUMMARY_KEYS, reader.RECORD_KEYS) == (
        writer.SCHEMA,
        writer.OUTCOMES,
        writer.SUMMARY_KEYS,
        writer.RECORD_KEYS,
    )
    assert (reader.SKIP_CAUSES, reader.BAD_OUTCOMES) == (writer.SKIP_CAUSES, writer.BAD_OUTCOMES)
