"""Model Runner V2's logprobs gathering and rejection sampler: Triton kernels.

``vllm/v1/worker/gpu/sample/logprob.py`` and ``gpu/spec_decode/rejection_sampler.py``
(0.18.0 on) run only where Triton runs, on a GPU.  They are loaded with the release's
Model Runner V2 producers; on a machine without Triton and a GPU their check is a skip
that says so.  Collected only for a backend that brings Model Runner V2's producers.
"""

from __future__ import annotations

import importlib.util

import pytest

from conformance.backends.step import MODEL_RUNNER_V2
from conformance.run.session import current

pytestmark = [pytest.mark.spec_type("LogprobsTensors"), pytest.mark.producer("gather_logprobs")]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "runner_v2" in metafunc.fixturenames:
        backend = current(metafunc.config).backend
        found = [p for p in backend.other_async_outputs if p.runner == MODEL_RUNNER_V2][:1]
        metafunc.parametrize("runner_v2", found, ids=[p.runner for p in found])


def _triton_gpu() -> str | None:
    """Why Triton kernels cannot run here, or None when they can."""
    import torch

    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU is present"
    return None


@pytest.mark.behaviour("producer.gather_logprobs")
def test_model_runner_v2_gathering_is_judged_where_triton_runs(backend, runner_v2) -> None:
    why = _triton_gpu()
    if why is not None:
        pytest.skip(
            "Model Runner V2's logprobs gathering (vllm/v1/worker/gpu/sample/logprob.py) "
            f"and rejection sampler are Triton kernels, judged only where Triton runs: {why}"
        )
    pytest.skip(
        "Model Runner V2's Triton gathering on a GPU: not judged by this suite yet (its "
        "async output is; the first runner's gathering is judged as gather_logprobs)"
    )
