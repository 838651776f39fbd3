"""LogprobsLists.slice in its three historical forms, each exactly as its revision writes it.

* ``slice:rows`` (0.10.2, 0.11.0): ``slice(start, end)`` returns rows start:end.
* ``slice:cu-not-rebased`` (2025.10): ``slice(start_req_idx, end_req_idx)``; with a
  truthy cu, requests start..end own rows ``cu[start]:cu[end]`` and the returned cu
  is ``cu[start:end]``, neither rebased to 0 nor extended to end + 1 (the spec's odd
  behaviour, which a backend of this revision reproduces).  Without cu (None or
  empty) the indices are rows and the returned cu is None.
* ``slice:cu-rebased`` (0.11.1): as above, but the returned cu is
  ``cu[start:end + 1]`` rebased to start at 0.

0.12.0 replaced ``slice`` by ``slice_request`` (its own module).  The result is
always the backend's own LogprobsLists.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.checks._samples import lists_fields, lists_values
from conformance.checks._support import expect_same, expect_type, fields_of
from conformance.oracle import strategies
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, fail

pytestmark = pytest.mark.spec_type("LogprobsLists")

ROWS = pytest.mark.behaviour("LogprobsLists.slice:rows")
NOT_REBASED = pytest.mark.behaviour("LogprobsLists.slice:cu-not-rebased")
REBASED = pytest.mark.behaviour("LogprobsLists.slice:cu-rebased")


def _rows(n: int) -> tuple[list[list[int]], list[list[float]], list[int]]:
    ids = [[70000 + i, 300 + i] for i in range(n)]
    logprobs = [[-0.5 * i, -0.25 * i - 1.0] for i in range(n)]
    ranks = [i + 1 for i in range(n)]
    return ids, logprobs, ranks


def _expected_cu(revision, cu: list[int] | None, start: int, end: int) -> list[int] | None:
    if not cu:
        return None
    if revision.has("LogprobsLists.slice:cu-rebased"):
        return [c - cu[start] for c in cu[start : end + 1]]
    return cu[start:end]


def _expected(revision, ids, logprobs, ranks, cu, start, end) -> Members:
    """The revision's slice, written out from the rule."""
    a, b = (cu[start], cu[end]) if cu else (start, end)
    values = tuple(v[a:b] for v in lists_values(revision, ids, logprobs, ranks))
    names = lists_fields(revision)
    if "cu_num_generated_tokens" in names:
        values = (*values, _expected_cu(revision, cu, start, end))
    return Members(zip(names, values, strict=True))


def _make(LogprobsLists, revision, ids, logprobs, ranks, cu):
    values = lists_values(revision, ids, logprobs, ranks)
    if "cu_num_generated_tokens" in lists_fields(revision):
        # cu by keyword: a revision's field order is checked elsewhere.
        return attempt("LogprobsLists(...)", LogprobsLists, *values, cu_num_generated_tokens=cu)
    return attempt("LogprobsLists(...)", LogprobsLists, *values)


def _slice(LogprobsLists, revision, ids, logprobs, ranks, cu, start, end) -> None:
    obj = _make(LogprobsLists, revision, ids, logprobs, ranks, cu)
    where = f"LogprobsLists(<{len(ids)} rows>, cu={cu}).slice({start}, {end})"
    result = attempt(where, obj.slice, start, end)
    expect_type(result, LogprobsLists, where)
    names = lists_fields(revision)
    expected = _expected(revision, ids, logprobs, ranks, cu, start, end)
    expect_same(fields_of(result, names), expected, where)


RANGES_OF_4 = [(s, e) for s in range(5) for e in range(s, 5)]
RANGE_IDS = [f"{s}:{e}" for s, e in RANGES_OF_4]
# Four requests owning 2, 0, 3 and 1 rows.
CU = [0, 2, 2, 5, 6]


@ROWS
@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=RANGE_IDS)
def test_slice_takes_rows_start_to_end(LogprobsLists, revision, start, end) -> None:
    _slice(LogprobsLists, revision, *_rows(4), None, start, end)


@ROWS
def test_slice_of_empty_rows_and_past_the_end(LogprobsLists, revision) -> None:
    _slice(LogprobsLists, revision, [], [], [], None, 0, 0)
    _slice(LogprobsLists, revision, *_rows(3), None, 2, 7)


@NOT_REBASED
@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=RANGE_IDS)
def test_slice_without_cu_takes_rows_start_to_end(LogprobsLists, revision, start, end) -> None:
    _slice(LogprobsLists, revision, *_rows(4), None, start, end)


@NOT_REBASED
@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=RANGE_IDS)
def test_slice_with_cu_takes_rows_of_requests_start_to_end(
    LogprobsLists, revision, start, end
) -> None:
    _slice(LogprobsLists, revision, *_rows(6), CU, start, end)


@NOT_REBASED
def test_slice_with_cu_returns_cu_not_rebased_and_one_entry_short(LogprobsLists, revision) -> None:
    obj = _make(LogprobsLists, revision, *_rows(6), CU)
    result = attempt("slice(1, 3)", obj.slice, 1, 3)
    if result.cu_num_generated_tokens != [2, 2]:
        fail(
            f"LogprobsLists(cu={CU}).slice(1, 3).cu_num_generated_tokens: expected [2, 2] "
            "(spec 2025.10 returns cu[start:end], not rebased to 0, not cu[start:end + 1]), "
            f"found {result.cu_num_generated_tokens!r}"
        )


@REBASED
@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=RANGE_IDS)
def test_slice_rebased_without_cu_takes_rows_start_to_end(
    LogprobsLists, revision, start, end
) -> None:
    _slice(LogprobsLists, revision, *_rows(4), None, start, end)


@REBASED
@pytest.mark.parametrize(("start", "end"), RANGES_OF_4, ids=RANGE_IDS)
def test_slice_rebased_takes_rows_of_requests_and_rebases_cu(
    LogprobsLists, revision, start, end
) -> None:
    _slice(LogprobsLists, revision, *_rows(6), CU, start, end)


@REBASED
def test_slice_returns_cu_rebased_to_zero_with_end_plus_one_entries(
    LogprobsLists, revision
) -> None:
    obj = _make(LogprobsLists, revision, *_rows(6), CU)
    result = attempt("slice(1, 3)", obj.slice, 1, 3)
    if result.cu_num_generated_tokens != [0, 0, 3]:
        fail(
            f"LogprobsLists(cu={CU}).slice(1, 3).cu_num_generated_tokens: expected [0, 0, 3] "
            "(0.11.1 returns cu[start:end + 1] rebased to 0), "
            f"found {result.cu_num_generated_tokens!r}"
        )


# --- edge cases: written once, run for each form that has them ----------------------


def _empty_batch(LogprobsLists, revision) -> None:
    _slice(LogprobsLists, revision, [], [], [], None, 0, 0)
    _slice(LogprobsLists, revision, [], [], [], [0], 0, 0)


def _single_row(LogprobsLists, revision, *cus: list[int] | None) -> None:
    for cu in cus:
        _slice(LogprobsLists, revision, *_rows(1), cu, 0, 1)


def _start_after_end(LogprobsLists, revision, with_cu: bool) -> None:
    _slice(LogprobsLists, revision, *_rows(4), None, 3, 1)
    if with_cu:
        _slice(LogprobsLists, revision, *_rows(6), CU, 3, 1)


def _original_untouched(LogprobsLists, revision, cu: list[int] | None) -> None:
    rows = _rows(6 if cu else 4)
    obj = _make(LogprobsLists, revision, *rows, list(cu) if cu else None)
    attempt("slice(1, 3)", obj.slice, 1, 3)
    values = lists_values(revision, *rows)
    if "cu_num_generated_tokens" in lists_fields(revision):
        values = (*values, cu)
    expected = Members(zip(lists_fields(revision), values, strict=True))
    expect_same(fields_of(obj, lists_fields(revision)), expected, "LogprobsLists after slice(1, 3)")


def _agrees_with_reference(LogprobsLists, reference_backend, revision, case) -> None:
    args = (case["logprob_token_ids"], case["logprobs"], case["ranks"], case["cu"])
    start, end = case["start"], case["end"]
    expected = reference_backend.module.LogprobsLists(*args).slice(start, end)
    obj = attempt("LogprobsLists(...)", LogprobsLists, *args)
    where = f"LogprobsLists(<{len(args[0])} rows>, cu={case['cu']}).slice({start}, {end})"
    found = attempt(where, obj.slice, start, end)
    expect_type(found, LogprobsLists, where)
    names = lists_fields(revision)
    expect_same(fields_of(found, names), fields_of(expected, names), where)


@NOT_REBASED
def test_slice_with_empty_cu_list_treats_indices_as_rows(LogprobsLists, revision) -> None:
    _slice(LogprobsLists, revision, *_rows(3), [], 1, 3)


@NOT_REBASED
def test_slice_of_empty_batch(LogprobsLists, revision) -> None:
    _empty_batch(LogprobsLists, revision)


@NOT_REBASED
def test_slice_of_single_row(LogprobsLists, revision) -> None:
    _single_row(LogprobsLists, revision, None, [0, 1])


@NOT_REBASED
def test_slice_with_start_after_end_is_empty(LogprobsLists, revision) -> None:
    _start_after_end(LogprobsLists, revision, with_cu=True)


@NOT_REBASED
def test_slice_does_not_modify_the_original(LogprobsLists, revision) -> None:
    _original_untouched(LogprobsLists, revision, CU)


@NOT_REBASED
@given(case=strategies.logprobs_lists_cases())
def test_slice_agrees_with_reference(LogprobsLists, reference_backend, revision, case) -> None:
    _agrees_with_reference(LogprobsLists, reference_backend, revision, case)


# The same edge cases for the other two forms, as checks of their own (so the node ids
# of the 2025.10 ones above stay as they were).


@ROWS
def test_slice_rows_of_single_row(LogprobsLists, revision) -> None:
    _single_row(LogprobsLists, revision, None)


@ROWS
def test_slice_rows_with_start_after_end_is_empty(LogprobsLists, revision) -> None:
    _start_after_end(LogprobsLists, revision, with_cu=False)


@ROWS
def test_slice_rows_does_not_modify_the_original(LogprobsLists, revision) -> None:
    _original_untouched(LogprobsLists, revision, None)


@REBASED
def test_slice_rebased_with_empty_cu_list_treats_indices_as_rows(LogprobsLists, revision) -> None:
    _slice(LogprobsLists, revision, *_rows(3), [], 1, 3)


@REBASED
def test_slice_rebased_of_empty_batch(LogprobsLists, revision) -> None:
    _empty_batch(LogprobsLists, revision)


@REBASED
def test_slice_rebased_of_single_row(LogprobsLists, revision) -> None:
    _single_row(LogprobsLists, revision, None, [0, 1])


@REBASED
def test_slice_rebased_with_start_after_end_is_empty(LogprobsLists, revision) -> None:
    _start_after_end(LogprobsLists, revision, with_cu=True)


@REBASED
def test_slice_rebased_does_not_modify_the_original(LogprobsLists, revision) -> None:
    _original_untouched(LogprobsLists, revision, CU)


@REBASED
@given(case=strategies.logprobs_lists_cases())
def test_slice_rebased_agrees_with_reference(
    LogprobsLists, reference_backend, revision, case
) -> None:
    _agrees_with_reference(LogprobsLists, reference_backend, revision, case)
