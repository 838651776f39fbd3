"""A run over several backends costs only what it measures.

asv forks a process per benchmark, parameter set and round, so every parameter
combination that can only be skipped costs time.  These tests ask asv's own
discovery (in a subprocess, with the run's environment) what it would run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

from benchmarks import backends, common

ROOT = Path(__file__).resolve().parents[2]

DISCOVER = """
import json, sys
from asv_runner.discovery import disc_benchmarks
from benchmarks import backends
found = {b.name: [list(map(str, p)) for p in b._params] for b in disc_benchmarks(sys.argv[1])}
print(json.dumps({"params": found, "resolved": backends.resolve.cache_info().currsize}))
"""

BROKEN = "no_such_module_anywhere"


def discover(repo_root: Path, **env: str) -> dict[str, Any]:
    """The parameters asv discovers for every benchmark under ``env``."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in (backends.BACKENDS_ENV_VAR, "OUTPUTS_BACKEND")
        and not k.startswith("OUTPUTS_BENCH")
    }
    result = subprocess.run(
        [sys.executable, "-c", DISCOVER, str(repo_root / "benchmarks")],
        cwd=repo_root,
        env={**clean, "PYTHONPATH": str(repo_root), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def backend_values(found: dict[str, Any], name: str) -> list[str]:
    return list(found["params"][name][0])


@pytest.fixture(scope="module")
def many() -> dict[str, Any]:
    if not RELEASES.is_dir():
        pytest.skip(SKIP_REASON)
    return discover(
        ROOT,
        OUTPUTS_BENCH_BACKENDS=f"reference,vllm-release:0.12.0,reference@0.33.0,{BROKEN}",
        OUTPUTS_VLLM_RELEASES=str(RELEASES),
        OUTPUTS_BENCH_DEVICES="cpu",
    )


@pytest.fixture(scope="module")
def single() -> dict[str, Any]:
    return discover(ROOT, OUTPUTS_BACKEND="reference")


#: Each baseline and a backend-dependent benchmark with the same parameters.
BASELINES = {
    "tolists.ToLists.time_ndarray_tolist": "tolists.ToLists.time_tolists",
    "tolists.ToLists.time_torch_tolist": "tolists.ToLists.time_tolists",
    "tolists.ToLists.time_keep_numpy": "tolists.ToLists.time_tolists",
    "transfer.Transfer.time_cpu_blocking_pageable": (
        "transfer.Transfer.time_to_cpu_nonblocking_and_wait"
    ),
    "transfer.TransferIntoPinned.time_copy_into_pinned": (
        "transfer.Transfer.time_to_cpu_nonblocking_and_wait"
    ),
    "padding.Unpad.time_unpad_vllm_mask_per_row": "padding.Unpad.time_unpad_sampled_token_ids",
}


@pytest.mark.parametrize(("name", "sibling"), BASELINES.items())
def test_a_baseline_is_measured_under_the_first_backend_only(
    many: dict[str, Any], name: str, sibling: str
) -> None:
    assert backend_values(many, name) == ["reference"]
    # Every other parameter is the class's: the shapes the backends' own operation has.
    assert many["params"][name][1:] == many["params"][sibling][1:]


@pytest.mark.parametrize(("name", "sibling"), BASELINES.items())
def test_with_one_backend_a_baseline_keeps_every_parameter(
    single: dict[str, Any], name: str, sibling: str
) -> None:
    assert single["params"][name] == single["params"][sibling]


def test_a_backends_own_operation_runs_for_every_backend_in_the_given_order(
    many: dict[str, Any],
) -> None:
    expected = ["reference", "vllm-release:0.12.0", "reference@0.33.0", BROKEN]
    for name in (
        "tolists.ToLists.time_tolists",
        "transfer.Transfer.time_to_cpu_nonblocking_and_wait",
        "lists_slice.Slice.time_slice_per_request",
        "pickling.PickleModelRunnerOutput.time_dumps",
    ):
        assert backend_values(many, name) == expected, name


def test_producer_benchmarks_run_only_for_backends_with_the_producer(many: dict[str, Any]) -> None:
    # A release brings its own producers from its producer text (gathering, unpadding,
    # its async output) but vLLM has no padding producer; a backend that fails to load
    # stays in, so its setup reports the error instead of the run hiding it.
    values = backend_values(many, "padding.Pad.time_pad_sampled_token_ids")
    assert "vllm-release:0.12.0" not in values
    assert values[0] == "reference" and BROKEN in values
    for name in (
        "padding.Unpad.time_unpad_sampled_token_ids",
        "padding.Unpad.track_unpad_speedup_over_vllm",
        "gather.GatherLogprobs.time_gather_logprobs",
        "async_output.AsyncOutput.time_async_output_get_output",
    ):
        values = backend_values(many, name)
        assert "vllm-release:0.12.0" in values, name
        assert values[0] == "reference" and BROKEN in values, name


def test_the_device_parameter_is_what_outputs_bench_devices_names(
    many: dict[str, Any], single: dict[str, Any]
) -> None:
    assert many["params"]["transfer.Transfer.time_to_cpu_nonblocking_and_wait"][1] == ["cpu"]
    # One backend: every device type, so results of different machines line up.
    devices = single["params"]["transfer.Transfer.time_to_cpu_nonblocking_and_wait"][1]
    assert devices == list(common.DEVICES)


def test_every_loadable_backend_is_resolved_before_the_benchmarks_fork(
    many: dict[str, Any],
) -> None:
    # The three that load, and the decode step's two peers (vLLM 0.33.0's and 0.34.0's
    # own, from their texts); the broken one is left for its setup to report.
    assert many["resolved"] == 5


def test_side_by_side_is_one_benchmark_over_every_backend(many: dict[str, Any]) -> None:
    # Its module imports the benchmark modules, never their classes: asv would
    # discover an imported class a second time under side_by_side.
    names = [name for name in many["params"] if name.startswith("side_by_side.")]
    assert names == ["side_by_side.SideBySide.track_ratio_to_partner"]
    assert backend_values(many, names[0]) == backend_values(many, "tolists.ToLists.time_tolists")
