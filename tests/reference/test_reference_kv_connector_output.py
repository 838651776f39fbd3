"""``KVConnectorOutput.is_empty``: empty unless one of the four fields it reads is truthy."""

from __future__ import annotations

import itertools

import pytest

from reference import KVConnectorOutput, KVConnectorStats

# For each field is_empty reads: a falsy value (None or empty) and a truthy one.
FALSY_VALUES = {
    "finished_sending": [None, set()],
    "finished_recving": [None, set()],
    "kv_connector_stats": [None],
    "invalid_block_ids": [set()],
}
TRUTHY_VALUES = {
    "finished_sending": {"req-0"},
    "finished_recving": {"req-1"},
    # An instance counts as content even with empty data: is_empty tests it with `not`.
    "kv_connector_stats": KVConnectorStats(),
    "invalid_block_ids": {12},
}


@pytest.mark.parametrize(
    "falsy", list(itertools.product(*FALSY_VALUES.values())), ids=lambda v: repr(v)
)
def test_is_empty_when_every_read_field_is_none_or_empty(falsy):
    output = KVConnectorOutput(**dict(zip(FALSY_VALUES, falsy, strict=True)))
    assert output.is_empty() is True


@pytest.mark.parametrize(
    "present", [combo for n in range(1, 5) for combo in itertools.combinations(TRUTHY_VALUES, n)]
)
def test_is_not_empty_when_any_read_field_has_content(present):
    output = KVConnectorOutput(**{name: TRUTHY_VALUES[name] for name in present})
    assert output.is_empty() is False


def test_is_not_empty_with_stats_holding_data():
    output = KVConnectorOutput(kv_connector_stats=KVConnectorStats(data={"num_blocks": 2}))
    assert output.is_empty() is False


@pytest.mark.parametrize("expected_finished_count", [0, 1, 2, 8])
def test_expected_finished_count_does_not_affect_is_empty(expected_finished_count):
    assert KVConnectorOutput(expected_finished_count=expected_finished_count).is_empty() is True
    busy = KVConnectorOutput(
        finished_sending={"r"}, expected_finished_count=expected_finished_count
    )
    assert busy.is_empty() is False
