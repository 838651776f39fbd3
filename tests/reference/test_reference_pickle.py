"""A ``ModelRunnerOutput`` crosses process boundaries by pickle and must arrive unchanged."""

from __future__ import annotations

import pickle

import pytest
import torch

from reference import (
    DraftTokenIds,
    KVConnectorOutput,
    KVConnectorStats,
    LogprobsLists,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
    gather_logprobs,
    pad_sampled_token_ids,
)

PROTOCOLS = range(2, pickle.HIGHEST_PROTOCOL + 1)


def full_model_runner_output() -> ModelRunnerOutput:
    """Every field set, with the kinds of values a real step produces."""
    generator = torch.Generator().manual_seed(0)
    prompt_logits = torch.randn(4, 50, generator=generator).log_softmax(-1)
    prompt = gather_logprobs(prompt_logits, 3, torch.tensor([7, 31_000 % 50, 0, 49]))
    return ModelRunnerOutput(
        req_ids=["req-a", "req-b", "req-c"],
        req_id_to_index={"req-a": 0, "req-b": 1, "req-c": 2},
        sampled_token_ids=[[31_000, 31_001], [], [128_000]],
        logprobs=LogprobsLists(
            logprob_token_ids=[[31_000, 5, 6], [31_001, 5, 7], [128_000, 1, 2]],
            logprobs=[[-0.25, -0.125, -3.5], [-1.0, -0.5, -2.0], [-7.0, -0.0, -9.75]],
            sampled_token_ranks=[2, 3, 40],
            cu_num_generated_tokens=[0, 2, 2, 3],
        ),
        prompt_logprobs_dict={"req-a": prompt, "req-b": None},
        pooler_output=[torch.randn(8, generator=generator), None, torch.ones(8).bfloat16()],
        kv_connector_output=KVConnectorOutput(
            finished_sending={"req-a"},
            finished_recving={"req-c", "req-b"},
            kv_connector_stats=KVConnectorStats(data={"num_blocks": 12, "bytes": [1, 2]}),
            invalid_block_ids={3, 99},
            expected_finished_count=2,
        ),
        num_nans_in_logits={"req-a": 0, "req-b": 1, "req-c": 0},
    )


def assert_same_tensor(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert type(actual) is torch.Tensor
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.device == expected.device
    assert torch.equal(actual, expected)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_runner_output_survives_a_pickle_round_trip(protocol):
    original = full_model_runner_output()
    copy = pickle.loads(pickle.dumps(original, protocol=protocol))

    assert type(copy) is ModelRunnerOutput
    assert copy.req_ids == original.req_ids
    assert copy.req_id_to_index == original.req_id_to_index
    assert copy.sampled_token_ids == original.sampled_token_ids

    assert type(copy.logprobs) is LogprobsLists
    assert copy.logprobs == original.logprobs
    assert copy.logprobs.slice(2, 3) == original.logprobs.slice(2, 3)

    assert copy.prompt_logprobs_dict.keys() == original.prompt_logprobs_dict.keys()
    assert copy.prompt_logprobs_dict["req-b"] is None
    copied_prompt = copy.prompt_logprobs_dict["req-a"]
    assert type(copied_prompt) is LogprobsTensors
    for actual, expected in zip(copied_prompt, original.prompt_logprobs_dict["req-a"], strict=True):
        assert_same_tensor(actual, expected)

    assert len(copy.pooler_output) == 3
    assert copy.pooler_output[1] is None
    assert_same_tensor(copy.pooler_output[0], original.pooler_output[0])
    assert_same_tensor(copy.pooler_output[2], original.pooler_output[2])

    kv = copy.kv_connector_output
    assert type(kv) is KVConnectorOutput
    assert type(kv.kv_connector_stats) is KVConnectorStats
    assert kv == original.kv_connector_output
    assert kv.is_empty() is False

    assert copy.num_nans_in_logits == original.num_nans_in_logits


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_model_runner_output_with_defaults_survives_a_pickle_round_trip(protocol):
    original = ModelRunnerOutput([], {}, [], None, {}, [])
    assert pickle.loads(pickle.dumps(original, protocol=protocol)) == original


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sampler_output_and_draft_token_ids_survive_a_pickle_round_trip(protocol):
    sampler_output = SamplerOutput(
        pad_sampled_token_ids([[1, 2], [3]]), LogprobsTensors.empty_cpu(3, 2)
    )
    copy = pickle.loads(pickle.dumps(sampler_output, protocol=protocol))
    assert type(copy) is SamplerOutput
    assert_same_tensor(copy.sampled_token_ids, sampler_output.sampled_token_ids)
    assert type(copy.logprobs_tensors) is LogprobsTensors
    assert copy.logprobs_tensors.logprob_token_ids.dtype == torch.int32
    assert copy.logprobs_tensors.selected_token_ranks.shape == (3,)

    drafts = DraftTokenIds(req_ids=["a", "b"], draft_token_ids=[[4, 5], []])
    assert pickle.loads(pickle.dumps(drafts, protocol=protocol)) == drafts
