"""SamplerOutput: a dataclass of the padded sampled ids and optional LogprobsTensors."""

from __future__ import annotations

import pickle

import pytest
import torch

from conformance.checks._samples import sample_tensors
from conformance.checks._support import expect_same, on
from conformance.oracle.failing import attempt, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("SamplerOutput"),
    pytest.mark.behaviour("SamplerOutput.dataclass"),
]


@pytest.mark.behaviour("SamplerOutput.surface")
def test_surface(surface_check: SurfaceCheck, SamplerOutput) -> None:
    found = surface_check.run(SamplerOutput)
    if found:
        fail(*found)


SHAPES = {
    "empty-batch": [],
    "one-token-per-request": [[70001], [70002], [70003]],
    "speculative-padded": [[70001, 70002, -1], [70003, -1, -1], [70004, 70005, 70006]],
}


@pytest.mark.parametrize("with_logprobs", [False, True], ids=["no-logprobs", "logprobs"])
@pytest.mark.parametrize("rows", list(SHAPES.values()), ids=list(SHAPES))
def test_stores_fields_as_given(
    SamplerOutput, LogprobsTensors, device: str, rows, with_logprobs
) -> None:
    ids = on(device, torch.tensor(rows, dtype=torch.int32).reshape(len(rows), -1 if rows else 1))
    logprobs = None
    if with_logprobs:
        logprobs = LogprobsTensors(*(on(device, t) for t in sample_tensors(ids.numel(), 2)))
    obj = attempt(
        "SamplerOutput(sampled_token_ids, logprobs_tensors)", SamplerOutput, ids, logprobs
    )
    if obj.sampled_token_ids is not ids or obj.logprobs_tensors is not logprobs:
        fail("SamplerOutput: expected the objects passed in as its fields (no copy or conversion)")
    kw = attempt(
        "SamplerOutput(sampled_token_ids=..., logprobs_tensors=...)",
        SamplerOutput,
        sampled_token_ids=ids,
        logprobs_tensors=logprobs,
    )
    if kw.sampled_token_ids is not ids or kw.logprobs_tensors is not logprobs:
        fail("SamplerOutput(**fields): expected the objects passed in as its fields")


def test_pickle_round_trip(SamplerOutput, LogprobsTensors) -> None:
    ids = torch.tensor([[70001, -1], [70002, 70003]], dtype=torch.int32)
    obj = attempt("SamplerOutput(...)", SamplerOutput, ids, LogprobsTensors(*sample_tensors(4, 2)))
    copy = attempt("pickle round trip of SamplerOutput", lambda: pickle.loads(pickle.dumps(obj)))
    expect_same(copy, obj, "SamplerOutput after pickle round trip")
