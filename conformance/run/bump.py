"""``--bump-to REVISION_OR_PATH``: what moving a backend's pin would break.

The run judges the backend at the target (B); before it, the backend is judged at its
own revision (A: ``--revision``, else what it declares or was detected, else the
default) in a process of its own.  At the end both verdicts are held side by side,
behaviour by behaviour: a behaviour that fails at B and did not fail at A *breaks*
(a rule B adds that the backend fails included), and so does one failing at both where
a check of it that passed at A fails at B; one that failed at A and does not at
B is *fixed*; the others whose verdict differs are listed after.  The vLLM changes
between A and B come from their texts (a known release's shipped surface, or the text
a path names), else from the revisions' data.  The run exits 1 when something breaks,
else 0 (what fails at both is no news of the bump; the report at A says so).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Set in the run at A: its xfails entries of rules its revision lacks are dropped, as
#: in the run at B (one xfails file serves both sides of a bump).
BUMP_SIDE_ENV = "OUTPUTS_SUITE_BUMP_SIDE"

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
_ORDER = {"breaks": 0, "fixed": 1, "new": 2, "gone": 3, "changed": 4}


@dataclass
class Bump:
    """The two sides of a bump, once the run at A is done."""

    from_label: str
    to_label: str
    from_report: dict[str, Any]
    from_report_path: str | None
    changes: list[Any] = field(default_factory=list)

    def behaviours(self, to_records: list[Any]) -> list[dict[str, Any]]:
        """Each behaviour whose verdict differs, breaks first."""
        from_tests = self.from_report.get("tests", [])
        to_tests = [_record_dict(r) for r in to_records]
        before, after = verdicts(from_tests), verdicts(to_tests)
        newly = newly_failing(from_tests, to_tests)
        rows: list[dict[str, Any]] = []
        for behaviour in sorted(set(before) | set(after)):
            a, b = before.get(behaviour), after.get(behaviour)
            if a == b and not newly.get(behaviour):
                continue
            row: dict[str, Any] = {
                "behaviour": behaviour,
                "from": a,
                "to": b,
                # failing at both, yet a check of it that passed at A fails at B
                "change": _kind(a, b) if a != b else "breaks",
                "vllm_changes": [c.describe() for c in self._changes_of(behaviour)],
            }
            if newly.get(behaviour):
                row["newly_failing"] = newly[behaviour]
            rows.append(row)
        rows.sort(key=lambda r: (_ORDER[str(r["change"])], str(r["behaviour"])))
        return rows

    def _changes_of(self, behaviour: str) -> list[Any]:
        """The vLLM changes a behaviour is about: those of its type (and member, if named)."""
        name = behaviour.removeprefix("vllm-change:")
        type_name, _, rest = name.partition(".")
        member = rest.split(":", 1)[0]
        of_type = [c for c in self.changes if c.type == type_name]
        named = [c for c in of_type if c.member and c.member == member]
        return named or of_type

    def report_key(self, to_records: list[Any]) -> dict[str, Any]:
        rows = self.behaviours(to_records)
        return {
            "from": self.from_label,
            "to": self.to_label,
            "from_revision": self.from_report.get("spec_revision"),
            "from_summary": self.from_report.get("summary"),
            "from_report": self.from_report_path,
            "vllm_changes": [c.to_json() for c in self.changes],
            "handover": handover_changes(self.from_label, self.to_label),
            "behaviours": rows,
            "breaks": sum(r["change"] == "breaks" for r in rows),
        }


def handover_changes(pin: str | None, target: str | None) -> list[str]:
    """What moving the pin changes in what vLLM's runner hands a producer over, beside
    the types: the runner that builds the step, and that runner's step."""
    from conformance.backends.step import MODEL_RUNNER_V2
    from conformance.producers.runners import FIRST_RUNNER_REMOVED, default_runner, release_of

    before, after = default_runner(pin), default_runner(target)
    if before is None or after is None:
        return []
    lines = []
    if before["runner"] != after["runner"]:
        lines.append(
            f"the default runner: {before['runner']} -> {after['runner']} ({after['why']})"
        )
    gone = [(release_of(v) or (0, 0)) >= FIRST_RUNNER_REMOVED for v in (pin, target)]
    # A plugin shaped like the first runner was judged on that runner's step at the pin,
    # whichever runner was the default: where the first runner goes, its step goes too.
    if after["runner"] == MODEL_RUNNER_V2 and (
        before["runner"] != MODEL_RUNNER_V2 or gone == [False, True]
    ):
        lines.append(
            "the step: the sampled ids past each request's num_sampled hold what the device "
            "left, unpadded by count (not -1, never filtered by value); the logprobs a row "
            "per logits row, cu_num_generated_tokens = cu_num_logits"
        )
    if gone == [False, True]:
        lines.append(
            "the first runner is gone: vLLM's runner builds its async output with Model "
            "Runner V2's constructor (model_runner_output, sampler_output, "
            "num_sampled_tokens, main_stream, copy_stream); one shaped like "
            "AsyncGPUModelRunnerOutput serves only a runner of the plugin's own, and is "
            "judged on the -1-padded step such a runner holds"
        )
    return lines


def _record_dict(record: Any) -> dict[str, Any]:
    return {"behaviour": record.behaviour, "outcome": record.outcome, "nodeid": record.nodeid}


def verdicts(tests: list[dict[str, Any]]) -> dict[str, str]:
    """``{behaviour: passed | failed | skipped}``: failed when any check of it failed (or
    errored, or a declared deviation is gone), passed when one passed, else skipped."""
    found: dict[str, str] = {}
    for test in tests:
        behaviour = str(test.get("behaviour") or test.get("nodeid"))
        verdict = _verdict(test.get("outcome"))
        held = found.get(behaviour)
        if held == FAILED or (held == PASSED and verdict == SKIPPED):
            continue
        found[behaviour] = verdict
    return found


def newly_failing(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, int]:
    """``{behaviour: how many of its checks}`` that passed at A and fail at B, by check:
    a behaviour already failing at A still breaks where more of its checks fail."""
    passed = {str(t.get("nodeid")) for t in before if _verdict(t.get("outcome")) == PASSED}
    found: dict[str, int] = {}
    for test in after:
        if _verdict(test.get("outcome")) == FAILED and str(test.get("nodeid")) in passed:
            behaviour = str(test.get("behaviour") or test.get("nodeid"))
            found[behaviour] = found.get(behaviour, 0) + 1
    return found


def _verdict(outcome: object) -> str:
    if outcome in ("failed", "error", "xpassed"):
        return FAILED
    return PASSED if outcome in ("passed", "xfailed") else SKIPPED


def _kind(a: str | None, b: str | None) -> str:
    if b == FAILED and a != FAILED:
        return "breaks"
    if a == FAILED and b == PASSED:
        return "fixed"  # failing, then not judged (a rule gone, a check not built): changed
    if a is None:
        return "new"
    if b is None:
        return "gone"
    return "changed"


def run_from_side(
    backend_spec: str,
    revision: str,
    xfails: str | None,
    report: Path,
    check_timeout: float | None,
    cwd: Path,
    selection: list[str] | None = None,
    pythonpath: tuple[str | None] | None = None,
) -> dict[str, Any]:
    """The backend judged at ``revision`` (A) in a process of its own; its report.
    ``selection`` (``-k``/``-m`` of the run at B) selects the same checks; ``pythonpath``
    (one value, None: unset) the ``PYTHONPATH`` it starts with, where the run at B put
    the target's vLLM first on its own."""
    command = [
        sys.executable, "-m", "pytest", "--pyargs", "conformance", "-q",
        "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
        f"--conformance-backend={backend_spec}", f"--conformance-revision={revision}",
        f"--conformance-report={report}",
    ]  # fmt: skip
    if xfails is not None:
        command.append(f"--conformance-xfails={xfails}")
    if check_timeout is not None:
        command.append(f"--conformance-check-timeout={check_timeout}")
    command += selection or []
    environment = {**os.environ, BUMP_SIDE_ENV: "1"}
    if pythonpath is not None:
        environment.pop("PYTHONPATH", None)
        if pythonpath[0] is not None:
            environment["PYTHONPATH"] = pythonpath[0]
    environment.pop("PYTEST_ADDOPTS", None)
    environment.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, check=False
    )
    if not report.is_file():
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        raise BumpError(
            f"the backend could not be judged at {revision} "
            f"(exit {done.returncode}: {lines[-1] if lines else 'no output'})"
        )
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return data


class BumpError(RuntimeError):
    """The run at A gave no report (the message says why, in one line)."""


def from_report_path(main_report: str | None, base: Path) -> Path:
    """Where the report at A goes: beside the main report (``report.bump-from.json``),
    else a temporary file."""
    if main_report is None:
        return Path(tempfile.mkdtemp(prefix="conformance-bump-")) / "report.bump-from.json"
    path = base / main_report
    return path.with_name(f"{path.stem}.bump-from{path.suffix or '.json'}")


def terminal_lines(key: dict[str, Any]) -> list[str]:
    """The bump, for the terminal: the vLLM changes, then each differing verdict."""
    lines = [f"bump from {key['from']} to {key['to']}:"]
    changes = key["vllm_changes"]
    lines.append(f"  vLLM changes between them: {len(changes)}")
    for change in changes:
        where = f"{change['type']}.{change['member']}" if change["member"] else change["type"]
        lines.append(
            f"    {change['change']} {where}: {change['known'] or '-'} -> {change['new'] or '-'}"
        )
    handover = key.get("handover") or []
    if handover:
        lines.append(f"  what the runner hands over changes: {len(handover)}")
        lines += [f"    {line}" for line in handover]
    rows = key["behaviours"]
    lines.append(f"  behaviours whose verdict differs: {len(rows)}")
    for row in rows:
        because = f" ({'; '.join(row['vllm_changes'])})" if row["vllm_changes"] else ""
        before, more = row["from"] or "not judged", ""
        if row.get("newly_failing") and row["from"]:
            more = f", {row['newly_failing']} check(s) passing at {key['from']} now fail"
        elif row.get("newly_failing"):
            # A behaviour the target names anew: its checks were another's at the pin.
            before = f"not a behaviour at {key['from']}"
            more = (
                f", its {row['newly_failing']} check(s) passed at {key['from']} "
                "under another behaviour"
            )
        lines.append(
            f"    {row['change'].upper():<7} {row['behaviour']}: {before} -> "
            f"{row['to'] or 'not judged'}{more}{because}"
        )
    verdict = (
        f"moving the pin breaks {key['breaks']} behaviour(s)"
        if key["breaks"]
        else "moving the pin breaks nothing"
    )
    lines.append(f"bump: {verdict}")
    if key.get("from_report"):
        lines.append(f"bump: the report at the pin {key['from']} written to {key['from_report']}")
    return lines
