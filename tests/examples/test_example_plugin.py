"""The example plugin of examples/npu_plugin: it conforms, and its race check bites."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "npu_plugin"
HERE = Path(__file__).resolve().parent


def _conformance(
    tmp_path: Path, backend: str, *args: str, pythonpath: tuple[str, ...] = ()
) -> tuple[int, str]:
    path = [*pythonpath, str(EXAMPLE), str(HERE), str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "--backend", backend, "-p", "no:cacheprovider", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_the_example_conforms_with_its_known_deviation(tmp_path) -> None:
    code, output = _conformance(
        tmp_path,
        "example_npu_plugin.conformance_backend:BACKEND",
        "--xfails",
        str(EXAMPLE / "xfails.toml"),
    )
    assert code == 0, output[-3000:]
    assert "spec revision 0.12.0 (declared: the backend targets 0.12.0)" in output
    assert "async output judged on npu-simulated" in output
    assert ", 1 xfailed" in output
    # Its declared steps leave only pooling unsupported, and say so in one line.
    assert "steps not declared, their checks not applicable: pooling outputs" in output


def test_at_a_neighbouring_release_the_example_holds_that_releases_types(tmp_path) -> None:
    # Its types are vLLM's: a CI leg at 0.13.0 runs with vLLM 0.13.0, whose types it
    # then holds; their new fields (kv_cache_events, cudagraph_stats) are no failure of it.
    code, output = _conformance(
        tmp_path,
        "example_npu_plugin.conformance_backend:BACKEND",
        "--revision",
        "0.13.0",
        "--xfails",
        str(EXAMPLE / "xfails.toml"),
    )
    assert code == 0, output[-3000:]
    assert "its types are vLLM's: imported with 0.13.0 as its vllm" in output


def test_with_another_vllm_installed_the_example_holds_its_pins_types(tmp_path) -> None:
    # Its outputs take vLLM's types where vLLM imports: with vLLM 0.32.0 installed they
    # are 0.32.0's, which its 0.12.0 pin never holds.  It is judged with 0.12.0's.
    from vllm_release_texts import MISSING, RELEASES

    from conformance.releases.texts import write_stub_tree

    if MISSING:
        pytest.skip(MISSING)
    installed = write_stub_tree(RELEASES / "outputs-0.32.0.py.txt", "0.32.0", tmp_path / "vllm")
    code, output = _conformance(
        tmp_path,
        "example_npu_plugin.conformance_backend:BACKEND",
        "-k",
        "test_model_runner_output.py or test_logprobs_tensors.py",
        pythonpath=(str(installed),),
    )
    assert code == 0, output[-3000:]
    assert "note: the vLLM installed (0.32.0) is not the release judged (0.12.0)" in output
    assert "its types are vLLM's: imported with 0.12.0 as its vllm" in output


def test_the_example_without_its_synchronize_fails_the_race_check(tmp_path) -> None:
    code, output = _conformance(tmp_path, "without_synchronize:make", "-k", "waits_for_the_device")
    assert code == 1, output[-3000:]
    # Both busy steps (one token per request, several tokens per row) name the copy read early.
    assert "FAIL [producer.async_output:waits-for-device] 2 check(s)" in output
    assert (
        "WithoutSynchronize._sampled_cpu, the host copy of sampled_token_ids, read at "
        "example_npu_plugin/worker.py:54 before its copy arrived" in output
    )


def test_the_declaration_is_short() -> None:
    # The bar for a worked example: a declaration of at most 15 lines.
    text = (EXAMPLE / "example_npu_plugin" / "conformance_backend.py").read_text()
    declaration = text[text.index("BACKEND = Backend(") :].strip().splitlines()
    assert len(declaration) <= 15


def test_its_async_output_is_benchmarked_on_the_npu_it_is_written_for() -> None:
    # Its producer calls torch.npu: timed on a simulated cuda it would fail.
    code = (
        "from benchmarks.async_output import AsyncOutput\n"
        "spec = 'example_npu_plugin.conformance_backend:BACKEND'\n"
        "bench = AsyncOutput()\n"
        "bench.setup(spec, 64, 5)\n"
        "bench.time_async_output_get_output(spec, 64, 5)\n"
        "print(bench.subject.async_output_device)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "npu"
