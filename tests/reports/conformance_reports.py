"""Small conformance reports (schema conformance-report/1) made by hand, for the matrix
and diff tests: a few behaviours with a few checks each, on chosen keys and outcomes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

#: behaviour -> (spec type, devices of its checks; None: a device-independent check)
BEHAVIOURS: dict[str, tuple[str, tuple[str | None, ...]]] = {
    "LogprobsLists.slice_request": ("LogprobsLists", (None, None, None)),
    "ModelRunnerOutput.pickle": ("ModelRunnerOutput", (None, None)),
    "producer.gather_logprobs": ("module", ("cpu", "cpu", "npu")),
    "producer.async_output:waits-for-device": ("module", ("npu-simulated",)),
}
SUMMARY_KEYS = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
    "error": "errors",
}


def report_data(
    *,
    backend: str = "example-npu",
    version: str | None = "0.1.0",
    revision: str = "0.12.0",
    machine: str | None = "box-a",
    started: str = "2025-10-20T10:00:00Z",
    run_id: str = "run-1",
    outcomes: dict[str, str] | None = None,
    behaviours: dict[str, tuple[str, tuple[str | None, ...]]] | None = None,
) -> dict[str, Any]:
    """A report whose checks all pass but those ``outcomes`` names (behaviour -> outcome,
    or ``behaviour@device`` -> outcome for its checks on one device)."""
    outcomes = outcomes or {}
    tests = []
    for behaviour, (spec_type, devices) in (behaviours or BEHAVIOURS).items():
        for index, device in enumerate(devices):
            outcome = outcomes.get(f"{behaviour}@{device}", outcomes.get(behaviour, "passed"))
            name = behaviour.replace(".", "_").replace(":", "_").replace("-", "_")
            suffix = f"[{device}]" if device else ""
            tests.append(
                {
                    "nodeid": f"conformance/checks/test_{name}.py::test_{index}{suffix}",
                    "spec_type": spec_type,
                    "check": str(index),
                    "behaviour": behaviour,
                    "device": device,
                    "outcome": outcome,
                    "message": f"[{behaviour}] broken" if outcome in ("failed", "error") else "",
                    "skip_cause": "device-not-present" if outcome == "skipped" else None,
                }
            )
    counts = Counter(t["outcome"] for t in tests)
    data: dict[str, Any] = {
        "schema": "conformance-report/1",
        "spec_revision": revision,
        "spec_revision_source": "given",
        "backend": {"name": backend, "module": f"{backend}.outputs", "version": version},
        "suite": {"version": "0.1.0"},
        "platform": {"python": "3.11.7", "torch": "2.13.0+cpu", "devices_available": ["cpu"]},
        "summary": {key: counts.get(outcome, 0) for outcome, key in SUMMARY_KEYS.items()},
        "tests": sorted(tests, key=lambda t: t["nodeid"]),
        "run": {"id": run_id, "started": started},
        "vllm": {"version": None, "distribution": None, "text": None},
    }
    if machine is not None:
        data["machine"] = {
            "name": machine,
            "name_source": "OUTPUTS_MACHINE",
            "os": "Linux-6.8-x86_64",
            "devices": [{"type": "cpu", "index": None, "name": "AMD EPYC 7763"}],
        }
    return data


def write_report(path: Path, **keys: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report_data(**keys)), encoding="utf-8")
    return path
