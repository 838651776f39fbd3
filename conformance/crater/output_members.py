"""What the output types' fields hold and their methods hand back, read from every
known release's annotations: a field or a method result that is itself an output type
(``SamplerOutput.logprobs_tensors``) carries the type on to what the plugin reads of it."""

from __future__ import annotations

import ast
import functools

from conformance.crater.syntax import tail_name
from conformance.crater.vllm_names import JUDGED_TYPES, OUTPUTS
from conformance.releases.output_classes import output_classes


def output_field_types() -> dict[tuple[str, str], str]:
    """``{(type, field): output type}`` for each field of an output type that holds
    another, in any known release (``SamplerOutput.logprobs_tensors``:
    ``vllm.v1.outputs.LogprobsTensors``; a list of them as :data:`SEQUENCE_OF` one)."""
    return _output_member_types()[0]


@functools.cache
def output_field_may_be_none(type_name: str, field: str) -> bool:
    """Whether any known release annotates ``type_name.field`` as possibly None."""
    from conformance.releases.known_surfaces import known_surfaces

    for surface in known_surfaces().values():
        member = surface.get((OUTPUTS, type_name, field))
        if member is not None and member.kind == "field":
            inner = _annotation_of(member.shape, member.kind)
            if inner is not None and _names_none(inner):
                return True
    return False


def _names_none(node: ast.expr) -> bool:
    """``X | None``, ``Optional[X]``, ``"X | None"``."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            try:
                return _names_none(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return False
        return node.value is None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _names_none(node.left) or _names_none(node.right)
    return isinstance(node, ast.Subscript) and tail_name(node.value) == "Optional"


def output_method_returns() -> dict[tuple[str, str], str]:
    """``{(type, method): output type}`` for each method of an output type whose
    annotation says it returns one (``LogprobsTensors.to_cpu_nonblocking``), and
    ``{("", function): output type}`` for the module's functions
    (``make_empty_encoder_model_runner_output``)."""
    return _output_member_types()[1]


@functools.cache
def output_aliases() -> frozenset[str]:
    """The type aliases ``vllm/v1/outputs.py`` binds in any known release
    (``PoolerOutput: TypeAlias = torch.Tensor | list[torch.Tensor]``)."""
    from conformance.releases.known_surfaces import known_surfaces

    return frozenset(
        m.name
        for surface in known_surfaces().values()
        for m in surface.values()
        if m.module == OUTPUTS and not m.owner and "TypeAlias" in m.shape
    )


@functools.cache
def _output_member_types() -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    from conformance.releases.known_surfaces import known_surfaces

    surfaces = list(known_surfaces().values())
    classes = output_classes()
    found: tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str], set[str]]] = ({}, {})
    for surface in surfaces:
        for member in surface.values():
            if member.module != OUTPUTS or member.kind not in ("field", "method", "function"):
                continue
            annotation = _annotation_of(member.shape, member.kind)
            inner = unwrap_annotation(annotation)
            element = element_annotation(inner) if inner is not None else None
            named = element if element is not None else inner
            if isinstance(named, ast.Name) and named.id in JUDGED_TYPES and named.id in classes:
                held = f"{OUTPUTS}.{named.id}"
                into = found[0] if member.kind == "field" else found[1]
                into.setdefault((member.owner, member.name), set()).add(
                    SEQUENCE_OF + held if element is not None else held
                )
    # A member whose type changed between releases to another output type: unknown.
    fields, methods = (
        {key: types.pop() for key, types in table.items() if len(types) == 1} for table in found
    )
    return fields, methods


def _annotation_of(shape: str, kind: str) -> ast.expr | None:
    """A field's annotation, or what a method's shape (``@staticmethod def f(a) -> X``)
    says it returns."""
    if kind != "field":
        function = parsed_def(shape)
        return function.returns if function is not None else None
    try:
        return ast.parse(shape, mode="eval").body
    except SyntaxError:
        return None


def parsed_def(shape: str) -> ast.FunctionDef | None:
    """A method's shape (``@staticmethod def f(a, b=1) -> X``) as the ``def`` it heads."""
    at = shape.find("def ")
    if at < 0:
        return None
    try:
        function = ast.parse(shape[at:] + ":\n    pass").body[0]
    except SyntaxError:
        return None
    return function if isinstance(function, ast.FunctionDef) else None


def unwrap_annotation(node: ast.expr | None) -> ast.expr | None:
    """``X`` of ``X``, ``"X"``, ``Optional[X]``, ``X | None``, ``list[X]`` is not X."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side in (node.left, node.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return unwrap_annotation(side)
    if isinstance(node, ast.Subscript) and tail_name(node.value) == "Optional":
        return unwrap_annotation(node.slice)
    return node


#: The generic containers whose one parameter is the type of every element.
_SEQUENCES = frozenset(
    {"list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection",
     "deque", "Deque", "tuple", "Tuple", "set", "Set", "frozenset", "FrozenSet"}
)  # fmt: skip

#: How a name holding a sequence of a judged type is kept among a scope's types: its
#: elements (``for out in outputs``, ``outputs[0]``) have the type.
SEQUENCE_OF = "sequence of "


def element_annotation(node: ast.expr) -> ast.expr | None:
    """``X`` of ``list[X]``, ``Sequence[X]``, ``tuple[X, ...]`` (not of ``tuple[X, Y]``)."""
    if not (isinstance(node, ast.Subscript) and tail_name(node.value) in _SEQUENCES):
        return None
    item = node.slice
    if not isinstance(item, ast.Tuple):
        return item
    if len(item.elts) == 2 and isinstance(item.elts[1], ast.Constant):
        return item.elts[0] if item.elts[1].value is Ellipsis else None
    return None
