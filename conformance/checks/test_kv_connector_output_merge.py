"""KVConnectorOutput.merge(*outputs) (vLLM 0.17.0 to 0.19.x): one output from several.

The classmethod unites ``finished_sending``, ``finished_recving`` and
``invalid_block_ids`` over the outputs that have them (None when every output has
None), carries ``expected_finished_count`` (the same in every output), combines the
outputs' ``kv_connector_stats`` with ``aggregate`` and their ``kv_cache_events`` with
``merge``, in order, over those that have them (None when none has), and returns an
instance of the class it is called on.  The inputs are left as they were.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conformance.checks._skips import skip
from conformance.checks._support import expect_same, expect_type, fields_of
from conformance.oracle.compare import Members
from conformance.oracle.failing import attempt, fail

pytestmark = [
    pytest.mark.spec_type("KVConnectorOutput"),
    pytest.mark.behaviour("KVConnectorOutput.merge"),
]

SETS = ("finished_sending", "finished_recving", "invalid_block_ids")


def _union(values):
    present = [v for v in values if v is not None]
    return set().union(*present) if present else None


# Each case: the inputs' field values; the expected result is the union of each set field.
CASES: dict[str, list[dict[str, Any]]] = {
    "two-disjoint": [
        {"finished_sending": {"a"}, "finished_recving": {"x"}, "invalid_block_ids": {1}},
        {"finished_sending": {"b"}, "finished_recving": {"y"}, "invalid_block_ids": {2}},
    ],
    "two-overlapping": [
        {"finished_sending": {"a", "b"}, "invalid_block_ids": {1, 2}},
        {"finished_sending": {"b", "c"}, "invalid_block_ids": {2, 3}},
    ],
    "none-and-set": [
        {"finished_sending": None, "finished_recving": {"x"}},
        {"finished_sending": {"a"}, "finished_recving": None},
    ],
    "all-none": [
        {"finished_sending": None, "finished_recving": None},
        {"finished_sending": None, "finished_recving": None},
    ],
    "one": [{"finished_sending": {"a"}, "finished_recving": None, "invalid_block_ids": {5}}],
    "three": [
        {"finished_sending": {"a"}},
        {"finished_recving": {"x"}, "invalid_block_ids": {7}},
        {"finished_sending": {"b"}, "finished_recving": set()},
    ],
}


def _expected(inputs: list[dict[str, Any]]) -> Members:
    full = [
        {"finished_sending": None, "finished_recving": None, "invalid_block_ids": set(), **i}
        for i in inputs
    ]
    return Members({name: _union([i[name] for i in full]) for name in SETS})


@pytest.mark.parametrize("case", list(CASES))
def test_merge_unites_the_finished_sets_and_invalid_block_ids(KVConnectorOutput, case: str) -> None:
    inputs = CASES[case]
    outputs = [
        attempt(f"KVConnectorOutput(**{i!r})", KVConnectorOutput, **copy.deepcopy(i))
        for i in inputs
    ]
    where = f"KVConnectorOutput.merge(<{case}: {inputs!r}>)"
    result = attempt(where, KVConnectorOutput.merge, *outputs)
    expect_type(result, KVConnectorOutput, where)
    expect_same(fields_of(result, SETS), _expected(inputs), where)


@pytest.mark.parametrize("count", [0, 2])
def test_merge_carries_expected_finished_count(KVConnectorOutput, count: int) -> None:
    outputs = [
        KVConnectorOutput(finished_sending={"a"}, expected_finished_count=count),
        KVConnectorOutput(finished_recving={"b"}, expected_finished_count=count),
    ]
    where = f"KVConnectorOutput.merge(<2 outputs with expected_finished_count={count}>)"
    result = attempt(where, KVConnectorOutput.merge, *outputs)
    expect_same(result.expected_finished_count, count, f"{where}.expected_finished_count")


def test_merge_without_stats_or_events_gives_none(KVConnectorOutput, revision) -> None:
    outputs = [KVConnectorOutput(finished_sending={"a"}), KVConnectorOutput(finished_recving={"b"})]
    where = "KVConnectorOutput.merge(<2 outputs without stats or events>)"
    result = attempt(where, KVConnectorOutput.merge, *outputs)
    opaque = [
        name
        for name in ("kv_connector_stats", "kv_cache_events", "kv_connector_worker_meta")
        if name in revision.type("KVConnectorOutput").field_names
    ]
    for name in opaque:
        found = getattr(result, name, "<missing>")
        if found is not None:
            fail(f"{where}.{name}: expected None (every input has None), found {found!r}")


def test_merge_leaves_the_worker_metadata_it_never_names_at_its_default(
    KVConnectorOutput, revision
) -> None:
    # vLLM 0.18-0.19's merge builds its result of the six fields it names: the workers'
    # connector metadata, set on every input, is not carried (its default, None).
    if "kv_connector_worker_meta" not in revision.type("KVConnectorOutput").field_names:
        skip(
            "not-in-this-vllm",
            f"revision {revision.name}: KVConnectorOutput has no kv_connector_worker_meta",
        )
    outputs = [
        attempt("KVConnectorOutput(kv_connector_worker_meta=...)", KVConnectorOutput,
                finished_sending={name}, kv_connector_worker_meta=_Combined(name))
        for name in ("a", "b")
    ]  # fmt: skip
    where = "KVConnectorOutput.merge(<2 outputs with worker metadata>)"
    result = attempt(where, KVConnectorOutput.merge, *outputs)
    found = getattr(result, "kv_connector_worker_meta", "<missing>")
    if found is not None:
        fail(
            f"{where}.kv_connector_worker_meta: expected None (vLLM's merge does not carry "
            f"the workers' metadata), found {found!r}"
        )


class _Combined:
    """What a merge combined of whom, in order (a stand-in of vLLM's stats and events)."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.parts}"


class _Stats(_Combined):
    """``KVConnectorStats``: combined by ``aggregate`` only."""

    def aggregate(self, other: _Stats) -> _Stats:
        return _Stats(*self.parts, *other.parts)


class _Events(_Combined):
    """``KVConnectorKVEvents``: combined by ``merge`` only."""

    def merge(self, other: _Events) -> _Events:
        return _Events(*self.parts, *other.parts)


def test_merge_combines_stats_and_events_of_the_outputs_having_them(
    KVConnectorOutput, revision
) -> None:
    fields = revision.type("KVConnectorOutput").field_names
    combined = {
        name: (made, parts)
        for name, made, parts in (
            ("kv_connector_stats", _Stats, [("s1",), None, ("s3",)]),
            ("kv_cache_events", _Events, [None, ("e2",), ("e3",)]),
        )
        if name in fields
    }
    given = [
        {name: made(*parts[n]) if parts[n] else None for name, (made, parts) in combined.items()}
        for n in range(3)
    ]
    outputs = [attempt(f"KVConnectorOutput(**{g!r})", KVConnectorOutput, **g) for g in given]
    where = "KVConnectorOutput.merge(<3 outputs, stats in 1 and 3, events in 2 and 3>)"
    result = attempt(where, KVConnectorOutput.merge, *outputs)
    for name, (_, parts) in combined.items():
        expected = tuple(p for given in parts if given is not None for p in given)
        found = getattr(result, name, None)
        if getattr(found, "parts", None) != expected:
            fail(
                f"{where}.{name}: expected the inputs' combined in order {expected} (each "
                f"with the one before, as vLLM's merge does), found {found!r}"
            )


def test_merge_returns_an_instance_of_the_class_it_is_called_on(KVConnectorOutput) -> None:
    Subclass: Any = type("KVConnectorOutputSubclass", (KVConnectorOutput,), {})
    outputs = [Subclass(finished_sending={"a"}), Subclass(finished_sending={"b"})]
    where = "KVConnectorOutputSubclass.merge(<2 outputs>)"
    result = attempt(where, Subclass.merge, *outputs)
    if type(result) is not Subclass:
        fail(
            f"{where}: expected an instance of KVConnectorOutputSubclass (merge is a classmethod "
            f"that builds cls), found {type(result).__qualname__}"
        )


def test_merge_does_not_modify_its_inputs(KVConnectorOutput) -> None:
    inputs = CASES["two-overlapping"]
    outputs = [KVConnectorOutput(**copy.deepcopy(i)) for i in inputs]
    attempt("KVConnectorOutput.merge(<2 outputs>)", KVConnectorOutput.merge, *outputs)
    for n, (obj, given) in enumerate(zip(outputs, inputs, strict=True)):
        expected = Members(
            {name: given.get(name, None if name != "invalid_block_ids" else set()) for name in SETS}
        )
        expect_same(fields_of(obj, SETS), expected, f"input {n} after KVConnectorOutput.merge")
