"""The steps the async output checks hand a backend's ``make_async_output``, and what it must give.

A case is host data: the padded sampled ids, the discarded requests, how many top
logprobs.  :func:`build_step` puts it on the step's device the way the revision's
runner holds it (for example the logprobs rows: one per request, per kept token or
per padded position); :func:`expected_output` is what the revision's own vLLM
async output returns for it, computed on the host by the reference's contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from conformance.backends.step import MODEL_RUNNER_V2, Step, StepSamplerOutput
from conformance.oracle.failing import attempt
from conformance.producers.runtime import StepDevice
from reference.revisions import reference_module
from reference.revisions.model import SpecRevision
from reference.runner_async_output import finished_output, kept_positions

#: Realistic vocabularies: Llama 2's and Qwen 2's.
VOCAB_SIZES = (32000, 151936)


@dataclass(frozen=True)
class StepCase:
    """One step as host data; ``rows`` are padded with -1 to one width."""

    name: str
    rows: tuple[tuple[int, ...], ...]
    invalid_req_indices: tuple[int, ...] = ()
    num_logprobs: int | None = None
    vocab_size: int = VOCAB_SIZES[1]
    #: Prompt tokens of the first request whose prompt logprobs the step carries (None: none).
    prompt_tokens: int | None = None
    #: Added to every sampled id and logprobs value (:meth:`salted`); 0 for the plain case.
    salt: int = 0
    #: Model Runner V2's logprobs carry their request boundaries on the device only
    #: (``cu_num_generated_tokens_tensor``, its adaptive verification, 0.29.0 on).
    boundaries_on_device: bool = False

    @property
    def num_reqs(self) -> int:
        return len(self.rows)

    @property
    def multi_token(self) -> bool:
        return any(len(row) != 1 for row in self.rows)

    @property
    def kinds(self) -> frozenset[str]:
        """The step kinds (:data:`conformance.STEP_KINDS`) this step is one of."""
        found = set()
        if not self.rows:
            found.add("empty-batch")
        if self.invalid_req_indices:
            found.add("discarded-rows")
        if self.multi_token:
            found.add("multi-token-rows")
        if self.num_logprobs is not None:
            found.add("logprobs")
        if self.prompt_tokens is not None:
            found.add("prompt-logprobs")
        return frozenset(found)

    def without(self, kinds: frozenset[str]) -> StepCase:
        """This step with the parts of ``kinds`` it can do without dropped (discarded rows,
        logprobs, prompt logprobs); rows of several tokens and an empty batch stay."""
        case = self
        if "discarded-rows" in kinds and case.invalid_req_indices:
            case = replace(case, name=case.name + "-kept", invalid_req_indices=())
        if "logprobs" in kinds and case.num_logprobs is not None:
            case = replace(case, name=case.name.removesuffix(f"-k{case.num_logprobs}"))
            case = replace(case, num_logprobs=None)
        if "prompt-logprobs" in kinds and case.prompt_tokens is not None:
            case = replace(case, prompt_tokens=None)
        return case

    def padded(self) -> torch.Tensor:
        width = len(self.rows[0]) if self.rows else 1
        return torch.tensor(self.rows, dtype=torch.int32).reshape(len(self.rows), width)

    def salted(self, salt: int) -> StepCase:
        """This (plain) step with every sampled id and logprobs value moved: the same
        shapes, no value in the same place as the plain step's (salt 0) or as that of any
        other salt within 999 of ``salt``.  A device's host buffers are reused from step
        to step, so a read before the copy lands can find an earlier step's values; only
        values no earlier step wrote tell such a read from a fresh one."""
        shift = 1 + (salt - 1) % 999 if salt else 0
        rows = tuple(
            tuple(t if t < 0 else (t + shift) % self.vocab_size for t in row) for row in self.rows
        )
        return replace(self, rows=rows, salt=shift)

    def with_logprobs(self, k: int | None) -> StepCase:
        suffix = "" if k is None else f"-k{k}"
        return replace(self, name=self.name + suffix, num_logprobs=k)

    def with_boundaries_on_device(self) -> StepCase:
        return replace(self, name=self.name + "-boundaries-on-device", boundaries_on_device=True)

    def __str__(self) -> str:
        return self.name


def _tokens(num_reqs: int, start: int = 101_000) -> tuple[tuple[int, ...], ...]:
    # Ids in the tens of thousands: below 257 Python caches ints, which hides costs.
    return tuple((start + 37 * i,) for i in range(num_reqs))


ONE_TOKEN_CASES = (
    StepCase("empty-batch", ()),
    StepCase("one-token-per-request", _tokens(3)),
    StepCase("discarded-rows", _tokens(4), invalid_req_indices=(1, 3)),
    StepCase("256-requests", _tokens(256), invalid_req_indices=(7,)),
    StepCase("vocabulary-32000", _tokens(3, start=31_000), vocab_size=VOCAB_SIZES[0]),
    StepCase("prompt-logprobs", _tokens(2), prompt_tokens=6),
)

MULTI_TOKEN_CASES = (
    StepCase(
        "multi-token-rows",
        ((120_001, 120_002, -1), (-1, -1, -1), (120_003, 120_004, 120_005)),
    ),
    StepCase(
        "multi-token-discarded",
        ((120_011, -1), (120_012, 120_013), (120_014, -1), (120_015, 120_016)),
        invalid_req_indices=(1,),
    ),
)

#: Rows of several tokens holding ids at or beyond the vocabulary after their kept ones:
#: vLLM's unpadding drops them as it drops -1 (``parse_output`` keeps ``id < vocab_size``),
#: and a count of kept tokens (Model Runner V2's) ends before them.  No logprobs: how
#: many logprobs rows a runner holds for such a token is not the release's to say.
BEYOND_VOCABULARY_CASE = StepCase(
    "multi-token-beyond-vocabulary",
    (
        (120_021, VOCAB_SIZES[1] + 5, -1),
        (120_022, 120_023, VOCAB_SIZES[1]),
        (120_024, -1, -1),
    ),
)

LOGPROBS_WIDTHS = (0, 1, 5, 20)


def logprobs_cases(revision: SpecRevision) -> list[StepCase]:
    """The cases with logprobs the revision's runner can hand over."""
    one = ONE_TOKEN_CASES[1]
    cases = [one.with_logprobs(k) for k in LOGPROBS_WIDTHS]
    cases += [ONE_TOKEN_CASES[2].with_logprobs(5), ONE_TOKEN_CASES[3].with_logprobs(20)]
    if revision.async_output.logprobs_with_multi_token_rows:
        cases += [case.with_logprobs(5) for case in MULTI_TOKEN_CASES]
    return cases


def _logprobs_rows(case: StepCase, revision: SpecRevision) -> int:
    """How many logprobs rows the revision's runner holds for this step."""
    if not case.multi_token:
        return case.num_reqs
    if revision.async_output.logprobs in ("filtered-to-kept-tokens", "every-logits-row"):
        return case.num_reqs * len(case.rows[0])
    return int(kept_positions(case.padded(), case.vocab_size).sum())


def host_logprobs(case: StepCase, revision: SpecRevision) -> tuple[torch.Tensor, ...] | None:
    """Distinct values per row (so a misplaced row shows): ids, sorted logprobs, int64 ranks."""
    if case.num_logprobs is None:
        return None
    n, width = _logprobs_rows(case, revision), case.num_logprobs + 1
    cells = torch.arange(n * width).reshape(n, width) + case.salt
    ids = (80_000 + cells).to(torch.int32)
    logprobs = -(cells.to(torch.float32)) / 8
    ranks = torch.arange(1 + case.salt, n + 1 + case.salt, dtype=torch.int64)
    return ids, logprobs, ranks


def _prompt_logprobs(backend: Any, case: StepCase) -> dict[str, Any]:
    """The prompt logprobs the runner puts on its output: host tensors, per request id."""
    if case.prompt_tokens is None:
        return {}
    n, width = case.prompt_tokens - 1, 3  # none for the first prompt token; top-2 beside it
    cells = torch.arange(n * width).reshape(n, width)
    tensors = (
        (90_000 + cells).to(torch.int32),
        -(cells.to(torch.float32)) / 4,
        torch.arange(1, n + 1, dtype=torch.int64),
    )
    made = attempt("LogprobsTensors(<prompt logprobs>)", backend.module.LogprobsTensors, *tensors)
    return {"req-0": made}


def _handed_over_beside(backend: Any, revision: SpecRevision, case: StepCase) -> dict[str, Any]:
    """What else the runner puts on its output before handing it over: a KV transfer
    finished, the NaN counts it took itself (before 0.28.0).  vLLM's async outputs return
    that output with them; one that rebuilds it from the ids and rows loses them."""
    if not case.num_reqs:
        return {}
    beside: dict[str, Any] = {}
    connector = getattr(backend.module, "KVConnectorOutput", None)
    if connector is not None:
        beside["kv_connector_output"] = attempt(
            "KVConnectorOutput(finished_sending=...)", connector, finished_sending={"req-0"}
        )
    if not revision.async_output.nan_counts:  # from 0.28.0 get_output() sets them
        beside["num_nans_in_logits"] = {"req-0": 1}
    return beside


def runner_model_runner_output(backend: Any, revision: SpecRevision, case: StepCase, **extra: Any):
    """The backend's ModelRunnerOutput as the revision's runner builds it before handing over."""
    req_ids = [f"req-{i}" for i in range(case.num_reqs)]
    values: dict[str, Any] = {
        "req_ids": req_ids,
        "req_id_to_index": {r: i for i, r in enumerate(req_ids)},
        "sampled_token_ids": [],
        "logprobs": None,
        "prompt_logprobs_dict": _prompt_logprobs(backend, case),
        "pooler_output": [],
        **_handed_over_beside(backend, revision, case),
        **extra,
    }
    tensors = host_logprobs(case, revision)
    if revision.async_output.logprobs == "runner" and tensors is not None:
        # These runners convert the logprobs themselves, with the backend's own type.
        made = attempt("LogprobsTensors(<step logprobs>)", backend.module.LogprobsTensors, *tensors)
        values["logprobs"] = attempt("LogprobsTensors.tolists()", made.tolists)
    fields = revision.types["ModelRunnerOutput"].field_names
    cls = backend.module.ModelRunnerOutput
    return attempt(
        "ModelRunnerOutput(<the runner's step>)",
        cls,
        **{name: value for name, value in values.items() if name in fields},
    )


def left_by_device(case: StepCase) -> torch.Tensor:
    """The sampled ids as Model Runner V2's runner hands them over: each request's kept
    tokens first, then whatever the device left (its rejection sampler allocates the
    ids with ``new_empty``, and a discarded request's row holds a sampled token).

    What is left here is token-like on purpose: ids inside the vocabulary, never -1, so
    only an unpadding by count (``num_sampled``), as vLLM's ``get_output`` does, drops
    them; one that filters -1 or out-of-vocabulary ids keeps them and is caught."""
    padded = case.padded().clone()
    counts = num_sampled(case)
    for i in range(padded.shape[0]):
        for j in range(int(counts[i]), padded.shape[1]):
            padded[i, j] = (LEFT_BY_DEVICE_BASE + 101 * i + j) % case.vocab_size
    return padded


#: Where the ids the device left past a request's count start (modulo the step's
#: vocabulary): apart from the cases' own tokens, so ``expected`` vs ``found`` reads clearly.
LEFT_BY_DEVICE_BASE = 60_017


def num_sampled(case: StepCase) -> torch.Tensor:
    """int32 ``[num_reqs]``: the tokens each request keeps (0 for a discarded one), as Model
    Runner V2's rejection step counts them (its accepted tokens)."""
    keep = kept_positions(case.padded(), case.vocab_size).sum(axis=1) if case.rows else []
    counts = [0 if i in case.invalid_req_indices else int(n) for i, n in enumerate(keep)]
    return torch.tensor(counts, dtype=torch.int32)


def has_logprobs_cu(backend: Any, revision: SpecRevision) -> bool:
    """Whether the revision's LogprobsTensors, and the backend's, carry
    ``cu_num_generated_tokens`` (0.16.0+): Model Runner V2's runner hands logprobs with
    rows of several tokens only then (its async output's ``tolists()`` reads that cu)."""
    spec = revision.types.get("LogprobsTensors")
    own = getattr(getattr(backend.module, "LogprobsTensors", None), "_fields", ())
    return (
        spec is not None
        and "cu_num_generated_tokens" in spec.field_names
        and "cu_num_generated_tokens" in own
    )


def _mrv2_logprobs(
    backend: Any, revision: SpecRevision, case: StepCase, device: StepDevice, given: Any = None
) -> Any:
    """The step's logprobs as Model Runner V2's sampler lays them out: a row per logits row
    (every verified position, rejected drafts and discarded requests included), the
    tensors' ``cu_num_generated_tokens`` counting them.  Without that field (before
    0.16.0) its runner builds no logprobs with several tokens per row; the rows are then
    the first runner's (such a step is not judged for it).  ``given``: the step's own
    tensors (the race check's, written late), laid out so."""
    tensors = host_logprobs(case, revision)
    if tensors is None:
        return None
    extra: tuple[Any, ...] = ()
    width = len(case.rows[0]) if case.rows else 1
    if (
        case.multi_token
        and has_logprobs_cu(backend, revision)
        and _logprobs_rows(case, revision) == case.num_reqs * width
    ):
        extra = ([width * i for i in range(case.num_reqs + 1)],)
    if given is not None:
        return given._replace(cu_num_generated_tokens=extra[0]) if extra else given
    if extra and case.boundaries_on_device and boundaries_on_device_held(backend, revision):
        # Adaptive verification: the boundaries exist on the device only; they ride along
        # on the async output's copy, and tolists() reads them from there.
        cu = torch.tensor(extra[0], dtype=torch.int32)
        return attempt(
            "LogprobsTensors(<Model Runner V2's step logprobs, boundaries on the device>)",
            backend.module.LogprobsTensors,
            *_logprobs_on(device, tensors),
            None,
            device.tensor(cu, "logprobs.cu_num_generated_tokens_tensor"),
        )
    return attempt(
        "LogprobsTensors(<Model Runner V2's step logprobs on the device>)",
        backend.module.LogprobsTensors,
        *_logprobs_on(device, tensors),
        *extra,
    )


def boundaries_on_device_held(backend: Any, revision: SpecRevision) -> bool:
    """Whether the revision's ``LogprobsTensors`` (and the backend's) hold request boundaries
    on the device (``cu_num_generated_tokens_tensor``, 0.29.0 on)."""
    spec = revision.types.get("LogprobsTensors")
    own = getattr(getattr(backend.module, "LogprobsTensors", None), "_fields", ())
    field = "cu_num_generated_tokens_tensor"
    return spec is not None and field in spec.field_names and field in own


def _logprobs_on(device: StepDevice, tensors: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    names = ("logprob_token_ids", "logprobs", "sampled_token_ranks")
    return [device.tensor(t, f"logprobs.{n}") for t, n in zip(tensors, names, strict=True)]


def made_as_the_runner_makes(
    make: Callable[[Step], Any], step: Step, revision: SpecRevision, runner: str
) -> Any:
    """``make(step)`` as the revision's runner of shape ``runner`` calls it.

    Model Runner V2's puts the KV connector's output on its ``ModelRunnerOutput`` only
    after building the async output (``kv_after_building``, 0.22.0 on): the field is
    None during the call and set after it, so an async output that copies the output,
    or its KV field, when built loses it here as it would in vLLM.  A runner the
    producer names no shape of is Model Runner V2 only where it is the release's only
    runner."""
    output = step.model_runner_output
    kv = getattr(output, "kv_connector_output", None)
    if kv is None or not made_after_building(revision, runner):
        return make(step)
    try:
        output.kv_connector_output = None
    except Exception:  # an output that takes no assignment: its surface checks say so
        return make(step)
    try:
        return make(step)
    finally:
        output.kv_connector_output = kv


def made_after_building(revision: SpecRevision, runner: str) -> bool:
    """Whether the revision's runner of shape ``runner`` sets the KV connector's output on
    its ModelRunnerOutput after building the async output (:func:`made_as_the_runner_makes`)."""
    return revision.async_output.kv_after_building and handed_over_by_model_runner_v2(
        revision, runner
    )


def handed_over_by_model_runner_v2(revision: SpecRevision, runner: str) -> bool:
    """Whether Model Runner V2's runner builds an async output of shape ``runner``: one of
    its shape, or one of no known shape where it is the release's only runner."""
    return runner == MODEL_RUNNER_V2 or (runner in ("", "backend") and not revision.first_runner)


def build_step(
    backend: Any,
    revision: SpecRevision,
    case: StepCase,
    device: StepDevice,
    sampled_token_ids: torch.Tensor | None = None,
    logprobs_tensors: Any = None,
    num_nans: Any = None,
    routed_experts: Any = None,
    sampling_mask_tensors: Any = None,
    **model_runner_output_fields: Any,
) -> Step:
    """The step of ``case`` on ``device``; ``sampled_token_ids`` and ``logprobs_tensors``
    replace the ids and the logprobs (the race check's, written late).

    It carries what both of vLLM's runners hand over: the first runner's padded ids and
    logprobs rows, and Model Runner V2's ``num_sampled``, sampler output, main stream."""
    tensors = host_logprobs(case, revision)
    logprobs = logprobs_tensors
    if tensors is not None and logprobs is None:
        logprobs = attempt(
            "LogprobsTensors(<step logprobs on the device>)",
            backend.module.LogprobsTensors,
            *_logprobs_on(device, tensors),
        )
    sampled = (
        sampled_token_ids
        if sampled_token_ids is not None
        else device.tensor(case.padded(), "sampled_token_ids")
    )
    counts = num_sampled(case)
    # Model Runner V2 hands over what its sampler left past each request's count.
    left = (
        sampled
        if sampled_token_ids is not None
        else device.tensor(left_by_device(case), "sampler_output.sampled_token_ids")
    )
    width = len(case.rows[0]) if case.rows else 1
    rejected = torch.where(counts > 0, width - counts, torch.zeros_like(counts))
    device_counts = device.tensor(counts, "num_sampled")
    return Step(
        model_runner_output=runner_model_runner_output(
            backend, revision, case, **model_runner_output_fields
        ),
        sampled_token_ids=sampled,
        logprobs_tensors=logprobs,
        invalid_req_indices=list(case.invalid_req_indices),
        async_output_copy_stream=device.stream(),
        vocab_size=case.vocab_size,
        device=device.kind,
        num_nans=num_nans,
        routed_experts=routed_experts,
        num_sampled=device_counts,
        sampler_output=StepSamplerOutput(
            sampled_token_ids=left,
            logprobs_tensors=_mrv2_logprobs(backend, revision, case, device, logprobs_tensors),
            num_nans=num_nans,
            num_sampled=device_counts,
            num_rejected=device.tensor(rejected, "sampler_output.num_rejected"),
            sampling_mask_tensors=sampling_mask_tensors,
        ),
        main_stream=device.main_stream(),
        copy_event=device.event(),
    )


def expected_output(revision: SpecRevision, step_output: Any, case: StepCase) -> Any:
    """What the revision's vLLM async output returns for ``case`` (the reference's types)."""
    module = reference_module(revision.name)
    tensors = host_logprobs(case, revision)
    logprobs = module.LogprobsTensors(*tensors) if tensors is not None else None
    return attempt(
        "the runner's ModelRunnerOutput copied with dataclasses.replace",
        finished_output,
        step_output,
        case.padded(),
        logprobs,
        case.invalid_req_indices,
        case.vocab_size,
        revision.async_output,
    )
