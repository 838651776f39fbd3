"""Every vLLM release from 0.10.2 on as a spec revision: the data module.

Each revision is written as its predecessor plus what the release changed in
``vllm/v1/outputs.py`` (read from each release's own text), and covers every
release whose types are identical to it.  To add the next release: if its
types are unchanged, append its version to the ``releases`` of the last revision;
otherwise append a ``derive(...)`` with its changes, and, only for a genuinely
new rule, a behaviour (``behaviours.py``), its reference implementation
(``methods.py``) and its checks (``conformance/checks``).
"""

from __future__ import annotations

from dataclasses import replace

from reference.revisions import rev_2025_10 as seed
from reference.revisions.model import (
    RUNNER_ARGUMENTS_0_10_2,
    AsyncOutputContract,
    FieldSpec,
    MethodSpec,
    ParameterSpec,
    SpecRevision,
    TypeSpec,
    derive,
    evolve,
    inserting,
    replacing,
    without,
)

PLAIN_DATACLASS = seed.PLAIN_DATACLASS


def _opaque(name: str, annotation: str) -> FieldSpec:
    """A field typed by a class vLLM imports only under TYPE_CHECKING (None by default)."""
    return FieldSpec(name, annotation, default=None, annotation_meaningful=False)


def _optional(name: str, annotation: str) -> FieldSpec:
    return FieldSpec(name, f"{annotation} | None", default=None)


def _static(name: str, *parameters: ParameterSpec, returns: str | None = None) -> MethodSpec:
    return MethodSpec(name, parameters=parameters, returns=returns, binding="static")


_EMPTY_CPU = seed.LOGPROBS_TENSORS.method_named("empty_cpu")
assert _EMPTY_CPU is not None
_SLICE_REQUEST = MethodSpec(
    "slice_request",
    parameters=(ParameterSpec("req_idx", "int"), ParameterSpec("num_positions", "int")),
)

# --- 0.10.2: the first release with all seven types ----------------------------------

LOGPROBS_LISTS_0_10_2 = TypeSpec(
    name="LogprobsLists",
    kind="namedtuple",
    fields=seed.LOGPROBS_LISTS.fields[:3],
    methods=(
        MethodSpec(
            "slice", parameters=(ParameterSpec("start", "int"), ParameterSpec("end", "int"))
        ),
    ),
)
LOGPROBS_TENSORS_0_10_2 = evolve(seed.LOGPROBS_TENSORS, methods=(MethodSpec("tolists"), _EMPTY_CPU))
KV_CONNECTOR_OUTPUT_0_10_2 = TypeSpec(
    name="KVConnectorOutput",
    kind="dataclass",
    fields=seed.KV_CONNECTOR_OUTPUT.fields[:2],
    dataclass_flags=PLAIN_DATACLASS,
)

R_0_10_2 = SpecRevision(
    name="0.10.2",
    types={
        **seed.REVISION.types,
        "LogprobsLists": LOGPROBS_LISTS_0_10_2,
        "LogprobsTensors": LOGPROBS_TENSORS_0_10_2,
        "KVConnectorOutput": KV_CONNECTOR_OUTPUT_0_10_2,
    },
    behaviours=seed.COMMON_BEHAVIOURS
    | {"LogprobsLists.slice:rows", "LogprobsTensors.tolists:python-lists"},
    releases=("0.10.2",),
    summary="Python lists without cu, slice(start, end), tolists() without argument, "
    "KVConnectorOutput of finished_* only",
    # The runner converts the logprobs itself and, under async scheduling, only ever
    # hands over one token per request (it asserts so).
    async_output=AsyncOutputContract(
        runner_arguments=RUNNER_ARGUMENTS_0_10_2,
        rows="lists",
        multi_token_rows=False,
        logprobs="runner",
    ),
)

R_0_11_0 = derive(
    R_0_10_2,
    "0.11.0",
    releases=("0.11.0",),
    summary="KVConnectorOutput.kv_connector_stats and is_empty",
    types=[
        evolve(
            KV_CONNECTOR_OUTPUT_0_10_2,
            fields=seed.KV_CONNECTOR_OUTPUT.fields[:3],
            methods=(MethodSpec("is_empty"),),
            counted_by_is_empty=("finished_sending", "finished_recving", "kv_connector_stats"),
        )
    ],
    add=["KVConnectorOutput.is_empty"],
)

# --- 0.11.1: numpy arrays, a rebasing slice, ECConnectorOutput -----------------------

EC_CONNECTOR_OUTPUT_0_11_1 = TypeSpec(
    name="ECConnectorOutput",
    kind="dataclass",
    fields=seed.KV_CONNECTOR_OUTPUT.fields[:2],
    dataclass_flags=PLAIN_DATACLASS,
    held_by="ModelRunnerOutput",
)
_NDARRAY_FIELDS = (
    FieldSpec("logprob_token_ids", "np.ndarray"),
    FieldSpec("logprobs", "np.ndarray"),
    FieldSpec("sampled_token_ranks", "np.ndarray"),
)
MODEL_RUNNER_OUTPUT_0_11_1 = evolve(
    seed.MODEL_RUNNER_OUTPUT,
    fields=inserting(
        replacing(
            seed.MODEL_RUNNER_OUTPUT.fields, FieldSpec("sampled_token_ids", "list[np.ndarray]")
        ),
        "kv_connector_output",
        _optional("ec_connector_output", "ECConnectorOutput"),
    ),
)

R_0_11_1 = derive(
    seed.REVISION,
    "0.11.1",
    releases=("0.11.1", "0.11.2"),
    summary="numpy arrays in LogprobsLists and sampled_token_ids, slice rebases cu, "
    "tolists returns numpy, ECConnectorOutput",
    types=[
        evolve(seed.LOGPROBS_LISTS, fields=(*_NDARRAY_FIELDS, seed.LOGPROBS_LISTS.fields[3])),
        MODEL_RUNNER_OUTPUT_0_11_1,
        EC_CONNECTOR_OUTPUT_0_11_1,
    ],
    add=[
        "LogprobsLists.slice:cu-rebased",
        "LogprobsTensors.tolists:numpy-arrays",
        "ECConnectorOutput.dataclass",
    ],
    remove=["LogprobsLists.slice:cu-not-rebased", "LogprobsTensors.tolists:python-lists"],
    # get_output() unpads through RejectionSampler.parse_output and converts the
    # logprobs with tolists(), which this release pairs with one token per request only.
    async_output=AsyncOutputContract(rows="arrays", logprobs="tolists"),
)

R_0_12_0 = derive(
    R_0_11_1,
    "0.12.0",
    releases=("0.12.0",),
    summary="slice replaced by slice_request; sampled_token_ids lists again",
    types=[
        evolve(R_0_11_1.types["LogprobsLists"], methods=(_SLICE_REQUEST,)),
        evolve(
            MODEL_RUNNER_OUTPUT_0_11_1,
            fields=replacing(
                MODEL_RUNNER_OUTPUT_0_11_1.fields,
                FieldSpec("sampled_token_ids", "list[list[int]]"),
            ),
        ),
    ],
    add=["LogprobsLists.slice_request"],
    remove=["LogprobsLists.slice:cu-rebased"],
    async_output=AsyncOutputContract(rows="lists", logprobs="cu-of-kept-tokens"),
)

_KV = seed.KV_CONNECTOR_OUTPUT
KV_CONNECTOR_OUTPUT_0_13_0 = evolve(
    _KV,
    fields=inserting(
        _KV.fields, "kv_connector_stats", _opaque("kv_cache_events", "KVConnectorKVEvents | None")
    ),
    counted_by_is_empty=(*_KV.counted_by_is_empty, "kv_cache_events"),
)
_MRO_0_12 = R_0_12_0.types["ModelRunnerOutput"]
R_0_13_0 = derive(
    R_0_12_0,
    "0.13.0",
    releases=("0.13.0",),
    summary="KVConnectorOutput.kv_cache_events; ModelRunnerOutput.cudagraph_stats",
    # Model Runner V2's AsyncOutput maps its sampler's NaN counts by request
    # (vllm/v1/worker/gpu/async_utils.py); the first runner's from 0.28.0.
    async_output=replace(R_0_12_0.async_output, nan_counts_mrv2=True),
    types=[
        KV_CONNECTOR_OUTPUT_0_13_0,
        evolve(
            _MRO_0_12, fields=(*_MRO_0_12.fields, _optional("cudagraph_stats", "CUDAGraphStat"))
        ),
    ],
)

# --- 0.14.0: defaults everywhere, filter ---------------------------------------------

_MRO_0_13 = R_0_13_0.types["ModelRunnerOutput"]
MODEL_RUNNER_OUTPUT_0_14_0 = evolve(
    _MRO_0_13,
    fields=replacing(
        _MRO_0_13.fields,
        FieldSpec("sampled_token_ids", "list[list[int]]", default_factory=list),
        FieldSpec("logprobs", "LogprobsLists | None", default=None),
        FieldSpec(
            "prompt_logprobs_dict", "dict[str, LogprobsTensors | None]", default_factory=dict
        ),
        FieldSpec("pooler_output", "list[torch.Tensor | None] | None", default=None),
    ),
)
_FILTER = MethodSpec(
    "filter", parameters=(ParameterSpec("mask", "torch.Tensor"),), returns="LogprobsTensors"
)
_LT = seed.LOGPROBS_TENSORS
LOGPROBS_TENSORS_0_14_0 = evolve(_LT, methods=inserting(_LT.methods, "to_cpu_nonblocking", _FILTER))
R_0_14_0 = derive(
    R_0_13_0,
    "0.14.0",
    releases=("0.14.0", "0.14.1", "0.15.0", "0.15.1"),
    summary="every ModelRunnerOutput field but req_ids, req_id_to_index has a default; "
    "LogprobsTensors.filter",
    types=[MODEL_RUNNER_OUTPUT_0_14_0, LOGPROBS_TENSORS_0_14_0],
    add=["LogprobsTensors.filter"],
    # parse_output filters the logprobs rows of padded positions itself; the first
    # runner's AsyncGPUPoolingModelRunnerOutput joins (vllm/v1/worker/gpu_model_runner.py).
    async_output=AsyncOutputContract(
        rows="lists", logprobs="filtered-to-kept-tokens", pooling_output=True, nan_counts_mrv2=True
    ),
)

_CU_FIELD = FieldSpec("cu_num_generated_tokens", "list[int] | None", default=None)
LOGPROBS_TENSORS_0_16_0 = evolve(LOGPROBS_TENSORS_0_14_0, fields=(*_LT.fields, _CU_FIELD))
R_0_16_0 = derive(
    R_0_14_0,
    "0.16.0",
    releases=("0.16.0",),
    summary="LogprobsTensors.cu_num_generated_tokens, the fallback of tolists",
    types=[LOGPROBS_TENSORS_0_16_0],
    add=["LogprobsTensors.cu_num_generated_tokens"],
)

_MERGE = MethodSpec(
    "merge",
    parameters=(ParameterSpec("outputs", "KVConnectorOutput", kind="var_positional"),),
    binding="class",
)
R_0_17_0 = derive(
    R_0_16_0,
    "0.17.0",
    releases=("0.17.0", "0.17.1"),
    summary="KVConnectorOutput.merge",
    types=[
        evolve(KV_CONNECTOR_OUTPUT_0_13_0, methods=(*KV_CONNECTOR_OUTPUT_0_13_0.methods, _MERGE))
    ],
    add=["KVConnectorOutput.merge"],
    # Model Runner V2's AsyncPoolingOutput joins (vllm/v1/worker/gpu/async_utils.py),
    # judged by the pooling contract of 0.14.0.
)

KV_CONNECTOR_OUTPUT_0_18_0 = evolve(
    KV_CONNECTOR_OUTPUT_0_13_0,
    fields=inserting(
        KV_CONNECTOR_OUTPUT_0_13_0.fields,
        "kv_cache_events",
        _opaque("kv_connector_worker_meta", "KVConnectorWorkerMetadata | None"),
    ),
    counted_by_is_empty=(
        *KV_CONNECTOR_OUTPUT_0_13_0.counted_by_is_empty,
        "kv_connector_worker_meta",
    ),
)
R_0_18_0 = derive(
    R_0_17_0,
    "0.18.0",
    releases=("0.18.0", "0.18.1", "0.19.0", "0.19.1"),
    summary="KVConnectorOutput.kv_connector_worker_meta",
    types=[
        evolve(KV_CONNECTOR_OUTPUT_0_18_0, methods=(*KV_CONNECTOR_OUTPUT_0_18_0.methods, _MERGE))
    ],
)

R_0_20_0 = derive(
    R_0_18_0,
    "0.20.0",
    releases=("0.20.0", "0.20.1", "0.20.2"),
    summary="KVConnectorOutput.merge removed again",
    types=[KV_CONNECTOR_OUTPUT_0_18_0],
    remove=["KVConnectorOutput.merge"],
)

R_0_21_0 = derive(
    R_0_20_0,
    "0.21.0",
    releases=("0.21.0",),
    summary="ModelRunnerOutput.routed_experts_dict",
    types=[
        evolve(
            MODEL_RUNNER_OUTPUT_0_14_0,
            fields=inserting(
                MODEL_RUNNER_OUTPUT_0_14_0.fields,
                "num_nans_in_logits",
                _optional("routed_experts_dict", "dict[str, np.ndarray]"),
            ),
        )
    ],
)

# --- 0.22.0: RoutedExperts* -----------------------------------------------------------

ROUTED_EXPERTS_TENSORS = TypeSpec(
    name="RoutedExpertsTensors",
    kind="namedtuple",
    fields=(FieldSpec("routing_data", "torch.Tensor"), FieldSpec("slot_mapping", "torch.Tensor")),
    methods=(
        MethodSpec("to_cpu_nonblocking", returns="RoutedExpertsTensors"),
        MethodSpec("tolists", returns="RoutedExpertsLists"),
    ),
    held_by="ModelRunnerOutput",
)
ROUTED_EXPERTS_LISTS = TypeSpec(
    name="RoutedExpertsLists",
    kind="namedtuple",
    fields=(FieldSpec("routing_data", "np.ndarray"), FieldSpec("slot_mapping", "np.ndarray")),
    held_by="ModelRunnerOutput",
)
MODEL_RUNNER_OUTPUT_0_22_0 = evolve(
    MODEL_RUNNER_OUTPUT_0_14_0,
    fields=(
        *MODEL_RUNNER_OUTPUT_0_14_0.fields,
        _optional("routed_experts", "RoutedExpertsLists"),
    ),
)
R_0_22_0 = derive(
    R_0_21_0,
    "0.22.0",
    releases=("0.22.0", "0.22.1"),
    summary="routed_experts_dict replaced by routed_experts: RoutedExpertsLists",
    types=[MODEL_RUNNER_OUTPUT_0_22_0, ROUTED_EXPERTS_TENSORS, ROUTED_EXPERTS_LISTS],
    add=["RoutedExpertsTensors.to_lists"],
    # The first runner's AsyncGPUModelRunnerOutput takes routed_experts and hands over
    # their tolists() (vllm/v1/worker/gpu_model_runner.py); Model Runner V2's sample_tokens
    # sets the KV connector's output after building its AsyncOutput (gpu/model_runner.py).
    async_output=replace(R_0_21_0.async_output, routed_experts=True, kv_after_building=True),
)

_WITH_KV_ONLY = _static(
    "with_kv_conn_output_only",
    ParameterSpec("kv_connector_output", "KVConnectorOutput | None"),
    returns="ModelRunnerOutput",
)
MODEL_RUNNER_OUTPUT_0_23_0 = evolve(MODEL_RUNNER_OUTPUT_0_22_0, methods=(_WITH_KV_ONLY,))
R_0_23_0 = derive(
    R_0_22_0,
    "0.23.0",
    releases=("0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0"),
    summary="ModelRunnerOutput.with_kv_conn_output_only",
    types=[MODEL_RUNNER_OUTPUT_0_23_0],
    add=["ModelRunnerOutput.with_kv_conn_output_only"],
)

_CAT = _static(
    "cat",
    ParameterSpec("tensors", 'Sequence["LogprobsTensors"]'),
    ParameterSpec("cu_num_generated_tokens", "list[int] | None", default=None),
    returns="LogprobsTensors",
)
LOGPROBS_TENSORS_0_27_0 = evolve(
    LOGPROBS_TENSORS_0_16_0,
    methods=inserting(LOGPROBS_TENSORS_0_16_0.methods, "filter", _CAT),
)
R_0_27_0 = derive(
    R_0_23_0,
    "0.27.0",
    releases=("0.27.0", "0.27.1"),
    summary="LogprobsTensors.cat",
    types=[LOGPROBS_TENSORS_0_27_0],
    add=["LogprobsTensors.cat"],
)

# --- 0.28.0: SamplingMaskLists, ECConnectorOutput.is_empty ---------------------------

_SLICE_MASKS = MethodSpec(
    "slice_request",
    parameters=_SLICE_REQUEST.parameters,
    returns="SamplingMaskLists",
)
SAMPLING_MASK_LISTS_0_28_0 = TypeSpec(
    name="SamplingMaskLists",
    kind="namedtuple",
    fields=(
        FieldSpec("token_ids", "np.ndarray"),
        FieldSpec("offsets", "np.ndarray"),
        _CU_FIELD,
    ),
    methods=(
        _SLICE_MASKS,
        MethodSpec("to_nested_list", returns="list[list[int]]"),
        _static(
            "merge",
            ParameterSpec("chunks", 'Sequence["SamplingMaskLists"]'),
            returns="SamplingMaskLists",
        ),
    ),
    held_by="ModelRunnerOutput",
)
EC_CONNECTOR_OUTPUT_0_28_0 = evolve(
    EC_CONNECTOR_OUTPUT_0_11_1,
    fields=(
        *EC_CONNECTOR_OUTPUT_0_11_1.fields,
        _opaque("ec_connector_worker_meta", "ECConnectorWorkerMetadata | None"),
    ),
    methods=(MethodSpec("is_empty"),),
    counted_by_is_empty=("finished_sending", "finished_recving", "ec_connector_worker_meta"),
)
MODEL_RUNNER_OUTPUT_0_28_0 = evolve(
    MODEL_RUNNER_OUTPUT_0_23_0,
    fields=(*MODEL_RUNNER_OUTPUT_0_23_0.fields, _optional("sampling_masks", "SamplingMaskLists")),
    methods=(
        _WITH_KV_ONLY,
        _static(
            "with_ec_conn_output_only",
            ParameterSpec("ec_connector_output", "ECConnectorOutput | None"),
            returns="ModelRunnerOutput",
        ),
        _static(
            "with_ec_conn_output",
            ParameterSpec("output", "ModelRunnerOutput"),
            ParameterSpec("ec_connector_output", "ECConnectorOutput | None"),
            returns="ModelRunnerOutput",
        ),
    ),
)
R_0_28_0 = derive(
    R_0_27_0,
    "0.28.0",
    releases=("0.28.0",),
    summary="SamplingMaskLists and ModelRunnerOutput.sampling_masks, with_ec_conn_output(_only), "
    "ECConnectorOutput.is_empty",
    types=[SAMPLING_MASK_LISTS_0_28_0, EC_CONNECTOR_OUTPUT_0_28_0, MODEL_RUNNER_OUTPUT_0_28_0],
    # The first runner's AsyncGPUModelRunnerOutput takes num_nans and maps them by request
    # (vllm/v1/worker/gpu_model_runner.py), as Model Runner V2's AsyncOutput does; Model
    # Runner V2's also hands its sampler's sampling masks over (gpu/async_utils.py).
    async_output=replace(
        R_0_27_0.async_output,
        nan_counts=True,
        sampling_masks=True,
        sampling_masks_listed="sampled-requests",
    ),
    add=[
        "ModelRunnerOutput.with_ec_conn_output",
        "ECConnectorOutput.is_empty",
        "SamplingMaskLists.slice_request:offsets-always",
        "SamplingMaskLists.to_nested_list",
        "SamplingMaskLists.merge",
    ],
)

R_0_29_0 = derive(
    R_0_28_0,
    "0.29.0",
    releases=("0.29.0",),
    summary="LogprobsTensors.cu_num_generated_tokens_tensor, used by tolists and "
    "to_cpu_nonblocking; empty_cpu pins with PIN_MEMORY",
    types=[
        evolve(
            LOGPROBS_TENSORS_0_27_0,
            fields=(
                *LOGPROBS_TENSORS_0_27_0.fields,
                _optional("cu_num_generated_tokens_tensor", "torch.Tensor"),
            ),
        )
    ],
    add=["LogprobsTensors.cu_num_generated_tokens_tensor"],
)

# --- 0.30.0: failed_recving, single-position sampling masks ---------------------------

SAMPLING_MASK_LISTS_0_30_0 = evolve(
    SAMPLING_MASK_LISTS_0_28_0,
    fields=replacing(SAMPLING_MASK_LISTS_0_28_0.fields, _optional("offsets", "np.ndarray")),
    methods=without(SAMPLING_MASK_LISTS_0_28_0.methods, "merge"),
)
_KV18 = KV_CONNECTOR_OUTPUT_0_18_0
R_0_30_0 = derive(
    R_0_29_0,
    "0.30.0",
    releases=("0.30.0",),
    summary="KVConnectorOutput.failed_recving; SamplingMaskLists of one position per request",
    types=[
        evolve(
            _KV18,
            fields=inserting(
                _KV18.fields,
                "invalid_block_ids",
                FieldSpec("failed_recving", "set[str]", default_factory=set),
            ),
            counted_by_is_empty=(*_KV18.counted_by_is_empty, "failed_recving"),
        ),
        SAMPLING_MASK_LISTS_0_30_0,
    ],
    async_output=replace(R_0_29_0.async_output, sampling_masks_listed="every-request"),
    add=[
        "SamplingMaskLists.slice_request:one-position",
        "SamplingMaskLists.to_nested_list:without-offsets",
    ],
    remove=["SamplingMaskLists.slice_request:offsets-always", "SamplingMaskLists.merge"],
)

_MRO_28 = MODEL_RUNNER_OUTPUT_0_28_0
R_0_31_0 = derive(
    R_0_30_0,
    "0.31.0",
    releases=("0.31.0",),
    summary="ModelRunnerOutput.prompt_token_id_logprobs_dict at index 5; routed_experts "
    "replaced by aux_output_connector_output; ECConnectorOutput.ec_connector_stats",
    types=[
        evolve(
            _MRO_28,
            fields=inserting(
                inserting(
                    without(_MRO_28.fields, "routed_experts"),
                    "cudagraph_stats",
                    _opaque("aux_output_connector_output", "dict[str, AuxRequestOutput] | None"),
                ),
                "prompt_logprobs_dict",
                FieldSpec(
                    "prompt_token_id_logprobs_dict", "dict[str, torch.Tensor]", default_factory=dict
                ),
            ),
        ),
        evolve(
            EC_CONNECTOR_OUTPUT_0_28_0,
            fields=inserting(
                EC_CONNECTOR_OUTPUT_0_28_0.fields,
                "finished_recving",
                _opaque("ec_connector_stats", "ECConnectorStats | None"),
            ),
            counted_by_is_empty=(
                "finished_sending",
                "finished_recving",
                "ec_connector_stats",
                "ec_connector_worker_meta",
            ),
        ),
    ],
    drop_types=["RoutedExpertsTensors", "RoutedExpertsLists"],
    async_output=replace(R_0_30_0.async_output, routed_experts=False),
    remove=["RoutedExpertsTensors.to_lists"],
)

R_0_32_0 = derive(
    R_0_31_0,
    "0.32.0",
    releases=("0.32.0",),
    summary="SamplingMaskLists.slice_request over several positions again",
    async_output=replace(R_0_31_0.async_output, sampling_masks_listed="request-slots"),
    add=["SamplingMaskLists.slice_request:offsets-for-several-positions"],
    remove=["SamplingMaskLists.slice_request:one-position"],
)

_AMRO = seed.ASYNC_MODEL_RUNNER_OUTPUT
R_0_33_0 = derive(
    R_0_32_0,
    "0.33.0",
    releases=("0.33.0",),
    summary="AsyncModelRunnerOutput.get_kv_connector_output (abstract)",
    types=[
        evolve(
            _AMRO,
            methods=(
                *_AMRO.methods,
                MethodSpec(
                    "get_kv_connector_output", returns="KVConnectorOutput | None", abstract=True
                ),
            ),
        )
    ],
    add=["AsyncModelRunnerOutput.get_kv_connector_output"],
)

# --- 0.34.0: the first runner removed --------------------------------------------------

R_0_34_0 = derive(
    R_0_33_0,
    "0.34.0",
    releases=("0.34.0",),
    summary="ModelRunnerOutput.req_id_to_index removed (the scheduler maps rows by req_ids; "
    "EMPTY_MODEL_RUNNER_OUTPUT = ModelRunnerOutput(req_ids=[])); Model Runner V2 is vLLM's "
    "only GPU runner",
    # Model Runner V2's AsyncOutput keeps a logprobs row per logits row, read by the cu of
    # the logits (vllm/v1/worker/gpu/async_utils.py): nothing filters them any more.
    async_output=AsyncOutputContract(
        rows="lists",
        logprobs="every-logits-row",
        pooling_output=True,
        nan_counts=True,
        nan_counts_mrv2=True,
        sampling_masks=True,
        kv_after_building=True,
    ),
    types=[
        TypeSpec(
            name="ModelRunnerOutput",
            kind="dataclass",
            fields=(
                FieldSpec("req_ids", "list[str]"),
                FieldSpec("sampled_token_ids", "list[list[int]]", default_factory=list),
                FieldSpec("logprobs", "LogprobsLists | None", default=None),
                FieldSpec(
                    "prompt_logprobs_dict",
                    "dict[str, LogprobsTensors | None]",
                    default_factory=dict,
                ),
                FieldSpec(
                    "prompt_token_id_logprobs_dict", "dict[str, torch.Tensor]", default_factory=dict
                ),
                FieldSpec("pooler_output", "list[torch.Tensor | None] | None", default=None),
                FieldSpec("kv_connector_output", "KVConnectorOutput | None", default=None),
                FieldSpec("ec_connector_output", "ECConnectorOutput | None", default=None),
                FieldSpec("num_nans_in_logits", "dict[str, int] | None", default=None),
                FieldSpec("cudagraph_stats", "CUDAGraphStat | None", default=None),
                FieldSpec(
                    "aux_output_connector_output",
                    "dict[str, AuxRequestOutput] | None",
                    default=None,
                    annotation_meaningful=False,
                ),
                FieldSpec("sampling_masks", "SamplingMaskLists | None", default=None),
            ),
            methods=R_0_33_0.types["ModelRunnerOutput"].methods,
            dataclass_flags={
                "init": True,
                "repr": True,
                "eq": True,
                "order": False,
                "frozen": False,
            },
        ),
    ],
)

#: Every revision of a release, oldest first.
RELEASE_REVISIONS: tuple[SpecRevision, ...] = (
    R_0_10_2,
    R_0_11_0,
    R_0_11_1,
    R_0_12_0,
    R_0_13_0,
    R_0_14_0,
    R_0_16_0,
    R_0_17_0,
    R_0_18_0,
    R_0_20_0,
    R_0_21_0,
    R_0_22_0,
    R_0_23_0,
    R_0_27_0,
    R_0_28_0,
    R_0_29_0,
    R_0_30_0,
    R_0_31_0,
    R_0_32_0,
    R_0_33_0,
    R_0_34_0,
)

#: Releases before 0.10.2 lack AsyncModelRunnerOutput and DraftTokenIds.
FIRST_SUPPORTED_RELEASE = "0.10.2"
