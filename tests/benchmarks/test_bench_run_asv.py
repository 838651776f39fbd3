"""run_asv.py notes the reference's path against the commit it records."""

from __future__ import annotations

from pathlib import Path

from benchmarks.run_asv import record_reference_path


def test_the_path_is_noted_per_commit_and_replaced_on_a_rerun(tmp_path: Path) -> None:
    file = tmp_path / "results" / "reference-paths.txt"
    record_reference_path(["--python=same", "--set-commit-hash=abc"], "pure Python", file)
    record_reference_path(["--set-commit-hash=def"], "C extension (built at install)", file)
    record_reference_path(["--set-commit-hash=abc"], "C extension (built at install)", file)
    assert file.read_text(encoding="utf-8").splitlines() == [
        "def\tC extension (built at install)",
        "abc\tC extension (built at install)",
    ]
    # A run that records no commit notes nothing.
    record_reference_path(["--quick"], "pure Python", file)
    assert len(file.read_text(encoding="utf-8").splitlines()) == 2
