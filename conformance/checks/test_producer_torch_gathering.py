"""vLLM's logprobs gathering written in torch: the CPU runner's port of Model Runner V2's.

From 0.34.0 the first runner's ``Sampler.gather_logprobs`` is gone; Model Runner V2's
gathering runs as Triton kernels (``test_producer_triton_gathering.py``), and the CPU
runner without Triton carries a torch port of it (``vllm/v1/worker/cpu/logprob.py``,
``compute_topk_scores``).  The port is found by what it is (a function building
``LogprobsTensors`` from logits, taking ``num_logprobs``), wherever vLLM keeps it, and
judged on CPU by the promise both gatherings make: column 0 the sampled token, columns
1..k the top-k ids, each with its log-probability of the logits (float32 rounding: the
port normalises with its own log-sum-exp), and the 1-based pessimistic rank of the
sampled token.  Collected for a backend that brings Model Runner V2's producers; a
vLLM without such a port is a skip that says so.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from conformance.backends.vllm_producers import found_torch_gathering
from conformance.checks._skips import skip
from conformance.checks._triton import parametrize_runner_v2
from conformance.checks.test_producer_gather_logprobs import deep_tokens
from conformance.checks.test_producer_triton_gathering import triton_gathering_deviations
from conformance.oracle.failing import attempt, fail
from conformance.producers.known_defects import known_defect

pytestmark = [pytest.mark.spec_type("LogprobsTensors")]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_runner_v2(metafunc)


@pytest.mark.behaviour("producer.gather_logprobs")
def test_model_runner_v2_torch_gathering_is_judged(backend, runner_v2) -> None:
    found = found_torch_gathering()
    if found is None:
        skip(
            "not-in-this-vllm",
            "this vLLM has no logprobs gathering written in torch (the CPU runner's port "
            "of Model Runner V2's came in 0.34.0)",
        )
    deviations: list[str] = []
    for rows, vocab, k in ((4, 2048, 0), (16, 32000, 5), (8, 151936, 20)):
        generator = torch.Generator().manual_seed(vocab + k)
        logits = torch.randn(rows, vocab, generator=generator) * 3
        sampled = deep_tokens(logits)
        where = f"{found.qualified_name}(<logits {[rows, vocab]}>, {k}, <sampled ids>)"
        result = attempt(where, found.function, logits, k, sampled)
        deviations += triton_gathering_deviations(result, logits, sampled, k, where)
    if deviations:
        judged = SimpleNamespace(judged_class=found.qualified_name)
        defect = known_defect(backend, judged, "producer.gather_logprobs", "\n".join(deviations))
        if defect is not None:
            pytest.xfail(f"{defect}: {' '.join(deviations)}")
        fail(*deviations)
