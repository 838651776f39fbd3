"""Spec revision 2025.10 of ``vllm.v1.outputs`` as data (see shared spec page).

Held line by line against ``spec/vllm_v1_outputs-2025.10.txt``: same kinds, field
names and order, annotations as written, defaults, method signatures, and the
behaviours that page implies.  The vLLM releases are written relative to it in
:mod:`reference.revisions.releases`.
"""

from __future__ import annotations

from reference.revisions.model import FieldSpec, MethodSpec, ParameterSpec, SpecRevision, TypeSpec

# What ``@dataclass`` without arguments gives; the spec uses no other flags.
PLAIN_DATACLASS = {"init": True, "repr": True, "eq": True, "order": False, "frozen": False}

ASYNC_MODEL_RUNNER_OUTPUT = TypeSpec(
    name="AsyncModelRunnerOutput",
    kind="abc",
    methods=(MethodSpec("get_output", returns="ModelRunnerOutput", abstract=True),),
)

DRAFT_TOKEN_IDS = TypeSpec(
    name="DraftTokenIds",
    kind="dataclass",
    fields=(
        FieldSpec("req_ids", "list[str]"),
        FieldSpec("draft_token_ids", "list[list[int]]"),
    ),
    dataclass_flags=PLAIN_DATACLASS,
)

KV_CONNECTOR_OUTPUT = TypeSpec(
    name="KVConnectorOutput",
    kind="dataclass",
    fields=(
        FieldSpec("finished_sending", "set[str] | None", default=None),
        FieldSpec("finished_recving", "set[str] | None", default=None),
        # vLLM imports KVConnectorStats only under TYPE_CHECKING: at runtime the
        # annotation is whatever stands in for it, so only presence and default count.
        FieldSpec(
            "kv_connector_stats",
            "KVConnectorStats | None",
            default=None,
            annotation_meaningful=False,
        ),
        FieldSpec("invalid_block_ids", "set[int]", default_factory=set),
        FieldSpec("expected_finished_count", "int", default=0),
    ),
    methods=(MethodSpec("is_empty"),),
    dataclass_flags=PLAIN_DATACLASS,
    counted_by_is_empty=(
        "finished_sending",
        "finished_recving",
        "kv_connector_stats",
        "invalid_block_ids",
    ),
)

LOGPROBS_LISTS = TypeSpec(
    name="LogprobsLists",
    kind="namedtuple",
    fields=(
        FieldSpec("logprob_token_ids", "list[list[int]]"),
        FieldSpec("logprobs", "list[list[float]]"),
        FieldSpec("sampled_token_ranks", "list[int]"),
        FieldSpec("cu_num_generated_tokens", "list[int] | None", default=None),
    ),
    methods=(
        MethodSpec(
            "slice",
            parameters=(ParameterSpec("start_req_idx", "int"), ParameterSpec("end_req_idx", "int")),
        ),
    ),
)

LOGPROBS_TENSORS = TypeSpec(
    name="LogprobsTensors",
    kind="namedtuple",
    fields=(
        FieldSpec("logprob_token_ids", "torch.Tensor"),
        FieldSpec("logprobs", "torch.Tensor"),
        FieldSpec("selected_token_ranks", "torch.Tensor"),
    ),
    methods=(
        MethodSpec(
            "tolists",
            parameters=(
                ParameterSpec("cu_num_generated_tokens", "list[int] | None", default=None),
            ),
        ),
        MethodSpec("to_cpu_nonblocking", returns="LogprobsTensors"),
        MethodSpec(
            "empty_cpu",
            parameters=(
                ParameterSpec("num_positions", "int"),
                ParameterSpec("num_tokens_per_position", "int"),
            ),
            returns="LogprobsTensors",
            binding="static",
        ),
    ),
)

MODEL_RUNNER_OUTPUT = TypeSpec(
    name="ModelRunnerOutput",
    kind="dataclass",
    fields=(
        FieldSpec("req_ids", "list[str]"),
        FieldSpec("req_id_to_index", "dict[str, int]"),
        FieldSpec("sampled_token_ids", "list[list[int]]"),
        FieldSpec("logprobs", "LogprobsLists | None"),
        FieldSpec("prompt_logprobs_dict", "dict[str, LogprobsTensors | None]"),
        FieldSpec("pooler_output", "list[torch.Tensor | None]"),
        FieldSpec("kv_connector_output", "KVConnectorOutput | None", default=None),
        FieldSpec("num_nans_in_logits", "dict[str, int] | None", default=None),
    ),
    dataclass_flags=PLAIN_DATACLASS,
)

SAMPLER_OUTPUT = TypeSpec(
    name="SamplerOutput",
    kind="dataclass",
    fields=(
        FieldSpec("sampled_token_ids", "torch.Tensor"),
        FieldSpec("logprobs_tensors", "LogprobsTensors | None"),
    ),
    dataclass_flags=PLAIN_DATACLASS,
)

TYPES = (
    ASYNC_MODEL_RUNNER_OUTPUT,
    DRAFT_TOKEN_IDS,
    KV_CONNECTOR_OUTPUT,
    LOGPROBS_LISTS,
    LOGPROBS_TENSORS,
    MODEL_RUNNER_OUTPUT,
    SAMPLER_OUTPUT,
)

#: The behaviours every revision from 0.10.2 on shares with 2025.10.
COMMON_BEHAVIOURS = frozenset(
    {
        "module.spec-names",
        "LogprobsLists.tuple",
        "LogprobsTensors.tuple",
        "LogprobsTensors.empty_cpu",
        "SamplerOutput.dataclass",
        "KVConnectorOutput.dataclass",
        "ModelRunnerOutput.dataclass",
        "AsyncModelRunnerOutput.abc",
        "DraftTokenIds.dataclass",
    }
)

REVISION = SpecRevision(
    name="2025.10",
    types={t.name: t for t in TYPES},
    behaviours=COMMON_BEHAVIOURS
    | {
        "LogprobsLists.slice:cu-not-rebased",
        "LogprobsTensors.tolists:python-lists",
        "LogprobsTensors.tolists:cu-argument",
        "LogprobsTensors.to_cpu_nonblocking",
        "KVConnectorOutput.is_empty",
    },
    summary="vLLM main, October 2025 (between 0.11.0 and 0.11.1): Python lists with cu, "
    "slice with cu not rebased, to_cpu_nonblocking, invalid_block_ids",
)
