"""``python -m conformance.cli.draft_release``: a release text's data, drafted against the newest revision.

Release texts come from the user cache (fetched on first use); without
that folder these tests skip.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.cli.draft_release import draft, render
from conformance.oracle.revisions import all_revisions

NEWEST = all_revisions()[-1].name


def _text(version: str) -> Path:
    path = RELEASES / f"outputs-{version}.py.txt"
    if not path.is_file():
        pytest.skip(SKIP_REASON)
    return path


def test_a_release_with_the_newest_types_is_one_line_of_data() -> None:
    found = draft(_text(NEWEST), "9.9.9")
    assert found.unchanged
    assert f"releases=('{NEWEST}', '9.9.9')" in render(found)


def test_a_release_whose_types_differ_gets_a_skeleton_naming_each_difference() -> None:
    # 0.33.0's text held against the newest revision (0.34.0 removed req_id_to_index).
    found = draft(_text("0.33.0"), "9.9.9")
    assert set(found.changed) == {"ModelRunnerOutput"}
    assert not found.removed and not found.new_classes
    text = render(found)
    assert "R_9_9_9 = derive(" in text and "req_id_to_index" in text


def test_the_command_prints_the_draft(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli.draft_release", str(_text(NEWEST)), "--version",
         "9.9.9"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "every type as in" in done.stdout


def test_a_text_without_a_version_in_its_name_needs_one(tmp_path) -> None:
    text = tmp_path / "outputs.py"
    text.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli.draft_release", str(text)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4
    assert "give --version X" in done.stderr
