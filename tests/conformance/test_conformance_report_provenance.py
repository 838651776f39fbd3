"""Every report says where it ran: the machine, its devices, the vLLM judged, the run."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.report.provenance import (
    WORKERINPUT_KEY,
    RunStamp,
    machine_name,
    vllm_judged,
)
from conformance.run import activation, session

ONE_CHECK = "test_logprobs_lists_slice.py::test_slice_of_empty_batch"

needs_texts = pytest.mark.skipif(not RELEASES.is_dir(), reason=SKIP_REASON)
STARTED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_the_report_names_the_machine_its_devices_and_the_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OUTPUTS_MACHINE", "box-a")
    monkeypatch.setenv("OUTPUTS_RUN_ID", "ci-1234-1")
    run = suite_runner.in_process(tmp_path, suite_runner.check_path(ONE_CHECK))
    report = run.report
    assert report["machine"]["name"] == "box-a"
    assert report["machine"]["name_source"] == "OUTPUTS_MACHINE"
    assert report["machine"]["os"] == platform.platform()
    cpu = [d for d in report["machine"]["devices"] if d["type"] == "cpu"]
    assert len(cpu) == 1 and cpu[0]["name"] and cpu[0]["index"] is None
    assert {d["type"] for d in report["machine"]["devices"]} == set(
        report["platform"]["devices_available"]
    )
    assert report["run"]["id"] == "ci-1234-1"
    assert STARTED.match(report["run"]["started"])
    # The reference holds no vLLM code.
    assert report["vllm"] == {"version": None, "distribution": None, "text": None}
    # The keys DESIGN.md names stay as they were.
    assert report["platform"]["python"] == platform.python_version()


def test_without_outputs_machine_the_host_name_is_the_machine(monkeypatch) -> None:
    monkeypatch.delenv("OUTPUTS_MACHINE", raising=False)
    name, source = machine_name()
    assert source == "host name" and name == (os.uname().nodename if hasattr(os, "uname") else name)
    monkeypatch.setenv("OUTPUTS_MACHINE", "  gpu-runner-3 ")
    assert machine_name() == ("gpu-runner-3", "OUTPUTS_MACHINE")


def test_a_run_id_is_made_once_and_an_xdist_worker_takes_its_controllers(monkeypatch) -> None:
    monkeypatch.delenv("OUTPUTS_RUN_ID", raising=False)
    first, second = RunStamp.new(), RunStamp.new()
    assert first.id != second.id  # two runs in the same second still differ
    assert STARTED.match(first.started)
    # The controller hands its stamp to each worker it starts; a worker uses it.
    controller = session.ConformanceRun.__new__(session.ConformanceRun)
    controller.provenance = SimpleNamespace(stamp=first)
    node = SimpleNamespace(workerinput={})
    controller.pytest_configure_node(node)
    worker_config = SimpleNamespace(workerinput=node.workerinput)
    assert activation._run_stamp(worker_config) == first
    # Without one handed over (serial, or the controller itself) the run makes its own.
    assert activation._run_stamp(SimpleNamespace()) != first
    assert WORKERINPUT_KEY in node.workerinput


@needs_texts
def test_a_release_text_judged_is_named_with_its_version() -> None:
    # vllm-release:X loads the text under a module name of its own (its producers,
    # which cost seconds to load, are not what the report asks about).
    from conformance.backends.known import release_module_name
    from conformance.releases.texts import load_outputs_module

    text = RELEASES / "outputs-0.12.0.py.txt"
    module = load_outputs_module(text, release_module_name("0.12.0"))
    judged = vllm_judged(SimpleNamespace(module=module, version="0.12.0"))
    assert judged == {"version": "0.12.0", "distribution": None, "text": str(text)}


@needs_texts
def test_a_release_laid_out_as_vllm_is_named_by_its_text(tmp_path) -> None:
    # --vllm-outputs lays the text out as an installed vllm: the report names the text.
    from conformance.releases.texts import write_stub_tree

    text = RELEASES / "outputs-0.13.0.py.txt"
    write_stub_tree(text, "0.13.0", tmp_path)
    # Only what the report asks of the installed vllm, not vllm_backend(): importing the
    # release's producers costs seconds.
    code = (
        "from types import SimpleNamespace as N\n"
        "from conformance.report.provenance import vllm_judged\n"
        "none = dict.fromkeys(['pad_sampled_token_ids', 'unpad_sampled_token_ids',\n"
        "                      'gather_logprobs', 'make_async_output'])\n"
        "print(vllm_judged(N(module=N(__name__='vllm.v1.outputs'), **none)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(
        {"version": "0.13.0", "distribution": None, "text": str(text.resolve())}
    )
