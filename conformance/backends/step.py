"""The step: where a backend's async output plugs in.

vLLM's model runner, right after sampling, builds its ``ModelRunnerOutput`` without
the sampled ids and hands its async output what it holds.  A :class:`Step` carries
exactly that, so a backend's ``make_async_output(step)`` is judged at the same point
vLLM's own async output of the revision is.  A class whose constructor takes the
names vLLM's own class takes (``model_runner_output``, ``sampled_token_ids``,
``logprobs_tensors``, ``invalid_req_indices``, ``async_output_copy_stream``,
``vocab_size``; any subset, in any order) plugs in with one line::

    make_async_output=constructed_like_vllm(MyAsyncModelRunnerOutput)
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "STEP_KINDS",
    "Step",
    "constructed_like_vllm",
    "old_form_message",
    "unknown_step_kinds",
]

#: The kinds of step vLLM's runner may hand its async output beyond one token per request,
#: and what a backend that does not declare one leaves unsupported.  ``Backend(steps=...)``
#: declares those its runner builds; the checks of any other kind are not applicable.
STEP_KINDS: dict[str, str] = {
    "multi-token-rows": "rows of several tokens: speculative decoding under async scheduling",
    "discarded-rows": "discarded rows: requests whose sampled tokens a step throws away "
    "(invalid_req_indices, e.g. a partial prefill)",
    "logprobs": "logprobs: requests asking for the sampled tokens' logprobs",
    "prompt-logprobs": "prompt logprobs: requests asking for the prompt's logprobs under "
    "async scheduling",
    "pooling-outputs": "pooling outputs: steps of a pooling model",
    "empty-batch": "an empty batch: a step with no requests",
}


def unknown_step_kinds(kinds: tuple[Any, ...]) -> str | None:
    """Why ``kinds`` is no declaration of step kinds, or None when it is one."""
    if not all(isinstance(k, str) for k in kinds):
        return f"steps must be a tuple of step kind names ({', '.join(STEP_KINDS)})"
    unknown = [k for k in kinds if k not in STEP_KINDS]
    if unknown:
        return (
            f"declares unknown step kind(s) {', '.join(map(repr, unknown))}; "
            f"the step kinds are {', '.join(STEP_KINDS)}"
        )
    return None


@dataclass(frozen=True)
class Step:
    """What vLLM's runner of the revision holds when it builds its async output.

    ``model_runner_output``: the backend's ``ModelRunnerOutput`` the runner built
    (``sampled_token_ids`` empty; ``logprobs`` already converted by the runner in
    revisions whose runner does so, else None).
    ``sampled_token_ids``: int32 ``[num_reqs, max_num_generated_tokens]`` on the device,
    padded with -1.
    ``logprobs_tensors``: the backend's ``LogprobsTensors`` on the device, or None.
    ``invalid_req_indices``: the requests whose sampled tokens this step discards.
    ``async_output_copy_stream``: a stream of ``torch.<device>`` to copy on (None on CPU).
    ``vocab_size``: ids at or above it are not tokens.
    ``device``: the torch device type the step is on (``cuda``, ``npu``, ``cpu``); its
    runtime is ``torch.<device>`` (on a machine without one, a simulated runtime).
    ``num_nans``: the count of NaN logits per request on the device, where the runner
    counts them (vLLM 0.28+ passes it as ``num_nans``), else None.
    ``routed_experts``: the revision's ``RoutedExpertsTensors`` on the device, where the
    runner records routed experts (vLLM 0.22 to 0.30), else None.
    """

    model_runner_output: Any
    sampled_token_ids: Any
    logprobs_tensors: Any
    invalid_req_indices: list[int]
    async_output_copy_stream: Any
    vocab_size: int
    device: str
    num_nans: Any = None
    routed_experts: Any = None

    def arguments(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


_STEP_FIELDS = tuple(f.name for f in dataclasses.fields(Step))


def constructed_like_vllm(cls: Callable[..., Any]) -> Callable[[Step], Any]:
    """``make_async_output`` for a class whose constructor takes vLLM's runner arguments.

    Each constructor parameter named like a :class:`Step` field gets that field;
    parameters with defaults that the step does not know keep their defaults.  A
    required parameter the step does not know is refused at once, naming it.
    """
    old_form = old_form_message(getattr(cls, "__qualname__", str(cls)), cls)
    if old_form is not None:
        raise TypeError(old_form)
    named = _named_parameters(cls)
    unknown = [p.name for p in named if p.name not in _STEP_FIELDS and p.default is p.empty]
    if unknown:
        raise TypeError(
            f"{getattr(cls, '__qualname__', cls)}: required constructor parameter(s) "
            f"{', '.join(unknown)} are not what vLLM's runner hands over "
            f"({', '.join(_STEP_FIELDS)}); give them defaults or write make_async_output "
            "as a function of the step"
        )
    wanted = [p.name for p in named if p.name in _STEP_FIELDS]

    def make_async_output(step: Step) -> Any:
        return cls(**{name: getattr(step, name) for name in wanted})

    make_async_output.__qualname__ = f"constructed_like_vllm({getattr(cls, '__qualname__', cls)})"
    return make_async_output


def _named_parameters(cls: Callable[..., Any]) -> list[inspect.Parameter]:
    """The constructor's named parameters; a subclass's ``(*args, **kwargs)`` passes to its base's."""
    owners = cls.__mro__ if isinstance(cls, type) else (cls,)
    for owner in owners:
        if isinstance(cls, type) and "__init__" not in vars(owner):
            continue
        target = owner.__init__ if isinstance(cls, type) else owner
        try:
            parameters = list(inspect.signature(target).parameters.values())
        except (TypeError, ValueError):
            continue
        named = [
            p
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
        ]
        if named or not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
            return named
    return []


def old_form_message(name: str, make_async_output: Callable[..., Any]) -> str | None:
    """Why ``make_async_output`` looks like the form before steps, or None when it does not."""
    if getattr(make_async_output, "__qualname__", "").startswith("constructed_like_vllm("):
        return None
    try:
        parameters = inspect.signature(make_async_output).parameters
    except (TypeError, ValueError):
        return None
    if "sampler_output" not in parameters or "req_ids" not in parameters:
        return None
    return (
        f"backend {name!r}: make_async_output takes (sampler_output, req_ids), the form "
        "before steps; it now takes one conformance.Step (what vLLM's runner hands its "
        "async output). For a class whose constructor is vLLM's write "
        "make_async_output=conformance.constructed_like_vllm(MyAsyncOutput); otherwise "
        "a function step -> AsyncModelRunnerOutput (conformance/README.md, 'Producers')"
    )
