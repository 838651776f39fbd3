"""The C extension of ``reference_speedups``, built at install: the same values as the
reference's pure Python paths, and the way the reference falls back without it.

The list builder (unpadding) is compared with vLLM's per-row mask over the views,
dtypes and extreme ids a caller can hand it; the rank count with torch's over
ties, infinities, NaNs and the calls it must hand back.  ``test_reference_sampler_ops``
runs every unpadding test on both paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import reference_strategies as rst
import torch
from hypothesis import given
from hypothesis import strategies as st
from speed_paths import EXTENSION, per_row_mask

import reference_speedups
from reference import unpad_sampled_token_ids
from reference.logprobs_ops import pessimistic_ranks

ROOT = Path(__file__).resolve().parents[2]
INT64_MAX = (1 << 63) - 1
needs_extension = pytest.mark.skipif(
    EXTENSION is None, reason="the C extension of reference_speedups was not built at install"
)


@pytest.fixture
def with_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    if EXTENSION is None:
        pytest.skip("the C extension of reference_speedups was not built at install")
    monkeypatch.setattr(reference_speedups, "_EXT", EXTENSION)


@pytest.fixture(scope="module")
def list_builder() -> Callable[[torch.Tensor, int | None], list[list[int]] | None]:
    """The extension's unpadding, small batches included (the threshold is the
    reference's choice, not the loop's)."""
    if EXTENSION is None:
        pytest.skip("the C extension of reference_speedups was not built at install")

    def unpad(sampled: torch.Tensor, vocab_size: int | None) -> list[list[int]] | None:
        saved, reference_speedups.UNPAD_MIN_ELEMENTS = reference_speedups.UNPAD_MIN_ELEMENTS, 0
        saved_ext, reference_speedups._EXT = reference_speedups._EXT, EXTENSION
        try:
            return reference_speedups.unpad(sampled, vocab_size)
        finally:
            reference_speedups.UNPAD_MIN_ELEMENTS, reference_speedups._EXT = saved, saved_ext

    return unpad


def batch(rows: int = 32, width: int = 8, seed: int = 0) -> torch.Tensor:
    """Spec-decode rows: ids in the tens of thousands, each row padded with -1."""
    generator = np.random.default_rng(seed)
    ids = generator.integers(20_000, 150_000, size=(rows, width)).astype(np.int32)
    kept = generator.integers(1, width + 1, size=rows)
    ids[np.arange(width) >= kept[:, None]] = -1
    return torch.from_numpy(ids)


# --- which path, and the fallback -------------------------------------------------


@needs_extension
def test_the_path_in_use_is_said() -> None:
    assert reference_speedups.path().startswith("C extension (built at install)")


def test_without_the_extension_the_reference_takes_its_python_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reference_speedups, "_EXT", None)
    sampled = batch()
    assert reference_speedups.unpad(sampled, None) is None
    assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == per_row_mask(sampled, 100_000)
    logprobs = torch.randn(8, 4096)
    tokens = logprobs[:, 3:4].contiguous()
    assert reference_speedups.count_at_least(logprobs, tokens) is None
    assert pessimistic_ranks(logprobs, tokens).tolist() == (logprobs >= tokens).sum(-1).tolist()


def test_the_switch_and_a_missing_extension_each_say_why() -> None:
    script = "import sys, reference_speedups as r\nprint(r.path())\n"
    env = {**os.environ, reference_speedups.SWITCH: "0"}
    said = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert said == f"pure Python (${reference_speedups.SWITCH}=0)"
    # A wheel built without a compiler: the module is simply absent.
    absent = "import sys; sys.modules['reference_speedups._speedups'] = None\n" + script
    env.pop(reference_speedups.SWITCH)
    said = subprocess.run(
        [sys.executable, "-c", absent], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert said.startswith("pure Python: the C extension was not built at install (")


def test_an_install_without_a_c_compiler_still_builds(tmp_path: Path) -> None:
    # optional=True: a failing compiler skips the extension, the build goes on.
    pytest.importorskip("setuptools", reason="setup.py needs setuptools in this environment")
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
         "--build-temp", str(tmp_path / "tmp")],
        cwd=ROOT, env={**os.environ, "CC": "/nonexistent/cc"}, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not list((tmp_path / "lib").glob("**/_speedups*"))


# --- the rank count ---------------------------------------------------------------


def torch_counts(rows: torch.Tensor, tokens: torch.Tensor) -> list[int]:
    return (rows >= tokens).sum(-1).tolist()


def test_the_count_counts_what_torch_would(
    with_extension: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = torch.Generator().manual_seed(0)
    logprobs = (torch.randn(8, 1 << 15, generator=generator) * 4).log_softmax(-1)
    odd = logprobs.clone()
    odd[0, :100] = odd[0, 5]  # a hundred-way tie with the token
    odd[1, 7] = float("inf")  # the token is +inf: only itself counts
    odd[2, ::3] = float("-inf")
    odd[3, 11] = float("nan")  # a NaN token: nothing is >= it
    odd[4, 200:300] = float("nan")  # NaN entries count for no token
    odd[5, 0], odd[5, 1] = -0.0, 0.0  # signed zeros are equal
    token_ids = torch.tensor([[5], [7], [9], [11], [0], [0], [250], [3]])
    cases = {
        "random": (logprobs, logprobs[:, :1].contiguous()),
        "ties, infinities, NaNs, zeros": (odd, odd.gather(-1, token_ids)),
        "one row of Qwen's vocabulary": (torch.randn(1, 151936), torch.zeros(1, 1)),
        "a width no vector divides": (torch.randn(3, (1 << 13) + 13), torch.zeros(3, 1)),
    }
    for name, (rows, tokens) in cases.items():
        counts = reference_speedups.count_at_least(rows, tokens)
        assert counts is not None and counts.dtype == torch.int64, name
        assert counts.tolist() == torch_counts(rows, tokens), name
        assert pessimistic_ranks(rows, tokens).tolist() == torch_counts(rows, tokens), name
    # Split over torch's threads or not, the same counts.
    rows, tokens = torch.randn(64, 1 << 15), torch.randn(64, 1)
    for threads in (1, 2, 7):
        monkeypatch.setattr(torch, "get_num_threads", lambda n=threads: n)
        assert reference_speedups.count_at_least(rows, tokens).tolist() == torch_counts(
            rows, tokens
        )


def test_the_count_hands_back_calls_it_does_not_take(with_extension: None) -> None:
    logprobs = torch.randn(8, 1 << 15)
    wide = torch.randn(8, 1 << 16)
    # One value for all rows is not one per row: the loop must not read past it.
    assert reference_speedups.count_at_least(logprobs, logprobs[:1, :1].contiguous()) is None
    calls = {
        "a column view": (wide[:, ::2], wide[:, :1].contiguous()),
        "float64": (logprobs.double(), logprobs[:, :1].double()),
        "a tiny batch": (logprobs[:2, :100].contiguous(), logprobs[:2, :1].contiguous()),
    }
    for name, (rows, tokens) in calls.items():
        assert reference_speedups.count_at_least(rows, tokens) is None, name
        assert pessimistic_ranks(rows, tokens).tolist() == torch_counts(rows, tokens), name
    # Values that are not contiguous are taken, read as they are.
    tokens = wide[:, 4:5]
    assert reference_speedups.count_at_least(logprobs, tokens).tolist() == torch_counts(
        logprobs, tokens
    )


# --- the unpadding ----------------------------------------------------------------


@needs_extension
def test_the_reference_unpads_through_the_extension(
    with_extension: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = EXTENSION.unpad
    monkeypatch.setattr(
        reference_speedups, "_EXT", type("Recording", (), {"unpad": staticmethod(
            lambda *a: calls.append(a) or real(*a)
        )})(),
    )  # fmt: skip
    sampled = batch()
    assert unpad_sampled_token_ids(sampled, vocab_size=100_000) == per_row_mask(sampled, 100_000)
    assert len(calls) == 1
    tiny = batch(rows=3, width=reference_speedups.UNPAD_MIN_ELEMENTS // 3 - 1)
    assert unpad_sampled_token_ids(tiny) == per_row_mask(tiny)
    assert len(calls) == 1, "a batch below the threshold went through the extension"


def test_dtypes_the_builder_does_not_read_take_numpy(list_builder) -> None:
    for dtype in (torch.int8, torch.int16, torch.uint8, torch.uint16, torch.uint32):
        sampled = batch().clamp(-1, 100).to(dtype)
        assert list_builder(sampled, None) is None
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


# --- the list builder over numpy arrays (unpad_array) ------------------------------


@pytest.fixture(scope="module")
def array_builder() -> Callable[[np.ndarray, int | None], list[list[int]] | None]:
    """``reference_speedups.unpad_array`` with the extension in (a test may have swapped
    it out)."""
    if EXTENSION is None:
        pytest.skip("the C extension of reference_speedups was not built at install")

    def unpad(sampled: np.ndarray, vocab_size: int | None) -> list[list[int]] | None:
        saved, reference_speedups._EXT = reference_speedups._EXT, EXTENSION
        try:
            return reference_speedups.unpad_array(sampled, vocab_size)
        finally:
            reference_speedups._EXT = saved

    return unpad


@given(rst.sampled_token_id_tensors(max_rows=40, max_cols=12), st.none() | st.integers(1, 320))
def test_the_array_builder_agrees_with_the_per_row_mask(array_builder, sampled, vocab_size) -> None:
    found = array_builder(sampled.numpy(), vocab_size)
    if sampled.dtype not in (torch.int32, torch.int64):
        assert found is None
        return
    assert found == per_row_mask(sampled, vocab_size)


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=str)
@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda a: a.T, id="transposed"),
        pytest.param(lambda a: a[1::3, ::2], id="stepped"),
        pytest.param(lambda a: a[::-1, ::-2], id="reversed"),
        pytest.param(lambda a: np.broadcast_to(a[:1], (7, a.shape[1])), id="broadcast"),
        pytest.param(lambda a: a[:, 3:4], id="one-column"),
    ],
)
def test_the_array_builder_reads_views_as_they_are(array_builder, view, dtype) -> None:
    sampled = view(batch(rows=24, width=9).numpy().astype(dtype))
    as_tensor = torch.from_numpy(np.ascontiguousarray(sampled))
    assert array_builder(sampled, 100_000) == per_row_mask(as_tensor, 100_000)
    assert array_builder(sampled, None) == per_row_mask(as_tensor)


def test_the_array_builder_hands_back_arrays_it_does_not_read(array_builder) -> None:
    ids = batch(rows=4, width=3).numpy()
    swapped = ids.astype(ids.dtype.newbyteorder())
    # int32 ids between one-byte fields: 5 bytes apart, not a whole number of items.
    packed = np.zeros((4, 3), dtype=[("flag", "i1"), ("id", "i4")])
    packed["id"] = ids
    dates = ids.astype("datetime64[s]")  # a dtype numpy exports no buffer of
    for unread in (
        swapped,
        packed["id"],
        ids[0],
        ids.astype(np.int16),
        ids.astype(np.uint32),
        dates,
    ):
        assert array_builder(unread, None) is None
    assert array_builder(ids, None) == per_row_mask(torch.from_numpy(ids))


def test_without_the_extension_the_array_builder_takes_no_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reference_speedups, "_EXT", None)
    assert reference_speedups.unpad_array(batch().numpy(), None) is None


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


@pytest.fixture(scope="module")
def whole_rows_builder() -> Callable[[np.ndarray], list[list[int]] | None]:
    """``reference_speedups.rows_array`` with the extension in."""
    if EXTENSION is None:
        pytest.skip("the C extension of reference_speedups was not built at install")

    def rows(sampled: np.ndarray) -> list[list[int]] | None:
        saved, reference_speedups._EXT = reference_speedups._EXT, EXTENSION
        try:
            return reference_speedups.rows_array(sampled)
        finally:
            reference_speedups._EXT = saved

    return rows


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=str)
@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda a: a[:, :1], id="one-token-rows"),
        pytest.param(lambda a: a, id="padded-rows"),
        pytest.param(lambda a: a[::-2, ::-1], id="reversed"),
        pytest.param(lambda a: a.T[:0], id="empty"),
    ],
)
def test_whole_rows_are_tolist_every_entry_kept(whole_rows_builder, view, dtype) -> None:
    sampled = batch(rows=24, width=9).numpy().astype(dtype)
    sampled[0, 0] = -1  # a discarded request's row: kept as it is
    sampled[1, 0] = np.iinfo(dtype).max
    sampled[2, 0] = np.iinfo(dtype).min
    sampled = view(sampled)
    assert whole_rows_builder(sampled) == sampled.tolist()


def test_whole_rows_hand_back_arrays_they_do_not_read(whole_rows_builder) -> None:
    ids = batch(rows=4, width=1).numpy()
    for unread in (ids.astype(ids.dtype.newbyteorder()), ids[:, 0], ids.astype(np.uint32)):
        assert whole_rows_builder(unread) is None


def test_vocabulary_ids_are_one_int_each_and_others_are_made(array_builder) -> None:
    # A vocabulary id is the same int object in every row and every call, so a step's
    # rows cost their lists, not an int per id; ids outside the shared range are made
    # as usual.  Either way the values are the ids, and no reference leaks.
    shared, beyond = 151_000, (1 << 18) + 5
    sampled = np.array([[shared, beyond], [shared, -1]], dtype=np.int64)
    first = array_builder(sampled, None)
    second = array_builder(sampled, None)
    assert first == second == [[shared, beyond], [shared]]
    assert first[0][0] is first[1][0] is second[0][0]
    assert first[0][1] is not second[0][1]
    token = first[0][0]
    held = sys.getrefcount(token)
    for _ in range(1000):
        array_builder(sampled, None)
    assert sys.getrefcount(token) == held
