"""``LogprobsTensors``: ``tolists``, ``to_cpu_nonblocking`` and ``empty_cpu`` on CPU."""

from __future__ import annotations

import pytest
import torch

from reference import LogprobsLists, LogprobsTensors


def sample_tensors() -> LogprobsTensors:
    return LogprobsTensors(
        logprob_token_ids=torch.tensor([[31_000, 5, 31_000], [7, 7, 120_000]], dtype=torch.int32),
        logprobs=torch.tensor([[-0.5, -0.25, -0.5], [-2.0, -2.0, -3.5]], dtype=torch.float32),
        selected_token_ranks=torch.tensor([2, 1], dtype=torch.int64),
    )


def assert_nested_python_lists(value, element_type):
    assert type(value) is list
    for item in value:
        if isinstance(item, list | tuple):
            assert_nested_python_lists(item, element_type)
        else:
            assert type(item) is element_type


def test_tolists_without_cu_gives_python_lists_and_no_cu():
    lists = sample_tensors().tolists()
    assert type(lists) is LogprobsLists
    assert lists == LogprobsLists(
        [[31_000, 5, 31_000], [7, 7, 120_000]],
        [[-0.5, -0.25, -0.5], [-2.0, -2.0, -3.5]],
        [2, 1],
        None,
    )
    assert_nested_python_lists(lists.logprob_token_ids, int)
    assert_nested_python_lists(lists.logprobs, float)
    assert_nested_python_lists(lists.sampled_token_ranks, int)


def test_tolists_with_cu_passes_the_cu_list_through():
    cu = [0, 0, 2]
    lists = sample_tensors().tolists(cu)
    assert lists.cu_num_generated_tokens is cu
    assert lists.logprob_token_ids == [[31_000, 5, 31_000], [7, 7, 120_000]]
    assert lists.sampled_token_ranks == [2, 1]


@pytest.mark.parametrize("rank_dtype", [torch.int32, torch.int64])
def test_tolists_accepts_int32_and_int64_ranks(rank_dtype):
    tensors = sample_tensors()._replace(selected_token_ranks=torch.tensor([3, 9], dtype=rank_dtype))
    ranks = tensors.tolists().sampled_token_ranks
    assert ranks == [3, 9]
    assert_nested_python_lists(ranks, int)


def test_tolists_of_zero_positions_gives_empty_lists():
    assert LogprobsTensors.empty_cpu(0, 4).tolists() == LogprobsLists([], [], [], None)


def test_to_cpu_nonblocking_returns_self_on_cpu():
    tensors = sample_tensors()
    assert tensors.to_cpu_nonblocking() is tensors


@pytest.mark.parametrize(("num_positions", "num_tokens"), [(0, 1), (1, 1), (3, 5), (4, 0)])
def test_empty_cpu_dtypes_shapes_and_device(num_positions, num_tokens):
    tensors = LogprobsTensors.empty_cpu(num_positions, num_tokens)
    assert type(tensors) is LogprobsTensors
    assert tensors.logprob_token_ids.dtype == torch.int32
    assert tensors.logprobs.dtype == torch.float32
    assert tensors.selected_token_ranks.dtype == torch.int32
    assert tensors.logprob_token_ids.shape == (num_positions, num_tokens)
    assert tensors.logprobs.shape == (num_positions, num_tokens)
    assert tensors.selected_token_ranks.shape == (num_positions,)
    for tensor in tensors:
        assert tensor.device == torch.device("cpu")


def test_empty_cpu_tensors_do_not_share_memory():
    tensors = LogprobsTensors.empty_cpu(2, 3)
    tensors.logprob_token_ids.fill_(1)
    tensors.logprobs.fill_(0.5)
    tensors.selected_token_ranks.fill_(4)
    assert torch.equal(tensors.logprob_token_ids, torch.ones(2, 3, dtype=torch.int32))
    assert torch.equal(tensors.logprobs, torch.full((2, 3), 0.5))
