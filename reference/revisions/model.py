"""The vocabulary a spec revision is written in: types, fields, methods, behaviours.

A revision is *surface data* (each type's kind, fields, methods, as the release
writes them) plus a set of named *behaviours* (rules of the spec, see
:mod:`reference.revisions.behaviours`).  The conformance suite generates its
surface checks from the data and selects its behaviour checks by name; the
reference builds its implementation of the revision from the same two things.
A later revision is written as the previous one plus its changes
(:func:`derive`), so adding a release is a few lines of data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Kind = Literal["dataclass", "namedtuple", "abc"]
Binding = Literal["instance", "static", "class"]
ParameterKind = Literal["positional_or_keyword", "var_positional"]


class _NoDefault:
    """Marks a field without a default (distinct from a default of None)."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "no default"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class FieldSpec:
    """One field of a dataclass or NamedTuple.

    ``annotation`` is written as the spec writes it; it is compared after
    normalisation (see :mod:`conformance.oracle.annotations`).  ``annotation_meaningful``
    is False where the runtime annotation cannot be compared (a type the spec
    leaves opaque and real backends import only under ``TYPE_CHECKING``).
    ``default_factory`` is the factory's expected *result*, built fresh per call.
    """

    name: str
    annotation: str
    default: Any = NO_DEFAULT
    default_factory: Callable[[], Any] | None = None
    annotation_meaningful: bool = True

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT or self.default_factory is not None

    def default_value(self) -> Any:
        """The value a constructor call that omits this field stores."""
        return self.default_factory() if self.default_factory is not None else self.default


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter of a method, ``self`` / ``cls`` excluded."""

    name: str
    annotation: str | None = None
    default: Any = NO_DEFAULT
    kind: ParameterKind = "positional_or_keyword"


@dataclass(frozen=True)
class MethodSpec:
    """A method: name, binding (instance, static, class), parameters, return annotation."""

    name: str
    parameters: tuple[ParameterSpec, ...] = ()
    returns: str | None = None
    binding: Binding = "instance"
    abstract: bool = False

    def render(self) -> str:
        """The signature as the spec writes it, for messages."""
        params = {"instance": ["self"], "class": ["cls"], "static": []}[self.binding]
        for p in self.parameters:
            text = ("*" if p.kind == "var_positional" else "") + p.name
            text += f": {p.annotation}" if p.annotation else ""
            if p.default is not NO_DEFAULT:
                text += f" = {p.default!r}"
            params.append(text)
        tail = f" -> {self.returns}" if self.returns else ""
        prefix = {"instance": "", "static": "@staticmethod ", "class": "@classmethod "}[
            self.binding
        ]
        prefix += "@abstractmethod " if self.abstract else ""
        return f"{prefix}def {self.name}({', '.join(params)}){tail}"


@dataclass(frozen=True)
class TypeSpec:
    """One spec type.

    ``dataclass_flags`` are the ``@dataclass`` flags in force.  ``held_by`` names
    the spec type whose field holds this one, for types beyond the seven
    (``ECConnectorOutput`` is reported under ``ModelRunnerOutput``).
    ``counted_by_is_empty`` lists the fields whose truth makes ``is_empty()`` False.
    """

    name: str
    kind: Kind
    fields: tuple[FieldSpec, ...] = ()
    methods: tuple[MethodSpec, ...] = ()
    dataclass_flags: dict[str, bool] = field(default_factory=dict)
    held_by: str | None = None
    counted_by_is_empty: tuple[str, ...] = ()

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field_named(self, name: str) -> FieldSpec | None:
        return next((f for f in self.fields if f.name == name), None)

    def method_named(self, name: str) -> MethodSpec | None:
        return next((m for m in self.methods if m.name == name), None)

    @property
    def abstract_methods(self) -> tuple[str, ...]:
        return tuple(sorted(m.name for m in self.methods if m.abstract))

    @property
    def spec_type(self) -> str:
        """The spec type its checks are reported under."""
        return self.held_by or self.name


RowsAs = Literal["lists", "arrays"]
LogprobsBy = Literal[
    "runner", "tolists", "cu-of-kept-tokens", "filtered-to-kept-tokens", "every-logits-row"
]
SamplingMasksListed = Literal["sampled-requests", "every-request", "request-slots"]

#: The constructor of vLLM's own async output: what its runner hands over, in order.
RUNNER_ARGUMENTS_0_10_2 = (
    "model_runner_output",
    "sampled_token_ids",
    "invalid_req_indices",
    "async_output_copy_stream",
)
RUNNER_ARGUMENTS_0_11_1 = (
    "model_runner_output",
    "sampled_token_ids",
    "logprobs_tensors",
    "invalid_req_indices",
    "async_output_copy_stream",
    "vocab_size",
)


@dataclass(frozen=True)
class AsyncOutputContract:
    """What vLLM's own async output of a release does with what its runner hands over.

    Read from the release's ``AsyncGPUModelRunnerOutput`` and the runner method that
    builds it (its producer texts, fetched from its wheel); a plugin's async output of
    the release must do the same.

    ``runner_arguments``: the constructor's parameters, in order (a plugin class with
    these names plugs in without an adapter).
    ``rows``: ``sampled_token_ids`` rows as lists of Python ints, or numpy arrays
    (0.11.1-0.11.2); a discarded row (``invalid_req_indices``) is an empty one.
    ``multi_token_rows``: the runner hands over rows of several tokens (speculative
    decoding under async scheduling), which get_output() unpads (drops -1 and ids >=
    vocab_size); before 0.11.1 the runner never does.
    ``logprobs``: how the logprobs reach the output.  ``runner``: the runner converted
    them before handing over and the async output leaves them (0.10.2, 0.11.0);
    ``tolists``: ``tolists()`` of the copied tensors (0.11.1, one token per row only);
    ``cu-of-kept-tokens``: with several tokens per row, ``tolists(cu)`` whose cu counts
    each row's kept tokens, the tensors holding a row per kept token (0.12.0, 0.13.0);
    ``filtered-to-kept-tokens``: with several tokens per row the tensors hold a row per
    padded position, filtered to the kept ones, then ``tolists(cu)`` (0.14.0 on; Model
    Runner V2 keeps every row and a cu counting them, which vLLM's consumer reads alike:
    the layout is reported, ``logprobs-read-by-request`` required);
    ``every-logits-row``: Model Runner V2's, vLLM's only GPU runner from 0.34.0: the
    tensors hold a row per logits row (every verified position, rejected drafts
    included) and ``tolists()`` reads the cu of the logits the sampler put on them, so
    no row is filtered (a filtering output is read alike by request).  With
    one token per row every rule but ``runner`` is ``tolists()``; the logprobs of a
    discarded request stay (only its sampled ids are emptied).
    ``nan_counts``: where the runner counts NaN logits on the device and hands the counts
    over (``num_nans``; Model Runner V2's ``sampler_output.num_nans``), get_output()
    sets ``num_nans_in_logits`` to each request's count by request id (0.28.0 on; before,
    the first runner counted them on the host itself, and only Model Runner V2's async
    output mapped counts from the device).
    ``nan_counts_mrv2``: Model Runner V2's async output maps its sampler's ``num_nans``
    so (0.13.0 on), where the first runner's did not yet.
    ``routed_experts``: where the runner records the experts each token was routed to
    (``routed_experts``, a ``RoutedExpertsTensors`` on the device), get_output() sets
    ``routed_experts`` to its ``tolists()`` (0.22.0 to 0.30.0).
    ``sampling_masks``: where Model Runner V2's sampler records each request's allowed
    tokens (``sampler_output.sampling_mask_tensors``), its async output copies them to
    the host and sets ``sampling_masks`` to their ``tolists()`` (0.28.0 on; the first
    runner's sampler records none).
    ``sampling_masks_listed``: how the release's mask class (``gpu/sample/output.py``)
    lists them: ``sampled-requests``, ``tolists(num_sampled_tokens)`` keeping the rows of
    requests that sampled a token (0.28.0-0.29.0); ``every-request``, ``tolists()`` with a
    row per request (0.30.0-0.31.0); ``request-slots``, ``tolists(num_sampled_tokens=None)``
    with ``rows_per_request`` slots per request, the counts needed where there are several
    (0.32.0 on).
    ``kv_after_building``: Model Runner V2's runner puts the KV connector's output on its
    ``ModelRunnerOutput`` only after building its ``AsyncOutput`` (``sample_tokens``:
    ``model_runner_output.kv_connector_output = self.kv_connector.post_forward(...)``,
    0.22.0 on), so its async output reads that field when asked, never what it held when
    built (the first runner, and pooling, set it before).
    """

    runner_arguments: tuple[str, ...] = RUNNER_ARGUMENTS_0_11_1
    rows: RowsAs = "lists"
    multi_token_rows: bool = True
    logprobs: LogprobsBy = "cu-of-kept-tokens"
    #: Whether the release's runners build pooling async outputs the suite judges
    #: (the first runner's AsyncGPUPoolingModelRunnerOutput, 0.14.0 on; Model Runner V2's
    #: AsyncPoolingOutput, 0.17.0 on).
    pooling_output: bool = False
    nan_counts: bool = False
    nan_counts_mrv2: bool = False
    routed_experts: bool = False
    sampling_masks: bool = False
    sampling_masks_listed: SamplingMasksListed = "request-slots"
    kv_after_building: bool = False

    @property
    def model_runner_v2_behaviours(self) -> frozenset[str]:
        """What Model Runner V2's async output of the release does beyond
        :attr:`behaviours` (its NaN counts, before the first runner mapped them too)."""
        return frozenset({"producer.async_output:nan-counts"} if self.nan_counts_mrv2 else ())

    @property
    def logprobs_with_multi_token_rows(self) -> bool:
        """Whether a step may carry logprobs and rows of several tokens together."""
        return self.multi_token_rows and self.logprobs in (
            "cu-of-kept-tokens",
            "filtered-to-kept-tokens",
            "every-logits-row",
        )

    @property
    def behaviours(self) -> frozenset[str]:
        """The producer behaviours of the async output this contract implies, as the
        first runner's async output has them (Model Runner V2's add
        :attr:`model_runner_v2_behaviours`)."""
        named = {
            "producer.async_output",
            "producer.async_output:waits-for-device",
            "producer.async_output:independent-outputs",
            "producer.async_output:step-empty-batch",
            "producer.async_output:step-discarded-rows",
            "producer.async_output:step-prompt-logprobs",
            f"producer.async_output:rows-as-{self.rows}",
            f"producer.async_output:logprobs-{self.logprobs}",
        }
        if self.multi_token_rows:
            named.add("producer.async_output:unpads-multi-token-rows")
        if self.logprobs_with_multi_token_rows:
            # What vLLM's consumer reads of them (LogprobsLists.slice_request, 0.12.0 on).
            named.add("producer.async_output:logprobs-read-by-request")
        if self.pooling_output:
            named |= POOLING_BEHAVIOURS
        if self.nan_counts:
            named.add("producer.async_output:nan-counts")
        if self.routed_experts:
            named.add("producer.async_output:routed-experts")
        if self.sampling_masks:
            named.add("producer.async_output:sampling-masks")
        return frozenset(named)


#: The behaviours of a pooling async output (vLLM's from 0.14.0), judged when declared.
POOLING_BEHAVIOURS = frozenset(
    {
        "producer.pooling_output",
        "producer.pooling_output:invalid-rows",
        "producer.pooling_output:waits-for-device",
    }
)

#: The producer behaviours of the backend's other operations, the same in every revision.
OPERATION_PRODUCER_BEHAVIOURS = frozenset(
    {
        "producer.pad_sampled_token_ids",
        "producer.unpad_sampled_token_ids",
        "producer.gather_logprobs",
        "producer.gather_logprobs:speculative-rows",
    }
)


@dataclass(frozen=True)
class SpecRevision:
    """A whole revision: its types by name, its behaviours, the releases it covers.

    ``name`` is ``2025.10`` or the first vLLM release of the group; ``releases``
    are every release whose seven types are identical to it (empty for 2025.10,
    which no release ships).
    """

    name: str
    types: dict[str, TypeSpec]
    behaviours: frozenset[str]
    releases: tuple[str, ...] = ()
    summary: str = ""
    async_output: AsyncOutputContract = AsyncOutputContract()
    #: Members (``Type.member``) whose body the release changed in a way no rule here
    #: says: judged against vLLM's own code of the release, as a head text's changes are.
    judged_by_vllm: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # Short: failure messages and hypothesis' falsifying examples print it.
        return f"SpecRevision({self.name!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def has(self, behaviour: str) -> bool:
        return behaviour in self.behaviours

    def type(self, name: str) -> TypeSpec | None:
        return self.types.get(name)

    # What a revision's payloads are, said once (from its surface data): every reader
    # (the reference's build, the checks' samples, the invariants) asks these.

    @property
    def first_runner(self) -> bool:
        """Whether the release has vLLM's first GPU runner (its ``Sampler``, whose gathering
        casts the ids to int32, and ``RejectionSampler.parse_output``, which filters with
        a numpy mask): every one before 0.34.0, where Model Runner V2 is the only one."""
        return self.async_output.logprobs != "every-logits-row"

    @property
    def logprobs_lists_hold_arrays(self) -> bool:
        """Whether ``LogprobsLists`` holds numpy arrays rather than Python lists (0.11.1 on)."""
        return self._annotation("LogprobsLists", "logprob_token_ids") == "np.ndarray"

    @property
    def sampled_rows_are_arrays(self) -> bool:
        """Whether ``ModelRunnerOutput.sampled_token_ids`` rows are numpy arrays (0.11.1-0.11.2)."""
        return self._annotation("ModelRunnerOutput", "sampled_token_ids") == "list[np.ndarray]"

    def _annotation(self, type_name: str, field_name: str) -> str | None:
        spec = self.types.get(type_name)
        found = spec.field_named(field_name) if spec is not None else None
        return found.annotation if found is not None else None

    @property
    def surface_behaviours(self) -> frozenset[str]:
        return frozenset(surface_behaviour(name) for name in self.types)

    @property
    def all_behaviours(self) -> frozenset[str]:
        """The named behaviours plus one surface behaviour per type."""
        return self.behaviours | self.surface_behaviours

    @property
    def producer_behaviours(self) -> frozenset[str]:
        """The behaviours of a backend's producers judged at this revision."""
        contract = self.async_output
        named = OPERATION_PRODUCER_BEHAVIOURS | contract.behaviours
        named |= contract.model_runner_v2_behaviours
        lists = self.types.get("LogprobsLists")
        if lists is None or not any(m.name == "slice_request" for m in lists.methods):
            # vLLM's consumer reads logprobs by request from slice_request only (0.12.0 on).
            named -= {"producer.async_output:logprobs-read-by-request"}
        return named


def surface_behaviour(type_name: str) -> str:
    """The behaviour of a type's shape: ``LogprobsLists.surface``."""
    return f"{type_name}.surface"


# --- writing a revision as its predecessor plus changes ------------------------------


def derive(
    base: SpecRevision,
    name: str,
    *,
    releases: Iterable[str],
    summary: str,
    types: Iterable[TypeSpec] = (),
    drop_types: Iterable[str] = (),
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    async_output: AsyncOutputContract | None = None,
    judged_by_vllm: Iterable[str] | None = None,
) -> SpecRevision:
    """``base`` with ``types`` replaced or added, ``drop_types`` gone, behaviours changed,
    and the async output contract and the members judged by vLLM's own code replaced
    when given (kept from ``base`` otherwise: a later release keeps the changed body)."""
    new_types = {k: v for k, v in base.types.items() if k not in set(drop_types)}
    for t in types:
        new_types[t.name] = t
    missing = set(remove) - base.behaviours
    if missing:
        raise ValueError(f"revision {name}: removes behaviours {missing} that {base.name} lacks")
    behaviours = (base.behaviours - set(remove)) | set(add)
    return SpecRevision(
        name,
        new_types,
        frozenset(behaviours),
        tuple(releases),
        summary,
        async_output if async_output is not None else base.async_output,
        tuple(judged_by_vllm) if judged_by_vllm is not None else base.judged_by_vllm,
    )


def replacing(members: tuple[Any, ...], *new: Any) -> tuple[Any, ...]:
    """``members`` with each entry of the same name as one of ``new`` swapped for it."""
    by_name = {m.name: m for m in new}
    unknown = set(by_name) - {m.name for m in members}
    if unknown:
        raise ValueError(f"nothing named {sorted(unknown)} to replace")
    return tuple(by_name.get(m.name, m) for m in members)


def inserting(members: tuple[Any, ...], after: str, *new: Any) -> tuple[Any, ...]:
    """``members`` with ``new`` inserted right after the entry named ``after``."""
    names = [m.name for m in members]
    if after not in names:
        raise ValueError(f"nothing named {after!r} to insert after")
    i = names.index(after) + 1
    return (*members[:i], *new, *members[i:])


def without(members: tuple[Any, ...], *names: str) -> tuple[Any, ...]:
    """``members`` without the entries named ``names``."""
    unknown = set(names) - {m.name for m in members}
    if unknown:
        raise ValueError(f"nothing named {sorted(unknown)} to remove")
    return tuple(m for m in members if m.name not in names)


def evolve(spec: TypeSpec, **changes: Any) -> TypeSpec:
    """A copy of ``spec`` with ``changes`` (``fields=...``, ``methods=...``)."""
    return replace(spec, **changes)
