"""A backend held to a vLLM text's own code: same shape, same results on the same inputs.

Where a vLLM text changed something since its nearest known release, the suite has no
rule of its own for it: vLLM's code of that text is the oracle.  This module compares
two implementations of one class (the text's, loaded by the suite, and the backend's):

* :func:`field_differences`, :func:`signature_differences`: the shape, member by member;
* :func:`instance_values`, :func:`call_arguments`: Hypothesis strategies of field values
  and method arguments, chosen by the names and annotations the text gives them (a
  batch of requests drawn once, so ``cu_num_generated_tokens`` fits the rows), built
  with each side's own classes (:func:`realise`);
* :func:`plain`: a result in a form both sides share (a NamedTuple or dataclass as its
  class name and fields), so :func:`conformance.oracle.compare.differences_between`
  compares vLLM's result with the backend's.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance.oracle.annotations import globals_declaring, normalise
from conformance.oracle.compare import Members

_MISSING = object()


# --- the shape ------------------------------------------------------------------------


def field_names(cls: Any) -> list[str] | None:
    if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return list(cls._fields)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return None


def kind_of_class(cls: Any) -> str:
    if not isinstance(cls, type):
        return f"not a class ({type(cls).__name__})"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "a NamedTuple"
    if dataclasses.is_dataclass(cls):
        return "a dataclass"
    if inspect.isabstract(cls):
        return "an abstract base class"
    return "a plain class"


def default_of(cls: Any, name: str) -> tuple[Any, Callable[[], Any] | None]:
    """``(default, factory)`` of a field; ``_MISSING`` for a required one."""
    if issubclass(cls, tuple):
        return cls._field_defaults.get(name, _MISSING), None
    for f in dataclasses.fields(cls):
        if f.name == name:
            default = _MISSING if f.default is dataclasses.MISSING else f.default
            factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
            return default, factory
    return _MISSING, None


def annotation_of(cls: Any, name: str) -> Any:
    for klass in cls.__mro__:
        found = inspect.get_annotations(klass)
        if name in found:
            return found[name]
    return _MISSING


def field_differences(
    vllm: type, found: Any, name: str, member: str | None, written: str | None = None
) -> list[str]:
    """Where ``found`` (the backend's class ``name``) is shaped otherwise than vLLM's:
    its kind and its fields in order; for ``member``, its default and its annotation
    (against ``written``, the annotation as vLLM's text writes it)."""
    if kind_of_class(vllm) != kind_of_class(found):
        return [f"{name}: expected {kind_of_class(vllm)} as vLLM's, found {kind_of_class(found)}"]
    expected, names = field_names(vllm), field_names(found)
    if expected is None or names is None:
        return []
    out = []
    if expected != names:
        missing = [n for n in expected if n not in names]
        extra = [n for n in names if n not in expected]
        detail = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"extra {', '.join(extra)}" if extra else "",
                "same names in another order" if not missing and not extra else "",
            )
            if part
        )
        out.append(
            f"{name}: expected the fields of vLLM's ({', '.join(expected)}), found "
            f"({', '.join(names)}) ({detail})"
        )
    if member and member in expected and member in names:
        out += _default_differences(vllm, found, name, member)
        out += _annotation_differences(vllm, found, name, member, written)
    return out


def _default_differences(vllm: type, found: type, name: str, member: str) -> list[str]:
    where = f"{name}.{member}"
    want, want_factory = default_of(vllm, member)
    got, got_factory = default_of(found, member)
    if want_factory is not None or got_factory is not None:
        if want_factory is None or got_factory is None:
            return [f"{where}: expected {_default_text(want, want_factory)} as vLLM's, found "
                    f"{_default_text(got, got_factory)}"]  # fmt: skip
        a, b = want_factory(), got_factory()
        if type(a) is not type(b) or plain(a) != plain(b):
            return [f"{where}: expected a default_factory giving {a!r} as vLLM's, found {b!r}"]
        return []
    if (want is _MISSING) != (got is _MISSING) or (
        want is not _MISSING and (type(want) is not type(got) or not _equal(want, got))
    ):
        return [f"{where}: expected {_default_text(want, None)} as vLLM's, found "
                f"{_default_text(got, None)}"]  # fmt: skip
    return []


def _default_text(default: Any, factory: Any) -> str:
    if factory is not None:
        return f"a default_factory giving {factory()!r}"
    return "a required field (no default)" if default is _MISSING else f"default {default!r}"


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _annotation_differences(
    vllm: type, found: type, name: str, member: str, written: str | None
) -> list[str]:
    """The backend's annotation against the one vLLM's text writes, where that names
    types that exist when the text runs (not those it imports for type checkers only)."""
    got = annotation_of(found, member)
    if written is None or got is _MISSING or not meaningful(written, vllm, member):
        return []
    a, b = normalise(written), normalise(got, globals_declaring(found, member))
    return [] if a == b else [f"{name}.{member}: expected annotation {a} as vLLM's, found {b}"]


def meaningful(written: str, cls: type, member: str) -> bool:
    """Whether a field's annotation as vLLM's text writes it is what its class holds when
    the text runs (not a name imported for type checkers only, nor one that stands for
    ``object`` at run time): only then is a backend's held to it."""
    held = annotation_of(cls, member)
    if held is _MISSING or not resolves(written, cls):
        return False
    try:
        return normalise(held) == normalise(written)
    except Exception:
        return False


def resolves(annotation: str, cls: type) -> bool:
    """Whether an annotation's text names only what exists in ``cls``'s module at run time."""
    import sys

    namespace = dict(vars(sys.modules[cls.__module__])) if cls.__module__ in sys.modules else {}
    try:
        # vLLM's own annotation text, evaluated as Python evaluates annotations.
        eval(annotation, namespace)
    except Exception:
        return False
    return True


def binding_of(raw: Any) -> str:
    if isinstance(raw, staticmethod):
        return "a @staticmethod"
    if isinstance(raw, classmethod):
        return "a @classmethod"
    if isinstance(raw, property):
        return "a property"
    if callable(raw):
        return "an instance method"
    return f"a {type(raw).__name__} attribute"


def signature_differences(vllm: type, found: Any, name: str, method: str) -> list[str]:
    """Where the backend's ``name.method`` is declared otherwise than vLLM's: binding,
    abstractness, parameter names, kinds and defaults, annotations where both give one."""
    where = f"{name}.{method}"
    want = inspect.getattr_static(vllm, method, _MISSING)
    if want is _MISSING:
        return []
    if not isinstance(found, type):
        return [f"{where}: expected vLLM's {binding_of(want)}, found {name} is not a class"]
    got = inspect.getattr_static(found, method, _MISSING)
    if got is _MISSING:
        return [f"{where}: expected {binding_of(want)} as vLLM's, found none"]
    out = []
    if binding_of(want) != binding_of(got):
        out.append(f"{where}: expected {binding_of(want)} as vLLM's, found {binding_of(got)}")
    want_abstract = method in getattr(vllm, "__abstractmethods__", ())
    got_abstract = method in getattr(found, "__abstractmethods__", ())
    if want_abstract != got_abstract:
        out.append(
            f"{where}: expected it {'abstract' if want_abstract else 'concrete'} as in vLLM, "
            f"found it {'abstract' if got_abstract else 'concrete'}"
        )
    a, b = _signature(want), _signature(got)
    if a is not None and b is not None and a != b:
        out.append(f"{where}: expected the signature ({a}) as vLLM's, found ({b})")
    return out


def _signature(raw: Any) -> str | None:
    function: Any = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    parts = []
    for p in signature.parameters.values():
        stars: dict[Any, str] = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}
        text = stars.get(p.kind, "") + p.name
        if p.kind is p.KEYWORD_ONLY:
            text = "kw " + text
        if p.kind is p.POSITIONAL_ONLY:
            text += " /"
        if p.default is not p.empty:
            text += f"={p.default!r}"
        parts.append(text)
    return ", ".join(parts)


# --- results in a form both sides share ---------------------------------------------------


def plain(value: Any, names: frozenset[str] = frozenset()) -> Any:
    """``value`` with every NamedTuple and dataclass instance as ``Members`` of its class's
    name (the first class of its MRO that ``names`` holds, else its own) and fields."""
    fields = field_names(type(value))
    if fields is not None:
        cls_name = next(
            (k.__name__ for k in type(value).__mro__ if k.__name__ in names), type(value).__name__
        )
        return Members({"class": cls_name, **{f: plain(getattr(value, f), names) for f in fields}})
    if isinstance(value, list):
        return [plain(v, names) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v, names) for v in value)
    if isinstance(value, Mapping) and not isinstance(value, Members):
        return {k: plain(v, names) for k, v in value.items()}
    return value


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """One drawn batch: requests, their token counts (cu), the rows and their width."""

    num_reqs: int
    cu: tuple[int, ...]
    width: int
    ids: tuple[tuple[int, ...], ...]
    logprobs: tuple[tuple[float, ...], ...]
    ranks: tuple[int, ...]

    @property
    def num_rows(self) -> int:
        return len(self.ids)

    @property
    def req_ids(self) -> list[str]:
        return [f"req-{i}" for i in range(self.num_reqs)]


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    num_reqs = draw(st.integers(0, 4))
    counts = draw(st.lists(st.integers(0, 3), min_size=num_reqs, max_size=num_reqs))
    cu = (0, *accumulate(counts))
    rows = cu[-1]
    width = draw(st.integers(1, 3))
    ids = tuple(tuple(draw(st.integers(0, 150_000)) for _ in range(width)) for _ in range(rows))
    logprobs = tuple(
        tuple(sorted((draw(st.sampled_from([0.0, -0.5, -1.25, -3.0, -9.5])) for _ in range(width)),
                     reverse=True)) for _ in range(rows)
    )  # fmt: skip
    ranks = tuple(draw(st.integers(1, 5000)) for _ in range(rows))
    return Batch(num_reqs, cu, width, ids, logprobs, ranks)


class Instance:
    """A value to build on each side with that side's class ``name`` from these fields."""

    def __init__(self, name: str, fields: dict[str, Any]) -> None:
        self.name, self.fields = name, fields

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.fields.items())
        return f"{self.name}({shown})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def realise(value: Any, classes: Callable[[str], Any]) -> Any:
    """``value`` built for one side: every :class:`Instance` made with ``classes(name)``,
    every tensor and array a fresh copy (a side that writes into its input changes
    nothing the other sees)."""
    if isinstance(value, Instance):
        cls = classes(value.name)
        return cls(**{k: realise(v, classes) for k, v in value.fields.items()})
    if isinstance(value, list):
        return [realise(v, classes) for v in value]
    if isinstance(value, tuple):
        return tuple(realise(v, classes) for v in value)
    if isinstance(value, dict):
        return {k: realise(v, classes) for k, v in value.items()}
    if isinstance(value, set):
        return set(value)
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return value.clone() if isinstance(value, torch.Tensor) else value.copy()
    return copy.copy(value)


def _defined(annotation: str, text_classes: Mapping[str, type]) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z_]\w*", annotation) if w in text_classes]


def _annotation_text(annotation: Any) -> str:
    if annotation is _MISSING or annotation is None:
        return ""
    try:
        return normalise(annotation)
    except Exception:
        return str(annotation)


def instance_values(
    cls: type, text_classes: Mapping[str, type], batch: Batch, depth: int = 0
) -> st.SearchStrategy[Instance]:
    """An :class:`Instance` of vLLM's ``cls`` whose fields fit ``batch`` (a field with a
    default is sometimes left to it)."""
    names = field_names(cls) or []

    @st.composite
    def build(draw: st.DrawFn) -> Instance:
        fields: dict[str, Any] = {}
        for name in names:
            default, factory = default_of(cls, name)
            has_default = default is not _MISSING or factory is not None
            if has_default and draw(st.booleans()):
                continue
            annotation = _annotation_text(annotation_of(cls, name))
            fields[name] = draw(value_for(name, annotation, text_classes, batch, depth))
        return Instance(cls.__name__, fields)

    return build()


def value_for(
    name: str, annotation: str, text_classes: Mapping[str, type], batch: Batch, depth: int = 0
) -> st.SearchStrategy[Any]:
    """A value for a field or parameter ``name: annotation``, fitting ``batch``."""
    optional = annotation.endswith("| None") or annotation.startswith("Optional")
    core = annotation.removesuffix(" | None")
    inner = _sequence_of(core)
    named = _defined(core, text_classes)
    strategy: st.SearchStrategy[Any]
    if inner is not None and _defined(inner, text_classes) and depth < 2:
        of = _defined(inner, text_classes)[0]
        strategy = st.lists(_instance_by_name(of, text_classes, batch, depth + 1), min_size=1,
                            max_size=3)  # fmt: skip
    elif named and depth < 2 and not core.startswith(("dict", "list", "set")):
        strategy = _instance_by_name(named[0], text_classes, batch, depth + 1)
    else:
        strategy = _by_name(name, core, batch)
    return st.one_of(st.none(), strategy) if optional else strategy


def classes_of(module: Any) -> dict[str, type]:
    """``{name: class}`` of the classes a module (vLLM's text) defines itself."""
    return {
        key: value
        for key, value in vars(module).items()
        if isinstance(value, type) and value.__module__ == module.__name__
    }


def _instance_by_name(
    name: str, text_classes: Mapping[str, type], batch: Batch, depth: int
) -> st.SearchStrategy[Any]:
    cls = text_classes.get(name)
    if cls is None or field_names(cls) is None:
        return st.none()
    return instance_values(cls, text_classes, batch, depth)


def _sequence_of(annotation: str) -> str | None:
    found = re.fullmatch(r"(?:Sequence|list|tuple)\[(.+?)(?:, \.\.\.)?\]", annotation)
    return found[1].strip("'\"") if found else None


def _container(core: str) -> str:
    if "torch.Tensor" in core and not core.startswith(("list", "dict")):
        return "tensor"
    if "np.ndarray" in core and not core.startswith(("list", "dict")):
        return "array"
    return "list"


def _rows(values: Any, container: str, dtype: str, width: int | None = None) -> Any:
    if container == "tensor":
        tensor = torch.tensor(values, dtype=getattr(torch, dtype))
        return tensor.reshape(len(values), width) if width is not None else tensor
    if container == "array":
        array = np.array(values, dtype=getattr(np, dtype))
        return array.reshape(len(values), width) if width is not None else array
    return [list(row) for row in values] if width is not None else list(values)


def _by_name(name: str, core: str, b: Batch) -> st.SearchStrategy[Any]:
    container = _container(core)
    n = b.num_reqs
    table: dict[str, Callable[[], Any]] = {
        "logprob_token_ids": lambda: _rows(b.ids, container, "int32", b.width),
        "logprobs": lambda: _rows(b.logprobs, container, "float32", b.width),
        "sampled_token_ranks": lambda: _rows(b.ranks, container, "int64"),
        "selected_token_ranks": lambda: _rows(b.ranks, container, "int64"),
        "cu_num_generated_tokens": lambda: list(b.cu) if container == "list" else _rows(b.cu, container, "int32"),
        "cu_num_generated_tokens_tensor": lambda: torch.tensor(b.cu, dtype=torch.int32),
        "req_ids": lambda: b.req_ids,
        "req_id_to_index": lambda: {r: i for i, r in enumerate(b.req_ids)},
        "prompt_logprobs_dict": dict,
        "pooler_output": lambda: [None] * n,
    }  # fmt: skip
    if name in table:
        return st.builds(table[name])
    if name in ("sampled_token_ids", "draft_token_ids", "token_ids"):
        rows = [list(row[:1]) for row in b.ids[:n]] + [[] for _ in range(max(0, n - len(b.ids)))]
        if container == "tensor":
            padded = [row + [-1] * (1 - len(row)) for row in rows]
            return st.just(torch.tensor(padded, dtype=torch.int32).reshape(n, 1))
        if container == "array" or "np.ndarray" in core:
            return st.just([np.array(row, dtype=np.int64) for row in rows] if core.startswith("list")
                           else np.array([i for row in rows for i in row], dtype=np.int64))  # fmt: skip
        return st.just(rows)
    if name in ("req_idx", "start", "start_req_idx", "index"):
        return st.integers(0, max(n - 1, 0))
    if name in ("end", "end_req_idx"):
        return st.integers(0, n)
    if core == "int" or (name.startswith("num_") and core in ("", "Any")):
        return st.integers(0, 4) if name != "num_positions" else st.integers(1, 3)
    if name == "mask" or (core == "torch.Tensor" and "mask" in name):
        return st.lists(st.booleans(), min_size=b.num_rows, max_size=b.num_rows).map(
            lambda bits: torch.tensor(bits, dtype=torch.bool).reshape(len(bits))
        )
    return _by_annotation(core, b)


def _by_annotation(core: str, b: Batch) -> st.SearchStrategy[Any]:
    strings = st.sampled_from(b.req_ids or ["req-0"])
    simple: dict[str, st.SearchStrategy[Any]] = {
        "int": st.integers(0, 4),
        "bool": st.booleans(),
        "float": st.sampled_from([0.0, -0.5, 1.5]),
        "str": strings,
        "set[str]": st.sets(strings, max_size=3),
        "set[int]": st.sets(st.integers(0, 64), max_size=3),
        "list[int]": st.lists(st.integers(0, 150_000), max_size=4),
        "list[str]": st.lists(strings, max_size=3),
        "list[list[int]]": st.lists(st.lists(st.integers(0, 150_000), max_size=3), max_size=3),
        "dict[str, int]": st.dictionaries(strings, st.integers(0, 9), max_size=3),
        "torch.Tensor": st.lists(st.integers(0, 99), max_size=4).map(
            lambda v: torch.tensor(v, dtype=torch.int64)
        ),
        "np.ndarray": st.lists(st.integers(0, 99), max_size=4).map(
            lambda v: np.array(v, dtype=np.int64)
        ),
    }
    return simple.get(core, st.none())


def call_arguments(
    method: Any, text_classes: Mapping[str, type], batch: Batch, bound: bool
) -> st.SearchStrategy[tuple[list[Any], dict[str, Any]]]:
    """Positional and keyword arguments for vLLM's ``method`` (``self``/``cls`` left out
    when ``bound``), by the parameters' names and annotations; an optional parameter is
    sometimes left to its default."""
    function = getattr(method, "__func__", method)
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    if (
        bound
        and parameters
        and parameters[0].kind
        in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
    ):
        parameters = parameters[1:]

    @st.composite
    def build(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        by_keyword = False  # after a positional parameter left to its default
        for p in parameters:
            annotation = _annotation_text(p.annotation if p.annotation is not p.empty else None)
            if p.kind is p.VAR_KEYWORD:
                continue
            if p.kind is p.VAR_POSITIONAL:
                args += draw(st.lists(value_for(p.name, annotation, text_classes, batch), min_size=1,
                                      max_size=3))  # fmt: skip
                continue
            if p.default is not p.empty and draw(st.booleans()):
                by_keyword = True
                continue
            value = draw(value_for(p.name, annotation, text_classes, batch))
            if p.kind is p.KEYWORD_ONLY or (by_keyword and p.kind is not p.POSITIONAL_ONLY):
                kwargs[p.name] = value
            else:
                args.append(value)
        return args, kwargs

    return build()
