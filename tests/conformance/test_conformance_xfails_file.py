"""--xfails-file: strict expected failures; an xpass fails, an entry matching nothing is an error."""

from __future__ import annotations

import pytest
import suite_runner

from conformance.xfails import XfailEntry, XfailsFileError, load

SLICE = (
    "conformance/checks/test_logprobs_lists_slice.py::test_slice_without_cu_takes_rows_start_to_end"
)


def _run(tmp_path, backend: str, *entries: str, selected: str = "[0:1]"):
    text = "".join(f'[[xfail]]\nnodeid = "{e}"\nreason = "known: {e}"\n' for e in entries)
    (tmp_path / "xfails.toml").write_text(text)
    return suite_runner.in_process(
        tmp_path,
        suite_runner.check_path(
            "test_logprobs_lists_slice.py::test_slice_without_cu_takes_rows_start_to_end"
        )
        + selected,
        "--backend",
        backend,
        "--xfails-file",
        str(tmp_path / "xfails.toml"),
    )


def test_listed_failing_checks_become_xfailed(tmp_path) -> None:
    # A prefix entry covers every range; off by one fails all of them but 3:4 and 4:4,
    # where the extra row does not exist.
    run = _run(tmp_path, "broken_backends.slice_off_by_one", SLICE, selected="")
    outcomes = {t["check"]: t["outcome"] for t in run.report["tests"]}
    assert outcomes.pop("slice_without_cu_takes_rows_start_to_end[0:1]") == "xfailed"
    assert run.report["tests"][0]["message"] == f"known: {SLICE}"
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED  # the ranges where it passes: strict


def test_a_failing_check_listed_exactly_makes_the_run_pass(tmp_path) -> None:
    run = _run(tmp_path, "broken_backends.slice_off_by_one", SLICE + "[0:1]")
    assert run.exit_code == 0
    assert [t["outcome"] for t in run.report["tests"]] == ["xfailed"]
    assert run.report["summary"]["xfailed"] == 1


def test_a_listed_check_that_passes_fails_the_run(tmp_path) -> None:
    run = _run(tmp_path, "reference", SLICE + "[0:1]")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    xpassed = [t for t in run.report["tests"] if t["outcome"] == "xpassed"]
    assert [t["nodeid"] for t in xpassed] == [SLICE + "[0:1]"]
    assert "remove the entry" in xpassed[0]["message"]
    assert run.report["summary"]["xpassed"] == 1


def test_an_entry_matching_no_collected_check_is_an_error(tmp_path) -> None:
    run = _run(
        tmp_path, "reference", "conformance/checks/test_logprobs_lists_slice.py::test_no_such_check"
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    errors = [t for t in run.report["tests"] if t["outcome"] == "error"]
    assert len(errors) == 1 and "matches no collected check" in errors[0]["message"]
    assert run.report["summary"]["errors"] == 1


def test_prefixes_match_at_node_id_boundaries() -> None:
    entry = XfailEntry("conformance/checks/test_x.py::test_slice", "why")
    assert entry.matches("conformance/checks/test_x.py::test_slice")
    assert entry.matches("conformance/checks/test_x.py::test_slice[0:1]")
    assert not entry.matches("conformance/checks/test_x.py::test_slice_with_cu")
    assert XfailEntry("conformance/checks/", "why").matches("conformance/checks/test_x.py::test_y")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[xfail]]\nnodeid = "a"\n', "has no reason"),
        ('[[xfail]]\nreason = "r"\n', "has no nodeid"),
        ('[[xfail]]\nnodeid = "a"\nreason = "r"\nstrict = false\n', "unknown key(s) strict"),
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
