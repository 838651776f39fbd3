"""Normalise type annotations so the spec's text and a backend's runtime objects compare.

A backend may annotate with real objects (``list[int] | None``), with strings
(``from __future__ import annotations``), or with ``typing`` spellings
(``Optional[List[int]]``).  All of them are rendered to one canonical text:
builtin generics in lower case, unions as ``A | B`` with members sorted and
``None`` last, classes by their bare name except ``torch.Tensor`` and
``np.ndarray``, which keep the qualifier a reader expects.
"""

from __future__ import annotations

import ast
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any

# typing aliases and their builtin spelling.
_ALIASES = {
    "List": "list",
    "Dict": "dict",
    "Set": "set",
    "FrozenSet": "frozenset",
    "Tuple": "tuple",
    "Type": "type",
    "NoneType": "None",
}
# Modules whose classes keep a qualifier (a bare "Tensor" or "ndarray" reads ambiguous).
_QUALIFIED = {"torch": "torch", "numpy": "np", "np": "np"}


def normalise(annotation: Any, namespace: Mapping[str, Any] | None = None) -> str:
    """Canonical text of ``annotation`` (a runtime object or a string).  ``namespace``:
    the globals a string annotation is read in, so that ``Tensor`` imported from torch
    reads ``torch.Tensor`` as the object would."""
    if isinstance(annotation, str):
        return _normalise_text(annotation, namespace)
    return _normalise_text(_render_object(annotation))


def globals_declaring(cls: Any, name: str) -> dict[str, Any]:
    """The module globals the class declaring field ``name`` reads its annotation in."""
    for klass in getattr(cls, "__mro__", ()):
        if name in vars(klass).get("__annotations__", {}):
            module = sys.modules.get(klass.__module__)
            return vars(module) if module is not None else {}
    return {}


def _render_object(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        return " | ".join(_render_object(a) for a in args)
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin)
        if not args:
            return name
        return f"{name}[{', '.join(_render_object(a) for a in args)}]"
    if isinstance(annotation, type):
        top = annotation.__module__.partition(".")[0]
        if top in _QUALIFIED:
            return f"{_QUALIFIED[top]}.{annotation.__qualname__}"
        return annotation.__qualname__
    return str(annotation)


def _normalise_text(text: str, namespace: Mapping[str, Any] | None = None) -> str:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return " ".join(text.split())
    if namespace:
        tree = _Qualified(namespace).visit(tree)
    return _render_node(tree.body)


class _Qualified(ast.NodeTransformer):
    """Bare names of classes whose module keeps a qualifier, qualified as the objects
    they are bound to in ``namespace`` render (``Tensor`` from torch: ``torch.Tensor``)."""

    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace

    def visit_Name(self, node: ast.Name) -> ast.expr:
        bound = self.namespace.get(node.id)
        if isinstance(bound, type):
            top = bound.__module__.partition(".")[0]
            if top in _QUALIFIED:
                return ast.Attribute(ast.Name(top, ast.Load()), bound.__qualname__, ast.Load())
        return node


def _render_node(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "None"
        if isinstance(node.value, str):  # a quoted forward reference inside an annotation
            return _normalise_text(node.value)
        return repr(node.value)
    if isinstance(node, ast.Name):
        return _ALIASES.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        if base in _QUALIFIED:
            return f"{_QUALIFIED[base]}.{node.attr}"
        # typing.List, reference.outputs.LogprobsTensors, ...: keep the bare name.
        return _ALIASES.get(node.attr, node.attr)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([*_union_members(node.left), *_union_members(node.right)])
    if isinstance(node, ast.Subscript):
        head = _render_node(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional":
            return _union([_render_node(items[0]), "None"])
        if head == "Union":
            return _union([_render_node(i) for i in items])
        return f"{head}[{', '.join(_render_node(i) for i in items)}]"
    return ast.unparse(node)


def _union_members(node: ast.AST) -> list[str]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    return [_render_node(node)]


def _union(members: list[str]) -> str:
    flat: list[str] = []
    for member in members:
        for part in _top_level_parts(member):
            if part not in flat:
                flat.append(part)
    return " | ".join(sorted(flat, key=lambda m: (m == "None", m)))


def _top_level_parts(text: str) -> list[str]:
    """Split ``text`` on the `` | `` that are not inside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0 and text.startswith(" | ", i):
            parts.append(text[start:i])
            start = i + 3
    parts.append(text[start:])
    return parts


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""
