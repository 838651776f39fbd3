"""The smoke mode fails when a benchmark errors, and only then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import smoke

PLANTED = """
class Planted:
    params = [["a", "b"]]
    param_names = ["case"]

    def setup(self, case):
        if case == "b":
            raise NotImplementedError("skipped, not failed")

    def time_fine(self, case):
        pass
"""
BROKEN_METHOD = """
    def time_broken(self, case):
        raise RuntimeError("planted failure")
"""


def run_smoke(
    tmp_path: Path, repo_root: Path, suite: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    bench_dir = tmp_path / "bench"
    bench_dir.mkdir()
    (bench_dir / "__init__.py").write_text("")
    for name, source in suite.items():
        (bench_dir / name).write_text(source)
    conf = {
        "version": 1,
        "project": "planted",
        "repo": str(repo_root),
        "benchmark_dir": str(bench_dir),
        "env_dir": str(tmp_path / "env"),
        "results_dir": str(tmp_path / "results"),
        "html_dir": str(tmp_path / "html"),
        "environment_type": "virtualenv",
        "launch_method": "forkserver",
    }
    (tmp_path / "asv.conf.json").write_text(json.dumps(conf))
    # A fresh HOME: the smoke mode must describe the machine to asv by itself.
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    return subprocess.run(
        [sys.executable, smoke.__file__, "--config", str(tmp_path / "asv.conf.json")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_smoke_mode_passes_when_every_benchmark_runs_or_skips(
    tmp_path: Path, repo_root: Path
) -> None:
    result = run_smoke(tmp_path, repo_root, {"planted.py": PLANTED})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "planted.Planted.time_fine" in result.stdout
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*-*.json"))


def test_smoke_mode_fails_and_names_the_benchmark_that_errors(
    tmp_path: Path, repo_root: Path
) -> None:
    result = run_smoke(tmp_path, repo_root, {"planted.py": PLANTED + BROKEN_METHOD})
    assert result.returncode == 1
    assert "SMOKE RUN FAILED" in result.stderr
    assert "planted.Planted.time_broken (1/2 failed)" in result.stderr


def test_smoke_mode_fails_when_the_suite_cannot_be_imported(
    tmp_path: Path, repo_root: Path
) -> None:
    result = run_smoke(
        tmp_path, repo_root, {"planted.py": PLANTED, "broken.py": "import no_such_module_here\n"}
    )
    assert result.returncode == 1
    assert "SMOKE RUN FAILED" in result.stderr


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[25.00%] ··· b.A.time_bad                                    1/2 failed",
            ["b.A.time_bad (1/2 failed)"],
        ),
        ("[50.00%] ··· b.A.time_ok                                     ok", []),
        (
            "[ 5.56%] ··· ...s_slice.Slice.time_slice_per_request_with_cu   failed",
            ["...s_slice.Slice.time_slice_per_request_with_cu (failed)"],
        ),
    ],
)
def test_failed_status_lines_are_recognised(line: str, expected: list[str]) -> None:
    assert smoke.failed_benchmarks(line) == expected
