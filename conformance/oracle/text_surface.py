"""What a vLLM source text defines, normalised so only meaning counts: its *surface*.

vLLM's ``vllm/v1/outputs.py`` (and the producer sections beside it) is read with
``ast``, never imported: every class, its fields (annotation and default apart), its
methods (signature and body apart), its class attributes, and the module's functions
and constants, each as one :class:`Member`.  Forms are compared after normalising:
docstrings are dropped, code is rendered back by ``ast.unparse`` (so comments,
quoting, line breaks and spacing vanish) and annotations go through
:func:`conformance.oracle.annotations.normalise` (``Optional[int]`` is ``int | None``).
A body is kept as a short hash of its normalised text, so the surfaces of known
releases can ship with the suite without their code.

:func:`conformance.oracle.vllm_changes.changes_between` compares two surfaces.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
from dataclasses import asdict, dataclass
from typing import Any, Literal

from conformance.oracle.annotations import normalise

MemberKind = Literal["class", "field", "method", "attribute", "function", "constant"]

#: The module every outputs.py text is, whatever file it came from.
OUTPUTS_MODULE = "vllm.v1.outputs"


@dataclass(frozen=True)
class Member:
    """One thing a text defines, normalised.

    ``owner`` is the class (``""`` for a module-level function or constant, and for a
    class itself ``name`` is ``""``).  ``shape`` is what a caller sees (a field's
    annotation, a method's decorators and signature, a class's decorators and bases);
    ``value`` what it does (a field's default, a hash of a method's body, of a
    constant's value).  ``form`` is both as one line, for people.
    """

    module: str
    owner: str
    name: str
    kind: MemberKind
    shape: str
    value: str
    form: str
    position: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.module, self.owner, self.name)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Member:
        return cls(**data)


#: ``{(module, owner, name): member}``: a text (or several, a tree's) as its surface.
Surface = dict[tuple[str, str, str], Member]


def body_hash(text: str) -> str:
    """A short, stable name of a normalised body (12 hex digits of its SHA-256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def surface_of_module(source: str, module: str = OUTPUTS_MODULE) -> Surface:
    """The surface of a whole module's source (raises ``SyntaxError`` for a broken one)."""
    tree = ast.parse(source)
    found: Surface = {}
    for node in _without_docstring(tree.body):
        _add_statement(found, module, node)
    return found


#: The value of a class's member where a text shows only one method of it.
PIECE_OF_CLASS = "one method of it shown"


def surface_of_snippet(source: str, module: str, owner: str = "") -> Surface:
    """The surface of a cut-out piece of a module: a class, or (``owner`` given) one
    method of that class, indented as in its file."""
    tree = ast.parse(textwrap.dedent(source))
    found: Surface = {}
    if owner:
        # The class the method belongs to, as far as the piece shows it: its bases and
        # other members unknown (the changes between two texts compare a class by its
        # shape, not its value).
        header = f"class {owner}"
        found[(module, owner, "")] = Member(
            module, owner, "", "class", header, PIECE_OF_CLASS, header
        )
    for node in _without_docstring(tree.body):
        if owner and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _add_function(found, module, owner, node, position=0)
        else:
            _add_statement(found, module, node)
    return found


def classes(surface: Surface, module: str = OUTPUTS_MODULE) -> list[str]:
    """The classes ``module`` defines in ``surface``, in their order."""
    return [m.owner for m in surface.values() if m.module == module and m.kind == "class"]


def to_json(surface: Surface) -> list[dict[str, Any]]:
    return [m.to_json() for m in surface.values()]


def from_json(data: list[dict[str, Any]]) -> Surface:
    members = [Member.from_json(entry) for entry in data]
    return {m.key: m for m in members}


# --- reading the tree ---------------------------------------------------------------


def _add_statement(found: Surface, module: str, node: ast.stmt) -> None:
    if isinstance(node, ast.ClassDef):
        _add_class(found, module, node)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        _add_function(found, module, "", node, position=0)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        for name in _assigned_names(node):
            value = _unparse(node.value) if node.value is not None else ""
            shape = _annotation(node.annotation) if isinstance(node, ast.AnnAssign) else ""
            _put(
                found,
                Member(
                    module,
                    "",
                    name,
                    "constant",
                    shape,
                    body_hash(value),
                    _short(f"{name}{': ' + shape if shape else ''} = {value}"),
                ),
            )
    # Imports, `if TYPE_CHECKING:` blocks and other statements define nothing a backend
    # is judged on: what they bring in shows where it is used.


def _add_class(found: Surface, module: str, node: ast.ClassDef) -> None:
    header = _class_header(node)
    _put(found, Member(module, node.name, "", "class", header, "", header))
    field_position = 0
    for statement in _without_docstring(node.body):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
            annotation = _annotation(statement.annotation)
            default = _unparse(statement.value) if statement.value is not None else ""
            form = f"{name}: {annotation}" + (f" = {default}" if default else "")
            _put(
                found,
                Member(
                    module,
                    node.name,
                    name,
                    "field",
                    annotation,
                    default,
                    _short(form),
                    field_position,
                ),
            )
            field_position += 1
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _add_function(found, module, node.name, statement, position=0)
        elif isinstance(statement, ast.Assign):
            value = _unparse(statement.value)
            for name in _assigned_names(statement):
                _put(
                    found,
                    Member(
                        module,
                        node.name,
                        name,
                        "attribute",
                        "",
                        body_hash(value),
                        _short(f"{name} = {value}"),
                    ),
                )
        elif isinstance(statement, ast.ClassDef):
            text = _unparse(_strip_docstrings(statement))
            _put(
                found,
                Member(
                    module,
                    node.name,
                    statement.name,
                    "attribute",
                    "",
                    body_hash(text),
                    f"class {statement.name}",
                ),
            )


def _add_function(
    found: Surface,
    module: str,
    owner: str,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    position: int,
) -> None:
    signature = _signature(node)
    body = "\n".join(_unparse(s) for s in _strip_docstrings(node).body)
    kind: MemberKind = "method" if owner else "function"
    _put(
        found,
        Member(module, owner, node.name, kind, signature, body_hash(body), signature, position),
    )


def _put(found: Surface, member: Member) -> None:
    """Add ``member``; a second definition of one name (a property's setter, an overload)
    is kept under ``name@2``, ``name@3``, ..."""
    key, number = member.key, 1
    name = member.name
    while key in found:
        number += 1
        name = f"{member.name}@{number}"
        key = (member.module, member.owner, name)
    if name != member.name:
        member = Member(
            member.module,
            member.owner,
            name,
            member.kind,
            member.shape,
            member.value,
            member.form,
            member.position,
        )
    found[key] = member


def _assigned_names(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _class_header(node: ast.ClassDef) -> str:
    decorators = "".join(f"@{_unparse(d)} " for d in node.decorator_list)
    bases = [_unparse(b) for b in node.bases] + [_unparse(k) for k in node.keywords]
    return f"{decorators}class {node.name}" + (f"({', '.join(bases)})" if bases else "")


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    decorators = "".join(f"@{_unparse(d)} " for d in node.decorator_list)
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {_annotation(node.returns)}" if node.returns is not None else ""
    return f"{decorators}{prefix} {node.name}({_parameters(node.args)}){returns}"


def _parameters(args: ast.arguments) -> str:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    parts = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        parts.append(_parameter(arg, default))
        if args.posonlyargs and index == len(args.posonlyargs) - 1:
            parts.append("/")
    if args.vararg is not None:
        parts.append("*" + _parameter(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parts.append(_parameter(arg, kw_default))
    if args.kwarg is not None:
        parts.append("**" + _parameter(args.kwarg, None))
    return ", ".join(parts)


def _parameter(arg: ast.arg, default: ast.expr | None) -> str:
    text = arg.arg
    if arg.annotation is not None:
        text += f": {_annotation(arg.annotation)}"
    if default is not None:
        text += f" = {_unparse(default)}"
    return text


def _annotation(node: ast.expr) -> str:
    """An annotation's canonical text (a string annotation read as the code it names)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    else:
        text = _unparse(node)
    try:
        return normalise(text)
    except Exception:
        return text


def _unparse(node: ast.AST) -> str:
    return ast.unparse(node)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    return body[1:] if body and _is_docstring(body[0]) else body


def _strip_docstrings(node: Any) -> Any:
    """A copy of ``node`` whose functions and classes, at any depth, lack their docstrings."""
    copied = ast.parse(ast.unparse(node)).body[0]
    for inner in ast.walk(copied):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stripped = _without_docstring(inner.body)
            inner.body = stripped or [ast.Pass()]
    return copied
