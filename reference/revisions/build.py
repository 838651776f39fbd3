"""Build the reference implementation of a spec revision from its data and behaviours.

``import reference`` is the hand-written 2025.10; every other revision's reference
is made here, so one body of code (:mod:`reference.revisions.methods`, the shared
producers) serves all of them and no release is copied file by file.  Each
:class:`~reference.revisions.model.TypeSpec` becomes a class of its kind:

* a dataclass: :func:`dataclasses.make_dataclass` with the fields in order, the
  annotations as the data writes them (strings, never evaluated), the defaults
  and default factories, and the revision's flags;
* a NamedTuple: :func:`collections.namedtuple` with its defaults, subclassed to add
  the annotations and ``__slots__ = ()`` (as ``typing.NamedTuple`` gives);
* an ABC whose listed methods are abstract.

Methods come from the behaviours the revision has, with the parameter names,
defaults, binding and annotation texts the data lists (checked here, so a
mismatch fails the build instead of a conformance run).

Built classes live at ``reference.revisions.<r_X_Y_Z>.<Type>``: their
``__module__`` is ``reference.revisions`` and their ``__qualname__`` starts with
:func:`module_attribute_name`, which :func:`reference.revisions.__getattr__`
resolves, so pickle finds them by reference in any process.
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import types
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from reference.async_output import RevisionOutputTypes, device_async_output_class
from reference.constants import PLACEHOLDER_TOKEN_ID
from reference.kv_connector_stats import KVConnectorStats
from reference.logprobs_ops import gather_logprobs_for
from reference.revisions.methods import Building, implementation_for
from reference.revisions.model import NO_DEFAULT, MethodSpec, SpecRevision, TypeSpec
from reference.runner_async_output import runner_async_class
from reference.sampler_ops import pad_sampled_token_ids, unpad_sampled_token_ids

#: Where built classes claim to live; ``reference.revisions.__getattr__`` serves them.
HOME_MODULE = "reference.revisions"
_PREFIX = "r_"

# What an empty step holds in the fields a revision requires (vLLM's EMPTY_MODEL_RUNNER_OUTPUT
# passes these; from 0.14.0 on only req_ids and req_id_to_index are required).
_EMPTY_STEP: dict[str, Callable[[], Any]] = {
    "req_ids": list,
    "req_id_to_index": dict,
    "sampled_token_ids": list,
    "logprobs": lambda: None,
    "prompt_logprobs_dict": dict,
    "pooler_output": list,
}


class RevisionModule(types.ModuleType):
    """A built reference module; it pickles as ``reference_module(<its revision>)``.

    Pickle protocols 2 and 3 save a class whose ``__qualname__`` is dotted as
    ``getattr(parent, name)``, which pickles the parent (this module) itself.
    """

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        from reference.revisions import reference_module

        return reference_module, (self.SPEC_REVISION,)


class BuildError(ValueError):
    """The revision's data and the implementation of its behaviours disagree."""


def module_attribute_name(revision_name: str) -> str:
    """``r_0_12_0`` for ``0.12.0``: the attribute of ``reference.revisions`` it is built at."""
    return _PREFIX + revision_name.replace(".", "_")


def revision_of_attribute(attribute: str) -> str | None:
    """The revision :func:`module_attribute_name` maps to ``attribute``; None for anything else."""
    if not attribute.startswith(_PREFIX):
        return None
    from reference.revisions import known_revisions

    for name in known_revisions():
        if module_attribute_name(name) == attribute:
            return name
    return None


# One module per known revision, however it is asked for ("0.15.1" and "0.14.0" are one
# revision): two builds would give two classes at one qualified name, and pickle
# refuses an object whose class is not the one that name resolves to.
_BUILT: dict[str, types.ModuleType] = {}


def build_module(revision: SpecRevision) -> types.ModuleType:
    """The reference of ``revision``: its spec types, constants and producers, as a module.

    A known revision is built once per process; any other ``SpecRevision`` object
    (a variant made in a test) is built afresh.  Building 2025.10 works too (tests
    hold it against the hand-written package), but its objects do not pickle:
    ``reference.revisions.r_2025_10`` is the hand-written ``reference``.
    """
    from reference.revisions import all_revisions

    if not any(known is revision for known in all_revisions()):
        return _build(revision)
    if revision.name not in _BUILT:
        _BUILT[revision.name] = _build(revision)
    return _BUILT[revision.name]


def _build(revision: SpecRevision) -> types.ModuleType:
    attribute = module_attribute_name(revision.name)
    module = RevisionModule(
        f"{HOME_MODULE}.{attribute}",
        f"Reference implementation of vllm.v1.outputs at spec revision {revision.name}, "
        "built from the revision's data by reference.revisions.build.",
    )
    namespace = module.__dict__
    building = Building(revision, namespace)
    for spec in revision.types.values():
        namespace[spec.name] = _place(_build_type(spec, building), attribute, spec.name)

    namespace["PLACEHOLDER_TOKEN_ID"] = PLACEHOLDER_TOKEN_ID
    namespace["SPEC_REVISION"] = revision.name
    namespace["KVConnectorStats"] = KVConnectorStats
    namespace["EMPTY_MODEL_RUNNER_OUTPUT"] = _empty_model_runner_output(
        namespace["ModelRunnerOutput"], revision.types["ModelRunnerOutput"]
    )
    namespace["pad_sampled_token_ids"] = pad_sampled_token_ids
    namespace["unpad_sampled_token_ids"] = unpad_sampled_token_ids
    namespace["gather_logprobs"] = gather_logprobs_for(namespace["LogprobsTensors"])
    namespace["DeviceAsyncModelRunnerOutput"] = _place(
        device_async_output_class(
            namespace["AsyncModelRunnerOutput"],
            _output_types(revision, namespace),
            with_kv_connector_output=revision.has("AsyncModelRunnerOutput.get_kv_connector_output"),
        ),
        attribute,
        "DeviceAsyncModelRunnerOutput",
    )
    namespace["RunnerAsyncModelRunnerOutput"] = _place(
        runner_async_class(namespace["AsyncModelRunnerOutput"], revision.async_output),
        attribute,
        "RunnerAsyncModelRunnerOutput",
    )
    namespace["__all__"] = sorted(name for name in namespace if not name.startswith("__"))
    return module


def _place(cls: type, attribute: str, name: str) -> type:
    cls.__module__ = HOME_MODULE
    cls.__qualname__ = f"{attribute}.{name}"
    for member in vars(cls).values():
        function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        if isinstance(function, types.FunctionType) and function.__module__ == __name__:
            function.__qualname__ = f"{cls.__qualname__}.{function.__name__}"
    return cls


def _build_type(spec: TypeSpec, building: Building) -> type:
    methods = {m.name: _method(spec, m, building) for m in spec.methods}
    if spec.kind == "dataclass":
        return _dataclass(spec, methods)
    if spec.kind == "namedtuple":
        return _namedtuple(spec, methods)
    return types.new_class(spec.name, (ABC,), exec_body=lambda ns: ns.update(methods))


def _dataclass(spec: TypeSpec, methods: dict[str, Any]) -> type:
    fields = []
    for f in spec.fields:
        if f.default_factory is not None:
            options = dataclasses.field(default_factory=f.default_factory)
        elif f.default is not NO_DEFAULT:
            options = dataclasses.field(default=f.default)
        else:
            options = dataclasses.field()
        fields.append((f.name, f.annotation, options))
    flags: dict[str, Any] = dict(spec.dataclass_flags)
    return dataclasses.make_dataclass(spec.name, fields, namespace=methods, **flags)


def _namedtuple(spec: TypeSpec, methods: dict[str, Any]) -> type:
    if any(f.default_factory is not None for f in spec.fields):
        raise BuildError(f"{spec.name}: a NamedTuple field cannot have a default_factory")
    defaults = [f.default for f in spec.fields if f.has_default]
    if spec.fields[len(spec.fields) - len(defaults) :] != tuple(
        f for f in spec.fields if f.has_default
    ):
        raise BuildError(f"{spec.name}: NamedTuple fields with defaults must come last")
    base = collections.namedtuple(spec.name, spec.field_names, defaults=defaults)  # type: ignore[misc]
    body = {
        "__slots__": (),
        "__annotations__": {f.name: f.annotation for f in spec.fields},
        "__doc__": f"{spec.name}({', '.join(spec.field_names)})",
        **methods,
    }
    return type(spec.name, (base,), body)


def _method(spec: TypeSpec, method: MethodSpec, building: Building) -> Any:
    implementation = implementation_for(building, spec.name, method.name)
    made = implementation.factory(building)
    # A fresh function per class, so stamping this revision's annotations touches no other.
    function = types.FunctionType(
        made.__code__, made.__globals__, method.name, made.__defaults__, made.__closure__
    )
    function.__kwdefaults__ = made.__kwdefaults__
    function.__doc__ = made.__doc__
    function.__module__ = __name__
    _check_parameters(spec, method, function)
    annotations: dict[str, Any] = {
        p.name: p.annotation for p in method.parameters if p.annotation is not None
    }
    if method.returns is not None:
        annotations["return"] = method.returns
    function.__annotations__ = annotations
    if method.abstract:
        return abstractmethod(function)
    if method.binding == "static":
        return staticmethod(function)
    if method.binding == "class":
        return classmethod(function)
    return function


_PARAMETER_KINDS = {
    "positional_or_keyword": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "var_positional": inspect.Parameter.VAR_POSITIONAL,
}


def _check_parameters(spec: TypeSpec, method: MethodSpec, function: Any) -> None:
    params = list(inspect.signature(function).parameters.values())
    if method.binding != "static":
        params = params[1:]  # self or cls
    expected = [(p.name, _PARAMETER_KINDS[p.kind], p.default) for p in method.parameters]
    found = [
        (p.name, p.kind, NO_DEFAULT if p.default is inspect.Parameter.empty else p.default)
        for p in params
    ]
    if found != expected:
        raise BuildError(
            f"{spec.name}.{method.name}: the implementation takes {found}, "
            f"the revision lists {method.render()}"
        )


def _empty_model_runner_output(model_runner_output: type, spec: TypeSpec) -> Any:
    required = {f.name: _EMPTY_STEP[f.name]() for f in spec.fields if not f.has_default}
    return model_runner_output(**required)


def _output_types(revision: SpecRevision, namespace: dict[str, Any]) -> RevisionOutputTypes:
    tolists = revision.types["LogprobsTensors"].method_named("tolists")
    return RevisionOutputTypes(
        sampler_output=namespace["SamplerOutput"],
        logprobs_tensors=namespace["LogprobsTensors"],
        model_runner_output=namespace["ModelRunnerOutput"],
        sampled_rows_as_numpy=revision.sampled_rows_are_arrays,
        logprobs_take_cu=tolists is not None and bool(tolists.parameters),
    )
