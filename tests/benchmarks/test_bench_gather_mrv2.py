"""Model Runner V2's Triton gathering timed beside the backend's way from logits: a GPU's
benchmark, whose path is proved on CPU under Triton's interpreter where Triton is here."""

from __future__ import annotations

import importlib.util
import os

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

import reference
from benchmarks import gather

SHAPE = ("reference", "cpu", 1, 32000, 5)


def test_on_cpu_it_is_skipped_unless_triton_interprets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(NotImplementedError, match="TRITON_INTERPRET=1"):
        gather.GatherBesideModelRunnerV2().setup(*SHAPE)


# Triton decides at import whether its kernels run on the interpreter: the whole run
# must start with TRITON_INTERPRET=1 (nox -s kernels).
@pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="Triton's interpreter runs it: Triton installed and TRITON_INTERPRET=1 from the "
    "start of the run (nox -s kernels)",
)
@pytest.mark.skipif(not (RELEASES / "producers-mrv2").is_dir(), reason=SKIP_REASON)
def test_under_the_interpreter_both_ways_agree_and_are_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OUTPUTS_BENCH_DEVICES", "cpu")
    bench = gather.GatherBesideModelRunnerV2()
    bench.setup(*SHAPE)
    # The reference gathers from logits its own way (one pass on a GPU).
    assert bench.of_logits is reference.gather_logprobs_of_logits
    result = bench.track_gather_ratio_to_mrv2_triton(*SHAPE)
    assert result["samples"] and all(ratio > 0 for ratio in result["samples"])
    # A gathering whose ranks are off is never timed: the ways must agree first.
    right = bench.of_logits

    def off_by_one(*args):
        found = right(*args)
        found.selected_token_ranks.add_(1)
        return found

    bench.of_logits = off_by_one
    with pytest.raises(AssertionError, match="differ in selected_token_ranks"):
        bench.track_gather_ratio_to_mrv2_triton(*SHAPE)
