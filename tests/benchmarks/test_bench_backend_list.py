"""Many backends in one run: the backend list, per-revision calls and clean skips.

The benchmark classes' ``setup`` and timed methods are called directly (no asv
run).  Release texts come from the user cache (fetched on first use) beside the
checkout; the tests that load them skip without that folder.
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from vllm_release_texts import RELEASES, SKIP_REASON

from benchmarks import backends, common, lists_slice, logprobs_ops, pickling, tolists, transfer
from benchmarks.revision_calls import request_slicer
from reference.revisions import reference_module

needs_releases = pytest.mark.skipif(not RELEASES.is_dir(), reason=SKIP_REASON)


@pytest.fixture
def releases(monkeypatch: pytest.MonkeyPatch) -> Path:
    if not RELEASES.is_dir():
        pytest.skip(SKIP_REASON)
    monkeypatch.setenv(backends.RELEASES_ENV_VAR, str(RELEASES))
    return RELEASES


def params_of(cls: type, backend: str) -> list[Any]:
    """The first value of every parameter, backend ``backend``, device cpu."""
    values = [param[0] for param in cls.params]
    values[0] = backend
    if "device" in cls.param_names:
        values[cls.param_names.index("device")] = "cpu"
    return values


# --- the list --------------------------------------------------------------------------


def test_the_list_comes_from_outputs_bench_backends_in_order_each_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OUTPUTS_BACKEND", "ignored.when.a.list.is.given")
    monkeypatch.setenv(
        backends.BACKENDS_ENV_VAR,
        " reference, vllm-release:0.12.0 ,reference@0.27.0,, my.mod:BACKEND,reference",
    )
    assert backends.selected_specs() == [
        "reference",
        "vllm-release:0.12.0",
        "reference@0.27.0",
        "my.mod:BACKEND",
    ]


def test_without_a_list_it_is_outputs_backend_else_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(backends.BACKENDS_ENV_VAR, raising=False)
    monkeypatch.delenv("OUTPUTS_BACKEND", raising=False)
    assert backends.selected_specs() == ["reference"]
    monkeypatch.setenv("OUTPUTS_BACKEND", "reference.outputs")
    assert backends.selected_specs() == ["reference.outputs"]
    monkeypatch.setenv(backends.BACKENDS_ENV_VAR, " , ")
    assert backends.selected_specs() == ["reference.outputs"]


# --- resolving items ---------------------------------------------------------------------


def test_reference_is_the_2025_10_reference_with_its_producers() -> None:
    subject = backends.resolve("reference")
    assert subject.module is reference_module("2025.10")
    assert subject.revision_name == "2025.10"
    assert subject.has("LogprobsLists.slice:cu-not-rebased")
    assert not subject.has("LogprobsLists.slice_request")
    assert set(subject.producers) == set(backends.PRODUCERS)


@pytest.mark.parametrize(
    ("spec", "revision"),
    [
        ("reference@0.12.0", "0.12.0"),
        ("reference@0.15.1", "0.14.0"),
        ("reference@0.33.0", "0.33.0"),
    ],
)
def test_reference_at_r_is_the_reference_of_rs_revision(spec: str, revision: str) -> None:
    subject = backends.resolve(spec)
    assert subject.revision_name == revision
    assert subject.module is reference_module(revision)


def test_vllm_release_loads_that_releases_own_module(releases: Path) -> None:
    subject = backends.resolve("vllm-release:0.15.1")
    assert subject.module.__name__ == "vllm_release_0_15_1"
    assert Path(subject.module.__file__) == releases / "outputs-0.15.1.py.txt"
    assert subject.revision_name == "0.14.0"
    assert subject.type("LogprobsTensors").__module__ == "vllm_release_0_15_1"
    assert subject.devices == ("cpu", "cuda")
    # Its own producers, from the producer text beside (vLLM has no padding producer).
    assert set(subject.producers) == {
        "gather_logprobs",
        "unpad_sampled_token_ids",
        "make_async_output",
    }
    # Two releases side by side: distinct modules, distinct classes.
    other = backends.resolve("vllm-release:0.12.0")
    assert other.type("LogprobsTensors") is not subject.type("LogprobsTensors")


def test_a_release_not_in_the_folder_named_or_unknown_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(backends.RELEASES_ENV_VAR, str(tmp_path))
    backends.resolve.cache_clear()  # resolved from the cache by another test of this process
    with pytest.raises(
        backends.BackendResolutionError, match=r"holds no outputs-0\.12\.0\.py\.txt; unset it"
    ):
        backends.resolve("vllm-release:0.12.0")
    # A release the suite has no revision of: a skip (asv) naming it.
    with pytest.raises(NotImplementedError, match=r"vLLM 0\.99\.0 is newer than the newest"):
        backends.resolve("vllm-release:0.99.0")


def test_a_release_too_old_for_the_spec_types_skips(releases: Path) -> None:
    with pytest.raises(NotImplementedError, match=r"0\.10\.0"):
        lists_slice.Slice().setup(*params_of(lists_slice.Slice, "vllm-release:0.10.0"))


# --- each revision's spelling -------------------------------------------------------------


class _Recorder:
    """Lists that record how they were cut."""

    def __init__(self, cu: list[int] | None) -> None:
        self.cu_num_generated_tokens = cu
        self.calls: list[tuple[Any, ...]] = []

    def slice(self, start: int, end: int) -> None:
        self.calls.append(("slice", start, end))

    def slice_request(self, req_idx: int, num_positions: int) -> None:
        self.calls.append(("slice_request", req_idx, num_positions))


@pytest.mark.parametrize(
    ("spec", "cu", "expected"),
    [
        ("reference@0.11.0", None, [("slice", 0, 1), ("slice", 1, 2)]),
        ("reference", [0, 2, 5], [("slice", 0, 1), ("slice", 1, 2)]),
        ("reference@0.12.0", None, [("slice_request", 0, 1), ("slice_request", 1, 1)]),
        ("reference@0.33.0", [0, 2, 5], [("slice_request", 0, 2), ("slice_request", 1, 3)]),
    ],
)
def test_a_request_is_cut_the_way_the_revision_spells_it(
    spec: str, cu: list[int] | None, expected: list[tuple[Any, ...]]
) -> None:
    lists = _Recorder(cu)
    cut = request_slicer(backends.resolve(spec), lists)
    cut(0)
    cut(1)
    assert lists.calls == expected


def test_a_revision_that_cannot_slice_skips() -> None:
    no_slice = replace(backends.resolve("reference"), behaviours=frozenset())
    with pytest.raises(NotImplementedError, match="cannot slice"):
        request_slicer(no_slice, _Recorder(None))


@pytest.mark.parametrize("spec", ["reference", "reference@0.11.1", "reference@0.12.0"])
def test_slice_with_cu_gives_every_request_its_own_rows(spec: str) -> None:
    bench = lists_slice.SliceWithCu()
    bench.setup(spec, 64)
    ids = np.asarray(bench.lists.logprob_token_ids)
    for i in (0, 1, 63):
        rows = np.asarray(bench.cut(i).logprob_token_ids)
        assert np.array_equal(rows, ids[4 * i : 4 * i + 4])
    bench.time_slice_per_request_with_cu(spec, 64)


@pytest.mark.parametrize(("spec", "kind"), [("reference", list), ("reference@0.12.0", np.ndarray)])
def test_tolists_returns_what_the_revision_returns(spec: str, kind: type) -> None:
    bench = tolists.ToLists()
    bench.setup(spec, 64, 5)
    assert isinstance(bench.tensors.tolists().logprob_token_ids, kind)
    # The baselines build Python lists of the same values either way.
    assert bench._torch_tolist() == bench._ndarray_tolist()
    assert np.array_equal(np.asarray(bench._torch_tolist()[0]), bench.arrays[0])


def test_tolists_with_the_cu_tensor_reads_the_boundaries_from_it() -> None:
    bench = tolists.ToListsWithCuTensor()
    bench.setup("reference@0.29.0", 64, 5)
    assert bench.tensors.tolists().cu_num_generated_tokens == list(range(0, 65, 4))


def test_to_cpu_nonblocking_carries_the_cu_tensor() -> None:
    bench = transfer.TransferWithCuTensor()
    bench.setup("reference@0.29.0", "cpu", 256, 5)
    on_host = bench.tensors.to_cpu_nonblocking()
    assert torch.equal(on_host.cu_num_generated_tokens_tensor, torch.arange(0, 257, 4))
    bench.time_to_cpu_nonblocking_with_cu_tensor_and_wait("reference@0.29.0", "cpu", 256, 5)


@pytest.mark.parametrize(
    ("cls", "older", "newer", "lacking"),
    [
        (logprobs_ops.Filter, "reference@0.13.0", "reference@0.14.0", "LogprobsTensors.filter"),
        (logprobs_ops.Cat, "reference@0.23.0", "reference@0.27.0", "LogprobsTensors.cat"),
        (
            tolists.ToListsWithCuTensor,
            "reference@0.28.0",
            "reference@0.29.0",
            "LogprobsTensors.cu_num_generated_tokens_tensor",
        ),
        (transfer.Transfer, "reference@0.11.0", "reference", "LogprobsTensors.to_cpu_nonblocking"),
        (tolists.ToListsWithCu, "reference@0.11.0", "reference", "tolists:cu-argument"),
        (lists_slice.SliceWithCu, "reference@0.11.0", "reference", "tolists:cu-argument"),
        (
            tolists.ToListsAgainstBaselines,
            "reference@0.11.1",
            "reference",
            "tolists:python-lists",
        ),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_a_revision_without_the_operation_skips_in_setup_and_a_later_one_runs(
    cls: type, older: str, newer: str, lacking: str
) -> None:
    with pytest.raises(NotImplementedError, match=lacking):
        cls().setup(*params_of(cls, older))
    bench = cls()
    bench.setup(*params_of(cls, newer))
    for name in dir(cls):
        if name.startswith("time_"):
            getattr(bench, name)(*params_of(cls, newer))


@pytest.mark.parametrize("num_reqs", [1, 2, 64])
def test_filter_and_cat_give_the_rows_they_claim(num_reqs: int) -> None:
    spec = "reference@0.27.0"
    filtered = logprobs_ops.Filter()
    filtered.setup(spec, "cpu", num_reqs, 5)
    kept = filtered.tensors.filter(filtered.mask)
    assert kept.logprob_token_ids.shape[0] == int(filtered.mask.sum()) >= 1
    joined = logprobs_ops.Cat()
    joined.setup(spec, "cpu", num_reqs, 5)
    assert 1 <= len(joined.chunks) <= logprobs_ops.CHUNKS
    whole = joined.cat(joined.chunks, joined.cu)
    expected_ids = torch.from_numpy(common.logprobs_arrays(num_reqs, 5)[0])
    assert torch.equal(whole.logprob_token_ids, expected_ids)
    assert whole.cu_num_generated_tokens == list(range(num_reqs + 1))


# --- pickling the step's output -----------------------------------------------------------


@pytest.mark.parametrize("spec", ["reference", "reference@0.11.1", "reference@0.33.0"])
def test_the_pickled_step_output_round_trips(spec: str) -> None:
    bench = pickling.PickleModelRunnerOutput()
    bench.setup(spec, 64, 5)
    back = pickle.loads(bench.pickled)
    assert type(back) is type(bench.output)
    assert back.req_ids == bench.output.req_ids
    assert np.array_equal(back.logprobs.logprob_token_ids, bench.output.logprobs.logprob_token_ids)
    assert bench.track_pickled_bytes(spec, 64, 5) == len(bench.pickled) > 64 * 6 * 4


def test_the_step_output_has_each_revisions_types() -> None:
    lists_way = pickling.PickleModelRunnerOutput()
    lists_way.setup("reference", 64, 5)
    arrays_way = pickling.PickleModelRunnerOutput()
    arrays_way.setup("reference@0.11.1", 64, 5)
    assert all(type(t) is int for row in lists_way.output.sampled_token_ids for t in row)
    assert all(isinstance(row, np.ndarray) for row in arrays_way.output.sampled_token_ids)
    assert isinstance(lists_way.output.logprobs.logprobs, list)
    assert isinstance(arrays_way.output.logprobs.logprobs, np.ndarray)
    # Lists of Python floats pickle larger than the same values as one array.
    assert len(lists_way.pickled) > len(arrays_way.pickled)


@needs_releases
@pytest.mark.parametrize("version", ["0.10.2", "0.11.1", "0.12.0", "0.14.0", "0.31.0"])
def test_every_kind_of_release_builds_and_pickles_its_step(releases: Path, version: str) -> None:
    spec = f"vllm-release:{version}"
    bench = pickling.PickleModelRunnerOutput()
    bench.setup(spec, 64, 5)
    bench.time_dumps(spec, 64, 5)
    assert pickle.loads(bench.pickled).req_id_to_index["req-3"] == 3


# --- quick mode ----------------------------------------------------------------------------


def test_quick_mode_keeps_one_representative_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(common.QUICK_ENV_VAR, raising=False)
    assert common.sizes([1, 64, 1024], 64) == [1, 64, 1024]
    monkeypatch.setenv(common.QUICK_ENV_VAR, "1")
    assert common.sizes([1, 64, 1024], 64) == [64]
    monkeypatch.setenv(common.QUICK_ENV_VAR, "0")
    assert common.sizes([1, 64, 1024], 64) == [1, 64, 1024]
    with pytest.raises(AssertionError):
        common.sizes([1, 64], 5)


def test_subject_requires_name_what_is_missing() -> None:
    subject = backends.resolve("reference@0.12.0")
    subject.require("LogprobsLists.slice_request")
    with pytest.raises(
        NotImplementedError, match=r"reference@0\.12\.0 \(revision 0\.12\.0\) lacks"
    ):
        subject.require("LogprobsTensors.cat")
