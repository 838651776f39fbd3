"""vLLM 0.34.0, which removed the first runner: its producers found by what they are.

Model Runner V2 is 0.34.0's only GPU runner; its ``AsyncOutput`` and
``AsyncPoolingOutput`` are the ground truth, found wherever vLLM keeps them.  The texts
come from the release's wheel (fetched into the user cache by the tests' helper).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.releases.sources import read_source
from conformance.releases.texts import MRV2_FOLDER, producer_sections
from conformance.report.suite_errors import suite_function

NEWEST = "0.34.0"
needs_texts = pytest.mark.skipif(
    not (RELEASES / MRV2_FOLDER / f"producers-mrv2-{NEWEST}.py.txt").is_file(), reason=SKIP_REASON
)


def _async_records(report: dict) -> list[dict]:
    return [t for t in report["tests"] if t["spec_type"] == "AsyncModelRunnerOutput"]


def _tree(
    folder: Path,
    moved: dict[str, str] | None = None,
    version: str = NEWEST,
    edits: dict[str, tuple[str, str]] | None = None,
) -> Path:
    """The 0.34.0 texts laid out as an unpacked wheel (``vllm/...`` files, ``_version.py``);
    ``moved`` puts a file of the producers at another path, ``edits`` replaces one text
    (``old``, ``new``) in a file."""
    outputs = (RELEASES / f"outputs-{NEWEST}.py.txt").read_text(encoding="utf-8")
    files = {"vllm/v1/outputs.py": outputs}
    mrv2 = (RELEASES / MRV2_FOLDER / f"producers-mrv2-{NEWEST}.py.txt").read_text(encoding="utf-8")
    for section in producer_sections(mrv2):
        body = section.body
        if section.path in (edits or {}):
            old, new = (edits or {})[section.path]
            assert old in body, (section.path, old)
            body = body.replace(old, new)
        files[(moved or {}).get(section.path, section.path)] = body
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "vllm" / "_version.py").write_text(
        "__version__: str\n__version__ = version = '" + version + "'\n", encoding="utf-8"
    )
    return folder


@needs_texts
def test_the_newest_release_is_judged_with_model_runner_v2_as_ground_truth(tmp_path) -> None:
    cache = tmp_path / "cache" / "vllm-outputs-suite" / "vllm-releases"
    shutil.copytree(RELEASES, cache)
    run = suite_runner.subprocess_run(
        tmp_path, "--vllm-release", NEWEST, module="conformance",
        env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "PIP_NO_INDEX": "1"},
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-3000:]
    assert run.report["spec_revision"] == NEWEST
    judged = run.report["async_outputs"]["judged"]
    assert judged == [
        "vllm.v1.worker.gpu.async_utils.AsyncOutput (model-runner-v2)",
        "vllm.v1.worker.gpu.async_utils.AsyncPoolingOutput (model-runner-v2)",
    ]
    assert run.report["async_outputs"]["default_runner"]["runner"] == "model-runner-v2"
    records = _async_records(run.report)
    passed = {t["behaviour"] for t in records if t["outcome"] == "passed"}
    assert {"producer.async_output:waits-for-device", "producer.pooling_output"} <= passed
    assert not [t for t in records if "not declared" in t["message"]]
    [torch_port] = [t for t in run.report["tests"] if "torch_gathering" in t["check"]]
    assert torch_port["outcome"] == "passed", torch_port
    # No gathering of the spec's shape: not "not declared" where vLLM gathers otherwise.
    spec_shaped = {
        t["message"] for t in run.report["tests"] if "gather_logprobs.py" in t["nodeid"]
        and t["skip_cause"] == "producer-not-declared"
    }  # fmt: skip
    assert spec_shaped == {
        f"producer gather_logprobs: vLLM {NEWEST} has none of this shape "
        "(Sampler.gather_logprobs); the gatherings it has are judged by checks of their own "
        "(the header's 'gatherings found')"
    }


@needs_texts
def test_a_torch_gathering_moved_elsewhere_with_0_based_ranks_fails(tmp_path) -> None:
    port = "vllm/v1/worker/cpu/logprob.py"
    tree = _tree(
        tmp_path / "wheel",
        moved={port: "vllm/v1/worker/cpu/scores.py"},
        edits={port: ("return (logits >= selected).sum(-1)", "return (logits > selected).sum(-1)")},
    )
    run = suite_runner.subprocess_run(
        tmp_path, "--vllm-outputs", str(tree), "-k", "torch_gathering", module="conformance",
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
    )  # fmt: skip
    assert run.exit_code == 1, run.output[-3000:]
    [record] = [t for t in run.report["tests"] if "torch_gathering" in t["check"]]
    assert record["outcome"] == "failed"
    assert "vllm.v1.worker.cpu.scores.compute_topk_scores" in record["message"]
    assert "selected_token_ranks: expected 1-based pessimistic ranks" in record["message"]


@needs_texts
def test_an_unpacked_wheel_reads_its_version_and_finds_producers_moved_elsewhere(
    tmp_path,
) -> None:
    moved = {
        "vllm/v1/worker/gpu/async_utils.py": "vllm/v1/worker/hand_over/async_outputs.py",
    }
    tree = _tree(tmp_path / "wheel", moved)
    source = read_source(tree)
    assert source.version == NEWEST
    run = suite_runner.subprocess_run(
        tmp_path, "--vllm-outputs", str(tree), "-k", "producer", module="conformance",
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-3000:]
    assert run.report["backend"]["version"] == NEWEST
    assert run.report["async_outputs"]["judged"] == [
        "vllm.v1.worker.hand_over.async_outputs.AsyncOutput (model-runner-v2)",
        "vllm.v1.worker.hand_over.async_outputs.AsyncPoolingOutput (model-runner-v2)",
    ]
    race = [t for t in _async_records(run.report) if t["behaviour"].endswith("waits-for-device")]
    assert race and {t["outcome"] for t in race} == {"passed"}


def test_an_exception_of_the_suites_own_code_is_the_suites_error() -> None:
    from conformance.backends.known import reference_backend
    from conformance.checks._support import producer

    with pytest.raises(AttributeError) as raised:
        producer(reference_backend(), "pooling_output")
    assert suite_function(raised) == "conformance.checks._support.producer"


def test_an_exception_of_the_backends_code_is_the_backends_failure() -> None:
    def backend_code() -> None:
        raise TypeError("a producer's own bug")

    with pytest.raises(TypeError) as raised:
        backend_code()
    assert suite_function(raised) is None
    with pytest.raises(pytest.fail.Exception) as failed:
        pytest.fail("a verdict", pytrace=False)
    assert suite_function(failed) is None


def _judge_mutant(
    tmp_path: Path, backend: str, selected: str = "async_output or get_output"
) -> suite_runner.Run:
    from conformance.releases.texts import write_stub_tree

    tree = write_stub_tree(RELEASES / f"outputs-{NEWEST}.py.txt", NEWEST, tmp_path / "tree")
    return suite_runner.subprocess_run(
        tmp_path, "--backend", f"mrv2_mutants:{backend}", "-k", selected,
        module="conformance", env={"PYTHONPATH": str(tree)},
    )  # fmt: skip


@needs_texts
def test_an_async_output_that_unpads_by_value_keeps_what_the_device_left(tmp_path) -> None:
    run = _judge_mutant(tmp_path, "unpads_by_value")
    assert run.exit_code == 1, run.output[-2000:]
    failed = {t["behaviour"]: t["message"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert "producer.async_output:unpads-multi-token-rows" in failed
    # The request and what it kept past its count, named.
    said = "\n".join(failed.values())
    assert "sampled_token_ids[0]: a row goes on past its kept tokens ([" in said
    assert "unpad each row to its num_sampled, whatever the values" in said


@needs_texts
@pytest.mark.parametrize(
    ("mutant", "words"),
    [
        ("leaves_prompt_logprobs_on_the_device",
         "prompt_logprobs_dict['req-0'].logprob_token_ids: expected a CPU tensor"),
        ("drops_prompt_token_logprobs",
         "prompt_token_id_logprobs_dict['req-0']: expected the runner's prompt token logprobs"),
    ],
)  # fmt: skip
def test_prompt_logprobs_computed_on_the_device_are_handed_over_on_the_host(
    tmp_path, mutant: str, words: str
) -> None:
    run = _judge_mutant(tmp_path, mutant)
    assert run.exit_code == 1, run.output[-2000:]
    failed = {t["behaviour"]: t["message"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert set(failed) == {"producer.async_output:step-prompt-logprobs"}, failed
    assert words in "".join(failed.values())


@needs_texts
@pytest.mark.parametrize(
    ("mutant", "words"),
    [
        ("drops_sampling_masks", ".get_output().sampling_masks: expected the step's masks"),
        # The host copy of the counts read before it arrived: named at the plugin's line,
        # with what to wait for.
        (
            "lists_sampling_masks_before_waiting",
            "ListsSamplingMasksBeforeWaiting.num_sampled_tokens_np, the host copy of "
            "ListsSamplingMasksBeforeWaiting.num_sampled_tokens (num_sampled), read at "
            "mrv2_mutants.py:89 before its copy arrived",
        ),
        # Several slots per request (rows of several tokens): the counts tell the sampled.
        ("lists_sampling_masks_without_counts", "needs num_sampled_tokens"),
    ],
)
def test_sampling_masks_the_sampler_recorded_reach_the_output(tmp_path, mutant, words) -> None:
    run = _judge_mutant(tmp_path, mutant)
    assert run.exit_code == 1, run.output[-2000:]
    failed = {t["behaviour"]: t["message"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert set(failed) == {"producer.async_output:sampling-masks"}, failed
    assert words in "".join(failed.values())


@needs_texts
def test_copies_ordered_after_an_idle_stream_read_before_the_work_is_done(tmp_path) -> None:
    run = _judge_mutant(tmp_path, "waits_on_an_idle_stream")
    assert run.exit_code == 1, run.output[-2000:]
    failed = {t["behaviour"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert failed == {"producer.async_output:waits-for-device"}


@needs_texts
def test_counts_computed_on_the_device_and_an_idle_main_stream_fail_waits_for_device(
    tmp_path,
) -> None:
    # The plugin's own device work (num_sampled from the ids) is queued on the current
    # stream, as on hardware; its copies wait on a new stream that ran nothing, so they
    # read unfinished values: caught, naming the tensor and the stream to wait for.
    run = _judge_mutant(tmp_path, "counts_on_an_idle_main_stream")
    assert run.exit_code == 1, run.output[-2000:]
    race = [t for t in run.report["tests"] if "waits_for_the_device" in t["nodeid"]]
    assert race and all(t["outcome"] == "failed" for t in race), race
    message = race[0]["message"]
    assert "AsyncOutput.num_sampled_tokens" in message and "before the work computing" in message
    assert "mrv2_mutants.py:" in message  # the plugin's line that queued that work
    # Handing over the stream it computed on, the same plugin passes.
    right = _judge_mutant(tmp_path / "right", "counts_on_the_main_stream")
    assert right.exit_code == 0, right.output[-2000:]


@needs_texts
def test_a_count_read_before_the_copy_event_is_named_at_its_line(tmp_path) -> None:
    # The planted bug: get_output() reads num_sampled_tokens before waiting.
    run = _judge_mutant(tmp_path, "reads_counts_before_waiting")
    assert run.exit_code == 1, run.output[-2000:]
    race = [t for t in run.report["tests"] if "waits_for_the_device" in t["nodeid"]]
    assert race and all(t["outcome"] == "failed" for t in race), race
    message = race[0]["message"]
    # The tensor by the producer's name, its line, the copy's line, what to wait for.
    assert "ReadsCountsBeforeWaiting.num_sampled_tokens, the host copy of num_sampled," in message
    assert " read at mrv2_mutants.py:" in message
    assert "(its copy started at mrv2_mutants.py:" in message
    assert "wait first for ReadsCountsBeforeWaiting.copy_event.synchronize()" in message
    # What follows from that read is counted under it, not listed again.
    lines = [line for line in run.output.splitlines() if line.startswith("FAIL [")]
    assert lines[0].startswith("FAIL [producer.async_output:waits-for-device] 2 check(s): ")
    following = run.output.split(lines[0], 1)[1].splitlines()[1]
    assert following.startswith("     and ") and "that follow from" in following
    assert all("expected 1 items, found 0" not in line for line in lines[1:])


@needs_texts
def test_a_count_array_read_before_the_copy_event_is_named_at_its_line(tmp_path) -> None:
    # The same bug through the numpy array vLLM's own class keeps (async_copy_to_np):
    # taking the array reads nothing, reading it before the wait is named.
    run = _judge_mutant(tmp_path, "reads_count_array_before_waiting")
    assert run.exit_code == 1, run.output[-2000:]
    race = [t for t in run.report["tests"] if "waits_for_the_device" in t["nodeid"]]
    assert race and all(t["outcome"] == "failed" for t in race), race
    message = race[0]["message"]
    assert "ReadsCountArrayBeforeWaiting.num_sampled_tokens_np, the host copy of " in message
    assert " read at mrv2_mutants.py:" in message and "before its copy arrived" in message
    assert "wait first for ReadsCountArrayBeforeWaiting.copy_event.synchronize()" in message


@needs_texts
def test_vllms_own_async_output_declared_as_the_readme_does_has_no_failure(tmp_path) -> None:
    # devices=("cpu", "cuda") without producer_devices: on cpu no runner builds the step
    # (its streams would be None): not applicable there, saying why; judged on the
    # simulated cuda, where it passes.
    run = _judge_mutant(tmp_path, "as_the_readme_declares")
    assert run.exit_code == 0, run.output[-3000:]
    records = _async_records(run.report)
    on_cpu = [t for t in records if t["device"] == "cpu"]
    assert on_cpu and {t["skip_cause"] for t in on_cpu} == {"step-not-built-on-device"}
    assert not [t for t in records if t["outcome"] in ("failed", "error")]
    assert any(t["device"] == "cuda-simulated" and t["outcome"] == "passed" for t in records)


def test_a_member_missing_from_the_backends_class_is_the_backends_failure() -> None:
    class ModelRunnerOutput:  # the backend's, without with_kv_conn_output_only
        pass

    with pytest.raises(AttributeError) as raised:
        ModelRunnerOutput.with_kv_conn_output_only  # noqa: B018
    assert suite_function(raised) is None


def test_a_member_missing_from_a_subclass_of_the_backends_class_is_the_backends_failure() -> None:
    from conformance.backends.backend import Backend

    class KVConnectorOutput:  # the backend's, without merge
        pass

    # As a check derives from it: a class of the suite's module, the backend's at heart.
    derived = type("KVConnectorOutputSubclass", (KVConnectorOutput,), {})
    derived.__module__ = Backend.__module__
    with pytest.raises(AttributeError) as raised:
        derived.merge  # noqa: B018
    assert suite_function(raised) is None


@needs_texts
def test_the_triton_gathering_is_found_where_vllm_moved_it() -> None:
    from conformance.backends.vllm_producers import triton_gathering_at

    mrv2 = (RELEASES / MRV2_FOLDER / f"producers-mrv2-{NEWEST}.py.txt").read_text(encoding="utf-8")
    sources = {s.path: s.body for s in producer_sections(mrv2) if s.title == "whole file"}
    assert triton_gathering_at(sources) == (
        "vllm.v1.worker.gpu.sample.logprob",
        "compute_topk_scores",
    )
    moved = {
        ("vllm/v1/worker/gpu/scoring/topk.py" if p.endswith("gpu/sample/logprob.py") else p): t
        for p, t in sources.items()
    }
    # The CPU runner's torch port is a gathering too, but not Triton's.
    assert triton_gathering_at(moved) == ("vllm.v1.worker.gpu.scoring.topk", "compute_topk_scores")


@needs_texts
@pytest.mark.parametrize(
    ("mutant", "behaviours", "words"),
    [
        # Model Runner V2's runner puts the KV connector's output on its output after
        # building the async output: a copy made when built loses it.
        ("keeps_the_output_as_built", None,
         ".get_output().kv_connector_output: expected the value the runner handed over"),
        ("keeps_the_kv_output_as_built", {"AsyncModelRunnerOutput.get_kv_connector_output"},
         "read it from that output when asked, never keep what it held when built"),
        # vLLM asks for it where get_output() raised, to salvage the step's KV output.
        ("kv_output_through_get_output", {"AsyncModelRunnerOutput.get_kv_connector_output"},
         "never through get_output()"),
        ("pooling_kv_output_through_get_output",
         {"AsyncModelRunnerOutput.get_kv_connector_output"}, "never through get_output()"),
    ],
)  # fmt: skip
def test_the_kv_output_the_runner_sets_after_building_reaches_the_scheduler(
    tmp_path, mutant: str, behaviours: set[str] | None, words: str
) -> None:
    run = _judge_mutant(tmp_path, mutant, "async_output or get_output or kv_connector")
    assert run.exit_code == 1, run.output[-2000:]
    failed = {t["behaviour"]: t["message"] for t in run.report["tests"] if t["outcome"] == "failed"}
    if behaviours is not None:
        assert set(failed) == behaviours, failed
    assert words in "".join(failed.values()), failed


@pytest.mark.skipif(
    not (RELEASES / MRV2_FOLDER / "producers-mrv2-0.33.0.py.txt").is_file(), reason=SKIP_REASON
)
def test_every_async_output_of_a_release_is_asked_for_its_kv_output(tmp_path) -> None:
    # 0.33.0 has both runners: Model Runner V2's AsyncOutput (its default) is asked too,
    # as vLLM's executor asks whichever runner built the step.
    run = suite_runner.subprocess_run(
        tmp_path, "--vllm-release", "0.33.0", "-k", "producer_get_kv_connector_output_returns",
        module="conformance",
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-2000:]
    asked = {t["producer"].rsplit("(", 1)[-1] for t in run.report["tests"] if t["producer"]}
    assert asked == {"gpu-model-runner)", "model-runner-v2)"}, asked
    assert sum(t["outcome"] == "passed" for t in run.report["tests"]) == 6


@needs_texts
def test_request_boundaries_held_on_the_device_alone_reach_the_output(tmp_path) -> None:
    # Adaptive verification keeps them on the device only: an async output that copies
    # the logprobs without them hands the scheduler rows it reads for the wrong requests.
    run = _judge_mutant(tmp_path, "drops_the_boundaries_on_the_device")
    assert run.exit_code == 1, run.output[-2000:]
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert {t["behaviour"] for t in failed} == {"producer.async_output:logprobs-read-by-request"}
    assert all("boundaries-on-device" in t["nodeid"] for t in failed), failed
