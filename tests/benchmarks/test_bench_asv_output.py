"""asv's output with skips folded: every skip reason once, failures untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.asv_output import fold_skips
from benchmarks.release_backends import UnknownReleaseError, release_backend_specs

OUTPUT = """\
[ 10.00%] ··· padding.Unpad.time_unpad                                    1/4 failed
[ 10.00%] ··· ========== ======== ==========
               backend    device
              ========== ======== ==========
[ 10.00%] ···· For parameters: 'reference', 'cuda', 1, 0
               asv: skipped: NotImplementedError('no cuda device on this machine')

               For parameters: 'reference', 'cpu', 1, 0
               Traceback (most recent call last):
                 File "padding.py", line 3, in time_unpad
               RuntimeError: planted failure

               For parameters: 'reference', 'mps', 1, 0
               asv: skipped: NotImplementedError('no mps device on this machine')

               For parameters: 'vllm-release:0.12.0', 'cpu', 1, 0
               asv: skipped: NotImplementedError('vllm-release:0.12.0 (revision 0.12.0) lacks LogprobsTensors.cat')

               For parameters: 'vllm-release:0.13.0', 'cpu', 1, 0
               asv: skipped: NotImplementedError('vllm-release:0.13.0 (revision 0.13.0) lacks LogprobsTensors.cat')

               For parameters: 'vllm-release:0.13.0', 'cpu', 1, 0
               asv: skipped: NotImplementedError("backend 'vllm-release:0.13.0' provides no pad_sampled_token_ids")
[ 20.00%] ··· tolists.ToLists.time_tolists                                ok
[ 20.00%] ···· For parameters: 'reference', 'cuda', 1, 0
               asv: skipped: NotImplementedError('no cuda device on this machine')
"""


def test_skip_blocks_fold_into_one_line_per_reason_and_failures_stay() -> None:
    kept, summary = fold_skips(OUTPUT.splitlines(keepends=True))
    text = "".join(kept)
    assert "asv: skipped" not in text
    assert "RuntimeError: planted failure" in text
    assert "For parameters: 'reference', 'cpu', 1, 0" in text
    assert "1/4 failed" in text and "tolists.ToLists.time_tolists" in text
    assert summary.splitlines() == [
        "asv skipped 6 parameter combination(s) (NotImplementedError in setup), by reason:",
        "      2  no cuda device on this machine",
        "      2  the revision lacks LogprobsTensors.cat (0.12.0, 0.13.0)",
        "      1  no mps device on this machine",
        "      1  the backend provides no pad_sampled_token_ids (vllm-release:0.13.0)",
    ]


def test_output_without_skips_passes_through_unchanged() -> None:
    lines = [line for line in OUTPUT.splitlines(keepends=True) if "skipped" not in line]
    lines = [line for line in lines if "For parameters" not in line or "'cpu'" in line]
    kept, summary = fold_skips(lines)
    assert kept == lines
    assert summary == ""


def test_release_backends_measure_each_distinct_release_text_once(tmp_path: Path) -> None:
    (tmp_path / "outputs-0.10.0.py.txt").write_text("too old\n", encoding="utf-8")
    (tmp_path / "outputs-0.12.0.py.txt").write_text("text A\n", encoding="utf-8")
    (tmp_path / "outputs-0.13.0.py.txt").write_text("text B\n", encoding="utf-8")
    (tmp_path / "outputs-0.14.0.py.txt").write_text("text C\n", encoding="utf-8")
    (tmp_path / "outputs-0.14.1.py.txt").write_text("text C\n", encoding="utf-8")
    specs, same_as = release_backend_specs(tmp_path)
    assert specs == [
        "reference",
        "vllm-release:0.12.0",
        "vllm-release:0.13.0",
        "vllm-release:0.14.0",
    ]
    assert same_as == {"0.14.1": "0.14.0"}


def test_release_backends_script_prints_the_list_last(tmp_path: Path, repo_root: Path) -> None:
    (tmp_path / "outputs-0.12.0.py.txt").write_text("text A\n", encoding="utf-8")
    (tmp_path / "outputs-0.12.1.py.txt").write_text("text A\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "benchmarks/release_backends.py", str(tmp_path)],
        cwd=repo_root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "reference,vllm-release:0.12.0"
    assert "0.12.1: outputs.py identical to 0.12.0" in done.stderr


def test_release_backends_subset_keeps_the_reference_and_the_named_releases(
    tmp_path: Path,
) -> None:
    (tmp_path / "outputs-0.10.0.py.txt").write_text("too old\n", encoding="utf-8")
    for version, text in (("0.12.0", "A"), ("0.13.0", "B"), ("0.14.0", "C"), ("0.14.1", "C")):
        (tmp_path / f"outputs-{version}.py.txt").write_text(text, encoding="utf-8")
    specs, same_as = release_backend_specs(tmp_path, ["0.14.1", "0.12.0"])
    # 0.14.1 is 0.14.0's text: measured as 0.14.0; release order is kept.
    assert specs == ["reference", "vllm-release:0.12.0", "vllm-release:0.14.0"]
    assert same_as == {"0.14.1": "0.14.0"}
    with pytest.raises(UnknownReleaseError, match=r"0\.99\.0.*releases there: 0\.10\.0, 0\.12\.0"):
        release_backend_specs(tmp_path, ["0.99.0"])
    with pytest.raises(UnknownReleaseError, match="older than the spec types"):
        release_backend_specs(tmp_path, ["0.10.0"])


def test_release_backends_script_refuses_an_unknown_release_in_one_line(
    tmp_path: Path, repo_root: Path
) -> None:
    (tmp_path / "outputs-0.12.0.py.txt").write_text("text A\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "benchmarks/release_backends.py", str(tmp_path), "--releases", "0.9.9"],
        cwd=repo_root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: no outputs-X.py.txt in {tmp_path} for 0.9.9; releases there: 0.12.0"
    ]
