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
