"""The asv suite in ``benchmarks/`` is not installed: make it importable as ``benchmarks``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Collecting benchmarks.decode_step must not load vLLM 0.33.0's texts into this process
# (their stand-in ``vllm`` package would stay in sys.modules for every later test here).
os.environ["OUTPUTS_BENCH_WARM_PEER"] = "0"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture(autouse=True)
def _no_simulated_runtime_left_installed():
    """Uninstall the simulated runtime a test made ``benchmarks.async_output`` install.

    That module keeps one installed for the rest of its process (an asv benchmark
    process times many outputs on it).  In a test worker it would stay patched into
    ``torch.cuda`` for every later test there: the conformance runs made in that
    process would find a CUDA device that is not there.
    """
    yield
    async_output = sys.modules.get("benchmarks.async_output")
    if async_output is not None:
        while async_output._INSTALLED:
            async_output._INSTALLED.pop().close()
        async_output.step_runtime.cache_clear()
