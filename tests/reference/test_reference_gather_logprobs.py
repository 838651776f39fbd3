"""``gather_logprobs``: the ``LogprobsTensors`` a sampler emits.

Column 0 is the given token and its logprob; columns 1..k the top-k by logprob,
descending; the rank is 1-based and pessimistic (the number of vocabulary entries
whose logprob is >= the token's).  Ids int32, logprobs float32, on the input device.
"""

from __future__ import annotations

import math

import pytest
import reference_strategies as rst
import torch
from hypothesis import given

from reference import LogprobsTensors, gather_logprobs, gather_logprobs_of_logits

LOGPROBS = torch.tensor(
    [
        [-1.0, -0.5, -3.0, -0.5, -2.0],  # a tie for the top
        [-0.125, -4.0, -4.0, -4.0, -9.0],  # the token sits in a three-way tie
    ]
)


def naive_gather(logprobs: torch.Tensor, num_logprobs: int, token_ids: torch.Tensor):
    """Row by row in Python floats: (ids, values, ranks) with top-k ids as a per-row list."""
    rows = logprobs.float().tolist()
    expected = []
    for row, token in zip(rows, token_ids.tolist(), strict=True):
        order = sorted(range(len(row)), key=lambda j: row[j], reverse=True)
        top = order[:num_logprobs]
        rank = sum(1 for value in row if value >= row[token])
        expected.append((token, row[token], [row[j] for j in top], rank))
    return expected


def test_column_zero_is_the_given_token_and_its_logprob():
    result = gather_logprobs(LOGPROBS, 2, torch.tensor([2, 4]))
    assert result.logprob_token_ids[:, 0].tolist() == [2, 4]
    assert result.logprobs[:, 0].tolist() == [-3.0, -9.0]


def test_columns_one_to_k_are_the_top_k_by_logprob_descending():
    result = gather_logprobs(LOGPROBS, 3, torch.tensor([0, 0]))
    assert result.logprobs[:, 1:].tolist() == [[-0.5, -0.5, -1.0], [-0.125, -4.0, -4.0]]
    top_ids = result.logprob_token_ids[:, 1:].tolist()
    assert sorted(top_ids[0][:2]) == [1, 3] and top_ids[0][2] == 0
    assert top_ids[1][0] == 0 and set(top_ids[1][1:]) <= {1, 2, 3}
    assert len(set(top_ids[1][1:])) == 2


def test_ranks_are_one_based_and_count_ties_against_the_token():
    result = gather_logprobs(LOGPROBS, 1, torch.tensor([1, 2]))
    # Row 0: -0.5 ties with another -0.5 -> rank 2.  Row 1: -0.125 and three -4.0 -> 4.
    assert result.selected_token_ranks.tolist() == [2, 4]
    best = gather_logprobs(LOGPROBS, 1, torch.tensor([3, 0]))
    assert best.selected_token_ranks.tolist() == [2, 1]
    worst = gather_logprobs(LOGPROBS, 1, torch.tensor([2, 4]))
    assert worst.selected_token_ranks.tolist() == [5, 5]


def test_output_dtypes_shapes_and_type():
    result = gather_logprobs(LOGPROBS, 3, torch.tensor([0, 1], dtype=torch.int32))
    assert type(result) is LogprobsTensors
    assert result.logprob_token_ids.dtype == torch.int32
    assert result.logprobs.dtype == torch.float32
    assert result.selected_token_ranks.dtype in (torch.int32, torch.int64)
    assert result.logprob_token_ids.shape == (2, 4)
    assert result.logprobs.shape == (2, 4)
    assert result.selected_token_ranks.shape == (2,)
    assert all(t.device == LOGPROBS.device for t in result)


def test_num_logprobs_zero_gives_only_the_token_column():
    result = gather_logprobs(LOGPROBS, 0, torch.tensor([3, 1]))
    assert result.logprob_token_ids.tolist() == [[3], [1]]
    assert result.logprobs.tolist() == [[-0.5], [-4.0]]
    assert result.selected_token_ranks.tolist() == [2, 4]


def test_num_logprobs_equal_to_the_vocabulary_lists_every_entry():
    result = gather_logprobs(LOGPROBS, 5, torch.tensor([0, 0]))
    assert sorted(result.logprob_token_ids[0, 1:].tolist()) == [0, 1, 2, 3, 4]


def test_zero_rows_give_empty_tensors_of_the_right_width():
    result = gather_logprobs(torch.empty(0, 7), 3, torch.empty(0, dtype=torch.int64))
    assert result.logprob_token_ids.shape == (0, 4)
    assert result.logprobs.shape == (0, 4)
    assert result.selected_token_ranks.shape == (0,)
    assert result.logprob_token_ids.dtype == torch.int32


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_other_float_inputs_give_float32_logprobs_of_the_same_values(dtype):
    logprobs = LOGPROBS.to(dtype)  # every value here is exact in each dtype
    result = gather_logprobs(logprobs, 2, torch.tensor([1, 2]))
    assert result.logprobs.dtype == torch.float32
    assert (
        result.logprobs.tolist()
        == gather_logprobs(LOGPROBS, 2, torch.tensor([1, 2])).logprobs.tolist()
    )
    assert result.selected_token_ranks.tolist() == [2, 4]


def test_minus_infinity_logprobs_are_ranked_last():
    logprobs = torch.tensor([[0.0, float("-inf"), -1.0]])
    result = gather_logprobs(logprobs, 3, torch.tensor([1]))
    assert result.selected_token_ranks.tolist() == [3]
    assert result.logprobs.tolist() == [[-math.inf, 0.0, -1.0, -math.inf]]


# --- argument errors name the argument -------------------------------------------------


@pytest.mark.parametrize(
    ("logprobs", "num_logprobs", "token_ids", "error", "names"),
    [
        (LOGPROBS[0], 1, torch.tensor([0]), ValueError, "logprobs must be 2-D"),
        (LOGPROBS.to(torch.int32), 1, torch.tensor([0, 0]), TypeError, "logprobs must have"),
        (LOGPROBS.tolist(), 1, torch.tensor([0, 0]), TypeError, "logprobs must be a torch"),
        (LOGPROBS, 1, torch.tensor([[0, 0]]), ValueError, "token_ids must be 1-D"),
        (LOGPROBS, 1, torch.tensor([0.0, 1.0]), TypeError, "token_ids must have"),
        (LOGPROBS, 1, torch.tensor([True, False]), TypeError, "token_ids must have"),
        (LOGPROBS, 1, torch.tensor([0, 1, 2]), ValueError, "token_ids must have one entry"),
        (LOGPROBS, 1, torch.tensor([0, 5]), ValueError, r"token_ids must be in \[0, 5\)"),
        (LOGPROBS, 1, torch.tensor([-1, 0]), ValueError, r"token_ids must be in \[0, 5\)"),
        (LOGPROBS, -1, torch.tensor([0, 0]), ValueError, "num_logprobs must be >= 0"),
        (LOGPROBS, 6, torch.tensor([0, 0]), ValueError, "num_logprobs must be <= "),
        (LOGPROBS, 1.0, torch.tensor([0, 0]), TypeError, "num_logprobs must be an int"),
        (LOGPROBS, True, torch.tensor([0, 0]), TypeError, "num_logprobs must be an int"),
    ],
)
def test_bad_arguments_raise_naming_the_argument(logprobs, num_logprobs, token_ids, error, names):
    with pytest.raises(error, match=names):
        gather_logprobs(logprobs, num_logprobs, token_ids)


def test_token_ids_on_another_device_is_an_error():
    with pytest.raises(ValueError, match="token_ids must be on logprobs' device"):
        gather_logprobs(LOGPROBS, 1, torch.tensor([0, 0], device="meta"))


# --- against a direct computation -----------------------------------------------------


@given(rst.logprobs_batches())
def test_gather_logprobs_agrees_with_a_direct_per_row_computation(batch):
    result = gather_logprobs(batch.logprobs, batch.num_logprobs, batch.token_ids)
    k = batch.num_logprobs
    assert result.logprob_token_ids.shape == (len(batch.token_ids), k + 1)
    assert result.logprob_token_ids.dtype == torch.int32
    assert result.logprobs.dtype == torch.float32
    rows = batch.logprobs.float().tolist()
    expected = naive_gather(batch.logprobs, k, batch.token_ids)
    ids, values, ranks = (t.tolist() for t in result)
    for i, (token, token_value, top_values, rank) in enumerate(expected):
        assert ids[i][0] == token
        assert values[i][0] == token_value
        assert values[i][1:] == top_values
        assert ranks[i] == rank
        # Ties may come in any order, but each top id must carry its listed value,
        # and no id may repeat.
        assert [rows[i][j] for j in ids[i][1:]] == top_values
        assert len(set(ids[i][1:])) == k


# The top-k of real vocabularies is taken from a few groups of each row (see
# reference.logprobs_ops.top_k): it must give exactly what torch.topk gives, ids included,
# tie or no tie, since backends and vLLM's own gathering use torch.topk.
TOP_K_SHAPES = [(1, 32000, 5), (4, 32000, 20), (5, 151936, 20), (40, 4097, 1), (2, 1000, 0)]


@pytest.mark.parametrize(("rows", "vocabulary", "k"), TOP_K_SHAPES)
def test_top_k_is_torch_topk_ids_included(rows, vocabulary, k) -> None:
    generator = torch.Generator().manual_seed(rows * vocabulary + k)
    logprobs = (torch.randn(rows, vocabulary, generator=generator) * 4).log_softmax(-1)
    _assert_same_as_torch_topk(logprobs, k)


def test_top_k_with_ties_nan_and_minus_infinity_is_torch_topk() -> None:
    generator = torch.Generator().manual_seed(7)
    # Values on a coarse grid: every row has many ties, some inside its top k.
    logprobs = (torch.randint(-40, 0, (6, 32003), generator=generator) / 4).float()
    logprobs[1] = float("-inf")  # a fully masked row
    logprobs[2, 100:31000] = float("-inf")
    logprobs[3, 12345] = float("nan")
    logprobs[4, 32001] = 1.0  # the top entry in the last, partial group
    logprobs[5, :64] = 0.5  # a whole group tied at the top
    for k in (1, 5, 20):
        _assert_same_as_torch_topk(logprobs, k)


def test_top_k_finds_the_top_in_a_last_partial_group() -> None:
    logprobs = torch.randn(4, 32003, generator=torch.Generator().manual_seed(3)).log_softmax(-1)
    logprobs[:, -1] = 1.0
    logprobs[1, -3] = 2.0
    _assert_same_as_torch_topk(logprobs, 5)


def test_top_k_of_a_non_contiguous_batch_is_torch_topk() -> None:
    logprobs = torch.randn(64, 4, 32000).log_softmax(-1)[:, 1]
    assert not logprobs.is_contiguous()
    _assert_same_as_torch_topk(logprobs, 5)


def _assert_same_as_torch_topk(logprobs: torch.Tensor, k: int) -> None:
    from reference.logprobs_ops import top_k

    values, ids = top_k(logprobs, k)
    wanted_values, wanted_ids = torch.topk(logprobs, k, dim=-1)
    assert torch.equal(values.nan_to_num(7.0), wanted_values.nan_to_num(7.0))
    assert torch.equal(ids, wanted_ids)
    assert values.is_contiguous() and ids.is_contiguous()


def test_of_logits_it_gathers_their_log_softmax() -> None:
    generator = torch.Generator().manual_seed(4)
    logits = torch.randn(3, 4000, generator=generator) * 5 + 2
    token_ids = torch.tensor([0, 1999, 3999])
    found = gather_logprobs_of_logits(logits.to(torch.bfloat16), 5, token_ids)
    wanted = gather_logprobs(logits.to(torch.bfloat16).float().log_softmax(-1), 5, token_ids)
    for name in ("logprob_token_ids", "logprobs", "selected_token_ranks"):
        assert torch.equal(getattr(found, name), getattr(wanted, name)), name
    with pytest.raises(ValueError, match=r"logits.shape\[1\]"):
        gather_logprobs_of_logits(logits, 4001, token_ids)
    with pytest.raises(TypeError, match="logits must have a floating dtype"):
        gather_logprobs_of_logits(token_ids.view(3, 1), 1, token_ids)
