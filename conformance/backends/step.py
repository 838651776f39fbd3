"""The step: where a backend's async output plugs in.

vLLM's model runner, right after sampling, builds its ``ModelRunnerOutput`` without
the sampled ids and hands its async output what it holds.  A :class:`Step` carries
exactly that, for both of vLLM's GPU runners, so a backend's ``make_async_output(step)``
is judged at the same point vLLM's own async output of the revision is.  A class whose
constructor takes the names either runner's own class takes plugs in with one line::

    make_async_output=constructed_like_vllm(MyAsyncModelRunnerOutput)

The first runner's (``gpu_model_runner.py``, ``AsyncGPUModelRunnerOutput``):
``model_runner_output``, ``sampled_token_ids``, ``logprobs_tensors``,
``invalid_req_indices``, ``async_output_copy_stream``, ``vocab_size``.  Model Runner
V2's (``vllm/v1/worker/gpu/async_utils.py``, ``AsyncOutput``): ``model_runner_output``,
``sampler_output``, ``num_sampled_tokens``, ``main_stream``, ``copy_stream``,
``copy_event`` (0.12.0 .. 0.16.0), ``check_ep_fault``, ``pending_aux_output``; its
``AsyncPoolingOutput`` takes ``pooler_output`` and ``is_valid`` or ``finished_mask``
instead of the sampler's.  Any subset, in any order.
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
    "StepSamplerOutput",
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
    "nan-counts": "NaN counts: a runner counting the NaN logits of each request on the device "
    "(vLLM's VLLM_COMPUTE_NANS_IN_LOGITS)",
    "routed-experts": "routed experts: a runner recording the experts each token was routed to "
    "(vLLM's enable_return_routed_experts, 0.22.0 to 0.30.0)",
    "sampling-masks": "sampling masks: a sampler recording the tokens each request was "
    "allowed (Model Runner V2's return_sampling_mask, 0.28.0 on)",
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


#: Which of vLLM's runners an async output is shaped like (``runner`` of a producer).
FIRST_RUNNER = "gpu-model-runner"
MODEL_RUNNER_V2 = "model-runner-v2"


@dataclass
class StepSamplerOutput:
    """What Model Runner V2's sampler hands its async output (``gpu/sample/output.py``).

    ``sampled_token_ids``: the step's int32 ``[num_reqs, max_num_generated_tokens]`` on
    the device (the same tensor as :attr:`Step.sampled_token_ids`);
    ``logprobs_tensors``: the ``LogprobsTensors`` laid out as that runner lays them out
    (a row per logits row, ``cu_num_generated_tokens`` counting them, where the revision
    has the field), or None; ``num_sampled``: :attr:`Step.num_sampled`;
    ``num_rejected``: rejected draft tokens per request on the device; ``num_nans``:
    :attr:`Step.num_nans`; ``sampling_mask_tensors``: the tokens each request was allowed
    (:class:`conformance.producers.sampling_masks.StepSamplingMasks`), only in the step
    of the check of them, else None.
    """

    sampled_token_ids: Any
    logprobs_tensors: Any = None
    num_nans: Any = None
    num_sampled: Any = None
    num_rejected: Any = None
    sampling_mask_tensors: Any = None


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

    What Model Runner V2 hands over besides (None where a step has no such thing):
    ``num_sampled``: int32 ``[num_reqs]`` on the device, the tokens each request keeps
    this step (its accepted tokens; 0 for a discarded request), which that runner's
    async output reads instead of unpadding.
    ``sampler_output``: a :class:`StepSamplerOutput`.
    ``main_stream``: the stream the step's values are computed on (the runtime's current
    stream); the copies must wait for it.
    ``copy_event``: an event of the runtime, for the constructors that take one.
    A pooling step: ``pooler_output`` (``[num_reqs, hidden]`` on the device),
    ``is_valid`` (bool ``[num_reqs]`` on the device, False for a row with no output this
    step) and ``finished_mask`` (the same as host booleans).
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
    num_sampled: Any = None
    sampler_output: Any = None
    main_stream: Any = None
    copy_event: Any = None
    pooler_output: Any = None
    is_valid: Any = None
    finished_mask: list[bool] | None = None

    def arguments(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


#: The first runner's constructor names: the step's own fields of that name.
_FIRST_RUNNER_NAMES = (
    "model_runner_output",
    "sampled_token_ids",
    "logprobs_tensors",
    "invalid_req_indices",
    "async_output_copy_stream",
    "vocab_size",
)
#: A first-runner-shaped constructor may take any step field by its name, and its
#: pooling class's ``raw_pooler_output`` (0.14.0 on) is the step's ``pooler_output``.
_FIRST_RUNNER_ALIASES = {"raw_pooler_output": "pooler_output"}
_STEP_FIELDS = (*(f.name for f in dataclasses.fields(Step)), *_FIRST_RUNNER_ALIASES)

#: Model Runner V2's constructor names and what its runner passes for each.
_MRV2_ARGUMENTS: dict[str, Callable[[Step], Any]] = {
    "model_runner_output": lambda step: step.model_runner_output,
    "sampler_output": lambda step: step.sampler_output,
    "num_sampled_tokens": lambda step: step.num_sampled,
    "main_stream": lambda step: step.main_stream,
    "copy_stream": lambda step: step.async_output_copy_stream,
    "copy_event": lambda step: step.copy_event,
    # The expert-parallel fault query: no all2all in a conformance step.
    "check_ep_fault": lambda step: False,
    # The aux-output connector (0.31+): none configured.
    "pending_aux_output": lambda step: None,
    "routed_experts": lambda step: step.routed_experts,
    "pooler_output": lambda step: step.pooler_output,
    "is_valid": lambda step: step.is_valid,
    "finished_mask": lambda step: step.finished_mask,
}
#: Names only Model Runner V2's constructors take: one of them picks that shape (the
#: first runner's take check_ep_fault, finished_mask and routed_experts too).
_MRV2_ONLY = frozenset(_MRV2_ARGUMENTS) - {
    "model_runner_output",
    "check_ep_fault",
    "pending_aux_output",
    "finished_mask",
    "routed_experts",
}


def constructed_like_vllm(cls: Callable[..., Any]) -> Callable[[Step], Any]:
    """``make_async_output`` for a class whose constructor takes a vLLM runner's arguments.

    A constructor shaped like Model Runner V2's (it names any of ``sampler_output``,
    ``num_sampled_tokens``, ``main_stream``, ``copy_stream``, ...) gets what that runner
    passes; any other gets the :class:`Step` fields of its parameters' names, as the
    first runner passes them.  Parameters with defaults that the shape does not know
    keep their defaults.  A required parameter neither runner hands over is refused at
    once, naming it and both shapes.  The function made says which shape it took
    (``runner``: ``gpu-model-runner`` or ``model-runner-v2``).
    """
    name = getattr(cls, "__qualname__", str(cls))
    old_form = old_form_message(name, cls)
    if old_form is not None:
        raise TypeError(old_form)
    named = _named_parameters(cls)
    mrv2 = any(p.name in _MRV2_ONLY for p in named)
    known: Any = _MRV2_ARGUMENTS if mrv2 else _STEP_FIELDS
    unknown = [p.name for p in named if p.name not in known and p.default is p.empty]
    if unknown:
        raise TypeError(
            f"{name}: required constructor parameter(s) {', '.join(unknown)} are not what "
            "either of vLLM's runners hands over (the first runner's: "
            f"{', '.join(_FIRST_RUNNER_NAMES)}; Model Runner V2's: "
            f"{', '.join(_MRV2_ARGUMENTS)}); give them defaults or write make_async_output "
            "as a function of the step"
        )
    wanted = [p.name for p in named if p.name in known]

    if mrv2:

        def make_async_output(step: Step) -> Any:
            return cls(**{n: _MRV2_ARGUMENTS[n](step) for n in wanted})

    else:

        def make_async_output(step: Step) -> Any:
            return cls(**{n: getattr(step, _FIRST_RUNNER_ALIASES.get(n, n)) for n in wanted})

    make_async_output.__qualname__ = f"constructed_like_vllm({name})"
    make_async_output.runner = MODEL_RUNNER_V2 if mrv2 else FIRST_RUNNER  # type: ignore[attr-defined]
    # A constructor without them is a runner that never hands NaN counts over.
    make_async_output.takes_nan_counts = mrv2 or "num_nans" in wanted  # type: ignore[attr-defined]
    make_async_output.takes_routed_experts = "routed_experts" in wanted  # type: ignore[attr-defined]
    make_async_output.judged_class = (  # type: ignore[attr-defined]
        f"{getattr(cls, '__module__', '?')}.{name}"
    )
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
