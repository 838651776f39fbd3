"""What vLLM's consumer reads alike is no failure of the first runner's async output."""

from __future__ import annotations

import pytest
import suite_runner
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.releases.texts import write_stub_tree

needs_texts = pytest.mark.skipif(
    not (RELEASES / "outputs-0.25.0.py.txt").is_file(), reason=SKIP_REASON
)


@needs_texts
def test_one_token_rows_with_identity_boundaries_read_alike_and_pass(tmp_path) -> None:
    # slice_request(i, 1) reads row i whether the boundaries are None or [0, 1, ..., n].
    tree = write_stub_tree(RELEASES / "outputs-0.25.0.py.txt", "0.25.0", tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path, "--backend", "first_runner_variants:identity_boundaries",
        "-k", "logprobs_reach_the_output or each_request_reads",
        module="conformance", env={"PYTHONPATH": str(tree)},
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-3000:]
    laid_out = [t for t in run.report["tests"] if t.get("skip_cause") == "allowed-layout"]
    assert any("one-token-per-request" in t["nodeid"] for t in laid_out), run.output[-3000:]
