"""What a plugin function's statements bind, hold and test, read without running them:
the small facts of Python's syntax the crater's reading rests on."""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Iterable, Iterator

DISPLAYS = (
    ast.List, ast.Dict, ast.Set, ast.Tuple, ast.JoinedStr, ast.ListComp, ast.SetComp, ast.DictComp
)  # fmt: skip


#: Each walked module's and class's nodes, for as long as its tree lives: the crater
#: reads every one of them several ways (bindings, classes, ``self.x`` types).
_WALKED: weakref.WeakKeyDictionary[ast.AST, tuple[ast.AST, ...]] = weakref.WeakKeyDictionary()


def walked(node: ast.AST) -> tuple[ast.AST, ...]:
    """Every node under ``node``, itself first, in :func:`ast.walk`'s order."""
    found = _WALKED.get(node)
    if found is None:
        found = _WALKED[node] = tuple(ast.walk(node))
    return found


def literal_not_none(value: ast.expr) -> bool:
    """A value that is never None: a literal, a display, one repeated or joined
    (``[None] * n``), a container built (``list(...)``)."""
    if isinstance(value, ast.Constant):
        return value.value is not None
    if isinstance(value, ast.BinOp):
        return literal_not_none(value.left) or literal_not_none(value.right)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id in ("list", "dict", "tuple", "set")
    return isinstance(value, DISPLAYS)


def binds(target: ast.expr, name: str) -> bool:
    return isinstance(target, ast.Name) and target.id == name


def value_bound(nodes: Iterable[ast.AST], name: ast.Name | ast.Attribute) -> ast.expr | None:
    """The value ``nodes`` (a function's statements, a class's code) bind a name or
    ``self.x`` to: a flag a test reads."""
    for node in nodes:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(name, ast.Name) and isinstance(target, ast.Name):
                if target.id == name.id:
                    return node.value
            elif (
                isinstance(name, ast.Attribute)
                and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and target.attr == name.attr
            ):
                return node.value
    return None


def strings_in(node: ast.expr) -> frozenset[str]:
    """The string constants in an expression (what a presence test names)."""
    return frozenset(
        inner.value
        for inner in ast.walk(node)
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str)
    )


def is_empty(node: ast.expr) -> bool:
    """``[]``, ``{}``, ``()``, ``list()``, ``dict()``: empty whatever its elements' type."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "dict", "tuple", "set")
        and not node.args
        and not node.keywords
    )


def own_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body at any depth, not those of nested functions or classes."""
    for node, _ in under_tests(body):
        yield node


def asserts_one_token_rows(body: list[ast.stmt]) -> bool:
    """Whether a function's own statements assert that the sampled ids hold one token
    per row (``assert sampled_token_ids.shape[-1] == 1``, ``.shape[1]``, ``.size(-1)``):
    vLLM's first runner did so under async scheduling until its async output unpadded
    rows of several tokens."""
    for statement in own_statements(body):
        if not (isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare)):
            continue
        test = statement.test
        if (
            len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == 1
            and _ONE_ROW_WIDTH.search(ast.unparse(test.left).replace(" ", ""))
        ):
            return True
    return False


#: The width of the sampled ids' rows, as an assertion reads it.
_ONE_ROW_WIDTH = re.compile(r"sampled_token_ids\.(?:shape\[(?:-1|1)\]|size\((?:-1|1)\))$")


def bindings_counted(body: list[ast.stmt]) -> dict[str, int]:
    """How many times a body's statements bind each name (by assignment, ``for``,
    ``with ... as``)."""
    counts: dict[str, int] = {}
    for node in own_statements(body):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars]
        for target in targets:
            for name in names_bound(target):
                counts[name] = counts.get(name, 0) + 1
    return counts


def names_bound(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds: ``a``, ``a, *b``; not ``a`` of ``a.x`` or
    ``a[i]``, which change what ``a`` holds without binding it."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from names_bound(element)
    elif isinstance(target, ast.Starred):
        yield from names_bound(target.value)


def under_tests(
    body: list[ast.stmt], above: tuple[tuple[ast.expr, bool], ...] = ()
) -> Iterator[tuple[ast.stmt, tuple[tuple[ast.expr, bool], ...]]]:
    """:func:`own_statements`, each with its enclosing ``if`` tests and whether it is in
    each one's body (True) or its ``else`` (False)."""
    for node in body:
        yield node, above
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                statements = [s for s in inner if isinstance(s, ast.stmt)]
                for handler in inner:
                    if isinstance(handler, ast.ExceptHandler):
                        statements += handler.body
                inside = above
                if isinstance(node, ast.If) and name in ("body", "orelse"):
                    inside = (*above, (node.test, name == "body"))
                yield from under_tests(statements, inside)
        if isinstance(node, ast.Match):
            for case in node.cases:
                yield from under_tests(case.body, above)


def exits(body: list[ast.stmt]) -> bool:
    """Whether a block always leaves (its last statement returns or raises)."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def tail_name(node: ast.expr) -> str | None:
    """The last name a node spells, through a call: ``f`` of ``a.b.f(...)``, ``dataclass``
    of ``@dataclasses.dataclass(frozen=True)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def decorated(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(tail_name(d) == name for d in node.decorator_list)


def identifier(node: ast.AST) -> str:
    """The name a node spells (a name, an attribute, a parameter), else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.arg):
        return node.arg
    return ""


def catches(handler: ast.ExceptHandler, *errors: str, broadly: bool = True) -> bool:
    """Whether ``handler`` catches any of ``errors`` by name; ``broadly``: or as a bare
    ``except``, ``Exception`` or ``BaseException`` (which catch anything else too)."""
    if handler.type is None:
        return broadly
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    every = ("Exception", "BaseException") if broadly else ()
    return any(tail_name(n) in (*errors, *every) for n in names)


def suppressed(node: ast.With | ast.AsyncWith) -> set[str]:
    """The errors a ``with contextlib.suppress(AttributeError, ...):`` swallows, by name
    (its body then runs as a ``try`` whose handler passes)."""
    found: set[str] = set()
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and tail_name(call.func) == "suppress":
            found.update(tail_name(argument) or "" for argument in call.args)
    return found - {""}


def reraises(handler: ast.ExceptHandler) -> bool:
    """Whether ``handler`` raises again (its own statements, not nested ones)."""
    return any(isinstance(node, ast.Raise) for node in handler.body)


def unevaluated_annotations(tree: ast.Module) -> frozenset[int]:
    """The ids of the nodes of every annotation Python never evaluates: all of them under
    ``from __future__ import annotations``, else a variable's annotation inside a
    function (a parameter's and a class or module variable's are evaluated)."""
    postponed = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    annotations: list[ast.expr] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.AnnAssign) and (in_function or postponed):
            annotations.append(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if postponed:
                arguments = node.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
                annotations.extend(a.annotation for a in every if a.annotation is not None)
                annotations.extend([node.returns] if node.returns is not None else [])
            in_function = True
        elif isinstance(node, ast.ClassDef):
            in_function = False  # a class body's annotations are evaluated as it runs
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):  # annotations sit in statements only
                visit(child, in_function)

    visit(tree, False)
    return frozenset(id(n) for annotation in annotations for n in ast.walk(annotation))


def module_imported(value: ast.expr) -> str | None:
    """The module ``importlib.import_module("vllm.x")`` (or a bare ``import_module``)
    imports, where its name is written out; None for any other value."""
    if (
        isinstance(value, ast.Call)
        and tail_name(value.func) == "import_module"
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Constant)
        and isinstance(value.args[0].value, str)
    ):
        return value.args[0].value
    return None
