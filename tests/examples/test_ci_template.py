"""The backend CI template (examples/npu_plugin): its workflow's matrix and jobs, and its
nox sessions merge, diff and shard as the workflow relies on.

The template's sessions run here under a stand-in for nox (the project's test
environment has no nox): each ``session.run`` is a real process, ``session.install``
does nothing (the suite and the plugin are importable already).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from conformance.oracle.revisions import known_revisions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "npu_plugin"
WORKFLOW = EXAMPLE / ".github" / "workflows" / "conformance.yml"
sys.path.insert(0, str(ROOT / "tests" / "reports"))
from conformance_reports import write_report  # noqa: E402


class SessionFailed(Exception):
    pass


class FakeSession:
    """What the template's sessions use of ``nox.Session``."""

    def __init__(self, *posargs: str) -> None:
        self.posargs = list(posargs)
        # As nox's: None unsets a variable (nox sets PYTHONHOME so in a virtualenv).
        self.env: dict[str, str | None] = {"PYTHONPATH": str(EXAMPLE), "PYTHONHOME": None}
        self.bin = str(Path(sys.executable).parent)
        self.logs: list[str] = []
        self.output = ""
        self.venv_backend = "uv"  # a virtualenv of its own, as in CI

    def install(self, *args: str) -> None:
        pass

    def run(self, *args: str, **_: object) -> None:
        command = [sys.executable if args[0] == "python" else args[0], *args[1:]]
        environment = {k: v for k, v in {**os.environ, **self.env}.items() if v is not None}
        environment.pop("PYTEST_XDIST_WORKER", None)
        done = subprocess.run(command, env=environment, capture_output=True, text=True)
        self.output += done.stdout + done.stderr
        if done.returncode:
            raise SessionFailed(f"{args[:4]} exited {done.returncode}: {self.output[-2000:]}")

    def log(self, message: str) -> None:
        self.logs.append(message)

    def error(self, message: str) -> None:
        raise SessionFailed(message)


@pytest.fixture
def template(tmp_path, monkeypatch):
    """The template's noxfile, imported with a stand-in nox, writing under tmp_path."""
    stub = types.ModuleType("nox")
    stub.session = lambda func=None, **_: func if func is not None else (lambda f: f)  # type: ignore[attr-defined]
    stub.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    stub.Session = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nox", stub)
    monkeypatch.setenv("OUTPUTS_CONFORMANCE_OUT", str(tmp_path / "conformance-out"))
    spec = importlib.util.spec_from_file_location("npu_plugin_noxfile", EXAMPLE / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads a bare `on` as true
    return data


def test_the_crater_reads_the_examples_pin_from_its_metadata(monkeypatch) -> None:
    from conformance.crater.pins import pin_of
    from conformance.crater.sources import plugin_source
    from conformance.crater.uses import read_plugin

    monkeypatch.syspath_prepend(str(EXAMPLE))
    from example_npu_plugin.outputs import PINNED_RELEASE

    # A plugin's crater run on its own folder judges it at the vLLM it declares.
    source = plugin_source(str(EXAMPLE))
    assert pin_of(source, read_plugin(source.files), None).release == PINNED_RELEASE


def test_the_matrix_is_the_pinned_release_and_its_neighbours_on_each_runner(template, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from example_npu_plugin.outputs import PINNED_RELEASE

    assert template.PINNED_RELEASE == PINNED_RELEASE
    names = [n for n in known_revisions() if n != "2025.10"]  # releases, in order
    at = names.index(PINNED_RELEASE)
    assert tuple(names[at - 1 : at + 2]) == template.MATRIX_RELEASES
    job = _workflow()["jobs"]["conformance"]
    matrix = job["strategy"]["matrix"]
    assert tuple(matrix["release"]) == template.MATRIX_RELEASES
    assert job["strategy"]["fail-fast"] is False
    # A CPU runner and the device runner; a repository variable switches the device off.
    assert (
        '\'["cpu", "npu"]\'' in matrix["runner"]
        and "OUTPUTS_DEVICE_LEG == 'off'" in (matrix["runner"])
    )
    assert '["self-hosted", "npu"]' in job["runs-on"] and "ubuntu-latest" in job["runs-on"]
    # Only the pinned release gates.
    assert job["continue-on-error"] == f"${{{{ matrix.release != '{PINNED_RELEASE}' }}}}"
    steps = job["steps"]
    run = next(s for s in steps if "-s conformance" in s.get("run", ""))
    # The device's leg keeps its runner's interpreter (its torch); the CPU leg a venv.
    assert run["run"] == "nox ${{ matrix.runner == 'npu' && '--no-venv' || '' }} -s conformance"
    setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["if"] == "matrix.runner != 'npu'"
    assert run["env"]["OUTPUTS_REVISION"] == "${{ matrix.release }}"
    assert run["env"]["OUTPUTS_MACHINE"] == "${{ matrix.runner }}"  # stable from run to run
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["name"] == "report-${{ matrix.release }}-${{ matrix.runner }}"
    assert upload["if"] == "always()"
    assert set(upload["with"]["path"].split()) == {
        "conformance-out/report.json",
        "conformance-out/report/report.html",
    }


def test_the_workflow_runs_on_push_pull_request_weekly_and_by_hand():
    data = _workflow()
    assert set(data["on"]) == {"push", "pull_request", "schedule", "workflow_dispatch"}
    assert data["on"]["schedule"][0]["cron"]
    jobs = data["jobs"]
    assert set(jobs) == {"conformance", "merge", "vllm-head"}
    merge = jobs["merge"]
    assert merge["needs"] == "conformance" and merge["if"] == "always()"
    download = next(s for s in merge["steps"] if "download-artifact" in s.get("uses", ""))
    # Every leg's report and nothing else (vllm-head's and the matrix's names differ).
    assert download["with"]["pattern"] == "report-*"
    assert any(s.get("run") == "nox -s merge -- reports base" for s in merge["steps"])
    fetch = next(s for s in merge["steps"] if "gh run download" in s.get("run", ""))
    assert "--name conformance-matrix" in fetch["run"] and "no diff this time" in fetch["run"]
    uploaded = [s["with"]["name"] for s in merge["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploaded == ["conformance-matrix"]
    head = jobs["vllm-head"]
    assert "needs" not in head and head["continue-on-error"] is True
    assert head["if"] == (
        "github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'"
    )
    assert any(s.get("run") == "nox -f noxfile.py -s vllm-head" for s in head["steps"])
    upload = next(s for s in head["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "conformance-out/vllm-head/"
    assert not upload["with"]["name"].startswith("report-")


def test_every_session_the_workflow_runs_is_the_templates(template):
    runs = [s["run"] for job in _workflow()["jobs"].values() for s in job["steps"] if "run" in s]
    named = {
        line.split(" -s ")[1].split()[0] for r in runs for line in r.splitlines() if " -s " in line
    }
    assert named == {"conformance", "merge", "vllm-head"}
    # nox names a session after its function, with the dashes the function cannot have.
    assert all(callable(getattr(template, name.replace("-", "_"))) for name in named)


@pytest.mark.skipif(
    shutil.which("actionlint") is None or importlib.util.find_spec("check_jsonschema") is None,
    reason="actionlint or check-jsonschema is not installed here (nox -s lint runs both)",
)
def test_actionlint_and_githubs_schema_pass_the_workflow():
    # CI runs both over every workflow file in `nox -s lint`; here, when installed.
    subprocess.run(["actionlint", str(WORKFLOW)], check=True, capture_output=True)
    subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         str(WORKFLOW)],
        check=True, capture_output=True,
    )  # fmt: skip


def test_a_first_merge_says_there_is_no_base_and_the_next_diffs_against_it(template, tmp_path):
    first = tmp_path / "run-1"
    write_report(first / "report-0.12.0-cpu" / "report.json", machine="cpu", run_id="1")
    (tmp_path / "empty").mkdir()  # the fetch step found no earlier matrix
    session = FakeSession(str(first), str(tmp_path / "empty"))
    template.merge(session)
    assert any("a first run; the matrix is written, the diff is not" in m for m in session.logs)
    merged = template.OUT / "merged"
    assert (merged / "report.html").is_file() and (merged / "conformance-matrix.csv").is_file()
    assert not (merged / "conformance-diff.md").exists()
    # The next run: its merge job downloads that matrix as BASE.
    base = tmp_path / "base"
    shutil.copytree(merged, base)
    second = tmp_path / "run-2"
    write_report(
        second / "report-0.12.0-cpu" / "report.json",
        machine="cpu",
        run_id="2",
        outcomes={"ModelRunnerOutput.pickle": "failed"},
    )
    with pytest.raises(SessionFailed):  # something newly fails: the merge job goes red
        template.merge(FakeSession(str(second), str(base)))
    diff = (merged / "conformance-diff.md").read_text(encoding="utf-8")
    assert "`ModelRunnerOutput.pickle` in example-npu · 0.1.0 · 0.12.0 · any · cpu" in diff
    assert "1 newly failing" in diff


def test_the_local_shards_merge_into_exactly_what_each_leg_held(template, tmp_path, monkeypatch):
    # The real legs, in parallel, each narrowed to a few checks to keep this test short.
    # (the unpadding checks stay: the example's xfails entry is for one of them).
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k 'pickle or unpad'")
    session = FakeSession()
    template.shards(session)
    root = template.OUT / "shards"
    reports = [json.loads((root / r / "report.json").read_text()) for r in template.MATRIX_RELEASES]
    assert [r["spec_revision"] for r in reports] == list(template.MATRIX_RELEASES)
    assert "merged matrix: " in session.output and "DIFFERS" not in session.output
    for release in template.MATRIX_RELEASES:
        assert f"{root / release / 'report.json'}: " in session.output
    assert len({r["run"]["id"] for r in reports}) == 3  # three runs, three ids
    assert any("shard 0.12.0: exit 0" in m for m in session.logs)
