"""DraftTokenIds: a plain dataclass of request ids and their draft token ids."""

from __future__ import annotations

import pickle

import pytest

from conformance.checks._support import expect_same
from conformance.oracle.failing import attempt, fail
from conformance.oracle.surface import SurfaceCheck

pytestmark = [
    pytest.mark.spec_type("DraftTokenIds"),
    pytest.mark.behaviour("DraftTokenIds.dataclass"),
]


@pytest.mark.behaviour("DraftTokenIds.surface")
def test_surface(surface_check: SurfaceCheck, DraftTokenIds) -> None:
    found = surface_check.run(DraftTokenIds)
    if found:
        fail(*found)


@pytest.mark.parametrize(
    ("req_ids", "draft_token_ids"),
    [([], []), (["r0"], [[]]), (["r0"], [[7001, 7002]]), (["a", "b", "c"], [[1], [], [2, 3, 4]])],
    ids=["empty-batch", "one-request-no-drafts", "one-request", "three-requests"],
)
def test_stores_fields_as_given(DraftTokenIds, req_ids, draft_token_ids) -> None:
    obj = attempt(
        "DraftTokenIds(req_ids=..., draft_token_ids=...)",
        DraftTokenIds,
        req_ids=req_ids,
        draft_token_ids=draft_token_ids,
    )
    for name, given in (("req_ids", req_ids), ("draft_token_ids", draft_token_ids)):
        if getattr(obj, name, None) is not given:
            fail(
                f"DraftTokenIds.{name}: expected the very object passed in (no copy or "
                f"conversion), found {getattr(obj, name, '<missing>')!r}"
            )
    positional = attempt(
        "DraftTokenIds(req_ids, draft_token_ids)", DraftTokenIds, req_ids, draft_token_ids
    )
    if positional != obj:
        fail("DraftTokenIds: expected positional and keyword construction to give equal objects")


def test_equality_compares_fields(DraftTokenIds) -> None:
    a = attempt("DraftTokenIds(...)", DraftTokenIds, ["r0"], [[1, 2]])
    b = attempt("DraftTokenIds(...)", DraftTokenIds, ["r0"], [[1, 2]])
    c = attempt("DraftTokenIds(...)", DraftTokenIds, ["r0"], [[1, 3]])
    if not (a == b and a != c):
        fail(
            "DraftTokenIds.__eq__: expected dataclass equality (equal fields <=> equal objects), "
            f"found a == b: {a == b}, a != c: {a != c}"
        )


def test_pickle_round_trip(DraftTokenIds) -> None:
    obj = attempt("DraftTokenIds(...)", DraftTokenIds, ["a", "b"], [[70001], []])
    copy = attempt("pickle round trip of DraftTokenIds", lambda: pickle.loads(pickle.dumps(obj)))
    expect_same(copy, obj, "DraftTokenIds after pickle round trip")
