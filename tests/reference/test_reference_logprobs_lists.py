"""``LogprobsLists.slice`` exactly as spec 2025.10 writes it.

With ``cu_num_generated_tokens`` the rows are ``cu[start]:cu[end]`` and the returned
cu is ``cu[start:end]``: not rebased to 0 and one entry short (v0.11.1 changed
both; this revision did not).  Without cu (or with an empty, falsy cu) the request
indices are row indices and the returned cu is None.
"""

from __future__ import annotations

import reference_strategies as rst
from hypothesis import given
from hypothesis import strategies as st

from reference import LogprobsLists

# Three requests owning 2, 0 and 3 rows.
ROWS = [[10, 11], [20, 21], [30, 31], [40, 41], [50, 51]]
VALUES = [[-0.1, -0.2], [-1.1, -1.2], [-2.1, -2.2], [-3.1, -3.2], [-4.1, -4.2]]
RANKS = [1, 2, 3, 4, 5]
CU = [0, 2, 2, 5]


def spec_lists(cu):
    return LogprobsLists(ROWS, VALUES, RANKS, cu)


def test_slice_with_cu_selects_the_rows_of_the_requests():
    sliced = spec_lists(CU).slice(2, 3)
    assert sliced.logprob_token_ids == ROWS[2:5]
    assert sliced.logprobs == VALUES[2:5]
    assert sliced.sampled_token_ranks == RANKS[2:5]


def test_slice_with_cu_returns_cu_start_to_end_not_rebased_and_one_entry_short():
    assert spec_lists(CU).slice(2, 3).cu_num_generated_tokens == [2]
    assert spec_lists(CU).slice(1, 3).cu_num_generated_tokens == [2, 2]
    assert spec_lists(CU).slice(0, 3).cu_num_generated_tokens == [0, 2, 2]


def test_slice_of_a_request_that_generated_nothing_is_empty():
    sliced = spec_lists(CU).slice(1, 2)
    assert sliced == LogprobsLists([], [], [], [2])


def test_slice_with_empty_range_returns_empty_cu_list():
    assert spec_lists(CU).slice(2, 2) == LogprobsLists([], [], [], [])


def test_slice_without_cu_uses_request_indices_as_rows():
    sliced = spec_lists(None).slice(1, 3)
    assert sliced == LogprobsLists(ROWS[1:3], VALUES[1:3], RANKS[1:3], None)


def test_slice_with_empty_cu_list_behaves_as_without_cu():
    # `if self.cu_num_generated_tokens:` is false for [], so indices are rows and
    # the returned cu is None, not [].
    sliced = spec_lists([]).slice(1, 3)
    assert sliced == LogprobsLists(ROWS[1:3], VALUES[1:3], RANKS[1:3], None)


def test_slice_returns_a_logprobs_lists_of_fresh_lists():
    original = spec_lists(CU)
    sliced = original.slice(0, 3)
    assert type(sliced) is LogprobsLists
    sliced.logprob_token_ids.append([0, 0])
    assert len(original.logprob_token_ids) == 5


@st.composite
def lists_and_range(draw, with_cu):
    lists, counts = draw(rst.logprobs_lists(with_cu=with_cu))
    return lists, counts, draw(rst.request_ranges(len(counts)))


@given(lists_and_range(with_cu=True))
def test_slice_with_cu_matches_the_definition_over_any_valid_range(case):
    lists, counts, (start, end) = case
    cu = lists.cu_num_generated_tokens
    sliced = lists.slice(start, end)
    rows = slice(sum(counts[:start]), sum(counts[:end]))
    assert sliced.logprob_token_ids == lists.logprob_token_ids[rows]
    assert sliced.logprobs == lists.logprobs[rows]
    assert sliced.sampled_token_ranks == lists.sampled_token_ranks[rows]
    assert sliced.cu_num_generated_tokens == cu[start:end]
    assert len(sliced.cu_num_generated_tokens) == end - start


@given(lists_and_range(with_cu=False))
def test_slice_without_cu_matches_the_definition_over_any_valid_range(case):
    lists, _, (start, end) = case
    sliced = lists.slice(start, end)
    assert sliced == LogprobsLists(
        lists.logprob_token_ids[start:end],
        lists.logprobs[start:end],
        lists.sampled_token_ranks[start:end],
        None,
    )
