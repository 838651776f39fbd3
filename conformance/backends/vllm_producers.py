"""vLLM's own producers, as the ``vllm`` backend declares them.

vLLM exports no standalone producers, but its own code of each release holds
them at fixed places: ``Sampler.gather_logprobs`` (``vllm.v1.sample.sampler``),
``RejectionSampler.parse_output`` (``vllm.v1.sample.rejection_sampler``), the unpadding
of speculative rows, and ``AsyncGPUModelRunnerOutput``
(``vllm.v1.worker.gpu_model_runner``), the GPU runner's async output.  They are the
ground truth of the producer contract: every release's own must pass its revision.
Each is taken wherever it imports (a real installation, or a release's texts laid
out by :mod:`conformance.releases.texts`); one that does not is left out with a note.
"""

from __future__ import annotations

import atexit
import importlib
import inspect
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.backends.backend import LOGPROBS_WITH_MULTI_TOKEN_ROWS, AsyncOutputProducer
from conformance.backends.step import FIRST_RUNNER, MODEL_RUNNER_V2, constructed_like_vllm

# parse_output drops ids at or above the vocabulary size; "no limit" for unpadding
# called without one.
_NO_VOCABULARY_LIMIT = 2**31 - 1


@dataclass
class FoundProducers:
    """The producers found (``Backend`` keyword arguments) and notes on those missing."""

    found: dict[str, Callable[..., Any]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def vllm_producers() -> FoundProducers:
    found: dict[str, Callable[..., Any]] = {}
    notes: list[str] = []
    for producer, (module, name, adapt) in _WHERE.items():
        try:
            owner = getattr(importlib.import_module(module), name)
            found[producer] = adapt(owner)
        except Exception as error:
            first_line = (str(error).splitlines() or [""])[0]
            notes.append(
                f"vLLM's {name} ({module}) does not import here "
                f"({type(error).__name__}: {first_line}); its {producer} is not judged"
            )
    mrv2, more_notes = _model_runner_v2_async_outputs()
    pooling, pooling_notes = _first_runner_pooling()
    others = (*pooling, *mrv2)
    more_notes += pooling_notes
    if others:
        found["other_async_outputs"] = others  # type: ignore[assignment]
    return FoundProducers(found, (*notes, *more_notes))


#: Model Runner V2's async outputs: (class, kind, label) in ``vllm.v1.worker.gpu.async_utils``.
_MRV2_ASYNC_OUTPUTS = (
    ("AsyncOutput", "sampling", MODEL_RUNNER_V2),
    ("AsyncPoolingOutput", "pooling", MODEL_RUNNER_V2 + "-pooling"),
)
_MRV2_MODULE = "vllm.v1.worker.gpu.async_utils"


def _model_runner_v2_async_outputs() -> tuple[tuple[AsyncOutputProducer, ...], list[str]]:
    """Model Runner V2's async output classes where they import (0.12.0 on; pooling 0.17.0 on).

    Its runner hands logprobs with rows of several tokens only where ``LogprobsTensors``
    carries the ``cu_num_generated_tokens`` its async output's ``tolists()`` reads
    (0.16.0 on); before, it builds no such step (vLLM: "TODO: Support logprobs with spec
    decoding")."""
    try:
        module = importlib.import_module(_MRV2_MODULE)
    except ModuleNotFoundError as error:
        if error.name is not None and _MRV2_MODULE.startswith(error.name):
            return (), []  # a release without Model Runner V2 (before 0.12.0)
        return (), [_not_imported(error)]
    except Exception as error:
        return (), [_not_imported(error)]
    outputs = importlib.import_module("vllm.v1.outputs")
    fields = getattr(getattr(outputs, "LogprobsTensors", None), "_fields", ())
    unbuilt = (
        frozenset()
        if "cu_num_generated_tokens" in fields
        else frozenset({LOGPROBS_WITH_MULTI_TOKEN_ROWS})
    )
    found = []
    notes = []
    for name, kind, label in _MRV2_ASYNC_OUTPUTS:
        cls = getattr(module, name, None)
        if cls is None:
            continue
        try:
            make = constructed_like_vllm(cls)
        except TypeError as error:
            notes.append(f"Model Runner V2's {name}: {error}; it is not judged")
            continue
        found.append(
            AsyncOutputProducer(
                label,
                make,
                kind=kind,
                judged_class=f"{_MRV2_MODULE}.{name}",
                runner=MODEL_RUNNER_V2,
                steps_not_built=unbuilt if kind == "sampling" else frozenset(),
            )
        )
    return tuple(found), notes


def _first_runner_pooling() -> tuple[tuple[AsyncOutputProducer, ...], list[str]]:
    """The first runner's ``AsyncGPUPoolingModelRunnerOutput`` (0.14.0 on).

    Its copy helper (``json_map_leaves`` to 0.16.x, ``_copy_pooler_output_to_cpu`` from
    0.17.0) is vLLM's own in an installed vLLM; a release text holds only the class, so
    there it runs with the suite's stand-in of the helper, and a note says so."""
    module_name = "vllm.v1.worker.gpu_model_runner"
    try:
        module = importlib.import_module(module_name)
        cls = module.AsyncGPUPoolingModelRunnerOutput
    except Exception:
        return (), []
    try:
        make = constructed_like_vllm(cls)
    except TypeError as error:
        return (), [
            f"the first runner's AsyncGPUPoolingModelRunnerOutput: {error}; it is not judged"
        ]
    notes = []
    called = set(getattr(getattr(cls.__init__, "__code__", None), "co_names", ()))
    stand_ins = sorted(called & set(getattr(module, "SUITE_STAND_INS", ())))
    if stand_ins:
        notes.append(
            "the first runner's AsyncGPUPoolingModelRunnerOutput is judged with the suite's "
            f"stand-in for {' and '.join(stand_ins)} (a release text holds the class, not "
            "its copy helper)"
        )
    producer = AsyncOutputProducer(
        FIRST_RUNNER + "-pooling",
        make,
        kind="pooling",
        judged_class=f"{module_name}.AsyncGPUPoolingModelRunnerOutput",
        runner=FIRST_RUNNER,
    )
    return (producer,), notes


def _not_imported(error: Exception) -> str:
    first_line = (str(error).splitlines() or [""])[0]
    return (
        f"Model Runner V2's async output ({_MRV2_MODULE}) does not import here "
        f"({type(error).__name__}: {first_line}); it is not judged"
    )


def producers_of_release_text(
    outputs_text: Path, version: str, outputs_module: ModuleType | None = None
) -> FoundProducers:
    """Release ``version``'s own producers, from the producer text beside ``outputs_text``.

    The release's tree (:func:`conformance.releases.texts.write_stub_tree`) is imported
    as ``vllm`` out of the way of any other (an installed vLLM, another release): its
    modules leave ``sys.modules`` again afterwards, and the producers found keep
    their own modules' globals.  So several releases' producers sit side by side in
    one process (the release benchmarks time them so).  Without a producer text:
    none found, with a note.  With ``outputs_module`` (the release's ``outputs.py``
    loaded under a name of its own), the producers import their spec types from it,
    so what they return is an instance of that module's types.
    """
    from conformance.releases.texts import producer_text_beside, write_stub_tree

    if producer_text_beside(outputs_text, version) is None:
        return FoundProducers(notes=(f"no producer text of {version} beside {outputs_text}",))
    folder = Path(tempfile.mkdtemp(prefix=f"vllm-{version}-producers-"))
    # Left in place until exit: a producer may import lazily from its tree.
    atexit.register(shutil.rmtree, folder, True)
    write_stub_tree(outputs_text, version, folder)
    with _vllm_imported_from(folder, outputs_module):
        return vllm_producers()


#: Model Runner V2's logprobs gathering: its module and the function's names, newest first
#: (``compute_topk_logprobs`` until 0.27, ``compute_topk_scores`` from 0.28.0).
MRV2_GATHERING_MODULE = "vllm.v1.worker.gpu.sample.logprob"
MRV2_GATHERING_FUNCTIONS = ("compute_topk_scores", "compute_topk_logprobs")


def mrv2_gathering_of_release_text(outputs_text: Path, version: str) -> Callable[..., Any] | None:
    """Release ``version``'s Model Runner V2 gathering (Triton kernels, which run where
    Triton does), from its texts and out of the way of any other vLLM, as
    :func:`producers_of_release_text` loads producers; None where the release has none."""
    from conformance.releases.texts import write_stub_tree

    folder = Path(tempfile.mkdtemp(prefix=f"vllm-{version}-mrv2-gathering-"))
    atexit.register(shutil.rmtree, folder, True)
    write_stub_tree(outputs_text, version, folder)
    with _vllm_imported_from(folder, None):
        try:
            module = importlib.import_module(MRV2_GATHERING_MODULE)
        except ImportError:
            return None
        found = mrv2_gathering_in(module)
    return found[1] if found else None


def mrv2_gathering_in(module: ModuleType) -> tuple[str, Callable[..., Any]] | None:
    """The name and function of Model Runner V2's gathering in its ``module`` (whichever
    of :data:`MRV2_GATHERING_FUNCTIONS` the release has), or None."""
    for name in MRV2_GATHERING_FUNCTIONS:
        function = getattr(module, name, None)
        if callable(function):
            return name, function
    return None


def producers_of_texts(
    outputs_source: str,
    producers_source: str | None,
    version: str,
    outputs_module: ModuleType | None = None,
) -> FoundProducers:
    """:func:`producers_of_release_text` from the texts themselves (any vLLM text, tree or
    wheel: :class:`conformance.releases.sources.VllmSource`)."""
    from conformance.releases.texts import write_tree

    if producers_source is None:
        return FoundProducers(notes=(f"no producer text of vLLM {version}",))
    folder = Path(tempfile.mkdtemp(prefix="vllm-text-producers-"))
    atexit.register(shutil.rmtree, folder, True)
    write_tree(outputs_source, version, folder, producers_source)
    with _vllm_imported_from(folder, outputs_module):
        return vllm_producers()


@contextmanager
def _vllm_imported_from(folder: Path, outputs_module: ModuleType | None) -> Iterator[None]:
    """``import vllm`` finds ``folder``'s package meanwhile (its ``vllm.v1.outputs``
    being ``outputs_module`` when given); before and after, what it found."""
    own = [name for name in sys.modules if name == "vllm" or name.startswith("vllm.")]
    saved = {name: sys.modules.pop(name) for name in own}
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    if outputs_module is not None:
        sys.modules["vllm.v1.outputs"] = outputs_module
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def _gather_logprobs(sampler: Any) -> Callable[..., Any]:
    # A staticmethod from 0.11.1; before, a method that never reads self.
    if isinstance(inspect.getattr_static(sampler, "gather_logprobs"), staticmethod):
        function: Callable[..., Any] = sampler.gather_logprobs
        return function
    unbound = sampler.gather_logprobs

    def gather_logprobs(logprobs: Any, num_logprobs: int, token_ids: Any) -> Any:
        return unbound(object.__new__(sampler), logprobs, num_logprobs, token_ids)

    return gather_logprobs


def _unpad_sampled_token_ids(rejection_sampler: Any) -> Callable[..., Any]:
    parse_output = rejection_sampler.parse_output

    def unpad_sampled_token_ids(sampled: Any, *, vocab_size: int | None = None) -> Any:
        result = parse_output(sampled, _NO_VOCABULARY_LIMIT if vocab_size is None else vocab_size)
        # (rows, cu or logprobs) from 0.12.0; rows of numpy arrays in 0.11.1-0.11.2.
        rows = result[0] if isinstance(result, tuple) else result
        return [row.tolist() if hasattr(row, "tolist") else row for row in rows]

    return unpad_sampled_token_ids


_WHERE: dict[str, tuple[str, str, Callable[[Any], Callable[..., Any]]]] = {
    "gather_logprobs": ("vllm.v1.sample.sampler", "Sampler", _gather_logprobs),
    "unpad_sampled_token_ids": (
        "vllm.v1.sample.rejection_sampler",
        "RejectionSampler",
        _unpad_sampled_token_ids,
    ),
    "make_async_output": (
        "vllm.v1.worker.gpu_model_runner",
        "AsyncGPUModelRunnerOutput",
        constructed_like_vllm,
    ),
}
