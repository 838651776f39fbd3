"""The named behaviours: each rule of the spec that some revision has and another may not.

A revision lists the behaviours it has (``reference/revisions/releases.py``); every
conformance check belongs to exactly one behaviour (``pytest.mark.behaviour``) and
runs only for revisions that have it; the reference attaches the implementation
of each behaviour it has (``reference/revisions/methods.py``).  The name says what
the rule is about (``Type.member``) and, after a colon, which variant of it.

Surface behaviours (``<Type>.surface``: kind, fields, defaults, annotations,
method signatures as the revision lists them) are implied by the types a revision
has and are not listed here.  Producer behaviours (``producer.*``) are about a
backend's own operations (its async output, logprobs gathering, padding); they apply
whenever the backend declares the producer, the async output's as the revision's
contract says (``AsyncOutputContract``: what vLLM's own producer of the release does).
"""

from __future__ import annotations

BEHAVIOURS: dict[str, str] = {
    # --- the module -----------------------------------------------------------------
    "module.spec-names": "the backend module exposes the seven spec names as classes; "
    "PLACEHOLDER_TOKEN_ID, where exposed, is the int -1, and EMPTY_MODEL_RUNNER_OUTPUT, where "
    "exposed, the release's (no request, every other field as the release's constant holds it, "
    "None and an empty container alike)",
    # --- LogprobsLists --------------------------------------------------------------
    "LogprobsLists.tuple": "LogprobsLists is a NamedTuple that stores the objects passed in, "
    "positionally or by keyword, defaults its optional fields and survives pickling",
    "LogprobsLists.slice:rows": "slice(start, end) returns the rows start:end of every field",
    "LogprobsLists.slice:cu-not-rebased": "slice(start_req_idx, end_req_idx) returns the rows of "
    "requests start..end (cu[start]:cu[end], or rows start:end without a truthy cu) and cu "
    "sliced [start:end], neither rebased to 0 nor extended to end + 1",
    "LogprobsLists.slice:cu-rebased": "slice(start_req_idx, end_req_idx) returns the rows of "
    "requests start..end and cu[start:end + 1] rebased to start at 0 (None without a truthy cu)",
    "LogprobsLists.slice_request": "slice_request(req_idx, num_positions) returns num_positions "
    "rows starting at cu[req_idx] (at req_idx when cu is None), with cu None",
    # --- LogprobsTensors ------------------------------------------------------------
    "LogprobsTensors.tuple": "LogprobsTensors is a NamedTuple that stores the tensors passed in "
    "(no copy), positionally or by keyword, on any device, and survives pickling",
    "LogprobsTensors.tolists:python-lists": "tolists() returns the backend's LogprobsLists of "
    "Python lists of Python ints and floats",
    "LogprobsTensors.tolists:numpy-arrays": "tolists() returns the backend's LogprobsLists of "
    "numpy arrays with the tensors' values, dtypes and shapes",
    "LogprobsTensors.tolists:cu-argument": "tolists(cu_num_generated_tokens) puts the list it is "
    "given, unchanged, into the result's cu_num_generated_tokens",
    "LogprobsTensors.cu_num_generated_tokens": "the cu_num_generated_tokens field (default None): "
    "tolists() without an argument falls back to it, and to_cpu_nonblocking() carries it",
    "LogprobsTensors.cu_num_generated_tokens_tensor": "the cu_num_generated_tokens_tensor field "
    "(default None): tolists() without an argument uses its values first, and "
    "to_cpu_nonblocking() copies it to the host with the other tensors",
    "LogprobsTensors.to_cpu_nonblocking": "to_cpu_nonblocking() returns self on CPU and elsewhere "
    "a LogprobsTensors of CPU tensors with the same dtypes and, once synchronised, values",
    "LogprobsTensors.empty_cpu": "the static empty_cpu(n, k) returns fresh CPU tensors int32 "
    "[n, k], float32 [n, k] and int32 [n]",
    "LogprobsTensors.filter": "filter(mask) returns the backend's LogprobsTensors of the rows "
    "the boolean mask selects, from every tensor",
    "LogprobsTensors.cat": "the static cat(tensors, cu=None) concatenates the rows of the "
    "LogprobsTensors in order and sets cu_num_generated_tokens to cu (one input with cu None "
    "is returned as it is)",
    # --- SamplerOutput, DraftTokenIds ----------------------------------------------
    "SamplerOutput.dataclass": "SamplerOutput stores the objects passed in, on any device, and "
    "survives pickling",
    "DraftTokenIds.dataclass": "DraftTokenIds stores the objects passed in, compares by fields "
    "and survives pickling",
    # --- KVConnectorOutput ----------------------------------------------------------
    "KVConnectorOutput.dataclass": "KVConnectorOutput stores the objects passed in, gives each "
    "instance fresh default sets and survives pickling",
    "KVConnectorOutput.is_empty": "is_empty() is True exactly when every field the revision "
    "counts is falsy (expected_finished_count is configuration and never counts)",
    "KVConnectorOutput.merge": "the classmethod merge(*outputs) unites the finished sets and "
    "invalid_block_ids of all outputs (None when every input has None), aggregates their "
    "kv_connector_stats and merges their kv_cache_events in order",
    # --- ModelRunnerOutput ----------------------------------------------------------
    "ModelRunnerOutput.dataclass": "ModelRunnerOutput stores the objects passed in, defaults "
    "its optional fields, survives pickling and holds typical steps that satisfy the invariants",
    "ModelRunnerOutput.with_kv_conn_output_only": "the static with_kv_conn_output_only(kv) "
    "returns an empty output for None or an empty kv, else a new empty output carrying kv, "
    "never writing to the shared empty output",
    "ModelRunnerOutput.with_ec_conn_output": "the statics with_ec_conn_output(output, ec) and "
    "with_ec_conn_output_only(ec) return the output unchanged for None or an empty ec, else "
    "carry ec, copying the shared empty output rather than writing to it",
    # --- AsyncModelRunnerOutput -----------------------------------------------------
    "AsyncModelRunnerOutput.abc": "AsyncModelRunnerOutput is an ABC: a subclass implementing "
    "its abstract methods can be instantiated, one lacking any of them raises TypeError",
    "AsyncModelRunnerOutput.get_kv_connector_output": "get_kv_connector_output() is abstract "
    "beside get_output(), and a producer's returns the KVConnectorOutput on the runner's "
    "output or None, when asked (Model Runner V2's runner sets it after building the async "
    "output) and without get_output() (vLLM asks for it where get_output() raised)",
    # --- types held by ModelRunnerOutput's fields -----------------------------------
    "ECConnectorOutput.dataclass": "ECConnectorOutput stores the objects passed in, defaults "
    "every field to None and survives pickling",
    "ECConnectorOutput.is_empty": "is_empty() is True exactly when every field the revision "
    "counts is falsy",
    "SamplingMaskLists.slice_request:offsets-always": "slice_request(req_idx, num_positions) "
    "returns the token ids of positions cu[req_idx] (or req_idx) onwards with their offsets "
    "rebased to 0, and cu None",
    "SamplingMaskLists.slice_request:one-position": "slice_request(req_idx, 1) returns the token "
    "ids of position req_idx (cu is not used) with offsets None",
    "SamplingMaskLists.slice_request:offsets-for-several-positions": "slice_request(req_idx, "
    "num_positions) starts at cu[req_idx] (or req_idx); one position gives its token ids with "
    "offsets None, several give their token ids with offsets rebased to 0",
    "SamplingMaskLists.to_nested_list": "to_nested_list() returns one Python list of token ids "
    "per position, token_ids[offsets[i]:offsets[i + 1]]",
    "SamplingMaskLists.to_nested_list:without-offsets": "to_nested_list() with offsets None "
    "returns [token_ids] as one Python list",
    "SamplingMaskLists.merge": "the static merge(chunks) concatenates the token ids and "
    "rebuilds offsets from each chunk's position lengths",
    "RoutedExpertsTensors.to_lists": "RoutedExpertsTensors.to_cpu_nonblocking() returns self "
    "on CPU, and tolists() returns RoutedExpertsLists of numpy arrays with the same values",
}

#: The backend's own operations (``conformance.Backend`` producers).  The async output's
#: rules follow the revision (``SpecRevision.producer_behaviours``); the others hold in all.
PRODUCER_BEHAVIOURS: dict[str, str] = {
    "producer.pad_sampled_token_ids": "pad_sampled_token_ids gives int32 [num_reqs, max_len] on "
    "the requested device, each row its tokens then -1 padding",
    "producer.unpad_sampled_token_ids": "unpad_sampled_token_ids drops -1 padding (and ids "
    ">= vocab_size), gives Python ints, and inverts padding",
    "producer.gather_logprobs": "gather_logprobs puts the token and its logprob in column 0, "
    "the top-k sorted descending after it, and 1-based pessimistic ranks",
    "producer.gather_logprobs:speculative-rows": "the logprobs of speculative rows (a logits "
    "row per verified position), read as vLLM's consumer reads them: request boundaries "
    "(cu_num_generated_tokens) whose spans hold each request's accepted tokens, and on "
    "those rows the token in column 0, the top-k after it and 1-based pessimistic ranks "
    "(Model Runner V2's rejection sampler, judged where Triton runs)",
    "producer.async_output": "make_async_output(step).get_output() returns the backend's "
    "ModelRunnerOutput the runner built, its other fields as handed over (Model Runner V2's "
    "KVConnectorOutput among them, set after the async output is built), each request's "
    "sampled token as its row and the discarded requests' (invalid_req_indices) rows empty; "
    "a second call is the caller's mistake (it may raise or repeat)",
    "producer.async_output:step-empty-batch": "make_async_output(step).get_output() of a step "
    "with no requests returns the runner's ModelRunnerOutput with no rows",
    "producer.async_output:step-discarded-rows": "make_async_output(step).get_output() of a "
    "step that discards some requests' tokens (invalid_req_indices) empties exactly their rows",
    "producer.async_output:step-prompt-logprobs": "make_async_output(step).get_output() of a "
    "step carrying prompt logprobs (prompt_logprobs_dict) hands them over on the host with "
    "the runner's values (the first runner's are CPU tensors; Model Runner V2's runner "
    "computes them on the device and its async output copies them)",
    "producer.async_output:rows-as-lists": "get_output() gives sampled_token_ids as lists of "
    "Python ints, a discarded request's row an empty list",
    "producer.async_output:rows-as-arrays": "get_output() gives sampled_token_ids as one numpy "
    "array of token ids per request, a discarded request's row an empty array",
    "producer.async_output:unpads-multi-token-rows": "get_output() unpads rows of several "
    "tokens (speculative decoding under async scheduling): a row keeps the ids its runner "
    "counts as sampled, in order (the first runner's: those other than -1 and below "
    "vocab_size; Model Runner V2's: the first num_sampled)",
    "producer.async_output:logprobs-runner": "get_output() leaves the LogprobsLists the runner "
    "put on the ModelRunnerOutput",
    "producer.async_output:logprobs-tolists": "get_output() gives tolists() of the step's "
    "logprobs tensors (one token per request)",
    "producer.async_output:logprobs-cu-of-kept-tokens": "get_output() gives tolists() of the "
    "step's logprobs tensors; with rows of several tokens, tolists(cu) whose cu counts each "
    "row's kept tokens (a discarded request's included)",
    "producer.async_output:logprobs-every-logits-row": "get_output() gives tolists() of the "
    "step's logprobs tensors; with rows of several tokens (a logprobs row per logits row) "
    "every row, tolists() reading the cu of logits rows the sampler put on them",
    "producer.async_output:logprobs-filtered-to-kept-tokens": "get_output() gives tolists() of "
    "the step's logprobs tensors; with rows of several tokens (a logprobs row per padded "
    "position) the rows of kept tokens only, tolists(cu) whose cu counts them (a discarded "
    "request's included)",
    "producer.async_output:logprobs-read-by-request": "with rows of several tokens, each "
    "request reads its own logprobs rows as vLLM's consumer reads them, "
    "slice_request(i, len(sampled_token_ids[i])), whatever the layout (vLLM's two runners "
    "lay them out differently and read the same)",
    "producer.async_output:nan-counts": "a step whose runner hands over the NaN logits it "
    "counted per request on the device (num_nans) gets num_nans_in_logits mapping each "
    "request id to its count",
    "producer.async_output:routed-experts": "a step whose runner hands over the experts "
    "each token was routed to (routed_experts, a RoutedExpertsTensors on the device) gets "
    "ModelRunnerOutput.routed_experts, their tolists()",
    "producer.async_output:sampling-masks": "a step whose sampler hands over the tokens each "
    "request was allowed (sampler_output.sampling_mask_tensors, on the device; Model Runner "
    "V2) gets ModelRunnerOutput.sampling_masks, the tolists() of their host copy",
    "producer.pooling_output": "a pooling async output's get_output() returns the runner's "
    "ModelRunnerOutput with pooler_output a CPU tensor per request (an empty batch: none)",
    "producer.pooling_output:invalid-rows": "a pooling step's rows without output this step "
    "(is_valid False / not finished) are None in pooler_output, the others their values",
    "producer.pooling_output:waits-for-device": "a pooling async output's get_output() waits "
    "for the device: called while the device still computes the pooler output, it returns "
    "those values",
    "producer.async_output:waits-for-device": "get_output() waits for the device: called "
    "while the device still computes the sampled values, it returns those values",
    "producer.async_output:independent-outputs": "the output of one step shares nothing with "
    "the producer's later steps: a later step, made before or after its get_output() (async "
    "scheduling runs a step ahead), does not change it, changing it does not change a later "
    "step's",
}


#: Behaviours of a vLLM text's changes (``vllm-change:<Type>.<member>``, one per member a
#: text changed since its nearest known release): a backend must do what that text's own
#: code does, judged on the same inputs (conformance/checks/test_vllm_changes.py).
CHANGE_PREFIX = "vllm-change:"


def rule(name: str) -> str:
    """The rule of behaviour ``name`` (surface and vLLM-change behaviours included)."""
    if name == CHANGE_PREFIX.rstrip(":"):
        return (
            "the behaviours of a judged vLLM text's changes, one per changed member "
            f"({CHANGE_PREFIX}<Type>.<member>); no revision has the family itself"
        )
    if name.startswith(CHANGE_PREFIX) and len(name) > len(CHANGE_PREFIX):
        member = name.removeprefix(CHANGE_PREFIX)
        return (
            f"{member} is what the judged vLLM text's own code makes it, where that text "
            "changed it since its nearest known release (its shape, and its results on the "
            "same inputs as vLLM's own)"
        )
    if name in BEHAVIOURS:
        return BEHAVIOURS[name]
    if name in PRODUCER_BEHAVIOURS:
        return PRODUCER_BEHAVIOURS[name]
    if name.endswith(".surface"):
        type_name = name.removesuffix(".surface")
        return (
            f"{type_name} has the kind, fields (names, order, defaults, annotations) and "
            "methods (signatures, binding, abstractness) the revision lists"
        )
    raise KeyError(name)


def is_known(name: str) -> bool:
    try:
        rule(name)
    except KeyError:
        return False
    return True
