"""The header's 'gatherings found': each gathering of the vLLM on the path, and how it is
judged, no other method of the sampler said to be judged as gather_logprobs."""

from __future__ import annotations

from conformance.backends import vllm_producers
from conformance.releases.discovery import FoundProducer

_SAMPLER = "vllm/v1/sample/sampler.py"


def test_only_the_samplers_gather_logprobs_is_said_to_be_judged(monkeypatch) -> None:
    found = [
        FoundProducer(_SAMPLER, "Sampler.forward", "gathering"),
        FoundProducer(_SAMPLER, "Sampler.gather_logprobs", "gathering"),
        FoundProducer("vllm/v1/worker/gpu/sample/logprob.py", "compute_topk_scores", "gathering"),
    ]
    texts = {_SAMPLER: "torch", "vllm/v1/worker/gpu/sample/logprob.py": "import triton"}
    monkeypatch.setattr(vllm_producers, "vllm_sources", lambda: texts)
    monkeypatch.setattr("conformance.releases.discovery.find_producers", lambda sources: found)
    assert vllm_producers.gatherings_found() == [
        "vllm.v1.sample.sampler.Sampler.forward (found, not judged: the sampler's gathering "
        "judged is Sampler.gather_logprobs)",
        "vllm.v1.sample.sampler.Sampler.gather_logprobs (judged as gather_logprobs)",
        "vllm.v1.worker.gpu.sample.logprob.compute_topk_scores (Triton: judged where Triton runs)",
    ]
