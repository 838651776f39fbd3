"""Which of vLLM's GPU runners builds the async output by default, release by release.

vLLM ships two GPU model runners, each with its own async output: the first one's
``AsyncGPUModelRunnerOutput`` (``vllm/v1/worker/gpu_model_runner.py``) and Model Runner
V2's ``AsyncOutput`` (``vllm/v1/worker/gpu/async_utils.py``, 0.12.0 on).  Which runs is
``VllmConfig.use_v2_model_runner``: opt-in (``VLLM_USE_V2_MODEL_RUNNER=1``) in 0.12.0 ..
0.21.0, the default for listed architectures in 0.22.0 .. 0.28.0, vLLM's default GPU
runner from 0.29.0 (the first runner only without Triton, for an unsupported feature,
or for listed ROCm architectures), and its only GPU runner from 0.34.0, which removed
the first.  Plugins follow vLLM's default.
"""

from __future__ import annotations

import re
from typing import Any

from conformance.backends.step import FIRST_RUNNER, MODEL_RUNNER_V2

_RELEASE = re.compile(r"^(\d+)\.(\d+)")


#: The release that removed the first GPU runner.
FIRST_RUNNER_REMOVED = (0, 34)


def release_of(version: str | None) -> tuple[int, int] | None:
    """``(0, 34)`` for ``0.34.0`` (or ``0.34.0.dev3``); None where the version says nothing."""
    match = _RELEASE.match(version or "")
    return None if match is None else (int(match[1]), int(match[2]))


def default_runner(version: str | None) -> dict[str, str] | None:
    """``{"runner", "why"}`` for a vLLM release (None when the version says nothing)."""
    release = release_of(version)
    if release is None:
        return None
    if release >= FIRST_RUNNER_REMOVED:
        return {
            "runner": MODEL_RUNNER_V2,
            "why": "vLLM's only GPU runner from 0.34.0, which removed the first "
            "(gpu_model_runner.py, the first runner's sampler and rejection sampler)",
        }
    if release >= (0, 29):
        return {
            "runner": MODEL_RUNNER_V2,
            "why": "vLLM's default GPU runner from 0.29.0 (the first runner only without "
            "Triton, for an unsupported feature, or for listed ROCm architectures)",
        }
    if release >= (0, 22):
        return {
            "runner": FIRST_RUNNER,
            "why": "Model Runner V2 is the default for listed architectures only "
            "(0.22.0 .. 0.28.0)",
        }
    if release >= (0, 12):
        return {
            "runner": FIRST_RUNNER,
            "why": "Model Runner V2 is opt-in (VLLM_USE_V2_MODEL_RUNNER=1, 0.12.0 .. 0.21.0)",
        }
    return {"runner": FIRST_RUNNER, "why": "the only GPU runner before 0.12.0"}


def judged_release(backend: Any, revision: Any) -> str | None:
    """The vLLM release whose runners a run speaks of: vLLM's own version, else the
    revision's first release."""
    if getattr(backend, "name", None) == "vllm" and backend.version:
        return str(backend.version)
    releases = getattr(revision, "releases", ())
    return releases[0] if releases else None


def async_outputs_key(backend: Any, revision: Any) -> dict[str, Any]:
    """The report's ``async_outputs``: the release's default runner and the classes judged."""
    found = [
        *backend.async_output_producers("sampling"),
        *backend.async_output_producers("pooling"),
    ]
    return {
        "default_runner": default_runner(judged_release(backend, revision)),
        "judged": [p.describe() for p in found],
    }
