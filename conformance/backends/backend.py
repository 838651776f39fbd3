"""What a backend is: the implementation under test and what it declares about itself.

A backend is selected by a spec string and resolved in :mod:`conformance.backends.resolve`;
this module only describes it, and imports neither torch nor the reference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

#: torch's built-in device types the suite always parametrises over (others when declared).
BUILTIN_DEVICES = ("cpu", "cuda", "xpu", "mps")
_DEVICE_TYPE = re.compile(r"^[a-z][a-z0-9_]*$")


#: Step kinds a runner may never build, as an async output producer declares them.
LOGPROBS_WITH_MULTI_TOKEN_ROWS = "logprobs-with-multi-token-rows"


@dataclass(frozen=True)
class AsyncOutputProducer:
    """An async output class judged beside ``Backend.make_async_output``.

    vLLM builds its async output in two runners (the first one's
    ``AsyncGPUModelRunnerOutput``, Model Runner V2's ``AsyncOutput``) and a pooling one
    in each; a backend declares the others here, each judged on the steps of its kind.
    ``label``: its id in the checks' node ids (``model-runner-v2``); ``make``: step ->
    ``AsyncModelRunnerOutput``; ``kind``: ``sampling`` or ``pooling``; ``judged_class``:
    what each record names as judged; ``runner``: the runner whose shape it has;
    ``steps_not_built``: step kinds its runner never builds (judged not applicable).
    """

    label: str
    make: Callable[..., Any]
    kind: str = "sampling"
    judged_class: str = ""
    runner: str = ""
    steps_not_built: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # Left out, the runner is the one its make was built like (constructed_like_vllm):
        # the checks that differ by runner and the records naming it read the same.
        if not self.runner:
            object.__setattr__(self, "runner", getattr(self.make, "runner", "") or "")

    def __repr__(self) -> str:
        return f"AsyncOutputProducer({self.label!r}, {self.describe()})"

    def describe(self) -> str:
        """``module.Class (runner)``: what the records name as judged."""
        return describe_async_output(self.make, self.judged_class, self.runner)


def describe_async_output(make: Any, judged_class: str = "", runner: str = "") -> str:
    """What a record names as the async output judged: its class and its runner's shape."""
    judged = (
        judged_class
        or getattr(make, "judged_class", "")
        or getattr(make, "__qualname__", repr(make))
    )
    shape = runner or getattr(make, "runner", "")
    return f"{judged} ({shape})" if shape else judged


class BackendResolutionError(Exception):
    """A backend spec that names nothing usable; the message says what and how to fix it.
    ``vllm_missing``: the module of vLLM its import did not find (``vllm.v1.sample``),
    where that is what failed; ``location``: the file and line of the backend's code that
    raised, where known."""

    def __init__(
        self,
        message: str,
        vllm_missing: str | None = None,
        location: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.vllm_missing = vllm_missing
        self.location = location


@dataclass(frozen=True)
class Backend:
    """A backend as the suite sees it.

    ``module`` exposes the spec names of the revision it targets: a module, or any
    object holding them as attributes (a ``types.SimpleNamespace``, a class).  ``devices`` are
    the torch device types it supports: any type torch can name (``cuda``, ``xpu``,
    ``npu``, ``hpu``, a PrivateUse1 name); device checks run on those present here.
    ``spec_revision`` is the revision it targets (a revision name or a vLLM
    release, e.g. ``"0.12.0"``); None leaves the choice to ``--revision``, else
    2025.10.  The producers are optional: when given, the suite validates what they
    return.

    * ``pad_sampled_token_ids(token_ids, *, max_len=None, device="cpu") -> Tensor``
    * ``unpad_sampled_token_ids(sampled, *, vocab_size=None) -> list[list[int]]``
    * ``gather_logprobs(logprobs, num_logprobs, token_ids) -> LogprobsTensors``
      (``token_ids`` int64, as vLLM's sampler passes them)
    * ``make_async_output(step) -> AsyncModelRunnerOutput``, where ``step`` is a
      :class:`conformance.Step`: what vLLM's runner hands its async output.  A class
      with vLLM's constructor: ``conformance.constructed_like_vllm(MyAsyncOutput)``.

    ``producer_devices``: the device types the async output runs on, when fewer than
    ``devices`` (vLLM's own is written for CUDA only); default ``devices``.
    ``other_async_outputs``: more :class:`AsyncOutputProducer` (another runner's async
    output, a pooling one), each judged on its own; the checks of the async output
    then run once per producer, ``make_async_output`` first.
    ``steps``: the kinds of step the backend's runner hands its async output
    (:data:`conformance.STEP_KINDS`: ``multi-token-rows``, ``discarded-rows``,
    ``logprobs``, ``prompt-logprobs``, ``pooling-outputs``, ``empty-batch``,
    ``nan-counts``, ``routed-experts``, ``sampling-masks``); one token
    per request is always built.  Default None: every kind the revision's runner builds.
    A check of a step kind not declared is skipped as not applicable
    (``skip_cause`` ``step-not-declared``), never passed.
    Every declared producer is called once before the checks, outside the per-check
    time limit, so a producer that compiles on its first call is not timed out.
    """

    name: str
    module: ModuleType | Any
    devices: tuple[str, ...] = ("cpu",)
    spec_revision: str | None = None
    version: str | None = None
    pad_sampled_token_ids: Callable[..., Any] | None = None
    unpad_sampled_token_ids: Callable[..., Any] | None = None
    gather_logprobs: Callable[..., Any] | None = None
    make_async_output: Callable[..., Any] | None = None
    producer_devices: tuple[str, ...] | None = None
    other_async_outputs: tuple[AsyncOutputProducer, ...] = ()
    steps: tuple[str, ...] | None = None
    # Where the spec string led (for the report header); filled in by load_backend.
    source: str = field(default="", compare=False)
    # Set by a backend that derives its revision from an installed version (vllm):
    # the words the report header uses, e.g. "installed vLLM 0.12.0".
    revision_detected_from: str | None = field(default=None, compare=False)
    # Why a revision could not be detected (a vLLM too old or too new): an error
    # unless the run names the revision itself.
    revision_undetectable: str | None = field(default=None, compare=False)
    # Things the suite wants the user to know about this backend (printed in the header).
    notes: tuple[str, ...] = field(default=(), compare=False)
    # Spec types a vLLM text judged on its own code does not define (a fork, a release
    # before 0.10.2): "type removed" changes, whose checks are not applicable.
    types_absent: tuple[str, ...] = field(default=(), compare=False)
    # Why the backend's own code cannot be imported with the vLLM judged (a bump's
    # target lacks a module it imports): the one failure there, the rest not judged.
    import_fails: str | None = field(default=None, compare=False)
    # False for a bare module of types, which says nothing of its devices: its types
    # may be handed tensors of any device (``devices`` then only says where it is judged).
    devices_declared: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        devices = self.devices
        if isinstance(devices, str):
            devices = (devices,)
        object.__setattr__(self, "devices", tuple(devices))
        if isinstance(self.producer_devices, str):
            object.__setattr__(self, "producer_devices", (self.producer_devices,))
        self._check_other_async_outputs()
        declared = (*self.devices, *(self.producer_devices or ()))
        bad = [d for d in declared if not isinstance(d, str) or not _DEVICE_TYPE.match(d)]
        if bad:
            raise BackendResolutionError(
                f"backend {self.name!r} declares device types {bad}, which are not torch device "
                "type names; write them as torch does (e.g. 'cpu', 'cuda', 'npu', 'hpu')"
            )
        if self.steps is not None:
            from conformance.backends.step import unknown_step_kinds

            steps = (self.steps,) if isinstance(self.steps, str) else tuple(self.steps)
            problem = unknown_step_kinds(steps)
            if problem is not None:
                raise BackendResolutionError(f"backend {self.name!r}: {problem}")
            object.__setattr__(self, "steps", steps)
        if self.make_async_output is not None:
            from conformance.backends.step import old_form_message

            message = old_form_message(self.name, self.make_async_output)
            if message is not None:
                raise BackendResolutionError(message)
        if self.spec_revision is not None:
            from conformance.oracle.revisions import (
                UnknownRevisionError,
                canonical_name,
                names_a_path,
            )

            if names_a_path(self.spec_revision):
                return  # a vLLM text, tree or wheel: read when the revision is chosen

            try:
                canonical_name(self.spec_revision)
            except UnknownRevisionError as error:
                raise BackendResolutionError(
                    f"backend {self.name!r} targets {error}; set spec_revision to one of them"
                ) from None

    def _check_other_async_outputs(self) -> None:
        others = self.other_async_outputs
        if not isinstance(others, tuple):
            others = tuple(others) if isinstance(others, list) else (others,)
            object.__setattr__(self, "other_async_outputs", others)
        for other in others:
            if not isinstance(other, AsyncOutputProducer) or other.kind not in (
                "sampling",
                "pooling",
            ):
                raise BackendResolutionError(
                    f"backend {self.name!r}: other_async_outputs holds {other!r}; give "
                    "conformance.AsyncOutputProducer(label, make, "
                    "kind='sampling' or 'pooling') for each"
                )
        labels = [p.label for p in self.async_output_producers("sampling")]
        labels += [p.label for p in self.async_output_producers("pooling")]
        if len(set(labels)) != len(labels):
            raise BackendResolutionError(
                f"backend {self.name!r}: async outputs share a label ({', '.join(labels)}); "
                "give each AsyncOutputProducer a label of its own"
            )

    def __repr__(self) -> str:
        # Short and free of memory addresses: it appears in failure messages and reports.
        return (
            f"Backend({self.name!r}, module {self.module_name!r}, "
            f"devices {', '.join(self.devices)}, spec {self.spec_revision or 'not declared'})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Hypothesis prints failing examples (fixtures included) with this hook.
        printer.text(repr(self))

    def async_output_producers(self, kind: str = "sampling") -> list[AsyncOutputProducer]:
        """Every async output of ``kind`` the backend declares, ``make_async_output`` first."""
        found = []
        if kind == "sampling" and self.make_async_output is not None:
            make = self.make_async_output
            runner = getattr(make, "runner", "")
            found.append(AsyncOutputProducer(runner or "backend", make, runner=runner))
        found += [p for p in self.other_async_outputs if p.kind == kind]
        return found

    @property
    def module_name(self) -> str:
        """The name of :attr:`module` for the report: a module's ``__name__``; any other
        object holding the spec names (a ``types.SimpleNamespace``) is named by its type
        and where it was made."""
        name = getattr(self.module, "__name__", None)
        if isinstance(name, str):
            return name
        return f"<{type(self.module).__qualname__} of backend {self.name}>"

    def declares_steps(self, kinds: Iterable[str]) -> bool:
        """Whether the backend's runner builds steps of every kind in ``kinds``."""
        return self.steps is None or all(k in self.steps for k in kinds)

    def steps_not_declared(self) -> list[str]:
        """The step kinds the backend declares its runner never builds, in STEP_KINDS order."""
        from conformance.backends.step import STEP_KINDS

        if self.steps is None:
            return []
        return [kind for kind in STEP_KINDS if kind not in self.steps]

    @property
    def async_output_devices(self) -> tuple[str, ...]:
        """The device types the async output producer is judged on."""
        return self.producer_devices if self.producer_devices is not None else self.devices

    def spec_type(self, name: str) -> Any:
        """The backend's object for spec name ``name`` (None when it lacks it)."""
        return getattr(self.module, name, None)
