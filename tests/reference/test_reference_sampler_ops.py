"""``pad_sampled_token_ids`` and ``unpad_sampled_token_ids``.

``SamplerOutput.sampled_token_ids`` is int32 ``[num_reqs, max_num_generated_tokens]``
with ``PLACEHOLDER_TOKEN_ID`` only as trailing padding; ``ModelRunnerOutput``
holds the same ids as lists of Python ints without the placeholder.
"""

from __future__ import annotations

import numpy as np
import pytest
import reference_strategies as rst
import torch
from hypothesis import given
from hypothesis import strategies as st
from speed_paths import DispatchedOps, per_row_mask

from reference import PLACEHOLDER_TOKEN_ID, pad_sampled_token_ids, unpad_sampled_token_ids

# --- pad_sampled_token_ids ---------------------------------------------------------


def test_pad_gives_int32_num_reqs_by_longest_row_with_trailing_placeholders():
    padded = pad_sampled_token_ids([[5, 6, 7], [], [40_000]])
    assert padded.dtype == torch.int32
    assert padded.device == torch.device("cpu")
    assert padded.tolist() == [[5, 6, 7], [-1, -1, -1], [40_000, -1, -1]]


def test_pad_to_a_given_max_len():
    padded = pad_sampled_token_ids([[1], [2, 3]], max_len=4)
    assert padded.tolist() == [[1, -1, -1, -1], [2, 3, -1, -1]]


def test_pad_without_speculative_decoding_is_num_reqs_by_one():
    padded = pad_sampled_token_ids([[11], [12], [13]])
    assert padded.shape == (3, 1)
    assert padded.tolist() == [[11], [12], [13]]


@pytest.mark.parametrize(
    ("rows", "max_len", "shape"),
    [([], None, (0, 0)), ([], 3, (0, 3)), ([[], []], None, (2, 0)), ([[], []], 0, (2, 0))],
)
def test_pad_of_no_rows_or_only_empty_rows(rows, max_len, shape):
    padded = pad_sampled_token_ids(rows, max_len=max_len)
    assert padded.shape == shape
    assert padded.dtype == torch.int32
    assert (padded == PLACEHOLDER_TOKEN_ID).all()


def test_pad_accepts_the_int32_range_edges_and_numpy_integers():
    padded = pad_sampled_token_ids([[0, 2**31 - 1], [np.int64(9)]])
    assert padded.tolist() == [[0, 2**31 - 1], [9, -1]]


def test_pad_accepts_tuples_as_rows():
    assert pad_sampled_token_ids(((1, 2), (3,))).tolist() == [[1, 2], [3, -1]]


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_pad_places_the_tensor_on_the_requested_device(device):
    padded = pad_sampled_token_ids([[1, 2]], device=device)
    assert padded.device == torch.device("cpu")


def test_pad_rejects_a_row_longer_than_max_len():
    with pytest.raises(ValueError, match=r"token_ids\[1\].*max_len=2"):
        pad_sampled_token_ids([[1], [1, 2, 3]], max_len=2)


@pytest.mark.parametrize("bad_id", [-1, -5, 2**31, 2**40, 2**70])
def test_pad_rejects_ids_outside_the_int32_token_range(bad_id):
    with pytest.raises(ValueError, match="token ids must be in"):
        pad_sampled_token_ids([[1, 2], [bad_id]])


@pytest.mark.parametrize("bad_id", [1.0, 2.5, "3", None, [4], b"5", True])
def test_pad_rejects_non_int_ids_with_type_error(bad_id):
    with pytest.raises(TypeError, match=r"token_ids\[0\]\[0\]"):
        pad_sampled_token_ids([[bad_id]])


@pytest.mark.parametrize("bad_id", [1.0, "3", None])
def test_pad_names_the_first_non_int_id_among_ints(bad_id):
    with pytest.raises(TypeError, match=r"token_ids\[1\]\[1\]"):
        pad_sampled_token_ids([[1], [2, bad_id]])


@pytest.mark.parametrize("bad_rows", ["12", [1, 2], [[1], 2], None, torch.tensor([[1]])])
def test_pad_rejects_anything_but_a_list_of_int_lists(bad_rows):
    with pytest.raises(TypeError, match="token_ids"):
        pad_sampled_token_ids(bad_rows)


@pytest.mark.parametrize(
    ("max_len", "error"), [(-1, ValueError), (2.0, TypeError), (True, TypeError)]
)
def test_pad_validates_max_len(max_len, error):
    with pytest.raises(error, match="max_len"):
        pad_sampled_token_ids([[1]], max_len=max_len)


@given(rst.ragged_token_ids_and_max_len())
def test_pad_puts_each_row_first_and_placeholders_only_after_it(case):
    rows, max_len = case
    padded = pad_sampled_token_ids(rows, max_len=max_len)
    assert padded.dtype == torch.int32
    assert padded.shape == (len(rows), max_len)
    for row, padded_row in zip(rows, padded.tolist(), strict=True):
        assert padded_row == row + [PLACEHOLDER_TOKEN_ID] * (max_len - len(row))


@pytest.mark.usefixtures("unpad_tier")
@given(rst.ragged_token_ids_and_max_len())
def test_unpad_after_pad_is_the_identity(case):
    rows, max_len = case
    assert unpad_sampled_token_ids(pad_sampled_token_ids(rows, max_len=max_len)) == rows
    assert unpad_sampled_token_ids(pad_sampled_token_ids(rows)) == rows


# --- unpad_sampled_token_ids -------------------------------------------------------


@pytest.mark.usefixtures("unpad_tier")
def test_unpad_drops_placeholders_and_returns_python_ints():
    sampled = torch.tensor([[70_000, 3, -1], [-1, -1, -1], [8, -1, -1]], dtype=torch.int32)
    rows = unpad_sampled_token_ids(sampled)
    assert rows == [[70_000, 3], [], [8]]
    assert type(rows) is list
    assert all(type(row) is list for row in rows)
    assert all(type(tok) is int for row in rows for tok in row)


@pytest.mark.usefixtures("unpad_tier")
def test_unpad_of_a_large_batch_returns_python_ints():
    # Past the small-batch size, so the vectorised path is the one that runs.
    sampled = torch.full((64, 8), 50_000, dtype=torch.int32)
    sampled[::2, 5:] = PLACEHOLDER_TOKEN_ID
    rows = unpad_sampled_token_ids(sampled)
    assert rows == [[50_000] * (5 if i % 2 == 0 else 8) for i in range(64)]
    assert all(type(tok) is int for row in rows for tok in row)


@pytest.mark.usefixtures("unpad_tier")
def test_unpad_with_vocab_size_drops_ids_at_or_beyond_it():
    sampled = torch.tensor([[9, 10, 11, -1], [3, 12, 4, 10]], dtype=torch.int64)
    assert unpad_sampled_token_ids(sampled, vocab_size=10) == [[9], [3, 4]]
    assert unpad_sampled_token_ids(sampled, vocab_size=13) == [[9, 10, 11], [3, 12, 4, 10]]


# Shapes on both sides of each path's limit: one-id rows (plain decoding) and draft
# rows filter in Python up to a size, then in numpy; rows wider than 255 count their
# survivors another way; the C list builder serves batches from 16 ids on.
@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize(
    "shape",
    [
        (15, 1),
        (16, 1),
        (5, 3),
        (4, 4),
        (200, 1),
        (256, 1),
        (257, 1),
        (1024, 1),
        (24, 4),
        (25, 4),
        (64, 9),
        (5, 300),
    ],
)
@pytest.mark.parametrize("vocab_size", [None, 1000])
def test_unpad_agrees_with_the_per_row_mask_on_each_side_of_each_path(shape, vocab_size):
    generator = np.random.default_rng(sum(shape))
    ids = generator.integers(0, 1100, size=shape)
    ids.flat[::7] = 1000  # exactly the vocabulary's size: dropped only with vocab_size
    # Placeholders anywhere (a quarter of the entries), not only as trailing padding.
    ids[generator.random(shape) < 0.25] = PLACEHOLDER_TOKEN_ID
    sampled = torch.from_numpy(ids.astype(np.int32))
    rows = unpad_sampled_token_ids(sampled, vocab_size=vocab_size)
    assert rows == per_row_mask(sampled, vocab_size)
    assert all(type(tok) is int for row in rows for tok in row)


@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (4, 9), (256, 1), (1024, 4)])
def test_unpad_reads_a_cpu_tensor_where_it_is(shape):
    # Only a device tensor is copied to the host: on CPU every path reads the tensor's
    # own memory, and no torch op (a copy, a mask) runs, only the view numpy() takes.
    sampled = torch.arange(shape[0] * shape[1], dtype=torch.int32).reshape(shape)
    sampled[:, -1] = PLACEHOLDER_TOKEN_ID
    with DispatchedOps() as ops:
        rows = unpad_sampled_token_ids(sampled, vocab_size=100_000)
    assert [name for name in ops.names if name != "aten::detach"] == []
    assert rows == per_row_mask(sampled, 100_000)


@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize("dtype", rst.INTEGER_DTYPES, ids=str)
def test_unpad_accepts_any_integer_dtype(dtype):
    sampled = torch.tensor([[1, 2], [3, 100]], dtype=dtype)
    assert unpad_sampled_token_ids(sampled) == [[1, 2], [3, 100]]
    assert unpad_sampled_token_ids(sampled, vocab_size=50) == [[1, 2], [3]]


@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize("shape", [(0, 0), (0, 4), (3, 0)])
def test_unpad_of_empty_batches(shape):
    assert unpad_sampled_token_ids(torch.empty(shape, dtype=torch.int32)) == [[]] * shape[0]


@pytest.mark.usefixtures("unpad_tier")
def test_unpad_reads_non_contiguous_tensors():
    sampled = torch.tensor([[1, -1], [2, 3]], dtype=torch.int32).t()
    assert unpad_sampled_token_ids(sampled) == [[1, 2], [3]]


@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.bool])
def test_unpad_rejects_non_integer_dtypes(dtype):
    with pytest.raises(TypeError, match="sampled"):
        unpad_sampled_token_ids(torch.zeros(2, 2, dtype=dtype))


@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize("shape", [(4,), (2, 2, 2), ()])
def test_unpad_rejects_tensors_that_are_not_2d(shape):
    with pytest.raises(ValueError, match="sampled must be 2-D"):
        unpad_sampled_token_ids(torch.zeros(shape, dtype=torch.int32))


@pytest.mark.usefixtures("unpad_tier")
def test_unpad_rejects_a_nested_list():
    with pytest.raises(TypeError, match=r"sampled must be a torch\.Tensor"):
        unpad_sampled_token_ids([[1, -1]])


@pytest.mark.usefixtures("unpad_tier")
@pytest.mark.parametrize(("vocab_size", "error"), [(0, ValueError), (1.5, TypeError)])
def test_unpad_validates_vocab_size(vocab_size, error):
    with pytest.raises(error, match="vocab_size"):
        unpad_sampled_token_ids(torch.zeros(1, 1, dtype=torch.int32), vocab_size=vocab_size)


@pytest.mark.usefixtures("unpad_tier")
@given(rst.sampled_token_id_tensors())
def test_unpad_agrees_with_the_per_row_mask(sampled):
    assert unpad_sampled_token_ids(sampled) == per_row_mask(sampled)


@pytest.mark.usefixtures("unpad_tier")
@given(rst.sampled_token_id_tensors(), st.integers(1, 320))
def test_unpad_with_vocab_size_agrees_with_the_per_row_mask(sampled, vocab_size):
    expected = per_row_mask(sampled, vocab_size)
    assert unpad_sampled_token_ids(sampled, vocab_size=vocab_size) == expected
