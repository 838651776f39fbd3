"""Model Runner V2's rejection sampler's logprobs of speculative rows, judged where Triton
runs (``producer.gather_logprobs:speculative-rows``).

The deviations are judged on hand-made results on every machine: what vLLM gives passes,
each way of being wrong is named, and the rows nobody reads (past a request's accepted
tokens) are free.  vLLM's own kernels run under Triton's interpreter where Triton is
installed (``pip install triton``; a GPU day runs them for real): 0.19.0, 0.33.0 and
0.34.0 (whose method takes each row's request and the logprobs' dimensions) pass,
0.18.0 (whose sampler gathers them) is a skip saying so, and copies of 0.33.0's rejection
sampler with a bug of the kind a port brings fail, naming it.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import suite_runner
import torch
from triton_kernels import needs_mrv2_texts, needs_triton
from vllm_texts import RELEASES

from conformance.checks.test_producer_triton_speculative_logprobs import (
    LAYOUTS,
    speculative_logprobs_deviations,
)
from conformance.releases.texts import write_stub_tree

WHERE = "RejectionSampler._get_logprobs_tensors(...)"
ROWS, NUM_SAMPLED = (3, 1, 2), (2, 1, 1)
CU = [0, 3, 4, 6]
K = 3


@pytest.fixture
def case() -> tuple[torch.Tensor, torch.Tensor]:
    """Logits of 6 rows (requests of 3, 1 and 2 rows) and the ``[3, 3]`` sampled ids."""
    generator = torch.Generator().manual_seed(5)
    logits = torch.randn(6, 200, generator=generator) * 3
    sampled = torch.tensor([[7, 150, 199], [42, 199, 199], [0, 199, 199]])
    return logits, sampled


def _vllms(
    logits: torch.Tensor, sampled: torch.Tensor, cu: list[int] | None = CU
) -> SimpleNamespace:
    """What vLLM's rejection sampler gives: each request's accepted tokens on its first
    rows and 0 on the others, the gathering of every row, the boundaries."""
    flat = torch.zeros(logits.shape[0], dtype=torch.int64)
    for r, n in enumerate(NUM_SAMPLED):
        flat[CU[r] : CU[r] + n] = sampled[r, :n]
    ids = torch.cat([flat[:, None], torch.topk(logits, K).indices], dim=1)
    return SimpleNamespace(
        logprob_token_ids=ids,
        logprobs=logits.log_softmax(-1).gather(1, ids) + 2e-6,
        selected_token_ranks=(logits >= logits.gather(1, flat[:, None])).sum(1),
        cu_num_generated_tokens=cu,
    )


def _deviations(result: object, logits: torch.Tensor, sampled: torch.Tensor) -> list[str]:
    return speculative_logprobs_deviations(result, logits, sampled, NUM_SAMPLED, CU, K, WHERE)


def test_vllms_way_has_no_deviation(case) -> None:
    assert _deviations(_vllms(*case), *case) == []


def test_the_rows_nobody_reads_are_free(case) -> None:
    """Past a request's accepted tokens (rows 2, 5) anything goes: the scheduler reads
    ``len(sampled_token_ids[i])`` rows of request i."""
    result = _vllms(*case)
    for row in (2, 5):
        result.logprob_token_ids[row] = -1
        result.logprobs[row] = float("nan")
        result.selected_token_ranks[row] = 0
    assert _deviations(result, *case) == []


def test_the_boundaries_may_ride_as_a_tensor(case) -> None:
    """0.31.0 on: adaptive verification hands them over as ``cu_num_generated_tokens_tensor``."""
    result = _vllms(*case, cu=None)
    result.cu_num_generated_tokens_tensor = torch.tensor(CU, dtype=torch.int32)
    assert _deviations(result, *case) == []


def test_the_rows_of_accepted_tokens_alone_read_the_same(case) -> None:
    """The first runner's way: only the accepted tokens' rows, boundaries counting them."""
    logits, sampled = case
    result = _vllms(logits, sampled)
    kept = [0, 1, 3, 4]
    for name in ("logprob_token_ids", "logprobs", "selected_token_ranks"):
        setattr(result, name, getattr(result, name)[kept])
    result.cu_num_generated_tokens = [0, 2, 3, 4]
    assert _deviations(result, logits, sampled) == []
    result.cu_num_generated_tokens = [0, 2, 2, 4]  # request 1's token not in its span
    assert _deviations(result, logits, sampled)


def test_one_row_per_request_needs_no_boundaries() -> None:
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(1))
    sampled = torch.tensor([[4], [9], [1]])
    ids = torch.cat([sampled, torch.topk(logits, K).indices], dim=1)
    result = SimpleNamespace(
        logprob_token_ids=ids,
        logprobs=logits.log_softmax(-1).gather(1, ids),
        selected_token_ranks=(logits >= logits.gather(1, sampled)).sum(1),
        cu_num_generated_tokens=None,
    )
    found = speculative_logprobs_deviations(
        result, logits, sampled, (1, 1, 1), [0, 1, 2, 3], K, WHERE
    )
    assert found == []


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda r: r.logprob_token_ids[1, 0].add_(1), "logprob_token_ids[:, 0]: expected the sampled"),
        (lambda r: r.logprob_token_ids[3, 0].fill_(0), "rows of accepted tokens [0, 1, 3, 4]"),
        (lambda r: r.selected_token_ranks[0].sub_(1), "selected_token_ranks: expected 1-based"),
        (lambda r: r.logprobs[4].add_(1e-3), "logprobs: expected float32 log-probabilities"),
        (lambda r: setattr(r, "cu_num_generated_tokens", None), "expected the request boundaries of its 6 rows"),
        (lambda r: setattr(r, "cu_num_generated_tokens", [0, 2, 3, 4]), "found [0, 2, 3, 4]"),
        (lambda r: setattr(r, "logprobs", r.logprobs[:4]), "logprobs: expected a tensor of shape [6, 4]"),
    ],
    ids=["wrong-token", "accepted-token-dropped", "0-based-rank", "logprobs-off", "no-boundaries", "accepted-counts-as-boundaries", "rows-missing"],
)  # fmt: skip
def test_each_way_of_being_wrong_is_named(case, spoil, named: str) -> None:
    result = _vllms(*case)
    spoil(result)
    found = _deviations(result, *case)
    assert found and any(named in line for line in found), found


def test_none_is_named(case) -> None:
    assert _deviations(None, *case) == [
        f"{WHERE}: returned None, expected LogprobsTensors of {K} logprobs per row"
    ]


#: Copies of vLLM 0.33.0's rejection sampler with one port bug each: (text, replacement,
#: what the failures name).
PORT_BUGS = {
    "bonus-token-dropped": (
        "for i in range(num_sampled):",
        "for i in range(num_sampled - 1):",
        "logprob_token_ids[:, 0]: expected the sampled tokens",
    ),
    "no-boundaries": (
        "cu_num_generated_tokens = cu_num_logits_np.tolist()",
        "cu_num_generated_tokens = None",
        "cu_num_generated_tokens: expected the request boundaries",
    ),
    "adaptive-without-boundaries": (
        "cu_num_generated_tokens = cu_num_logits.clone()",
        "cu_num_generated_tokens = None",
        "cu_num_generated_tokens: expected the request boundaries",
    ),
}
#: The checks of one run: a layout (with or without adaptive verification) per k.
CHECKS = len(LAYOUTS) * 3
SELECTED = "speculative_logprobs"


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> suite_runner.Run:
    tmp_path.mkdir()
    return suite_runner.subprocess_run(
        tmp_path,
        *args,
        "-k",
        SELECTED,
        module="conformance",
        env={"TRITON_INTERPRET": "1", **(env or {})},
    )


@needs_mrv2_texts
@needs_triton
@pytest.mark.parametrize("version", ["0.19.0", "0.33.0", "0.34.0"])
def test_vllms_own_rejection_sampler_passes(tmp_path: Path, version: str) -> None:
    run = _run(tmp_path / "run", "--vllm-outputs", str(RELEASES / f"outputs-{version}.py.txt"))
    outcomes = [t["outcome"] for t in run.report["tests"]] if run.report else []
    assert run.exit_code == 0 and outcomes == ["passed"] * CHECKS, run.output[-2000:]


@needs_mrv2_texts
def test_without_a_way_to_run_triton_the_check_is_a_skip_saying_why(tmp_path: Path) -> None:
    run = _run(
        tmp_path / "run",
        "--vllm-outputs",
        str(RELEASES / "outputs-0.33.0.py.txt"),
        env={"TRITON_INTERPRET": "0"},
    )
    assert run.report is not None, run.output[-2000:]
    skipped = run.report["tests"]
    assert len(skipped) == CHECKS and {t["outcome"] for t in skipped} == {"skipped"}, run.output[
        -2000:
    ]
    assert {t["behaviour"] for t in skipped} == {"producer.gather_logprobs:speculative-rows"}
    # Triton absent, or present without a GPU and without its interpreter asked for.
    assert all(
        "Triton is not installed" in t["message"] or "TRITON_INTERPRET=1" in t["message"]
        for t in skipped
    )


@needs_mrv2_texts
@needs_triton
def test_a_release_whose_sampler_gathers_them_is_a_skip_saying_so(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "--vllm-outputs", str(RELEASES / "outputs-0.18.0.py.txt"))
    assert run.report is not None, run.output[-2000:]
    assert {t["outcome"] for t in run.report["tests"]} == {"skipped"}
    assert all("gathers no logprobs of its own" in t["message"] for t in run.report["tests"])


@needs_mrv2_texts
@needs_triton
@pytest.mark.parametrize("bug", list(PORT_BUGS))
def test_a_port_with_a_bug_fails_naming_it(tmp_path: Path, bug: str) -> None:
    old, new, named = PORT_BUGS[bug]
    tree = write_stub_tree(RELEASES / "outputs-0.33.0.py.txt", "0.33.0", tmp_path / "tree")
    sampler = tree / "vllm" / "v1" / "worker" / "gpu" / "spec_decode" / "rejection_sampler.py"
    text = sampler.read_text(encoding="utf-8")
    assert old in text
    sampler.write_text(text.replace(old, new), encoding="utf-8")
    # The tree as the installed vLLM, before whatever else the path holds (Triton, say).
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    run = _run(tmp_path / "run", "--backend", "vllm", env={"PYTHONPATH": path})
    assert run.report is not None, run.output[-2000:]
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    # A dropped token fails every layout; missing boundaries the one layout that has them
    # (one row per request needs none; the other way of verifying hands its own on).
    assert len(failed) == (CHECKS if bug == "bonus-token-dropped" else 3), run.output[-2000:]
    assert all(named in t["message"] for t in failed)
