"""What the checks of Model Runner V2's Triton kernels share: where Triton runs here, the
runner they are collected for, and importing the release's kernel module or skipping.

Model Runner V2's logprobs gathering (``gpu/sample/logprob.py``) and its rejection
sampler (``gpu/spec_decode/rejection_sampler.py``) are Triton kernels: they run on a GPU,
or on CPU under Triton's interpreter (``TRITON_INTERPRET=1``, Triton installed).
Elsewhere their checks are skips that say why.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

import pytest
import torch

from conformance.backends.step import MODEL_RUNNER_V2
from conformance.checks._skips import skip
from conformance.run.activation import current


def parametrize_runner_v2(metafunc: pytest.Metafunc) -> None:
    """Collect a check taking ``runner_v2`` once for a backend that brings Model Runner
    V2's producers, and not at all for any other (deselected: not its runner)."""
    if "runner_v2" in metafunc.fixturenames:
        backend = current(metafunc.config).backend
        found = [
            p
            for kind in ("sampling", "pooling")
            for p in backend.async_output_producers(kind)
            if p.runner == MODEL_RUNNER_V2
        ][:1]
        metafunc.parametrize("runner_v2", found, ids=[p.runner for p in found])


def triton_device() -> tuple[str | None, str]:
    """The device Triton kernels run on here (``cuda``, or ``cpu`` under its interpreter),
    or None and why they cannot run."""
    if importlib.util.find_spec("triton") is None:
        return None, "Triton is not installed"
    if torch.cuda.is_available():
        return "cuda", ""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "cpu", ""
    return None, "no CUDA GPU is present (TRITON_INTERPRET=1 judges it with Triton's interpreter)"


def kernel_module(name: str, what: str) -> tuple[str, ModuleType]:
    """The device Triton runs on and vLLM's module ``name`` (``what`` in words), or a skip
    saying why it cannot be judged here."""
    device, why = triton_device()
    if device is None:
        skip(
            "needs-triton",
            f"{what} ({name}) runs as Triton kernels, judged only where Triton runs: {why}",
        )
    if vllm_turned_triton_off():
        skip(
            "needs-triton",
            f"{what} ({name}) runs as Triton kernels, and this vLLM turned Triton off here "
            "(vllm.triton_utils.HAS_TRITON is False: no active Triton driver for this "
            "platform, so its kernels are placeholders); a GPU runs them",
        )
    try:
        return device, importlib.import_module(name)
    except Exception as error:  # absent, or a vLLM install whose module needs what is not here
        skip("vllm-code-not-loadable", f"{name} of this vLLM cannot be imported here: {error}")


def vllm_turned_triton_off() -> bool:
    """Whether the vLLM on the path decided Triton does not run here: an installed vLLM
    puts placeholders in place of Triton when it finds no active driver (a CPU build
    without Triton's CPU backend, even under the interpreter).  A release text's stub
    tree has no such switch: its Triton is the installed one."""
    try:
        triton_utils = importlib.import_module("vllm.triton_utils")
    except Exception:  # no vLLM here, or one whose triton_utils needs what is absent
        return False
    return getattr(triton_utils, "HAS_TRITON", None) is False
