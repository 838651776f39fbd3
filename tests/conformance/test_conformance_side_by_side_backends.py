"""The backend forms the release benchmarks put side by side: ``reference@R`` and
``vllm-release:X``, resolved by the suite's own resolver (one syntax for both)."""

from __future__ import annotations

from pathlib import Path

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance import load_backend
from conformance.backends.backend import BackendResolutionError
from conformance.oracle.revisions import UnsupportedReleaseError
from conformance.releases.fetch import RELEASES_ENV_VAR
from reference.revisions import reference_module


@pytest.fixture
def releases(monkeypatch: pytest.MonkeyPatch) -> Path:
    if not RELEASES.is_dir():
        pytest.skip(SKIP_REASON)
    monkeypatch.setenv(RELEASES_ENV_VAR, str(RELEASES))
    return RELEASES


def test_reference_at_a_release_is_the_reference_of_its_revision() -> None:
    backend = load_backend("reference@0.15.1")
    assert backend.module is reference_module("0.14.0")
    assert backend.spec_revision == "0.15.1"
    assert backend.source == "reference@0.15.1"
    assert backend.gather_logprobs is not None and backend.make_async_output is not None


def test_reference_at_an_unknown_revision_names_it() -> None:
    with pytest.raises(BackendResolutionError, match=r"backend 'reference@9\.9\.9': .*9\.9\.9"):
        load_backend("reference@9.9.9")


def test_a_release_not_in_the_folder_named_says_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(RELEASES_ENV_VAR, str(tmp_path))
    with pytest.raises(
        BackendResolutionError,
        match=rf"\${RELEASES_ENV_VAR}=.* holds no outputs-0\.12\.0\.py\.txt; unset it to fetch",
    ):
        load_backend("vllm-release:0.12.0")


def test_a_release_loads_its_own_module_and_producers(releases: Path) -> None:
    backend = load_backend("vllm-release:0.13.0")
    assert backend.module.__name__ == "vllm_release_0_13_0"
    assert backend.spec_revision == "0.13.0"
    assert backend.devices == ("cpu", "cuda") and backend.async_output_devices == ("cuda",)
    assert backend.gather_logprobs is not None
    assert backend.unpad_sampled_token_ids is not None
    assert backend.pad_sampled_token_ids is None  # vLLM has no padding producer
    other = load_backend("vllm-release:0.12.0")
    assert other.module.LogprobsTensors is not backend.module.LogprobsTensors


def test_a_release_too_old_for_the_spec_types_says_so(releases: Path) -> None:
    with pytest.raises(BackendResolutionError) as raised:
        load_backend("vllm-release:0.10.0")
    # The benchmarks skip such a release instead of failing: they read the cause.
    assert isinstance(raised.value.__cause__, UnsupportedReleaseError)


def test_the_command_line_judges_both_forms(tmp_path: Path, releases: Path) -> None:
    reference = suite_runner.subprocess_run(
        tmp_path, "--backend", "reference@0.13.0", module="conformance"
    )
    assert reference.exit_code == 0, reference.output
    assert reference.report is not None and reference.report["spec_revision"] == "0.13.0"
    release = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "vllm-release:0.13.0",
        module="conformance",
        env={RELEASES_ENV_VAR: str(releases)},
    )
    # vLLM's own code of a release passes its own revision, producers included.
    assert release.exit_code == 0, release.output
    assert release.report is not None and release.report["spec_revision"] == "0.13.0"
    producers = release.records("conformance/checks/test_producer_")
    assert any(r["outcome"] == "passed" for r in producers)
