"""vLLM's own producers, as the ``vllm`` backend declares them.

vLLM exports no standalone producers.  Its async outputs are found by what they are:
every concrete subclass of ``AsyncModelRunnerOutput`` in its ``vllm/v1`` code
(:mod:`conformance.releases.discovery`), whichever runner and module holds it (the
first runner's ``AsyncGPUModelRunnerOutput`` to 0.33.0, Model Runner V2's
``AsyncOutput`` and ``AsyncPoolingOutput``, the only ones from 0.34.0).  The first
runner's gathering and unpadding (``Sampler.gather_logprobs``,
``RejectionSampler.parse_output``) are taken where that runner kept them, while it
exists.  They are the ground truth of the producer contract: every release's own must
pass its revision.  Each is taken wherever it imports (a real installation, or a
release's texts laid out by :mod:`conformance.releases.texts`); one that does not is
left out with a note.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.backends.backend import LOGPROBS_WITH_MULTI_TOKEN_ROWS, AsyncOutputProducer
from conformance.backends.step import FIRST_RUNNER, MODEL_RUNNER_V2, constructed_like_vllm
from conformance.releases.kept_trees import kept_tree

# parse_output drops ids at or above the vocabulary size; "no limit" for unpadding
# called without one.
_NO_VOCABULARY_LIMIT = 2**31 - 1


@dataclass
class FoundProducers:
    """The producers found (``Backend`` keyword arguments) and notes on those missing."""

    found: dict[str, Callable[..., Any]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def vllm_producers() -> FoundProducers:
    """vLLM's producers in the ``vllm`` that imports here (installed, or laid out from texts).

    The first runner's gathering and unpadding are taken where that runner kept them;
    the async outputs are found by what they are (:func:`found_async_outputs`), so a
    release that moved or removed a runner still has its own judged.  The default
    runner's sampling async output is ``make_async_output``, the others beside it.
    """
    found: dict[str, Callable[..., Any]] = {}
    notes: list[str] = []
    for producer, (module, name, adapt) in _WHERE.items():
        try:
            owner = getattr(importlib.import_module(module), name)
            found[producer] = adapt(owner)
        except ModuleNotFoundError as error:
            if error.name is not None and module.startswith(error.name):
                continue  # this vLLM has no such module (the first runner is gone)
            notes.append(_not_imported_note(name, module, producer, error))
        except Exception as error:
            notes.append(_not_imported_note(name, module, producer, error))
    producers, async_notes = found_async_outputs()
    notes += async_notes
    sampling = [p for p in producers if p.kind == "sampling"]
    primary = next((p for p in sampling if p.runner == FIRST_RUNNER), None) or next(
        iter(sampling), None
    )
    if primary is not None:
        found["make_async_output"] = primary.make
    others = tuple(p for p in producers if p is not primary)
    if others:
        found["other_async_outputs"] = others  # type: ignore[assignment]
    return FoundProducers(found, tuple(notes))


def _not_imported_note(name: str, module: str, producer: str, error: Exception) -> str:
    first_line = (str(error).splitlines() or [""])[0]
    return (
        f"vLLM's {name} ({module}) does not import here "
        f"({type(error).__name__}: {first_line}); its {producer} is not judged"
    )


#: The labels of the runners' async outputs (record node ids carry them).
_LABELS = {
    (FIRST_RUNNER, "sampling"): FIRST_RUNNER,
    (FIRST_RUNNER, "pooling"): FIRST_RUNNER + "-pooling",
    (MODEL_RUNNER_V2, "sampling"): MODEL_RUNNER_V2,
    (MODEL_RUNNER_V2, "pooling"): MODEL_RUNNER_V2 + "-pooling",
}
#: A constructor naming any of these builds a pooling step's output.
_POOLING_PARAMETERS = frozenset({"pooler_output", "raw_pooler_output", "finished_mask"})


def async_output_kind(cls: type) -> str:
    """``pooling`` where the class's constructor takes a pooling step's outputs, else
    ``sampling``: which steps, and which checks, it is judged on."""
    parameters = set(inspect.signature(vars(cls).get("__init__", cls)).parameters)
    return "pooling" if parameters & _POOLING_PARAMETERS else "sampling"


def vllm_sources() -> dict[str, str]:
    """``{path: text}`` of the files of the ``vllm`` that imports here that may hold a
    producer (:func:`conformance.releases.sources.output_type_files`)."""
    from conformance.releases.sources import output_type_files

    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):  # a stand-in vllm module without a spec
        return {}
    if spec is None or not spec.submodule_search_locations:
        return {}
    return output_type_files(Path(next(iter(spec.submodule_search_locations))).parent)


def found_async_outputs() -> tuple[list[AsyncOutputProducer], list[str]]:
    """Every concrete ``AsyncModelRunnerOutput`` subclass in vLLM's code, as a producer
    built the way its runner builds it, with a note for each that cannot be judged."""
    from conformance.releases.discovery import find_producers

    producers: list[AsyncOutputProducer] = []
    notes: list[str] = []
    for found in find_producers(vllm_sources()):
        if found.kind != "async-output":
            continue
        try:
            cls = getattr(importlib.import_module(found.module), found.name)
        except Exception as error:
            notes.append(_not_imported_note(found.name, found.module, "async output", error))
            continue
        if inspect.isabstract(cls):
            continue
        made, note = _async_output_producer(cls, found.module, found.name, producers)
        if made is not None:
            producers.append(made)
        if note:
            notes.append(note)
    order = {label: i for i, label in enumerate(_LABELS.values())}
    producers.sort(key=lambda p: order.get(p.label, len(order)))
    return producers, notes


#: The leading parameters of a gathering vLLM's runners call: (scores, how many top
#: logprobs, the sampled ids), whatever the scores are named.
_GATHERING_COUNT = "num_logprobs"


@dataclass(frozen=True)
class FoundGathering:
    """A gathering of vLLM's found by what it is, loaded from the ``vllm`` on the path."""

    qualified_name: str  #: ``vllm.v1.worker.cpu.logprob.compute_topk_scores``
    function: Callable[..., Any]


def found_torch_gathering() -> FoundGathering | None:
    """vLLM's gathering written in torch (the CPU runner's port of Model Runner V2's,
    from 0.34.0), found by what it is (:mod:`conformance.releases.discovery`) in the
    ``vllm`` that imports here; None where it has none, or it does not import.  Model
    Runner V2's own runs as Triton kernels: judged only where Triton runs."""
    from conformance.releases.discovery import find_producers

    sources = vllm_sources()
    for candidate in find_producers(sources):
        if candidate.kind != "gathering" or "triton" in sources[candidate.path]:
            continue
        owner_name, _, member = candidate.name.rpartition(".")
        if owner_name:
            continue  # a method needs its object: the first runner's, judged as gather_logprobs
        try:
            function = getattr(importlib.import_module(candidate.module), member)
        except Exception:
            continue
        parameters = list(inspect.signature(function).parameters)
        if len(parameters) >= 3 and parameters[1] == _GATHERING_COUNT:
            return FoundGathering(f"{candidate.module}.{candidate.name}", function)
    return None


def gatherings_found() -> list[str]:
    """Each gathering of the ``vllm`` on the path, found by what it is, and how it is
    judged (for the header)."""
    from conformance.releases.discovery import find_producers

    sources = vllm_sources()
    described = []
    for found in find_producers(sources):
        if found.kind != "gathering":
            continue
        if "triton" in sources[found.path]:
            how = "Triton: judged where Triton runs"
        elif "." in found.name:
            module, owner = _WHERE["gather_logprobs"][:2]
            how = (
                "judged as gather_logprobs"
                if f"{found.module}.{found.name}" == f"{module}.{owner}.gather_logprobs"
                else f"found, not judged: the sampler's gathering judged is {owner}.gather_logprobs"
            )
        else:
            how = "torch: judged on CPU"
        described.append(f"{found.module}.{found.name} ({how})")
    return described


def _async_output_producer(
    cls: type, module: str, name: str, taken: list[AsyncOutputProducer]
) -> tuple[AsyncOutputProducer | None, str]:
    try:
        make = constructed_like_vllm(cls)
    except TypeError as error:
        return None, f"vLLM's {name} ({module}): {error}; it is not judged"
    runner = make.runner  # type: ignore[attr-defined]
    kind = async_output_kind(cls)
    label = _LABELS[(runner, kind)]
    if any(p.label == label for p in taken):
        label = f"{label}-{name}"  # a second class of the same runner and kind
    note = ""
    unbuilt: frozenset[str] = frozenset()
    if runner == MODEL_RUNNER_V2 and kind == "sampling":
        unbuilt = _mrv2_steps_not_built()
    if runner == FIRST_RUNNER and kind == "pooling":
        note = _stand_in_note(cls, importlib.import_module(module))
    producer = AsyncOutputProducer(
        label,
        make,
        kind=kind,
        judged_class=f"{module}.{name}",
        runner=runner,
        steps_not_built=unbuilt,
    )
    return producer, note


def _mrv2_steps_not_built() -> frozenset[str]:
    """Model Runner V2 hands logprobs with rows of several tokens only where
    ``LogprobsTensors`` carries the ``cu_num_generated_tokens`` its async output's
    ``tolists()`` reads (0.16.0 on); before, it builds no such step (vLLM: "TODO:
    Support logprobs with spec decoding")."""
    outputs = importlib.import_module("vllm.v1.outputs")
    fields = getattr(getattr(outputs, "LogprobsTensors", None), "_fields", ())
    if "cu_num_generated_tokens" in fields:
        return frozenset()
    return frozenset({LOGPROBS_WITH_MULTI_TOKEN_ROWS})


def _stand_in_note(cls: type, module: ModuleType) -> str:
    """The first runner's pooling output calls a copy helper (``json_map_leaves`` to
    0.16.x, ``_copy_pooler_output_to_cpu`` from 0.17.0) that a release text does not
    hold: there it runs with the suite's stand-in, and the note says so."""
    called = set(getattr(getattr(vars(cls).get("__init__"), "__code__", None), "co_names", ()))
    stand_ins = sorted(called & set(getattr(module, "SUITE_STAND_INS", ())))
    if not stand_ins:
        return ""
    return (
        f"the first runner's {cls.__name__} is judged with the suite's stand-in for "
        f"{' and '.join(stand_ins)} (a release text holds the class, not its copy helper)"
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
    from conformance.releases.texts import mrv2_text_beside, producer_text_beside, write_stub_tree

    beside = (producer_text_beside(outputs_text, version), mrv2_text_beside(outputs_text, version))
    if beside == (None, None):
        return FoundProducers(notes=(f"no producer text of {version} beside {outputs_text}",))
    folder = kept_tree(
        f"vllm-{version}-producers", lambda into: write_stub_tree(outputs_text, version, into)
    )
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

    folder = kept_tree(
        f"vllm-{version}-producers", lambda into: write_stub_tree(outputs_text, version, into)
    )
    with _vllm_imported_from(folder, None):
        try:
            module = importlib.import_module(triton_gathering_module())
        except ImportError:
            return None
        found = mrv2_gathering_in(module)
    return found[1] if found else None


def triton_gathering_at(sources: dict[str, str]) -> tuple[str, str] | None:
    """``(module, function)`` of Model Runner V2's Triton gathering among ``sources``
    (``{path: text}``), found by what it is wherever vLLM keeps it: a gathering
    (:mod:`conformance.releases.discovery`) in a file of Triton kernels; None where none is."""
    from conformance.releases.discovery import find_producers

    for found in find_producers(sources):
        if found.kind == "gathering" and "." not in found.name and "triton" in sources[found.path]:
            return found.module, found.name
    return None


def triton_gathering_module() -> str:
    """The module of the ``vllm`` on the path holding its Triton gathering (where the
    release keeps it, :data:`MRV2_GATHERING_MODULE` when none is found)."""
    found = triton_gathering_at(vllm_sources())
    return found[0] if found is not None else MRV2_GATHERING_MODULE


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
    folder = kept_tree(
        f"vllm-{version}-text-producers",
        lambda into: write_tree(outputs_source, version, into, producers_source),
    )
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


def gathering_method(owner: type, member: str = "gather_logprobs") -> Callable[..., Any]:
    """A sampler class's gathering method as a function of (logprobs, num_logprobs,
    token_ids): vLLM's is a staticmethod from 0.11.1 and, before, a method that never
    reads ``self`` (so an instance made without ``__init__`` serves); a plugin's may be
    a classmethod."""
    if isinstance(inspect.getattr_static(owner, member), (staticmethod, classmethod)):
        function: Callable[..., Any] = getattr(owner, member)
        return function
    unbound = getattr(owner, member)

    def gather_logprobs(logprobs: Any, num_logprobs: int, token_ids: Any) -> Any:
        return unbound(object.__new__(owner), logprobs, num_logprobs, token_ids)

    return gather_logprobs


def _unpad_sampled_token_ids(rejection_sampler: Any) -> Callable[..., Any]:
    parse_output = rejection_sampler.parse_output

    def unpad_sampled_token_ids(sampled: Any, *, vocab_size: int | None = None) -> Any:
        result = parse_output(sampled, _NO_VOCABULARY_LIMIT if vocab_size is None else vocab_size)
        # (rows, cu or logprobs) from 0.12.0; rows of numpy arrays in 0.11.1-0.11.2.
        rows = result[0] if isinstance(result, tuple) else result
        return [row.tolist() if hasattr(row, "tolist") else row for row in rows]

    # vLLM's own call, for a benchmark timing it without this adapter's pass over the rows.
    unpad_sampled_token_ids.parse_output = parse_output  # type: ignore[attr-defined]
    return unpad_sampled_token_ids


_WHERE: dict[str, tuple[str, str, Callable[[Any], Callable[..., Any]]]] = {
    "gather_logprobs": ("vllm.v1.sample.sampler", "Sampler", gathering_method),
    "unpad_sampled_token_ids": (
        "vllm.v1.sample.rejection_sampler",
        "RejectionSampler",
        _unpad_sampled_token_ids,
    ),
}
