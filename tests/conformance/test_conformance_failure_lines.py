"""What a failing run tells its author: the behaviour on the terminal, an xfails file ready to use."""

from __future__ import annotations

import suite_runner

from conformance.run.xfails import canonical_entry_nodeid
from reference.revisions import revision

ZERO_BASED = "broken_backends.gather_ranks_zero_based:BACKEND"


def test_each_failing_behaviour_is_one_terminal_line(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", ZERO_BASED, "-k", "producer_gather", module="conformance"
    )
    assert run.exit_code == 1
    [line] = [line for line in run.output.splitlines() if line.startswith("FAIL [")]
    assert line.startswith("FAIL [producer.gather_logprobs] 10 check(s): gather_logprobs(")
    assert "expected 1-based pessimistic ranks" in line
    # pytest's own lines name each check as the report and the xfails file do,
    # though the run started elsewhere (tmp_path) and collected the checks by package.
    summary = [line for line in run.output.splitlines() if line.startswith("FAILED ")]
    assert len(summary) == 10
    assert all(line.startswith("FAILED conformance/checks/test_producer_") for line in summary)
    # The report's message names the rule once, without pytest's "Failed: ".
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert all(
        t["message"].startswith("[producer.gather_logprobs] gather_logprobs(") for t in failed
    )


def test_the_written_xfails_file_turns_the_run_green(tmp_path) -> None:
    first = suite_runner.subprocess_run(
        tmp_path, "--backend", ZERO_BASED, "-k", "producer_gather",
        "--write-xfails", "xfails.toml", module="conformance", report=False,
    )  # fmt: skip
    assert first.exit_code == 1
    text = (tmp_path / "xfails.toml").read_text()
    assert text.count("[[xfail]]") == 1
    assert 'behaviour = "producer.gather_logprobs"' in text
    assert "xfails file with 1 behaviour(s) written to xfails.toml" in first.output
    again = suite_runner.subprocess_run(
        tmp_path, "--backend", ZERO_BASED, "-k", "producer_gather", "--xfails", "xfails.toml",
        module="conformance",
    )  # fmt: skip
    assert again.exit_code == 0, again.output[-2000:]
    assert again.report["summary"]["xfailed"] == 10


def test_an_existing_xfails_file_is_never_overwritten(tmp_path) -> None:
    (tmp_path / "xfails.toml").write_text("# mine\n")
    run = suite_runner.subprocess_run(
        tmp_path, "--write-xfails", "xfails.toml", module="conformance", report=False
    )
    assert run.exit_code == 4
    assert "it exists (an xfails file is never overwritten): remove it" in run.output
    assert (tmp_path / "xfails.toml").read_text() == "# mine\n"


def test_a_node_id_pasted_from_the_terminal_names_the_check() -> None:
    terminal = "checks/test_logprobs_lists_slice.py::test_slice[cpu]"
    assert canonical_entry_nodeid(terminal) == f"conformance/{terminal}"
    assert canonical_entry_nodeid(f"conformance/{terminal}") == f"conformance/{terminal}"


def test_a_revision_prints_short_in_falsifying_examples() -> None:
    assert repr(revision("0.12.0")) == "SpecRevision('0.12.0')"


def test_a_producers_checks_are_counted_under_the_producer() -> None:
    from conformance.report.table import row_of

    assert row_of("LogprobsTensors", "producer.gather_logprobs") == "producer gather_logprobs"
    assert row_of("AsyncModelRunnerOutput", "producer.async_output:waits-for-device") == (
        "producer async_output"
    )
    assert row_of("LogprobsLists", "LogprobsLists.slice_request") == "LogprobsLists"


def test_a_missing_wait_is_named_first_and_its_symptoms_say_so() -> None:
    from types import SimpleNamespace

    from conformance.run.failure_lines import failures_by_behaviour

    def failed(behaviour: str, message: str) -> SimpleNamespace:
        return SimpleNamespace(outcome="failed", behaviour=behaviour, message=message)

    lines = failures_by_behaviour([
        failed("producer.async_output:rows-as-lists", "expected 101000, found -2147483601"),
        failed("producer.async_output:waits-for-device", "a copy read before its wait"),
        failed("LogprobsLists.slice_request", "expected [1], found [2]"),
    ])  # fmt: skip
    assert lines[0].startswith("FAIL [producer.async_output:waits-for-device] 1 check(s): ")
    assert lines[1].startswith("FAIL [LogprobsLists.slice_request] 1 check(s): ")
    assert lines[2].startswith(
        "FAIL [producer.async_output:rows-as-lists] 1 check(s) (may follow from "
        "producer.async_output:waits-for-device, above): "
    )


def test_a_placeholder_value_is_named_a_copy_not_yet_arrived() -> None:
    from conformance.oracle.failing import name_copies_not_arrived

    assert "a copy not yet arrived" in name_copies_not_arrived("expected 101000, found -2147483601")
    assert name_copies_not_arrived("expected 1, found 2") == "expected 1, found 2"


def _plugin_code(stream) -> None:
    stream.wait_stream(None)


def test_an_exception_in_the_backends_code_names_its_line_and_the_suites_call() -> None:
    import pytest

    from conformance.oracle.failing import attempt

    with pytest.raises(pytest.fail.Exception) as failed:
        attempt("make_async_output(<step one>)", _plugin_code, None)
    first, second = str(failed.value.msg).splitlines()
    assert first.startswith(
        "make_async_output(<step one>): raised AttributeError at test_conformance_failure_lines.py:"
    )
    assert first.endswith(
        " (`stream.wait_stream(None)`): 'NoneType' object has no attribute 'wait_stream'"
    )
    assert second.startswith("  called by the suite at ")  # the check's call of attempt
    assert "attempt(" in second
