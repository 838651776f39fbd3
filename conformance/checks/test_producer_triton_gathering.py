"""Model Runner V2's logprobs gathering: a Triton kernel.

``vllm/v1/worker/gpu/sample/logprob.py`` (``compute_topk_logprobs``, renamed
``compute_topk_scores`` in 0.28.0) runs only where Triton runs: on a GPU, or on CPU under
Triton's interpreter (``TRITON_INTERPRET=1``, Triton installed).  It is loaded with the
release's Model Runner V2 producers and judged by what vLLM's first runner promises of
the same step (spec section 4 of DESIGN): column 0 the sampled token, columns 1..k the
top-k ids, each with its log-probability computed from the logits, and the 1-based
pessimistic rank of the sampled token.  Its log-probabilities come from a kernel of its
own, not torch's ``log_softmax``: they are held to float32 rounding, not to bit
equality.  Where Triton cannot run the check is a skip that says why.  Collected only
for a backend that brings Model Runner V2's producers.  The rejection sampler's
logprobs of speculative rows: ``test_producer_triton_speculative_logprobs.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from conformance.backends.vllm_producers import MRV2_GATHERING_FUNCTIONS as GATHERING_FUNCTIONS
from conformance.backends.vllm_producers import mrv2_gathering_in, triton_gathering_module
from conformance.checks._skips import skip
from conformance.checks._support import on
from conformance.checks._triton import kernel_module, parametrize_runner_v2
from conformance.checks.test_producer_gather_logprobs import deep_tokens
from conformance.oracle.failing import attempt, fail
from conformance.producers.known_defects import known_defect

pytestmark = [pytest.mark.spec_type("LogprobsTensors")]

#: float32 log-probabilities of one kernel against another's: a few ulps of the
#: log-sum-exp over a 151936-wide row.
TOLERANCE = 1e-4


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_runner_v2(metafunc)


def _gathering():
    """The device, name and function of vLLM's gathering of the release on the path, or a
    skip saying why it cannot run."""
    where = triton_gathering_module()  # found by what it is, wherever vLLM keeps it
    device, module = kernel_module(where, "Model Runner V2's logprobs gathering")
    found = mrv2_gathering_in(module)
    if found is None:
        skip(
            "not-in-this-vllm",
            f"{where} of this release has none of {', '.join(GATHERING_FUNCTIONS)}",
        )
    return device, *found


#: The tensors a gathering gives, in LogprobsTensors' order.
GATHERED_FIELDS = ("logprob_token_ids", "logprobs", "selected_token_ranks")


def gathering_shape_deviations(result: object, rows: int, k: int, where: str) -> list[str]:
    """Which of ``result``'s tensors are not of ``rows`` rows and ``k + 1`` columns."""
    shapes = {
        "logprob_token_ids": (rows, k + 1),
        "logprobs": (rows, k + 1),
        "selected_token_ranks": (rows,),
    }
    out = []
    for name in GATHERED_FIELDS:
        tensor = getattr(result, name, None)
        if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != shapes[name]:
            found = (
                f"shape {list(tensor.shape)}"
                if isinstance(tensor, torch.Tensor)
                else type(tensor).__name__
            )
            out.append(
                f"{where}.{name}: expected a tensor of shape {list(shapes[name])}, found {found}"
            )
    return out


def triton_gathering_deviations(
    result: object, logits: torch.Tensor, sampled: torch.Tensor, k: int, where: str
) -> list[str]:
    """What is wrong with ``result`` for these CPU logits (empty when it is right)."""
    out = gathering_shape_deviations(result, logits.shape[0], k, where)
    if out:
        return out
    ids, values, ranks = (getattr(result, f) for f in GATHERED_FIELDS)
    assert isinstance(ids, torch.Tensor) and isinstance(values, torch.Tensor)
    assert isinstance(ranks, torch.Tensor)
    ids, values, ranks = ids.cpu().long(), values.cpu(), ranks.cpu().long()
    if not torch.equal(ids[:, 0], sampled.long()):
        out.append(
            f"{where}.logprob_token_ids[:, 0]: expected the sampled tokens {sampled.tolist()}, found {ids[:, 0].tolist()}"
        )
    if k and not torch.equal(
        logits.gather(1, ids[:, 1:].clamp(0, logits.shape[1] - 1)), torch.topk(logits, k).values
    ):
        out.append(
            f"{where}.logprob_token_ids[:, 1:]: expected the ids of the top-{k} logits, found {ids[:, 1:].tolist()}"
        )
    expected = logits.log_softmax(-1).gather(1, ids.clamp(0, logits.shape[1] - 1))
    if values.dtype != torch.float32 or not torch.allclose(
        values, expected, rtol=0, atol=TOLERANCE
    ):
        worst = (values.float() - expected).abs().max().item()
        out.append(
            f"{where}.logprobs: expected float32 log-probabilities of those ids within {TOLERANCE} of log_softmax(logits), found {values.dtype}, off by up to {worst:.3g}"
        )
    chosen = logits.gather(1, sampled.long().unsqueeze(1))
    expected_ranks = (logits >= chosen).sum(1)
    if not torch.equal(ranks, expected_ranks):
        out.append(
            f"{where}.selected_token_ranks: expected 1-based pessimistic ranks (logits >= the token's) {expected_ranks.tolist()}, found {ranks.tolist()}"
        )
    return out  # fmt: skip


@pytest.mark.behaviour("producer.gather_logprobs")
@pytest.mark.parametrize("k", [0, 5, 20])
def test_model_runner_v2_gathering_is_judged_where_triton_runs(backend, runner_v2, k: int) -> None:
    device, name, gather = _gathering()
    # A served vocabulary on a GPU; a small one under the interpreter (it runs each
    # program of the kernel in Python).
    rows, vocab = (64, 151936) if device == "cuda" else (4, 2048)
    generator = torch.Generator().manual_seed(vocab + k)
    logits = torch.randn(rows, vocab, generator=generator) * 3
    sampled = deep_tokens(logits)
    where = f"{name}(<logits {[rows, vocab]} on {device}>, {k}, <sampled ids>)"
    result = attempt(where, gather, on(device, logits), k, on(device, sampled))
    found = triton_gathering_deviations(result, logits, sampled, k, where)
    if found:
        judged = SimpleNamespace(judged_class=f"{gather.__module__}.{name}")
        defect = known_defect(backend, judged, "producer.gather_logprobs", "\n".join(found))
        if defect is not None:
            pytest.xfail(f"{defect}: {' '.join(found)}")
        fail(*found)
