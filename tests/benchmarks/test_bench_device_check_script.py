"""benchmarks/device_check.sh: a valid script that insists on its output folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def test_device_check_script_is_executable_bash(repo_root: Path) -> None:
    script = repo_root / "benchmarks" / "device_check.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_device_check_script_requires_an_output_folder(repo_root: Path) -> None:
    script = repo_root / "benchmarks" / "device_check.sh"
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 64
    assert "usage:" in result.stderr
