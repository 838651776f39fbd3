"""Padding and unpadding of ``SamplerOutput.sampled_token_ids``.

The sampler returns one row per request, ``[num_reqs, max_num_generated_tokens]``
int32, each row padded at its end with ``PLACEHOLDER_TOKEN_ID``.  The model
runner turns that back into ``ModelRunnerOutput.sampled_token_ids`` (lists of
Python ints, no placeholder) on every decode step, so the unpadding is written to
cross the tensor/Python boundary once per batch rather than once per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np
import torch

from reference._arguments import require_int, require_list_of_int_lists, require_tensor
from reference.constants import PLACEHOLDER_TOKEN_ID
from reference_speedups import UNPAD_MIN_ELEMENTS, to_host
from reference_speedups import unpad as faster_unpad

__all__ = ["pad_sampled_token_ids", "unpad_sampled_token_ids"]

_INT32_MAX = int(np.iinfo(np.int32).max)
# Below these many elements numpy's fixed per-call costs (~5 us: host view, mask,
# survivors, row counts) outweigh converting the rows with tolist() and filtering them
# in Python.  Plain decoding rows are one id each and filter at ~0.1 us a row.
_SMALL_DECODE_ELEMENTS = 256
# Draft rows are filtered by an inner comprehension each (~0.2 us of frame a row).
_SMALL_DRAFT_ELEMENTS = 96
_UINT8_MAX = int(np.iinfo(np.uint8).max)
_UINT8_ONES = np.ones(_UINT8_MAX, dtype=np.uint8)
# Dtypes whose Tensor.tolist() is exactly ndarray.tolist() (the sampler emits int32/int64).
_SIGNED_INT_DTYPES = frozenset({torch.int8, torch.int16, torch.int32, torch.int64})


def pad_sampled_token_ids(
    token_ids: list[list[int]],
    *,
    max_len: int | None = None,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """Pack per-request token ids into the sampler's padded layout.

    Contract:
      * returns an int32 tensor of shape ``[len(token_ids), max_len]`` on ``device``;
      * row ``i`` starts with ``token_ids[i]`` and is filled up to ``max_len`` with
        ``PLACEHOLDER_TOKEN_ID`` (-1), which therefore only ever appears as trailing
        padding;
      * ``max_len`` defaults to the longest row (0 for no rows or only empty rows);
      * a row longer than ``max_len`` is a ``ValueError``, as is a token id outside
        ``[0, 2**31 - 1]`` (a negative id would be mistaken for padding);
      * non-int ids are a ``TypeError``.
    """
    rows = require_list_of_int_lists("token_ids", token_ids)
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    longest = int(lengths.max()) if len(rows) else 0
    if max_len is None:
        max_len = longest
    else:
        max_len = require_int("max_len", max_len, minimum=0)
        if longest > max_len:
            row = int(lengths.argmax())
            raise ValueError(
                f"token_ids[{row}] has {longest} tokens, more than max_len={max_len}; "
                "pass a larger max_len or leave it unset"
            )

    flat = _flatten_token_ids(rows, int(lengths.sum()))
    padded = np.full((len(rows), max_len), PLACEHOLDER_TOKEN_ID, dtype=np.int32)
    # Row-major boolean mask of the real (non-padding) positions.
    padded[np.arange(max_len) < lengths[:, None]] = flat
    return torch.from_numpy(padded).to(device)


def _flatten_token_ids(rows: Sequence[Sequence[int]], total: int) -> np.ndarray:
    if total == 0:
        return np.empty(0, dtype=np.int64)
    # Let numpy infer the dtype: a float or a non-number anywhere shows up as a
    # non-integer array, which fromiter(dtype=int64) would silently truncate.
    flat = np.array(list(chain.from_iterable(rows)))
    if flat.dtype.kind not in "iu" or flat.ndim != 1:
        _raise_for_first_non_int(rows)
    bad = (flat < 0) | (flat > _INT32_MAX)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"token ids must be in [0, {_INT32_MAX}] (-1 is reserved for padding), "
            f"got {int(flat[pos])} at flat position {pos}"
        )
    return flat


def _raise_for_first_non_int(rows: Sequence[Sequence[int]]) -> None:
    for i, row in enumerate(rows):
        for j, tok in enumerate(row):
            if isinstance(tok, bool) or not isinstance(tok, (int, np.integer)):
                require_int(f"token_ids[{i}][{j}]", tok)
    # Every element is an int but numpy fell back to object: one exceeds int64.
    raise ValueError(f"token ids must be in [0, {_INT32_MAX}], got an id beyond int64")


def unpad_sampled_token_ids(
    sampled: torch.Tensor,
    *,
    vocab_size: int | None = None,
) -> list[list[int]]:
    """Inverse of :func:`pad_sampled_token_ids`: drop padding, return Python ints.

    Contract:
      * ``sampled`` is a 2-D integer tensor on any device; it is read once;
      * returns one list per row holding the row's entries that are not
        ``PLACEHOLDER_TOKEN_ID``, in order, as Python ``int`` objects;
      * with ``vocab_size``, ids ``>= vocab_size`` are dropped too, as vLLM's
        rejection-sampler parser does;
      * ``unpad_sampled_token_ids(pad_sampled_token_ids(x)) == x`` for every valid ``x``.

    vLLM builds a boolean mask per row and converts each masked row separately.
    Here the mask is applied once to the whole batch, the survivors are converted
    with a single ``ndarray.tolist()`` and the rows are cut out of that list by
    their counts, and the common all-valid case is a single ``tolist()``.  A small
    batch is converted whole and filtered in Python, which is cheaper than numpy's
    fixed per-call costs there.  A faster path gives the same lists where one is
    present (:mod:`reference_speedups`: a C loop built at install).
    """
    # The common call (a plain 2-D signed-int tensor, a positive int or None) passes
    # these cheap tests; anything else goes through the full checks, which accept or
    # reject it exactly as before.  Called once per decode step, so ~0.5 us matters.
    # A subclass counts as plain: the host copy a runtime hands back may be one (the
    # suite's simulated device gives its pending copies a class of their own).
    plain = isinstance(sampled, torch.Tensor) and sampled.dtype in _SIGNED_INT_DTYPES
    if not plain or sampled.dim() != 2:
        sampled = require_tensor("sampled", sampled, ndim=2, kind="integer")
    if vocab_size is not None and (type(vocab_size) is not int or vocab_size < 1):
        vocab_size = require_int("vocab_size", vocab_size, minimum=1)
    num_rows, width = sampled.shape
    size = num_rows * width
    # Below its size the extension would decline the call: not making it pays for the
    # is_cpu test below at one request (~0.15 us of a ~1.3 us call).
    if plain and size >= UNPAD_MIN_ELEMENTS:
        # Copies a device batch to the host itself, as to_host does.
        rows = faster_unpad(sampled, vocab_size)
        if rows is not None:
            return rows
    if not sampled.is_cpu:
        # The one read of the device: every path below works on host memory, so a
        # call costs one copy and one wait, and no device op per row.
        sampled = to_host(sampled)
    if plain and size <= (_SMALL_DECODE_ELEMENTS if width == 1 else _SMALL_DRAFT_ELEMENTS):
        # Tensor.tolist() gives the same Python ints as the numpy path, without its
        # host view and mask.
        return _unpad_rows(sampled.tolist(), vocab_size, width)
    if num_rows == 0 or width == 0:
        return [[] for _ in range(num_rows)]
    # Unsigned and other uncommon integer dtypes take the numpy path at every size.
    # An integer tensor never requires grad: no detach() (~0.5 us of a ~10 us call).
    array = sampled.numpy()
    valid = array != PLACEHOLDER_TOKEN_ID
    if vocab_size is not None:
        valid &= array < vocab_size
    flat = array[valid].tolist()
    if len(flat) == array.size:  # nothing to drop: the rows as they are
        return array.tolist()
    rows = []
    start = 0
    for count in _row_counts(valid, width):
        end = start + count
        rows.append(flat[start:end])
        start = end
    return rows


def _row_counts(valid: np.ndarray, width: int) -> list[int]:
    """How many entries of each row of the boolean ``valid`` are set."""
    if width <= _UINT8_MAX:
        # A matrix-vector product with ones of uint8 (no count can overflow it) is
        # ~1.2 us at 32 rows; a sum over axis 1 is a reduction per row, ~1.5x dearer
        # for the short rows of drafts.
        return np.dot(valid, _UINT8_ONES[:width]).tolist()
    return valid.sum(axis=1).tolist()


def _unpad_rows(rows: list[list[int]], vocab_size: int | None, width: int) -> list[list[int]]:
    if width == 1:
        # Plain decoding: each row is one id, kept as the list tolist() made or
        # replaced by an empty one (no inner comprehension: ~0.2 us a row less).
        if vocab_size is None:
            return [row if row[0] != PLACEHOLDER_TOKEN_ID else [] for row in rows]
        return [
            row if row[0] != PLACEHOLDER_TOKEN_ID and row[0] < vocab_size else [] for row in rows
        ]
    if vocab_size is None:
        return [[tok for tok in row if tok != PLACEHOLDER_TOKEN_ID] for row in rows]
    return [
        [tok for tok in row if tok != PLACEHOLDER_TOKEN_ID and tok < vocab_size] for row in rows
    ]
