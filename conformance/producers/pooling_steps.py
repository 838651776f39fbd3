"""The pooling steps handed to a pooling async output, and what it must give.

vLLM's pooling runners (the first runner's ``AsyncGPUPoolingModelRunnerOutput``, 0.14.0
on; Model Runner V2's ``AsyncPoolingOutput``, 0.17.0 on) hand over the runner's
``ModelRunnerOutput`` and the pooler output on the device, a row per request, with
which rows hold an output this step (``is_valid`` on the device, or ``finished_mask``
on the host).  ``get_output()`` gives the output with ``pooler_output`` a CPU tensor
per request and None for a row without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from conformance.backends.step import Step
from conformance.producers.runtime import StepDevice
from conformance.producers.steps import StepCase, runner_model_runner_output

#: The width of a pooled row (an embedding); small, the values distinct per cell.
HIDDEN = 8


@dataclass(frozen=True)
class PoolingCase:
    name: str
    num_reqs: int
    invalid: tuple[int, ...] = ()
    offset: float = 0.0  #: added to every value: another step of the same shape

    def values(self) -> torch.Tensor:
        cells = torch.arange(self.num_reqs * HIDDEN, dtype=torch.float32)
        return (cells / 4 + 0.5 + self.offset).reshape(self.num_reqs, HIDDEN)

    def valid(self) -> list[bool]:
        return [i not in self.invalid for i in range(self.num_reqs)]

    def __str__(self) -> str:
        return self.name


POOLING_CASES = (
    PoolingCase("pooled-rows", 3),
    PoolingCase("empty-batch", 0),
)
INVALID_ROW_CASES = (PoolingCase("invalid-row", 4, invalid=(1,)),)
RACE_CASE = PoolingCase("race", 64)


def build_pooling_step(
    backend: Any,
    revision: Any,
    case: PoolingCase,
    device: StepDevice,
    pooler_output: torch.Tensor | None = None,
) -> Step:
    """The pooling step of ``case``; ``pooler_output`` replaces the rows (race check)."""
    rows = pooler_output if pooler_output is not None else device.tensor(case.values())
    valid = case.valid()
    shaped = StepCase(case.name, tuple((0,) for _ in range(case.num_reqs)))
    return Step(
        model_runner_output=runner_model_runner_output(backend, revision, shaped),
        sampled_token_ids=None,
        logprobs_tensors=None,
        invalid_req_indices=[],
        async_output_copy_stream=device.stream(),
        vocab_size=0,
        device=device.kind,
        main_stream=device.main_stream(),
        copy_event=device.event(),
        pooler_output=rows,
        is_valid=device.tensor(torch.tensor(valid, dtype=torch.bool)),
        finished_mask=valid,
    )


def expected_pooler_output(case: PoolingCase) -> list[torch.Tensor | None]:
    """Per request its CPU row, None where the row holds no output this step."""
    values = case.values()
    return [values[i].clone() if ok else None for i, ok in enumerate(case.valid())]
