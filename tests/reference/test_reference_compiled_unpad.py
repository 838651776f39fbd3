"""The unpadding's compiled tier: the C list builder, built off the caller's thread.

The tier's mechanism (when it builds, on which thread, what it says when it does
not) is tested through ``unpad_sampled_token_ids``; the list builder itself is
built for real and compared with vLLM's per-row mask over the views, dtypes and
extreme ids a caller can hand it.  ``test_reference_sampler_ops`` runs every
unpadding test on both tiers.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import reference_strategies as rst
import torch
from hypothesis import given
from hypothesis import strategies as st
from native_tiers import HAS_C_COMPILER, per_row_mask, unpad_build_on

from reference import compiled_unpad, native_unpad, unpad_sampled_token_ids
from reference.background_build import HOT_CALLS, SWITCH

INT64_MAX = (1 << 63) - 1
needs_cc = pytest.mark.skipif(not HAS_C_COMPILER, reason="the list builder needs a C compiler")


@pytest.fixture
def fresh_build(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nothing built yet; the switch unset."""
    monkeypatch.delenv(SWITCH, raising=False)
    saved = compiled_unpad._BUILD
    unpad_build_on("numpy")
    yield
    compiled_unpad.settle(timeout=60)
    compiled_unpad._BUILD = saved


@pytest.fixture(scope="module")
def list_builder() -> native_unpad.Unpad:
    if not HAS_C_COMPILER:
        pytest.skip("the list builder needs a C compiler (cc, gcc or clang)")
    return native_unpad.build()


def batch(rows: int = 32, width: int = 8, seed: int = 0) -> torch.Tensor:
    """Spec-decode rows: ids in the tens of thousands, each row padded with -1."""
    generator = np.random.default_rng(seed)
    ids = generator.integers(20_000, 150_000, size=(rows, width)).astype(np.int32)
    kept = generator.integers(1, width + 1, size=rows)
    ids[np.arange(width) >= kept[:, None]] = -1
    return torch.from_numpy(ids)


# --- the tier ----------------------------------------------------------------------


def record_build_threads(
    monkeypatch: pytest.MonkeyPatch, delay: float = 0.0
) -> list[threading.Thread]:
    """The threads the list builder is built on from now on, each build ``delay`` s slower."""
    threads: list[threading.Thread] = []
    real_build = native_unpad.build

    def recording_build() -> native_unpad.Unpad:
        threads.append(threading.current_thread())
        time.sleep(delay)
        return real_build()

    monkeypatch.setattr(native_unpad, "build", recording_build)
    return threads


@needs_cc
def test_calls_take_numpy_until_hot_and_the_build_runs_off_the_callers_thread(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = record_build_threads(monkeypatch, delay=1.0)
    sampled = batch()
    wanted = per_row_mask(sampled, 100_000)
    for _ in range(HOT_CALLS - 1):
        assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == wanted
    assert compiled_unpad.state() == f"eager ({HOT_CALLS - 1} of {HOT_CALLS} hot calls)"

    started = time.monotonic()
    assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == wanted  # the hot call
    assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == wanted  # while building
    assert time.monotonic() - started < 1.0, "a caller waited for the build"
    assert compiled_unpad.state() == "compiling"

    assert compiled_unpad.settle(timeout=60) == "compiled (C list builder)"
    assert threads and threading.main_thread() not in threads
    assert compiled_unpad.compiled_unpad(sampled, 100_000) == wanted


@needs_cc
def test_build_here_builds_on_the_callers_thread_once(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = record_build_threads(monkeypatch)
    assert compiled_unpad.build_here() == "compiled (C list builder)"
    assert compiled_unpad.build_here() == "compiled (C list builder)"
    assert threads == [threading.current_thread()]
    sampled = batch()
    assert compiled_unpad.compiled_unpad(sampled, None) == per_row_mask(sampled)


def test_build_here_builds_nothing_with_the_switch_off(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SWITCH, "0")
    assert compiled_unpad.build_here() == f"eager (0 of {HOT_CALLS} hot calls)"


def test_batches_below_the_builders_size_never_heat_it(fresh_build: None) -> None:
    tiny = batch(rows=3, width=compiled_unpad.MIN_ELEMENTS // 3 - 1)
    for _ in range(HOT_CALLS + 1):
        assert unpad_sampled_token_ids(tiny) == per_row_mask(tiny)
    assert compiled_unpad.state() == f"eager (0 of {HOT_CALLS} hot calls)"


def test_the_switch_keeps_the_numpy_path(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SWITCH, "0")
    sampled = batch()
    for _ in range(HOT_CALLS + 1):
        assert unpad_sampled_token_ids(sampled) == per_row_mask(sampled)
    assert compiled_unpad.state() == f"eager (0 of {HOT_CALLS} hot calls)"


def test_without_a_c_compiler_the_numpy_path_stays_and_says_why(
    fresh_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    sampled = batch()
    for _ in range(HOT_CALLS):
        unpad_sampled_token_ids(sampled)
    state = compiled_unpad.settle(timeout=60)
    assert state.startswith("eager: compile failed (")
    assert "/nonexistent/cc could not build the list builder" in state
    assert compiled_unpad.compiled_unpad(sampled, None) is None
    assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == per_row_mask(sampled, 100_000)


@needs_cc
def test_dtypes_the_builder_does_not_read_take_numpy_once_it_is_built(
    fresh_build: None,
) -> None:
    unpad_build_on("C list builder")
    for dtype in (torch.int8, torch.int16, torch.uint8, torch.uint16, torch.uint32):
        sampled = batch().clamp(-1, 100).to(dtype)
        assert compiled_unpad.compiled_unpad(sampled, None) is None
        assert unpad_sampled_token_ids(sampled, vocab_size=50) == per_row_mask(sampled, 50)


# --- the list builder itself -------------------------------------------------------


@given(rst.sampled_token_id_tensors(max_rows=40, max_cols=12), st.none() | st.integers(1, 320))
def test_the_builder_agrees_with_the_per_row_mask(list_builder, sampled, vocab_size) -> None:
    found = list_builder(sampled, vocab_size)
    if sampled.dtype not in (torch.int32, torch.int64):
        assert found is None
        return
    assert found == per_row_mask(sampled, vocab_size)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda t: t.t(), id="transposed"),
        pytest.param(lambda t: t[1::3, ::2], id="stepped"),
        pytest.param(lambda t: t[5:, 2:], id="offset"),
        pytest.param(lambda t: t[:1].expand(7, -1), id="expanded"),
        pytest.param(lambda t: t[:, 3:4], id="one-column"),
    ],
)
def test_the_builder_reads_views_as_they_are(list_builder, view, dtype) -> None:
    sampled = view(batch(rows=24, width=9).to(dtype))
    assert list_builder(sampled, 100_000) == per_row_mask(sampled, 100_000)
    assert list_builder(sampled, None) == per_row_mask(sampled)


def test_the_builder_keeps_every_id_but_the_placeholder(list_builder) -> None:
    extremes = [INT64_MAX, -(1 << 63), -2, -1, 0, (1 << 31) - 1, 1 << 31]
    sampled = torch.tensor([extremes, extremes[::-1]], dtype=torch.int64)
    kept = [tok for tok in extremes if tok != -1]
    assert list_builder(sampled, None) == [kept, kept[::-1]]
    # A vocabulary past every int64 id drops nothing; one at INT64_MAX drops only it.
    assert list_builder(sampled, 1 << 70) == [kept, kept[::-1]]
    assert list_builder(sampled, INT64_MAX) == per_row_mask(sampled, INT64_MAX)
    assert INT64_MAX not in list_builder(sampled, INT64_MAX)[0]


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (3, 0)])
def test_the_builder_of_empty_batches(list_builder, shape) -> None:
    assert list_builder(torch.empty(shape, dtype=torch.int32), 10) == [[]] * shape[0]


def test_the_builder_returns_fresh_lists_of_python_ints(list_builder) -> None:
    sampled = batch()
    rows = list_builder(sampled, None)
    assert type(rows) is list and all(type(row) is list for row in rows)
    assert all(type(tok) is int for row in rows for tok in row)
    # Owned by the caller alone, each row by the batch's list alone: no reference
    # leaked or missing (getrefcount's own argument is the one above those).
    assert sys.getrefcount(rows) == 2
    assert [sys.getrefcount(rows[i]) for i in range(len(rows))] == [2] * len(rows)
    assert rows[0] is not list_builder(sampled, None)[0]


def test_the_builder_leaks_nothing_over_many_calls(list_builder) -> None:
    import tracemalloc

    sampled = batch(rows=64)
    list_builder(sampled, None)
    tracemalloc.start()
    try:
        for _ in range(200):
            list_builder(sampled, None)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2000):
            list_builder(sampled, None)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 2000 calls of 64 rows: a leaked list or int a call would be megabytes.
    assert grown < 64 * 1024, f"{grown} bytes kept over 2000 calls"


def test_the_builder_stays_whole_while_another_thread_writes_the_batch(list_builder) -> None:
    # A pinned buffer a copy still writes, or a caller's other thread: torch's ops
    # release the GIL, so the batch can change between the loop's count of a row and
    # its fill.  The writer sweeps column by column (a transposed copy), so rows
    # lose ids between the two passes; every list must still be whole (an unfilled
    # place would crash this process), holding ids only.
    sampled = torch.full((256, 256), 50_000, dtype=torch.int32)
    valid = torch.full((256, 256), 50_000, dtype=torch.int32)
    padding = torch.full((256, 256), -1, dtype=torch.int32)
    stop = threading.Event()

    def sweep() -> None:
        columns = sampled.t()
        while not stop.is_set():
            columns.copy_(padding)
            columns.copy_(valid)

    writer = threading.Thread(target=sweep, daemon=True)
    writer.start()
    try:
        for _ in range(400):
            rows = list_builder(sampled, None)
            assert len(rows) == 256
            assert all(all(tok == 50_000 for tok in row) for row in rows)
    finally:
        stop.set()
        writer.join()
