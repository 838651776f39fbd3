"""Side-by-side ratios: each backend's call interleaved with its partner's.

The benchmark class is called directly (no asv run); release texts come from
the release texts (fetched into the user cache) and the tests that need them
skip without it.
"""

from __future__ import annotations

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

from benchmarks import backends, common, side_by_side
from benchmarks.interleaved import value_of

TOLISTS = side_by_side.operation_label(*side_by_side.COMPARED[0])
FILTER = next(op for op in side_by_side.OPERATIONS if op.startswith("Filter.time_filter("))


@pytest.fixture
def run_of(monkeypatch: pytest.MonkeyPatch):
    """Set the run's backend list (release texts from the shared folder)."""

    def set_list(*specs: str) -> None:
        if any(s.startswith(backends.VLLM_RELEASE) for s in specs) and not RELEASES.is_dir():
            pytest.skip(SKIP_REASON)
        monkeypatch.setenv(backends.RELEASES_ENV_VAR, str(RELEASES))
        monkeypatch.setenv(backends.BACKENDS_ENV_VAR, ",".join(specs))

    return set_list


def ratio(backend: str, device: str, operation: str) -> tuple[str, float]:
    bench = side_by_side.SideBySide()
    bench.setup(backend, device, operation)
    return bench.partner, value_of(bench.track_ratio_to_partner(backend, device, operation))


def test_every_operation_is_labelled_with_a_shape_its_benchmark_measures() -> None:
    assert len(side_by_side.OPERATIONS) == len(side_by_side.COMPARED)
    for label, (cls, method) in side_by_side.OPERATIONS.items():
        assert label.startswith(f"{cls.__name__}.{method}(")
        assert callable(getattr(cls, method))
        shape = common.representative_shape(cls)
        assert shape, label
        for name, value in shape.items():
            assert value in cls.params[cls.param_names.index(name)], (label, name)
            assert f"{name}={value}" in label


def test_the_partner_against_itself_is_about_one(run_of) -> None:
    run_of("reference", "reference@0.33.0")
    partner, value = ratio("reference", "cpu", TOLISTS)
    assert partner == "reference"
    # The same call on both sides: only the noise of the method separates them.
    assert 0.5 < value < 2.0


def test_numpy_tolists_of_0_11_1_is_far_cheaper_than_building_lists(run_of) -> None:
    # 0.11.1's tolists() keeps numpy arrays: no per-element Python objects at
    # 1024 tokens x 6 columns, so it must be an order of magnitude cheaper.
    run_of("reference", "vllm-release:0.11.1")
    partner, value = ratio("vllm-release:0.11.1", "cpu", TOLISTS)
    assert partner == "reference"
    assert value < 0.2


def test_an_operation_the_first_backend_lacks_pairs_with_the_first_that_has_it(run_of) -> None:
    run_of("reference", "vllm-release:0.13.0", "vllm-release:0.14.0", "vllm-release:0.27.0")
    partner, value = ratio("vllm-release:0.27.0", "cpu", FILTER)
    assert partner == "vllm-release:0.14.0"
    assert value > 0
    with pytest.raises(NotImplementedError, match="filter"):
        side_by_side.SideBySide().setup("vllm-release:0.13.0", "cpu", FILTER)


def test_host_work_is_compared_on_cpu_only(run_of) -> None:
    run_of("reference", "reference@0.33.0")
    with pytest.raises(NotImplementedError, match="host work"):
        side_by_side.operation_call("reference", "cuda", TOLISTS)


def test_no_backend_with_the_operation_skips_naming_why(run_of) -> None:
    run_of("reference")
    with pytest.raises(NotImplementedError, match="no backend of the run has"):
        side_by_side.partner_of("cpu", FILTER)


def test_a_run_of_one_backend_skips_it(run_of) -> None:
    run_of("reference")
    with pytest.raises(NotImplementedError, match="one backend"):
        side_by_side.SideBySide().setup("reference", "cpu", TOLISTS)


PRODUCER_OPERATIONS = [
    op
    for op in side_by_side.OPERATIONS
    if op.startswith(("GatherLogprobs.", "Unpad.", "AsyncOutput."))
]


def test_a_release_brings_its_own_producers_without_taking_the_name_vllm(run_of) -> None:
    import sys

    run_of("reference", "vllm-release:0.12.0")
    before = sys.modules.get("vllm")
    subject = backends.resolve("vllm-release:0.12.0")
    assert {"gather_logprobs", "unpad_sampled_token_ids", "make_async_output"} <= set(
        subject.producers
    )
    # vLLM's own code of that release, from its producer text, not the reference's.
    assert subject.producers["gather_logprobs"].__module__ == "vllm.v1.sample.sampler"
    assert sys.modules.get("vllm") is before  # another release (or vLLM) can load next


@pytest.mark.parametrize("operation", PRODUCER_OPERATIONS)
def test_each_release_producer_is_timed_beside_the_reference(run_of, operation) -> None:
    assert len(PRODUCER_OPERATIONS) == 3
    run_of("reference", "vllm-release:0.11.1", "vllm-release:0.32.0")
    for release in ("vllm-release:0.11.1", "vllm-release:0.32.0"):
        partner, value = ratio(release, "cpu", operation)
        assert partner == "reference"
        assert value > 0
