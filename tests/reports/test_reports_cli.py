"""python -m reports end to end: the folder it writes, --compare, and bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reports.cli import EXIT_BAD_INPUT, EXIT_BAD_REPORT, EXIT_OK, EXIT_REGRESSION, main
from reports.output import MARKER
from reports.sections.header import short_environment

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(*args: str | Path) -> int:
    return main(["--quiet", *map(str, args)])


@pytest.fixture(scope="module")
def report(asv_project, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "out"
    conformance = Path(__file__).parent / "fixtures" / "conformance-report.json"
    code = main(
        [
            "--quiet",
            "--results",
            str(asv_project.results),
            "--conformance",
            str(conformance),
            "--out",
            str(out),
        ]
    )
    assert code == EXIT_OK
    return out


def test_writes_csv_summary_and_non_empty_pngs(report):
    names = {p.name for p in report.iterdir()}
    assert {"results.csv", "summary.md", "report.html", "conformance.json", MARKER} <= names
    for name in (
        "latency.png",
        "bandwidth.png",
        "tolists_ns_per_element.png",
        "unpad_speedup.png",
        "conformance_matrix.png",
    ):
        data = (report / name).read_bytes()
        assert data.startswith(PNG_MAGIC), name
        assert len(data) > 10_000, name  # axes, labels and lines, not a blank canvas


def test_results_csv_is_the_tidy_frame(report, asv_project):
    frame = pd.read_csv(report / "results.csv")
    assert {"benchmark", "device", "value", "unit", "commit", "machine", "env", "num_reqs"} <= set(
        frame.columns
    )
    assert set(frame["machine"]) == {"m1", "m2"}
    assert set(frame["commit"]) == {asv_project.commit_1, asv_project.commit_2}


def test_summary_reports_targets_with_pass_fail_and_the_link_limit(report):
    text = (report / "summary.md").read_text(encoding="utf-8")
    # The tiny project's speed-up track is 3.0 at 16 requests and 1.5 at 256:
    # the 2x target fails, and the worst shape is named.
    unpad = next(line for line in text.splitlines() if line.startswith("- unpad_sampled_token_ids"))
    assert "**FAIL**" in unpad and "1.50x" in unpad
    assert "num_reqs=256" in text
    assert "63 GB/s" in text
    # ns per element: 20 + num_logprobs.
    assert "| m1 | cpu | `ToLists.track_tolists_ns_per_element` |" in text
    # The conformance fixture has two failures and an error.
    assert "Conformance of backend `reference`: **FAIL**" in text
    assert "slice_with_cu_takes_rows_of_requests_start_to_end" in text
    # Latency per benchmark and device, skipped devices said so.
    assert "### `bench_tiny.Unpad.time_unpad_sampled_token_ids`" in text
    assert "skipped" in text
    # Plots that have no data say so rather than failing.
    assert "](latency.png)" in text


def test_summary_describes_each_machines_latest_commit(report, asv_project):
    text = (report / "summary.md").read_text(encoding="utf-8")
    assert f"| m1 | `{asv_project.commit_2[:10]}`" in text
    assert f"| m1 | `{asv_project.commit_1[:10]}`" not in text


def _plant(
    results: Path, machine: str, commit: str, new_commit: str, factor: dict[str, float]
) -> None:
    """Copy ``machine``'s results of ``commit`` as ``new_commit``, scaling some benchmarks."""
    source = next(p for p in (results / machine).glob(f"{commit[:8]}-*.json"))
    data = json.loads(source.read_text())
    data["commit_hash"] = new_commit
    data["date"] += 1000
    for name, scale in factor.items():
        row = data["results"][name]
        row[0] = [v * scale if isinstance(v, (int, float)) else v for v in row[0]]
    (results / machine / source.name.replace(commit[:8], new_commit[:8])).write_text(
        json.dumps(data)
    )


NEW = "feedc0de" * 5


def test_compare_flags_a_planted_regression_and_exits_1(
    results_copy, asv_project, tmp_path, capsys
):
    # GB/s halved is a regression; time_plain twice as fast is an improvement.
    _plant(
        results_copy,
        "m1",
        asv_project.commit_2,
        NEW,
        {"bench_tiny.Unpad.track_bandwidth": 0.5, "bench_tiny.time_plain": 0.5},
    )
    out = tmp_path / "out"
    code = _run(
        "--results", results_copy, "--out", out, "--compare", asv_project.commit_2[:8], NEW[:8]
    )
    assert code == EXIT_REGRESSION
    assert "regression" in capsys.readouterr().err
    table = pd.read_csv(out / "compare.csv")
    regressed = table[table["change"] == "regressed"]
    assert set(regressed["benchmark"]) == {"bench_tiny.Unpad.track_bandwidth"}
    assert set(regressed["machine"]) == {"m1"}
    improved = table[table["change"] == "improved"]
    assert set(improved["benchmark"]) == {"bench_tiny.time_plain"}
    md = (out / "compare.md").read_text()
    assert "**REGRESSED**" in md and "0.50x" in md
    assert "regression(s) beyond 10%" in (out / "summary.md").read_text()


def test_compare_passes_an_unchanged_pair(results_copy, asv_project, tmp_path):
    _plant(results_copy, "m1", asv_project.commit_2, NEW, {})
    out = tmp_path / "out"
    code = _run(
        "--results",
        results_copy,
        "--out",
        out,
        "--compare",
        f"m1@{asv_project.commit_2[:8]}",
        f"m1@{NEW[:8]}",
    )
    assert code == EXIT_OK
    table = pd.read_csv(out / "compare.csv")
    assert set(table["change"]) <= {"unchanged", "not comparable"}
    assert (table["change"] == "unchanged").sum() > 10
    assert "No change beyond the threshold" in (out / "compare.md").read_text()


def test_compare_never_pairs_two_machines_and_says_so(asv_project, tmp_path, capsys):
    # Two machines' numbers differ by the machine: the gate refuses to pair them.
    err = _bad(capsys, "--results", asv_project.results, "--out", tmp_path / "out",
               "--compare", "m1", "m2")  # fmt: skip
    assert "only compares a machine with itself" in err and "MACHINE@COMMIT" in err
    assert not (tmp_path / "out").exists()
    # Two commits: each machine with itself, the one only A ran named as not compared.
    out = tmp_path / "out"
    code = _run("--results", asv_project.results, "--out", out, "--compare",
                asv_project.commit_1[:8], asv_project.commit_2[:8], "--threshold", "100")  # fmt: skip
    assert code == EXIT_OK
    assert set(pd.read_csv(out / "compare.csv")["machine"]) == {"m1"}
    md = (out / "compare.md").read_text()
    assert (
        f"Each machine is compared only with itself: m1 (`{asv_project.commit_1[:8]}` -> "
        f"`{asv_project.commit_2[:8]}`). Not compared, only in B: m2." in md
    )


def test_results_of_two_machines_folders_are_shown_side_by_side(asv_project, tmp_path):
    # Each benchmark machine uploads its own results folder (as CI jobs do).
    for machine in ("m1", "m2"):
        folder = tmp_path / f"results-{machine}"
        shutil.copytree(asv_project.results / machine, folder / machine)
        shutil.copy(asv_project.results / "benchmarks.json", folder)
    out = tmp_path / "out"
    code = _run("--results", tmp_path / "results-m1", tmp_path / "results-m2", "--out", out)
    assert code == EXIT_OK
    frame = pd.read_csv(out / "results.csv")
    assert set(frame["machine"]) == {"m1", "m2"}
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Machines side by side" in text
    assert "| device | benchmark | shapes | m1 | m2 |" in text
    row = next(line for line in text.splitlines() if "`bench_tiny.time_plain` | 1 |" in line)
    m1_ns, m2_ns = (float(c.split(" ns")[0]) for c in row.split(" | ")[3:5])
    assert f"{max(m1_ns, m2_ns) / min(m1_ns, m2_ns):.2f}x" in row  # the ratio of the two
    assert (out / "machines.png").read_bytes().startswith(PNG_MAGIC)
    # The latency table puts both machines' columns side by side too.
    assert "| num_reqs | cpu@m1 | cpu@m2 |" in text


# --- bad input: one message naming the file and the fix, exit 2, nothing written ---


def _bad(capsys, *args: str | Path, code: int = EXIT_BAD_INPUT) -> str:
    got = _run(*args)
    err = capsys.readouterr().err
    assert got == code, err
    assert err.count("\n") == 1, err  # one line, no traceback
    return err


def test_missing_results_folder(tmp_path, capsys):
    err = _bad(capsys, "--results", tmp_path / "absent", "--out", tmp_path / "out")
    assert str(tmp_path / "absent") in err and "nox -s bench" in err
    assert not (tmp_path / "out").exists()


def test_empty_results_folder(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    err = _bad(capsys, "--results", tmp_path / "empty", "--out", tmp_path / "out")
    assert "holds no asv results" in err
    assert not (tmp_path / "out").exists()


def test_truncated_results_file_leaves_an_existing_report_untouched(
    results_copy, asv_project, tmp_path, capsys
):
    out = tmp_path / "out"
    assert _run("--results", results_copy, "--out", out) == EXIT_OK
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    victim = next((results_copy / "m1").glob(f"{asv_project.commit_2[:8]}-*.json"))
    victim.write_bytes(victim.read_bytes()[:-40])
    err = _bad(capsys, "--results", results_copy, "--out", out)
    assert victim.name in err and "corrupt or truncated" in err and "re-run" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_no_results_for_the_requested_commit(asv_project, tmp_path, capsys):
    err = _bad(
        capsys,
        "--results",
        asv_project.results,
        "--out",
        tmp_path / "out",
        "--compare",
        asv_project.commit_1[:8],
        "abcdef12",
    )
    assert "no benchmark results for commit 'abcdef12'" in err
    assert asv_project.commit_1[:8] in err  # lists the commits that do have results
    assert not (tmp_path / "out").exists()


def test_unknown_machine(asv_project, tmp_path, capsys):
    err = _bad(
        capsys, "--results", asv_project.results, "--out", tmp_path / "out", "--machine", "gpu-box"
    )
    assert "unknown machine 'gpu-box'" in err and "m1, m2" in err
    err = _bad(
        capsys,
        "--results",
        asv_project.results,
        "--out",
        tmp_path / "out",
        "--compare",
        "m1",
        "gpu-box",
    )
    assert "unknown machine 'gpu-box'" in err
    assert not (tmp_path / "out").exists()


def test_corrupt_conformance_report(asv_project, tmp_path, capsys):
    bad = tmp_path / "conformance.json"
    bad.write_text('{"schema": "conformance-report/1", "tests": [', encoding="utf-8")
    # A bad conformance report is exit 4, as python -m conformance's usage errors.
    err = _bad(
        capsys,
        "--results",
        asv_project.results,
        "--out",
        tmp_path / "out",
        "--conformance",
        bad,
        code=EXIT_BAD_REPORT,
    )
    assert str(bad) in err and "python -m conformance" in err
    assert not (tmp_path / "out").exists()


def test_refuses_to_replace_a_folder_that_is_not_a_report(asv_project, tmp_path, capsys):
    precious = tmp_path / "src"
    precious.mkdir()
    (precious / "keep.py").write_text("x = 1\n")
    err = _bad(capsys, "--results", asv_project.results, "--out", precious)
    assert "not a report folder" in err
    assert [p.name for p in precious.iterdir()] == ["keep.py"]


def test_a_rerender_keeps_the_files_someone_put_into_the_report_folder(tmp_path, capsys):
    conformance = Path(__file__).parent / "fixtures" / "conformance-report.json"
    out = tmp_path / "out"
    assert _run("--conformance", conformance, "--out", out) == EXIT_OK
    (out / "analysis.md").write_text("notes\n")
    (out / "shots").mkdir()
    (out / "shots" / "a.png").write_bytes(PNG_MAGIC)
    assert _run("--conformance", conformance, "--out", out) == EXIT_OK
    assert (out / "analysis.md").read_text() == "notes\n"
    assert (out / "shots" / "a.png").read_bytes() == PNG_MAGIC
    assert "analysis.md" not in (out / MARKER).read_text()  # still not the report's
    # One the new report would overwrite: refused, nothing replaced.
    (out / "report.html").unlink()
    (out / "report.html").write_text("mine\n")
    marker = (out / MARKER).read_text().replace("report.html\n", "")
    (out / MARKER).write_text(marker)
    err = _bad(capsys, "--conformance", conformance, "--out", out)
    assert "report.html, which no report wrote" in err
    assert (out / "report.html").read_text() == "mine\n"
    assert (out / "analysis.md").is_file()


def test_help_explains_every_option():
    done = subprocess.run(
        [sys.executable, "-m", "reports", "--help"], capture_output=True, text=True, check=True
    )
    for option in (
        "--results",
        "--conformance",
        "--out",
        "--compare",
        "--threshold",
        "--machine",
        "--commit",
        "--config",
    ):
        assert option in done.stdout
    assert "Exit codes" in done.stdout


def test_progress_is_printed_on_stderr(asv_project, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reports",
            "--results",
            str(asv_project.results),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert "plotted latency.png" in done.stderr and "reading" in done.stderr
    assert str(tmp_path / "o") in done.stdout


def test_commit_option_describes_that_commit(asv_project, tmp_path):
    out = tmp_path / "out"
    assert (
        _run("--results", asv_project.results, "--out", out, "--commit", asv_project.commit_1[:8])
        == EXIT_OK
    )
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert f"| m1 | `{asv_project.commit_1[:10]}`" in text
    assert f"`{asv_project.commit_2[:10]}`" not in text
    # The benchmark edited after commit 1 is flagged where its numbers appear.
    assert "(edited)" in text and "edited since they ran" in text


def test_a_commit_run_in_two_environments_is_summarised_from_one(
    results_copy, asv_project, tmp_path
):
    source = next((results_copy / "m1").glob(f"{asv_project.commit_2[:8]}-*.json"))
    data = json.loads(source.read_text())
    data["env_name"] = "virtualenv-py3.11-torch"
    # The second environment ran only time_plain.
    data["results"] = {"bench_tiny.time_plain": data["results"]["bench_tiny.time_plain"]}
    (results_copy / "m1" / f"{asv_project.commit_2[:8]}-virtualenv-py3.11-torch.json").write_text(
        json.dumps(data)
    )
    out = tmp_path / "out"
    assert _run("--results", results_copy, "--out", out) == EXIT_OK
    frame = pd.read_csv(out / "results.csv")
    assert set(frame.loc[frame["machine"] == "m1", "env"]) == {
        source.name[9:-5],
        "virtualenv-py3.11-torch",
    }
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "virtualenv-py3.11-torch" not in text  # the fuller environment is described
    shown = short_environment(source.name[9:-5])  # a long name keeps its two ends
    assert f"| m1 | `{asv_project.commit_2[:10]}` | `{shown}` |" in text


def test_reports_imports_none_of_the_other_packages():
    # DESIGN section 2: reports reads files; it never imports reference,
    # conformance or benchmarks (nor torch, which they bring).
    code = (
        "import sys, reports, reports.cli;"
        "print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in {'reference', 'conformance', 'benchmarks', 'torch'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("smoke_run_before", [False, True], ids=["no-folder", "smoke-leftovers"])
def test_conformance_reports_alone_make_a_page(tmp_path, monkeypatch, smoke_run_before):
    # A backend's CI runs no benchmarks: no .asv/results here, and --results not given.
    # The smoke run (asv run --quick) saves no results, only what asv writes first.
    monkeypatch.chdir(tmp_path)
    if smoke_run_before:
        machine = tmp_path / ".asv" / "results" / "vm"
        machine.mkdir(parents=True)
        (machine / "machine.json").write_text('{"machine": "vm", "version": 1}')
        (machine.parent / "benchmarks.json").write_text('{"version": 2}')
    conformance = Path(__file__).parent / "fixtures" / "conformance-report.json"
    assert _run("--conformance", conformance, "--out", tmp_path / "out") == 0
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "Conformance of backend" in summary
    assert (tmp_path / "out" / "report.html").is_file()
    assert (tmp_path / "out" / "conformance.json").is_file()


def test_without_conformance_reports_a_missing_default_results_folder_is_bad_input(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    err = _bad(capsys, "--out", tmp_path / "out")
    assert ".asv/results" in err
    assert not (tmp_path / "out").exists()


def test_a_mistyped_option_is_one_line_naming_the_option_meant(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--conformanse", "report.json"])
    assert exited.value.code == 4
    [line] = capsys.readouterr().err.splitlines()
    assert "(did you mean --conformance?)" in line


def test_an_out_folder_that_cannot_be_made_is_one_line(asv_project, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    err = _bad(capsys, "--results", asv_project.results, "--out", blocker / "out")
    assert "cannot write the report folder here" in err and "--out" in err
    assert blocker.read_text() == "not a folder\n"
