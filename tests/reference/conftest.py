"""Fixtures and helpers for the tests of the reference implementation.

The hypothesis strategies live in ``reference_strategies.py`` beside this file.
pytest runs with ``--import-mode=importlib``, which puts no test directory on
``sys.path``; and an ``__init__.py`` here would name these modules
``reference.*``, shadowing the package under test.  So this conftest, which pytest
always imports before the test modules of its directory, loads the helper module
by path under a name nothing else uses, and the tests import it by that name.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import reference_speedups

STRATEGIES_MODULE = "reference_strategies"


def _load_helper_module(name: str, filename: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_load_helper_module(STRATEGIES_MODULE, "reference_strategies.py")
_load_helper_module("speed_paths", "speed_paths.py")

from speed_paths import UNPAD_TIERS, unpad_path_on  # noqa: E402 (loaded just above)


def available_accelerators() -> list[str]:
    """The non-CPU torch device types usable in this process."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        found.append("xpu")
    if torch.backends.mps.is_available():
        found.append("mps")
    return found


@pytest.fixture(params=available_accelerators() or [None], ids=lambda d: d or "none")
def accelerator(request: pytest.FixtureRequest) -> torch.device:
    """Each accelerator present, in turn; the test is skipped when there is none."""
    if request.param is None:
        pytest.skip("no accelerator (cuda, xpu or mps) is available to torch here")
    return torch.device(request.param)


@pytest.fixture(params=UNPAD_TIERS, scope="module")
def unpad_tier(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each path of ``unpad_sampled_token_ids`` in turn, for a whole module (hypothesis
    tests take no function-scoped fixture): pure Python, then the C extension."""
    saved = reference_speedups._EXT
    try:
        unpad_path_on(request.param)
        yield request.param
    finally:
        reference_speedups._EXT = saved
