"""A report of conformance runs alone reads like one: its verdict first, no benchmark
verdict, its known deviations named with their reasons, failing behaviours cause first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conformance_reports import report_data

from reports.cli import EXIT_OK, main

RULE = "LogprobsLists.slice_request"
PICKLE = "ModelRunnerOutput.pickle"
WAITS = "producer.async_output:waits-for-device"
GATHER = "producer.gather_logprobs"


def _render(tmp_path: Path, data: dict) -> tuple[str, str]:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["--quiet", "--conformance", str(report), "--out", str(out)]) == EXIT_OK
    return (out / "report.html").read_text(encoding="utf-8"), (out / "summary.md").read_text(
        encoding="utf-8"
    )


def _with_xfails(data: dict, reasons: dict[str, str]) -> dict:
    """Each check of a behaviour in ``reasons`` xfailed by its entry, as the suite writes it."""
    for test in data["tests"]:
        if test["behaviour"] in reasons:
            test["outcome"] = "xfailed"
            test["message"] = f"{reasons[test['behaviour']]} [behaviour={test['behaviour']}]"
    return data


@pytest.fixture(autouse=True)
def _no_benchmark_results(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .asv/results here


def test_a_conformance_report_leads_with_its_verdict_and_no_benchmark_one(tmp_path) -> None:
    page, summary = _render(tmp_path, report_data())
    assert "<h1>Conformance report: vLLM model-runner output types</h1>" in page
    verdicts = summary.partition("## Verdict")[2].partition("\n## ")[0]
    assert [line for line in verdicts.splitlines() if line.startswith("- ")] == [
        "- Conformance of backend `example-npu`: **PASS** (9 passed, 0 failed or errored, "
        "0 skipped)"
    ]
    assert "no data" not in page and "no data" not in summary
    assert "ok / skipped / failed" not in page  # no empty machine table
    assert "How these numbers were measured" not in page


def test_the_verdict_counts_known_deviations_and_the_unexplained(tmp_path) -> None:
    data = _with_xfails(
        report_data(),
        {RULE: "TODO: 3 check(s) failed, first: expected [0, 1]", PICKLE: "we pickle lazily"},
    )
    page, summary = _render(tmp_path, data)
    assert (
        "- Conformance of backend `example-npu`: **PASS** (with 2 known deviations "
        "(1 unexplained); 4 passed, 5 xfailed, 0 failed or errored, 0 skipped)"
    ) in summary
    assert '<strong class="badge pass">PASS</strong>' in page
    assert "with 2 known deviations (1 unexplained)" in page
    deviations = summary.partition("### Known deviations of `example-npu` at 0.12.0")[2]
    lines = [line for line in deviations.splitlines() if line.startswith("| `")]
    assert lines[0].startswith(f"| `{RULE}` | `behaviour={RULE}` | 3 | **unexplained**")
    assert "TODO: 3 check(s) failed, first: expected [0, 1]" in lines[0]
    assert lines[1] == f"| `{PICKLE}` | `behaviour={PICKLE}` | 2 | we pickle lazily |"


def test_failing_behaviours_are_listed_cause_first_as_the_terminal_does(tmp_path) -> None:
    data = report_data(outcomes={GATHER: "failed", WAITS: "failed", RULE: "failed"})
    _, summary = _render(tmp_path, data)
    section = summary.partition("### Failing behaviours of `example-npu` at 0.12.0")[2]
    rows = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{WAITS}`", f"| `{RULE}`", f"| `{GATHER}`"]
    checks = summary.partition("### Failing checks of `example-npu` at 0.12.0")[2]
    first = next(line for line in checks.splitlines() if line.startswith("| failed"))
    assert WAITS in first  # the cause's check heads the table too


def test_a_failing_behaviours_message_is_shown_whole_with_the_backends_line(tmp_path) -> None:
    # Its end names the backend's file and line, and what to wait for: the fix.
    data = report_data(outcomes={WAITS: "failed"})
    message = (
        f"[{WAITS}] make_async_output(<step race-k5 of 64 requests on a busy simulated npu "
        "runtime>).get_output(): sampled_token_ids read at my_plugin/worker.py:51 before its "
        "copy arrived; wait first for NPUAsyncOutput.copy_event.synchronize()"
    )
    for test in data["tests"]:
        if test["behaviour"] == WAITS:
            test["message"] = message
    page, summary = _render(tmp_path, data)
    section = summary.partition("### Failing behaviours of `example-npu` at 0.12.0")[2]
    assert "my_plugin/worker.py:51" in section and "copy_event.synchronize()" in section
    assert "my_plugin/worker.py:51" in page


def test_a_symptom_names_the_cause_of_its_producer(tmp_path) -> None:
    behaviours = {
        WAITS: ("module", ("npu-simulated",)),
        "producer.async_output:sampled-rows": ("module", ("npu-simulated",)),
    }
    data = report_data(behaviours=behaviours, outcomes=dict.fromkeys(behaviours, "failed"))
    _, summary = _render(tmp_path, data)
    assert f"`producer.async_output:sampled-rows` (may follow from `{WAITS}`, above)" in summary


def test_the_html_orders_causes_as_the_terminal_does() -> None:
    # One list of causes, read by both sides from the schema file.
    from conformance.run.failure_lines import CAUSES
    from reports.conformance_schema import CAUSE_BEHAVIOURS

    assert CAUSES == CAUSE_BEHAVIOURS


def test_the_readmes_install_line_brings_what_rendering_needs() -> None:
    # The README says to render with python -m reports; its quickstart installs for it.
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert "python -m reports --conformance report.json" in readme
    quickstart = readme.partition("## Quickstart")[2].partition("\n## ")[0]
    [install] = [line for line in quickstart.splitlines() if line.startswith("pip install")]
    assert install.endswith("'./vllm-outputs-suite[reports]'")
