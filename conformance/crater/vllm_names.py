"""The names of vLLM's the crater judges a plugin's uses of: the output types, the
async output classes and the producer methods, and where vLLM keeps them."""

from __future__ import annotations

from conformance.releases.wheels import TAKEN
from conformance.spec_names import SPEC_NAMES

OUTPUTS = "vllm.v1.outputs"

#: The output types a construction or a read is judged on (the seven, and the classes
#: their fields hold that plugins build themselves).
JUDGED_TYPES = frozenset(
    {
        *SPEC_NAMES,
        "ECConnectorOutput",
        "PoolerOutput",
        "RoutedExpertsLists",
        "RoutedExpertsTensors",
        "SamplingMaskLists",
        "KVConnectorStats",
    }
)

EMPTY = "EMPTY_MODEL_RUNNER_OUTPUT"

#: vLLM's modules that hold its producers (the files the suite reads from each wheel).
PRODUCER_MODULES = frozenset(p.removesuffix(".py").replace("/", ".") for p in TAKEN)

#: What vLLM's async output classes store in ``__init__`` and a plugin subclass reads:
#: the first runner's ``_model_runner_output``, Model Runner V2's ``model_runner_output``.
ASYNC_OUTPUT_ATTRIBUTES = {
    "_model_runner_output": f"{OUTPUTS}.ModelRunnerOutput",
    "model_runner_output": f"{OUTPUTS}.ModelRunnerOutput",
}
#: vLLM's async output classes, by module: a plugin that builds or subclasses one leans
#: on vLLM's own producer.
VLLM_ASYNC_OUTPUTS = {
    "vllm.v1.worker.gpu_model_runner": (
        "AsyncGPUModelRunnerOutput",
        "AsyncGPUPoolingModelRunnerOutput",
    ),
    "vllm.v1.worker.gpu.async_utils": ("AsyncOutput", "AsyncPoolingOutput"),
}

#: vLLM's producer methods a plugin calls, by the class that defines them.
PRODUCER_CALLS = {
    "compute_logprobs": "vllm.v1.sample.sampler.Sampler",
    "gather_logprobs": "vllm.v1.sample.sampler.Sampler",
    "parse_output": "vllm.v1.sample.rejection_sampler.RejectionSampler",
}

ASYNC_BASE = f"{OUTPUTS}.AsyncModelRunnerOutput"

#: Output type names other vLLM modules define classes of their own by (Model Runner
#: V2's and the CPU runner's ``SamplerOutput``): not re-exports.
_NAMES_DEFINED_ELSEWHERE = frozenset({"SamplerOutput"})


def output_type_reexported(name: str) -> str:
    """``vllm.v1.worker.kv_connector_model_runner_mixin.KVConnectorOutput``, a vLLM
    module's re-export of an output type, is ``vllm.v1.outputs.KVConnectorOutput``."""
    module, _, tail = name.rpartition(".")
    if (
        module != OUTPUTS
        and module.startswith("vllm.v1.")
        and (tail in JUDGED_TYPES or tail == EMPTY)
        and tail not in _NAMES_DEFINED_ELSEWHERE
    ):
        return f"{OUTPUTS}.{tail}"
    return name


#: Output types other vLLM modules define as their own (Model Runner V2's sampler hands
#: its async output a ``SamplerOutput`` of other fields than ``vllm.v1.outputs``'): a
#: plugin's construction or read of one is judged against that module's class.
OWN_OUTPUT_TYPES = {"vllm.v1.worker.gpu.sample.output": ("SamplerOutput",)}


def is_judged(name: str) -> bool:
    module, _, cls = name.rpartition(".")
    if module == OUTPUTS:
        return cls in JUDGED_TYPES
    return (
        cls in VLLM_ASYNC_OUTPUTS.get(module, ())
        or cls in OWN_OUTPUT_TYPES.get(module, ())
        or name in PRODUCER_CALLS.values()
    )


#: The modules whose texts the crater reads: what a plugin takes from them is judged.
JUDGED_MODULES = frozenset({OUTPUTS, *PRODUCER_MODULES, *VLLM_ASYNC_OUTPUTS})
