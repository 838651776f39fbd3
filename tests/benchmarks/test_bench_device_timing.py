"""Device time as the transfer and link benchmarks read it: events around each call."""

from __future__ import annotations

import types

import pytest
import torch

from benchmarks import common


def test_device_seconds_are_the_median_of_event_timed_calls_after_one_untimed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = iter([4.0, 1.0, 3.0])  # ms, as CUDA events report
    calls: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing

        def record(self) -> None:
            calls.append("record")

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: Event) -> float:
            return next(readings)

    runtime = types.SimpleNamespace(Event=Event, synchronize=lambda: calls.append("sync"))
    monkeypatch.setattr(torch, "fakedev", runtime, raising=False)
    seconds = common.median_device_seconds("fakedev", lambda: calls.append("call"), 3)
    assert seconds == pytest.approx(3e-3)
    # One untimed call and a wait, then each call between its two events, then a wait.
    assert calls[:2] == ["call", "sync"] and calls[-1] == "sync"
    assert calls[2:-1] == ["record", "call", "record"] * 3
