"""--conformance-xfails: known deviations by behaviour or node id, validated before any check runs."""

from __future__ import annotations

import time

import pytest
import suite_runner

from conformance.report.schema import SUMMARY_KEYS
from conformance.run.xfails import XfailEntry, XfailsFileError, load

SLICE_MODULE = "conformance/checks/test_logprobs_lists_slice.py"
SLICE = f"{SLICE_MODULE}::test_slice_without_cu_takes_rows_start_to_end"
REBASES = "broken_backends.slice_rebases_cu"


def _toml(*entries: dict[str, str]) -> str:
    return "".join(
        "[[xfail]]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in e.items())
        for e in entries
    )


def _run(
    tmp_path, backend: str, *entries: dict[str, str], checks: str = "test_logprobs_lists_slice.py"
):
    (tmp_path / "xfails.toml").write_text(_toml(*entries))
    return suite_runner.in_process(
        tmp_path,
        suite_runner.check_path(checks),
        "--conformance-backend",
        backend,
        "--conformance-xfails",
        str(tmp_path / "xfails.toml"),
    )


def _outcomes(run) -> dict[str, int]:
    return {k: v for k, v in run.report["summary"].items() if v and k in SUMMARY_KEYS.values()}


def test_one_behaviour_entry_makes_the_rebasing_slice_green(tmp_path) -> None:
    entry = {
        "behaviour": "LogprobsLists.slice:cu-not-rebased",
        "reason": "we rebase cu like 0.11.1",
    }
    run = _run(tmp_path, REBASES, entry)
    assert run.exit_code == 0, _outcomes(run)
    summary = run.report["summary"]
    assert summary["xfailed"] >= 10 and summary["failed"] == summary["xpassed"] == 0
    assert summary["passed"] > 0  # checks of the rule that the deviation does not touch
    xfailed = [t for t in run.report["tests"] if t["outcome"] == "xfailed"]
    assert all("we rebase cu like 0.11.1" in t["message"] for t in xfailed)


def test_the_summary_names_each_deviation_with_its_reason(tmp_path) -> None:
    entry = {"behaviour": "LogprobsLists.slice:cu-not-rebased", "reason": "we rebase cu"}
    run = _run(tmp_path, REBASES, entry)
    summary = run.report["summary"]
    assert summary["known_deviations"] == 1 and summary["unexplained_deviations"] == 0
    [deviation] = summary["deviations"]
    assert deviation == {
        "entry": "behaviour=LogprobsLists.slice:cu-not-rebased",
        "reason": "we rebase cu",
        "behaviours": ["LogprobsLists.slice:cu-not-rebased"],
        "xfailed": summary["xfailed"],
        "unexplained": False,
    }


def test_a_reason_still_the_written_placeholder_is_unexplained(tmp_path) -> None:
    entry = {
        "behaviour": "LogprobsLists.slice:cu-not-rebased",
        "reason": "TODO: 10 check(s) failed, first: expected cu [0, 1]",
    }
    run = _run(tmp_path, REBASES, entry)
    assert run.exit_code == 0
    summary = run.report["summary"]
    assert summary["known_deviations"] == summary["unexplained_deviations"] == 1
    [deviation] = summary["deviations"]
    assert deviation["unexplained"] and deviation["reason"] == entry["reason"]


def test_the_terminal_names_each_deviation_and_flags_the_unexplained(tmp_path) -> None:
    (tmp_path / "xfails.toml").write_text(
        _toml(
            {
                "behaviour": "LogprobsLists.slice:cu-not-rebased",
                "reason": "TODO: 10 check(s) failed, first: x",
            }
        )
    )
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", REBASES, "-k", "slice", "--xfails", "xfails.toml",
        module="conformance",
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-2000:]
    lines = run.output.splitlines()
    assert "1 known deviation (1 unexplained): their checks are xfailed, not failed" in lines
    [line] = [line for line in lines if line.startswith("XFAIL [")]
    assert line.startswith("XFAIL [LogprobsLists.slice:cu-not-rebased] ")
    assert "UNEXPLAINED: its reason is still the placeholder --write-xfails wrote: TODO: " in line


def test_without_the_entry_the_rebasing_slice_fails(tmp_path) -> None:
    run = _run(tmp_path, REBASES)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    failed = {t["behaviour"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert failed == {"LogprobsLists.slice:cu-not-rebased"}


def test_match_limits_an_entry_to_the_declared_failure(tmp_path) -> None:
    entry = {
        "behaviour": "LogprobsLists.slice:cu-not-rebased",
        "match": "no message looks like this",
        "reason": "r",
    }
    run = _run(tmp_path, REBASES, entry)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    assert run.report["summary"]["xfailed"] == 0
    stale = [t for t in run.report["tests"] if t["nodeid"].startswith("xfails-file::")]
    assert len(stale) == 1 and stale[0]["outcome"] == "xpassed"


def test_a_behaviour_entry_nothing_fails_is_stale_and_fails_the_run(tmp_path) -> None:
    entry = {"behaviour": "LogprobsLists.slice:cu-not-rebased", "reason": "r"}
    run = _run(tmp_path, "reference", entry)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    [stale] = [t for t in run.report["tests"] if t["outcome"] == "xpassed"]
    assert stale["nodeid"] == "xfails-file::behaviour=LogprobsLists.slice:cu-not-rebased"
    assert "remove the entry" in stale["message"]


def test_a_failing_check_listed_by_node_id_makes_the_run_pass(tmp_path) -> None:
    entry = {"nodeid": SLICE + "[0:1]", "reason": "known"}
    run = _run(
        tmp_path,
        "broken_backends.slice_off_by_one",
        entry,
        checks=f"{SLICE[len('conformance/checks/') :]}[0:1]",
    )
    assert run.exit_code == 0
    assert [t["outcome"] for t in run.report["tests"]] == ["xfailed"]


def test_a_node_id_entry_is_strict(tmp_path) -> None:
    entry = {"nodeid": SLICE + "[0:1]", "reason": "known"}
    run = _run(tmp_path, "reference", entry, checks=f"{SLICE[len('conformance/checks/') :]}[0:1]")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    xpassed = [t for t in run.report["tests"] if t["outcome"] == "xpassed"]
    assert [t["nodeid"] for t in xpassed] == [SLICE + "[0:1]"]
    assert "remove the entry" in xpassed[0]["message"]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (
            {"behaviour": "LogprobsLists.slice:cu-not-rebasd", "reason": "r"},
            "names no behaviour; did you mean 'LogprobsLists.slice:cu-not-rebased'?",
        ),
        (
            {"behaviour": "LogprobsLists.slice_request", "reason": "r"},
            "names a behaviour that revision 2025.10 does not have",
        ),
        (
            {"nodeid": f"{SLICE_MODULE}::test_slice_without_cu_takes_row", "reason": "r"},
            "did you mean 'test_slice_without_cu_takes_rows_start_to_end'?",
        ),
        (
            {"nodeid": "conformance/checks/test_logprobs_list_slice.py::test_x", "reason": "r"},
            "names no check module; did you mean 'test_logprobs_lists_slice.py'?",
        ),
        ({"nodeid": SLICE + "[9:9]", "reason": "r"}, "names no check this run collected"),
    ],
    ids=[
        "behaviour-typo",
        "behaviour-of-another-revision",
        "function-typo",
        "module-typo",
        "bad-parameters",
    ],
)
def test_an_entry_naming_nothing_is_a_usage_error_before_any_check_runs(
    tmp_path, entry, words
) -> None:
    (tmp_path / "xfails.toml").write_text(_toml(entry))
    start = time.perf_counter()
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "reference",
        "--xfails",
        "xfails.toml",
        module="conformance",
        report=False,
    )
    assert run.exit_code == pytest.ExitCode.USAGE_ERROR, run.output
    errors = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and words in errors[0], run.output
    assert "passed" not in run.output and "Traceback" not in run.output
    assert time.perf_counter() - start < 60


def test_entries_for_modules_not_selected_are_not_errors(tmp_path) -> None:
    other = {
        "nodeid": "conformance/checks/test_module.py::test_spec_names_are_classes",
        "reason": "r",
    }
    run = _run(tmp_path, "reference", other, checks="test_logprobs_lists.py")
    assert run.exit_code == 0, _outcomes(run)


def test_prefixes_match_at_node_id_boundaries() -> None:
    entry = XfailEntry("why", nodeid="conformance/checks/test_x.py::test_slice")
    assert entry.names("conformance/checks/test_x.py::test_slice", None)
    assert entry.names("conformance/checks/test_x.py::test_slice[0:1]", None)
    assert not entry.names("conformance/checks/test_x.py::test_slice_with_cu", None)
    assert XfailEntry("why", nodeid="conformance/checks/").names(
        "conformance/checks/test_x.py::test_y", None
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[xfail]]\nnodeid = "a"\n', "has no reason"),
        ('[[xfail]]\nreason = "r"\n', "must name exactly one of behaviour"),
        ('[[xfail]]\nnodeid = "a"\nbehaviour = "b"\nreason = "r"\n', "found nodeid and behaviour"),
        ('[[xfail]]\nnodeid = "a"\nreason = "r"\nstrict = false\n', "unknown key(s) strict"),
        ('[[xfail]]\nnodeid = "a"\nreason = "r"\nmatch = "("\n', "is not a regular expression"),
        ('xfail = "a"\n', "must be an array of tables"),
        ("[[xfail]\n", "invalid TOML"),
        ('[[xfails]]\nnodeid = "a"\nreason = "r"\n', "unknown top-level key(s) xfails"),
    ],
)
def test_malformed_files_are_refused_with_the_fix(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(XfailsFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(path)
