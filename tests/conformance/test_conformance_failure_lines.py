"""What a failing run tells its author: the behaviour on the terminal, an xfails file ready to use."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import suite_runner
import torch

from conformance.oracle.failing import attempt
from conformance.producers.simulated_device import SimulatedRuntime, installed
from conformance.report.records import skip_cause_of
from conformance.run.xfails import canonical_entry_nodeid
from reference.revisions import revision

ZERO_BASED = "broken_backends.gather_ranks_zero_based:BACKEND"


def test_each_failing_behaviour_is_one_terminal_line(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", ZERO_BASED, "-k", "producer_gather", module="conformance"
    )
    assert run.exit_code == 1
    [line] = [line for line in run.output.splitlines() if line.startswith("FAIL [")]
    assert line.startswith("FAIL [producer.gather_logprobs] 10 check(s): gather_logprobs(")
    assert "expected 1-based pessimistic ranks" in line
    # pytest's own lines name each check as the report and the xfails file do,
    # though the run started elsewhere (tmp_path) and collected the checks by package.
    summary = [line for line in run.output.splitlines() if line.startswith("FAILED ")]
    assert len(summary) == 10
    assert all(line.startswith("FAILED conformance/checks/test_producer_") for line in summary)
    # The report's message names the rule once, without pytest's "Failed: ".
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert all(
        t["message"].startswith("[producer.gather_logprobs] gather_logprobs(") for t in failed
    )


def test_the_written_xfails_file_turns_the_run_green(tmp_path) -> None:
    # Into a folder not made yet, as --report makes its own.
    first = suite_runner.subprocess_run(
        tmp_path, "--backend", ZERO_BASED, "-k", "producer_gather",
        "--write-xfails", "deviations/xfails.toml", module="conformance", report=False,
    )  # fmt: skip
    assert first.exit_code == 1
    text = (tmp_path / "deviations" / "xfails.toml").read_text()
    assert text.count("[[xfail]]") == 1
    assert 'behaviour = "producer.gather_logprobs"' in text
    assert "xfails file with 1 behaviour(s) written to deviations/xfails.toml" in first.output
    again = suite_runner.subprocess_run(
        tmp_path, "--backend", ZERO_BASED, "-k", "producer_gather",
        "--xfails", "deviations/xfails.toml", module="conformance",
    )  # fmt: skip
    assert again.exit_code == 0, again.output[-2000:]
    assert again.report["summary"]["xfailed"] == 10


def test_an_existing_xfails_file_is_never_overwritten(tmp_path) -> None:
    (tmp_path / "xfails.toml").write_text("# mine\n")
    run = suite_runner.subprocess_run(
        tmp_path, "--write-xfails", "xfails.toml", module="conformance", report=False
    )
    assert run.exit_code == 4
    assert (
        "it exists (an xfails file is never overwritten); remove it, or choose another path"
        in run.output
    )
    assert (tmp_path / "xfails.toml").read_text() == "# mine\n"


def test_a_node_id_pasted_from_the_terminal_names_the_check() -> None:
    terminal = "checks/test_logprobs_lists_slice.py::test_slice[cpu]"
    assert canonical_entry_nodeid(terminal) == f"conformance/{terminal}"
    assert canonical_entry_nodeid(f"conformance/{terminal}") == f"conformance/{terminal}"


def test_a_revision_prints_short_in_falsifying_examples() -> None:
    assert repr(revision("0.12.0")) == "SpecRevision('0.12.0')"


def test_a_producers_checks_are_counted_under_the_producer() -> None:
    from conformance.report.table import row_of

    assert row_of("LogprobsTensors", "producer.gather_logprobs") == "producer gather_logprobs"
    assert row_of("AsyncModelRunnerOutput", "producer.async_output:waits-for-device") == (
        "producer async_output"
    )
    assert row_of("LogprobsLists", "LogprobsLists.slice_request") == "LogprobsLists"
    # A type a spec type's field holds is counted apart, under its holder.
    assert row_of("ModelRunnerOutput", "ECConnectorOutput.is_empty") == (
        "ECConnectorOutput (of ModelRunnerOutput)"
    )
    assert row_of("ModelRunnerOutput", "ModelRunnerOutput.pickle") == "ModelRunnerOutput"


def failed(behaviour: str, message: str, device: str = "npu-simulated") -> SimpleNamespace:
    """A failed check's record, as failure_lines reads it."""
    return SimpleNamespace(
        outcome="failed", behaviour=behaviour, message=message, device=device, producer=None
    )


def test_a_missing_wait_is_named_first_and_what_follows_is_counted_under_it() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    raised = "make_async_output(<step x>): raised AttributeError at w.py:3 (`s.wait_stream(m)`)"
    lines = failures_by_behaviour([
        failed("producer.async_output:rows-as-lists", "expected 101000, found -2147483601"),
        failed("producer.async_output:step-empty-batch", "sampled_token_ids[0]: expected 1 items, found 0"),
        failed("producer.async_output:waits-for-device", "a copy read before its wait"),
        failed("LogprobsLists.slice_request", "expected [1], found [2]"),
        # Not what a late read causes: an exception of its own, or on another device.
        failed("producer.async_output", raised),
        failed("producer.async_output:step-empty-batch", "expected 1 items, found 0", "cpu"),
    ])  # fmt: skip
    assert lines[0].startswith("FAIL [producer.async_output:waits-for-device] 1 check(s): ")
    assert lines[1] == (
        "     and 2 more check(s) of the same producer that follow from "
        "producer.async_output:waits-for-device (values read before they arrived): "
        "rows-as-lists 1, step-empty-batch 1"
    )
    assert lines[2].startswith("FAIL [LogprobsLists.slice_request] 1 check(s): ")
    assert lines[3] == f"FAIL [producer.async_output] 1 check(s): {raised}"
    assert lines[4].startswith("FAIL [producer.async_output:step-empty-batch] 1 check(s): ")
    assert len(lines) == 5


@pytest.mark.parametrize(
    "words",
    [
        "with abstract method get_kv_connector_output",  # Python 3.11
        "without an implementation for abstract method 'get_kv_connector_output'",  # 3.12
    ],
)
def test_a_class_lacking_an_abstract_method_is_one_cause_not_a_race(words) -> None:
    from types import SimpleNamespace

    from conformance.run.failure_lines import failures_by_behaviour

    def failed(behaviour: str) -> SimpleNamespace:
        message = (
            "make_async_output(<step race-k5>): raised TypeError at w.py:9 (`cls(**kw)`): "
            f"Can't instantiate abstract class NPUAsyncOutput {words}"
        )
        return SimpleNamespace(
            outcome="failed", behaviour=behaviour, message=message, device="npu-simulated",
            producer=None,
        )  # fmt: skip

    lines = failures_by_behaviour(
        [
            failed("producer.async_output:waits-for-device"),
            failed("producer.async_output"),
            failed("producer.async_output:rows-as-lists"),
            failed("AsyncModelRunnerOutput.get_kv_connector_output"),
            SimpleNamespace(
                outcome="failed",
                behaviour="LogprobsLists.slice_request",
                message="off by one",
                device=None,
            ),
        ],
        lambda behaviour: "outputs.py:9" if behaviour.startswith("LogprobsLists") else None,
    )
    assert lines[0].startswith("FAIL [AsyncModelRunnerOutput.get_kv_connector_output] 1 check(s): ")
    assert lines[1] == (
        "     and 3 more check(s) that follow from AsyncModelRunnerOutput.get_kv_connector_output "
        "(NPUAsyncOutput cannot be built: it lacks get_kv_connector_output): "
        "producer.async_output 1, producer.async_output:rows-as-lists 1, "
        "producer.async_output:waits-for-device 1"
    )
    assert lines[2].startswith("FAIL [LogprobsLists.slice_request] 1 check(s) (the backend's, at")
    assert len(lines) == 3


_UNBUILT = (
    "ModelRunnerOutput(<the runner's step>): raised TypeError: ModelRunnerOutput.__init__() "
    "missing 1 required positional argument: 'req_id_to_index'"
)
_FLOAT_ID = (
    "make_async_output(<step one-token-per-request>).get_output().sampled_token_ids[0][0]: "
    "expected int 101000, found float 101000.0"
)


@pytest.mark.parametrize(
    ("records", "cause", "follows", "own"),
    [
        pytest.param(
            [("producer.async_output:waits-for-device", _UNBUILT),
             ("producer.async_output", _UNBUILT),
             ("ModelRunnerOutput.surface", "ModelRunnerOutput: extra (req_id_to_index)"),
             ("producer.async_output:rows-as-lists", "rows: expected lists, found arrays")],
            "ModelRunnerOutput.surface",
            "(the runner's step cannot be built with the backend's ModelRunnerOutput: its "
            "fields are not the revision's): producer.async_output 1, "
            "producer.async_output:waits-for-device 1",
            "producer.async_output:rows-as-lists",
            id="a step the backend's ModelRunnerOutput cannot hold",
        ),
        pytest.param(
            [("producer.async_output", _FLOAT_ID),
             ("producer.async_output:step-discarded-rows", _FLOAT_ID),
             ("producer.async_output:rows-as-lists", _FLOAT_ID),
             ("producer.async_output:step-empty-batch", _FLOAT_ID.replace("float 101000.0", "int 7"))],
            "producer.async_output:rows-as-lists",
            "(the sampled ids are not of the type the rows hold): producer.async_output 1, "
            "step-discarded-rows 1",
            "producer.async_output:step-empty-batch",  # a wrong value: a failure of its own
            id="sampled ids of the wrong type",
        ),
    ],
)  # fmt: skip
def test_one_cause_counts_the_checks_it_explains_in_one_line(
    records, cause: str, follows: str, own: str
) -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    lines = failures_by_behaviour([failed(behaviour, message) for behaviour, message in records])
    assert lines[0].startswith(f"FAIL [{cause}] 1 check(s): ")
    assert lines[1] == f"     and 2 more check(s) that follow from {cause} {follows}"
    assert lines[2].startswith(f"FAIL [{own}] 1 check(s): ")
    assert len(lines) == 3


def test_a_behaviour_line_keeps_the_step_name_and_the_backends_line() -> None:
    from types import SimpleNamespace

    from conformance.run.failure_lines import failures_by_behaviour

    message = (
        "make_async_output(<step multi-token-discarded-k5 on a simulated npu runtime>)."
        "get_output(): raised AttributeError at my_plugin/worker.py:57 "
        "(`copy_stream.wait_stream(main_stream)`): 'NoneType' object has no attribute "
        "'wait_stream'"
    )
    record = SimpleNamespace(outcome="failed", behaviour="b", message=message, device="cpu")
    [line] = failures_by_behaviour([record])
    assert line.startswith(
        "FAIL [b] 1 check(s): make_async_output(<step multi-token-discarded-k5>).get_output(): "
        "raised AttributeError at my_plugin/worker.py:57 (`copy_stream.wait_stream(main_stream)`)"
    )


def test_a_placeholder_value_is_named_a_copy_not_yet_arrived() -> None:
    from conformance.oracle.failing import name_copies_not_arrived

    assert "a copy not yet arrived" in name_copies_not_arrived("expected 101000, found -2147483601")
    assert name_copies_not_arrived("expected 1, found 2") == "expected 1, found 2"


def _plugin_code(stream) -> None:
    stream.wait_stream(None)


def test_an_exception_in_the_backends_code_names_its_line_and_the_suites_call() -> None:
    import pytest

    from conformance.oracle.failing import attempt

    with pytest.raises(pytest.fail.Exception) as failed:
        attempt("make_async_output(<step one>)", _plugin_code, None)
    first, second = str(failed.value.msg).splitlines()
    assert first.startswith(
        "make_async_output(<step one>): raised AttributeError at test_conformance_failure_lines.py:"
    )
    assert first.endswith(
        " (`stream.wait_stream(None)`): 'NoneType' object has no attribute 'wait_stream'"
    )
    assert second.startswith("  called by the suite at ")  # the check's call of attempt
    assert "attempt(" in second


def test_an_exception_a_check_did_not_catch_names_the_backends_line_too() -> None:
    from types import SimpleNamespace

    from conformance.run.session import _name_the_backends_line

    try:
        _plugin_code(None)
    except AttributeError as error:
        raised = error
    crash = SimpleNamespace(message="AttributeError: 'NoneType' object has no attribute 'x'")
    report = SimpleNamespace(longrepr=SimpleNamespace(reprcrash=crash))
    _name_the_backends_line(report, raised)  # type: ignore[arg-type]
    assert crash.message.startswith(
        "AttributeError at test_conformance_failure_lines.py:"
    ) and crash.message.endswith(
        " (`stream.wait_stream(None)`): 'NoneType' object has no attribute 'x'"
    )


def test_a_device_torch_cannot_name_is_inconclusive_not_the_backends_failure() -> None:
    # device=ids.device on a simulated npu: torch's argument parser refuses the stand-in
    # device object before any of the suite's code sees the call.  That is the
    # simulation's limit: the check is inconclusive here, never failed.
    def rows_like(ids: torch.Tensor) -> torch.Tensor:
        return torch.arange(ids.shape[0], device=ids.device)

    with installed(SimulatedRuntime("npu")) as runtime, runtime.device_factories():
        ids = runtime.device_tensor(torch.tensor([3, 4]), label="ids")
        with pytest.raises(
            pytest.skip.Exception, match="simulated device cannot stand in"
        ) as skipped:
            attempt("rows_like(ids)", rows_like, ids)
    assert skip_cause_of(skipped.value) == "inconclusive"
    assert "test_conformance_failure_lines.py:" in str(skipped.value)  # the backend's line

    def refuses(ids: torch.Tensor) -> torch.Tensor:
        return torch.arange(2, device=object())  # a TypeError of the backend's own making

    with pytest.raises(pytest.fail.Exception, match="raised TypeError"):
        attempt("refuses(ids)", refuses, torch.zeros(2))


def test_a_types_fields_come_first_among_its_surface_failures() -> None:
    from types import SimpleNamespace

    from conformance.run.failure_lines import failures_by_behaviour

    def failed(nodeid: str, message: str) -> SimpleNamespace:
        return SimpleNamespace(
            outcome="failed", behaviour="ModelRunnerOutput.surface", message=message,
            device=None, nodeid=nodeid,
        )  # fmt: skip

    [line] = failures_by_behaviour([
        failed("t.py::test_surface[annotation[cudagraph_stats]]", "expected annotation X"),
        failed("t.py::test_surface[fields]", "ModelRunnerOutput: extra (req_id_to_index): ..."),
    ])  # fmt: skip
    assert line.startswith(
        "FAIL [ModelRunnerOutput.surface] 2 check(s): ModelRunnerOutput: extra (req_id_to_index)"
    )


def test_a_file_of_a_package_off_the_import_path_is_named_from_its_package(tmp_path) -> None:
    from conformance.source_paths import module_path

    # An editable install's finder maps the package to its folder; no folder of the
    # import path holds it.
    module = tmp_path / "my_plugin" / "v1" / "worker.py"
    module.parent.mkdir(parents=True)
    for folder in (module.parent, module.parent.parent):
        (folder / "__init__.py").write_text("")
    module.write_text("")
    assert module_path(str(module)) == "my_plugin/v1/worker.py"
    assert module_path(str(tmp_path / "loose.py")) == str(tmp_path / "loose.py")


def test_a_run_where_nothing_failed_says_it_wrote_no_xfails_file(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "reference", "-k", "draft_token_ids", "--write-xfails",
        "xfails.toml", module="conformance", report=False,
    )  # fmt: skip
    assert run.exit_code == 0
    assert "no xfails file written to xfails.toml: nothing failed" in run.output
    assert not (tmp_path / "xfails.toml").exists()


def test_the_written_xfail_quotes_the_failure_the_summary_shows(tmp_path) -> None:
    from types import SimpleNamespace

    from conformance.run.xfails import write_entries

    def failed(nodeid: str, message: str) -> SimpleNamespace:
        return SimpleNamespace(
            outcome="failed", behaviour="ModelRunnerOutput.surface", message=message,
            nodeid=nodeid,
        )  # fmt: skip

    path = tmp_path / "xfails.toml"
    write_entries(path, [
        failed("t.py::test_surface[annotation[x]]", "expected annotation X"),
        failed("t.py::test_surface[fields]", "ModelRunnerOutput: extra (req_id_to_index): ..."),
    ], "my_plugin")  # fmt: skip
    assert "2 check(s) failed, first: ModelRunnerOutput: extra (req_id_to_index)" in (
        path.read_text()
    )


def test_the_written_xfail_of_a_wrong_value_at_the_race_check_still_fails_a_race(
    tmp_path,
) -> None:
    # A producer whose values are wrong fails the race check "not a race": the entry
    # written for it covers that failure only, so a true race later still fails.
    from types import SimpleNamespace

    from conformance.run.failure_lines import NOT_A_RACE
    from conformance.run.xfails import load, write_entries

    def failed(behaviour: str, message: str) -> SimpleNamespace:
        return SimpleNamespace(
            outcome="failed", behaviour=behaviour, message=message, nodeid=f"t.py::{behaviour}"
        )

    race = "producer.async_output:waits-for-device"
    wrong = f"make_async_output(<step>).get_output(): found other values, {NOT_A_RACE}"
    stale = "make_async_output(<step>).get_output(): found stale data in sampled_token_ids"
    path = tmp_path / "xfails.toml"
    write_entries(path, [failed(race, wrong), failed("producer.async_output", wrong)], "mine")
    (covering,) = [e for e in load(path) if e.behaviour == race]
    assert covering.accepts(wrong) and not covering.accepts(stale)
    mixed = tmp_path / "mixed.toml"
    write_entries(mixed, [failed(race, wrong), failed(race, stale)], "mine")
    (entry,) = load(mixed)
    assert entry.accepts(stale)  # a race seen already: the entry declares the behaviour


def test_a_long_line_keeps_what_failed_and_its_fix() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    message = (
        "acme.outputs.LogprobsTensors.to_cpu_nonblocking(): "
        + "the copy went through pageable memory, " * 6
        + "; copy into pinned host memory (pin_memory=True)"
    )
    record = SimpleNamespace(outcome="failed", behaviour="b", message=message, device="cpu")
    [line] = failures_by_behaviour([record])
    said = line.removeprefix("FAIL [b] 1 check(s): ")
    assert len(said) <= 180
    assert said.startswith("acme.outputs.LogprobsTensors.to_cpu_nonblocking(): the copy went")
    assert said.endswith("copy into pinned host memory (pin_memory=True)"), said
    assert " … " in said


def test_a_held_type_the_module_lacks_is_one_cause() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    absent = (
        "acme.outputs.SamplingMaskLists: no such name, and revision 0.34.0's types hold one: "
        "define SamplingMaskLists in the backend's module, or import vLLM's"
    )
    records = [
        failed("SamplingMaskLists.surface", "SamplingMaskLists.x: expected a field, found none"),
        failed("SamplingMaskLists.to_nested_list", absent),
        failed("SamplingMaskLists.to_nested_list", absent),
        failed("SamplingMaskLists.slice_request:offsets-for-several-positions", absent),
        failed("LogprobsTensors.filter", "AttributeError: no attribute 'filter'"),
    ]
    lines = failures_by_behaviour(records)
    assert lines[0].startswith("FAIL [SamplingMaskLists.surface] 1 check(s): ")
    assert lines[1] == (
        "     and 3 more check(s) that follow from SamplingMaskLists.surface (the backend's "
        "module has no SamplingMaskLists): "
        "SamplingMaskLists.slice_request:offsets-for-several-positions 1, "
        "SamplingMaskLists.to_nested_list 2"
    )
    assert [line.split("]")[0] for line in lines[2:]] == ["FAIL [LogprobsTensors.filter"]


def test_checks_stuck_at_one_line_are_one_cause_and_no_race() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    def stuck(behaviour: str) -> SimpleNamespace:
        return failed(
            behaviour,
            f"conformance/checks/test_x.py::test_y[{behaviour}]: timed out after 2 s "
            "(--check-timeout; 0 disables it): stuck in Hang.get_output(), at /p/hang.py:12 "
            "in Hang.get_output, check line test_x.py:7",
        )

    lines = failures_by_behaviour([
        stuck("producer.async_output:waits-for-device"),
        stuck("producer.async_output"),
        stuck("producer.async_output:rows-as-lists"),
    ])  # fmt: skip
    # A call that never returns read nothing early: the race check is no cause, and its
    # line is not first.
    assert lines[0].startswith(
        "FAIL [producer.async_output] 1 check(s): timed out after 2 s (--check-timeout; 0 "
        "disables it): stuck in Hang.get_output(), at /p/hang.py:12"
    )
    assert lines[1] == (
        "     and 2 more check(s) that follow from producer.async_output (stuck in "
        "Hang.get_output, at /p/hang.py:12, past the time limit): "
        "rows-as-lists 1, waits-for-device 1"
    )
    assert len(lines) == 2


def test_one_exception_at_one_line_of_the_backends_is_one_cause() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    raised = (
        "make_async_output(<step x>).get_output(): raised AttributeError at w.py:51 "
        "(`sampled = self._sampled_host`): 'Out' object has no attribute '_sampled_host'"
    )
    lines = failures_by_behaviour([
        failed("producer.async_output:step-empty-batch", raised),
        failed("producer.async_output", raised),
        failed("producer.async_output:rows-as-lists", raised),
        failed("producer.async_output:rows-as-lists", "expected list, found tuple"),
    ])  # fmt: skip
    assert lines[0] == f"FAIL [producer.async_output] 1 check(s): {raised}"
    assert lines[1] == (
        "     and 2 more check(s) that follow from producer.async_output (AttributeError "
        "raised at w.py:51): rows-as-lists 1, step-empty-batch 1"
    )
    # A failure of its own stays on its behaviour's line.
    assert lines[2].startswith("FAIL [producer.async_output:rows-as-lists] 1 check(s): expected")
    assert len(lines) == 3


def test_a_discarded_row_not_emptied_is_its_own_cause_beside_rows_kept_past() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    past = "x.get_output().sampled_token_ids[0]: a row goes on past its kept tokens ([7] after [6]): unpad"
    none = "x.get_output().sampled_token_ids[1]: a row goes on past its kept tokens ([5] where it keeps none): empty"
    lines = failures_by_behaviour([
        failed("producer.async_output:unpads-multi-token-rows", past),
        failed("producer.async_output:rows-as-lists", past),
        failed("producer.async_output:step-discarded-rows", none),
        failed("producer.async_output:independent-outputs", none),
    ])  # fmt: skip
    # Each rule on its own line, with what follows from it: the discarded row's fix is
    # not hidden under the unpadding's.
    assert [line.split(" check(s)")[0] for line in lines] == [
        "FAIL [producer.async_output:unpads-multi-token-rows] 1",
        "     and 1 more",
        "FAIL [producer.async_output:step-discarded-rows] 1",
        "     and 1 more",
    ]
    assert "rows-as-lists 1" in lines[1] and "independent-outputs 1" in lines[3]


def test_rows_read_before_they_arrived_are_the_races_not_an_unpadding() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    # An async output that never waits reads placeholders: its rows go on past their
    # kept tokens because nothing arrived, so the missing wait is the one cause.
    placeholders = (
        "x.get_output().sampled_token_ids[0]: a row goes on past its kept tokens "
        "([-2147483573, -2147483573] where it keeps none): empty"
    )
    lines = failures_by_behaviour([
        failed("producer.async_output:unpads-multi-token-rows", placeholders),
        failed("producer.async_output:step-discarded-rows", placeholders),
        failed("producer.async_output:waits-for-device", "a copy read before its wait"),
    ])  # fmt: skip
    assert [line.split(" check(s)")[0] for line in lines] == [
        "FAIL [producer.async_output:waits-for-device] 1",
        "     and 2 more",
    ]
    # A race on another device explains nothing here: rows kept past on cuda are the
    # unpadding's, beside the simulated device's race.
    beside = failures_by_behaviour([
        failed("producer.async_output:unpads-multi-token-rows", placeholders, "cuda"),
        failed("producer.async_output:waits-for-device", "a copy read before its wait"),
    ])  # fmt: skip
    assert [line.split(" check(s)")[0] for line in beside] == [
        "FAIL [producer.async_output:unpads-multi-token-rows] 1",
        "FAIL [producer.async_output:waits-for-device] 1",
    ]
    # Without a race the same rows are the unpadding's.
    alone = failures_by_behaviour([
        failed("producer.async_output:unpads-multi-token-rows", placeholders),
        failed("producer.async_output:step-discarded-rows", placeholders),
    ])  # fmt: skip
    assert alone[0].startswith("FAIL [producer.async_output:step-discarded-rows] 1 check(s)")


def test_one_wrong_value_said_by_several_behaviours_is_one_cause() -> None:
    from conformance.run.failure_lines import NOT_A_RACE, failures_by_behaviour

    def row(step: str, n: int = 0) -> str:
        return f"mrv2(<step {step}>).get_output().sampled_token_ids[0]: expected 1 items, found {n}"

    lines = failures_by_behaviour([
        failed("producer.async_output:rows-as-lists", row("discarded-rows")),
        failed("producer.async_output:step-discarded-rows", row("256-requests")),
        failed("producer.async_output", row("one-token-per-request")),
        failed("producer.async_output:waits-for-device", f"mrv2(<step race-k5>): {NOT_A_RACE}: x"),
        failed("producer.async_output:step-empty-batch", row("empty"), "cpu"),  # the same value
        failed("producer.async_output:unpads-multi-token-rows",  # alike: expected more
               row("multi").replace("expected 1 items", "expected 2 items")),
        failed("producer.async_output:logprobs-read-by-request", row("k5", 7)),  # found other
        # Another value, or another producer's: failures of their own.
        failed("producer.async_output:step-prompt-logprobs",
               "mrv2(<step p>).get_output().prompt_logprobs_dict: expected keys ['r'], found []"),
        failed("producer.pooling_output", row("pooling")),
    ])  # fmt: skip
    assert lines[0] == f"FAIL [producer.async_output] 1 check(s): {row('one-token-per-request')}"
    assert lines[1] == (
        "     and 5 more check(s) that follow from producer.async_output (one wrong value: "
        "sampled_token_ids[0]: expected 1 items, found 0): rows-as-lists 1, "
        "step-discarded-rows 1, step-empty-batch 1, unpads-multi-token-rows 1, "
        "waits-for-device 1"
    )
    assert [line.split("]")[0] for line in lines[2:]] == [
        "FAIL [producer.async_output:logprobs-read-by-request",
        "FAIL [producer.async_output:step-prompt-logprobs",
        "FAIL [producer.pooling_output",
    ]


def test_a_value_read_before_it_arrived_is_the_races_not_one_wrong_value() -> None:
    from conformance.run.failure_lines import failures_by_behaviour

    said = (
        "make_async_output(<step s>).get_output().sampled_token_ids[0]: expected 1 items, found 0"
    )
    lines = failures_by_behaviour([
        failed("producer.async_output:waits-for-device", "a copy read before its wait"),
        failed("producer.async_output", said),
        failed("producer.async_output:rows-as-lists", said),
    ])  # fmt: skip
    assert lines[0].startswith("FAIL [producer.async_output:waits-for-device] 1 check(s)")
    assert "values read before they arrived" in lines[1] and len(lines) == 2


def test_a_race_line_keeps_the_fix_and_counts_the_copies_returned_unwaited() -> None:
    from conformance.run.failure_lines import COPY_RULE, failures_by_behaviour

    unwaited = "".join(
        f"; logprobs.{name}: get_output() returned before its copy arrived (no wait covered it)"
        for name in ("logprob_token_ids", "logprobs", "sampled_token_ranks")
    )
    message = (
        "make_async_output(<step race-k5 of 64 requests on a busy simulated npu runtime>)"
        ".get_output() on a simulated npu runtime: NPUAsyncOutput._sampled_cpu, the host copy "
        "of sampled_token_ids, read at my_plugin/worker.py:54 before its copy arrived (its "
        "copy started at my_plugin/worker.py:42 on the step's copy stream); wait first for "
        f"NPUAsyncOutput._copied.synchronize() (recorded after the copy){unwaited}: {COPY_RULE}"
    )
    [line] = failures_by_behaviour([failed("producer.async_output:waits-for-device", message)])
    assert line.endswith(
        "wait first for NPUAsyncOutput._copied.synchronize() (recorded after the copy); "
        "3 more returned unwaited"
    )
    assert "…" not in line


def test_a_cause_whose_own_failures_all_follow_from_another_leaves_no_failure_unlisted() -> None:
    from conformance.run.failure_lines import NOT_A_RACE, failures_by_behaviour

    float_id = "x.get_output().sampled_token_ids[0][0]: expected int 101000, found float 101000.0"
    records = [
        # Ids of the wrong type: the rows' behaviour explains the others saying so, the
        # producer's own included, which would be the cause of its wrong value too.
        failed("producer.async_output:rows-as-lists", float_id),
        failed("producer.async_output", float_id),
        failed("producer.async_output:step-discarded-rows", float_id),
        failed("producer.async_output:waits-for-device", f"x(<step race-k5>): {NOT_A_RACE}: y"),
    ]
    lines = failures_by_behaviour(records)
    listed = sum(int(re.search(r"(\d+) (?:more )?check\(s\)", line)[1]) for line in lines)
    assert listed == len(records), lines


_FOUND_AND_EXPECTED = (
    "make_async_output(<step multi-token-discarded-k5>).get_output().logprobs: request 2 "
    "(req-2) reads the wrong logprobs: slice_request(2, 1) row 0 (its sampled token 0) is ids "
    "[80018, 80019, 80020, 80021, 80022, 80023], logprobs [-2.25, -2.375, -2.5, -2.625, -2.75, "
    "-2.875], rank 4, expected ids [80024, 80025, 80026, 80027, 80028, 80029], logprobs [-3.0, "
    "-3.125, -3.25, -3.375, -3.5, -3.625], rank 5"
)


@pytest.mark.parametrize("width", [300, 180])
def test_a_shortened_line_never_shows_expected_values_as_found(width: int) -> None:
    from conformance.run.failure_lines import shortened

    line = shortened(_FOUND_AND_EXPECTED, width)
    assert len(line) <= width
    # Lists lose their middle items, never spliced into one another.
    assert "[80018, 80019, 80020, … 80025" not in line and "80023, … 80024" not in line
    # The expected values keep their word: no tail of them reads as what was found.
    tail = line.split(" … ", 1)[-1] if " … " in line else line
    assert "[-3.0" not in line or "expected ids [80024, …, 80029]" in line, line
    assert "rank 5" not in tail or "expected" in tail, line
    if width == 300:
        assert "is ids [80018, …, 80023]" in line and "rank 4, expected ids" in line, line


def test_a_shortened_field_list_keeps_what_was_expected_apart_from_what_was_found() -> None:
    from conformance.run.failure_lines import shortened

    fields = [f"field_{i}" for i in range(12)]
    line = (
        f"ModelRunnerOutput: extra (_plugin_step_id): expected fields ({', '.join(fields)}) in "
        f"this order, found ({', '.join([*fields, '_plugin_step_id'])})"
    )
    shown = shortened(line, 180)
    assert len(shown) <= 180
    assert (
        "expected fields (field_0, field_1, field_2, …, field_11) in this order, found (" in shown
    )
    assert shown.endswith(", _plugin_step_id)")
