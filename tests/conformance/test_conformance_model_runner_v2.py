"""vLLM's second runner, Model Runner V2: its async outputs plug in and are judged.

``constructed_like_vllm`` builds a class shaped like either runner's async output as
that runner does; Model Runner V2's own class changed to race fails the race check
(both ways it can); a backend's logprobs are judged by what vLLM's consumer reads of
them, per request; 0.17.0's pooling defect is caught.  The release texts come from
the release texts (fetched into the user cache); without them the tests that need them skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance import Step, StepSamplerOutput, constructed_like_vllm
from conformance.releases.texts import write_stub_tree

needs_texts = pytest.mark.skipif(not (RELEASES / "producers-mrv2").is_dir(), reason=SKIP_REASON)


class _Recorded:
    def __init__(self, **given):
        self.given = given


class ShapedLike033(_Recorded):
    """vLLM 0.33.0's AsyncOutput constructor."""

    def __init__(
        self,
        model_runner_output,
        sampler_output,
        num_sampled_tokens,
        main_stream,
        copy_stream,
        check_ep_fault,
        pending_aux_output,
    ):
        super().__init__(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class ShapedLike016(_Recorded):
    """vLLM 0.16.0's: the runner hands over its copy event."""

    def __init__(
        self, model_runner_output, sampler_output, num_sampled_tokens, copy_stream, copy_event
    ):
        super().__init__(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class PoolingShapedLike018(_Recorded):
    def __init__(
        self, model_runner_output, pooler_output, is_valid, main_stream, copy_stream, copy_event
    ):
        super().__init__(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})


def _step() -> Step:
    sampler = StepSamplerOutput(sampled_token_ids="ids", logprobs_tensors="lp", num_sampled="n")
    return Step(
        model_runner_output="mro",
        sampled_token_ids="ids",
        logprobs_tensors="first-runner-lp",
        invalid_req_indices=[1],
        async_output_copy_stream="copy",
        vocab_size=100,
        device="cuda",
        num_sampled="n",
        sampler_output=sampler,
        main_stream="main",
        copy_event="event",
        pooler_output="pooled",
        is_valid="valid",
        finished_mask=[True],
    )


def test_a_model_runner_v2_shaped_class_is_built_as_that_runner_builds_it() -> None:
    step = _step()
    made = constructed_like_vllm(ShapedLike033)
    assert made.runner == "model-runner-v2"
    assert made(step).given == {
        "model_runner_output": "mro",
        "sampler_output": step.sampler_output,
        "num_sampled_tokens": "n",
        "main_stream": "main",
        "copy_stream": "copy",
        "check_ep_fault": False,
        "pending_aux_output": None,
    }
    assert constructed_like_vllm(ShapedLike016)(step).given["copy_event"] == "event"
    pooled = constructed_like_vllm(PoolingShapedLike018)(step).given
    assert (pooled["pooler_output"], pooled["is_valid"]) == ("pooled", "valid")


def test_a_declared_async_output_is_judged_as_the_runner_it_was_built_like() -> None:
    # other_async_outputs=(AsyncOutputProducer("mrv2", constructed_like_vllm(C)),) with no
    # runner= given: the records said Model Runner V2 while the checks that differ by
    # runner (prompt logprobs handed over on the CPU) judged it as the first runner.
    from conformance import AsyncOutputProducer

    declared = AsyncOutputProducer("mrv2", constructed_like_vllm(ShapedLike033))
    assert declared.runner == "model-runner-v2"
    assert declared.describe().endswith("(model-runner-v2)")
    assert AsyncOutputProducer("mine", lambda step: step).runner == ""
    told = AsyncOutputProducer("told", constructed_like_vllm(ShapedLike033), runner="x")
    assert told.runner == "x"


def test_a_constructor_neither_runner_fills_is_refused_naming_both_shapes() -> None:
    class Odd:
        def __init__(self, model_runner_output, sampler_output, my_queue):
            pass

    with pytest.raises(TypeError) as refused:
        constructed_like_vllm(Odd)
    words = str(refused.value)
    assert "my_queue" in words and "sampler_output" not in words.split("(")[0]
    assert "first runner's: model_runner_output, sampled_token_ids" in words
    assert "Model Runner V2's: model_runner_output, sampler_output, num_sampled_tokens" in words


@needs_texts
@pytest.mark.parametrize("version", ["0.12.0", "0.32.0"])
def test_model_runner_v2_racing_fails_waits_for_device(tmp_path, version: str) -> None:
    # Its own class passes (the release runs); without its wait, or with its copies not
    # waiting for the main stream, it must fail.
    tree = write_stub_tree(RELEASES / f"outputs-{version}.py.txt", version, tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "mrv2_mutants:make",
        "-k",
        "waits_for_the_device",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    race = run.report["tests"]
    labels = {
        label
        for t in race
        for label in ("model-runner-v2", "copy-first")
        if f"-{label}-" in t["nodeid"]
    }
    assert labels == {"model-runner-v2", "copy-first"}, run.output[-2000:]
    # 0.12.0's runner builds no logprobs with rows of several tokens: that race step is
    # not applicable to it; every other fails.
    skipped = [t for t in race if t["outcome"] == "skipped"]
    assert all("not applicable" in t["message"] for t in skipped)
    assert len(skipped) == (2 if version == "0.12.0" else 0)
    for record in race:
        if record["outcome"] == "skipped":
            continue
        assert record["outcome"] == "failed", record
        # Not waiting reads before the copy arrived; copying first reads values before
        # the work computing them was done, named when the copy is queued.
        assert any(
            words in record["message"]
            for words in ("before its copy arrived", "before the work computing them")
        ), record
        assert record["behaviour"] == "producer.async_output:waits-for-device"
        assert "(model-runner-v2)" in record["producer"]


def _layouts(tmp_path: Path, name: str) -> suite_runner.Run:
    return suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_producer_async_output.py"),
        "--conformance-backend",
        f"broken_backends.async_output_logprobs_layouts:{name}",
    )


def test_logprobs_laid_out_as_neither_runner_but_read_right_pass(tmp_path) -> None:
    run = _layouts(tmp_path, "READS_RIGHT")
    assert run.exit_code == pytest.ExitCode.OK
    tests = run.report["tests"]
    read = [t for t in tests if t["behaviour"] == "producer.async_output:logprobs-read-by-request"]
    on_cuda = [t for t in read if t["device"] == "cuda-simulated"]
    # Boundaries held on the device alone are Model Runner V2's: not this first-runner shape's.
    assert on_cuda and {
        t["outcome"] for t in on_cuda if "boundaries-on-device" not in t["nodeid"]
    } == {"passed"}
    assert all(
        t["outcome"] == "skipped" and "not applicable" in t["message"]
        for t in on_cuda
        if "boundaries-on-device" in t["nodeid"]
    )
    layout = [
        t for t in tests if "multi-token" in t["nodeid"] and "release_converts" in t["nodeid"]
    ]
    assert layout and all(
        "not required" in t["message"] for t in layout if t["outcome"] == "skipped"
    )


def test_logprobs_one_request_reads_wrong_fails_naming_it(tmp_path) -> None:
    run = _layouts(tmp_path, "READS_WRONG")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    read = [t for t in failed if t["behaviour"] == "producer.async_output:logprobs-read-by-request"]
    assert len(read) == 2
    for record in read:
        assert "request 2 (req-2) reads the wrong logprobs" in record["message"]
        assert "slice_request(2, " in record["message"] and " row " in record["message"]
    # One token per request is unchanged, and no other request is named.
    assert all("request 2" in t["message"] for t in failed)


@needs_texts
def test_0_17_pooling_defect_is_caught(tmp_path) -> None:
    own = suite_runner.subprocess_run(
        tmp_path,
        "--vllm-outputs",
        str(RELEASES / "outputs-0.17.0.py.txt"),
        "-k",
        "pooling",
        module="conformance",
    )
    assert own.exit_code == 0, own.output[-2000:]
    [caught] = [t for t in own.report["tests"] if t["outcome"] == "xfailed"]
    assert "known defect of vLLM 0.17.0" in caught["message"]
    assert "'tuple' object does not support item assignment" in caught["message"]
    tree = write_stub_tree(RELEASES / "outputs-0.17.0.py.txt", "0.17.0", tmp_path / "tree")
    copied = suite_runner.subprocess_run(
        tmp_path / "copied" if (tmp_path / "copied").mkdir() is None else tmp_path,
        "--backend",
        "mrv2_mutants:pooling_copy",
        "-k",
        "pooling",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    [failed] = [t for t in copied.report["tests"] if t["outcome"] == "failed"]
    assert failed["behaviour"] == "producer.pooling_output:invalid-rows"
    assert "TypeError" in failed["message"], failed


def test_logprobs_laid_out_by_another_cu_say_both_and_the_runners_layout() -> None:
    from types import SimpleNamespace

    import numpy as np

    from conformance.producers.logprobs_reading import expect_read_alike
    from reference.revisions import reference_module, revision

    lists = reference_module("0.34.0").LogprobsLists
    rows = np.arange(4 * 2).reshape(4, 2)

    def output(cu: list[int]) -> SimpleNamespace:
        logprobs = lists(rows, rows * -1.0, np.arange(4), cu)
        return SimpleNamespace(
            sampled_token_ids=[[7], [8, 9]], logprobs=logprobs, req_ids=["a", "b"]
        )

    # A row per kept token where 0.34.0's runner keeps a row per logits row.
    with pytest.raises(pytest.fail.Exception) as raised:
        expect_read_alike(revision("0.34.0"), output([0, 1, 3]), output([0, 2, 4]), "out")
    assert str(raised.value).endswith(
        "; its cu_num_generated_tokens is [0, 1, 3], the runner's of this revision [0, 2, 4] "
        "(a row per logits row (every draft position), cu_num_generated_tokens counting the "
        "logits rows)"
    )


@needs_texts
@pytest.mark.parametrize(
    ("version", "mutant"),
    [("0.13.0", "drops_nan_counts"), ("0.20.0", "drops_nan_counts"),
     ("0.29.0", "maps_nan_counts_by_sorted_ids")],
)  # fmt: skip
def test_model_runner_v2_maps_nan_counts_before_the_first_runner_did(
    tmp_path, version: str, mutant: str
) -> None:
    # Its AsyncOutput maps the sampler's num_nans by request from 0.13.0 (the first
    # runner's from 0.28.0): one that drops them fails there too, and one mapping them
    # to the ids sorted (the step's ids are not in their sorted order).
    tree = write_stub_tree(RELEASES / f"outputs-{version}.py.txt", version, tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", f"mrv2_mutants:{mutant}", "-k", "nan_counts",
        module="conformance", env={"PYTHONPATH": str(tree)},
    )  # fmt: skip
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert [t["behaviour"] for t in failed] == ["producer.async_output:nan-counts"], run.output
    assert "num_nans_in_logits: expected {'req-0'" in failed[0]["message"]
    assert "each request id mapped to the NaN logits" in failed[0]["message"]


@needs_texts
def test_nan_counts_of_numpy_equal_in_value_are_not_the_ints_vllm_hands_on(tmp_path) -> None:
    tree = write_stub_tree(RELEASES / "outputs-0.33.0.py.txt", "0.33.0", tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "mrv2_mutants:nan_counts_of_numpy", "-k", "nan_counts",
        module="conformance", env={"PYTHONPATH": str(tree)},
    )  # fmt: skip
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert [t["behaviour"] for t in failed] == ["producer.async_output:nan-counts"], run.output
    assert "expected a Python int, found numpy.int32 np.int32(" in failed[0]["message"]
