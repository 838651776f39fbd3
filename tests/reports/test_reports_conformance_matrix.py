"""One matrix from any number of conformance reports: rows backend x version, columns
revision x device x machine; nothing that differs in a key is merged."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conformance_reports import report_data, write_report

from reports import conformance_matrix, load_conformance, merge_check
from reports.cli import EXIT_BAD_REPORT, EXIT_OK, main

FIXTURE = Path(__file__).parent / "fixtures" / "conformance-report.json"


def _matrix(*paths: Path) -> pd.DataFrame:
    frame, _ = conformance_matrix.newest_per_key(conformance_matrix.keyed(load_conformance(paths)))
    return conformance_matrix.cells(frame)


def _columns(cells: pd.DataFrame) -> set[tuple[str, str, str]]:
    return set(cells[["spec_revision", "device", "machine"]].itertuples(index=False, name=None))


def test_one_backend_at_two_revisions_stays_two_columns(tmp_path):
    # The bug the issue found: the second revision merged into the first one's row.
    old = write_report(tmp_path / "a.json", revision="2025.10")
    new = write_report(
        tmp_path / "b.json", revision="0.12.0", outcomes={"ModelRunnerOutput.pickle": "failed"}
    )
    cells = _matrix(old, new)
    assert set(cells["spec_revision"]) == {"2025.10", "0.12.0"}
    at = cells.set_index(["spec_revision", "device"])
    assert at.loc[("2025.10", "any"), "failed"] == 0
    assert at.loc[("0.12.0", "any"), "failed"] == 2
    assert at.loc[("0.12.0", "any"), "failing"] == "ModelRunnerOutput.pickle (2 failed)"
    # Each cell counts only its own report's checks.
    assert at.loc[("2025.10", "any"), "total"] == at.loc[("0.12.0", "any"), "total"] == 5


def test_two_backends_are_two_rows_and_two_machines_two_columns(tmp_path):
    a = write_report(tmp_path / "a.json", backend="example-npu", machine="box-a")
    b = write_report(tmp_path / "b.json", backend="reference", version="0.2.0", machine="box-a")
    c = write_report(tmp_path / "c.json", backend="example-npu", machine="box-b")
    cells = _matrix(a, b, c)
    rows = set(cells[["backend", "backend_version"]].itertuples(index=False, name=None))
    assert rows == {("example-npu", "0.1.0"), ("reference", "0.2.0")}
    npu = cells[cells["backend"] == "example-npu"]
    assert {m for _, _, m in _columns(npu)} == {"box-a", "box-b"}
    # Every report's checks are counted once, in its own cells.
    assert cells["total"].sum() == 3 * 9


def test_the_same_key_twice_is_named_and_the_newer_kept(tmp_path):
    newer = write_report(
        tmp_path / "first-given.json",
        started="2025-10-21T10:00:00Z",
        run_id="run-2",
        outcomes={"LogprobsLists.slice_request": "failed"},
    )
    older = write_report(tmp_path / "second-given.json", started="2025-10-20T10:00:00Z")
    frame, duplicates = conformance_matrix.newest_per_key(
        conformance_matrix.keyed(load_conformance([newer, older]))
    )
    assert set(frame["report"]) == {str(newer)}
    [duplicate] = duplicates
    assert duplicate.kept == str(newer) and duplicate.dropped == (str(older),)
    assert duplicate.key == ("example-npu", "0.1.0", "0.12.0", "box-a")
    out = tmp_path / "out"
    assert main(["--quiet", "--conformance", str(older), str(newer), "--out", str(out)]) == EXIT_OK
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert f"kept the newest, `{newer}`; set aside `{older}`" in summary
    assert sorted(p.name for p in out.glob("conformance*.json")) == ["conformance.json"]
    assert json.loads((out / "conformance.json").read_text())["run"]["id"] == "run-2"


def test_reports_without_a_machine_or_a_time_stay_apart_by_revision(tmp_path):
    # Reports of an older suite: no machine, no run; the file's time decides a repeat.
    data = json.loads(FIXTURE.read_text())
    first, second = tmp_path / "one.json", tmp_path / "two.json"
    first.write_text(json.dumps(data))
    second.write_text(json.dumps({**data, "spec_revision": "0.12.0"}))
    cells = _matrix(first, second)
    assert set(cells["machine"]) == {"(not recorded)"}
    assert set(cells["spec_revision"]) == {"2025.10", "0.12.0"}
    assert cells["total"].sum() == 2 * len(data["tests"])


def test_folders_are_searched_and_other_json_passed_over(tmp_path):
    write_report(tmp_path / "jobs" / "report-0.12.0-cpu" / "report.json", machine="cpu")
    write_report(tmp_path / "jobs" / "report-0.12.0-npu" / "report.json", machine="npu")
    (tmp_path / "jobs" / "machine.json").write_text('{"machine": "m1", "version": 1}')
    cells = _matrix(tmp_path / "jobs")
    assert set(cells["machine"]) == {"cpu", "npu"}
    # A file named in two ways is read once.
    again = _matrix(tmp_path / "jobs", tmp_path / "jobs" / "report-0.12.0-cpu" / "report.json")
    assert again.equals(cells)


@pytest.mark.parametrize(
    ("content", "why", "in_a_folder_too"),
    [
        (
            '{"schema": "conformance-report/2", "tests": []}',
            "schema 'conformance-report/2', a version this reader does not know",
            True,
        ),
        ('{"schema": "conformance-report/1", "tests": [', "corrupt or truncated JSON", True),
        # In a folder, a JSON file of another kind (asv's machine.json) is passed over.
        ('{"schema": "junit", "tests": []}', "not a conformance report", False),
    ],
)
def test_bad_input_is_exit_4_one_line_naming_the_file_and_nothing_written(
    tmp_path, capsys, content, why, in_a_folder_too
):
    folder = tmp_path / "reports"
    good = write_report(folder / "good.json")
    bad = folder / "bad.json"
    bad.write_text(content)
    out = tmp_path / "out"
    assert main(["--quiet", "--conformance", str(good), "--out", str(out)]) == EXIT_OK
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for given, is_bad in (([good, bad], True), ([folder], in_a_folder_too)):
        code = main(["--quiet", "--conformance", *map(str, given), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        if not is_bad:
            assert code == EXIT_OK, err
            continue
        assert code == EXIT_BAD_REPORT, err
        assert err.count("\n") == 1 and f"{bad}: " in err and why in err
        assert not (tmp_path / "o").exists()
        code = main(["--quiet", "--conformance", *map(str, given), "--out", str(out)])
        assert code == EXIT_BAD_REPORT and str(bad) in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched


def test_a_folder_without_reports_is_exit_4(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = main(["--quiet", "--conformance", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_REPORT and "holds no conformance report" in err
    assert not (tmp_path / "o").exists()


def test_a_failing_cell_names_its_behaviours_one_click_or_one_line_away(tmp_path):
    report = write_report(
        tmp_path / "r.json",
        outcomes={"producer.gather_logprobs@cpu": "failed", "ModelRunnerOutput.pickle": "error"},
    )
    out = tmp_path / "out"
    assert main(["--quiet", "--conformance", str(report), "--out", str(out)]) == EXIT_OK
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "| backend | version | 0.12.0 · any · box-a | 0.12.0 · cpu · box-a |" in summary
    assert "**FAIL** 2 failed [2]" in summary  # the cpu cell, its note numbered
    assert (
        "- [2] `example-npu` 0.1.0 at 0.12.0 · cpu · box-a: "
        "`producer.gather_logprobs` (2 failed)" in summary
    )
    assert (
        "- [1] `example-npu` 0.1.0 at 0.12.0 · any · box-a: `ModelRunnerOutput.pickle` (2 error)"
        in summary
    )
    page = (out / "report.html").read_text(encoding="utf-8")
    assert (
        '<td class="bad"><details><summary><strong class="badge fail">FAIL</strong> 2 failed'
        "</summary><ul><li><code>producer.gather_logprobs</code> (2 failed)</li></ul></details>"
        in page
    )
    # The columns' levels are header rows: the revision spans its four device columns.
    assert '<th colspan="4" title="spec revision">0.12.0</th>' in page
    # Where it ran is said per report.
    assert "Not shown" not in summary  # every device here is declared
    assert "Ran on box-a: OS Linux-6.8-x86_64; Python 3.11.7; torch 2.13.0+cpu" in summary


def test_the_merged_matrix_holds_exactly_the_separate_runs(tmp_path, capsys):
    # The CI matrix's shards, each run alone, then merged as the merge job does.
    shards = [
        write_report(
            tmp_path / "shards" / rev / "report.json", revision=rev, run_id=rev, outcomes=o
        )
        for rev, o in (
            ("0.11.1", {"LogprobsLists.slice_request": "failed"}),
            ("0.12.0", {}),
            ("0.13.0", {"producer.gather_logprobs@npu": "skipped"}),
        )
    ]
    out = tmp_path / "merged"
    assert main(["--quiet", "--conformance", str(tmp_path / "shards"), "--out", str(out)]) == 0
    merged = pd.read_csv(out / "conformance-matrix.csv", dtype=str, keep_default_na=False)
    separate = pd.concat([conformance_matrix.cells(_keyed(s)) for s in shards])
    assert merge_check.as_text(merged) == merge_check.as_text(separate)
    assert merge_check.main([str(out), *map(str, shards)]) == merge_check.EXIT_SAME
    assert "merged matrix: 12 cell(s) = the shards' 12" in capsys.readouterr().out
    # A merged matrix that lost a failure (or gained a cell) is caught.
    merged.loc[merged["failed"] != "0", "failed"] = "0"
    merged.to_csv(out / "conformance-matrix.csv", index=False)
    assert merge_check.main([str(out), *map(str, shards)]) == merge_check.EXIT_DIFFERENT
    assert "DIFFERS" in capsys.readouterr().out
    assert merge_check.main([str(out), str(shards[0])]) == merge_check.EXIT_DIFFERENT
    assert "cell(s) no shard has" in capsys.readouterr().out


def _keyed(path: Path) -> pd.DataFrame:
    return conformance_matrix.keyed(load_conformance(path))


def test_devices_no_backend_declares_are_left_out_of_the_table_not_the_csv(tmp_path):
    behaviours = {
        "producer.gather_logprobs": ("module", ("cpu", "cuda")),
        "ModelRunnerOutput.pickle": ("ModelRunnerOutput", (None,)),
    }
    data = report_data(behaviours=behaviours)
    for test in data["tests"]:
        if test["device"] == "cuda":
            test.update(outcome="skipped", skip_cause="device-not-declared")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main(["--quiet", "--conformance", str(path), "--out", str(out)]) == EXIT_OK
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Not shown: cuda where no backend declares the device" in summary
    assert "| backend | version | 0.12.0 · any · box-a | 0.12.0 · cpu · box-a |\n" in summary
    csv = pd.read_csv(out / "conformance-matrix.csv")
    assert "cuda" in set(csv["device"])
