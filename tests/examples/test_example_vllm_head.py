"""The example's ``vllm-head`` watcher: the plugin at its pin and at vLLM's newest.

The session's command (``head_command`` of ``examples/npu_plugin/noxfile.py``) is run
against a source tree shaped like vLLM's main (the 0.33.0 texts, laid out as a
checkout), standing in for the wheel the session downloads.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "npu_plugin"
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
import vllm_texts  # noqa: E402


@functools.cache
def _template():
    # Once: nox keeps a registry of sessions, and registering one twice warns.
    spec = importlib.util.spec_from_file_location("example_noxfile", EXAMPLE / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_watcher_reports_what_vllm_head_breaks_and_never_fails_on_it(tmp_path) -> None:
    vllm_texts.release_text()
    head = vllm_texts.write_tree(tmp_path / "vllm-main")
    template = _template()
    out = tmp_path / "vllm-head"
    out.mkdir()
    command = template.head_command(str(head), out)
    assert command[command.index("--bump-to") + 1] == str(head)
    path = os.pathsep.join([str(EXAMPLE), str(ROOT)])  # this checkout's suite
    environment = {**os.environ, "PYTHONPATH": path, "XDG_CACHE_HOME": str(tmp_path)}
    environment.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, *command[1:], "-k", "test_async_model_runner_output", "-p",
         "no:cacheprovider"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    # 1: the bump breaks something; the session accepts it (success_codes) and reports.
    assert done.returncode in template_success_codes(), done.stdout[-3000:] + done.stderr
    bump = json.loads((out / "report.json").read_text())["bump"]
    assert bump["from"] == "0.12.0"
    assert bump["to"].endswith("= nearest known 0.33.0 + 0 changes")
    # Its types are vLLM's: at the target it holds vLLM 0.33.0's, whose surface is no
    # break of its; its async output, which lacks 0.33.0's get_kv_connector_output, is.
    breaks = {r["behaviour"] for r in bump["behaviours"] if r["change"] == "breaks"}
    assert "AsyncModelRunnerOutput.get_kv_connector_output" in breaks
    assert not {b for b in breaks if not b.startswith(("producer.", "AsyncModelRunnerOutput.get_"))}
    assert "its types are vLLM's" in done.stdout
    assert (out / "report.bump-from.json").is_file()


def template_success_codes() -> set[int]:
    text = (EXAMPLE / "noxfile.py").read_text()
    assert "session.run(*head_command(target), success_codes=[0, 1])" in text
    return {0, 1}


def test_the_watcher_keeps_its_reports_apart_from_the_pinned_job() -> None:
    template = _template()
    assert template.HEAD_OUT == EXAMPLE / "conformance-out" / "vllm-head"
    assert "vllm-head" in (EXAMPLE / "noxfile.py").read_text()


@pytest.mark.parametrize("name", ["conformance", "vllm_head"])
def test_the_template_sessions_exist(name) -> None:
    assert callable(getattr(_template(), name))


def test_the_downloaded_wheel_stays_out_of_the_reports_the_workflow_uploads(
    tmp_path, monkeypatch
) -> None:
    template = _template()
    monkeypatch.setattr(template, "HEAD_OUT", tmp_path / "vllm-head")
    monkeypatch.delenv(template.HEAD_ENV, raising=False)
    runs: list[tuple[str, ...]] = []

    class Session:
        venv_backend = "none"

        def run(self, *args: str, **_: object) -> None:
            runs.append(args)
            if "download" in args:  # pip: the newest wheel, where it was told
                dest = Path(args[args.index("--dest") + 1])
                dest.mkdir(parents=True)
                (dest / "vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"")

        def create_tmp(self) -> str:
            (tmp_path / "session-tmp").mkdir(exist_ok=True)
            return str(tmp_path / "session-tmp")

        def error(self, message: str) -> None:
            raise AssertionError(message)

    template.vllm_head.func(Session())
    [download] = [r for r in runs if "download" in r]
    dest = Path(download[download.index("--dest") + 1])
    assert tmp_path / "session-tmp" in dest.parents
    assert not any(p.suffix == ".whl" for p in (tmp_path / "vllm-head").rglob("*"))
    [judged] = [r for r in runs if "--bump-to" in r]
    assert judged[judged.index("--bump-to") + 1].startswith(str(dest))
