"""The crater against real plugin releases, fetched from the package index (long)."""

from __future__ import annotations

import json

import pytest

from conformance.cli.main import main

pytestmark = pytest.mark.long

#: Fixed releases, so the verdicts below stay true as the plugins publish more.
PLUGINS = ("vllm-rbln==0.12.0", "tpu-inference==0.32.0", "vllm-kunlun==0.11.1",
           "furiosa-llm==2026.4.0", "vllm-musa==0.1.1", "vllm-torchtpu-core==0.29.0",
           "vllm-swift==0.6.2")  # fmt: skip
REMOVED = "field removed ModelRunnerOutput.req_id_to_index"
ABSTRACT = "method added AsyncModelRunnerOutput.get_kv_connector_output"


def _crater(target: str, tmp_path) -> tuple[int, dict]:
    report = tmp_path / f"crater-{target}.json"
    code = main(["crater", target, "--plugins", *PLUGINS, "--report", str(report)])
    records = json.loads(report.read_text())["records"]
    return code, {(r["plugin"], r["role"]): r for r in records}


def _findings(record: dict) -> set[tuple]:
    return {(f["kind"], f["file"], f["line"], f["member"], _change(f["vllm_change"]))
            for f in record["findings"]}  # fmt: skip


def test_at_0_34_every_builder_breaks_at_its_own_line(tmp_path) -> None:
    code, records = _crater("0.34.0", tmp_path)
    assert code == 1
    rbln = records["vllm-rbln", "target"]
    assert records["vllm-rbln", "pin"]["vllm"] == "0.30.0"
    # Its prompt logprobs unpack vLLM's LogprobsTensors into 4 names; 0.29.0 made it 5.
    assert ("call-raises", "vllm_rbln/v1/worker/rbln_model_runner.py", 2429,
            "Sampler.gather_logprobs", "field added LogprobsTensors.cu_num_generated_tokens_tensor"
            ) in _findings(records["vllm-rbln", "pin"])  # fmt: skip
    found = _findings(rbln)
    assert ("construction-raises", "vllm_rbln/v1/worker/rbln_model_runner.py", 1260,
            "ModelRunnerOutput.req_id_to_index", REMOVED) in found  # fmt: skip
    assert ("cannot-instantiate", "vllm_rbln/v1/worker/async_output.py", 35,
            "AsyncModelRunnerOutput.get_kv_connector_output", ABSTRACT) in found  # fmt: skip
    assert ("import-fails", "vllm_rbln/v1/sample/rbln_sampler.py", 25, "vllm.v1.sample.sampler",
            "module removed vllm.v1.sample.sampler") in found  # fmt: skip
    tpu = _findings(records["tpu-inference", "target"])
    assert ("construction-raises", "tpu_inference/runner/tpu_runner.py", 1793,
            "ModelRunnerOutput.req_id_to_index", REMOVED) in tpu  # fmt: skip
    assert records["tpu-inference", "pin"]["vllm"] == "0.32.0"
    # No requirement on vllm in its metadata: vllm-torchtpu of its own version needs it.
    assert records["vllm-torchtpu-core", "pin"]["vllm"] == "0.29.0"
    assert records["vllm-torchtpu-core", "pin"]["verdict"] == "holds"
    torchtpu = _findings(records["vllm-torchtpu-core", "target"])
    assert ("construction-raises", "vllm_torchtpu/runner/tpu_runner.py", 4830,
            "ModelRunnerOutput.req_id_to_index", REMOVED) in torchtpu  # fmt: skip
    # vllm>=0.10, published 2026-05-11: vLLM 0.20.2 was the newest then.
    assert records["vllm-swift", "pin"]["vllm"] == "0.20.2"
    assert records["vllm-swift", "pin"]["verdict"] == "holds"
    assert ("construction-raises", "vllm_swift/worker.py", 411, "ModelRunnerOutput.req_id_to_index",
            REMOVED) in _findings(records["vllm-swift", "target"])  # fmt: skip
    for plugin in ("furiosa-llm", "vllm-musa"):
        assert records[plugin, "target"]["verdict"] == "holds"


def test_at_0_33_the_abstract_method_breaks_but_not_req_id_to_index(tmp_path) -> None:
    _, records = _crater("0.33.0", tmp_path)
    for plugin, where in (("vllm-rbln", "vllm_rbln/v1/worker/async_output.py"),
                          ("tpu-inference", "tpu_inference/runner/tpu_runner.py"),
                          ("vllm-torchtpu-core",
                           "vllm_torchtpu/runner/tpu_runner_async_output.py"),
                          ("vllm-kunlun", "vllm_kunlun/v1/worker/gpu_model_runner.py")):  # fmt: skip
        found = _findings(records[plugin, "target"])
        assert {(k, f) for k, f, *_ in found} >= {("cannot-instantiate", where)}
        assert not any("req_id_to_index" in str(item) for item in found)


def _change(said: str) -> str:
    """The change a finding names, without what of it the plugin meets or where its
    work went."""
    return said.split(" (")[0].split(": ")[0].split("; ")[0]
