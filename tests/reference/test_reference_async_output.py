"""``DeviceAsyncModelRunnerOutput`` on CPU: the ``ModelRunnerOutput`` it builds.

The accelerator behaviour (waiting for the copies) is in test_reference_accelerators.py.
"""

from __future__ import annotations

import pytest
import reference_strategies as rst
import torch
from hypothesis import given
from hypothesis import strategies as st

from reference import (
    AsyncModelRunnerOutput,
    DeviceAsyncModelRunnerOutput,
    KVConnectorOutput,
    LogprobsTensors,
    ModelRunnerOutput,
    SamplerOutput,
    pad_sampled_token_ids,
)


def tagged_logprobs(tags: list[int]) -> LogprobsTensors:
    """One logprob row per tag; the tag is stored in every field so rows can be traced."""
    tags_tensor = torch.tensor(tags, dtype=torch.int64).reshape(-1)
    return LogprobsTensors(
        logprob_token_ids=torch.stack([tags_tensor, tags_tensor + 1], dim=1).to(torch.int32),
        logprobs=-torch.stack([tags_tensor, tags_tensor + 1], dim=1).to(torch.float32),
        selected_token_ranks=tags_tensor,
    )


def padded_cell_tags(num_reqs: int, max_len: int) -> list[int]:
    """Row-major tags ``100 * request + position`` of a padded matrix."""
    return [100 * i + j for i in range(num_reqs) for j in range(max_len)]


def generated_token_tags(rows: list[list[int]]) -> list[int]:
    return [100 * i + j for i, row in enumerate(rows) for j in range(len(row))]


def request_tags(output: ModelRunnerOutput, req_index: int) -> list[int]:
    """The rank tags a consumer finds for one request, the way vLLM's scheduler reads them."""
    return output.logprobs.slice(req_index, req_index + 1).sampled_token_ranks


def make_output(rows, req_ids=None, logprobs=None, **kwargs) -> ModelRunnerOutput:
    req_ids = req_ids if req_ids is not None else [f"req-{i}" for i in range(len(rows))]
    sampled = pad_sampled_token_ids(rows)
    async_output = DeviceAsyncModelRunnerOutput(SamplerOutput(sampled, logprobs), req_ids, **kwargs)
    return async_output.get_output()


def test_is_an_async_model_runner_output():
    sampled = pad_sampled_token_ids([[1]])
    assert isinstance(
        DeviceAsyncModelRunnerOutput(SamplerOutput(sampled, None), ["a"]), AsyncModelRunnerOutput
    )


def test_one_token_per_request_gives_unpadded_ids_and_index_map():
    output = make_output([[40_001], [40_002], [7]], req_ids=["x", "y", "z"])
    assert type(output) is ModelRunnerOutput
    assert output.req_ids == ["x", "y", "z"]
    assert output.req_id_to_index == {"x": 0, "y": 1, "z": 2}
    assert output.sampled_token_ids == [[40_001], [40_002], [7]]
    assert all(type(tok) is int for row in output.sampled_token_ids for tok in row)
    assert output.logprobs is None


def test_defaults_for_the_passed_through_fields():
    output = make_output([[1], [2]])
    assert output.prompt_logprobs_dict == {}
    assert output.pooler_output == [None, None]
    assert output.kv_connector_output is None
    assert output.num_nans_in_logits is None


def test_passed_through_fields_arrive_unchanged():
    prompt = {"req-0": LogprobsTensors.empty_cpu(3, 2), "req-1": None}
    pooled = [torch.ones(4), None]
    kv = KVConnectorOutput(finished_sending={"req-0"})
    output = make_output(
        [[1], [2]],
        prompt_logprobs_dict=prompt,
        pooler_output=pooled,
        kv_connector_output=kv,
        num_nans_in_logits={"req-0": 0, "req-1": 3},
    )
    assert output.prompt_logprobs_dict.keys() == {"req-0", "req-1"}
    assert output.prompt_logprobs_dict["req-0"] is prompt["req-0"]
    assert output.prompt_logprobs_dict["req-1"] is None
    assert output.pooler_output[0] is pooled[0] and output.pooler_output[1] is None
    assert output.kv_connector_output is kv
    assert output.num_nans_in_logits == {"req-0": 0, "req-1": 3}


def test_one_token_per_request_gives_logprobs_without_cu():
    output = make_output([[5], [6]], logprobs=tagged_logprobs([0, 100]))
    assert output.logprobs.cu_num_generated_tokens is None
    assert output.logprobs.sampled_token_ranks == [0, 100]
    assert output.logprobs.logprob_token_ids == [[0, 1], [100, 101]]
    assert output.logprobs.logprobs == [[-0.0, -1.0], [-100.0, -101.0]]


def test_speculative_rows_with_logprobs_per_padded_cell_drop_padding_rows():
    rows = [[1, 2, 3], [4], []]
    output = make_output(rows, logprobs=tagged_logprobs(padded_cell_tags(3, 3)))
    assert output.sampled_token_ids == rows
    assert output.logprobs.cu_num_generated_tokens == [0, 3, 4, 4]
    assert output.logprobs.sampled_token_ranks == [0, 1, 2, 100]


def test_speculative_rows_with_logprobs_per_generated_token_keep_every_row():
    rows = [[1, 2], [], [3]]
    output = make_output(rows, logprobs=tagged_logprobs(generated_token_tags(rows)))
    assert output.logprobs.cu_num_generated_tokens == [0, 2, 2, 3]
    assert output.logprobs.sampled_token_ranks == [0, 1, 200]


def test_one_token_per_request_with_an_empty_request_keeps_slices_aligned():
    # Regression: the padded row was dropped but no cu was given, so slice(2, 3)
    # returned nothing (and slice(1, 2) request 2's row).
    rows = [[5], [], [7]]
    output = make_output(rows, logprobs=tagged_logprobs(padded_cell_tags(3, 1)))
    assert output.sampled_token_ids == rows
    assert output.logprobs.cu_num_generated_tokens == [0, 1, 1, 2]
    assert [request_tags(output, i) for i in range(3)] == [[0], [], [200]]


def test_vocab_size_drops_ids_and_their_logprob_rows():
    sampled = torch.tensor([[3, 12, -1], [11, 4, 5]], dtype=torch.int32)
    logprobs = tagged_logprobs(padded_cell_tags(2, 3))
    output = DeviceAsyncModelRunnerOutput(
        SamplerOutput(sampled, logprobs), ["a", "b"], vocab_size=10
    ).get_output()
    assert output.sampled_token_ids == [[3], [4, 5]]
    assert output.logprobs.cu_num_generated_tokens == [0, 1, 3]
    assert output.logprobs.sampled_token_ranks == [0, 101, 102]


def test_no_requests_gives_an_empty_output():
    sampled = torch.empty(0, 1, dtype=torch.int32)
    output = DeviceAsyncModelRunnerOutput(
        SamplerOutput(sampled, LogprobsTensors.empty_cpu(0, 2)), []
    ).get_output()
    assert output.req_ids == [] and output.req_id_to_index == {}
    assert output.sampled_token_ids == []
    assert output.logprobs.logprob_token_ids == []


def test_get_output_may_be_called_once():
    async_output = DeviceAsyncModelRunnerOutput(
        SamplerOutput(pad_sampled_token_ids([[1]]), None), ["a"]
    )
    assert async_output.get_output().sampled_token_ids == [[1]]
    with pytest.raises(RuntimeError, match="already called"):
        async_output.get_output()


def test_req_ids_must_match_the_number_of_rows():
    with pytest.raises(ValueError, match=r"req_ids has 1 entries.*2 rows"):
        DeviceAsyncModelRunnerOutput(SamplerOutput(pad_sampled_token_ids([[1], [2]]), None), ["a"])


def test_sampler_output_must_be_a_sampler_output():
    with pytest.raises(TypeError, match="sampler_output must be a SamplerOutput"):
        DeviceAsyncModelRunnerOutput(pad_sampled_token_ids([[1]]), ["a"])


def test_sampled_token_ids_must_be_2d():
    with pytest.raises(ValueError, match="must be a 2-D tensor"):
        DeviceAsyncModelRunnerOutput(SamplerOutput(torch.tensor([1, 2]), None), ["a", "b"])


def test_vocab_size_must_be_positive():
    with pytest.raises(ValueError, match="vocab_size"):
        DeviceAsyncModelRunnerOutput(
            SamplerOutput(pad_sampled_token_ids([[1]]), None), ["a"], vocab_size=0
        )


def test_logprob_rows_that_fit_neither_layout_are_an_error():
    async_output = DeviceAsyncModelRunnerOutput(
        SamplerOutput(pad_sampled_token_ids([[1, 2], [3]]), tagged_logprobs([0, 1])), ["a", "b"]
    )
    with pytest.raises(ValueError, match="expected one per generated token"):
        async_output.get_output()


@st.composite
def sampler_cases(draw):
    rows, max_len = draw(rst.sampler_batches())
    per_padded_cell = draw(st.booleans())
    tags = padded_cell_tags(len(rows), max_len) if per_padded_cell else generated_token_tags(rows)
    return rows, max_len, tags


@given(sampler_cases())
def test_each_request_finds_its_own_logprob_rows(case):
    rows, max_len, tags = case
    sampled = pad_sampled_token_ids(rows, max_len=max_len)
    req_ids = [f"r{i}" for i in range(len(rows))]
    output = DeviceAsyncModelRunnerOutput(
        SamplerOutput(sampled, tagged_logprobs(tags)), req_ids
    ).get_output()
    assert output.sampled_token_ids == rows
    assert output.req_id_to_index == {r: i for i, r in enumerate(req_ids)}
    cu = output.logprobs.cu_num_generated_tokens
    if max_len != 1:
        assert cu == rst.cu_from_counts([len(row) for row in rows])
    for i, row in enumerate(rows):
        assert request_tags(output, i) == [100 * i + j for j in range(len(row))]


def test_async_output_rejects_device_prompt_logprobs_and_misaligned_pooler_output():
    sampler_output = SamplerOutput(pad_sampled_token_ids([[101], [202]]), logprobs_tensors=None)
    with pytest.raises(ValueError, match=r"pooler_output must have one entry per request \(2\)"):
        DeviceAsyncModelRunnerOutput(sampler_output, ["a", "b"], pooler_output=[None])

    on_meta = LogprobsTensors(
        torch.empty((3, 2), dtype=torch.int32, device="meta"),
        torch.empty((3, 2), dtype=torch.float32, device="meta"),
        torch.empty(3, dtype=torch.int32, device="meta"),
    )
    with pytest.raises(ValueError, match=r"prompt_logprobs_dict\['a'\] must hold CPU tensors"):
        DeviceAsyncModelRunnerOutput(
            sampler_output, ["a", "b"], prompt_logprobs_dict={"a": on_meta}
        )
