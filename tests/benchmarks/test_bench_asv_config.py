"""asv.conf.json says what the issue asks, and asv accepts the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from asv.util import load_json


def test_results_html_and_environments_live_under_dot_asv(repo_root: Path) -> None:
    conf = load_json(repo_root / "asv.conf.json", js_comments=True)
    assert conf["benchmark_dir"] == "benchmarks"
    assert conf["results_dir"] == ".asv/results"
    assert conf["html_dir"] == ".asv/html"
    assert conf["env_dir"] == ".asv/env"
    gitignore = (repo_root / ".gitignore").read_text().splitlines()
    assert ".asv/" in gitignore


def test_history_runs_build_in_virtualenvs_with_the_cpu_torch_pin(repo_root: Path) -> None:
    conf = load_json(repo_root / "asv.conf.json", js_comments=True)
    assert conf["environment_type"] == "virtualenv"
    constraint = (repo_root / "constraints" / "cpu-torch.txt").read_text()
    assert [f"torch=={v}" for v in conf["matrix"]["req"]["torch"]] == [
        line for line in constraint.splitlines() if line.startswith("torch==")
    ]
    # The project's wheel is installed without resolving torch again.
    assert all("--no-deps" in command for command in conf["install_command"])
    # Forked workers: the suite (and torch) is imported once per run, not per benchmark.
    assert conf["launch_method"] == "forkserver"


def test_asv_check_passes(repo_root: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "asv", "check", "--python=same"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No problems found" in result.stdout


#: Imports every benchmark module as asv's forkserver does (the peers' texts loaded too),
#: and the suite's packages, counting the calls that ask CUDA for its devices.
IMPORT_AS_THE_FORKSERVER_DOES = """
import importlib, pkgutil
import torch
calls = []
def recorded(owner, name):
    original = getattr(owner, name)
    def call(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)
    setattr(owner, name, call)
for owner, name in ((torch._C, "_cuda_getDeviceCount"), (torch._C, "_cuda_init"),
                    (torch.cuda, "is_available"), (torch.cuda, "device_count"),
                    (torch.cuda, "init"), (torch.cuda, "_lazy_init")):
    if hasattr(owner, name):
        recorded(owner, name)
import benchmarks
for info in pkgutil.iter_modules(benchmarks.__path__):
    importlib.import_module(f"benchmarks.{info.name}")
import conformance, conformance.producers.simulated_device, reference, reference_speedups
print("cuda asked:", calls, "initialised:", torch.cuda.is_initialized())
"""


def test_importing_the_benchmarks_asks_nothing_of_cuda(repo_root: Path) -> None:
    # asv's forkserver imports every benchmark module, then forks a process per
    # benchmark.  Asking CUDA anything there (torch.cuda.is_available() initialises its
    # driver) leaves every forked benchmark unable to use the GPU.
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_AS_THE_FORKSERVER_DOES],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "cuda asked: [] initialised: False" in result.stdout, result.stdout
