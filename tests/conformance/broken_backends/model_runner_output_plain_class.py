"""ModelRunnerOutput as a plain class: 2025.10's constructor and attributes, no dataclass."""

from broken_backends._reference import *  # noqa: F403


class ModelRunnerOutput:
    def __init__(
        self,
        req_ids,
        req_id_to_index,
        sampled_token_ids,
        logprobs,
        prompt_logprobs_dict,
        pooler_output,
        kv_connector_output=None,
        num_nans_in_logits=None,
    ):
        self.req_ids = req_ids
        self.req_id_to_index = req_id_to_index
        self.sampled_token_ids = sampled_token_ids
        self.logprobs = logprobs
        self.prompt_logprobs_dict = prompt_logprobs_dict
        self.pooler_output = pooler_output
        self.kv_connector_output = kv_connector_output
        self.num_nans_in_logits = num_nans_in_logits


class SlottedModelRunnerOutput(ModelRunnerOutput):
    """The same with ``__slots__`` and no ``__dict__`` of its own."""

    __slots__ = (
        "kv_connector_output",
        "logprobs",
        "num_nans_in_logits",
        "pooler_output",
        "prompt_logprobs_dict",
        "req_id_to_index",
        "req_ids",
        "sampled_token_ids",
    )


from broken_backends._producers import backend_with  # noqa: E402

#: The reference's producers handing over the plain class's output.
BACKEND = backend_with(__name__)
