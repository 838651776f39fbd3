"""Model Runner V2's Triton gathering of logprobs (``compute_topk_scores``, before 0.28.0
``compute_topk_logprobs``), judged where Triton runs.

The deviations are judged here on hand-made results, on every machine.  vLLM's own
kernels run under Triton's interpreter where Triton is installed (not a dependency of
the project: ``pip install triton`` to run those here; a GPU day runs them for real):
0.33.0 passes; 0.12.0-0.15.x's kernel, whose ranks are 0-based, is caught (named as
vLLM's known defect there, an xfail, and a failure for any plugin that copied it).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import suite_runner
import torch
from triton_kernels import needs_mrv2_texts, needs_triton
from vllm_texts import RELEASES

from conformance.checks.test_producer_triton_gathering import triton_gathering_deviations

WHERE = "compute_topk_scores(...)"
#: The checks of the Triton gathering, apart from others ``-k`` selects beside them.
TRITON_CHECKS = "conformance/checks/test_producer_triton_gathering.py"


def _right(logits: torch.Tensor, sampled: torch.Tensor, k: int) -> SimpleNamespace:
    """What vLLM's gathering gives: sampled id then top-k ids, their log-probabilities
    (from another kernel: float32 rounding apart) and the 1-based pessimistic rank."""
    ids = torch.cat([sampled[:, None], torch.topk(logits, k).indices], dim=1)
    values = logits.log_softmax(-1).gather(1, ids) + 3e-6
    ranks = (logits >= logits.gather(1, sampled[:, None])).sum(1)
    return SimpleNamespace(logprob_token_ids=ids, logprobs=values, selected_token_ranks=ranks)


@pytest.fixture
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return torch.randn(5, 300, generator=generator) * 3, torch.tensor([7, 0, 299, 150, 42])


def test_vllms_way_of_gathering_has_no_deviation(batch) -> None:
    logits, sampled = batch
    assert triton_gathering_deviations(_right(logits, sampled, 4), logits, sampled, 4, WHERE) == []


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda r: r.selected_token_ranks.sub_(1), "selected_token_ranks: expected 1-based"),
        (lambda r: r.logprobs.add_(1e-3), "logprobs: expected float32 log-probabilities"),
        (lambda r: setattr(r, "logprobs", r.logprobs.double()), "found torch.float64"),
        (lambda r: r.logprob_token_ids[:, 0].add_(1), "logprob_token_ids[:, 0]: expected the sampled"),
        (lambda r: r.logprob_token_ids[:, 1:].copy_(r.logprob_token_ids[:, 1:].flip(1)), "top-4 logits"),
        (lambda r: setattr(r, "logprobs", r.logprobs[:, :-1]), "logprobs: expected a tensor of shape [5, 5]"),
    ],
    ids=["0-based-ranks", "logprobs-off", "float64", "wrong-sampled-id", "top-k-reversed", "k-columns"],
)  # fmt: skip
def test_each_way_of_being_wrong_is_named(batch, spoil, named: str) -> None:
    logits, sampled = batch
    result = _right(logits, sampled, 4)
    spoil(result)
    found = triton_gathering_deviations(result, logits, sampled, 4, WHERE)
    assert found and any(named in line for line in found), found


def _run(tmp_path: Path, version: str, interpret: str = "1") -> suite_runner.Run:
    tmp_path.mkdir()
    return suite_runner.subprocess_run(
        tmp_path,
        "--vllm-outputs",
        str(RELEASES / f"outputs-{version}.py.txt"),
        "-k",
        "gathering_is_judged",
        module="conformance",
        env={"TRITON_INTERPRET": interpret},
    )


@needs_mrv2_texts
@needs_triton
def test_vllms_own_gathering_passes_and_the_known_defect_is_named(tmp_path: Path) -> None:
    run = _run(tmp_path / "new", "0.33.0")
    outcomes = [t["outcome"] for t in run.records(TRITON_CHECKS)] if run.report else []
    assert run.exit_code == 0 and outcomes == ["passed"] * 3, run.output[-2000:]
    run = _run(tmp_path / "old", "0.12.0")
    assert run.exit_code == 0, run.output[-2000:]
    assert [t["outcome"] for t in run.records(TRITON_CHECKS)] == ["xfailed"] * 3
    assert all("0-based rank" in t["message"] for t in run.records(TRITON_CHECKS))


@needs_mrv2_texts
@needs_triton
def test_the_triton_gathering_check_skips_without_a_way_to_run_it(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "0.33.0", interpret="0")
    assert run.report is not None, run.output[-2000:]
    assert {t["outcome"] for t in run.records(TRITON_CHECKS)} == {"skipped"}
    assert all("TRITON_INTERPRET=1" in t["message"] for t in run.records(TRITON_CHECKS))
