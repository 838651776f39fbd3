"""The report's "What vLLM changed" section: the text a conformance report judged, its bump."""

from __future__ import annotations

import json
from pathlib import Path

from reports.cli import main

CHANGE = {
    "type": "ModelRunnerOutput", "member": "npu_stream_id", "change": "field added",
    "known": None, "new": "npu_stream_id: int = 0", "module": "vllm.v1.outputs",
    "behaviour": "vllm-change:ModelRunnerOutput.npu_stream_id",
    "superseded_checks": ["conformance/checks/test_model_runner_output.py::surface[fields]"],
}  # fmt: skip


def _report(path: Path, **keys) -> Path:
    data = {
        "schema": "conformance-report/1",
        "spec_revision": "0.33.0",
        "backend": {"name": "my-npu", "module": "m", "version": "1"},
        "suite": {"version": "0.1.0"},
        "platform": {"python": "3.11", "torch": "2", "devices_available": ["cpu"]},
        "summary": {"passed": 1, "failed": 0, "skipped": 0, "xfailed": 0, "xpassed": 0, "errors": 0},
        "tests": [{"nodeid": "conformance/checks/test_x.py::test_y", "spec_type": "SamplerOutput",
                   "check": "y", "behaviour": "SamplerOutput.dataclass", "device": None,
                   "outcome": "passed", "message": "", "skip_cause": None}],
        **keys,
    }  # fmt: skip
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _summary(tmp_path: Path, report: Path) -> str:
    assert main(["--conformance", str(report), "--out", str(tmp_path / "out"), "-q"]) == 0
    return (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")


def test_the_text_judged_and_each_change_are_shown(tmp_path) -> None:
    text = {
        "headline": "vLLM outputs-x.py = nearest known 0.33.0 + 1 change",
        "revision": "0.33.0",
    }
    summary = _summary(
        tmp_path, _report(tmp_path / "r.json", vllm_text=text, vllm_changes=[CHANGE])
    )
    section = summary.partition("## What vLLM changed")[2].partition("\n## ")[0]
    assert "judged against vLLM outputs-x.py = nearest known 0.33.0 + 1 change" in section
    assert (
        "| field added | `ModelRunnerOutput` | `npu_stream_id` | - | npu_stream_id: int = 0 |"
        in section
    )
    assert "`vllm-change:ModelRunnerOutput.npu_stream_id` | 1 |" in section
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "What vLLM changed" in html and "npu_stream_id" in html


def test_a_bump_shows_its_breaks_first_with_a_verdict(tmp_path) -> None:
    bump = {
        "from": "0.32.0", "to": "0.33.0", "breaks": 1, "vllm_changes": [CHANGE],
        "behaviours": [
            {"behaviour": "A.surface", "from": "passed", "to": "failed", "change": "breaks",
             "vllm_changes": ["method added A.m"]},
            {"behaviour": "B.rule", "from": None, "to": "passed", "change": "new", "vllm_changes": []},
        ],
    }  # fmt: skip
    summary = _summary(
        tmp_path, _report(tmp_path / "r.json", vllm_text=None, vllm_changes=[], bump=bump)
    )
    section = summary.partition("## What vLLM changed")[2].partition("\n## ")[0]
    assert "### Bump of `my-npu` from 0.32.0 to 0.33.0" in section
    assert "**FAIL**: moving the pin breaks 1 behaviour(s)" in section
    assert section.index("`A.surface`") < section.index("`B.rule`")
    assert "| **FAIL** breaks | `A.surface` | passed | failed | method added A.m |" in section


def test_a_report_of_a_known_revision_has_no_such_section(tmp_path) -> None:
    summary = _summary(tmp_path, _report(tmp_path / "r.json", vllm_text=None, vllm_changes=[]))
    assert "What vLLM changed" not in summary
