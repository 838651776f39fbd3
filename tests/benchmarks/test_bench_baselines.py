"""The baselines do the same work as what they are held against, on realistic data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import reference
from benchmarks import common
from benchmarks.lists_slice import Slice, SliceWithCu
from benchmarks.padding import NUM_DRAFTS, NUM_REQS, Pad, Unpad, unpad_mask_per_row
from benchmarks.tolists import NUM_LOGPROBS, NUM_TOKENS, ToLists, ToListsWithCu
from benchmarks.transfer import Transfer, payload_bytes

BACKEND = "reference"


@pytest.mark.parametrize("num_drafts", NUM_DRAFTS)
@pytest.mark.parametrize("num_reqs", NUM_REQS)
def test_vllm_mask_per_row_unpads_exactly_like_the_reference(
    num_reqs: int, num_drafts: int
) -> None:
    bench = Unpad()
    bench.setup(BACKEND, "cpu", num_reqs, num_drafts)
    expected = common.accepted_token_lists(num_reqs, num_drafts)
    ours = reference.unpad_sampled_token_ids(bench.sampled, vocab_size=common.VOCAB_SIZE)
    vllm_way = unpad_mask_per_row(bench.sampled, common.VOCAB_SIZE)
    assert ours == vllm_way == expected
    assert all(type(tok) is int for row in vllm_way for tok in row)


def test_vllm_mask_per_row_drops_ids_beyond_the_vocabulary() -> None:
    sampled = torch.tensor([[5, 200, -1], [300, -1, -1]], dtype=torch.int32)
    assert unpad_mask_per_row(sampled, 250) == [[5, 200], []]
    assert unpad_mask_per_row(sampled, 250) == reference.unpad_sampled_token_ids(
        sampled, vocab_size=250
    )


@pytest.mark.parametrize("num_drafts", [0, 8])
def test_pad_benchmark_builds_the_padded_layout_of_its_lists(num_drafts: int) -> None:
    bench = Pad()
    bench.setup(BACKEND, "cpu", 32, num_drafts)
    padded = bench.pad(bench.token_ids, max_len=bench.max_len, device="cpu")
    assert padded.shape == (32, num_drafts + 1)
    assert reference.unpad_sampled_token_ids(padded) == bench.token_ids


@pytest.mark.parametrize("num_logprobs", NUM_LOGPROBS)
@pytest.mark.parametrize("num_tokens", NUM_TOKENS[:3])
def test_ndarray_baseline_converts_the_same_data_to_the_same_lists(
    num_tokens: int, num_logprobs: int
) -> None:
    bench = ToLists()
    bench.setup(BACKEND, num_tokens, num_logprobs)
    lists = bench.tensors.tolists()
    assert [a.dtype for a in bench.arrays] == [np.int32, np.float32, np.int64]
    assert bench._ndarray_tolist() == lists
    assert type(bench._ndarray_tolist()) is type(lists)
    # Views of the very same buffers, not copies.
    for array, tensor in zip(bench.arrays, bench.tensors, strict=True):
        assert np.shares_memory(array, tensor.numpy())
    with_cu = ToListsWithCu()
    with_cu.setup(BACKEND, num_tokens, num_logprobs)
    assert with_cu.cu[0] == 0 and with_cu.cu[-1] == num_tokens
    assert with_cu.tensors.tolists(with_cu.cu).cu_num_generated_tokens == with_cu.cu
    assert bench.num_elements == num_tokens * (num_logprobs + 1) * 2 + num_tokens


def test_token_ids_are_realistic_never_cached_small_ints() -> None:
    ids, values, ranks = common.logprobs_arrays(4096, 20)
    assert ids.dtype == np.int32 and values.dtype == np.float32 and ranks.dtype == np.int64
    assert ids.min() >= common.MIN_TOKEN_ID > 256
    assert ids.max() < common.VOCAB_SIZE and ids.max() > 100_000
    assert (values <= 0).all()
    # Columns 1..k sorted by logprob descending, as gather_logprobs emits them.
    assert (np.diff(values[:, 1:], axis=1) <= 0).all()


def test_spec_decode_rows_keep_one_to_num_drafts_plus_one_tokens() -> None:
    rows = common.accepted_token_lists(1024, 8)
    lengths = {len(row) for row in rows}
    assert min(lengths) == 1 and max(lengths) == 9
    assert {len(row) for row in common.accepted_token_lists(64, 0)} == {1}


def test_slice_benchmark_lists_have_the_shapes_it_claims() -> None:
    bench = Slice()
    bench.setup(BACKEND, 64)
    assert bench.lists.cu_num_generated_tokens is None
    assert len(bench.lists.logprob_token_ids) == 64
    with_cu = SliceWithCu()
    with_cu.setup(BACKEND, 64)
    cu = with_cu.lists.cu_num_generated_tokens
    assert len(cu) == 65 and len(with_cu.lists.logprob_token_ids) == cu[-1] == 64 * 4
    assert with_cu.cut(0).logprob_token_ids == with_cu.lists.logprob_token_ids[:4]


def test_transfer_payload_is_the_three_tensors_bytes() -> None:
    bench = Transfer()
    bench.setup(BACKEND, "cpu", 256, 5)
    assert payload_bytes(bench.tensors) == 256 * 6 * 4 + 256 * 6 * 4 + 256 * 8
    # On CPU the spec's to_cpu_nonblocking returns the very same object.
    assert bench.tensors.to_cpu_nonblocking() is bench.tensors


def test_vllms_own_parse_output_is_timed_without_the_suites_adapter() -> None:
    """The target against vLLM's own ``parse_output`` times that call alone: the suite's
    adapter (rows to lists again, for its checks) would add a pass to vLLM's side only."""
    from vllm_release_texts import MISSING

    from benchmarks.padding import vllm_parse_output

    if MISSING is not None:
        pytest.skip(MISSING)
    parse_output = vllm_parse_output()
    assert parse_output is not None and parse_output.__name__ == "parse_output"
    sampled = torch.tensor([[5, 200, -1], [300, -1, -1]], dtype=torch.int32)
    rows, logprobs = parse_output(sampled, 250)  # vLLM's own result: (rows, logprobs)
    assert (rows, logprobs) == ([[5, 200], []], None)
