"""A backend that hangs or kills the process still gets a complete report, in bounded time.

Each run is ``python -m conformance`` in a subprocess (the way a backend author runs
it) on a few checks: the culprit, and checks that must keep their normal outcome.
"""

from __future__ import annotations

import re
import time

import pytest
import suite_runner

from conformance.report.schema import SUMMARY_KEYS

ASYNC_CHECK = (
    "conformance/checks/test_producer_async_output.py::"
    "test_get_output_gives_the_runner_output_with_its_rows[cpu-one-token-per-request]"
)
TOLISTS_CHECK = (
    "conformance/checks/test_logprobs_tensors_tolists.py::"
    "test_tolists_gives_python_lists_of_python_numbers[cpu-0x1]"
)
# Well under the subprocess limit of suite_runner, on 2 busy cores.
BOUND_S = 240


def _run(tmp_path, backend: str, *args: str, quiet: bool = True) -> tuple[suite_runner.Run, float]:
    started = time.monotonic()
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", backend, *(["-q"] if quiet else []), *args, module="conformance"
    )
    return run, time.monotonic() - started


def _normal(record: dict) -> bool:
    """Passed, or skipped as with the reference (a device this machine lacks, a constant
    its module leaves out)."""
    return record["outcome"] == "passed" or (
        record["outcome"] == "skipped"
        and record["skip_cause"] in ("device-not-present", "optional-name-absent")
    )


def _by_nodeid(run: suite_runner.Run) -> dict[str, dict]:
    assert run.report is not None, f"no report written:\n{run.output[-3000:]}"
    return {t["nodeid"]: t for t in run.report["tests"]}


def test_get_output_that_never_returns_fails_its_check_and_the_run_goes_on(tmp_path) -> None:
    run, elapsed = _run(
        tmp_path,
        "broken_backends.hang_get_output:BACKEND",
        "--check-timeout",
        "2",
        "-k",
        "test_get_output_gives_the_runner_output_with_its_rows and cpu-one-token-per-request "
        "or test_module or test_sampler_output",
        quiet=False,
    )
    assert elapsed < BOUND_S
    assert run.exit_code == 1, run.output[-3000:]
    # The warm-up call hung too: bounded (5 x the check limit), and the header says so.
    assert "make_async_output did not finish within 10 s (left running)" in run.output
    tests = _by_nodeid(run)
    hung = tests[ASYNC_CHECK]
    assert hung["outcome"] == "failed"
    assert "timed out after 2 s (--check-timeout" in hung["message"]
    assert "get_output()" in hung["message"] and "hang_get_output.py" in hung["message"]
    others = [t for n, t in tests.items() if n != ASYNC_CHECK]
    assert others and all(_normal(t) for t in others)
    assert run.report["summary"]["failed"] == 1


def test_segfault_in_tolists_leaves_a_complete_report_naming_the_check(tmp_path) -> None:
    run, elapsed = _run(
        tmp_path,
        "broken_backends.crash_tolists",
        "-k",
        "tolists_gives_python_lists_of_python_numbers or test_draft_token_ids",
    )
    assert elapsed < BOUND_S
    assert run.exit_code != 0
    tests = _by_nodeid(run)
    crashed = tests[TOLISTS_CHECK]
    assert crashed["outcome"] == "error"
    assert "killed by SIGSEGV" in crashed["message"]
    assert "crash_tolists.py" in crashed["message"] and "in tolists" in crashed["message"]
    before = [t for n, t in tests.items() if "test_draft_token_ids.py" in n]
    assert before and all(_normal(t) for t in before)  # ran before the crash
    not_run = [t for t in tests.values() if t["skip_cause"] == "not-run"]
    assert not_run and all("--isolate" in t["message"] for t in not_run)
    summary = run.report["summary"]
    assert sum(summary[key] for key in SUMMARY_KEYS.values()) == len(tests)


def test_os_exit_in_a_constructor_fails_only_that_check_with_isolate(tmp_path) -> None:
    run, elapsed = _run(
        tmp_path,
        "broken_backends.crash_exit_in_constructor:BACKEND",
        "--isolate",
        "-k",
        "test_get_output_gives_the_runner_output_with_its_rows and cpu-one-token-per-request "
        "or test_sampler_output",
    )
    assert elapsed < BOUND_S
    assert run.exit_code == 1, run.output[-3000:]
    tests = _by_nodeid(run)
    crashed = tests[ASYNC_CHECK]
    assert crashed["outcome"] == "error"
    assert "exited with status 1" in crashed["message"]
    after = [t for n, t in tests.items() if "test_sampler_output.py" in n]
    assert after and all(_normal(t) for t in after)  # ran after the crash, in a new worker
    assert run.report["summary"]["errors"] == 1
    # The terminal counts the crash as the report does: an error, not a failure.
    [totals] = re.findall(r"^=* ?(\d+ \w+.* in [\d.]+s)\b", run.output, re.MULTILINE)
    assert re.search(r"\b1 error\b", totals) and "failed" not in totals, totals
    # The first worker died warming the constructor up; its replacement skipped warm-up
    # (a replacement may be replacing exactly that death) and ran the checks.


@pytest.mark.parametrize("status", [1, 4])
def test_os_exit_in_the_warm_up_names_the_producer_and_isolate(tmp_path, status: int) -> None:
    # Without --isolate the process dies in the producer's first call, before any check
    # and before the terminal was flushed: the supervisor says where, and what to do; the
    # run fails (1), whatever status the backend chose (4 would read as bad input).
    name = "BACKEND" if status == 1 else f"STATUS_{status}"
    run, _ = _run(
        tmp_path, f"broken_backends.crash_exit_in_constructor:{name}", "-k", "test_sampler_output"
    )
    assert run.exit_code == 1, run.output[-3000:]
    assert (
        "conformance: the run died in the warm-up, in the first call of the backend's "
        f"make_async_output: the process exited with status {status} (os._exit(), exit() or abort "
        "handling in native code); python -m conformance --isolate judges it"
    ) in run.output
