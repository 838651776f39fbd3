"""LogprobsLists.slice(start_req_idx, end_req_idx), exactly as spec 2025.10 writes it.

With a (truthy) cu_num_generated_tokens, requests start..end own rows
``cu[start]:cu[end]`` and the returned cu is ``cu[start:end]`` (neither rebased to
0 nor extended to end + 1: the spec's odd behaviour, which a backend of this
revision reproduces).  Without cu (None or empty) the indices are rows and the
returned cu is None.  The result is the backend's own LogprobsLists.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance import strategies
from conformance.checks._support import (
    attempt,
    expect_same,
    expect_type,
    fail,
    fields_of,
)
from conformance.invariants import Members

# The odd 2025.10 slice (cu neither rebased nor extended); 0.11.1 changed it.
pytestmark = [pytest.mark.spec_type("LogprobsLists"), pytest.mark.spec_revisions("2025.10")]

FIELDS = ("logprob_token_ids", "logprobs", "sampled_token_ranks", "cu_num_generated_tokens")


def _rows(n: int) -> tuple[list[list[int]], list[list[float]], list[int]]:
    ids = [[70000 + i, 300 + i] for i in range(n)]
    logprobs = [[-0.5 * i, -0.25 * i - 1.0] for i in range(n)]
    ranks = [i + 1 for i in range(n)]
    return ids, logprobs, ranks


def _expected(ids, logprobs, ranks, cu, start, end) -> dict:
    """The spec's slice, written out."""
    if cu:
        a, b = cu[start], cu[end]
        new_cu = cu[start:end]
    else:
        a, b, new_cu = start, end, None
    return Members(zip(FIELDS, (ids[a:b], logprobs[a:b], ranks[a:b], new_cu), strict=True))


def _slice(LogprobsLists, ids, logprobs, ranks, cu, start, end):
    obj = attempt("LogprobsLists(...)", LogprobsLists, ids, logprobs, ranks, cu)
    where = f"LogprobsLists(<{len(ids)} rows>, cu={cu}).slice({start}, {end})"
    result = attempt(where, obj.slice, start, end)
    expect_type(result, LogprobsLists, where)
    expect_same(fields_of(result, FIELDS), _expected(ids, logprobs, ranks, cu, start, end), where)


@pytest.fixture
def LogprobsLists(backend):
    return backend.spec_type("LogprobsLists")


RANGES_OF_4 = [(s, e) for s in range(5) for e in range(s, 5)]


@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=[f"{s}:{e}" for s, e in RANGES_OF_4])
def test_slice_without_cu_takes_rows_start_to_end(LogprobsLists, start, end) -> None:
    _slice(LogprobsLists, *_rows(4), None, start, end)


# Four requests owning 2, 0, 3 and 1 rows.
CU = [0, 2, 2, 5, 6]


@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=[f"{s}:{e}" for s, e in RANGES_OF_4])
def test_slice_with_cu_takes_rows_of_requests_start_to_end(LogprobsLists, start, end) -> None:
    _slice(LogprobsLists, *_rows(6), CU, start, end)


def test_slice_with_cu_returns_cu_not_rebased_and_one_entry_short(LogprobsLists) -> None:
    obj = attempt("LogprobsLists(...)", LogprobsLists, *_rows(6), CU)
    result = attempt("slice(1, 3)", obj.slice, 1, 3)
    if result.cu_num_generated_tokens != [2, 2]:
        fail(
            f"LogprobsLists(cu={CU}).slice(1, 3).cu_num_generated_tokens: expected [2, 2] "
            "(spec 2025.10 returns cu[start:end], not rebased to 0, not cu[start:end + 1]), "
            f"found {result.cu_num_generated_tokens!r}"
        )


def test_slice_with_empty_cu_list_treats_indices_as_rows(LogprobsLists) -> None:
    _slice(LogprobsLists, *_rows(3), [], 1, 3)


def test_slice_of_empty_batch(LogprobsLists) -> None:
    _slice(LogprobsLists, [], [], [], None, 0, 0)
    _slice(LogprobsLists, [], [], [], [0], 0, 0)


def test_slice_of_single_row(LogprobsLists) -> None:
    _slice(LogprobsLists, *_rows(1), None, 0, 1)
    _slice(LogprobsLists, *_rows(1), [0, 1], 0, 1)


def test_slice_with_start_after_end_is_empty(LogprobsLists) -> None:
    _slice(LogprobsLists, *_rows(4), None, 3, 1)
    _slice(LogprobsLists, *_rows(6), CU, 3, 1)


def test_slice_does_not_modify_the_original(LogprobsLists) -> None:
    ids, lps, ranks = _rows(6)
    obj = attempt("LogprobsLists(...)", LogprobsLists, ids, lps, ranks, list(CU))
    attempt("slice(1, 3)", obj.slice, 1, 3)
    expect_same(
        fields_of(obj, FIELDS),
        Members(zip(FIELDS, (*_rows(6), CU), strict=True)),
        "LogprobsLists after slice(1, 3)",
    )


@strategies.SETTINGS
@given(case=strategies.logprobs_lists_cases())
def test_slice_agrees_with_reference(LogprobsLists, reference_backend, case) -> None:
    args = (case["logprob_token_ids"], case["logprobs"], case["ranks"], case["cu"])
    start, end = case["start"], case["end"]
    expected = reference_backend.module.LogprobsLists(*args).slice(start, end)
    obj = attempt("LogprobsLists(...)", LogprobsLists, *args)
    where = f"LogprobsLists(<{len(args[0])} rows>, cu={case['cu']}).slice({start}, {end})"
    found = attempt(where, obj.slice, start, end)
    expect_type(found, LogprobsLists, where)
    expect_same(fields_of(found, FIELDS), fields_of(expected, FIELDS), where)
