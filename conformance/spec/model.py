"""The vocabulary a spec revision is written in: types, fields, methods.

A revision module (``rev_2025_10``) describes each spec type with these classes;
the surface checks iterate over that description.  A later revision is a new data
module, not new check code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["dataclass", "namedtuple", "abc"]


class _NoDefault:
    """Marks a field without a default (distinct from a default of None)."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class FieldSpec:
    """One field of a dataclass or NamedTuple.

    ``annotation`` is written as the spec writes it; it is compared after
    normalisation (see :mod:`conformance.annotations`).  ``annotation_meaningful``
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
    def required(self) -> bool:
        return self.default is NO_DEFAULT and self.default_factory is None


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter of a method, ``self`` excluded."""

    name: str
    annotation: str | None = None
    default: Any = NO_DEFAULT


@dataclass(frozen=True)
class MethodSpec:
    """A method: name, binding (instance or static), parameters, return annotation."""

    name: str
    parameters: tuple[ParameterSpec, ...] = ()
    returns: str | None = None
    binding: Literal["instance", "static"] = "instance"
    abstract: bool = False

    def render(self) -> str:
        """The signature as the spec writes it, for messages."""
        params = [] if self.binding == "static" else ["self"]
        for p in self.parameters:
            text = p.name + (f": {p.annotation}" if p.annotation else "")
            if p.default is not NO_DEFAULT:
                text += f" = {p.default!r}"
            params.append(text)
        tail = f" -> {self.returns}" if self.returns else ""
        prefix = "@staticmethod " if self.binding == "static" else ""
        prefix += "@abstractmethod " if self.abstract else ""
        return f"{prefix}def {self.name}({', '.join(params)}){tail}"


@dataclass(frozen=True)
class TypeSpec:
    """One spec type.  ``dataclass_flags`` are the ``@dataclass`` flags in force."""

    name: str
    kind: Kind
    fields: tuple[FieldSpec, ...] = ()
    methods: tuple[MethodSpec, ...] = ()
    dataclass_flags: dict[str, bool] = field(default_factory=dict)

    def field(self, name: str) -> FieldSpec:
        return next(f for f in self.fields if f.name == name)

    def method(self, name: str) -> MethodSpec:
        return next(m for m in self.methods if m.name == name)


@dataclass(frozen=True)
class SpecRevision:
    """A whole revision: its types (by name) and module-level constants."""

    revision: str
    types: dict[str, TypeSpec]
    constants: dict[str, Any] = field(default_factory=dict)
