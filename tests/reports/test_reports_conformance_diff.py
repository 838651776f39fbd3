"""``--conformance-diff BASE NEW``: what changed between two runs, behaviour by behaviour."""

from __future__ import annotations

import pandas as pd
from conformance_reports import write_report

from reports.cli import EXIT_BAD_REPORT, EXIT_NEWLY_FAILING, EXIT_OK, main
from reports.conformance_diff import (
    NEWLY_ERRORED,
    NEWLY_FAILING,
    NEWLY_PASSING,
    NEWLY_SKIPPED,
    ONLY_IN_BASE,
    ONLY_IN_NEW,
    UNCHANGED,
)


def _run(tmp_path, base, new, *extra) -> tuple[int, pd.DataFrame, str]:
    out = tmp_path / "out"
    code = main(["--quiet", "--conformance-diff", str(base), str(new), *extra, "--out", str(out)])
    table = pd.read_csv(out / "conformance-diff.csv", dtype=str, keep_default_na=False)
    return code, table, (out / "conformance-diff.md").read_text(encoding="utf-8")


def _changed(table: pd.DataFrame) -> set[tuple[str, str, str]]:
    moved = table[table["change"] != UNCHANGED]
    return set(moved[["behaviour", "device", "change"]].itertuples(index=False, name=None))


def test_one_behaviour_broken_is_named_exactly_and_exits_1(tmp_path, capsys):
    base = write_report(tmp_path / "base" / "report.json", run_id="main-41")
    new = write_report(
        tmp_path / "new" / "report.json",
        run_id="pr-42",
        outcomes={"producer.gather_logprobs@cpu": "failed"},
    )
    code, table, markdown = _run(tmp_path, base.parent, new.parent)
    assert code == EXIT_NEWLY_FAILING
    assert _changed(table) == {("producer.gather_logprobs", "cpu", NEWLY_FAILING)}
    # The same behaviour on another device (another cell) did not change.
    npu = table[(table["behaviour"] == "producer.gather_logprobs") & (table["device"] == "npu")]
    assert list(npu["change"]) == [UNCHANGED]
    assert (
        "- `producer.gather_logprobs` in example-npu · 0.1.0 · 0.12.0 · cpu · box-a: "
        "passed -> failed (2 check(s)): [producer.gather_logprobs] broken" in markdown
    )
    assert "**FAIL**: 1 behaviour(s) newly failing or erroring" in markdown
    assert "1 behaviour(s) newly failing" in capsys.readouterr().err
    # The folder also holds the NEW side's matrix and the changes in summary.md.
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "## Conformance changes" in summary and "| backend | version |" in summary
    assert "newly failing" in (tmp_path / "out" / "conformance-diff.html").read_text()


def test_passing_skipped_and_errored_are_told_apart_and_do_not_all_fail(tmp_path):
    base = write_report(
        tmp_path / "base.json",
        outcomes={
            "LogprobsLists.slice_request": "failed",
            "producer.gather_logprobs@npu": "passed",
        },
    )
    new = write_report(
        tmp_path / "new.json",
        outcomes={
            "producer.gather_logprobs@npu": "skipped",
            "producer.async_output:waits-for-device": "xfailed",  # still conforming
        },
    )
    code, table, _ = _run(tmp_path, base, new)
    assert code == EXIT_OK  # something got fixed, something skipped: nothing newly fails
    assert _changed(table) == {
        ("LogprobsLists.slice_request", "any", NEWLY_PASSING),
        ("producer.gather_logprobs", "npu", NEWLY_SKIPPED),
    }
    errored = write_report(tmp_path / "err.json", outcomes={"ModelRunnerOutput.pickle": "error"})
    code, table, _ = _run(tmp_path, new, errored)
    assert code == EXIT_NEWLY_FAILING
    assert ("ModelRunnerOutput.pickle", "any", NEWLY_ERRORED) in _changed(table)


def test_cells_are_never_paired_across_machines_or_revisions(tmp_path):
    base = write_report(tmp_path / "base.json", machine="box-a")
    new = write_report(
        tmp_path / "new.json", machine="box-b", outcomes={"ModelRunnerOutput.pickle": "failed"}
    )
    code, table, markdown = _run(tmp_path, base, new)
    assert set(table["change"]) == {ONLY_IN_BASE, ONLY_IN_NEW}
    assert set(table.loc[table["change"] == ONLY_IN_NEW, "machine"]) == {"box-b"}
    # A failure only NEW has is new: the gate fails on it.
    assert code == EXIT_NEWLY_FAILING
    assert (
        "- example-npu · 0.1.0 · 0.12.0 · any · box-b: 2 behaviour(s) (1 passed, 1 failed); "
        "failing: `ModelRunnerOutput.pickle`" in markdown
    )


def test_each_side_may_be_a_list(tmp_path):
    cpu = write_report(tmp_path / "base" / "cpu.json", machine="cpu")
    npu = write_report(tmp_path / "base" / "npu.json", machine="npu")
    new_cpu = write_report(tmp_path / "new" / "cpu.json", machine="cpu")
    new_npu = write_report(
        tmp_path / "new" / "npu.json",
        machine="npu",
        outcomes={"ModelRunnerOutput.pickle": "failed"},
    )
    code, table, _ = _run(tmp_path, f"{cpu},{npu}", f"{new_cpu},{new_npu}")
    assert code == EXIT_NEWLY_FAILING
    moved = table[table["change"] != UNCHANGED]
    assert set(moved[["behaviour", "machine"]].itertuples(index=False, name=None)) == {
        ("ModelRunnerOutput.pickle", "npu")
    }


def test_a_bad_side_is_exit_4_and_nothing_written(tmp_path, capsys):
    good = write_report(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "conformance-report/1", "tests": [')
    code = main(
        ["--quiet", "--conformance-diff", str(bad), str(good), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == EXIT_BAD_REPORT and str(bad) in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
