"""The backend's gather_logprobs(logprobs, num_logprobs, token_ids) -> LogprobsTensors.

Row i: column 0 is token_ids[i] and its logprob; columns 1..k the top-k ids and
logprobs, sorted by logprob descending; selected_token_ranks[i] the 1-based
pessimistic rank (entries >= the token's logprob).  Dtypes int32 (int32 or int64 from
0.34.0, whose only gathering keeps int64 ids), float32 and int32 or int64 (vLLM's sampler
emits int64); every tensor on the input's device.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given

from conformance.checks._support import expect_type, on, producer, spec_class
from conformance.oracle import strategies
from conformance.oracle.failing import attempt, fail
from conformance.oracle.invariants import RANK_DTYPES

pytestmark = [
    pytest.mark.spec_type("LogprobsTensors"),
    pytest.mark.producer("gather_logprobs"),
    pytest.mark.behaviour("producer.gather_logprobs"),
]


def id_dtypes_of(revision) -> tuple[torch.dtype, ...]:
    """The ids' dtypes vLLM's own gathering of the release hands back: the first runner's
    Sampler casts them to int32; Model Runner V2's (vLLM's only one from 0.34.0) keeps the
    sampled ids' int64, and its consumers read either."""
    return (torch.int32,) if revision.first_runner else (torch.int32, torch.int64)


def gather_deviations(
    result: object,
    logprobs: torch.Tensor,
    token_ids: torch.Tensor,
    k: int,
    id_dtypes: tuple[torch.dtype, ...] = (torch.int32,),
) -> list[str]:
    """What is wrong with ``result`` for these CPU inputs (empty when it is right);
    ``id_dtypes``: what the ids may be (:func:`id_dtypes_of`)."""
    w = f"gather_logprobs(<{list(logprobs.shape)}>, {k}, token_ids)"
    n = logprobs.shape[0]
    ids, values, ranks = (
        getattr(result, f, None) for f in ("logprob_token_ids", "logprobs", "selected_token_ranks")
    )
    out = []
    for name, tensor, dtypes, shape in (
        ("logprob_token_ids", ids, id_dtypes, (n, k + 1)),
        ("logprobs", values, (torch.float32,), (n, k + 1)),
        ("selected_token_ranks", ranks, RANK_DTYPES, (n,)),
    ):
        if not isinstance(tensor, torch.Tensor):
            out.append(f"{w}.{name}: expected a tensor, found {type(tensor).__name__}")
        elif tensor.dtype not in dtypes or tuple(tensor.shape) != shape:
            out.append(
                f"{w}.{name}: expected {' or '.join(map(str, dtypes))} of shape {list(shape)}, "
                f"found {tensor.dtype} of shape {list(tensor.shape)}"
            )
    if out:
        return out
    ids, values, ranks = ids.cpu(), values.cpu(), ranks.cpu()
    if not torch.equal(ids[:, 0].long(), token_ids.long()):
        out.append(
            f"{w}.logprob_token_ids[:, 0]: expected token_ids {token_ids.tolist()}, found {ids[:, 0].tolist()}"
        )
    chosen = logprobs.gather(1, token_ids.long().unsqueeze(1)).squeeze(1)
    if not torch.equal(values[:, 0], chosen):
        out.append(
            f"{w}.logprobs[:, 0]: expected the sampled tokens' logprobs {chosen.tolist()}, "
            f"found {values[:, 0].tolist()}"
        )
    if k:
        top = torch.topk(logprobs, k, dim=1).values
        if not torch.equal(values[:, 1:], top):
            out.append(
                f"{w}.logprobs[:, 1:]: expected the top-{k} logprobs sorted descending "
                f"{top.tolist()}, found {values[:, 1:].tolist()}"
            )
        elif (
            not torch.equal(
                logprobs.gather(1, ids[:, 1:].long().clamp(0, logprobs.shape[1] - 1)), top
            )
            or (ids[:, 1:] >= logprobs.shape[1]).any()
        ):
            out.append(
                f"{w}.logprob_token_ids[:, 1:]: expected ids whose logprobs are the top-{k} "
                f"values, found {ids[:, 1:].tolist()}"
            )
    expected_ranks = (logprobs >= chosen.unsqueeze(1)).sum(1)
    if not torch.equal(ranks.long(), expected_ranks):
        out.append(
            f"{w}.selected_token_ranks: expected 1-based pessimistic ranks (entries >= the "
            f"token's logprob) {expected_ranks.tolist()}, found {ranks.tolist()}"
        )
    return out


# A small vocabulary with ties: ranks count ties against the token.
LOGITS = torch.tensor(
    [
        [-1.0, -0.5, -2.0, -0.5, -3.0, -4.0],
        [-2.0, -2.0, -2.0, -2.0, -2.0, -2.0],
        [-0.1, -5.0, -0.2, -9.0, -0.3, -7.0],
    ]
)
TOKENS = torch.tensor([1, 4, 5])


@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_gather_logprobs_layout_order_and_ranks(backend, revision, device: str, k: int) -> None:
    gather = producer(backend, "gather_logprobs")
    where = f"gather_logprobs(<{list(LOGITS.shape)} on {device}>, {k}, token_ids)"
    result = attempt(where, gather, on(device, LOGITS), k, on(device, TOKENS))
    expect_type(result, spec_class(backend, "LogprobsTensors"), where)
    tensors = [
        getattr(result, name, None)
        for name in ("logprob_token_ids", "logprobs", "selected_token_ranks")
    ]
    on_device = [f for f in tensors if isinstance(f, torch.Tensor) and f.device.type != device]
    if on_device:
        fail(
            f"{where}: expected every tensor on {device}, found {[str(t.device) for t in on_device]}"
        )
    found = gather_deviations(result, LOGITS, TOKENS, k, id_dtypes_of(revision))
    if found:
        fail(*found)


def test_gather_logprobs_rank_of_an_all_tie_row_is_the_vocabulary_size(backend) -> None:
    gather = producer(backend, "gather_logprobs")
    result = attempt(
        "gather_logprobs(<ties>, 2, [3])", gather, torch.full((1, 9), -2.0), 2, torch.tensor([3])
    )
    if result.selected_token_ranks.tolist() != [9]:
        fail(
            "gather_logprobs(<one row of 9 equal logprobs>, 2, [3]).selected_token_ranks: expected [9] "
            f"(ties count against the token), found {result.selected_token_ranks.tolist()}"
        )


#: Realistic vocabularies (Llama 2's, Qwen 2's) and widths vLLM serves (max_logprobs 20).
VOCABULARIES = (32000, 151936)


def deep_tokens(logprobs: torch.Tensor) -> torch.Tensor:
    """Per row a sampled token ranked 1, ~40, ~1000 and mid-vocabulary: mostly outside the top-k."""
    order = logprobs.argsort(dim=1, descending=True, stable=True)
    depths = [0, 40, 1000, logprobs.shape[1] // 2]
    return torch.stack([order[i, depths[i % len(depths)]] for i in range(logprobs.shape[0])])


@pytest.mark.parametrize("k", [5, 20])
@pytest.mark.parametrize("vocab", VOCABULARIES)
def test_gather_logprobs_on_a_real_vocabulary_with_the_token_outside_the_top_k(
    backend, revision, device: str, vocab: int, k: int
) -> None:
    gather = producer(backend, "gather_logprobs")
    generator = torch.Generator().manual_seed(vocab + k)
    logprobs = (torch.randn(4, vocab, generator=generator) * 3).log_softmax(-1)
    tokens = deep_tokens(logprobs)
    where = f"gather_logprobs(<[4, {vocab}] on {device}>, {k}, <tokens ranked 1, 41, 1001, {vocab // 2 + 1}>)"
    result = attempt(where, gather, on(device, logprobs), k, on(device, tokens))
    expect_type(result, spec_class(backend, "LogprobsTensors"), where)
    found = gather_deviations(result, logprobs, tokens, k, id_dtypes_of(revision))
    if found:
        fail(*found)


@given(case=strategies.logits_cases())
def test_gather_logprobs_on_generated_logprobs_with_ties(backend, revision, case) -> None:
    gather = producer(backend, "gather_logprobs")
    logprobs, token_ids, k = case["logprobs"], case["token_ids"], case["k"]
    result = attempt(
        f"gather_logprobs(<{list(logprobs.shape)}>, {k}, ...)", gather, logprobs, k, token_ids
    )
    found = gather_deviations(result, logprobs, token_ids, k, id_dtypes_of(revision))
    if found:
        fail(*found)
