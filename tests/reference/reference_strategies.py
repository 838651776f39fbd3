"""Hypothesis strategies for the tests of the reference implementation.

One module, imported by the tests as ``reference_strategies`` (the conftest beside
it explains why it is loaded by path).  Sizes are kept small: the properties are
about layout and ordering, which small batches exercise as well as large ones,
and hundreds of examples must run in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

import torch
from hypothesis import strategies as st

from reference import LogprobsLists

INT32_MAX = 2**31 - 1

# Token ids: mostly vocabulary-sized values, plus the int32 edges.
token_ids = st.one_of(
    st.integers(min_value=0, max_value=200_000),
    st.sampled_from([0, 1, INT32_MAX - 1, INT32_MAX]),
)


@st.composite
def ragged_token_ids(draw, *, max_rows: int = 8, max_row_len: int = 6) -> list[list[int]]:
    """``ModelRunnerOutput.sampled_token_ids``-like rows: ragged, possibly empty.

    The longest row allowed is drawn first, so batches of at most one token per
    row (decoding without speculation, where a request may still produce nothing)
    come up as often as speculative ones.
    """
    row_len_cap = draw(st.integers(0, max_row_len))
    return draw(st.lists(st.lists(token_ids, max_size=row_len_cap), max_size=max_rows))


@st.composite
def ragged_token_ids_and_max_len(draw) -> tuple[list[list[int]], int]:
    """Rows and a ``max_len`` at least as long as the longest row."""
    rows = draw(ragged_token_ids())
    longest = max(map(len, rows), default=0)
    return rows, draw(st.integers(min_value=longest, max_value=longest + 3))


@st.composite
def sampler_batches(draw, *, max_rows: int = 8) -> tuple[list[list[int]], int]:
    """Rows as a sampler produces them for a given ``max_num_generated_tokens``.

    ``max_len`` is drawn first, with 1 (decoding without speculation) weighted up,
    then each row holds 0..max_len tokens, so a batch of one-token rows with some
    request that produced nothing is common rather than a rare corner.
    """
    max_len = draw(st.one_of(st.just(1), st.integers(0, 4)))
    rows = draw(st.lists(st.lists(token_ids, max_size=max_len), max_size=max_rows))
    return rows, max_len


INTEGER_DTYPES = [
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.uint16,
    torch.uint32,
    torch.uint64,
]


@st.composite
def sampled_token_id_tensors(draw, *, max_rows: int = 12, max_cols: int = 20) -> torch.Tensor:
    """2-D integer tensors of any integer dtype holding ids and placeholders anywhere.

    Large enough batches (up to 240 elements) to reach both the small-batch and the
    vectorised code paths of the unpadding.
    """
    dtype = draw(st.sampled_from(INTEGER_DTYPES))
    info = torch.iinfo(dtype)
    num_rows = draw(st.integers(0, max_rows))
    num_cols = draw(st.integers(0, max_cols))
    values = st.integers(min_value=0, max_value=min(info.max, 300))
    if info.min < 0:
        # Placeholders in any position, not only trailing: unpadding is a mask.
        values = st.one_of(values, st.just(-1))
    flat = draw(st.lists(values, min_size=num_rows * num_cols, max_size=num_rows * num_cols))
    return torch.tensor(flat, dtype=torch.int64).to(dtype).reshape(num_rows, num_cols)


FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@dataclass
class LogprobsBatch:
    """Arguments for ``gather_logprobs``."""

    logprobs: torch.Tensor
    num_logprobs: int
    token_ids: torch.Tensor


@st.composite
def logprobs_batches(draw, *, max_rows: int = 6, max_vocab: int = 12) -> LogprobsBatch:
    """Log-probability rows with many ties (values from a small set, ``-inf`` included)."""
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    num_rows = draw(st.integers(0, max_rows))
    vocab = draw(st.integers(1, max_vocab))
    values = st.sampled_from([0.0, -0.5, -1.0, -1.25, -2.0, -7.5, -30.0, float("-inf")])
    flat = draw(st.lists(values, min_size=num_rows * vocab, max_size=num_rows * vocab))
    logprobs = torch.tensor(flat, dtype=torch.float64).reshape(num_rows, vocab).to(dtype)
    token_ids = draw(st.lists(st.integers(0, vocab - 1), min_size=num_rows, max_size=num_rows))
    token_dtype = draw(st.sampled_from([torch.int64, torch.int32]))
    return LogprobsBatch(
        logprobs=logprobs,
        num_logprobs=draw(st.integers(0, vocab)),
        token_ids=torch.tensor(token_ids, dtype=token_dtype),
    )


@st.composite
def generated_token_counts(draw, *, max_reqs: int = 6, max_tokens: int = 4) -> list[int]:
    """Tokens generated per request in one step (0 for a request that produced none)."""
    return draw(st.lists(st.integers(0, max_tokens), max_size=max_reqs))


def cu_from_counts(counts: list[int]) -> list[int]:
    """``cu_num_generated_tokens``: 0, then the running total of ``counts``."""
    return [0, *accumulate(counts)]


@st.composite
def logprobs_lists(draw, *, with_cu: bool) -> tuple[LogprobsLists, list[int]]:
    """A ``LogprobsLists`` and the per-request token counts it was built from.

    Without cu every request owns exactly one row.  Row ``r`` holds distinct values
    derived from ``r`` so any misplaced row is visible.
    """
    one_row_each = [1] * draw(st.integers(0, 6))
    counts = draw(generated_token_counts()) if with_cu else one_row_each
    num_rows = sum(counts)
    width = draw(st.integers(1, 3))
    return (
        LogprobsLists(
            logprob_token_ids=[[1000 * r + c for c in range(width)] for r in range(num_rows)],
            logprobs=[[-(r + c / 10) for c in range(width)] for r in range(num_rows)],
            sampled_token_ranks=[r + 1 for r in range(num_rows)],
            cu_num_generated_tokens=cu_from_counts(counts) if with_cu else None,
        ),
        counts,
    )


@st.composite
def request_ranges(draw, num_reqs: int) -> tuple[int, int]:
    """``(start_req_idx, end_req_idx)`` with ``0 <= start <= end <= num_reqs``."""
    start = draw(st.integers(0, num_reqs))
    end = draw(st.integers(start, num_reqs))
    return start, end
