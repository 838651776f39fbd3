"""Surface checks: does a backend's class have the shape the spec revision describes?

:func:`surface_checks` turns one :class:`~conformance.oracle.revisions.TypeSpec` into small
named checks (kind, field names and order, each default, each annotation, each
method, flags, abstractness).  Each check returns the list of deviations it
found, each naming the type, the member, what was expected and what was found.
"""

from __future__ import annotations

import dataclasses
import inspect
from abc import ABCMeta
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.oracle.annotations import globals_declaring, normalise
from reference.revisions.model import NO_DEFAULT, FieldSpec, MethodSpec, TypeSpec

Finder = Callable[[Any], list[str]]


@dataclass(frozen=True)
class SurfaceCheck:
    """One named aspect of one type; ``run(cls)`` returns the deviations found."""

    id: str
    type_name: str
    run: Finder

    def __str__(self) -> str:
        return self.id


def surface_checks(spec: TypeSpec) -> list[SurfaceCheck]:
    t = spec.name
    checks = [SurfaceCheck("kind", t, lambda cls: _kind(spec, cls))]
    if spec.kind in ("dataclass", "namedtuple"):
        checks.append(SurfaceCheck("fields", t, lambda cls: _fields(spec, cls)))
        for f in spec.fields:
            checks.append(SurfaceCheck(f"default[{f.name}]", t, _bind(_default, spec, f)))
            if f.annotation_meaningful:
                checks.append(SurfaceCheck(f"annotation[{f.name}]", t, _bind(_annotation, spec, f)))
    if spec.kind == "dataclass":
        checks.append(SurfaceCheck("dataclass_flags", t, lambda cls: _flags(spec, cls)))
    for m in spec.methods:
        checks.append(SurfaceCheck(f"method[{m.name}]", t, _bind(_method, spec, m)))
    if spec.kind == "abc":
        checks.append(SurfaceCheck("abstract", t, lambda cls: _abstract(spec, cls)))
    return checks


def _bind(finder: Callable[[TypeSpec, Any, Any], list[str]], spec: TypeSpec, member: Any) -> Finder:
    return lambda cls: finder(spec, cls, member)


# --- kind ---------------------------------------------------------------------------


def _is_namedtuple(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def _is_dataclass(cls: Any) -> bool:
    return isinstance(cls, type) and dataclasses.is_dataclass(cls)


def _found_kind(cls: Any) -> str:
    if cls is None:
        return "no such name in the backend's module"
    if not isinstance(cls, type):
        return f"not a class but a {type(cls).__name__}"
    if _is_namedtuple(cls):
        return "a NamedTuple"
    if _is_dataclass(cls):
        return "a dataclass"
    if isinstance(cls, ABCMeta) and inspect.isabstract(cls):
        return "an abstract base class"
    return f"a plain class (bases {', '.join(b.__name__ for b in cls.__bases__)})"


_EXPECTED_KIND = {
    "dataclass": ("a @dataclass", _is_dataclass),
    "namedtuple": ("a typing.NamedTuple", _is_namedtuple),
    "abc": (
        "an abstract base class (ABC)",
        lambda cls: isinstance(cls, ABCMeta) and inspect.isabstract(cls),
    ),
}


def _kind(spec: TypeSpec, cls: Any) -> list[str]:
    label, test = _EXPECTED_KIND[spec.kind]
    if test(cls) and not (spec.kind == "dataclass" and _is_namedtuple(cls)):
        return []
    return [f"{spec.name}: expected {label}, found {_found_kind(cls)}"]


# --- fields -------------------------------------------------------------------------


def _field_names(cls: Any) -> list[str] | None:
    if _is_namedtuple(cls):
        return list(cls._fields)
    if _is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return None


def _fields(spec: TypeSpec, cls: Any) -> list[str]:
    found = _field_names(cls)
    expected = [f.name for f in spec.fields]
    if found is None:
        return [f"{spec.name}: expected fields {_names(expected)}, found {_found_kind(cls)}"]
    if found == expected:
        return []
    detail = []
    missing = [n for n in expected if n not in found]
    extra = [n for n in found if n not in expected]
    if missing:
        detail.append(f"missing {_names(missing)}")
    if extra:
        detail.append(f"extra {_names(extra)}")
    if not missing and not extra:
        detail.append("same names in another order")
    # The difference first: a one-line summary cut to its width still shows it.
    return [
        f"{spec.name}: {'; '.join(detail)}: expected fields {_names(expected)} in this order, "
        f"found {_names(found)}"
    ]


def _names(names: list[str]) -> str:
    return "(" + ", ".join(names) + ")"


def _found_default(cls: Any, name: str) -> tuple[Any, Callable[[], Any] | None] | None:
    """(default, default_factory) of field ``name``; None when there is no such field."""
    if _is_namedtuple(cls):
        if name not in cls._fields:
            return None
        return cls._field_defaults.get(name, NO_DEFAULT), None
    if _is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == name:
                default = NO_DEFAULT if f.default is dataclasses.MISSING else f.default
                factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
                return default, factory
    return None


def _default(spec: TypeSpec, cls: Any, f: FieldSpec) -> list[str]:
    where = f"{spec.name}.{f.name}"
    found = _found_default(cls, f.name)
    if found is None:
        return [f"{where}: expected a field, found none"]
    default, factory = found
    if f.default_factory is not None:
        return _default_factory(where, f, default, factory)
    if factory is not None:
        return [f"{where}: expected default {f.default!r}, found a default_factory {factory!r}"]
    if f.default is NO_DEFAULT:
        if default is not NO_DEFAULT:
            return [f"{where}: expected a required field (no default), found default {default!r}"]
        return []
    if default is NO_DEFAULT:
        return [f"{where}: expected default {f.default!r}, found a required field (no default)"]
    if not _same_value(default, f.default):
        return [f"{where}: expected default {f.default!r}, found {default!r}"]
    return []


def _default_factory(
    where: str, f: FieldSpec, default: Any, factory: Callable[[], Any] | None
) -> list[str]:
    assert f.default_factory is not None
    expected = f.default_factory()
    if factory is None:
        found = "a required field" if default is NO_DEFAULT else f"a plain default {default!r}"
        return [f"{where}: expected a default_factory giving {expected!r}, found {found}"]
    try:
        first, second = factory(), factory()
    except Exception as error:
        return [f"{where}: calling its default_factory raised {type(error).__name__}: {error}"]
    if not _same_value(first, expected):
        return [f"{where}: expected the default_factory to give {expected!r}, found {first!r}"]
    if first is second:
        return [
            f"{where}: expected a fresh default per instance, found one shared object "
            "(the default_factory returns the same object every call)"
        ]
    return []


def _same_value(found: Any, expected: Any) -> bool:
    """Same type and equal; False (not an exception) for values that refuse comparison."""
    if type(found) is not type(expected):
        return False
    try:
        return bool(found == expected)
    except Exception:
        return False


def _annotation(spec: TypeSpec, cls: Any, f: FieldSpec) -> list[str]:
    where = f"{spec.name}.{f.name}"
    found = _found_annotation(cls, f.name)
    if found is None:
        # A field with a value but no annotation (a collections.namedtuple's, a plain
        # class's attribute) is not missing: what it lacks is the annotation.
        has = f.name in getattr(cls, "_fields", ()) or hasattr(cls, f.name)
        missing = "none (the field is not annotated)" if has else "no such field"
        return [f"{where}: expected annotation {f.annotation}, found {missing}"]
    expected_text, found_text = (
        normalise(f.annotation),
        normalise(found, globals_declaring(cls, f.name)),
    )
    if expected_text == found_text:
        return []
    return [f"{where}: expected annotation {expected_text}, found {found_text}"]


def _found_annotation(cls: Any, name: str) -> Any:
    if _is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == name:
                return f.type
        return None
    if isinstance(cls, type):
        for klass in cls.__mro__:
            annotations = inspect.get_annotations(klass)
            if name in annotations:
                return annotations[name]
    return None


def _flags(spec: TypeSpec, cls: Any) -> list[str]:
    params = getattr(cls, "__dataclass_params__", None)
    if params is None:
        return [f"{spec.name}: expected @dataclass flags, found {_found_kind(cls)}"]
    wrong = [
        f"{name}={getattr(params, name, None)!r} (expected {value!r})"
        for name, value in spec.dataclass_flags.items()
        if getattr(params, name, None) != value
    ]
    if not wrong:
        return []
    return [f"{spec.name}: expected plain @dataclass flags, found {', '.join(wrong)}"]


# --- methods ------------------------------------------------------------------------


def _method(spec: TypeSpec, cls: Any, m: MethodSpec) -> list[str]:
    where = f"{spec.name}.{m.name}"
    if not isinstance(cls, type):
        return [f"{where}: expected {m.render()}, found {spec.name} is not a class"]
    try:
        raw = inspect.getattr_static(cls, m.name)
    except AttributeError:
        return [f"{where}: expected a method {m.render()}, found none"]
    out: list[str] = []
    if m.binding == "static" and not isinstance(raw, staticmethod):
        out.append(f"{where}: expected a @staticmethod, found {_binding(raw)}")
    if m.binding == "class" and not isinstance(raw, classmethod):
        out.append(f"{where}: expected a @classmethod, found {_binding(raw)}")
    if m.binding == "instance" and (
        isinstance(raw, (staticmethod, classmethod)) or not callable(raw)
    ):
        out.append(f"{where}: expected an instance method, found {_binding(raw)}")
    function = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not callable(function):
        return out
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return [*out, f"{where}: its signature cannot be read"]
    params = list(signature.parameters.values())
    if isinstance(raw, classmethod) or (
        m.binding == "instance" and not isinstance(raw, staticmethod)
    ):
        params = params[1:]  # self or cls
    namespace = getattr(function, "__globals__", {})
    out += _parameters(where, m, params, namespace)
    if m.returns is not None and signature.return_annotation is not inspect.Signature.empty:
        expected = normalise(m.returns)
        found = normalise(signature.return_annotation, namespace)
        if expected != found:
            out.append(f"{where}: expected return annotation {expected}, found {found}")
    return out


_PARAMETER_KINDS = {
    "positional_or_keyword": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "var_positional": inspect.Parameter.VAR_POSITIONAL,
}


def _binding(raw: Any) -> str:
    if isinstance(raw, staticmethod):
        return "a @staticmethod"
    if isinstance(raw, classmethod):
        return "a @classmethod"
    if callable(raw):
        return "an instance method"
    return f"a {type(raw).__name__} attribute"


def _parameters(
    where: str, m: MethodSpec, params: list[inspect.Parameter], namespace: dict[str, Any]
) -> list[str]:
    expected_names = [p.name for p in m.parameters]
    found_names = [p.name for p in params]
    if found_names != expected_names:
        return [
            f"{where}: expected parameters ({', '.join(expected_names)}) as in {m.render()}, "
            f"found ({', '.join(found_names)})"
        ]
    out = []
    for expected, found in zip(m.parameters, params, strict=True):
        wanted_kind = _PARAMETER_KINDS[expected.kind]
        if found.kind is not wanted_kind:
            out.append(
                f"{where}({found.name}): expected {wanted_kind.description}, found {found.kind.description}"
            )
        found_default = NO_DEFAULT if found.default is inspect.Parameter.empty else found.default
        if not _same_value(found_default, expected.default):
            shown = "none" if found_default is NO_DEFAULT else repr(found_default)
            wanted = "none" if expected.default is NO_DEFAULT else repr(expected.default)
            out.append(f"{where}({found.name}): expected default {wanted}, found {shown}")
        if expected.annotation and found.annotation is not inspect.Parameter.empty:
            a, b = normalise(expected.annotation), normalise(found.annotation, namespace)
            if a != b:
                out.append(f"{where}({found.name}): expected annotation {a}, found {b}")
    return out


# --- abstractness -------------------------------------------------------------------


def _abstract(spec: TypeSpec, cls: Any) -> list[str]:
    expected = sorted(m.name for m in spec.methods if m.abstract)
    if not isinstance(cls, type):
        return [f"{spec.name}: expected an abstract class, found {_found_kind(cls)}"]
    found = sorted(getattr(cls, "__abstractmethods__", ()))
    out = []
    if found != expected:
        out.append(
            f"{spec.name}: expected abstract method(s) {', '.join(expected)}, "
            f"found {', '.join(found) or 'none'}"
        )
    try:
        cls()
    except TypeError:
        pass
    except Exception as error:
        out.append(f"{spec.name}(): expected TypeError (abstract), found {type(error).__name__}")
    else:
        out.append(f"{spec.name}(): expected instantiation to fail (abstract class), it succeeded")
    concrete = type("Concrete", (cls,), {name: lambda self: None for name in expected})
    try:
        concrete()
    except Exception as error:
        out.append(
            f"{spec.name}: a subclass implementing {', '.join(expected)} must be instantiable, "
            f"found {type(error).__name__}: {error}"
        )
    return out
