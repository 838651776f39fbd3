"""Defects of vLLM's own producers in a release, which the suite catches and names.

vLLM's own code is the ground truth of each release, but a few of its producers broke
what every other release does and a later one fixed it.  The check still runs and
catches the defect; for vLLM's own producer of an affected release (the ``vllm``
backend) the failure is reported as an expected one naming the defect and its fix, so
the release's own run stays green while the report shows it.  Any other backend (a
plugin that copied the class) fails as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KnownDefect:
    releases: tuple[str, ...]
    judged_class: str
    behaviour: str
    message: str  #: a piece of the failure message the defect gives
    what: str  #: the defect and its fix, in words


KNOWN_DEFECTS = (
    KnownDefect(
        releases=("0.17.0", "0.17.1"),
        judged_class="vllm.v1.worker.gpu.async_utils.AsyncPoolingOutput",
        behaviour="producer.pooling_output:invalid-rows",
        message="'tuple' object does not support item assignment",
        what="vLLM 0.17's AsyncPoolingOutput.get_output assigns None into the tuple "
        "unbind() returns (TypeError whenever a row is invalid); fixed in 0.18.0",
    ),
    KnownDefect(
        releases=("0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1"),
        judged_class="vllm.v1.worker.gpu.sample.logprob.compute_topk_logprobs",
        behaviour="producer.gather_logprobs",
        message="expected 1-based pessimistic ranks",
        what="Model Runner V2's _ranks_kernel in 0.12-0.15 counts the logits greater "
        "than the token's (a 0-based rank; the first runner's is 1-based, ties counted "
        "against the token); fixed in 0.16.0 (>=)",
    ),
)


def known_defect(backend: Any, producer: Any, behaviour: str, message: str) -> str | None:
    """The words of the known defect of vLLM's own ``producer`` this failure is, or None."""
    if getattr(backend, "name", None) != "vllm":
        return None
    for defect in KNOWN_DEFECTS:
        if (
            backend.version in defect.releases
            and getattr(producer, "judged_class", "") == defect.judged_class
            and defect.behaviour == behaviour
            and defect.message in message
        ):
            return f"known defect of vLLM {backend.version}: {defect.what}"
    return None
