"""Every broken backend fails the check that must catch its deviation, with a message naming it.

Each row: the broken backend (a module in ``broken_backends/``, or
``module:BACKEND`` for producers), the check that must fail (a node id prefix of
``conformance/checks``), and words its message must contain.  Only that check
runs, in this process, so the whole table takes seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import suite_runner

from conformance.backends.backend import BUILTIN_DEVICES
from conformance.run.failure_lines import NOT_A_RACE

ACCELERATORS = BUILTIN_DEVICES[1:]


@dataclass(frozen=True)
class Broken:
    backend: str
    check: str
    message: str


CASES = [
    Broken(
        "tolists_host_tensors_only",
        "test_logprobs_tensors_tolists.py::test_tolists_of_device_tensors_gives_their_values_on_the_host",
        "tolists(): raised TypeError",
    ),
    Broken(
        "empty_cpu_int64_ids",
        "test_logprobs_tensors_empty_cpu.py::test_empty_cpu_dtypes_and_shapes",
        "logprob_token_ids: expected torch.int32 of shape [0, 0] on cpu, found torch.int64",
    ),
    Broken(
        "cu_default_empty_list",
        "test_logprobs_lists.py::test_surface[default[cu_num_generated_tokens]]",
        "LogprobsLists.cu_num_generated_tokens: expected default None, found []",
    ),
    Broken(
        "shared_invalid_block_ids",
        "test_kv_connector_output.py::test_surface[default[invalid_block_ids]]",
        "KVConnectorOutput.invalid_block_ids: expected a fresh default per instance, found one shared object",
    ),
    Broken(
        "shared_invalid_block_ids",
        "test_kv_connector_output.py::test_set_defaults_are_fresh_per_instance",
        "found one set shared by all instances",
    ),
    Broken(
        "slice_off_by_one",
        "test_logprobs_lists_slice.py::test_slice_without_cu_takes_rows_start_to_end",
        "slice(0, 0).logprob_token_ids: expected 0 items, found 1",
    ),
    Broken(
        "slice_ignores_cu",
        "test_logprobs_lists_slice.py::test_slice_with_cu_takes_rows_of_requests_start_to_end",
        "cu=[0, 2, 2, 5, 6]).slice(0, 1).logprob_token_ids: expected 2 items, found 1",
    ),
    Broken(
        "slice_rebases_cu",
        "test_logprobs_lists_slice.py::test_slice_with_cu_returns_cu_not_rebased_and_one_entry_short",
        "cu_num_generated_tokens: expected [2, 2] (spec 2025.10 returns cu[start:end], not rebased",
    ),
    Broken(
        "slice_rebases_cu",
        "test_logprobs_lists_slice.py::test_slice_agrees_with_reference",
        ".cu_num_generated_tokens",
    ),
    Broken(
        "tolists_gives_tuples",
        "test_logprobs_tensors_tolists.py::test_tolists_gives_python_lists_of_python_numbers",
        "tolists().logprob_token_ids[0]: expected list [70000], found tuple (70000,)",
    ),
    Broken(
        "tolists_gives_numpy",
        "test_logprobs_tensors_tolists.py::test_tolists_gives_python_lists_of_python_numbers",
        ".logprob_token_ids: expected list [], found numpy.ndarray",
    ),
    Broken(
        "tolists_gives_numpy",
        "test_logprobs_tensors_tolists.py::test_tolists_agrees_with_reference",
        "found numpy.ndarray",
    ),
    Broken(
        "to_cpu_leaves_logprobs_on_device",
        "test_logprobs_tensors_to_cpu_nonblocking.py::"
        "test_to_cpu_nonblocking_of_device_tensors_copies_every_field",
        ".to_cpu_nonblocking().logprobs: expected a CPU tensor, found cuda",
    ),
    Broken(
        "to_cpu_copies_on_cpu",
        "test_logprobs_tensors_to_cpu_nonblocking.py::test_to_cpu_nonblocking_returns_self_on_cpu",
        "to_cpu_nonblocking(): expected the object itself (spec: 'return self' on CPU)",
    ),
    Broken(
        "draft_token_ids_renamed_field",
        "test_draft_token_ids.py::test_surface[fields]",
        "DraftTokenIds: missing (draft_token_ids); extra (draft_tokens): expected fields",
    ),
    Broken(
        "draft_token_ids_extra_required_field",
        "test_draft_token_ids.py::test_surface[fields]",
        "extra (num_draft_tokens)",
    ),
    Broken(
        "draft_token_ids_without_eq",
        "test_draft_token_ids.py::test_surface[dataclass_flags]",
        "DraftTokenIds: expected plain @dataclass flags, found eq=False (expected True)",
    ),
    Broken(
        "draft_token_ids_without_eq",
        "test_draft_token_ids.py::test_equality_compares_fields",
        "DraftTokenIds.__eq__: expected dataclass equality",
    ),
    Broken(
        "model_runner_output_reordered_fields",
        "test_model_runner_output.py::test_surface[fields]",
        "ModelRunnerOutput: same names in another order: expected fields",
    ),
    Broken(
        "model_runner_output_numpy_annotation",
        "test_model_runner_output.py::test_surface[annotation[sampled_token_ids]]",
        "ModelRunnerOutput.sampled_token_ids: expected annotation list[list[int]], found list[np.ndarray]",
    ),
    Broken(
        "model_runner_output_extra_optional_field",
        "test_model_runner_output.py::test_surface[fields]",
        "extra (ec_connector_output)",
    ),
    Broken(
        "model_runner_output_loses_field_in_pickle",
        "test_model_runner_output.py::test_pickle_round_trip_leaves_it_unchanged[speculative-decoding]",
        "after pickle round trip.num_nans_in_logits: expected dict",
    ),
    Broken(
        "sampler_output_frozen",
        "test_sampler_output.py::test_surface[dataclass_flags]",
        "SamplerOutput: expected plain @dataclass flags, found frozen=True (expected False)",
    ),
    Broken(
        "async_output_not_abstract",
        "test_async_model_runner_output.py::test_surface[abstract]",
        "AsyncModelRunnerOutput: expected abstract method(s) get_output, found none",
    ),
    Broken(
        "async_output_not_abstract",
        "test_async_model_runner_output.py::test_surface[kind]",
        "expected an abstract base class (ABC), found a plain class",
    ),
    Broken(
        "is_empty_ignores_invalid_block_ids",
        "test_kv_connector_output_is_empty.py::test_is_empty_truth_table",
        "KVConnectorOutput(**{'invalid_block_ids': {7}}).is_empty(): expected False (revision 2025.10 counts",
    ),
    Broken(
        "is_empty_counts_expected_finished_count",
        "test_kv_connector_output_is_empty.py::test_is_empty_truth_table",
        "KVConnectorOutput(**{'expected_finished_count': 2}).is_empty(): expected True (revision 2025.10 counts",
    ),
    Broken(
        "placeholder_token_id_zero",
        "test_module.py::test_placeholder_token_id_is_minus_one",
        "PLACEHOLDER_TOKEN_ID: expected the int -1, found int 0",
    ),
    Broken(
        "logprobs_lists_as_dataclass",
        "test_logprobs_lists.py::test_surface[kind]",
        "LogprobsLists: expected a typing.NamedTuple, found a dataclass",
    ),
    Broken(
        "slice_old_signature",
        "test_logprobs_lists.py::test_surface[method[slice]]",
        "LogprobsLists.slice: expected parameters (start_req_idx, end_req_idx)",
    ),
    Broken(
        "tolists_without_cu_parameter",
        "test_logprobs_tensors.py::test_surface[method[tolists]]",
        "LogprobsTensors.tolists: expected parameters (cu_num_generated_tokens)",
    ),
    Broken(
        "without_to_cpu_nonblocking",
        "test_logprobs_tensors.py::test_surface[method[to_cpu_nonblocking]]",
        "LogprobsTensors.to_cpu_nonblocking: expected a method def to_cpu_nonblocking(self) -> LogprobsTensors, found none",
    ),
    Broken(
        "empty_cpu_not_static",
        "test_logprobs_tensors.py::test_surface[method[empty_cpu]]",
        "LogprobsTensors.empty_cpu: expected a @staticmethod, found a @classmethod",
    ),
    Broken(
        "expected_finished_count_default_one",
        "test_kv_connector_output.py::test_surface[default[expected_finished_count]]",
        "KVConnectorOutput.expected_finished_count: expected default 0, found 1",
    ),
    Broken(
        "pad_at_front:BACKEND",
        "test_producer_pad_unpad.py::test_pad_puts_tokens_first_and_minus_one_after",
        "expected PLACEHOLDER_TOKEN_ID (-1) only as trailing padding, found [-1, -1, 70004]",
    ),
    Broken(
        "unpad_gives_numpy_ints:BACKEND",
        "test_producer_pad_unpad.py::test_unpad_drops_padding_and_gives_python_ints",
        "[0][0]: expected int 70001, found numpy.int32",
    ),
    Broken(
        "gather_ranks_zero_based:BACKEND",
        "test_producer_gather_logprobs.py::test_gather_logprobs_layout_order_and_ranks",
        "selected_token_ranks: expected 1-based pessimistic ranks (entries >= the token's logprob) [2, 6, 5], found [1, 5, 4]",
    ),
    Broken(
        "gather_top_k_ascending:BACKEND",
        "test_producer_gather_logprobs.py::test_gather_logprobs_layout_order_and_ranks",
        "expected the top-3 logprobs sorted descending",
    ),
    Broken(
        "gather_int64_ids:BACKEND",
        "test_producer_gather_logprobs.py::test_gather_logprobs_layout_order_and_ranks",
        "logprob_token_ids: expected torch.int32",
    ),
    Broken(
        "gather_from_device_top_k:BACKEND",
        "test_producer_gather_logprobs.py::"
        "test_gather_logprobs_on_a_real_vocabulary_with_the_token_outside_the_top_k",
        "selected_token_ranks: expected 1-based pessimistic ranks",
    ),
    Broken(
        "async_output_keeps_padding:BACKEND",
        "test_producer_async_output.py::test_get_output_unpads_rows_of_several_tokens",
        ".sampled_token_ids[0]: a row goes on past its kept tokens ([-1] after [120001, 120002])",
    ),
    Broken(
        "async_output_keeps_ids_beyond_vocabulary:BACKEND",
        "test_producer_async_output.py::test_get_output_unpads_rows_of_several_tokens",
        # Its async output is shaped like the first runner: that runner's rule alone.
        ".sampled_token_ids[0]: a row goes on past its kept tokens ([151941] after [120021]): "
        "drop -1 and ids at or beyond vocab_size (the first runner's rule)",
    ),
    Broken(
        "async_output_one_token_rows_as_arrays:BACKEND",
        "test_producer_async_output.py::test_rows_are_lists_of_python_ints",
        "discarded-rows on cpu>).get_output().sampled_token_ids[0]: expected list [101000], "
        "found numpy.ndarray",
    ),
    Broken(
        "async_output_keeps_discarded_rows:BACKEND",
        "test_producer_async_output.py::test_get_output_gives_the_runner_output_with_its_rows",
        ".sampled_token_ids[1]: a row goes on past its kept tokens ([101037] where it keeps none)",
    ),
    Broken(
        "async_output_reuses_rows:BACKEND",
        "test_producer_async_output.py::test_an_output_shares_nothing_with_later_steps",
        "first step's sampled_token_ids after a second step",
    ),
    Broken(
        "async_output_copies_into_one_host_buffer:BACKEND",
        "test_producer_async_output.py::test_a_step_made_before_the_last_was_read_leaves_it_as_it_was",
        "host memory shared with the next step, whose async output was made before this one",
    ),
    Broken(
        "async_output_reuses_logprobs:BACKEND",
        "test_producer_async_output.py::test_an_output_shares_nothing_with_later_steps",
        "first step's logprobs after a second step",
    ),
    Broken(
        "filter_keeps_cu:BACKEND",
        "test_logprobs_tensors_filter.py::test_filter_keeps_the_rows_the_mask_selects",
        "expected the fields after the three tensors to keep their defaults (None), as "
        "vLLM's filter leaves them (its result is LogprobsTensors(ids, logprobs, ranks)), "
        "found cu_num_generated_tokens=[0]",
    ),
    Broken(
        "async_output_does_not_wait:BACKEND",
        "test_producer_async_output.py::test_get_output_waits_for_the_device",
        "before its copy arrived (its copy started at reference/runner_async_output.py:",
    ),
]


def _id(case: Broken) -> str:
    return f"{case.backend.removesuffix(':BACKEND')}-{case.check.split('::')[1].split('[')[0].removeprefix('test_')}"


def test_at_least_twenty_distinct_broken_backends() -> None:
    assert len({c.backend for c in CASES}) >= 20


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_broken_backend_fails_the_named_check(tmp_path, case: Broken) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path(case.check),
        "--conformance-backend",
        f"broken_backends.{case.backend}",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    records = run.records(f"conformance/checks/{case.check}")
    assert records, f"no check selected by {case.check}"
    failed = [r for r in records if r["outcome"] == "failed"]
    assert failed, f"{case.backend} passed {case.check}"
    messages = "\n".join(r["message"] for r in failed)
    assert case.message in messages


def test_an_idempotent_get_output_passes_every_async_output_check(tmp_path) -> None:
    # "Called once" is the caller's obligation: a producer that repeats is not at fault.
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_producer_async_output.py"),
        "--conformance-backend",
        "broken_backends.async_output_repeats_get_output:BACKEND",
    )
    assert run.exit_code == pytest.ExitCode.OK
    assert run.report["summary"]["passed"] > 10


def test_the_form_before_steps_is_refused_with_how_to_migrate(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "broken_backends.async_output_old_form:make_backend",
        module="conformance",
        report=False,
    )
    assert run.exit_code == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in run.output.splitlines() if "sampler_output, req_ids" in line]
    assert "constructed_like_vllm" in line


def test_wrong_spec_names_fail_checks_without_breaking_the_suite(tmp_path) -> None:
    run = suite_runner.in_process(
        tmp_path,
        "--pyargs",
        "conformance",
        "--conformance-backend",
        "broken_backends.spec_names_not_classes",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    summary = run.report["summary"]
    assert summary["errors"] == 0 and summary["failed"] > 0
    [names] = run.records("conformance/checks/test_module.py::test_spec_names_are_classes")
    assert names["outcome"] == "failed"
    assert (
        "broken_backends.spec_names_not_classes.LogprobsLists: expected a class, found int"
        in names["message"]
    )
    assert "SamplerOutput: expected a class, found function" in names["message"]
    passing = {t["spec_type"] for t in run.report["tests"] if t["outcome"] == "passed"}
    assert "DraftTokenIds" in passing  # the other types are still checked


def test_a_type_the_revision_has_and_the_backend_lacks_is_named(tmp_path) -> None:
    # Its own checks say it is not a class; a check of another type that builds one says
    # which name is missing, not that None cannot be called.
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_model_runner_output_with_ec_conn_output.py"),
        "--conformance-backend",
        "broken_backends.without_held_types",
        "--conformance-revision",
        "0.34.0",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    ec = run.records("conformance/checks/test_model_runner_output_with_ec_conn_output.py")
    assert {r["outcome"] for r in ec} == {"failed", "passed"}  # with_ec_conn_output(None) holds
    failed = [r["message"] for r in ec if r["outcome"] == "failed"]
    assert all("ECConnectorOutput: no such name, and revision 0.34.0" in m for m in failed)


@pytest.mark.parametrize(
    ("backend", "skipped"),
    [
        ("to_cpu_pins_host_memory", None),
        ("to_cpu_on_a_cpu_platform:BACKEND", "device-not-declared"),
    ],
)
def test_a_device_copy_judged_on_the_simulated_runtime_fails_only_for_the_backends_fault(
    tmp_path, backend: str, skipped: str | None
) -> None:
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path(
            "test_logprobs_tensors_to_cpu_nonblocking.py::"
            "test_to_cpu_nonblocking_of_device_tensors_copies_every_field"
        ),
        "--conformance-backend",
        f"broken_backends.{backend}",
    )
    assert run.exit_code == pytest.ExitCode.OK
    records = run.records("conformance/checks/test_logprobs_tensors_to_cpu_nonblocking.py")
    assert records
    assert {r["skip_cause"] if r["outcome"] == "skipped" else r["outcome"] for r in records} == {
        skipped or "passed"
    }


def test_a_wrong_value_the_same_with_the_device_idle_is_no_race(tmp_path) -> None:
    # The race check sees the padding kept on the busy step too; the same step with the
    # device idle gives the same rows, so it says so, names no race and folds nothing.
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_producer_async_output.py"),
        "--conformance-backend",
        "broken_backends.async_output_keeps_padding:BACKEND",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED
    tests = run.report["tests"]
    races = [t for t in tests if t["behaviour"] == "producer.async_output:waits-for-device"
             and t["skip_cause"] != "device-not-present"]  # fmt: skip
    several = [t for t in races if "multi-token" in t["nodeid"]]  # one token: nothing kept
    assert several and all(
        t["outcome"] == "failed" and NOT_A_RACE in t["message"] for t in several
    ), several
    assert all(t["outcome"] != "failed" for t in races if t not in several)
    failed = {t["behaviour"] for t in tests if t["outcome"] == "failed"}
    assert "producer.async_output:unpads-multi-token-rows" in failed
    assert "values read before they arrived" not in run.output


@pytest.mark.parametrize(
    ("backend", "outcome"),
    [
        ("empty_output_holds_a_request:BACKEND", "failed"),
        ("reference", "skipped"),  # 2025.10's page shows no EMPTY_MODEL_RUNNER_OUTPUT
    ],
)
def test_empty_model_runner_output_is_held_to_the_releases(tmp_path, backend, outcome) -> None:
    spec = backend if backend == "reference" else f"broken_backends.{backend}"
    run = suite_runner.in_process(
        tmp_path,
        suite_runner.check_path("test_module.py::test_empty_model_runner_output_is_the_releases"),
        "--conformance-backend",
        spec,
    )
    [record] = run.records("conformance/checks/test_module.py")
    assert record["outcome"] == outcome, record
    if outcome == "failed":
        assert record["behaviour"] == "module.spec-names"
        assert (
            ".EMPTY_MODEL_RUNNER_OUTPUT.req_ids: expected 0 items, found 1" in (record["message"])
        ), record["message"]


@pytest.mark.parametrize("slotted", [False, True])
def test_a_plain_class_model_runner_output_fails_its_surface_not_the_suites_code(
    tmp_path, monkeypatch, slotted
) -> None:
    # The producers' checks read the runner's output through the backend's type: a plain
    # class holding the right values (in a __dict__ or in __slots__) is its surface's
    # failure alone.
    from broken_backends import model_runner_output_plain_class as plain

    if slotted:
        monkeypatch.setattr(plain, "ModelRunnerOutput", plain.SlottedModelRunnerOutput)
    run = suite_runner.in_process(
        tmp_path,
        str(suite_runner.CHECKS),
        "-k",
        "model_runner_output or async_output",
        "--conformance-backend",
        "broken_backends.model_runner_output_plain_class:BACKEND",
    )
    records = run.report["tests"]
    assert any(t["outcome"] == "passed" and "async_output" in t["nodeid"] for t in records)
    failed = {t["behaviour"] for t in records if t["outcome"] == "failed"}
    assert failed == {"ModelRunnerOutput.surface"}, failed
