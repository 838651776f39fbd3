"""A module:attribute backend, the skip causes, the header and the table, in one short run."""

from __future__ import annotations

import suite_runner

CPU_ONLY = "broken_backends.reference_on_cpu_only:BACKEND"


def test_undeclared_and_absent_devices_are_told_apart(tmp_path, capsys) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_logprobs_tensors_to_cpu_nonblocking.py"),
        suite_runner.check_path("test_logprobs_tensors.py::test_is_a_tuple_of_its_fields"),
        "--conformance-backend",
        CPU_ONLY,
    )
    assert run.exit_code == 0
    report = run.report
    assert report is not None
    assert report["backend"]["name"] == "reference-cpu-only"
    assert report["backend"]["devices_declared"] == ["cpu"]
    by_device = {(t["check"], t["device"]): t for t in report["tests"]}
    cuda = by_device[("is_a_tuple_of_its_fields", "cuda")]
    assert cuda["outcome"] == "skipped"
    assert cuda["skip_cause"] == "device-not-declared"
    assert "not declared by the backend" in cuda["message"]
    assert by_device[("is_a_tuple_of_its_fields", "cpu")]["outcome"] == "passed"
    # The terminal table keeps the two causes apart as well.
    printed = capsys.readouterr().out
    table_rows = [line.split() for line in printed.splitlines() if line.startswith("Logprobs")]
    assert ["LogprobsTensors", "cuda", "0", "0", "4", "device-not-declared"] in table_rows
    assert ["LogprobsTensors", "cpu", "1", "0", "0"] in table_rows


def test_declared_device_missing_here_is_its_own_skip_cause(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_logprobs_tensors.py::test_is_a_tuple_of_its_fields"),
        "--conformance-backend",
        "reference",
    )
    present = set(run.report["platform"]["devices_available"])
    for t in run.report["tests"]:
        if t["device"] not in present:
            assert t["skip_cause"] == "device-not-present"
            assert "declared, but no such device on this machine" in t["message"]


def test_each_record_names_spec_type_check_and_device(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_logprobs_lists_slice.py::test_slice_of_empty_batch"),
        suite_runner.check_path(
            "test_logprobs_tensors_tolists.py::test_tolists_gives_python_lists_of_python_numbers"
        ),
    )
    records = {t["nodeid"]: t for t in run.report["tests"]}
    empty = records["conformance/checks/test_logprobs_lists_slice.py::test_slice_of_empty_batch"]
    assert (empty["spec_type"], empty["check"], empty["device"]) == (
        "LogprobsLists",
        "slice_of_empty_batch",
        None,
    )
    tolists = records[
        "conformance/checks/test_logprobs_tensors_tolists.py::test_tolists_gives_python_lists_of_python_numbers[cpu-0x1]"
    ]
    assert tolists["spec_type"] == "LogprobsTensors"
    assert tolists["check"] == "tolists_gives_python_lists_of_python_numbers[0x1]"
    assert tolists["device"] == "cpu"
    assert tolists["behaviour"] == "LogprobsTensors.tolists:python-lists"
    assert empty["behaviour"] == "LogprobsLists.slice:cu-not-rebased"


def test_a_check_that_skips_itself_names_its_cause(tmp_path, monkeypatch, capsys) -> None:
    # A module without the optional PLACEHOLDER_TOKEN_ID: its check skips, saying why.
    (tmp_path / "without_placeholder.py").write_text(
        "from reference import (AsyncModelRunnerOutput, DraftTokenIds, KVConnectorOutput,\n"
        "    LogprobsLists, LogprobsTensors, ModelRunnerOutput, SamplerOutput)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_module.py::test_placeholder_token_id_is_minus_one"),
        "--conformance-backend",
        "without_placeholder",
    )
    [record] = run.report["tests"]
    assert (record["outcome"], record["skip_cause"]) == ("skipped", "optional-name-absent")
    printed = capsys.readouterr().out
    [row] = [line for line in printed.splitlines() if line.startswith("module ")]
    assert row.endswith("optional-name-absent")


def test_every_skip_of_the_checks_gives_a_cause_the_schema_explains() -> None:
    import re
    from pathlib import Path

    from conformance.report.schema import SKIP_CAUSES

    checks = Path(suite_runner.CHECKS)
    bare = [
        f"{path.name}:{number}"
        for path in sorted(checks.glob("*.py"))
        if path.name != "_skips.py"  # the one place that calls it
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "pytest.skip(" in line
    ]
    assert bare == [], "skip with a cause: conformance.checks._skips.skip(cause, reason)"
    given = {
        cause
        for path in checks.glob("*.py")
        for cause in re.findall(r'\bskip\(\s*"([a-z-]+)"', path.read_text())
    }
    assert given and given <= set(SKIP_CAUSES)


def test_a_skip_without_a_cause_shows_its_own_words_in_the_table() -> None:
    from conformance.report.records import Results, TestRecord
    from conformance.report.table import table

    results = Results()
    results.records["x"] = TestRecord(
        "x", "module", "c", None, None, "skipped", "needs the vendor's driver", None
    )
    assert table(results)[-1].endswith('"needs the vendor\'s driver"')
